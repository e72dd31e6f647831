"""The grading command's release cache (``autograder.platform.course_folder.prepare_course``): a new
output folder takes the student version and the gradebook that nbgrader made for the same
fingerprint, byte for byte, without running nbgrader again; a folder that has a gradebook
already keeps it; a cache that cannot be used only costs the release."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from autograder import nbgrader_format as fmt
from autograder.fingerprint import grading_fingerprint
from autograder.platform import course_folder

ASSIGNMENT = fmt.assignment_ids()[0]


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(course_folder.RELEASE_CACHE_VARIABLE, str(tmp_path / "cache"))
    return course_folder.release_cache()


@pytest.fixture
def releases(monkeypatch) -> list[Path]:
    """The course folders that nbgrader's generate_assignment ran in, in order."""
    ran: list[Path] = []
    real = fmt.release

    def counted(course: Path, assignment: str) -> Path:
        ran.append(course)
        return real(course, assignment)

    monkeypatch.setattr(fmt, "release", counted)
    return ran


def _tables(gradebook: Path) -> dict[str, list]:
    with sqlite3.connect(gradebook) as db:
        names = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
        return {name: sorted(map(repr, db.execute(f"select * from {name}"))) for name in names}


def test_a_new_folder_copies_what_nbgrader_made_for_the_same_fingerprint(tmp_path, cache, releases):
    first = course_folder.prepare_course(tmp_path / "one", ASSIGNMENT)
    second = course_folder.prepare_course(tmp_path / "two", ASSIGNMENT)
    assert releases == [first]  # nbgrader ran once
    entries = list(cache.iterdir())
    assert [e.name for e in entries] == [f"{ASSIGNMENT}-{grading_fingerprint(ASSIGNMENT)[:40]}"], (
        entries
    )
    for course in (first, second):
        assert (course / ".source-fingerprint").read_text() == grading_fingerprint(ASSIGNMENT)
    made = sorted(p.relative_to(first) for p in (first / "release").rglob("*") if p.is_file())
    copied = sorted(p.relative_to(second) for p in (second / "release").rglob("*") if p.is_file())
    assert made == copied and made
    for path in made:
        assert (first / path).read_bytes() == (second / path).read_bytes(), path
    assert _tables(first / course_folder.GRADEBOOK) == _tables(second / course_folder.GRADEBOOK)
    # each folder's configuration names its own folder
    assert str(second / "judged") in (second / "nbgrader_config.py").read_text()
    assert str(first) not in (second / "nbgrader_config.py").read_text()


def test_a_folder_with_a_gradebook_keeps_it_and_releases_again(tmp_path, cache, releases):
    course = course_folder.prepare_course(tmp_path / "out", ASSIGNMENT)
    with sqlite3.connect(course / course_folder.GRADEBOOK) as db:  # a record the copy would lose
        db.execute("insert into student (id) values ('kept')")
    (course / ".source-fingerprint").write_text("an older fingerprint")
    assert course_folder.prepare_course(tmp_path / "out", ASSIGNMENT) == course
    assert releases == [course, course]
    with sqlite3.connect(course / course_folder.GRADEBOOK) as db:
        assert db.execute("select id from student").fetchall() == [("kept",)]


def test_a_cache_that_cannot_be_written_only_costs_the_release(tmp_path, monkeypatch, releases):
    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("")
    monkeypatch.setenv(course_folder.RELEASE_CACHE_VARIABLE, str(blocked))
    one = course_folder.prepare_course(tmp_path / "one", ASSIGNMENT)
    two = course_folder.prepare_course(tmp_path / "two", ASSIGNMENT)
    assert releases == [one, two]
    assert (two / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").is_file()


def test_a_broken_entry_is_not_used(tmp_path, cache, releases):
    course_folder.prepare_course(tmp_path / "one", ASSIGNMENT)
    (entry,) = cache.iterdir()
    (entry / course_folder.GRADEBOOK).unlink()  # an entry left without its gradebook
    two = course_folder.prepare_course(tmp_path / "two", ASSIGNMENT)
    assert releases[-1] == two and len(releases) == 2


def test_only_the_newest_entries_of_an_assignment_are_kept(tmp_path, cache, releases):
    cache.mkdir(parents=True)
    for i in range(course_folder.KEPT_RELEASES + 2):
        old = cache / f"{ASSIGNMENT}-{i:040d}"
        (old / "release").mkdir(parents=True)
        (old / course_folder.GRADEBOOK).write_text("")
    other = cache / f"another_assignment-{0:040d}"
    other.mkdir()
    course_folder.prepare_course(tmp_path / "one", ASSIGNMENT)
    mine = sorted(p.name for p in cache.glob(f"{ASSIGNMENT}-*"))
    assert len(mine) == course_folder.KEPT_RELEASES
    assert f"{ASSIGNMENT}-{grading_fingerprint(ASSIGNMENT)[:40]}" in mine
    assert other.exists()
