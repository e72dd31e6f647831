"""The output folder between runs: its lock (one command at a time) and ``state.json`` (the
records of the last run, what changed since, what to judge again)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from dataclasses import asdict
from pathlib import Path

from autograder.fingerprint import grading_fingerprint
from autograder.platform import cluster
from autograder.platform.errors import GradingError
from autograder.platform.inputs import Entry
from autograder.platform.record import SubmissionRecord
from autograder.platform.sandbox import Limits

LOCK_NAME = ".grading.lock"


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` whole or not at all: a full disk leaves the old file."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with temporary.open("w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def output_lock(out: Path):
    """Hold ``out``'s lock while grading into it; refuse, naming the holder, if another has it.

    An advisory ``flock`` on ``OUT/.grading.lock``: the system drops it when the holder dies,
    however it dies, so a killed run never leaves the folder locked."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK_NAME
    handle = path.open("a+", encoding="utf-8")
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise GradingError(
                f"{out} is being graded by another command ({holder}); wait for it to end, "
                "or grade into another folder"
            ) from None
        handle.seek(0)
        handle.truncate()
        started = time.strftime("%Y-%m-%d %H:%M:%S")
        handle.write(f"process {os.getpid()} on {socket.gethostname()}, started {started}\n")
        handle.flush()
        yield
    finally:
        handle.close()  # closing the last descriptor drops the lock


def state_path(out: Path) -> Path:
    return out / "state.json"


def _settings(limits: Limits) -> str:
    return json.dumps(asdict(limits), sort_keys=True)


def read_state(state_file: Path, assignment: str, limits: Limits) -> tuple[dict, str]:
    """The state of the last run (a fresh one if grading changed), and why every submission
    is judged again if the grading changed (else "")."""
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    fingerprint = grading_fingerprint(assignment) + _settings(limits)
    regrading = ""  # why every submission is judged again, if one reason covers them all
    if state.get("fingerprint") != fingerprint or state.get("assignment") != assignment:
        if state.get("assignment") == assignment:
            regrading = "grading changed (the assignment's tests or the limits)"
        kept = state.get("scores", {}) if regrading else {}
        state = {"assignment": assignment, "fingerprint": fingerprint, "records": {}}
        state["scores"] = kept
    records = state["records"]
    state["records"] = {s: SubmissionRecord.from_json(r) for s, r in records.items()}
    return state, regrading


def write_state(state_file: Path, state: dict) -> None:
    """Write ``state`` (its records as JSON) to ``state_file``, whole or not at all."""
    records = {s: r.to_json() for s, r in state["records"].items()}
    write_atomically(state_file, json.dumps(state | {"records": records}))


def to_judge(
    entries: list[Entry], records: dict[str, SubmissionRecord], force: bool
) -> list[Entry]:
    """The entries to judge: changed, never recorded, or all of them with ``force``."""
    return [
        e
        for e in entries
        if force
        or e.student not in records
        or records[e.student].digest != e.digest
        or not records[e.student].recorded
    ]


def inputs_digest(entries: list[Entry]) -> str:
    return cluster.inputs_digest({e.student: e.digest for e in entries})


def why_judged(entry: Entry, records: dict[str, SubmissionRecord], force: bool) -> str:
    """Why ``entry`` is judged in this run, in words, for the regrade log."""
    old = records.get(entry.student)
    if old is None:
        return "first grading"
    if old.digest != entry.digest:
        return "submission changed"
    return "judged again (--force)" if force else "judged again (not recorded before)"
