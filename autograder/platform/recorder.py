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

import json
import multiprocessing
import os
import shutil
import sys
import traceback
from pathlib import Path

from autograder.platform.sandbox import die_with_parent, set_memory_bound

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


TIMED_OUT = "timed out while rendering feedback"
RESULTS = "recorded.jsonl"  # in the course folder: one line per submission as it is recorded


def _record_child(api, course, assignment, student, gradable, keep, memory_mb, connection):
    try:
        set_memory_bound(memory_mb)
        result = record_one(api, course, assignment, student, gradable, keep)
    except MemoryError:
        result = (False, f"recording needed more than {memory_mb} MB of the grader's memory")
    except BaseException:  # noqa: BLE001 - that submission's grader error, the others go on
        result = (False, traceback.format_exc(limit=3))
    connection.send(result)
    connection.close()


def _record_with_deadline(api, course, assignment, message, seconds, memory_mb) -> dict:
    """Record one submission in a forked child (nbgrader already loaded), given ``seconds``:
    a notebook that renders for longer is stopped, and its partial results removed."""
    student, gradable, keep = message
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(
        target=_record_child,
        args=(api, course, assignment, student, gradable, keep, memory_mb, sender),
        daemon=True,
    )
    child.start()
    sender.close()
    result = None
    if receiver.poll(seconds):
        try:
            result = receiver.recv()
        except (EOFError, OSError):
            result = None
    timed_out = result is None and child.is_alive()
    if child.is_alive():
        child.kill()
    child.join()
    receiver.close()
    if result is not None:
        return {"student": student, "recorded": bool(result[0]), "log": result[1], "status": ""}
    for folder in ("autograded", "feedback"):  # half-written results would read as recorded
        shutil.rmtree(course / folder / student / assignment, ignore_errors=True)
    return {
        "student": student,
        "recorded": False,
        "log": (
            f"recording and rendering its feedback took longer than {seconds:g} s and was stopped"
            if timed_out
            else f"the recording process died (exit {child.exitcode})"
        ),
        "status": TIMED_OUT if timed_out else "",
    }


def _serve(
    course: Path, assignment: str, connection, seconds: float, memory_mb: int, parent: int
) -> None:
    die_with_parent(parent)  # killed with the grading command, however it is killed
    # nbgrader's log and warnings go to a file in the course folder, not the TA's terminal
    log = os.open(course / LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
        os.dup2(log, stream.fileno())
    os.close(log)
    api = None
    with (course / RESULTS).open("a", encoding="utf-8") as results:
        while True:
            try:
                message = connection.recv()
            except (EOFError, OSError):
                break  # the grader is gone: what was recorded is in the results file
            if message is None:
                break
            try:
                if api is None and message[1]:
                    api = _api(course)
                result = _record_with_deadline(api, course, assignment, message, seconds, memory_mb)
            except Exception:  # noqa: BLE001 - that submission's grader error, the others go on
                result = {"student": message[0], "recorded": False, "status": "",
                          "log": traceback.format_exc(limit=3)}  # fmt: skip
            results.write(json.dumps(result) + "\n")
            results.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        connection.send("done")
        connection.close()
    except OSError:
        pass


class Recorder:
    """A process that records judged submissions in nbgrader's gradebook, in arrival order.

    Each submission is recorded in a child process of its own with a deadline (``seconds``) and
    a memory bound (``memory_mb``); each result is appended to ``course/recorded.jsonl`` as it
    comes, so if the recorder itself dies, what it recorded is kept and the rest is reported.
    """

    def __init__(
        self, course: Path, assignment: str, seconds: float = 120.0, memory_mb: int = 4096
    ) -> None:
        self.course = Path(course)
        (self.course / RESULTS).unlink(missing_ok=True)
        context = multiprocessing.get_context("fork")
        self._connection, child = context.Pipe()
        self._process = context.Process(
            target=_serve,
            args=(self.course, assignment, child, seconds, memory_mb, os.getpid()),
            daemon=False,  # it forks a child per submission (a daemon may not); it stops at EOF
        )
        self._process.start()
        child.close()
        self.queued: list[str] = []
        self.lost = False  # the recorder could not be reached

    def record(self, student: str, gradable: bool, keep: bool = False) -> None:
        """Queue one submission (returns at once: the recorder works while the caller goes on)."""
        self.queued.append(student)
        if self.lost:
            return
        try:
            self._connection.send((student, gradable, keep))
        except OSError:  # BrokenPipeError, ConnectionResetError: the recorder died
            self.lost = True

    def finish(self) -> dict[str, dict]:
        """Wait for every queued submission; student -> {"recorded", "log", "status"}.

        A submission the recorder never got to (it died) reads as not recorded, with why.
        """
        if not self.lost:
            try:
                self._connection.send(None)
                self._connection.recv()
            except (OSError, EOFError):
                self.lost = True
        self._process.join()
        self._connection.close()
        found: dict[str, dict] = {}
        path = self.course / RESULTS
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    result = json.loads(line)
                except ValueError:
                    continue  # a line cut short when the recorder died
                found[result["student"]] = result
        why = f"the recording process stopped (exit {self._process.exitcode}) before this one"
        for student in self.queued:
            found.setdefault(student, {"student": student, "recorded": False, "log": why,
                                       "status": ""})  # fmt: skip
        return found
