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
released nothing. Each released student's scores and autograded notebooks also go into the
course directory's gradebook (:func:`record_in_course`), the one Formgrader shows there.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from autograder import nbgrader_format as fmt
from autograder.platform import policy

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
    path: Path,
    assignment: str,
    origins: dict[str, str],
    pages: dict[str, list[Path]],
    graded: Path,
) -> tuple[list[Released], list[str]]:
    """:func:`stage` the pages, run ``nbgrader release_feedback ASSIGNMENT`` in the course,
    and :func:`record_in_course` the scores from ``graded`` (the command's ``OUT/course``).
    Returns what became of each student and the gradebook's line for the summary."""
    staged = stage(path, assignment, origins, pages)
    if not any(not r.why_not for r in staged):
        return staged, []
    try:
        fmt.nbgrader(path.parent, "release_feedback", assignment, timeout=600)
    except fmt.NbgraderError as error:
        raise FeedbackError(f"--release-feedback: {error}") from error
    owners = {PurePosixPath(origin).parts[0]: student for student, origin in origins.items()}
    return staged, record_in_course(path.parent, graded, assignment, staged, owners)


# `nbgrader list --inbound ASSIGNMENT` logs one line per submission in the exchange's inbound:
# "[ListApp | INFO] COURSE STUDENT ASSIGNMENT TIMESTAMP (FEEDBACK STATUS)" (its --json does
# nothing in 0.9).
_INBOUND_LINE = re.compile(
    r"^\[ListApp \| INFO\] (\S+) (\S+) (\S+) (.+?)"
    r"(?: \((?:no feedback available|feedback ready to be fetched|feedback already fetched)\))?"
    r"\s*$"
)


def inbound(course: Path, assignment: str) -> dict[str, list[str]]:
    """Hub user -> the timestamps of their submissions of ``assignment`` in the exchange of the
    course directory ``course`` (``nbgrader list --inbound``, with that course's settings),
    oldest first. nbgrader keeps every submission there; ``nbgrader collect`` copies the latest
    into ``submitted/``. Raises :class:`fmt.NbgraderError` if nbgrader cannot list them."""
    log = fmt.nbgrader(course, "list", "--inbound", assignment, timeout=120)
    found: dict[str, list[str]] = {}
    for line in log.splitlines():
        match = _INBOUND_LINE.match(line)
        if match and match[3] == assignment:
            found.setdefault(match[2], []).append(match[4])
    return {owner: sorted(times) for owner, times in found.items()}


def resubmission_note(graded: str, times: list[str], assignment: str) -> str:
    """What a row says of a student's submissions in the exchange (``times``, oldest first)
    when the one collected and graded has the timestamp ``graded``; "" when there is nothing
    to say (one submission, and it is the one graded)."""
    if not times or times == [graded]:
        return ""
    if graded == times[-1]:
        return f"submitted {len(times)} times through the exchange; the latest ({graded}) is graded"
    if graded not in times:
        return (
            f"the graded submission's timestamp ({graded}) is none of the {len(times)} in the"
            f" exchange (the latest: {times[-1]})"
        )
    later = len(times) - 1 - times.index(graded)
    return (
        f"graded the submission of {graded}; {later} later one(s) in the exchange were not"
        f" collected (the latest: {times[-1]}): run `nbgrader collect --update {assignment}`"
        " and grade again"
    )


