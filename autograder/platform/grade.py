"""``python -m autograder grade ASSIGNMENT PATH``: grade a folder or zip of notebooks, in parallel.

Steps: an nbgrader course directory under ``OUT/course`` (source, release, gradebook); every
notebook in PATH becomes a student (named by the file, or by its folder when the file is named
like the assignment's notebook); each submission is judged in a separate process with its own
sandboxed kernel (``--workers`` at a time); nbgrader then records the judged outputs in its
gradebook and writes feedback; ``OUT/grades.csv`` gets one row per submission with its
per-part scores, total and status, and a summary is printed.

A re-run skips submissions whose file (and the grading settings) did not change, so running
twice on the same folder neither duplicates nor loses anything; ``--force`` judges all again.

On several machines: ``--shard I/N`` (I from 0) on each judges one shard of the batch and
records nothing; ``--merge`` then records every shard's results as one run would have
(:mod:`autograder.platform.cluster`). ``--slurm N`` and ``--kubernetes N`` grade nothing: they
write the jobs that run both on a Slurm or Kubernetes cluster.

Exit code: 0 all graded, nothing for a human; 1 only written answers wait for manual
grading; 2 some submission needs a look (see its status); 3 the command itself failed; 4 the
output folder's disk is full (what was graded before is kept: free space and run it again).

One command at a time on an output folder: a second one started on it refuses, naming the
first's process (``OUT/.grading.lock``). The command's workers and their kernels die with it,
also when it is killed (``kill -9``, the out-of-memory killer, a cancelled job).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import errno
import fcntl
import functools
import hashlib
import json
import math
import multiprocessing
import multiprocessing.connection
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
import time
import zipfile
import zlib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import nbformat
from tqdm import tqdm

from autograder import nbgrader_format as fmt
from autograder import nbgrading
from autograder.fingerprint import grading_fingerprint
from autograder.platform import (
    cluster,
    exports,
    feedback,
    judge,
    markup,
    policy,
    regrades,
    similarity,
)
from autograder.platform.recorder import Recorder
from autograder.platform.report import write_report
from autograder.platform.sandbox import (
    ROOT,
    ROOTLESS,
    Limits,
    SandboxUnavailable,
    check_sandbox_available,
    cpu_cap,
    die_with_parent,
    memory_cap,
    set_memory_bound,
)

MAX_FILE_BYTES = 50 * 1024 * 1024
EXIT_OK, EXIT_MANUAL, EXIT_LOOK, EXIT_FAILED, EXIT_NO_SPACE = 0, 1, 2, 3, 4
LOCK_NAME = ".grading.lock"
SANDBOX_WORDS = {
    ROOT: "root mode (namespaces, chroot, a uid per kernel)",
    ROOTLESS: "rootless mode (user namespaces; kernels run with your uid outside the sandbox)",
}


class GradingError(RuntimeError):
    """The command cannot run (bad arguments, nbgrader failing on the course itself)."""


# -- course directory ------------------------------------------------------------------------------


def prepare_course(out: Path, assignment: str) -> Path:
    """OUT/course with the assignment's source and release (rebuilt when a grading input changed)."""
    try:
        fmt.source_files(assignment)
    except FileNotFoundError as error:
        raise GradingError(str(error)) from None
    course = out / "course"
    stamp = course / ".source-fingerprint"
    fingerprint = grading_fingerprint(assignment)
    if stamp.exists() and stamp.read_text() == fingerprint:
        return course
    config = nbgrading.GRADING_CONFIG.format(root=str(course / nbgrading.JUDGED))
    config += markup.exporter_config()
    fresh = not (course / GRADEBOOK).exists()  # no student's record to keep in the gradebook
    fmt.make_course_dir(course, [assignment], extra_config=config)
    if not (fresh and _copy_release(course, assignment, fingerprint)):
        try:
            fmt.release(course, assignment)
        except fmt.NbgraderError as error:
            raise GradingError(str(error)) from None
        if fresh:
            _keep_release(course, assignment, fingerprint)
    stamp.write_text(fingerprint)
    return course


# What nbgrader's generate_assignment makes from the sources of one fingerprint is the same
# every time: the student version and a gradebook that knows the assignment's cells. Making it
# costs a process of its own, about 3 s of CPU, in every new output folder (a TA's first run,
# each test of the command). A new course folder takes a copy of it from the release cache
# (RELEASE_CACHE_VARIABLE, else the user's cache folder): folders named by assignment and
# fingerprint, written whole or not at all, never changed after; a cache that cannot be read
# or written is only slower. A course folder that has a gradebook already (a re-run after the
# sources changed) keeps it, students' records and all, and releases again as before.
RELEASE_CACHE_VARIABLE = "COURSE_RELEASE_CACHE"
GRADEBOOK = "gradebook.db"
KEPT_RELEASES = 4  # per assignment, the newest; the older ones are removed


def release_cache() -> Path:
    from platformdirs import user_cache_dir

    return Path(os.environ.get(RELEASE_CACHE_VARIABLE) or user_cache_dir("seqcourse")) / "releases"


def _cached_release(assignment: str, fingerprint: str) -> Path:
    return release_cache() / f"{assignment}-{fingerprint[:40]}"


def _copy_release(course: Path, assignment: str, fingerprint: str) -> bool:
    """The cached release of ``fingerprint`` copied into the new ``course``; False if none."""
    cached = _cached_release(assignment, fingerprint)
    target = course / "release" / assignment
    try:
        if not (cached / GRADEBOOK).is_file():
            return False
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(cached / "release", target)
        shutil.copyfile(cached / GRADEBOOK, course / GRADEBOOK)
    except OSError:
        shutil.rmtree(target, ignore_errors=True)
        (course / GRADEBOOK).unlink(missing_ok=True)
        return False
    return True


def _keep_release(course: Path, assignment: str, fingerprint: str) -> None:
    """Put the release just made in ``course`` into the cache (a copy made aside, then renamed
    into place: a reader sees all of it or nothing); drop this assignment's oldest entries."""
    cached = _cached_release(assignment, fingerprint)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cached.parent, prefix=".new-") as partial:
            shutil.copytree(course / "release" / assignment, Path(partial) / "entry" / "release")
            shutil.copyfile(course / GRADEBOOK, Path(partial) / "entry" / GRADEBOOK)
            with contextlib.suppress(OSError):  # another process has put it there first
                os.rename(Path(partial) / "entry", cached)
        entries = sorted(
            cached.parent.glob(f"{assignment}-*"), key=lambda p: p.stat().st_mtime, reverse=True
        )
        for old in entries[KEPT_RELEASES:]:
            shutil.rmtree(old, ignore_errors=True)
    except OSError:
        pass  # no cache: the next new folder releases again


# -- importing submissions ---------------------------------------------------------------------

# Why an input item cannot be graded: a status of its own (judge.STATUSES), and the message.
REFUSED_LINK, SPECIAL_FILE, UNREADABLE_MEMBER = (
    "refused link",
    "special file",
    "unreadable zip member",
)
INVALID = "invalid notebook"


@dataclass
class Entry:
    student: str
    files: dict[str, Path]  # notebook name -> its bytes, copied into the grading's inbox
    origin: str
    problem: str = ""  # set when the upload itself is unusable (too large, a link...)
    status: str = INVALID  # the status that problem gives
    notes: list[str] = field(default_factory=list)  # harmless oddities a TA should hear of

    @functools.cached_property
    def digest(self) -> str:  # read once: the files are up to 50 MB and the digest is asked often
        digest = hashlib.sha256((self.problem + "\0").encode())
        for name in sorted(self.files):
            digest.update(name.encode() + b"\0")
            with self.files[name].open("rb") as handle:
                while block := handle.read(1 << 20):
                    digest.update(block)
            digest.update(b"\0")
        return digest.hexdigest()


