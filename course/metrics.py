"""Record the figures a notebook measures, so the benchmark table can report them.

A lecture calls :func:`record` once per trained model. The call always prints one line for
the reader. When the environment variable ``COURSE_METRICS_DIR`` is set (the build and the
benchmark set it), the figure is also merged into ``$COURSE_METRICS_DIR/<notebook>.json``::

    {"notebook": "01_rnn_bptt",
     "metrics": [{"name": "char-RNN, held-out", "value": 2.4, "unit": "bits/char",
                  "baseline": 4.6, "baseline_name": "unigram", "higher_is_better": false,
                  "margin": 0.0, "claim": "beats", "passes": true}]}

A figure that is compared with a baseline must beat it by more than ``margin``: the spread
that figure and its baseline have been measured to show between machines
(``python -m tools.spread``), so that a win the build asserts holds on every machine.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any, Literal

__all__ = ["record", "load_all", "METRICS_ENV"]

METRICS_ENV = "COURSE_METRICS_DIR"
_NOTEBOOK_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class Recorded(dict):
    """What :func:`record` returns: the entry as a dict. A notebook cell that ends with a
    ``record(...)`` call shows the line ``record`` printed, not the dict as well."""

    def _ipython_display_(self) -> None:
        return None


def record(
    notebook: str,
    name: str,
    value: float,
    *,
    unit: str = "",
    baseline: float | None = None,
    baseline_name: str = "",
    higher_is_better: bool = False,
    margin: float = 0.0,
    claim: Literal["beats", "matches"] = "beats",
) -> dict[str, Any]:
    """Print and (when ``COURSE_METRICS_DIR`` is set) save one measured figure.

    ``claim="beats"``: ``passes`` is True when ``value`` beats ``baseline`` in the stated
    direction by more than ``margin``. ``claim="matches"``: when ``value`` is worse than
    ``baseline`` by no more than ``margin`` (a tie within the measured spread, not a win).
    Without a baseline it passes. Raises ValueError for a non-finite value, a negative or
    non-finite margin, an unknown claim, or a bad notebook name.
    """
    if not _NOTEBOOK_NAME.match(notebook):
        raise ValueError(
            f"notebook: expected a file-name-safe id such as '01_rnn_bptt', got {notebook!r}"
        )
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name}: expected a finite value, got {value}")
    if baseline is not None:
        baseline = float(baseline)
        if not math.isfinite(baseline):
            raise ValueError(f"{name}: expected a finite baseline, got {baseline}")
    margin = float(margin)
    if not (math.isfinite(margin) and margin >= 0):
        raise ValueError(f"{name}: expected a finite margin of at least 0, got {margin}")
    if claim not in ("beats", "matches"):
        raise ValueError(f"{name}: claim must be 'beats' or 'matches', got {claim!r}")
    lead = (
        None if baseline is None else (value - baseline if higher_is_better else baseline - value)
    )
    passes = lead is None or (lead > margin if claim == "beats" else lead >= -margin)
    entry = Recorded(
        {
            "name": name,
            "value": value,
            "unit": unit,
            "baseline": baseline,
            "baseline_name": baseline_name,
            "higher_is_better": higher_is_better,
            "margin": margin,
            "claim": claim,
            "passes": passes,
        }
    )
    against = (
        ""
        if baseline is None
        else f" (baseline {baseline_name or 'baseline'}: {baseline:.4g}"
        + (
            f"; a tie within {margin:.3g}"
            if claim == "matches"
            else f"; a win needs a lead over {margin:.3g}"
            if margin
            else ""
        )
        + ")"
    )
    print(f"[{notebook}] {name}: {' '.join(filter(None, [f'{value:.4g}', unit]))}{against}")

    directory = os.environ.get(METRICS_ENV)
    if directory:
        path = Path(directory) / f"{notebook}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        saved = (
            json.loads(path.read_text()) if path.exists() else {"notebook": notebook, "metrics": []}
        )
        saved["metrics"] = [m for m in saved["metrics"] if m["name"] != name] + [entry]
        path.write_text(json.dumps(saved, indent=2) + "\n")
    return entry


def load_all(directory: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read every ``<notebook>.json`` in ``directory``, sorted by notebook id.

    Raises FileNotFoundError when the directory does not exist.
    """
    folder = Path(directory)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"no metrics directory at {folder} (run the build or the benchmark first)"
        )
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
