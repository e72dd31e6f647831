"""Collecting the input: a folder or zip of notebooks (or nbgrader's exchange) becomes one
:class:`Entry` per student, copied into the run's inbox, and every file or zip member gets a row
of ``inputs.csv`` that says what became of it."""

from __future__ import annotations

import csv
import functools
import hashlib
import os
import re
import shutil
import stat
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from autograder import nbgrader_format as fmt
from autograder.platform import feedback
from autograder.platform.errors import GradingError

MAX_FILE_BYTES = 50 * 1024 * 1024


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