@dataclass
class Collection:
    """What an input folder or zip holds: one entry per student, and what was passed over."""

    entries: list[Entry]
    inputs: list[dict[str, str]] = field(default_factory=list)  # a row per file or member

    @property
    def skipped(self) -> list[str]:
        """The files that are not notebooks (or are hidden): named, not graded."""
        return [row["input"] for row in self.inputs if row["status"] in (NOT_A_NOTEBOOK, HIDDEN)]

    def write_inputs(self, target: Path) -> None:
        """``inputs.csv``: every file or zip member of the input, what became of it, and why."""
        with target.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=INPUT_COLUMNS)
            writer.writeheader()
            writer.writerows(sorted(self.inputs, key=lambda row: row["input"]))


INPUT_COLUMNS = ["input", "student", "status", "message"]
# What became of an input item that is not its student's graded notebook.
NOT_A_NOTEBOOK = "not a notebook"
HIDDEN = "hidden"


_UNSAFE_ID = re.compile(r"[^\w.@-]")  # \w: letters and digits of every script, and _


def student_id(name: str) -> str:
    """The gradebook's id for a student named ``name`` (a file's or a folder's name).

    Lossless: a name made only of letters and digits (any script), ``_ . @ -``, and at most 64
    characters long, is its own id; any other name gets the readable part of it (characters
    outside that set as ``_``, cut to 64) and 8 hex digits of its hash. Two different names never
    share an id; the same name always gets the same one, whatever else is in the batch.
    """
    cleaned = _UNSAFE_ID.sub("_", name).strip("._")
    if cleaned == name and 0 < len(name) <= 64:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{cleaned[:64] or 'unnamed'}-{digest}"


def _split(name: str) -> tuple[str, ...]:
    """A member's or file's path as parts: ``/`` and ``\\`` both separate, ``.`` parts dropped."""
    return tuple(p for p in re.split(r"[/\\]", name) if p not in ("", "."))


class _Item:
    """One notebook-named thing in the input: its path parts, and its bytes in the inbox or why
    it has none."""

    def __init__(self, parts: tuple[str, ...], path: Path | None, status: str = "", why: str = ""):
        self.parts, self.path, self.status, self.why = parts, path, status, why


def _copy_capped(source, target: Path) -> bool:
    """Copy at most MAX_FILE_BYTES from the open binary ``source`` to ``target``; False if there
    was more (the copy is then removed). Never holds more than a megabyte in memory."""
    written = 0
    with target.open("wb") as handle:
        while block := source.read(min(1 << 20, MAX_FILE_BYTES + 1 - written)):
            written += len(block)
            if written > MAX_FILE_BYTES:
                break
            handle.write(block)
    if written > MAX_FILE_BYTES:
        target.unlink()
        return False
    return True


def _hidden(parts: tuple[str, ...]) -> bool:
    return any(p.startswith((".", "__MACOSX")) for p in parts)


def _from_folder(root: Path, inbox: Path, skipped: list[str]) -> list[_Item]:
    """Every regular file named *.ipynb under ``root``, copied into ``inbox``; links (whatever
    they point to) and special files are items with a status, never opened or followed."""
    items = []
    own = inbox.parent.resolve()
    for folder, folders, files in os.walk(root, followlinks=False):
        here = Path(folder)
        folders.sort()
        links = [name for name in folders if (here / name).is_symlink()]
        for name in sorted(files) + links:
            path = here / name
            parts = path.relative_to(root).parts
            if not name.endswith(".ipynb") or _hidden(parts):
                skipped.append("/".join(parts))
                continue
            try:
                mode = os.lstat(path).st_mode
            except OSError as error:
                items.append(_Item(parts, None, INVALID, f"cannot be read ({error.strerror})"))
                continue
            if stat.S_ISLNK(mode):
                why = "is a symbolic link; only files inside the input folder are graded"
                items.append(_Item(parts, None, REFUSED_LINK, why))
                continue
            if not stat.S_ISREG(mode):
                items.append(_Item(parts, None, SPECIAL_FILE, "is not a regular file"))
                continue
            target = inbox / f"{len(items)}.ipynb"
            try:  # no link may have replaced it since, and a FIFO must not block the open
                descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError as error:
                items.append(_Item(parts, None, REFUSED_LINK, f"cannot be opened ({error})"))
                continue
            with os.fdopen(descriptor, "rb") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    items.append(_Item(parts, None, SPECIAL_FILE, "is not a regular file"))
                    continue
                if not _copy_capped(handle, target):
                    items.append(_Item(parts, None, INVALID, _too_large()))
                    continue
            items.append(_Item(parts, target))
        # links are not followed, and the grading's own output is not input (OUT inside PATH)
        folders[:] = [n for n in folders if n not in links and (here / n).resolve() != own]
    return items


def _too_large() -> str:
    return f"is larger than {MAX_FILE_BYTES >> 20} MB"


def _from_zip(path: Path, inbox: Path, skipped: list[str]) -> list[_Item]:
    """Every member named *.ipynb, decompressed one at a time into ``inbox`` (at most
    MAX_FILE_BYTES each, whatever the header claims); a member that cannot be read is an item
    with a status and the reason, and the others are still read."""
    items = []
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise GradingError(f"{path} cannot be read as a zip file: {error}") from None
    with archive:
        for info in archive.infolist():
            parts = _split(info.filename)
            if info.is_dir():
                continue
            if not parts or not parts[-1].endswith(".ipynb"):
                skipped.append(info.filename)
                continue
            if ".." in parts:
                why = "its path leaves the archive (a '..' part); not read"
                items.append(
                    _Item(tuple(p for p in parts if p != ".."), None, UNREADABLE_MEMBER, why)
                )
                continue
            if _hidden(parts):
                skipped.append(info.filename)
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                why = "is a symbolic link; only files in the archive are graded"
                items.append(_Item(parts, None, REFUSED_LINK, why))
                continue
            target = inbox / f"{len(items)}.ipynb"
            try:
                with archive.open(info) as member:
                    complete = _copy_capped(member, target)
            except (zipfile.BadZipFile, RuntimeError, NotImplementedError, zlib.error,
                    EOFError, OSError, ValueError) as error:  # fmt: skip
                target.unlink(missing_ok=True)
                why = f"cannot be read from the zip ({type(error).__name__}: {error})"[:300]
                items.append(_Item(parts, None, UNREADABLE_MEMBER, why))
                continue
            items.append(
                _Item(parts, target) if complete else _Item(parts, None, INVALID, _too_large())
            )
    return items


def _exchange_owner(
    parts: tuple[str, ...], notebooks: list[str], assignment: str | None, course: set[str]
) -> tuple[str, str] | None:
    """For an item in the layout of nbgrader's exchange, ``STUDENT/ASSIGNMENT/NAME.ipynb`` (what
    ``nbgrader collect`` makes under ``submitted/``): (the student, "") for the graded assignment,
    ("", why it is not graded) for another assignment of the ``course`` or a notebook that is
    not one of this assignment's; None for an item in no such layout."""
    if assignment is None or len(parts) < 3 or parts[-2] not in {assignment, *course}:
        return None
    stem = parts[-1][: -len(".ipynb")]
    if parts[-2] != assignment:
        return "", f"not graded: a submission of {parts[-2]}, not of {assignment}"
    if stem not in notebooks:
        names = ", ".join(f"{n}.ipynb" for n in notebooks)
        return parts[-3], f"not graded: not one of the assignment's notebooks ({names})"
    return parts[-3], ""


