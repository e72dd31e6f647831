"""``--release-feedback``: the grading command gives each student's feedback back through
nbgrader's exchange, so the student fetches it as ``nbgrader release_feedback`` would have
released it (autograder/platform/feedback.py). One real exchange on this machine: the
instructor releases, the student fetches and submits, the instructor collects, the command
grades ``submitted/`` and releases, the student fetches the feedback."""

from __future__ import annotations

import csv
import re
import subprocess
from pathlib import Path

import nbformat
import pytest

from autograder import nbgrader_format as fmt
from autograder.platform import feedback
from autograder.platform.course_folder import prepare_course
from autograder.platform.grade import command_line
from tools.notebooks import REPO
from tools.submissions import honest_submission

ASSIGNMENT = "a1_rnn_bptt"
COURSE_ID = "seqmodels"


def _config(folder: Path, exchange: Path, cache: Path, *, course_root: bool) -> None:
    lines = [
        "c = get_config()",
        f"c.CourseDirectory.course_id = {COURSE_ID!r}",
        f"c.Exchange.root = {str(exchange)!r}",
        f"c.Exchange.cache = {str(cache)!r}",
    ]
    if course_root:
        lines.append(f"c.CourseDirectory.root = {str(folder)!r}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nbgrader_config.py").write_text("\n".join(lines) + "\n")


def _score(page: str) -> str:
    """The first "Score: X / Y" of a feedback page: the whole notebook's."""
    found = re.search(r"Score: ([\d.]+) / ([\d.]+)", page)
    assert found, "no score on the feedback page"
    return found.group(1)


def test_feedback_goes_back_through_the_exchange_to_the_student_who_submitted(tmp_path):
    exchange, cache = tmp_path / "exchange", tmp_path / "cache"
    exchange.mkdir()
    course, student = tmp_path / "course", tmp_path / "student"
    _config(course, exchange, cache, course_root=True)
    _config(student, exchange, cache, course_root=False)
    prepared = prepare_course(tmp_path / "prepared", ASSIGNMENT)  # the course's own release
    released = course / "release" / ASSIGNMENT
    released.mkdir(parents=True)
    name = f"{ASSIGNMENT}.ipynb"
    (released / name).write_bytes((prepared / "release" / ASSIGNMENT / name).read_bytes())

    fmt.nbgrader(course, "release_assignment", ASSIGNMENT)
    fmt.nbgrader(student, "fetch_assignment", ASSIGNMENT)
    source = nbformat.read(prepared / "source" / ASSIGNMENT / name, as_version=4)
    release = nbformat.read(released / name, as_version=4)
    nbformat.write(honest_submission(source, release), student / ASSIGNMENT / name)
    fmt.nbgrader(student, "submit", ASSIGNMENT)
    fmt.nbgrader(course, "collect", ASSIGNMENT)
    submitted = course / "submitted"
    (owner,) = [p.name for p in submitted.iterdir()]  # the Unix user who submitted

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
    assert row["student"] == owner and float(row["total"]) > 0
    staged = course / "feedback" / owner / ASSIGNMENT
    assert sorted(p.name for p in staged.iterdir()) == [
        f"{ASSIGNMENT}.html",
        "submission_secret.txt",
        "timestamp.txt",
    ]
    assert len(list((exchange / COURSE_ID / "feedback").glob("*.html"))) == 1

    fmt.nbgrader(student, "fetch_feedback", ASSIGNMENT)
    timestamp = (submitted / owner / ASSIGNMENT / "timestamp.txt").read_text().strip()
    fetched = student / ASSIGNMENT / "feedback" / timestamp / f"{ASSIGNMENT}.html"
    page = fetched.read_text(encoding="utf-8")
    assert float(_score(page)) == pytest.approx(float(row["total"]))
    assert page == (
        out / "course" / "feedback" / row["student"] / ASSIGNMENT / fetched.name
    ).read_text(
        encoding="utf-8"
    )  # the page the command rendered, which shows no hidden test (test_ta_grading)


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
