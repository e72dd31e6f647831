"""One fingerprint of everything that can change a grade, shared by the build and the grader.

The grading inputs (``autograder/``, ``course/``, the assignment's source, the nbgrader
configuration, the pinned requirements) are copied into a temporary root; each kind of input
is edited there in turn, and the fingerprint must change every time, and come back when the
edit is undone. Files that cannot change a grade (caches, other assignments, lectures) must
leave it alone.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from autograder.fingerprint import files_digest, grading_fingerprint, grading_inputs
from autograder.nbgrader_format import REPO, assignment_ids
from autograder.platform import course_folder, state
from tools import build

ASSIGNMENT = assignment_ids()[0]
OTHER = [a for a in assignment_ids() if a != ASSIGNMENT]


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """A copy of the repository's grading inputs (and a lecture, which is not one)."""
    copy = tmp_path_factory.mktemp("repo")
    caches = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in ("autograder", "course", "solutions", "lectures"):
        shutil.copytree(REPO / folder, copy / folder, ignore=caches)
    for name in ("requirements.txt", "requirements-student.txt"):
        shutil.copyfile(REPO / name, copy / name)
    return copy


def test_the_copy_has_the_repository_fingerprint(root):
    assert grading_fingerprint(ASSIGNMENT, root) == grading_fingerprint(ASSIGNMENT)
    assert grading_fingerprint(ASSIGNMENT, root) == grading_fingerprint(ASSIGNMENT, root)
    if OTHER:
        assert grading_fingerprint(OTHER[0], root) != grading_fingerprint(ASSIGNMENT, root)


def _deepest_course_module(root: Path) -> Path:
    """The most deeply nested module of ``course`` outside course/checks."""
    found = [p for p in (root / "course").rglob("*.py") if "checks" not in p.parent.name]
    found = [p for p in found if "__pycache__" not in p.parts and p.name != "__init__.py"]
    assert found, "course has no module"
    return max(sorted(found), key=lambda p: len(p.parts))


# What each edit stands for -> the file below the root that it edits (then deletes).
EDITS = {
    "a hidden-check module": lambda r: r / "autograder" / "hidden" / f"{ASSIGNMENT}.py",
    "the shared traps (hidden/shortcuts.py)": lambda r: r / "autograder/hidden/shortcuts.py",
    "the judge": lambda r: r / "autograder" / "platform" / "judge.py",
    "the nbgrader format": lambda r: r / "autograder" / "nbgrader_format.py",
    "the nbgrader configuration": lambda r: r / "autograder" / "nbgrader_config.py",
    "course/checks": lambda r: r / "course" / "checks" / "__init__.py",
    "a (nested) course module": _deepest_course_module,
    "the assignment's source": lambda r: r / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.py",
    "the pinned requirements": lambda r: r / "requirements.txt",
    "the students' pinned requirements": lambda r: r / "requirements-student.txt",
}


@pytest.mark.parametrize("what", list(EDITS))
def test_editing_a_grading_input_changes_the_fingerprint(root, what):
    path = EDITS[what](root)
    original = path.read_bytes()
    before = grading_fingerprint(ASSIGNMENT, root)
    try:
        path.write_bytes(original + b"\n# edited\n")
        edited = grading_fingerprint(ASSIGNMENT, root)
        assert edited != before, f"editing {what} ({path.relative_to(root)}) went unnoticed"
        path.unlink()
        assert grading_fingerprint(ASSIGNMENT, root) not in (before, edited), "deleted"
    finally:
        path.write_bytes(original)
    assert grading_fingerprint(ASSIGNMENT, root) == before


@pytest.mark.parametrize(
    "new_file",
    [
        "course/models/recurrent_extra.py",  # a module in a (new) subpackage
        "course/data/corpora/english.txt.gz",  # a data file, nested two levels down
        "autograder/hidden/helpers/deeper.py",  # hidden-check code in a subfolder
        f"solutions/{ASSIGNMENT}/data.json",  # a file the assignment reads
    ],
)
def test_adding_a_nested_file_changes_the_fingerprint(root, new_file):
    before = grading_fingerprint(ASSIGNMENT, root)
    path = root / new_file
    created = [p for p in [path, *path.parents] if not p.exists() and root in p.parents]
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.write_bytes(b"\x1f\x8b binary or text")
        assert grading_fingerprint(ASSIGNMENT, root) != before, new_file
    finally:
        path.unlink()
        for folder in sorted((p for p in created if p != path), key=lambda p: -len(p.parts)):
            folder.rmdir()
    assert grading_fingerprint(ASSIGNMENT, root) == before


@pytest.mark.parametrize(
    "unrelated",
    [
        "course/__pycache__/checks.cpython-311.pyc",
        "autograder/hidden/__pycache__/shortcuts.cpython-311.pyc",
        "course/.ipynb_checkpoints/notes-checkpoint.py",
        "lectures/01_edited.py",
        *(f"solutions/{other}/{other}_notes.py" for other in OTHER),
    ],
)
def test_files_that_cannot_change_the_grade_leave_it_alone(root, unrelated):
    before = grading_fingerprint(ASSIGNMENT, root)
    path = root / unrelated
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x = 1\n")
    try:
        assert grading_fingerprint(ASSIGNMENT, root) == before, unrelated
    finally:
        path.unlink()


def test_a_renamed_file_changes_the_digest(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.py").write_text("x = 1\n")
    before = files_digest([tmp_path / "a"], tmp_path)
    (tmp_path / "a" / "x.py").rename(tmp_path / "a" / "y.py")
    assert files_digest([tmp_path / "a"], tmp_path) != before


def test_the_build_and_the_grading_command_use_this_fingerprint():
    units = {unit.key: unit.digest for unit in build.assignment_units()}
    for assignment in assignment_ids():
        assert units[f"assignment-{assignment}"] == grading_fingerprint(assignment)
    assert course_folder.grading_fingerprint is grading_fingerprint
    assert state.grading_fingerprint is grading_fingerprint
    names = {path.relative_to(REPO).as_posix() for path in grading_inputs(ASSIGNMENT)}
    assert names == {
        "autograder",
        "course",
        f"solutions/{ASSIGNMENT}",
        "requirements.txt",
        "requirements-student.txt",
    }
