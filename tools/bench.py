"""The benchmark: ``python -m tools.bench`` (``make bench``).

Executes every lecture and every reference solution from scratch in a fresh kernel, one at a
time, and writes ``build/bench.md``: each notebook's wall-clock execution time (kernel start
included) and each trained model's quality figure next to its baseline. Budgets are checked
here, not in the tests: a notebook whose source declares ``course: budget_seconds: N`` in
its jupytext header and runs longer is flagged, and the command exits 1.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from autograder import nbgrader_format as nbg
from course.metrics import load_all
from tools.build import BUILD, lecture_sources
from tools.metrics_table import format_table
from tools.notebooks import REPO, NotebookBuildError, execute, read_source


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
    try:
        for name, source in jobs:
            print(f"[bench] executing {name}", flush=True)
            notebook = read_source(source)
            budget = notebook.metadata.get("course", {}).get("budget_seconds")
            if budget is not None:
                budgets[name] = float(budget)
            timings[name] = execute(notebook, name=name, cwd=scratch / "run", env=env).seconds
        table = format_table(
            timings, load_all(metrics_dir) if metrics_dir.exists() else [], budgets
        )
    except NotebookBuildError as error:
        print(f"[bench] FAILED: {error}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    over = [
        f"{n} took {timings[n]:.1f} s, budget {b} s" for n, b in budgets.items() if timings[n] > b
    ]
    table += "".join(f"\nOVER BUDGET: {line}" for line in over)
    (BUILD / "bench.md").parent.mkdir(parents=True, exist_ok=True)
    (BUILD / "bench.md").write_text(table)
    print(table)
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
