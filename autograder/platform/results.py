"""What a run writes for the TA: ``grades.csv`` (:class:`GradeRow`), the late policy's columns,
the regrade log, the similarity of solutions, the exit code and the printed summary."""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from autograder import nbgrader_format as fmt
from autograder.platform import judge, policy, regrades, similarity
from autograder.platform.errors import EXIT_LOOK, EXIT_MANUAL, EXIT_OK
from autograder.platform.inputs import student_id


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
            records[row.student].digest if row.student in records else "",
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


def export_csv(
    course, assignment, specs, records, target: Path, late=None, notes=None
) -> list[GradeRow]:
    """One row per submission: per-part scores, total, status, message, feedback file; and,
    with ``late`` (:class:`LateColumns`), what the course policy made of the total. ``notes``:
    student -> a sentence of this run for the row's message (what the exchange holds)."""
    from nbgrader.api import MissingEntry

    part_columns = list(part_points(specs))
    rows = []
    with fmt.gradebook(course) as gradebook:
        maximum = sum(part_points(specs).values())
        for student in sorted(records):
            record = records[student]
            flags, messages = record.all_flags, record.all_messages
            row = GradeRow(student, file=record.origin, max=maximum)
            scores: dict[str, float] = {}
            if record.gradable and record.recorded:
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
                            passed = record.tests.get(grade.name)
                            if passed is not None and passed != (grade.score == grade.max_score):
                                flags.insert(0, "grader error")
                                messages.append(
                                    f"{grade.name}: gradebook score disagrees with the judge"
                                )
                    row.total = round(sum(scores.values()), 4)
            row.parts = {column: scores.get(column, "") for column in part_columns}
            row.status = next((s for s in judge.STATUSES if s in flags), "graded")
            row.flags = "; ".join(f for f in judge.STATUSES if f in flags)
            if notes and notes.get(student):
                messages = [*messages, notes[student]]
            row.message = " | ".join(dict.fromkeys(messages))[:1000]
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
        if is_graded(spec, g)
    }


def is_graded(spec: judge.NotebookSpec, grade_id: str) -> bool:
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


def manual_columns(specs: dict[str, judge.NotebookSpec]) -> set[str]:
    """The grades.csv columns of the written answers (graded by hand)."""
    return {
        part_column(specs, name, g)
        for name, spec in specs.items()
        for g in spec.order
        if is_graded(spec, g) and spec.kinds.get(g) == "manual"
    }


def similar_solutions(out: Path, *comparison: Any) -> similarity.Result | str:
    """:func:`compare_solutions` of ``comparison`` (its arguments), written to
    ``OUT/similarity.json``; if comparing fails, what failed, in words (said on stderr; the
    grades stand and the report says it), and no file."""
    try:
        similar = compare_solutions(*comparison)
        similarity.write_json(similar, out / "similarity.json")
    except Exception as error:  # noqa: BLE001 - the grades stand; the report says what failed
        similar = f"{type(error).__name__}: {error}"[:500]
        (out / "similarity.json").unlink(missing_ok=True)  # no earlier run's pairs as this one's
        print(f"similar solutions not compared: {similar}", file=sys.stderr)
    return similar


def print_run_notes(
    rows: list[GradeRow],
    out: Path,
    skipped: list[str],
    policy_applied: bool,
    regraded: int,
    threshold: float,
    similar: similarity.Result | str,
    feedback_lines: Iterable[str],
    roster_lines: Iterable[str],
) -> None:
    """What the summary's table leaves out: the inputs passed over, the policy and regrades, the
    exports, the feedback released, the roster's gaps and the similar solutions."""
    if skipped:
        names = ", ".join(skipped[:5]) + (", ..." if len(skipped) > 5 else "")
        print(f"not notebooks or hidden, not graded: {len(skipped)} ({names})")
    print(f"inputs: {out / 'inputs.csv'} (every file of the input, and what became of it)")
    print_policy_summary(rows, policy_applied, regraded, out)
    print(f"exports: {out / 'canvas.csv'}, {out / 'moodle.csv'} (final scores)")
    for line in feedback_lines:
        print(line)
    for said in roster_lines:
        print(f"  {said}")
    if not isinstance(similar, str):
        print(
            f"similar solutions: {len(similar.pairs)} pair(s) at or above"
            f" {threshold:g} ({out / 'similarity.json'}, and the report)"
        )