OTHER_ASSIGNMENT = "other assignment"
OTHER_NOTEBOOK = "other notebook"
EXCHANGE_FILE = "exchange file"


def _skipped_row(name: str, assignment: str | None) -> dict[str, str]:
    """The ``inputs.csv`` row of an item that is not graded: not a notebook, hidden, or one of
    the files nbgrader's exchange keeps beside a submission (``STUDENT/ASSIGNMENT/``)."""
    parts = _split(name)
    if (
        assignment is not None
        and len(parts) >= 3
        and parts[-2] == assignment
        and parts[-1] in feedback.EXCHANGE_FILES
    ):
        why = "nbgrader's record of the submission (read by --policy and --release-feedback)"
        return {"input": name, "student": "", "status": EXCHANGE_FILE, "message": why}
    if not name.endswith(".ipynb"):
        why = "not graded: only files named *.ipynb are"
        return {"input": name, "student": "", "status": NOT_A_NOTEBOOK, "message": why}
    why = "not graded: a hidden file or folder (checkpoints, __MACOSX)"
    return {"input": name, "student": "", "status": HIDDEN, "message": why}


def collect(
    path: Path, notebooks: list[str], inbox: Path, assignment: str | None = None
) -> Collection:
    """One entry per student found in a folder or zip of notebooks; their bytes go to ``inbox``.

    A file named like one of the assignment's notebooks is its folder's student's; any other
    ``NAME.ipynb`` is student NAME's (see :func:`student_id`). In the layout of nbgrader's
    exchange, ``STUDENT/ASSIGNMENT/NAME.ipynb`` under ``submitted/`` (given ``assignment``), the
    student is the folder above the assignment's, and the notebooks of another assignment, or
    not named like this one's, are rows that say so. Every notebook-named item is graded or is a
    row saying why not; other files are listed in ``skipped``; and every file or member,
    whatever it is, is a row of ``inputs`` (:meth:`Collection.write_inputs`).
    """
    shutil.rmtree(inbox, ignore_errors=True)
    inbox.mkdir(parents=True)
    skipped: list[str] = []
    if path.is_file() and not path.is_symlink() and zipfile.is_zipfile(path):
        items = _from_zip(path, inbox, skipped)
    elif path.is_dir():
        items = _from_folder(path, inbox, skipped)
    else:
        raise GradingError(f"{path} is neither a folder nor a zip file")
    entries: dict[str, Entry] = {}
    inputs = [_skipped_row(name, assignment) for name in skipped]
    # readable items first, so that a student's good file is graded whatever sorts before it
    passed_over: list[tuple[str, str]] = []  # (student, note) for other notebooks of theirs
    course = set(fmt.assignment_ids()) if assignment is not None else set()
    for item in sorted(items, key=lambda item: (item.path is None, item.parts)):
        parts, where = item.parts, "/".join(item.parts)
        stem = parts[-1][: -len(".ipynb")]
        exchange = _exchange_owner(parts, notebooks, assignment, course)
        if exchange is not None and exchange[1]:
            owner, why = exchange
            status = OTHER_NOTEBOOK if owner else OTHER_ASSIGNMENT
            student = student_id(owner) if owner else ""
            inputs.append({"input": where, "student": student, "status": status, "message": why})
            if owner:
                passed_over.append((student, f"{where} {why.removeprefix('not graded: ')}"))
            continue
        if exchange is not None:
            name, notebook = exchange[0], stem
        elif stem in notebooks and len(parts) > 1:
            name, notebook = parts[-2], stem
        else:
            name, notebook = stem, notebooks[0]
        student = student_id(name)
        entry = entries.get(student)
        if entry is not None and (notebook in entry.files or item.path is None):
            why = f" ({item.status}: {item.why})" if item.path is None else ""
            note = f"two files for {student}: graded {entry.origin}, ignored {where}{why}"
            entry.notes.append(note)
            inputs.append(
                {"input": where, "student": student, "status": "duplicate upload", "message": note}
            )
            continue
        if entry is None:
            entry = entries[student] = Entry(student, {}, where)
        if item.path is None:
            entry.problem, entry.status = f"{where} {item.why}", item.status
            inputs.append(
                {"input": where, "student": student, "status": item.status, "message": item.why}
            )
        else:
            entry.files[notebook] = item.path
            inputs.append(
                {"input": where, "student": student, "status": "read", "message": "graded"}
            )
    for student, note in passed_over:
        if student in entries:  # said in the student's row too, as a harmless oddity
            entries[student].notes.append(note)
    return Collection(list(entries.values()), inputs)


# -- judging one submission (in a worker process) ----------------------------------------------


@dataclass
class Job:
    entry: Entry
    assignment: str
    course: str
    limits: Limits


def judge_entry(job: Job) -> dict:
    """Judge one student's notebooks; write the canonical notebooks and outputs; the record."""
    import torch

    torch.set_num_threads(1)
    course = Path(job.course)
    entry, assignment = job.entry, job.assignment
    record = {
        "student": entry.student,
        "origin": entry.origin,
        "digest": entry.digest,
        "flags": [],
        "messages": [],
        "tests": {},
        "failures": {},  # CSV column -> why that test failed (for the report)
        "seconds": {},
        "gradable": False,
    }

    def flag(status: str, message: str) -> None:
        if status not in record["flags"]:
            record["flags"].append(status)
        if message:
            record["messages"].append(message)

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
                    record["messages"].append(prefix + note)
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
    if set(record["flags"]) & {INVALID, "wrong assignment", REFUSED_LINK, SPECIAL_FILE,
                               UNREADABLE_MEMBER}:  # fmt: skip
        return record
    scratch = Path(tempfile.mkdtemp(prefix="kernels-"))  # a name that says nothing of grading
    deadline = time.monotonic() + job.limits.submission_timeout  # all its notebooks together
    try:
        for name, (spec, canonical, raw) in canonicals.items():
            verdict = judge.NotebookVerdict(name)
            judge.judge_notebook(spec, canonical, raw, scratch, job.limits, verdict, deadline)
            for status in verdict.flags:
                flag(status, "")
            record["messages"] += verdict.messages
            record["tests"].update(verdict.tests)
            for grade_id, why in verdict.failures.items():
                record["failures"][grade_id if len(specs) == 1 else f"{name}:{grade_id}"] = why
            for key, value in verdict.seconds.items():
                record["seconds"][key] = record["seconds"].get(key, 0.0) + value
            submitted.mkdir(parents=True, exist_ok=True)
            judged.mkdir(parents=True, exist_ok=True)
            (submitted / f"{name}.ipynb").write_text(nbformat.writes(canonical), encoding="utf-8")
            (judged / f"{name}.json").write_text(json.dumps({"cells": verdict.cells}))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    record["gradable"] = True
    return record


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
        record = _failed(job.entry, "")
        record["flags"] = ["resource limit"]
        record["messages"] = [
            f"reading what this submission's kernel sent took more than {memory_mb} MB of the"
            " grader's memory (--grader-memory-mb): its outputs or answers are too large"
        ]
    except BaseException as error:  # noqa: BLE001 - reported as this submission's grader error
        record = _failed(job.entry, f"{type(error).__name__}: {error}")
    connection.send(record)
    connection.close()


def _failed(entry: Entry, message: str) -> dict:
    return {
        "student": entry.student,
        "origin": entry.origin,
        "digest": entry.digest,
        "flags": ["grader error"],
        "messages": [f"the grader failed: {message}"[:500]],
        "tests": {},
        "seconds": {},
        "gradable": False,
    }


