"""Everything this repository knows about nbgrader's format, in one place.

- **cells**: a cell's nbgrader metadata (:func:`nbgrader_meta`) and its role
  (:func:`cell_kind`: solution, test, manual answer, task, locked, free);
- **markers**: the ``### BEGIN SOLUTION`` / ``### BEGIN HIDDEN TESTS`` blocks of a source cell
  and what nbgrader's release makes of them;
- **sources**: an assignment is ``solutions/<assignment>/*.py`` (jupytext ``py:percent``),
  converted to notebooks with stable cell ids (:func:`read_source`);
- **course directories**: :func:`make_course_dir` creates one with the shared configuration
  ``autograder/nbgrader_config.py``; :func:`nbgrader` runs the nbgrader command line in it;
  :func:`release`, :func:`submit`, :func:`autograde` and :func:`read_grades` drive it.

The build (``tools/build.py``), the TA grading command (``autograder/platform/grade.py``), the
judge and the tests all use these functions; none of them parses nbgrader metadata or markers
itself.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
CONFIG = REPO / "autograder" / "nbgrader_config.py"

# What nbgrader's release puts where a solution block was (see c.ClearSolutions.code_stub).
CODE_STUB = ("# YOUR CODE HERE", "raise NotImplementedError()")
# The metadata keys that decide how a cell is graded; a student may not change them.
GRADING_KEYS = ("grade", "solution", "locked", "task", "points", "grade_id")


class NotebookBuildError(RuntimeError):
    """A notebook could not be read, converted or executed; the message says which and why."""


class NbgraderError(RuntimeError):
    """An nbgrader command failed; the message carries its output, ``log`` all of it."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(message)
        self.log = log


# -- cells -----------------------------------------------------------------------------------------


def nbgrader_meta(cell: Any) -> dict[str, Any]:
    """The cell's ``metadata.nbgrader`` dict; ``{}`` when absent or malformed (student files)."""
    meta = cell.get("metadata", {}) if isinstance(cell, dict) else {}
    meta = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
    return meta if isinstance(meta, dict) else {}


def grade_id(cell: Any) -> str | None:
    """The cell's nbgrader ``grade_id``, or None for a cell nbgrader does not track."""
    value = nbgrader_meta(cell).get("grade_id")
    return value if isinstance(value, str) and value else None


def cell_kind(cell: Any) -> str:
    """solution (code to write) | test (graded code) | manual (written answer) | task | locked
    | free (a cell nbgrader does not track)."""
    meta = nbgrader_meta(cell)
    code = cell.get("cell_type") == "code"
    if meta.get("task"):
        return "task"
    if meta.get("solution"):
        return "solution" if code else "manual"
    if meta.get("grade") and code:
        return "test"
    if meta.get("locked") or meta.get("grade"):
        return "locked"
    return "free"


def is_solution_code(cell: Any) -> bool:
    return cell_kind(cell) == "solution"


def is_test_code(cell: Any) -> bool:
    return cell_kind(cell) == "test"


def points(cell: Any) -> float:
    return float(nbgrader_meta(cell).get("points", 0) or 0)


# -- markers -------------------------------------------------------------------------------------

_BLOCK = r"^([ \t]*)### BEGIN {0}[ \t]*\n(.*?)^[ \t]*### END {0}[ \t]*(?:\n|\Z)"
SOLUTION_BLOCK = re.compile(_BLOCK.format("SOLUTION"), re.M | re.S)
HIDDEN_TESTS_BLOCK = re.compile(_BLOCK.format("HIDDEN TESTS"), re.M | re.S)
SOLUTION_MARKER_LINE = re.compile(r"^[ \t]*### (?:BEGIN|END) SOLUTION[ \t]*(?:\n|\Z)", re.M)


def solution_blocks(source: str) -> list[str]:
    """The code between each pair of solution markers."""
    return [block.group(2) for block in SOLUTION_BLOCK.finditer(source)]


def hidden_test_blocks(source: str) -> list[str]:
    """The code between each pair of hidden-test markers (none in a visible test)."""
    return [block.group(2) for block in HIDDEN_TESTS_BLOCK.finditer(source)]


def has_hidden_tests(source: str) -> bool:
    return any(block.strip() for block in hidden_test_blocks(source))


def without_hidden_tests(source: str) -> str:
    """A test cell as released to students: the hidden blocks, markers included, removed."""
    return HIDDEN_TESTS_BLOCK.sub("", source)


