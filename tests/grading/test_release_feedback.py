"""``--release-feedback``: the grading command gives each student's feedback back through
nbgrader's exchange, so the student fetches it as ``nbgrader release_feedback`` would have
released it (autograder/platform/feedback.py). One real exchange on this machine: the
instructor releases, the student fetches and submits, the instructor collects, the command
grades ``submitted/`` and releases, the student fetches the feedback."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import nbgrader_format as fmt
from autograder.platform import feedback
from autograder.platform.grade import command_line
from tools import hub
from tools.notebooks import REPO
from tools.submissions import honest_submission

ASSIGNMENT = "a1_rnn_bptt"
COURSE_ID = hub.COURSE_ID


def _config(folder: Path, exchange: Path, cache: Path) -> None:
    """A student's nbgrader settings: the course, its exchange, and this test's cache."""
    lines = [
        "c = get_config()",
        f"c.CourseDirectory.course_id = {COURSE_ID!r}",
        f"c.Exchange.root = {str(exchange)!r}",
        f"c.Exchange.cache = {str(cache)!r}",
    ]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nbgrader_config.py").write_text("\n".join(lines) + "\n")


def _score(page: str) -> str:
    """The first "Score: X / Y" of a feedback page: the whole notebook's."""
    found = re.search(r"Score: ([\d.]+) / ([\d.]+)", page)
    assert found, "no score on the feedback page"
    return found.group(1)


@pytest.mark.sandbox  # the grading command and its kernels, twice: not in `make test-fast`
def test_feedback_goes_back_through_the_exchange_to_the_student_who_submitted(tmp_path):
    exchange, cache = tmp_path / "exchange", tmp_path / "cache"
    exchange.mkdir()
    course, student = tmp_path / "course", tmp_path / "student"
    # the graders' course directory on the course's hub (deploy/jupyterhub/), then this test's
    # exchange cache; the student's settings name the same course and exchange
    hub.make_course(course, [ASSIGNMENT], exchange=str(exchange))
    with (course / "nbgrader_config.py").open("a") as settings:
        settings.write(f"c.Exchange.cache = {str(cache)!r}\n")
    _config(student, exchange, cache)
    prepared = course  # its source and release
    released = course / "release" / ASSIGNMENT
    name = f"{ASSIGNMENT}.ipynb"

    fmt.nbgrader(course, "release_assignment", ASSIGNMENT)
    fmt.nbgrader(student, "fetch_assignment", ASSIGNMENT)
    source = nbformat.read(prepared / "source" / ASSIGNMENT / name, as_version=4)
    release = nbformat.read(released / name, as_version=4)
    # submitted three times: twice as fetched (blank), then answered; collect takes the latest
    for answered in (False, False, True):
        if answered:
            nbformat.write(honest_submission(source, release), student / ASSIGNMENT / name)
        fmt.nbgrader(student, "submit", ASSIGNMENT)
    fmt.nbgrader(course, "collect", ASSIGNMENT)
    submitted = course / "submitted"
    (owner,) = [p.name for p in submitted.iterdir()]  # the Unix user who submitted
    timestamp = (submitted / owner / ASSIGNMENT / "timestamp.txt").read_text().strip()

    out = tmp_path / "grading"
    argv = command_line(ASSIGNMENT, submitted, out, "--workers", "1", "--release-feedback")
    run = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode in (0, 1), run.stdout + run.stderr  # 1: the written answer waits
    assert "feedback released through nbgrader's exchange: 1 of 1" in run.stdout
    assert "not notebooks or hidden" not in run.stdout  # the exchange's own files are known
    with (out / "inputs.csv").open(newline="") as handle:
        kinds = {Path(r["input"]).name: r["status"] for r in csv.DictReader(handle)}
    assert kinds == {
        f"{ASSIGNMENT}.ipynb": "read",
        "timestamp.txt": "exchange file",
        "submission_secret.txt": "exchange file",
    }
    with (out / "grades.csv").open(newline="") as handle:
        (row,) = list(csv.DictReader(handle))
    assert row["student"] == owner and float(row["total"]) > 0  # the answered one
    said = f"submitted 3 times through the exchange; the latest ({timestamp}) is graded"
    assert said in row["message"] and said in run.stdout
    staged = course / "feedback" / owner / ASSIGNMENT
    assert sorted(p.name for p in staged.iterdir()) == [
        f"{ASSIGNMENT}.html",
        "submission_secret.txt",
        "timestamp.txt",
    ]
    assert len(list((exchange / COURSE_ID / "feedback").glob("*.html"))) == 1

    # the scores also went into the course directory's gradebook, the one Formgrader shows
    assert f"scores recorded in {course / 'gradebook.db'} (Formgrader's): 1" in run.stdout
    with fmt.gradebook(course) as gradebook:
        submission = gradebook.find_submission(ASSIGNMENT, owner)
        assert submission.score == pytest.approx(float(row["total"]))
        assert submission.needs_manual_grade  # the written answer waits there too
    assert (course / "autograded" / owner / ASSIGNMENT / name).is_file()  # what it opens
    # a grader scores the written answer in Formgrader; grading again keeps that score
    with fmt.gradebook(course) as gradebook:
        submission = gradebook.find_submission(ASSIGNMENT, owner)
        (written,) = [g for nb in submission.notebooks for g in nb.grades if g.needs_manual_grade]
        written.manual_score, written.needs_manual_grade = written.max_score, False  # as it does
        gradebook.db.commit()
        kept = (written.name, float(submission.score))
    # a fourth submission after the collect: graded again, the row says it was not collected
    fmt.nbgrader(student, "submit", ASSIGNMENT)
    again = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert "feedback released through nbgrader's exchange: 1 of 1" in again.stdout, again.stdout
    with (out / "grades.csv").open(newline="") as handle:
        (row_again,) = list(csv.DictReader(handle))
    assert f"graded the submission of {timestamp}; 1 later one(s)" in row_again["message"]
    assert f"nbgrader collect --update {ASSIGNMENT}" in again.stdout
    with fmt.gradebook(course) as gradebook:
        submission = gradebook.find_submission(ASSIGNMENT, owner)
        grades = {g.name: g for nb in submission.notebooks for g in nb.grades}
        assert grades[kept[0]].manual_score == grades[kept[0]].max_score
        assert float(submission.score) == kept[1] and not submission.needs_manual_grade

    fmt.nbgrader(student, "fetch_feedback", ASSIGNMENT)
    fetched = student / ASSIGNMENT / "feedback" / timestamp / f"{ASSIGNMENT}.html"
    page = fetched.read_text(encoding="utf-8")
    assert float(_score(page)) == pytest.approx(float(row["total"]))
    assert page == (
        out / "course" / "feedback" / row["student"] / ASSIGNMENT / fetched.name
    ).read_text(
        encoding="utf-8"
    )  # the page the command rendered, which shows no hidden test (test_ta_grading)


