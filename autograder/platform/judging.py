"""Judging one submission, in a process of its own: its notebooks read, canonicalised and run
in the sandbox (:mod:`autograder.platform.judge`), into one :class:`SubmissionRecord`."""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder import nbgrading
from autograder.platform import judge
from autograder.platform.inputs import INVALID, REFUSED_LINK, SPECIAL_FILE, UNREADABLE_MEMBER, Entry
from autograder.platform.record import GRADER_ERROR, SubmissionRecord
from autograder.platform.sandbox import Limits, die_with_parent, set_memory_bound


@dataclass
class Job:
    entry: Entry
    assignment: str
    course: str
    limits: Limits


def judge_entry(job: Job) -> SubmissionRecord:
    """Judge one student's notebooks; write the canonical notebooks and outputs; the record."""
    import torch

    torch.set_num_threads(1)
    course = Path(job.course)
    entry, assignment = job.entry, job.assignment
    record = SubmissionRecord(entry.student, entry.origin, entry.digest)
    flag = record.flag

    if entry.problem:
        flag(entry.status, entry.problem)
    for note in entry.notes:
        flag("duplicate upload", note)
    submitted = course / "submitted" / entry.student / assignment
    judged = course / nbgrading.JUDGED / entry.student / assignment
    for folder in (submitted, judged):
        shutil.rmtree(folder, ignore_errors=True)
    if entry.problem:  # nothing of it was read: that is all there is to say
        return record
    specs = load_specs(course, assignment)
    canonicals = {}
    for name, spec in specs.items():
        path = entry.files.get(name)
        raw = None if path is None else path.read_bytes()
        prefix = f"{name}: " if len(specs) > 1 else ""
        if raw is None:
            flag("invalid notebook", f"{prefix}missing notebook {name}.ipynb")
            continue
        try:
            notebook, notes = judge.read_submission(raw, spec)
            for status, note in notes:
                if status:
                    flag(status, prefix + note)
                else:
                    record.note(prefix + note)
            canonical, repairs = judge.canonicalize(notebook, spec)
        except judge.Unreadable as error:
            flag(error.status, prefix + str(error))
            continue
        except RecursionError:  # nesting nbformat read but our rebuild cannot: still the file's
            flag("invalid notebook", prefix + "the notebook is nested too deeply to be read")
            continue
        for note in repairs:
            flag("cells restored or overwritten", prefix + note)
        canonicals[name] = (spec, canonical, raw)
    if set(record.flags) & {INVALID, "wrong assignment", REFUSED_LINK, SPECIAL_FILE,
                               UNREADABLE_MEMBER}:  # fmt: skip
        return record
    scratch = make_scratch()
    deadline = time.monotonic() + job.limits.submission_timeout  # all its notebooks together
    try:
        for name, (spec, canonical, raw) in canonicals.items():
            verdict = judge.NotebookVerdict(name)
            judge.judge_notebook(spec, canonical, raw, scratch, job.limits, verdict, deadline)
            for status in verdict.flags:
                flag(status, "")
            record.messages += verdict.messages
            record.tests.update(verdict.tests)
            for grade_id, why in verdict.failures.items():
                record.failures[grade_id if len(specs) == 1 else f"{name}:{grade_id}"] = why
            for key, value in verdict.seconds.items():
                record.seconds[key] = record.seconds.get(key, 0.0) + value
            submitted.mkdir(parents=True, exist_ok=True)
            judged.mkdir(parents=True, exist_ok=True)
            (submitted / f"{name}.ipynb").write_text(nbformat.writes(canonical), encoding="utf-8")
            (judged / f"{name}.json").write_text(json.dumps({"cells": verdict.cells}))
    finally:
        remove_scratch(scratch)
    record.gradable = True
    return record


# Each submission's kernels work in a folder of TMPDIR, "kernels-XXXXXXXX" (a name that says
# nothing of grading), which its judging process removes when it is done. A process killed first
# (kill -9 of the command, the out-of-memory killer, a cancelled job) cannot: so beside the folder,
# "kernels-XXXXXXXX.owner" names that process (its pid and start time), and every run first
# removes the folders whose process is gone (remove_abandoned), keeping those of runs still going.
OWNER_SUFFIX = ".owner"