def without_solutions(source: str) -> str:
    """What nbgrader's release makes of a solution cell: each block becomes the raising stub."""

    def stub(block: re.Match) -> str:
        indent = block.group(1)
        return "".join(f"{indent}{line}\n" for line in CODE_STUB)

    return SOLUTION_BLOCK.sub(stub, source)


def without_solution_markers(source: str) -> str:
    """The solution as a student would hand it in: the code kept, the marker lines dropped."""
    return SOLUTION_MARKER_LINE.sub("", source)


# -- sources -------------------------------------------------------------------------------------


def read_source(path: Path) -> nbformat.NotebookNode:
    """Read a jupytext ``py:percent`` source (or an .ipynb) as a notebook with stable cell ids.

    Cell ids are derived from the nbgrader ``grade_id`` when there is one and from the cell's
    position otherwise, so converting the same source twice gives byte-identical notebooks.
    """
    import jupytext

    if not path.is_file():
        raise NotebookBuildError(f"{path}: no such notebook source")
    try:
        notebook = jupytext.read(path)
    except Exception as error:  # jupytext raises many kinds; all mean "unreadable source"
        raise NotebookBuildError(f"{path}: cannot be read as a notebook ({error})") from error
    seen: set[str] = set()
    for index, cell in enumerate(notebook.cells):
        cell_id = grade_id(cell) or f"cell-{index:03d}"
        if cell_id in seen:
            raise NotebookBuildError(f"{path}: two cells share the id {cell_id!r}")
        seen.add(cell_id)
        cell["id"] = cell_id
    notebook.metadata.pop("jupytext", None)
    notebook.nbformat, notebook.nbformat_minor = 4, 5
    return notebook


def write_notebook(notebook: nbformat.NotebookNode, path: Path) -> None:
    """Validate and write ``notebook`` to ``path`` (creating its folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.validate(notebook)
    path.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")


def assignment_ids(solutions: Path = SOLUTIONS) -> list[str]:
    """The assignments, one per folder of ``solutions/`` that holds a notebook source."""
    return sorted(p.name for p in solutions.iterdir() if p.is_dir() and any(p.glob("*.py")))


def source_files(assignment: str, solutions: Path = SOLUTIONS) -> list[Path]:
    """The notebook sources of ``assignment``; FileNotFoundError names what is missing."""
    folder = solutions / assignment
    if not folder.is_dir():
        known = ", ".join(assignment_ids(solutions))
        raise FileNotFoundError(f"unknown assignment {assignment!r}; known: {known}")
    files = sorted(folder.glob("*.py"))
    if not files:
        raise FileNotFoundError(f"no notebook sources (*.py) in {folder}")
    return files


# -- course directories and the nbgrader command line ---------------------------------------------


def make_course_dir(
    root: Path,
    assignments: list[str] | None = None,
    *,
    extra_config: str = "",
    solutions: Path = SOLUTIONS,
) -> Path:
    """Create (or refresh) an nbgrader course directory at ``root`` with the given sources.

    Its ``nbgrader_config.py`` is the shared configuration, followed by ``extra_config``.
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / "nbgrader_config.py").write_text(CONFIG.read_text() + extra_config)
    for assignment in assignment_ids(solutions) if assignments is None else assignments:
        target = root / "source" / assignment
        if target.exists():
            shutil.rmtree(target)
        for source in source_files(assignment, solutions):
            write_notebook(read_source(source), target / f"{source.stem}.ipynb")
    return root


# The nbgrader processes this process is running now: a build worker whose build is gone ends
# them before it exits (tools.build.exit_with_parent); their kernels end with them.
RUNNING: set[subprocess.Popen] = set()


def nbgrader(
    course_dir: Path,
    *args: str,
    timeout: float | None = 1800,
    on_line: Callable[[str], None] | None = None,
) -> str:
    """Run ``nbgrader ARGS`` in ``course_dir``; return its log, or raise NbgraderError with it.

    The command is killed after ``timeout`` seconds (None: no limit). ``on_line`` sees each line of output as it comes (for progress bars). ``PYTHONPATH`` gains
    the repository, so hidden-test cells can import ``autograder``; ``PATH`` gains the venv,
    where nbgrader finds ``alembic``.
    """
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course_dir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    RUNNING.add(process)
    watchdog = threading.Timer(timeout, process.kill) if timeout is not None else None
    if watchdog is not None:
        watchdog.start()
    lines = []
    try:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            if on_line is not None:
                on_line(line)
        code = process.wait()
    finally:
        RUNNING.discard(process)
        if watchdog is not None:
            watchdog.cancel()
    log = "".join(lines)
    if code != 0:
        why = f"killed after {timeout:g} s" if code < 0 and timeout else f"exit {code}"
        raise NbgraderError(
            f"`nbgrader {' '.join(args)}` failed in {course_dir} ({why}):\n{log[-5000:]}", log
        )
    return log


