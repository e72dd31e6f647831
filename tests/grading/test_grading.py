"""Autograding end to end, the sync of assignments/ with solutions/, and the leak check.

The build (``tools/build.py``, ``run_assignment``) gives each assignment an nbgrader course
directory (``build/nbgrader/<assignment>``): it releases the assignment, submits four students
(the reference solution, the untouched student version, a hard-coded cheat, and the reference
with a visible test cell deleted) and autogrades them in one nbgrader run; their grades are in
``build/grades/<assignment>.students.json``. These tests check those grades, after checking
that the build graded the current sources (else: run `make`).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder import nbgrader_format as nbg
from tools import leaks
from tools.build import ASSIGNMENTS as RELEASED
from tools.build import BOOK, BUILD, DIST, GRADED_STUDENTS, assignment_is_built, grades_path

ASSIGNMENTS = nbg.assignment_ids()


def _normalised(path: Path) -> dict:
    notebook = json.loads(path.read_text())
    return {"metadata": notebook["metadata"], "cells": notebook["cells"]}


def _grades(data: dict) -> nbg.Grades:
    parts = tuple(nbg.PartGrade(**part) for part in data["parts"])
    return nbg.Grades(data["student"], data["assignment"], parts)


# Every test that uses this fixture reads the build's nbgrader grading: the mark comes with it.
@pytest.fixture(
    scope="module", params=[pytest.param(a, marks=pytest.mark.build) for a in ASSIGNMENTS]
)
def graded(request):
    assignment = request.param
    assert assignment_is_built(assignment), (
        f"build/ has no grading of the current {assignment} (its sources, the autograder, "
        "the course package or tools/submissions.py changed since): run `make`"
    )
    course_dir = BUILD / "nbgrader" / assignment
    sources = sorted((course_dir / "source" / assignment).glob("*.ipynb"))
    assert [p.stem for p in sources] == [s.stem for s in nbg.source_files(assignment)]
    students = json.loads(grades_path(BUILD, assignment, students=True).read_text())
    assert sorted(students) == sorted(GRADED_STUDENTS)
    grades = {student: _grades(data) for student, data in students.items()}

    visible_points, hidden_ids = 0.0, set()
    for path in sources:
        for cell in nbformat.read(path, as_version=4).cells:
            if nbg.is_test_code(cell) and nbg.has_hidden_tests(cell.source):
                hidden_ids.add(nbg.grade_id(cell))
            elif nbg.is_test_code(cell):
                visible_points += nbg.points(cell)
    return {
        "assignment": assignment,
        "dir": course_dir,
        "release": course_dir / "release" / assignment,
        "grades": grades,
        "visible": visible_points,
        "hidden": hidden_ids,
    }


def test_assignment_has_enough_autograded_points_and_parts(graded):
    reference = graded["grades"]["reference"]
    hidden_parts = [p for p in reference.parts if p.grade_id in graded["hidden"]]
    assert reference.autograded_max >= 10
    assert len(hidden_parts) >= 3, f"only {len(hidden_parts)} parts have hidden tests"


def test_reference_solution_gets_full_marks(graded):
    reference = graded["grades"]["reference"]
    lost = [p for p in reference.parts if p.auto and p.score != p.max_score]
    assert not lost, f"the reference solution lost points in {lost}"


def test_unchanged_student_version_scores_zero(graded):
    blank = graded["grades"]["blank"]
    assert blank.autograded_max == graded["grades"]["reference"].autograded_max, (
        "a graded cell went missing"
    )
    assert blank.autograded_score == 0, [p for p in blank.parts if p.score]


def test_hardcoded_answers_keep_only_the_visible_points(graded):
    cheat = graded["grades"]["cheat"]
    assert 0 < graded["visible"] < cheat.autograded_max
    assert cheat.autograded_score == graded["visible"], cheat.parts
    hidden = [p for p in cheat.parts if p.grade_id in graded["hidden"]]
    assert hidden and all(p.score == 0 for p in hidden), hidden


def test_a_deleted_test_cell_is_restored_and_graded(graded):
    restored = graded["grades"]["deleted_test"]
    assert restored.autograded_max == graded["grades"]["reference"].autograded_max
    assert restored.autograded_score == restored.autograded_max


def test_free_text_question_waits_for_a_human(graded):
    manual = [p for p in graded["grades"]["reference"].parts if not p.auto]
    assert manual and all(p.needs_manual_grade for p in manual)


def test_assignments_folder_is_in_sync_with_solutions(graded):
    committed = RELEASED / graded["assignment"]
    regenerated = sorted(p.name for p in graded["release"].iterdir())
    assert sorted(p.name for p in committed.iterdir()) == regenerated, (
        "assignments/ has other files than a fresh release"
    )
    for name in regenerated:
        if name.endswith(".ipynb"):
            assert _normalised(committed / name) == _normalised(graded["release"] / name), (
                f"assignments/{graded['assignment']}/{name} differs from the build's release of solutions/: run `make`"
            )


# -- leaks ------------------------------------------------------------------------------------


SECRETS, _PUBLIC = leaks.secret_and_public_lines()


def test_there_are_secrets_to_look_for():
    assert len(SECRETS) >= 30, (
        f"only {len(SECRETS)} secret lines found: the leak check would be toothless"
    )


@pytest.mark.parametrize(
    "where",
    [
        RELEASED,
        pytest.param(DIST, marks=pytest.mark.build),
        pytest.param(BOOK / "_build" / "html", marks=pytest.mark.build),
    ],
    ids=["assignments", "student-bundle", "website"],
)
def test_no_solution_or_hidden_test_reaches_students(where):
    assert where.exists(), f"{where} was not built"
    found = leaks.find_leaks(where, SECRETS)
    assert not found, "instructor-only lines found:\n" + "\n".join(
        f"{p}: {line}" for p, line in found[:10]
    )
    for marker in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "autograder.hidden"):
        marked = [
            p
            for p in where.rglob("*")
            if p.is_file()
            and p.suffix in leaks.TEXT_SUFFIXES
            and marker in p.read_text(errors="replace")
        ]
        assert not marked, f"{marker!r} found in {marked[:3]}"


def test_the_leak_check_finds_a_planted_solution_line(tmp_path):
    secret = sorted(SECRETS)[len(SECRETS) // 2]
    page = tmp_path / "page.html"
    escaped = secret.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    page.write_text(f"<pre><span>{escaped[:5]}</span><span>{escaped[5:]}</span></pre>")
    notebook = tmp_path / "copy.ipynb"
    shutil.copyfile(next(RELEASED.rglob("*.ipynb")), notebook)
    data = json.loads(notebook.read_text())
    data["cells"][0]["source"] = [secret + "\n"]
    notebook.write_text(json.dumps(data))
    assert {p.name for p, _ in leaks.find_leaks(tmp_path, {secret})} == {"page.html", "copy.ipynb"}


def test_a_line_that_is_one_name_or_string_is_not_a_secret():
    lines = leaks._lines('"self_attention",\n    torch.float64)\nscores = q @ k.T / math.sqrt(d)\n')
    assert lines == {"scores = q @ k.T / math.sqrt(d)"}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
@pytest.mark.build
def test_the_leak_check_finds_the_solution_in_the_reference_notebook(assignment):
    reference = BUILD / "solutions" / assignment
    found = {line for _, line in leaks.find_leaks(reference, SECRETS)}
    assert len(found) >= 20, (
        f"only {len(found)} secret lines found in the reference notebook itself"
    )