def resubmissions(
    path: Path, assignment: str, origins: dict[str, str]
) -> tuple[dict[str, str], list[str]]:
    """For a ``submitted/`` folder that ``nbgrader collect`` filled (``path``): student (the
    CSV's name) -> what their row says of their submissions in the exchange (only where there
    is something to say), and lines for the summary. origins: student -> the graded notebook
    under ``path`` (``STUDENT/ASSIGNMENT/NAME.ipynb``). Nothing is asked of nbgrader unless a
    graded notebook came through the exchange (its ``timestamp.txt`` and
    ``submission_secret.txt`` beside it)."""
    graded: dict[str, tuple[str, str]] = {}  # student -> (hub user, timestamp collected)
    for student, origin in origins.items():
        parts = PurePosixPath(origin).parts
        if len(parts) != 3 or parts[1] != assignment:
            continue
        folder = path / parts[0] / assignment
        stamp = policy.read_small(folder / policy.TIMESTAMP_FILE)
        if stamp is None or not (folder / "submission_secret.txt").is_file():
            continue  # not through the exchange (or no timestamp nbgrader wrote)
        graded[student] = (parts[0], stamp.strip())
    if not graded:
        return {}, []
    try:
        times = inbound(path.parent, assignment)
    except fmt.NbgraderError as error:
        first = str(error).splitlines()[0]
        return {}, [
            f"the exchange's submissions could not be listed, so no row says how many: {first}"
        ]
    notes = {
        student: note
        for student, (owner, stamp) in sorted(graded.items())
        if (note := resubmission_note(stamp, times.get(owner, []), assignment))
    }
    if not notes:
        return {}, []
    lines = [f"submitted more than once through the exchange: {len(notes)} (their rows say which)"]
    return notes, lines + [f"  {student}: {note}" for student, note in notes.items()]


def summary(staged: list[Released]) -> list[str]:
    """Lines for the command's summary: how many were released, and each one that was not."""
    done = [r for r in staged if not r.why_not]
    lines = [f"feedback released through nbgrader's exchange: {len(done)} of {len(staged)}"]
    lines += [f"  not released, {r.student}: {r.why_not}" for r in staged if r.why_not]
    return lines


def record_in_course(
    course: Path, graded: Path, assignment: str, staged: list[Released], owners: dict[str, str]
) -> list[str]:
    """Copy each released student's automatic scores and comments from the grading command's
    gradebook (``graded``, its ``OUT/course``) into the nbgrader course directory ``course``
    whose ``submitted/`` was graded, with their autograded notebooks: the gradebook and the
    notebooks that Formgrader shows there, where manual grading goes on. A score or comment a
    grader gave there is kept when the assignment is graded again. owners: hub user -> the
    student's name in the command's gradebook. Returns lines for the summary."""
    from nbgrader.api import MissingEntry

    released = [r for r in staged if not r.why_not]
    if not released:
        return []
    lacking = [
        f"scores not recorded in {course / 'gradebook.db'}: it has no {assignment} (make the"
        " course directory with `python -m tools.hub course`, or run nbgrader"
        " generate_assignment there)"
    ]
    if not (course / "gradebook.db").is_file():
        return lacking  # nor a gradebook at all: none is made here
    with fmt.gradebook(graded) as source, fmt.gradebook(course) as target:
        try:
            target.find_assignment(assignment)
        except MissingEntry:
            return lacking
        for entry in released:
            owner, student = entry.student, owners[entry.student]
            done = source.find_submission(assignment, student)
            target.update_or_create_student(owner)
            try:  # graded before: a grader's manual scores and comments there are kept
                target.find_submission(assignment, owner).timestamp = done.timestamp
            except MissingEntry:
                target.add_submission(assignment, owner, timestamp=done.timestamp)
            for notebook in done.notebooks:
                for grade in notebook.grades:
                    mine = target.find_grade(grade.name, notebook.name, assignment, owner)
                    mine.auto_score = grade.auto_score
                    if mine.manual_score is None:
                        mine.needs_manual_grade = grade.needs_manual_grade
                for comment in notebook.comments:
                    mine = target.find_comment(comment.name, notebook.name, assignment, owner)
                    mine.auto_comment = comment.auto_comment
            target.db.commit()
            autograded = course / "autograded" / owner / assignment
            shutil.rmtree(autograded, ignore_errors=True)
            shutil.copytree(graded / "autograded" / student / assignment, autograded)
    return [f"scores recorded in {course / 'gradebook.db'} (Formgrader's): {len(released)}"]