def release(course_dir: Path, assignment: str) -> Path:
    """Generate the student version of ``assignment``; return its release folder."""
    nbgrader(course_dir, "generate_assignment", assignment, "--force")
    folder = course_dir / "release" / assignment
    for source in sorted((course_dir / "source" / assignment).glob("*.ipynb")):
        if not (folder / source.name).exists():
            raise NbgraderError(f"the release of {assignment} lacks {source.name}")
        mark_release(folder / source.name, assignment)
    return folder


def mark_release(path: Path, assignment: str) -> None:
    """Write into a released notebook which assignment it is and its graded cells, in order
    (``metadata.course``), so that ``python -m course handin`` can tell a student which
    notebook this is and which graded cells went missing. nbgrader keeps notebook metadata."""
    notebook = nbformat.read(path, as_version=4)
    notebook.metadata["course"] = {
        "assignment": assignment,
        "cells": [grade_id(c) for c in notebook.cells if grade_id(c)],
    }
    write_notebook(notebook, path)


def submit(course_dir: Path, assignment: str, student: str, notebooks: dict[str, Path]) -> Path:
    """Place a student's notebooks where ``nbgrader autograde`` looks for them."""
    folder = course_dir / "submitted" / student / assignment
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, path in notebooks.items():
        shutil.copyfile(path, folder / f"{name}.ipynb")
    return folder


def autograde(
    course_dir: Path,
    assignment: str,
    *students: str,
    force: bool = True,
    timeout: float | None = 1800,
    on_line: Callable[[str], None] | None = None,
) -> str:
    """Autograde the given students (all submitted ones when none are named); the log.

    ``force=False`` leaves submissions that already have an autograded copy alone.
    """
    options = [f"--student={s}" for s in students] + (["--force"] if force else [])
    # Kernels on Unix sockets in a private folder: TCP ports picked by two kernels starting at
    # once (a build runs units in parallel) can collide. ZeroMQ has no IPC on Windows.
    with tempfile.TemporaryDirectory(prefix="cknb") as sockets:
        if os.name != "nt":
            options += ["--KernelManager.transport=ipc", f"--KernelManager.ip={sockets}/kernel"]
        return nbgrader(
            course_dir, "autograde", assignment, *options, timeout=timeout, on_line=on_line
        )


@contextlib.contextmanager
def gradebook(course_dir: Path) -> Iterator[Any]:
    """The course directory's nbgrader gradebook (``gradebook.db``), open for the block."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as book:
        yield book


@dataclass(frozen=True)
class PartGrade:
    grade_id: str
    score: float
    max_score: float
    needs_manual_grade: bool
    auto: bool


@dataclass(frozen=True)
class Grades:
    student: str
    assignment: str
    parts: tuple[PartGrade, ...]

    @property
    def autograded_score(self) -> float:
        return sum(p.score for p in self.parts if p.auto)

    @property
    def autograded_max(self) -> float:
        return sum(p.max_score for p in self.parts if p.auto)

    def as_dict(self) -> dict:
        return {
            "student": self.student,
            "assignment": self.assignment,
            "autograded_score": self.autograded_score,
            "autograded_max": self.autograded_max,
            "parts": [p.__dict__ for p in self.parts],
        }


def read_grades(course_dir: Path, assignment: str, student: str) -> Grades:
    """Per-cell grades of one submission, from the course directory's gradebook."""
    from nbgrader.api import MissingEntry

    with gradebook(course_dir) as book:
        try:
            submission = book.find_submission(assignment, student)
        except MissingEntry as error:
            raise NbgraderError(
                f"no graded submission of {assignment} by {student} in {course_dir}"
            ) from error
        parts = [
            PartGrade(
                grade_id=grade.name,
                score=float(grade.score),
                max_score=float(grade.max_score),
                needs_manual_grade=bool(grade.needs_manual_grade),
                auto=grade.cell_type == "code",
            )
            for notebook in submission.notebooks
            for grade in notebook.grades
        ]
    return Grades(student, assignment, tuple(sorted(parts, key=lambda p: p.grade_id)))
