"""No graded cell of a reference solution copies a lecture or ``course/``: ``python -m tools.copies``.

An assignment should ask for code the student has to think out, not a line-by-line rewrite of
what a lecture cell or a package function already shows. This check reads every solution code
cell (an nbgrader ``solution`` cell with a ``grade_id``) of every source assignment in
``solutions/`` and lists each one that shares a run of :data:`RUN` or more consecutive
normalised lines with a code cell of a lecture or with a module of ``course/``.

*Normalised* is what the TAs' similarity report does to a submission
(:func:`autograder.platform.similarity.normalise`): parsed and unparsed, so comments,
docstrings and formatting do not count, and every name the code binds becomes ``_f`` or
``_v``, so renaming does not count either. Here each line is also stripped of its
indentation, so that a function body moved into a method, or a loop body moved out of its
loop, still matches.

``tools.build`` runs the check before it builds the assignments, and ``make test`` runs it on
the repository and on a planted copy (``tests/build/test_copies.py``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import jupytext

from autograder import nbgrader_format as fmt
from autograder.platform.similarity import normalise

REPO = Path(__file__).resolve().parents[1]
RUN = 6  # consecutive normalised lines that make a copy


@dataclass(frozen=True)
class Copy:
    """A run of ``RUN`` lines that a graded cell shares with a reference."""

    assignment: str
    grade_id: str
    reference: str  # "lectures/06_transformer.py, code cell 12" or "course/train.py"
    lines: tuple[str, ...]

    def __str__(self) -> str:
        shown = "\n".join(f"    {line}" for line in self.lines)
        return (
            f"{self.assignment}, graded cell {self.grade_id!r} shares {len(self.lines)} "
            f"normalised lines with {self.reference}:\n{shown}"
        )


def normalised_lines(code: str) -> list[str]:
    """``code`` normalised as the similarity report does, one stripped line each, blanks dropped."""
    lines, _ = normalise(code)
    return [line.strip() for line in lines if line.strip()]


def _runs(lines: list[str]) -> Iterable[tuple[int, tuple[str, ...]]]:
    for start in range(len(lines) - RUN + 1):
        yield start, tuple(lines[start : start + RUN])


def reference_runs(lectures: Iterable[Path], modules: Iterable[Path]) -> dict[tuple, str]:
    """Every run of ``RUN`` normalised lines of the lectures' code cells and of the modules,
    with where it first occurs."""
    runs: dict[tuple[str, ...], str] = {}
    for path in lectures:
        notebook = jupytext.read(path)
        code_cells = (cell for cell in notebook.cells if cell.cell_type == "code")
        for number, cell in enumerate(code_cells, start=1):
            for _, run in _runs(normalised_lines(cell.source)):
                runs.setdefault(run, f"{_shown(path)}, code cell {number}")
    for path in modules:
        for _, run in _runs(normalised_lines(path.read_text(encoding="utf-8"))):
            runs.setdefault(run, _shown(path))
    return runs


def repository_runs(lectures: Path = REPO / "lectures", course: Path = REPO / "course") -> dict:
    """:func:`reference_runs` of the lectures' sources and of every module of ``course``."""
    return reference_runs(sorted(lectures.glob("*.py")), sorted(course.rglob("*.py")))


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return path.as_posix()


def copies_in(assignment: str, sources: Iterable[Path], references: dict[tuple, str]) -> list[Copy]:
    """The copies in the graded cells of one assignment's source notebooks, one per cell and
    reference (the first run found)."""
    found: dict[tuple[str, str], Copy] = {}
    for source in sources:
        for cell in fmt.read_source(source).cells:
            grade_id = fmt.grade_id(cell)
            if not (grade_id and fmt.is_solution_code(cell)):
                continue
            code = fmt.without_solution_markers(cell.source)
            for _, run in _runs(normalised_lines(code)):
                if run in references:
                    key = (grade_id, references[run])
                    found.setdefault(key, Copy(assignment, grade_id, references[run], run))
    return list(found.values())


def find_copies(
    solutions: Path = REPO / "solutions",
    lectures: Path = REPO / "lectures",
    course: Path = REPO / "course",
    references: dict[tuple, str] | None = None,
) -> list[Copy]:
    """Every copy in every source assignment under ``solutions`` (``references``: what
    :func:`repository_runs` gives, when it is at hand)."""
    if references is None:
        references = repository_runs(lectures, course)
    return [
        copy
        for assignment in fmt.assignment_ids(solutions)
        for copy in copies_in(assignment, fmt.source_files(assignment, solutions), references)
    ]


class CopiedSolutionError(RuntimeError):
    """A graded cell of a reference solution repeats a lecture or the course package."""


def check(solutions: Path = REPO / "solutions", references: dict[tuple, str] | None = None) -> None:
    """Raise :class:`CopiedSolutionError` listing every copy, if there is one."""
    copies = find_copies(solutions, references=references)
    if copies:
        raise CopiedSolutionError(
            f"{len(copies)} graded cell(s) of the reference solutions repeat {RUN} or more "
            "normalised lines of a lecture or of course/; ask for a variation instead "
            "(tools/copies.py says why):\n" + "\n".join(map(str, copies))
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--solutions", type=Path, default=REPO / "solutions")
    args = parser.parse_args(argv)
    try:
        check(args.solutions)
    except CopiedSolutionError as error:
        print(error, file=sys.stderr)
        return 1
    print(f"no graded cell repeats {RUN} normalised lines of a lecture or of course/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
