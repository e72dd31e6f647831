"""``--release-feedback``: each student's feedback back through nbgrader's exchange.

On a JupyterHub the TA runs ``nbgrader collect``, which fills the course directory's
``submitted/STUDENT/ASSIGNMENT/`` with each student's notebooks, the ``timestamp.txt`` of the
submission and its ``submission_secret.txt``; the grading command grades that folder as it is.
With ``--release-feedback`` it then puts every graded student's feedback (the HTML it
rendered, which shows no hidden test) where ``nbgrader generate_feedback`` would have put it,
``COURSE/feedback/STUDENT/ASSIGNMENT/NAME.html`` beside copies of those two files, and runs
``nbgrader release_feedback ASSIGNMENT`` in the course directory, with the course's own
nbgrader configuration (its course id and exchange). nbgrader files each page in the exchange
under a hash of the submission's secret, so the student who submitted, and only they, fetch it
in the Assignment List (or with ``nbgrader fetch_feedback``).

A submission that did not come through the exchange (no ``submission_secret.txt``), or that
has no feedback (a notebook that could not be graded), is named in the command's summary and
released nothing.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from autograder import nbgrader_format as fmt

EXCHANGE_FILES = ("timestamp.txt", "submission_secret.txt")  # what release_feedback reads


class FeedbackError(ValueError):
    """``--release-feedback`` cannot run with these inputs, or nbgrader refused."""


@dataclass(frozen=True)
class Released:
    """What became of one student's feedback."""

    student: str  # the folder name under submitted/: the student's id on the hub
    notebooks: tuple[str, ...]  # the pages released, by notebook name
    why_not: str = ""  # empty when released


def course_of(path: Path) -> Path:
    """The nbgrader course directory whose ``submitted/`` folder ``path`` is (what ``nbgrader
    collect`` fills); FeedbackError otherwise, before anything is graded."""
    if path.name != "submitted" or not path.is_dir() or path.is_symlink():
        raise FeedbackError(
            f"--release-feedback: {path} is not the submitted/ folder of an nbgrader course "
            "directory (what nbgrader collect fills): give that folder as the input"
        )
    return path.parent


def stage(
    path: Path, assignment: str, origins: dict[str, str], pages: dict[str, list[Path]]
) -> list[Released]:
    """Copy each student's feedback ``pages`` into ``COURSE/feedback/STUDENT/ASSIGNMENT/``.

    path: the ``submitted/`` folder graded (:func:`course_of` checked it); origins: student (the CSV's name) -> the graded
    notebook's path under ``path`` (``STUDENT/ASSIGNMENT/NAME.ipynb``); pages: student -> the
    feedback pages the grading rendered (none for a submission it could not grade).
    """
    course = path.parent
    staged = []
    for student, origin in sorted(origins.items()):
        parts = PurePosixPath(origin).parts
        if len(parts) != 3 or parts[1] != assignment:
            staged.append(Released(student, (), "not in nbgrader collect's STUDENT/ASSIGNMENT/"))
            continue
        owner = parts[0]
        submitted = path / owner / assignment
        missing = [name for name in EXCHANGE_FILES if not (submitted / name).is_file()]
        if missing:
            why = f"no {' or '.join(missing)}: not submitted through nbgrader's exchange"
            staged.append(Released(owner, (), why))
            continue
        found = pages.get(student, [])
        if not found:
            staged.append(Released(owner, (), "no feedback: the notebook was not graded"))
            continue
        target = course / "feedback" / owner / assignment
        shutil.rmtree(target, ignore_errors=True)  # an earlier release's pages of this student
        target.mkdir(parents=True)
        for name in EXCHANGE_FILES:
            shutil.copyfile(submitted / name, target / name)
        for page in found:
            shutil.copyfile(page, target / page.name)
        staged.append(Released(owner, tuple(sorted(page.stem for page in found))))
    return staged


def release(
    path: Path, assignment: str, origins: dict[str, str], pages: dict[str, list[Path]]
) -> list[Released]:
    """:func:`stage` the pages, then ``nbgrader release_feedback ASSIGNMENT`` in the course."""
    staged = stage(path, assignment, origins, pages)
    if any(not r.why_not for r in staged):
        try:
            fmt.nbgrader(path.parent, "release_feedback", assignment, timeout=600)
        except fmt.NbgraderError as error:
            raise FeedbackError(f"--release-feedback: {error}") from error
    return staged


def summary(staged: list[Released]) -> list[str]:
    """Lines for the command's summary: how many were released, and each one that was not."""
    done = [r for r in staged if not r.why_not]
    lines = [f"feedback released through nbgrader's exchange: {len(done)} of {len(staged)}"]
    lines += [f"  not released, {r.student}: {r.why_not}" for r in staged if r.why_not]
    return lines
