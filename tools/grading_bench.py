"""Benchmark TA grading: plain ``nbgrader autograde`` against ``python -m autograder grade``.

Generates 50 submissions of Assignment 1 (correct, partly wrong, broken), grades them three
ways (nbgrader alone; the command with 1 worker; with 2 workers) and prints submissions per
minute and the overhead per submission beyond executing the notebook's cells. The execution
time is measured by running a sample of the notebooks (hidden tests included) with nbclient
in a plain kernel and summing the per-cell timings nbclient records.

    .venv/bin/python -m tools.grading_bench [--n 50] [--out build/grading_bench] [--workers 1,2]

With ``--shards 1,2`` it times, instead, the batch graded as N shards run side by side on this
machine (``--shard I/N --workers 1`` each) and then ``--merge``: the wall seconds of each N.

    .venv/bin/python -m tools.grading_bench --n 4 --shards 1,2

Not part of the test suite: it takes several minutes.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import subprocess
import time
from datetime import datetime
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from autograder import nbgrader_format as nbg
from autograder.nbgrader_format import grade_id, is_test_code
from autograder.platform.grade import command_line
from tools.notebooks import REPO
from tools.submissions import honest_submission

ASSIGNMENT = "a1_rnn_bptt"


def _edited(notebook, cell_id: str, old: str, new: str):
    """A copy of ``notebook`` with ``old`` replaced by ``new`` in the cell ``cell_id``."""
    changed = copy.deepcopy(notebook)
    for cell in changed.cells:
        if grade_id(cell) == cell_id:
            cell.source = cell.source.replace(old, new)
    return changed


def make_submissions(source, release, n: int) -> dict[str, bytes]:
    """n submissions: 50% correct, 30% partly wrong, 20% broken."""
    good = honest_submission(source, release)
    wrong_loss = _edited(good, "classification_loss", ".mean())", ".sum())")
    wrong_clip = _edited(good, "clip_by_global_norm", "max_norm / norm_before", "max_norm")
    syntax = _edited(good, "rnn_backward", "def rnn_backward(", "def rnn_backward((")
    kinds = [
        ("correct", nbformat.writes(good).encode(), 10),
        ("wrong_loss", nbformat.writes(wrong_loss).encode(), 3),
        ("wrong_clip", nbformat.writes(wrong_clip).encode(), 3),
        ("blank", nbformat.writes(release).encode(), 2),
        ("syntax_error", nbformat.writes(syntax).encode(), 1),
        ("invalid_json", b'{"cells": [', 1),
    ]
    cycle = [kind for kind, _, weight in kinds for _ in range(weight)]
    data = {kind: content for kind, content, _ in kinds}
    return {f"s{i:03d}_{cycle[i % len(cycle)]}": data[cycle[i % len(cycle)]] for i in range(n)}


def execution_seconds(course: Path, samples: dict[str, bytes]) -> float:
    """Mean time nbclient spends in the cells (hidden tests restored), without kernel start."""
    source = nbformat.read(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    tests = {grade_id(c): c.source for c in source.cells if is_test_code(c)}
    times = []
    for content in samples.values():
        try:
            notebook = nbformat.reads(content.decode(), as_version=4)
        except Exception:  # noqa: BLE001 - an invalid notebook is not executed by anyone
            continue
        for cell in notebook.cells:
            if grade_id(cell) in tests and cell.cell_type == "code":
                cell.source = tests[grade_id(cell)]
        client = NotebookClient(
            notebook, timeout=120, kernel_name="python3", allow_errors=True, record_timing=True
        )
        import os

        env = {**os.environ, "PYTHONPATH": str(REPO)}
        client.execute(env=env)
        total = 0.0
        for cell in notebook.cells:
            timing = cell.get("metadata", {}).get("execution", {})
            if "iopub.execute_input" in timing and "shell.execute_reply" in timing:
                start = datetime.fromisoformat(timing["iopub.execute_input"].replace("Z", "+00:00"))
                end = datetime.fromisoformat(timing["shell.execute_reply"].replace("Z", "+00:00"))
                total += (end - start).total_seconds()
        times.append(total)
    return sum(times) / len(times)


def _progress(method: str, results: dict[str, float]) -> list[float]:
    """Print one method's wall time as soon as it ends, with the machine's load average (a
    shared machine's other jobs change the numbers); the load average."""
    load = [round(x, 2) for x in os.getloadavg()]
    print(f"[bench] {method}: {results[method]:.1f} s, load average {load}", flush=True)
    return load


def time_shards(folder: Path, out: Path, counts: list[int]) -> dict[int, float]:
    """Grade ``folder`` as N shards side by side (one worker each), then merge, for each N of
    ``counts``; print and return the wall seconds of each (shards and merge together)."""
    seconds = {}
    for count in counts:
        target = out / f"shards_{count}"
        started = time.monotonic()
        shards = [
            subprocess.Popen(
                command_line(
                    ASSIGNMENT,
                    folder,
                    target,
                    "--workers",
                    "1",
                    "--quiet",
                    "--shard",
                    f"{index}/{count}",
                ),
                cwd=REPO,
            )  # fmt: skip
            for index in range(count)
        ]
        codes = [shard.wait() for shard in shards]
        merged = subprocess.run(
            command_line(ASSIGNMENT, folder, target, "--quiet", "--merge"), cwd=REPO, check=False
        )
        seconds[count] = time.monotonic() - started
        if any(codes) or merged.returncode == 3:
            raise SystemExit(f"{count} shard(s): exit codes {codes}, merge {merged.returncode}")
        print(f"{count} shard(s) and the merge: {seconds[count]:.1f} s wall")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--out", type=Path, default=REPO / "build" / "grading_bench")
    parser.add_argument(
        "--workers", default="1,2", help="worker counts to run the command with (1,2)"
    )
    parser.add_argument(
        "--shards",
        default="",
        help="shard counts to time (e.g. 1,2): N shards side by side, then --merge; only that",
    )
    args = parser.parse_args()
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    course = nbg.make_course_dir(out / "nbgrader_course", [ASSIGNMENT])
    release_dir = nbg.release(course, ASSIGNMENT)
    source = nbformat.read(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    release = nbformat.read(release_dir / f"{ASSIGNMENT}.ipynb", as_version=4)
    submissions = make_submissions(source, release, args.n)
    folder = out / "submissions"
    folder.mkdir(parents=True)
    for name, content in submissions.items():
        (folder / f"{name}.ipynb").write_bytes(content)
    if args.shards:
        time_shards(folder, out, [int(n) for n in args.shards.split(",")])
        return

    results = {}
    for name, content in submissions.items():
        target = course / "submitted" / name / ASSIGNMENT
        target.mkdir(parents=True)
        (target / f"{ASSIGNMENT}.ipynb").write_bytes(content)
    started = time.monotonic()
    try:
        nbg.autograde(course, ASSIGNMENT)
    except nbg.NbgraderError:
        pass  # the invalid-JSON submission makes nbgrader exit 1; the others are graded
    results["nbgrader autograde"] = time.monotonic() - started
    loads = {"nbgrader autograde": _progress("nbgrader autograde", results)}

    for workers in [int(w) for w in args.workers.split(",")]:
        started = time.monotonic()
        options = ("--workers", str(workers), "--quiet")
        subprocess.run(
            command_line(ASSIGNMENT, folder, out / f"ta_{workers}", *options), cwd=REPO, check=False
        )
        results[f"autograder, {workers} worker(s)"] = time.monotonic() - started
        loads[f"autograder, {workers} worker(s)"] = _progress(
            f"autograder, {workers} worker(s)", results
        )

    kinds = {}
    for name, content in submissions.items():
        kinds.setdefault(name.split("_", 1)[1], content)
    execution = execution_seconds(course, kinds)
    n = len(submissions)
    report = {"submissions": n, "mean_execution_s": round(execution, 2), "runs": {}}
    print(f"\n{n} submissions; executing one notebook's cells takes {execution:.2f} s on average")
    print(f"{'method':<28}{'wall s':>8}{'subs/min':>10}{'overhead s/sub':>16}{'speed-up':>10}")
    for method, seconds in results.items():
        workers = int(method.split(", ")[1].split()[0]) if "worker" in method else 1
        overhead = seconds * workers / n - execution
        speedup = results["nbgrader autograde"] / seconds  # against plain nbgrader, same run
        print(
            f"{method:<28}{seconds:>8.1f}{n / seconds * 60:>10.1f}{overhead:>16.2f}{speedup:>9.2f}x"
        )
        report["runs"][method] = {
            "wall_s": round(seconds, 1),
            "subs_per_min": round(n / seconds * 60, 1),
            "overhead_s_per_sub": round(overhead, 2),
            "speedup_vs_nbgrader": round(speedup, 2),
            "load_average_1_5_15": loads[method],
        }
    (out / "report.json").write_text(json.dumps(report, indent=1))
    print("(overhead = wall time x workers / submissions - execution time of the cells)")


if __name__ == "__main__":
    main()
