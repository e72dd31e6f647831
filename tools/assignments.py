"""nbgrader, driven from the course sources: stage, release, autograde, read grades.

An nbgrader *course directory* is a build product here. :func:`make_course_dir` creates one
(build/nbgrader for the build, a temporary one in the tests) with the shared configuration
from ``autograder/nbgrader_config.py`` and the source notebooks converted from
``solutions/<assignment>/*.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from tools.notebooks import REPO, read_source, write_notebook

SOLUTIONS = REPO / "solutions"
ASSIGNMENTS = REPO / "assignments"
CONFIG = REPO / "autograder" / "nbgrader_config.py"


class NbgraderError(RuntimeError):
    """An nbgrader command failed; the message carries its output."""


def assignment_ids() -> list[str]:
    """The assignments, one per folder of ``solutions/`` that holds a notebook source."""
    return sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and any(p.glob("*.py")))


def source_files(assignment: str) -> list[Path]:
    folder = SOLUTIONS / assignment
    files = sorted(folder.glob("*.py"))
    if not files:
        raise FileNotFoundError(f"no notebook sources (*.py) in {folder}")
    return files


def make_course_dir(root: Path, assignments: list[str] | None = None) -> Path:
    """Create (or refresh) an nbgrader course directory at ``root`` with the given sources."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(CONFIG, root / "nbgrader_config.py")
    for assignment in assignments or assignment_ids():
        target = root / "source" / assignment
        if target.exists():
            shutil.rmtree(target)
        for source in source_files(assignment):
            write_notebook(read_source(source), target / f"{source.stem}.ipynb")
    return root


def nbgrader(course_dir: Path, *args: str, timeout: float = 1800) -> str:
    """Run one nbgrader command in ``course_dir``; raise NbgraderError with its log on failure.

    ``PYTHONPATH`` gains the repository so hidden-test cells can import ``autograder``.
    """
    env = {
        **os.environ,
        # the hidden-test cells import `autograder`; nbgrader runs `alembic` from the venv
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    command = [sys.executable, "-m", "nbgrader", *args]
    result = subprocess.run(
        command, cwd=course_dir, env=env, capture_output=True, text=True, timeout=timeout
    )
    log = result.stdout + result.stderr
    if result.returncode != 0:
        raise NbgraderError(
            f"`nbgrader {' '.join(args)}` failed in {course_dir} (exit {result.returncode}):\n{log}"
        )
    return log


def release(course_dir: Path, assignment: str) -> Path:
    """Generate the student version of ``assignment``; return its release folder."""
    nbgrader(course_dir, "generate_assignment", assignment, "--force")
    return course_dir / "release" / assignment


def submit(course_dir: Path, assignment: str, student: str, notebooks: dict[str, Path]) -> Path:
    """Place a student's notebooks where ``nbgrader autograde`` looks for them."""
    folder = course_dir / "submitted" / student / assignment
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, path in notebooks.items():
        shutil.copyfile(path, folder / f"{name}.ipynb")
    return folder


def autograde(course_dir: Path, assignment: str, *students: str) -> str:
    """Autograde the given students (all submitted ones when none are named)."""
    selection = [f"--student={s}" for s in students] if students else []
    return nbgrader(course_dir, "autograde", assignment, "--force", *selection)


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
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}") as gradebook:
        try:
            submission = gradebook.find_submission(assignment, student)
        except MissingEntry as error:
            raise NbgraderError(
                f"no graded submission of {assignment} by {student} in {course_dir}"
            ) from error
        parts = []
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                auto = grade.cell_type == "code"
                parts.append(
                    PartGrade(
                        grade_id=grade.name,
                        score=float(grade.score),
                        max_score=float(grade.max_score),
                        needs_manual_grade=bool(grade.needs_manual_grade),
                        auto=auto,
                    )
                )
    return Grades(student, assignment, tuple(sorted(parts, key=lambda p: p.grade_id)))
