"""The benchmark: ``python -m tools.bench`` (``make bench``).

Executes every lecture and every reference solution from scratch in a fresh kernel, one at a
time, and writes each notebook's wall-clock execution time (kernel start included) and each
trained model's quality figure next to its baseline, with the machine it ran on: into the
website's measurements page (``jupyter_book/measurements.md``, between its two marker
comments; the rest of the page is written by hand and left as it is) and into
``build/bench.md``. Budgets are checked here, not in the tests: a notebook whose source
declares ``course: budget_seconds: N`` in its jupytext header and runs longer is flagged, and
the command exits 1.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from autograder import nbgrader_format as nbg
from course.metrics import load_all
from tools.build import BOOK, BUILD, lecture_sources
from tools.metrics_table import describe_machine, format_table, load_average
from tools.notebooks import REPO, NotebookBuildError, execute, read_source

PAGE = BOOK / "measurements.md"
BEGIN = "<!-- begin: written by make bench (python -m tools.bench), replaced on each run -->"
END = "<!-- end: written by make bench -->"
COMMAND = "`make bench`"


def over_budget(timings: dict[str, float], budgets: dict[str, float]) -> list[str]:
    """One line for each notebook that ran longer than its declared budget."""
    return [
        f"{n} took {timings[n]:.1f} s, budget {b:g} s"
        for n, b in sorted(budgets.items())
        if n in timings and timings[n] > b
    ]


def bench_block(
    timings: dict[str, float],
    metrics: list[dict],
    budgets: dict[str, float],
    *,
    machine: str,
    seconds: float,
) -> str:
    """The page's generated part: the machine and the run, the two tables, any notebook over
    its budget. Every row names the command that reproduces it."""
    minutes, rest = divmod(round(seconds), 60)
    return (
        f"Machine: {machine}. {len(timings)} notebooks, each in a fresh kernel, one after "
        f"another: {minutes} min {rest} s in all.\n\n"
        + format_table(timings, metrics, budgets, command=COMMAND)
        + "".join(f"\nOVER BUDGET: {line}\n" for line in over_budget(timings, budgets))
    )


def rewrite_page(text: str, block: str) -> str:
    """``text`` with what lies between its ``BEGIN`` and ``END`` markers replaced by ``block``;
    everything else, the markers included, unchanged. ValueError unless each marker is there
    exactly once, ``BEGIN`` first."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(f"the page must hold {BEGIN!r} once, then {END!r} once")
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n\n{block.strip()}\n\n{END}{tail}"


def main() -> int:
    scratch = Path(tempfile.mkdtemp(prefix="bench-"))
    metrics_dir = scratch / "metrics"
    env = {"COURSE_METRICS_DIR": str(metrics_dir), "PYTHONPATH": str(REPO)}
    jobs = [(f"lectures/{s.stem}", s) for s in lecture_sources()]
    jobs += [
        (f"solutions/{a}/{s.stem}", s) for a in nbg.assignment_ids() for s in nbg.source_files(a)
    ]
    timings: dict[str, float] = {}
    budgets: dict[str, float] = {}
    load_before, started = load_average(), time.perf_counter()
    try:
        for name, source in jobs:
            print(f"[bench] executing {name}", flush=True)
            notebook = read_source(source)
            budget = notebook.metadata.get("course", {}).get("budget_seconds")
            if budget is not None:
                budgets[name] = float(budget)
            timings[name] = execute(notebook, name=name, cwd=scratch / "run", env=env).seconds
        metrics = load_all(metrics_dir) if metrics_dir.exists() else []
    except NotebookBuildError as error:
        print(f"[bench] FAILED: {error}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    block = bench_block(
        timings,
        metrics,
        budgets,
        machine=describe_machine(load_before, load_average()),
        seconds=time.perf_counter() - started,
    )
    BUILD.mkdir(parents=True, exist_ok=True)
    (BUILD / "bench.md").write_text(block)
    PAGE.write_text(rewrite_page(PAGE.read_text(), block))
    print(block)
    print(f"[bench] wrote {BUILD / 'bench.md'} and the tables of {PAGE}")
    return 1 if over_budget(timings, budgets) else 0


if __name__ == "__main__":
    raise SystemExit(main())
