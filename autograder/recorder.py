"""nbgrader's recording step, off the critical path: one process that records while kernels run.

nbgrader's autograde (with :class:`autograder.nbgrading.InjectResults`) and generate_feedback
write the gradebook and the feedback files one submission at a time. Run after all judging,
they were the serial tail of a batch (a quarter of its time with two workers). Here one
recorder process, forked before the first worker, loads nbgrader and the course's
configuration once and records each submission as soon as its judge finishes, through
nbgrader's own API (``NbGraderAPI.autograde`` and ``generate_feedback``, what formgrader
calls), while the next submissions are judged. It is the only process that writes the
gradebook while it runs, so sqlite sees one writer.

    recorder = Recorder(course, assignment)   # before any worker is forked
    recorder.record("alice", gradable=True, keep=False)
    ...
    results = recorder.finish()               # {"alice": (True, "")}
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sys
import traceback
from pathlib import Path

LOG = "recording.log"  # in the course folder: nbgrader's own output while it records


def _api(course: Path):
    """nbgrader's API on ``course`` with its nbgrader_config.py, as ``nbgrader`` in it would be."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    os.chdir(course)  # nbgrader's paths and its config file are relative to the course folder
    # nbgrader runs `alembic` from PATH on a new gradebook: the venv's
    os.environ["PATH"] = os.pathsep.join(
        [str(Path(sys.executable).parent), os.environ.get("PATH", "")]
    )
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    return NbGraderAPI(config=config)


def record_one(api, course: Path, assignment: str, student: str, gradable: bool, keep: bool):
    """Record one judged submission; (recorded, nbgrader's log when it failed).

    ``gradable``: its judged outputs are recorded and its feedback written. Otherwise its
    earlier autograded copy, feedback and gradebook submission go, unless ``keep`` (the grader
    failed, maybe transiently: the gradebook's earlier result stays).
    """
    from nbgrader.api import Gradebook, MissingEntry

    if not gradable and keep:
        return False, ""
    for folder in ("autograded", "feedback"):
        shutil.rmtree(course / folder / student / assignment, ignore_errors=True)
    if not gradable:
        shutil.rmtree(course / "submitted" / student / assignment, ignore_errors=True)
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
            try:
                gradebook.remove_submission(assignment, student)
            except MissingEntry:
                pass
        return True, ""
    graded = api.autograde(assignment, student, force=True, create=True)
    if not graded["success"]:
        return False, graded.get("log", "") + graded.get("error", "")
    api.generate_feedback(assignment, student, force=True)  # without feedback: still graded
    return (course / "autograded" / student / assignment).is_dir(), ""


def _serve(course: Path, assignment: str, connection) -> None:
    # nbgrader's log and warnings go to a file in the course folder, not the TA's terminal
    log = os.open(course / LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
        os.dup2(log, stream.fileno())
    os.close(log)
    api = None
    results: dict[str, tuple[bool, str]] = {}
    while True:
        message = connection.recv()
        if message is None:
            break
        student, gradable, keep = message
        try:
            if api is None and gradable:
                api = _api(course)
            results[student] = record_one(api, course, assignment, student, gradable, keep)
        except Exception:  # noqa: BLE001 - that submission's grader error, the others go on
            results[student] = (False, traceback.format_exc(limit=3))
    sys.stdout.flush()
    sys.stderr.flush()
    connection.send(results)
    connection.close()


class Recorder:
    """A process that records judged submissions in nbgrader's gradebook, in arrival order."""

    def __init__(self, course: Path, assignment: str) -> None:
        context = multiprocessing.get_context("fork")
        self._connection, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(Path(course), assignment, child), daemon=True
        )
        self._process.start()
        child.close()

    def record(self, student: str, gradable: bool, keep: bool = False) -> None:
        """Queue one submission (returns at once: the recorder works while the caller goes on)."""
        self._connection.send((student, gradable, keep))

    def finish(self) -> dict[str, tuple[bool, str]]:
        """Wait for every queued submission; student -> (recorded, nbgrader's log if not)."""
        self._connection.send(None)
        try:
            results = self._connection.recv()
        except EOFError:
            results = {}  # the recorder died: every submission reads as unrecorded
        self._process.join()
        self._connection.close()
        return results