def run_parallel(jobs: list[Job], workers: int):
    """Judge each job in its own forked process, ``workers`` at a time; yield (entry, record).

    A fresh process per submission: the hidden checks patch modules and set print options,
    and nothing may carry over from one student to the next. A process that dies without an
    answer gives that submission the status "grader error"; the batch goes on.
    """
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


CPU_CAP_ROOTLESS = "no cap per kernel: no cpu cgroup in rootless mode (run as root for one)"


def memory_cap_rootless(limits: Limits) -> str:
    return (
        f"{limits.memory_mb} MB of address space per process only: no memory cgroup in"
        " rootless mode (run as root for a cap per kernel)"
    )


# -- the whole command ---------------------------------------------------------------------------


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


def _state_path(out: Path) -> Path:
    return out / "state.json"


def _settings(limits: Limits) -> str:
    return json.dumps(asdict(limits), sort_keys=True)


@dataclass(frozen=True)
class GradingOptions:
    """Everything a run of :func:`grade` takes besides the assignment, the submissions and the
    output folder: built once from the command line (:func:`options_from`)."""

    workers: int = 1
    limits: Limits = field(default_factory=Limits)
    force: bool = False  # judge unchanged submissions again
    quiet: bool = False
    # similarity: the folder of past or public solutions, and the score from which a pair is listed
    similar_to: Path | None = None
    similarity_threshold: float = similarity.THRESHOLD
    # the late policy's inputs, and the roster of the exports
    policy_file: Path | None = None
    submitted_at: Path | None = None
    roster_file: Path | None = None
    # the cluster role: judge shard (I, N) into ``shards``, or merge the shards (neither: a whole
    # run); ``shards`` is ``OUT/shards`` unless given
    shard: tuple[int, int] | None = None
    shards: Path | None = None
    merge: bool = False
    # put each student's feedback back through nbgrader's exchange (autograder.platform.feedback);
    # a shard records nothing and so releases nothing: the merge does
    release_feedback: bool = False

    def __post_init__(self) -> None:
        if self.shard is not None and self.merge:
            raise GradingError(
                "--shard and --merge: one or the other (judge a shard, or merge them)"
            )

    def shards_folder(self, out: Path) -> Path:
        return self.shards or out / "shards"


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}")
    return value


def options_from(args: argparse.Namespace) -> GradingOptions:
    """The options of a run, from the parsed command line (:func:`command_parser`)."""
    limits = Limits(
        cell_timeout=args.timeout,
        memory_mb=args.memory_mb,
        kernel_memory_mb=args.kernel_memory_mb,
        kernel_cpus=args.kernel_cpus,
        reply_mb=args.max_reply_mb,
        processes=args.max_processes,
        files=args.max_files,
        submission_timeout=args.deadline,
        record_timeout=args.record_timeout,
        grader_memory_mb=args.grader_memory_mb,
    )
    return GradingOptions(
        workers=max(1, args.workers),
        limits=limits,
        force=args.force,
        quiet=args.quiet,
        similar_to=args.similar_to.resolve() if args.similar_to else None,
        similarity_threshold=args.similarity_threshold,
        policy_file=args.policy,
        submitted_at=args.submitted_at,
        roster_file=args.roster,
        shard=cluster.parse_shard(args.shard) if args.shard is not None else None,
        shards=args.shards.resolve() if args.shards else None,
        merge=args.merge,
        release_feedback=args.release_feedback,
    )


@dataclass
class Batch:
    """What a run and a shard both start from: the course folder, the assignment's notebooks,
    the submissions, the state of the last run and the submissions to judge."""

    course: Path
    specs: dict[str, judge.NotebookSpec]
    collection: Collection
    state: dict
    regrading: str  # why every submission is judged again, if the grading changed (else "")
    todo: list[Entry]


def open_batch(
    assignment: str, path: Path, folder: Path, out: Path, force: bool, limits: Limits
) -> Batch:
    """A course folder in ``folder``, the submissions in ``path`` collected into its inbox (and
    every input's fate in ``folder/inputs.csv``, written first: it stands whatever follows), the
    state of the last run in ``out`` and what to judge."""
    folder.mkdir(parents=True, exist_ok=True)
    course = prepare_course(folder, assignment)
    specs = load_specs(course, assignment)
    collection = collect(path, list(specs), folder / "inbox", assignment)
    collection.write_inputs(folder / "inputs.csv")
    if not collection.entries:
        raise GradingError(f"no notebooks (*.ipynb) found in {path}")
    state, regrading = _read_state(_state_path(out), assignment, limits)
    todo = _todo(collection.entries, state["records"], force)
    return Batch(course, specs, collection, state, regrading, todo)


def judge_all(todo: list[Entry], assignment: str, course: Path, options: GradingOptions):
    """Judge ``todo`` in ``options.workers`` processes: (entry, record) as each finishes."""
    jobs = [Job(e, assignment, str(course), options.limits) for e in todo]
    import torch  # noqa: F401 - imported once here, inherited by every forked worker

    return run_parallel(jobs, options.workers)


