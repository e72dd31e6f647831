"""Load an assignment's reference solution from its jupytext source, for the tests.

The source notebook (``solutions/<assignment>/<assignment>.py``, py:percent) is read with
jupytext. Its code cells are sorted by their nbgrader metadata:

- *code cells*: every code cell that is not a graded test cell (setup, solutions, the
  ungraded exploration); executing them in order gives a namespace with the reference functions;
- *test cells*: graded code cells, by grade_id; ``visible_source`` is what a student sees and
  ``hidden_source`` is what only runs at autograde time.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jupytext

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `import autograder` works however pytest is started
    sys.path.insert(0, str(ROOT))

_HIDDEN_BLOCK = re.compile(
    r"^[ \t]*### BEGIN HIDDEN TESTS\n(.*?)^[ \t]*### END HIDDEN TESTS\n?", re.M | re.S
)
_SOLUTION_BLOCK = re.compile(
    r"^([ \t]*)### BEGIN SOLUTION\n(.*?)^[ \t]*### END SOLUTION\n?", re.M | re.S
)


def strip_solutions(source: str) -> str:
    """What nbgrader's release makes of a solution cell: each block becomes a stub that raises."""
    return _SOLUTION_BLOCK.sub(
        lambda block: (
            f"{block.group(1)}# YOUR CODE HERE\n{block.group(1)}raise NotImplementedError()\n"
        ),
        source,
    )


def solution_lines(source: str) -> list[str]:
    """The stripped, non-empty lines between the solution markers of ``source``."""
    return [
        line.strip()
        for block in _SOLUTION_BLOCK.finditer(source)
        for line in block.group(2).splitlines()
        if line.strip()
    ]


@dataclass
class TestCell:
    grade_id: str
    points: float
    source: str

    @property
    def visible_source(self) -> str:
        """The cell as released to students: hidden blocks removed."""
        return _HIDDEN_BLOCK.sub("", self.source)

    @property
    def hidden_source(self) -> str:
        """Only the code between the hidden-test markers (empty for a visible test)."""
        return "".join(match.group(1) for match in _HIDDEN_BLOCK.finditer(self.source))

    @property
    def is_hidden(self) -> bool:
        return bool(self.hidden_source.strip())


@dataclass
class Solution:
    path: Path
    notebook: Any
    code_cells: list[Any] = field(default_factory=list)
    test_cells: dict[str, TestCell] = field(default_factory=dict)

    def namespace(self, *, released: bool = False) -> dict[str, Any]:
        """Execute every non-test code cell, in order, in a fresh namespace and return it.

        ``released=True`` executes the student version instead, whose solution blocks raise
        NotImplementedError.
        """
        namespace: dict[str, Any] = {"__name__": "a1_released" if released else "a1_reference"}
        for index, cell in enumerate(self.code_cells):
            source = strip_solutions(cell.source) if released else cell.source
            exec(compile(source, f"<{self.path.name} cell {index}>", "exec"), namespace)
        return namespace


def nbgrader_metadata(cell: Any) -> dict[str, Any]:
    return dict(cell.get("metadata", {}).get("nbgrader", {}))


def load_solution(assignment: str) -> Solution:
    path = ROOT / "solutions" / assignment / f"{assignment}.py"
    notebook = jupytext.read(path)
    solution = Solution(path=path, notebook=notebook)
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        meta = nbgrader_metadata(cell)
        if meta.get("grade"):
            grade_id = meta["grade_id"]
            solution.test_cells[grade_id] = TestCell(grade_id, float(meta["points"]), cell.source)
        else:
            solution.code_cells.append(cell)
    return solution


def run_cell(source: str, namespace: dict[str, Any], name: str = "test cell") -> None:
    """Execute ``source`` in ``namespace`` (which it may extend), as a notebook would."""
    exec(compile(source, f"<{name}>", "exec"), namespace)