@pytest.mark.parametrize(
    "graded, times, said",
    [
        ("t2", ["t2"], ""),
        ("t2", [], ""),  # the exchange was emptied since: nothing to compare with
        ("t3", ["t1", "t2", "t3"], "submitted 3 times through the exchange; the latest (t3)"),
        ("t1", ["t1", "t2", "t3"], "graded the submission of t1; 2 later one(s)"),
        ("t9", ["t1", "t2"], "timestamp (t9) is none of the 2 in the exchange (the latest: t2)"),
    ],
)
def test_a_row_says_what_the_exchange_holds_beside_the_graded_submission(graded, times, said):
    note = feedback.resubmission_note(graded, times, ASSIGNMENT)
    assert (said in note) if said else note == ""


def test_only_a_submitted_folder_can_release_and_the_command_says_so_before_grading(tmp_path):
    folder = tmp_path / "notebooks"
    folder.mkdir()
    out = tmp_path / "grading"
    argv = command_line(ASSIGNMENT, folder, out, "--release-feedback")
    run = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 3
    assert "is not the submitted/ folder of an nbgrader course directory" in run.stderr
    assert not (out / "grades.csv").exists()


def test_what_is_not_released_is_named_with_the_reason(tmp_path):
    submitted = tmp_path / "course" / "submitted"
    for owner in ("ada", "bo", "cy"):
        (submitted / owner / ASSIGNMENT).mkdir(parents=True)
        (submitted / owner / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").write_text("{}")
        (submitted / owner / ASSIGNMENT / "timestamp.txt").write_text("2026-11-28 10:00:00 UTC")
    for owner in ("ada", "cy"):  # bo's copy did not come through the exchange
        (submitted / owner / ASSIGNMENT / "submission_secret.txt").write_text(f"{owner}'s secret")
    page = tmp_path / "ada.html"
    page.write_text("<h4>Score: 1.0 / 15.0</h4>")
    origins = {owner: f"{owner}/{ASSIGNMENT}/{ASSIGNMENT}.ipynb" for owner in ("ada", "bo", "cy")}
    staged = feedback.stage(submitted, ASSIGNMENT, origins, {"ada": [page], "bo": [page]})
    assert [(r.student, r.notebooks, r.why_not) for r in staged] == [
        ("ada", ("ada",), ""),
        ("bo", (), "no submission_secret.txt: not submitted through nbgrader's exchange"),
        ("cy", (), "no feedback: the notebook was not graded"),
    ]
    target = tmp_path / "course" / "feedback" / "ada" / ASSIGNMENT
    assert (target / "submission_secret.txt").read_text() == "ada's secret"
    assert (target / "ada.html").read_text() == page.read_text()
    assert not (tmp_path / "course" / "feedback" / "bo").exists()
    assert feedback.summary(staged)[0] == "feedback released through nbgrader's exchange: 1 of 3"


def test_a_course_directory_without_the_assignment_gets_no_scores_and_the_summary_says_why(
    tmp_path, monkeypatch
):
    course, graded = tmp_path / "course", tmp_path / "graded"
    course.mkdir()
    staged = [feedback.Released("ada", ("ada",))]
    why = [
        f"scores not recorded in {course / 'gradebook.db'}: it has no {ASSIGNMENT} (make the"
        " course directory with `python -m tools.hub course`, or run nbgrader"
        " generate_assignment there)"
    ]
    assert feedback.record_in_course(course, graded, ASSIGNMENT, staged, {"ada": "ada"}) == why
    assert not (course / "gradebook.db").exists()  # no gradebook is made in a TA's folder
    # a gradebook without the assignment: the same (nbgrader makes one with alembic, on PATH)
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    for folder in (course, graded):
        folder.mkdir(exist_ok=True)
        with fmt.gradebook(folder):
            pass
    assert feedback.record_in_course(course, graded, ASSIGNMENT, staged, {"ada": "ada"}) == why
    assert feedback.record_in_course(course, graded, ASSIGNMENT, [], {}) == []