def grade(assignment: str, path: Path, out: Path, options: GradingOptions) -> int:
    """Grade the submissions in ``path`` into ``out``; the exit code (module docstring).

    With ``options.shard`` (I, N): judge only shard I of N (:mod:`autograder.platform.cluster`) into
    ``SHARDS/I-of-N`` and record nothing. With ``options.merge``: judge nothing, take every
    shard's judged submissions from ``SHARDS`` and record them, as a run on one machine would
    have.
    """
    limits, merge, quiet = options.limits, options.merge, options.quiet
    shards = options.shards_folder(out)
    if options.shard is not None:
        return grade_shard(assignment, path, out, options)
    similarity.check_threshold(options.similarity_threshold)
    similar_to = options.similar_to
    if similar_to is not None and not similar_to.is_dir():
        raise GradingError(f"--similar-to {similar_to}: no such folder")
    course_policy, times = read_policy(assignment, options.policy_file, options.submitted_at)
    roster_file = options.roster_file
    roster, roster_fields = exports.load_roster(roster_file) if roster_file else ({}, set())
    if options.release_feedback:
        try:
            feedback.course_of(path)  # before anything is graded
        except feedback.FeedbackError as error:
            raise GradingError(str(error)) from error
    mode = "" if merge else check_sandbox_available()
    with output_lock(out):  # one command at a time on a folder (module docstring)
        batch = open_batch(assignment, path, out, out, options.force, limits)
        course, specs, collection, state = batch.course, batch.specs, batch.collection, batch.state
        entries, todo = collection.entries, batch.todo
        state_file = _state_path(out)
        records: dict[str, dict] = state["records"]
        taken: dict[str, tuple[dict, Path]] = {}  # merged: student -> (record, its shard's course)
        if merge:
            manifests = cluster.read_shards(
                shards, assignment, state["fingerprint"], _inputs_digest(entries)
            )
            modes = {manifest["sandbox"] for manifest in manifests}
            mode = ROOTLESS if ROOTLESS in modes else ROOT  # the weaker one, if the nodes differ
            for manifest in manifests:
                for student, record in manifest["records"].items():
                    taken[student] = (record, Path(manifest["folder"]) / "course")

        with fmt.gradebook(course) as gradebook:
            for entry in entries:
                gradebook.update_or_create_student(entry.student)

        judged_why = {
            e.student: batch.regrading or _why_judged(e, records, options.force) for e in todo
        }
        started = time.monotonic()
        if merge:
            lacking = [e.student for e in todo if e.student not in taken]
            if lacking:
                raise GradingError(
                    f"--merge: no shard judged {', '.join(lacking[:5])}"
                    f"{', ...' if len(lacking) > 5 else ''}, which this run must record (were the"
                    " shards run with the same --force and state.json as this merge?)"
                )
            judged = ((e, taken[e.student][0]) for e in todo)
        else:
            judged = judge_all(todo, assignment, course, options)
        # forked before the workers: records as they finish, each within its own deadline
        recorder = Recorder(course, assignment, limits.record_timeout, limits.grader_memory_mb)
        with tqdm(total=len(todo), desc="grading", unit="nb", disable=quiet or None) as bar:
            for entry, record in judged:
                if merge:
                    cluster.take_judged(taken[entry.student][1], course, entry.student, assignment)
                record["recorded"] = False
                records[entry.student] = record
                write_atomically(state_file, json.dumps(state))
                gradable = bool(record.get("gradable"))
                recorder.record(entry.student, gradable, keep="grader error" in record["flags"])
                bar.update(1)
        judge_seconds = time.monotonic() - started
        if merge:  # the shards judged in parallel: the longest of them is the judging's time
            judge_seconds = max(manifest["judge_seconds"] for manifest in manifests)
        record_seconds = _finish_recording(course, assignment, recorder, records)
        write_atomically(state_file, json.dumps(state))
        late = None
        if course_policy is not None:
            origins = {e.student: e.origin for e in entries}
            late = LateColumns(course_policy, assignment, path, origins, times)
        rows = export_csv(course, assignment, specs, records, out / "grades.csv", late)
        regraded = log_regrades(
            state, rows, list(part_points(specs)), records, judged_why, late, out
        )
        scores = {row.student: row.final for row in rows}
        exports.write_canvas(out / "canvas.csv", assignment, scores, roster)
        exports.write_moodle(out / "moodle.csv", assignment, scores, roster)
        released = None
        if options.release_feedback:
            pages = {row.student: [Path(p) for p in row.feedback.split(";") if p] for row in rows}
            origins = {e.student: e.origin for e in entries}
            try:
                released = feedback.release(path, assignment, origins, pages)
            except feedback.FeedbackError as error:
                raise GradingError(f"{error} (the grades are written: {out})") from error
        manual = {
            part_column(specs, name, g)
            for name, spec in specs.items()
            for g in spec.order
            if _graded(spec, g) and spec.kinds.get(g) == "manual"
        }
        students = [r.student for r in rows]
        try:
            similar = compare_solutions(
                course, assignment, specs, students, similar_to, options.similarity_threshold
            )
            similarity.write_json(similar, out / "similarity.json")
        except Exception as error:  # noqa: BLE001 - the grades stand; the report says what failed
            similar = f"{type(error).__name__}: {error}"[:500]
            (out / "similarity.json").unlink(
                missing_ok=True
            )  # no earlier run's pairs as this one's
            print(f"similar solutions not compared: {similar}", file=sys.stderr)
        title = f"{assignment}: grading report"
        write_report(
            [row.csv() for row in rows],
            part_points(specs),
            manual,
            records,
            out / "report.html",
            title,
            similar,
            policy.COLUMNS if late else None,
        )
        state["sandbox"] = mode
        state["memory"] = memory_cap(limits) if mode == ROOT else memory_cap_rootless(limits)
        state["cpu"] = cpu_cap(limits) if mode == ROOT else CPU_CAP_ROOTLESS
        state["timing"] = {
            "judged": len(todo),
            "judge_seconds": judge_seconds,
            "record_seconds": record_seconds,
        }
        write_atomically(state_file, json.dumps(state))
        if not quiet:
            print_summary(rows, out, len(todo), judge_seconds + record_seconds)
            if collection.skipped:
                names = ", ".join(collection.skipped[:5]) + (
                    ", ..." if len(collection.skipped) > 5 else ""
                )
                print(f"not notebooks or hidden, not graded: {len(collection.skipped)} ({names})")
            print(f"inputs: {out / 'inputs.csv'} (every file of the input, and what became of it)")
            print_policy_summary(rows, late is not None, regraded, out)
            print(f"exports: {out / 'canvas.csv'}, {out / 'moodle.csv'} (final scores)")
            for line in feedback.summary(released) if released is not None else []:
                print(line)
            for said in exports.empty_columns(roster_fields, roster, scores):
                print(f"  {said}")
            if not isinstance(similar, str):
                print(
                    f"similar solutions: {len(similar.pairs)} pair(s) at or above"
                    f" {options.similarity_threshold:g} ({out / 'similarity.json'}, and the report)"
                )
            print(f"sandbox: {SANDBOX_WORDS[mode]}")
            print(f"memory: {state['memory']}")
            print(f"cpu: {state['cpu']}")
        return exit_code(rows)


def _read_state(state_file: Path, assignment: str, limits: Limits) -> tuple[dict, str]:
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
    return state, regrading


def _todo(entries: list[Entry], records: dict[str, dict], force: bool) -> list[Entry]:
    """The entries to judge: changed, never recorded, or all of them with ``force``."""
    return [
        e
        for e in entries
        if force
        or records.get(e.student, {}).get("digest") != e.digest
        or not records[e.student].get("recorded")
    ]


def _inputs_digest(entries: list[Entry]) -> str:
    return cluster.inputs_digest({e.student: e.digest for e in entries})


def grade_shard(assignment: str, path: Path, out: Path, options: GradingOptions) -> int:
    """Judge shard ``options.shard`` = (I, N) of the submissions in ``path`` into
    ``SHARDS/I-of-N`` (its own course folder and ``shard.json``); nothing is recorded. Reads
    ``out/state.json``, if there is one, only to skip what the last merged run recorded
    unchanged."""
    assert options.shard is not None
    index, count = options.shard
    mode = check_sandbox_available()
    folder = cluster.shard_folder(options.shards_folder(out), index, count)
    (folder / cluster.MANIFEST).unlink(missing_ok=True)  # an earlier run's is not this one's
    batch = open_batch(assignment, path, folder, out, options.force, options.limits)
    entries, state = batch.collection.entries, batch.state
    mine = set(cluster.shard_of([e.student for e in entries], index, count))
    todo = [e for e in batch.todo if e.student in mine]
    started = time.monotonic()
    records = {}
    with tqdm(total=len(todo), desc=f"shard {index}/{count}", unit="nb",
              disable=options.quiet or None) as bar:  # fmt: skip
        for entry, record in judge_all(todo, assignment, batch.course, options):
            records[entry.student] = record
            bar.update(1)
    seconds = time.monotonic() - started
    manifest = {
        "assignment": assignment,
        "shard": [index, count],
        "fingerprint": state["fingerprint"],
        "inputs": _inputs_digest(entries),
        "students": sorted(mine),
        "records": records,
        "sandbox": mode,
        "judge_seconds": seconds,
    }
    target = cluster.write_manifest(folder, manifest)
    if not options.quiet:
        print(
            f"shard {index}/{count}: judged {len(todo)} of its {len(mine)} submission(s)"
            f" ({len(entries)} in all) in {seconds:.0f} s; {target}"
        )
        print(f"sandbox: {SANDBOX_WORDS[mode]}")
        print("when every shard is done: the same command with --merge instead of --shard")
    return EXIT_OK


def read_policy(
    assignment: str, policy_file: Path | None, submitted_at: Path | None
) -> tuple[policy.Policy | None, dict[str, policy.SubmissionTime]]:
    """The course policy and the ``--submitted-at`` times (by the CSV's student names), read and
    checked before anything is graded."""
    if policy_file is None:
        if submitted_at is not None:
            raise GradingError("--submitted-at needs --policy: the times only serve the policy")
        return None, {}
    course_policy = policy.load(policy_file)
    if assignment not in course_policy.due:
        raise policy.PolicyError(
            f"--policy {policy_file}: assignments.{assignment}.due: missing (no due date for"
            " the assignment being graded)"
        )
    return course_policy, policy.read_submitted_at(submitted_at) if submitted_at else {}


