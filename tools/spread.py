"""How much the lectures' trained figures move between machines: ``python -m tools.spread``.

A lecture trains with fixed seeds and fixed step counts, yet its figures are not the same on
every machine: PyTorch and MKL pick their CPU kernels by what the processor offers (AVX-512,
AVX2, plain SSE), and kernels that sum in another order give other rounding, which a few hundred
steps of training turn into other weights. This command executes every lecture (or those named)
once per *configuration* below and writes ``build/spread.json`` and ``build/spread.md``: each
recorded figure's value in each configuration, its baseline's, and the spread (max − min) of
both and of their difference. ``course.metrics.record``'s ``margin`` for a figure is set from
that spread, so that a win the build asserts is a win on every machine.

Configurations (environment variables of the kernel; all run on this machine):

* ``native``: the processor's own kernels;
* ``avx2``: as on a processor without AVX-512 (``ATEN_CPU_CAPABILITY``, ``MKL_ENABLE_INSTRUCTIONS``,
  ``ONEDNN_MAX_CPU_ISA``);
* ``sse``: as on a processor without AVX at all (PyTorch's ``default`` kernels);
* ``threads2``: two intra-op threads asked for from outside (the lectures pin one thread, so
  this shows that the machine's thread count does not enter);
* ``loaded``: native kernels while two busy processes hold both cores (a wall-clock guard in a
  training loop would show here).

Usage: ``python -m tools.spread [--configs native,avx2] [--jobs 2] [LECTURE ...]``. A build's
figures can stand for a configuration without running it again: ``--add native=build/metrics``
(the build runs the lectures with this machine's own kernels).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tools.build import BUILD, lecture_sources
from tools.notebooks import REPO, execute, read_source

CONFIGS: dict[str, dict[str, str]] = {
    "native": {},
    "avx2": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
    },
    "sse": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
    },
    "threads2": {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"},
    "loaded": {},
}
LOADED = {"loaded"}
BURN = "while True:\n    pass\n"


def _run(source: Path, config: str, scratch: Path) -> tuple[str, str, float, list[dict]]:
    metrics = scratch / config / "metrics"
    env = {**CONFIGS[config], "COURSE_METRICS_DIR": str(metrics), "PYTHONPATH": str(REPO)}
    result = execute(read_source(source), name=source.name, cwd=scratch / config / "run", env=env)
    saved = metrics / f"{source.stem}.json"
    figures = json.loads(saved.read_text())["metrics"] if saved.exists() else []
    return source.stem, config, result.seconds, figures


def spread_table(runs: list[dict]) -> list[dict]:
    """One row per (lecture, figure): values per configuration and their spreads."""
    rows: dict[tuple[str, str], dict] = {}
    for run in runs:
        for m in run["metrics"]:
            row = rows.setdefault(
                (run["lecture"], m["name"]),
                {
                    "lecture": run["lecture"],
                    "name": m["name"],
                    "higher_is_better": m["higher_is_better"],
                    "margin": m.get("margin", 0.0),
                    "values": {},
                    "baselines": {},
                },
            )
            row["values"][run["config"]] = m["value"]
            if m["baseline"] is not None:
                row["baselines"][run["config"]] = m["baseline"]
    table = []
    for row in rows.values():
        values, baselines = list(row["values"].values()), list(row["baselines"].values())
        sign = 1 if row["higher_is_better"] else -1
        leads = [
            sign * (row["values"][c] - row["baselines"][c])
            for c in row["values"]
            if c in row["baselines"]
        ]
        row["value_spread"] = max(values) - min(values)
        row["baseline_spread"] = max(baselines) - min(baselines) if baselines else 0.0
        row["lead_min"] = min(leads) if leads else None
        row["lead_max"] = max(leads) if leads else None
        table.append(row)
    return table


def format_markdown(table: list[dict], configs: list[str]) -> str:
    head = " | ".join(configs)
    lines = [
        f"| lecture | figure | {head} | value spread | baseline spread | lead (min–max) | margin |",
        "| --- | --- | " + " | ".join("---:" for _ in configs) + " | ---: | ---: | ---: | ---: |",
    ]
    for row in table:
        cells = " | ".join(
            f"{row['values'][c]:.4g}"
            + (f" / {row['baselines'][c]:.4g}" if c in row["baselines"] else "")
            if c in row["values"]
            else "-"
            for c in configs
        )
        lead = "-" if row["lead_min"] is None else f"{row['lead_min']:.4g} – {row['lead_max']:.4g}"
        lines.append(
            f"| {row['lecture']} | {row['name'].replace('|', '/')} | {cells} | "
            f"{row['value_spread']:.4g} | {row['baseline_spread']:.4g} | {lead} | {row['margin']:.4g} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lectures", nargs="*", help="lecture ids such as 06_transformer")
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=BUILD / "spread.json")
    parser.add_argument(
        "--add", action="append", default=[], metavar="CONFIG=DIR",
        help="take a configuration's figures from a metrics folder instead of running it",
    )  # fmt: skip
    args = parser.parse_args(argv)
    added = dict(item.split("=", 1) for item in args.add if "=" in item)
    if len(added) != len(args.add):
        parser.error("--add takes CONFIG=DIR, e.g. native=build/metrics")
    configs = [c for c in args.configs.split(",") if c and c not in added]
    unknown = [c for c in [*configs, *added] if c not in CONFIGS]
    if unknown:
        parser.error(f"unknown configurations {unknown}; known: {', '.join(CONFIGS)}")
    sources = [s for s in lecture_sources() if not args.lectures or s.stem in args.lectures]
    if not sources:
        parser.error(f"no lecture matches {args.lectures}")
    names = {s.stem for s in sources}
    runs: list[dict] = []
    if args.out.exists():  # add to an earlier run: a configuration run again replaces its rows
        runs = [
            r
            for r in json.loads(args.out.read_text())["runs"]
            if not (r["config"] in configs and r["lecture"] in names)
        ]
    for config, folder in added.items():
        runs = [r for r in runs if r["config"] != config or r["lecture"] not in names]
        for source in sources:
            saved = Path(folder) / f"{source.stem}.json"
            if not saved.exists():
                parser.error(f"{saved} does not exist: build that lecture first")
            metrics = json.loads(saved.read_text())["metrics"]
            runs.append(
                {"lecture": source.stem, "config": config, "seconds": None, "metrics": metrics}
            )
    scratch = Path(tempfile.mkdtemp(prefix="spread-"))
    context = multiprocessing.get_context("spawn")
    for config in configs:
        burners = (
            [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(os.cpu_count() or 1)]
            if config in LOADED
            else []
        )
        started = time.perf_counter()
        try:
            with ProcessPoolExecutor(max_workers=args.jobs, mp_context=context) as pool:
                futures = [pool.submit(_run, s, config, scratch) for s in sources]
                for future in futures:
                    lecture, name, seconds, figures = future.result()
                    print(f"[spread] {name}: {lecture} in {seconds:.1f} s", flush=True)
                    runs.append(
                        {"lecture": lecture, "config": name, "seconds": seconds, "metrics": figures}
                    )
        finally:
            for burner in burners:
                burner.kill()
        print(f"[spread] {config}: {time.perf_counter() - started:.0f} s", flush=True)
    table = spread_table(runs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"runs": runs, "table": table}, indent=2) + "\n")
    all_configs = [c for c in CONFIGS if any(r["config"] == c for r in runs)]
    markdown = format_markdown(table, all_configs)
    args.out.with_suffix(".md").write_text(markdown)
    print(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