def _process_start(pid: int) -> str | None:
    """When process ``pid`` started (field 22 of /proc/PID/stat, in clock ticks since boot), or
    None if there is no such process: with the pid, it names one process, even after pid reuse."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]  # the fields after the name start at field 3


def make_scratch() -> Path:
    """A new folder in TMPDIR for one submission's kernels, owned by this process."""
    scratch = Path(tempfile.mkdtemp(prefix="kernels-"))
    owner = scratch.with_name(scratch.name + OWNER_SUFFIX)
    owner.write_text(f"{os.getpid()} {_process_start(os.getpid())}\n")
    return scratch


def remove_scratch(scratch: Path) -> None:
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.with_name(scratch.name + OWNER_SUFFIX).unlink(missing_ok=True)


def remove_abandoned(base: Path | None = None) -> list[Path]:
    """Remove the kernels' folders in ``base`` (TMPDIR by default) whose owning process is gone;
    those removed. A folder whose process still runs (another run's, on another output folder)
    is kept, and so is one without a readable owner (being made, or not the grader's)."""
    base = Path(tempfile.gettempdir() if base is None else base)
    removed = []
    for owner in sorted(base.glob(f"kernels-*{OWNER_SUFFIX}")):
        try:
            pid, started = owner.read_text().split()
            alive = _process_start(int(pid)) == started
        except (OSError, ValueError):
            continue
        if not alive:
            scratch = owner.with_name(owner.name.removesuffix(OWNER_SUFFIX))
            remove_scratch(scratch)
            removed.append(scratch)
    return removed


_SPECS: dict[tuple[str, str], dict[str, judge.NotebookSpec]] = {}


def load_specs(course: Path, assignment: str) -> dict[str, judge.NotebookSpec]:
    key = (str(course), assignment)
    if key not in _SPECS:
        sources = sorted((course / "source" / assignment).glob("*.ipynb"))
        _SPECS[key] = {
            p.stem: judge.NotebookSpec.load(p, course / "release" / assignment / p.name)
            for p in sources
        }
    return _SPECS[key]


def _child(job: Job, connection, parent: int) -> None:
    die_with_parent(parent)
    memory_mb = job.limits.grader_memory_mb
    try:
        set_memory_bound(memory_mb)
        record = judge_entry(job)
    except MemoryError:
        record = SubmissionRecord.failed(
            job.entry,
            "resource limit",
            f"reading what this submission's kernel sent took more than {memory_mb} MB of the"
            " grader's memory (--grader-memory-mb): its outputs or answers are too large",
        )
    except BaseException as error:  # noqa: BLE001 - reported as this submission's grader error
        record = _failed(job.entry, f"{type(error).__name__}: {error}")
    connection.send(record)
    connection.close()


def _failed(entry: Entry, message: str) -> SubmissionRecord:
    return SubmissionRecord.failed(entry, GRADER_ERROR, f"the grader failed: {message}"[:500])


def run_parallel(jobs: list[Job], workers: int):
    """Judge each job in its own forked process, ``workers`` at a time; yield (entry, record).

    A fresh process per submission: the hidden checks patch modules and set print options,
    and nothing may carry over from one student to the next. A process that dies without an
    answer gives that submission the status "grader error"; the batch goes on.
    """
    removed = remove_abandoned()
    if removed:
        print(
            f"removed {len(removed)} kernel folder(s) that an earlier run, killed before it "
            f"could clean up, left in {removed[0].parent}",
            file=sys.stderr,
        )
    context = multiprocessing.get_context("fork")
    queue = list(reversed(jobs))
    running: dict = {}
    while queue or running:
        while queue and len(running) < workers:
            job = queue.pop()
            receiver, sender = context.Pipe(duplex=False)
            process = context.Process(target=_child, args=(job, sender, os.getpid()), daemon=True)
            process.start()
            sender.close()
            running[receiver] = (process, job)
        ready = multiprocessing.connection.wait(list(running))
        for receiver in ready:
            process, job = running.pop(receiver)
            try:
                record = receiver.recv()
            except (EOFError, OSError):
                record = _failed(job.entry, f"the grading process died (exit {process.exitcode})")
            receiver.close()
            process.join()
            yield job.entry, record