def _why_judged(entry: Entry, records: dict[str, dict], force: bool) -> str:
    """Why ``entry`` is judged in this run, in words, for the regrade log."""
    old = records.get(entry.student)
    if old is None:
        return "first grading"
    if old.get("digest") != entry.digest:
        return "submission changed"
    return "judged again (--force)" if force else "judged again (not recorded before)"


class LateColumns:
    """The policy's columns of a grades.csv row (:data:`policy.COLUMNS`), from the submission
    times: ``--submitted-at`` first, then what the input gives (:func:`policy.input_times`).
    ``terms`` keeps, per student, what decided its final score (for the regrade log)."""

    UNKNOWN = policy.SubmissionTime(
        None,
        "not in --submitted-at, no nbgrader timestamp.txt, no zip member time;"
        " a file's modification time is not trusted",
    )

    def __init__(self, course_policy, assignment, path, origins, submitted_at) -> None:
        self.policy, self.assignment, self.terms = course_policy, assignment, {}
        self.times = {student_id(name): when for name, when in submitted_at.items()}
        zone = course_policy.zip_time_zone
        words = f"read in zip_time_zone {zone}"
        if zone is None:
            zone = course_policy.due[assignment].tzinfo
            words = f"read in the due date's zone {zone} (zip_time_zone is not set)"
        rest = {s: o for s, o in origins.items() if s not in self.times}
        self.times |= policy.input_times(path, rest, zone, words)

    def __call__(self, row: GradeRow) -> dict[str, object]:
        student = row.student
        when = self.times.get(student, self.UNKNOWN)
        outcome = policy.apply(self.policy, self.assignment, student, row.total, when)
        self.terms[student] = outcome.terms
        return outcome.columns(self.policy.due_for(self.assignment, student)[0], when)


def log_regrades(state, rows, parts, records, judged_why, late, out: Path) -> int:
    """Append to ``OUT/regrades.csv`` every score that changed since the last run; keep this
    run's scores in ``state`` for the next. The number of rows appended."""
    current = {
        row.student: regrades.kept(
            row.csv(),
            parts,
            records.get(row.student, {}).get("digest", ""),
            late.terms.get(row.student) if late else None,
        )
        for row in rows
    }
    previous = state.get("scores", {})
    changed = regrades.changes(previous, current, judged_why)
    regrades.append(changed, out / "regrades.csv")
    state["scores"] = previous | current
    return len(changed)


def compare_solutions(
    course: Path,
    assignment: str,
    specs: dict[str, judge.NotebookSpec],
    students: list[str],
    similar_to: Path | None,
    threshold: float,
) -> similarity.Result:
    """The similarity of the graded notebooks' solution code (and of the past solutions in
    ``similar_to``): reads the canonical notebooks the judge wrote; runs nothing."""
    parts = similarity.parts_of({name: spec.release for name, spec in specs.items()})
    sources, skipped = similarity.graded_solutions(course, assignment, students, parts)
    past: dict[str, dict[str, str]] = {}
    if similar_to is not None:
        past, more = similarity.past_solutions(similar_to, parts)
        skipped += more
    result = similarity.compare(parts, sources, past, threshold, skipped)
    result.past = str(similar_to or "")
    return result


def _finish_recording(
    course: Path, assignment: str, recorder: Recorder, records: dict[str, dict]
) -> float:
    """Wait for the recorder (nbgrader's autograde and feedback per submission); mark each
    record recorded or not. Seconds spent waiting after the last submission was judged."""
    from nbgrader.api import MissingEntry

    started = time.monotonic()
    results = recorder.finish()
    with fmt.gradebook(course) as gradebook:
        for student, result in results.items():
            record = records[student]
            if not record.get("gradable"):
                # nothing to record: its row says why; a grader error is judged again next run
                record["recorded"] = "grader error" not in record["flags"]
                continue
            try:
                gradebook.find_submission(assignment, student)
                ok = result["recorded"] and (course / "autograded" / student / assignment).is_dir()
            except MissingEntry:
                ok = False
            if not ok:
                record["flags"].insert(0, result["status"] or "grader error")
                if result["status"]:
                    record["messages"].append(result["log"])
                else:
                    record["messages"].append(
                        "nbgrader could not record this submission: " + _tail(result["log"])
                    )
            record["recorded"] = ok
    return time.monotonic() - started


def _tail(log: str) -> str:
    lines = [line for line in log.splitlines() if "ERROR" in line or "Error" in line]
    return " | ".join(lines[-3:])[:400]


# -- results ----------------------------------------------------------------------------------------


@dataclass
class GradeRow:
    """One submission's row of ``grades.csv``. One rule names its columns, in field order: a
    field's column is its name, except ``late`` (the policy's :data:`policy.COLUMNS`, only under
    a policy) and ``parts`` (one column per graded cell, :func:`part_column`)."""

    student: str
    file: str = ""
    status: str = ""
    total: float | str = ""  # "" when nothing was recorded
    max: float = 0.0
    late: dict[str, object] | None = None  # policy.COLUMNS -> value, under a policy
    parts: dict[str, float | str] = field(default_factory=dict)  # part column -> score
    flags: str = ""
    message: str = ""
    feedback: str = ""  # the feedback files, ";"-separated

    @staticmethod
    def columns(parts: list[str], late: bool) -> list[str]:
        """The header of grades.csv: the columns of a row with these ``parts``."""
        expanded = {"late": policy.COLUMNS if late else [], "parts": parts}
        return [c for f in fields(GradeRow) for c in expanded.get(f.name, [f.name])]

    def csv(self) -> dict[str, object]:
        """The row as grades.csv holds it: column -> value."""
        expanded = {"late": self.late or {}, "parts": self.parts}
        row: dict[str, object] = {}
        for f in fields(self):
            row |= expanded.get(f.name, {f.name: getattr(self, f.name)})
        return row

    @property
    def final(self) -> float | str:
        """The score the exports carry: the policy's final total, else the total."""
        return self.total if self.late is None else self.late["final total"]


def part_column(specs: dict[str, judge.NotebookSpec], notebook: str, grade_id: str) -> str:
    """A graded cell's column: its grade id, as ``notebook:grade id`` when there are several
    notebooks."""
    return grade_id if len(specs) == 1 else f"{notebook}:{grade_id}"


def export_csv(course, assignment, specs, records, target: Path, late=None) -> list[GradeRow]:
    """One row per submission: per-part scores, total, status, message, feedback file; and,
    with ``late`` (:class:`LateColumns`), what the course policy made of the total."""
    from nbgrader.api import MissingEntry

    part_columns = list(part_points(specs))
    rows = []
    with fmt.gradebook(course) as gradebook:
        maximum = sum(part_points(specs).values())
        for student in sorted(records):
            record = records[student]
            flags = list(record["flags"])
            row = GradeRow(student, file=record.get("origin", ""), max=maximum)
            scores: dict[str, float] = {}
            if record.get("gradable") and record.get("recorded"):
                try:
                    submission = gradebook.find_submission(assignment, student)
                except MissingEntry:
                    submission = None
                if submission is not None:
                    for notebook in submission.notebooks:
                        for grade in notebook.grades:
                            scores[part_column(specs, notebook.name, grade.name)] = float(
                                grade.score
                            )
                            if grade.needs_manual_grade and "needs manual grading" not in flags:
                                flags.append("needs manual grading")
                            passed = record["tests"].get(grade.name)
                            if passed is not None and passed != (grade.score == grade.max_score):
                                flags.insert(0, "grader error")
                                record["messages"].append(
                                    f"{grade.name}: gradebook score disagrees with the judge"
                                )
                    row.total = round(sum(scores.values()), 4)
            row.parts = {column: scores.get(column, "") for column in part_columns}
            row.status = next((s for s in judge.STATUSES if s in flags), "graded")
            row.flags = "; ".join(f for f in judge.STATUSES if f in flags)
            row.message = " | ".join(dict.fromkeys(record["messages"]))[:1000]
            feedback = sorted((course / "feedback" / student / assignment).glob("*.html"))
            row.feedback = ";".join(str(p) for p in feedback)
            if late is not None:
                row.late = late(row)
            rows.append(row)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", newline="", encoding="utf-8") as handle:
        columns = GradeRow.columns(part_columns, late is not None)
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(row.csv() for row in rows)
    return rows


