"""``OUT/canvas.csv`` and ``OUT/moodle.csv``: the final scores in the CSV formats that Canvas's
and Moodle's gradebooks import, with names and ids from a roster (``--roster FILE``).

Canvas (Gradebook, Import): the columns ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``,
``Section``, then one column per assignment; Canvas finds the student by one of the first
columns and the assignment by the column's name (``Name (canvas id)`` as its own export writes
it, or a new assignment of that name). Moodle (Grades, Import, CSV file): any columns; on import
an identifier column is mapped to a user field (``ID number`` to ``useridnumber``, or ``Email
address`` to ``useremail``) and each score column to a grade item.

The roster is a CSV with a ``student`` column (the id as in grades.csv: the file's or folder's
name) and any of :data:`ROSTER_FIELDS`; a field the roster lacks is an empty column, and the
command's summary names it.
"""

from __future__ import annotations

import csv
from pathlib import Path

# roster column -> what it holds; every one but ``student`` is optional
ROSTER_FIELDS = {
    "student": "the student's id in grades.csv (the file's or folder's name)",
    "name": "display name, e.g. 'Lovelace, Ada' (Canvas's Student column)",
    "first_name": "first name (Moodle)",
    "last_name": "last name (Moodle)",
    "email": "e-mail address as in Moodle (Moodle)",
    "id_number": "Moodle's ID number",
    "canvas_id": "Canvas's user id (Canvas's ID column)",
    "sis_user_id": "SIS User ID (Canvas)",
    "sis_login_id": "SIS Login ID (Canvas)",
    "section": "section name (Canvas)",
}
CANVAS = {  # Canvas column -> roster field
    "Student": "name",
    "ID": "canvas_id",
    "SIS User ID": "sis_user_id",
    "SIS Login ID": "sis_login_id",
    "Section": "section",
}
MOODLE = {  # Moodle column -> roster field; "Student" is the grading id, to map or ignore
    "Student": "student",
    "First name": "first_name",
    "Last name": "last_name",
    "ID number": "id_number",
    "Email address": "email",
}


class RosterError(ValueError):
    """A roster that cannot be read: says which file, and what is wrong."""


def load_roster(path: Path) -> tuple[dict[str, dict[str, str]], set[str]]:
    """Student id -> its roster fields, and the fields the roster has."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise RosterError(f"--roster {path}: cannot be read ({error})") from None
    reader = csv.DictReader(text.splitlines())
    header = [name.strip() for name in reader.fieldnames or []]
    if "student" not in header:
        raise RosterError(f"--roster {path}: no column 'student' in the header row")
    unknown = sorted(set(header) - set(ROSTER_FIELDS))
    if unknown:
        raise RosterError(
            f"--roster {path}: unknown column(s) {', '.join(unknown)}"
            f" (known: {', '.join(ROSTER_FIELDS)})"
        )
    roster: dict[str, dict[str, str]] = {}
    for line, row in enumerate(reader, start=2):
        fields = {key.strip(): (value or "").strip() for key, value in row.items() if key}
        student = fields["student"]
        if not student:
            raise RosterError(f"--roster {path}: line {line}: no student")
        if student in roster:
            raise RosterError(f"--roster {path}: line {line}: {student} is listed twice")
        roster[student] = fields
    return roster, set(header)


def _score(value: object) -> str:
    return "" if value == "" or value is None else f"{float(value):g}"


def _write(
    target: Path,
    columns: dict[str, str],
    column: str,
    scores: dict[str, object],
    roster: dict[str, dict[str, str]],
    fallback: str,
) -> None:
    """One row per student graded or on the roster: the roster's fields under ``columns``, the
    student's id under ``fallback`` where the roster leaves it empty, the score under ``column``."""
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([*columns, column])
        for student in sorted(set(scores) | set(roster)):
            known = roster.get(student, {})
            cells = [known.get(field, "") for field in columns.values()]
            at = list(columns).index(fallback)
            cells[at] = cells[at] or student
            writer.writerow([*cells, _score(scores.get(student, ""))])


def write_canvas(target: Path, column: str, scores: dict[str, object], roster) -> None:
    """canvas.csv: Student, ID, SIS User ID, SIS Login ID, Section, then ``column`` (the score)."""
    _write(target, CANVAS, column, scores, roster, "Student")


def write_moodle(target: Path, column: str, scores: dict[str, object], roster) -> None:
    """moodle.csv: Student, First name, Last name, ID number, Email address, then ``column``."""
    _write(target, MOODLE, column, scores, roster, "Student")


def empty_columns(fields: set[str], roster: dict[str, dict[str, str]], scores) -> list[str]:
    """What the summary says of the exports: each column left empty, and why (``fields``: the
    roster's columns, none without a roster); graded students not on it; roster students
    without a submission."""
    said = []
    why = "not in the roster" if fields else "no --roster"
    for name, columns in (("canvas.csv", CANVAS), ("moodle.csv", MOODLE)):
        empty = [c for c, f in columns.items() if f != "student" and f not in fields]
        if "Student" in empty:
            said.append(f"{name}: Student holds the grading id (names: {why})")
            empty.remove("Student")
        if empty:
            said.append(f"{name}: {', '.join(empty)} empty ({why})")
    unlisted = sorted(set(scores) - set(roster))
    if roster and unlisted:
        listed = ", ".join(unlisted[:5]) + (", ..." if len(unlisted) > 5 else "")
        said.append(f"{len(unlisted)} graded student(s) not on the roster, by id only: {listed}")
    missing = sorted(set(roster) - set(scores))
    if missing:
        said.append(f"{len(missing)} roster student(s) with no submission: score left empty")
    return said