def part_points(specs: dict[str, judge.NotebookSpec]) -> dict[str, float]:
    """CSV column of every graded cell -> its points, in notebook order."""
    return {
        part_column(specs, name, g): fmt.points(spec.source_cells[g])
        for name, spec in specs.items()
        for g in spec.order
        if _graded(spec, g)
    }


def _graded(spec: judge.NotebookSpec, grade_id: str) -> bool:
    return bool(fmt.nbgrader_meta(spec.source_cells[grade_id]).get("grade"))


def exit_code(rows: list[GradeRow]) -> int:
    statuses = {row.status for row in rows}
    if statuses <= {"graded"}:
        return EXIT_OK
    if statuses <= {"graded", "needs manual grading"}:
        return EXIT_MANUAL
    return EXIT_LOOK


def print_summary(rows: list[GradeRow], out: Path, judged: int, seconds: float) -> None:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    totals = [row.total for row in rows if row.total != ""]
    print()
    print(f"{'status':<32}{'submissions':>12}")
    for status in judge.STATUSES:
        if status in counts:
            print(f"{status:<32}{counts[status]:>12}")
    print(f"{'total':<32}{len(rows):>12}")
    if totals:
        maximum = rows[0].max
        print(f"mean score {sum(totals) / len(totals):.2f} / {maximum:g} over {len(totals)} graded")
    print(f"judged {judged} submission(s) in {seconds:.0f} s; the rest were unchanged")
    look = [r for r in rows if r.status not in ("graded", "needs manual grading")]
    if look:
        print(f"\n{len(look)} submission(s) need a look:")
        for row in look[:30]:
            print(f"  {row.student:<20} {row.status:<30} {row.message[:100]}")
    print(f"\ngrades: {out / 'grades.csv'}")
    print(f"report: {out / 'report.html'}")
    print(f"feedback: {out / 'course' / 'feedback'}/<student>/")
    print(
        f"manual grading: run `jupyter lab` in {out / 'course'} and open /formgrader"
        " (nbgrader's formgrader is a JupyterLab extension)"
    )


def print_policy_summary(rows: list[GradeRow], applied: bool, regraded: int, out: Path) -> None:
    """What the policy did to the batch, and the regrade log's news."""
    if applied:
        late = {row.student: row.late or {} for row in rows}
        penalised = [s for s, x in late.items() if x["penalty"] not in ("", 0, 0.0)]
        spent = sum(x["late days used"] for x in late.values() if x["late days used"] != "")
        print(
            f"policy: {len(penalised)} submission(s) penalised, {spent} late day(s) spent"
            " (grades.csv: 'final total', and why in 'policy')"
        )
        unknown = [s for s, x in late.items() if x["submitted at"] == ""]
        if unknown:
            names = ", ".join(unknown[:5]) + (", ..." if len(unknown) > 5 else "")
            print(f"policy: submission time unknown, raw score kept: {len(unknown)} ({names})")
    if regraded:
        print(f"regrades: {regraded} score(s) changed since the last run ({out / 'regrades.csv'})")
    else:
        print("regrades: no recorded score changed")


def command_line(assignment: str, path: Path, out: Path, *options: str) -> list[str]:
    """The command that grades the submissions in ``path`` into ``out``; run it in the repository."""
    return [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        assignment,
        str(path),
        "--out",
        str(out),
    ] + [*options]


# the options that write a cluster's jobs: every shard and the merge run the command without them
JOB_OPTIONS = (
    "--slurm",
    "--kubernetes",
    "--kubernetes-claim",
    "--kubernetes-mount",
    "--kubernetes-image",
)


def job_command(argv: list[str], python: str) -> list[str]:
    """The grade command each shard and the merge of a cluster run: ``argv`` (this command's
    arguments, ``grade`` first) without :data:`JOB_OPTIONS`, run by ``python``."""
    return [python, "-m", "autograder", "grade", *cluster.grading_argv(argv[1:], JOB_OPTIONS)]


def _check_jobs(args: argparse.Namespace, option: str, count: int, what: str) -> None:
    if count < 1:
        raise cluster.ShardError(f"{option} {count}: the number of shards must be at least 1")
    if args.shard is not None or args.merge:
        raise GradingError(
            f"{option} writes the {what} that run --shard and --merge: not with them"
        )


def write_slurm(args: argparse.Namespace, argv: list[str]) -> int:
    """``--slurm N``: write the Slurm scripts that grade in N shards and merge; grade nothing."""
    _check_jobs(args, "--slurm", args.slurm, "scripts")
    out = args.out.resolve()
    jobs = cluster.Jobs(
        job_command(argv, sys.executable),
        args.assignment,
        args.slurm,
        max(1, args.workers),
        Path.cwd(),
        fmt.REPO,
    )
    written = cluster.slurm_scripts(out / "slurm", jobs)
    print(f"Slurm: {len(written)} files in {out / 'slurm'}; submit with")
    print(f"  sh {written[-1]}")
    print(
        f"({args.slurm} array tasks of --shard I/{args.slurm}, then --merge once all have ended;"
        " the nodes need this checkout, its venv and the folders at the same paths, and the"
        " sandbox: root, or user namespaces for an ordinary user)"
    )
    return EXIT_OK


def write_kubernetes(args: argparse.Namespace, argv: list[str]) -> int:
    """``--kubernetes N``: write the Kubernetes Jobs that grade in N shards and merge; grade
    nothing. Every folder the command names must lie in the claim's mount."""
    _check_jobs(args, "--kubernetes", args.kubernetes, "Jobs")
    workdir = Path.cwd()
    mount = (args.kubernetes_mount or workdir).resolve()
    claim = args.kubernetes_claim or cluster.KUBERNETES_CLAIM
    image = args.kubernetes_image or cluster.KUBERNETES_IMAGE
    named = [
        ("the current directory", workdir),
        ("the submissions", args.path),
        ("--out", args.out),
        ("--shards", args.shards),
        ("--similar-to", args.similar_to),
        ("--policy", args.policy),
        ("--submitted-at", args.submitted_at),
        ("--roster", args.roster),
    ]
    for what, path in named:
        if path is not None and not path.resolve().is_relative_to(mount):
            raise GradingError(
                f"--kubernetes: {what} ({path}) is not in {mount}, where the pods mount the claim"
                f" {claim!r}: run the command from inside the claim's folder, with every folder in"
                " it, and give --kubernetes-mount the folder where the claim is mounted here"
            )
    out = args.out.resolve()
    checkout = fmt.REPO
    jobs = cluster.Jobs(
        job_command(argv, "python"),
        args.assignment,
        args.kubernetes,
        max(1, args.workers),
        workdir,
        checkout,
    )
    written = cluster.kubernetes_jobs(out / "kubernetes", jobs, claim, mount, image)
    print(f"Kubernetes: {len(written)} files in {out / 'kubernetes'}; run with")
    print(f"  sh {written[-1]}    (kubectl options after it, e.g. --namespace NAME)")
    print(
        f"(an Indexed Job of {args.kubernetes} pods, --shard I/{args.kubernetes}, then the merge"
        f" Job once it has ended; the claim {claim!r} mounted at {mount}; the pods need user"
        " namespaces: hostUsers false, procMount Unmasked, no seccomp or AppArmor profile, the"
        " namespace's Pod Security level 'privileged'; the TAs' guide, Kubernetes)"
    )
    if not checkout.is_relative_to(mount):
        print(f"note: the pods import autograder from {checkout}: the image must hold it there")
    if image == cluster.KUBERNETES_IMAGE:
        print(
            f"note: the image is the placeholder {image}: give --kubernetes-image with an image"
            " of this course's environment (python, its packages, util-linux)"
        )
    return EXIT_OK


def command_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m autograder``."""
    parser = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Grade student notebooks with nbgrader, in parallel, safely.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("grade", help="grade a folder or zip of submissions")
    cmd.add_argument("assignment", help="assignment id, e.g. a1_rnn_bptt")
    cmd.add_argument("path", type=Path, help="folder or .zip of notebooks named by student id")
    cmd.add_argument("--workers", type=int, default=max(1, os.cpu_count() or 2))
    cmd.add_argument("--out", type=Path, default=Path("grading"), help="output folder")
    cmd.add_argument("--timeout", type=float, default=30.0, help="seconds per cell (30)")
    cmd.add_argument("--memory-mb", type=int, default=2048, help="address space per kernel")
    cmd.add_argument(
        "--kernel-memory-mb", type=int, default=4096, help="memory of a whole kernel (4096)"
    )
    cmd.add_argument(
        "--kernel-cpus",
        type=_positive_float,
        default=1.0,
        help="processor cores a whole kernel may use (1; root mode, cgroups)",
    )
    cmd.add_argument("--max-processes", type=int, default=64, help="processes per kernel")
    cmd.add_argument(
        "--max-reply-mb", type=int, default=128, help="largest message read from a kernel (128)"
    )
    cmd.add_argument(
        "--deadline", type=float, default=600.0, help="seconds for a whole submission (600)"
    )
    cmd.add_argument("--max-files", type=int, default=2000, help="files a kernel may create (2000)")
    cmd.add_argument(
        "--record-timeout",
        type=float,
        default=120.0,
        help="seconds to record one submission and render its feedback (120)",
    )
    cmd.add_argument(
        "--grader-memory-mb",
        type=int,
        default=4096,
        help="memory each grader process may allocate to read a submission (4096)",
    )
    cmd.add_argument(
        "--similar-to",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="past or public solutions (.ipynb, .py) to compare every submission with",
    )
    cmd.add_argument(
        "--similarity-threshold",
        type=float,
        default=similarity.THRESHOLD,
        help=f"score from which two solutions are listed as similar ({similarity.THRESHOLD:g})",
    )
    cmd.add_argument(
        "--policy",
        type=Path,
        default=None,
        metavar="FILE",
        help="course policy (TOML): due dates, extensions, late days and the late penalty;"
        " applied to each total: grades.csv gains the columns 'raw total', 'late by',"
        " 'late days used', 'penalty', 'final total' and 'policy' (why they differ);"
        " the rules are in the TAs' guide and autograder/platform/policy.py",
    )
    cmd.add_argument(
        "--submitted-at",
        type=Path,
        default=None,
        metavar="FILE",
        help="CSV with the columns student,timestamp (ISO 8601 with a time zone), as a learning"
        " platform exports: when each student handed in (needs --policy; without a row, the"
        " time is nbgrader's timestamp.txt or the zip member's, else unknown)",
    )
    cmd.add_argument(
        "--roster",
        type=Path,
        default=None,
        metavar="FILE",
        help="CSV with a column 'student' (the id in grades.csv) and any of "
        + ", ".join(f for f in exports.ROSTER_FIELDS if f != "student")
        + ": the names and ids of canvas.csv and moodle.csv",
    )
    cmd.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="judge only shard I of N (counted from 0: 0/N ... N-1/N; every N-th submission by"
        " student id) into SHARDS/I-of-N, without recording; then run --merge once",
    )
    cmd.add_argument(
        "--release-feedback",
        action="store_true",
        help="PATH is nbgrader collect's COURSE/submitted: after grading, put each student's"
        " feedback in COURSE/feedback and run nbgrader release_feedback there, so that students"
        " fetch it in the Assignment List",
    )
    cmd.add_argument(
        "--merge",
        action="store_true",
        help="judge nothing: record every shard's results in the gradebook and write grades.csv,"
        " the report and the exports as one run would (all N shards must be done)",
    )
    cmd.add_argument(
        "--shards",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="where --shard writes and --merge reads the shards (OUT/shards)",
    )
    cmd.add_argument(
        "--slurm",
        type=int,
        default=None,
        metavar="N",
        help="grade nothing: write OUT/slurm/ (shards.sbatch, a job array of N shards with this"
        " command's options; merge.sbatch; submit.sh, which submits both) and say how to run it",
    )
    cmd.add_argument(
        "--kubernetes",
        type=int,
        default=None,
        metavar="N",
        help="grade nothing: write OUT/kubernetes/ (shards.yaml, an Indexed Job of N pods, each"
        " a shard with this command's options; merge.yaml, the merge Job; submit.sh, which"
        " applies the first, waits until it has ended, then applies the second)",
    )
    cmd.add_argument(
        "--kubernetes-claim",
        default=None,
        metavar="NAME",
        help=f"with --kubernetes: the PersistentVolumeClaim that holds the folders"
        f" ({cluster.KUBERNETES_CLAIM})",
    )
    cmd.add_argument(
        "--kubernetes-mount",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="with --kubernetes: where the claim is mounted here and in the pods; the current"
        " directory and every folder of the command lie in it (the current directory)",
    )
    cmd.add_argument(
        "--kubernetes-image",
        default=None,
        metavar="IMAGE",
        help="with --kubernetes: the pods' container image, the course's environment"
        f" (a placeholder: {cluster.KUBERNETES_IMAGE})",
    )
    cmd.add_argument("--force", action="store_true", help="judge unchanged submissions again")
    cmd.add_argument("--quiet", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = command_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        return EXIT_FAILED if stop.code else EXIT_OK
    try:
        given = sys.argv[1:] if argv is None else argv
        kubernetes_only = [
            option
            for option, value in (
                ("--kubernetes-claim", args.kubernetes_claim),
                ("--kubernetes-mount", args.kubernetes_mount),
                ("--kubernetes-image", args.kubernetes_image),
            )
            if value is not None
        ]
        if kubernetes_only and args.kubernetes is None:
            raise GradingError(f"{', '.join(kubernetes_only)}: only with --kubernetes N")
        if args.slurm is not None and args.kubernetes is not None:
            raise GradingError("--slurm and --kubernetes: one or the other")
        if args.slurm is not None:
            return write_slurm(args, given)
        if args.kubernetes is not None:
            return write_kubernetes(args, given)
        return grade(args.assignment, args.path.resolve(), args.out.resolve(), options_from(args))
    except OSError as error:
        if error.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        print(
            f"error: no space left on the device of {error.filename or args.out}: what was "
            f"graded before is kept in {args.out}; free some space and run the same command "
            "again, which goes on from there",
            file=sys.stderr,
        )
        return EXIT_NO_SPACE
    except (
        GradingError,
        cluster.ShardError,
        SandboxUnavailable,
        similarity.SimilarityError,
        policy.PolicyError,
        exports.RosterError,
    ) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
