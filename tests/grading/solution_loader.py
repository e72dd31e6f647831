"""Load an assignment's reference solution from its source, for the tests.

The source notebook (``solutions/<assignment>/<assignment>.py``, py:percent) is read with
``autograder.nbgrader_format.read_source``. Its code cells are sorted by their nbgrader
metadata:

- *code cells*: every code cell that is not a graded test cell (setup, solutions, the
  ungraded exploration); executing them in order gives a namespace with the reference functions;
- *test cells*: graded code cells, by grade_id; ``visible_source`` is what a student sees and
  ``hidden_source`` is what only runs at autograde time.

:func:`as_student` wraps a test implementation (with bug switches) under the name of the
student's function, as every per-assignment test file needs. :func:`lecture_functions` defines
the functions of a lecture's cells without running the lecture, to paste them into a test.
"""

from __future__ import annotations

import ast
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `import autograder` works however pytest is started
    sys.path.insert(0, str(ROOT))

from autograder import nbgrader_format as fmt  # noqa: E402 - after the path fix above


@dataclass
class TestCell:
    grade_id: str
    points: float
    source: str

    @property
    def visible_source(self) -> str:
        """The cell as released to students: hidden blocks removed."""
        return fmt.without_hidden_tests(self.source)

    @property
    def hidden_source(self) -> str:
        """Only the code between the hidden-test markers (empty for a visible test)."""
        return "".join(fmt.hidden_test_blocks(self.source))

    @property
    def is_hidden(self) -> bool:
        return fmt.has_hidden_tests(self.source)


@dataclass
class Solution:
    assignment: str
    path: Path
    notebook: Any
    code_cells: list[Any] = field(default_factory=list)
    test_cells: dict[str, TestCell] = field(default_factory=dict)

    def namespace(self, *, released: bool = False) -> dict[str, Any]:
        """Execute every non-test code cell, in order, in a fresh namespace and return it.

        ``released=True`` executes the student version instead, whose solution blocks raise
        NotImplementedError.
        """
        kind = "released" if released else "reference"
        namespace: dict[str, Any] = {"__name__": f"{self.assignment}_{kind}"}
        for index, cell in enumerate(self.code_cells):
            source = fmt.without_solutions(cell.source) if released else cell.source
            exec(compile(source, f"<{self.path.name} cell {index}>", "exec"), namespace)
        return namespace


def load_solution(assignment: str) -> Solution:
    path = ROOT / "solutions" / assignment / f"{assignment}.py"
    notebook = fmt.read_source(path)
    solution = Solution(assignment=assignment, path=path, notebook=notebook)
    for cell in notebook.cells:
        if fmt.is_test_code(cell):
            grade_id = fmt.grade_id(cell)
            solution.test_cells[grade_id] = TestCell(grade_id, fmt.points(cell), cell.source)
        elif cell.cell_type == "code":
            solution.code_cells.append(cell)
    return solution


def run_cell(source: str, namespace: dict[str, Any], name: str = "test cell") -> None:
    """Execute ``source`` in ``namespace`` (which it may extend), as a notebook would."""
    exec(compile(source, f"<{name}>", "exec"), namespace)


def as_student(function: Callable[..., Any], name: str, **bugs: Any) -> Callable[..., Any]:
    """``function`` with some bug switches on, under the student's function name ``name``.

    The wrapper runs with the globals of the module that defines ``function``, as a function
    written in a notebook runs with the notebook's names: the hidden checks' traps replace
    names bound there (``from torch.autograd import grad``) as they would in a notebook.
    """

    def student_function(*args, **kwargs):
        return function(*args, **kwargs, **bugs)

    namespace = getattr(function, "__globals__", student_function.__globals__)
    code = student_function.__code__
    return types.FunctionType(code, namespace, name, None, student_function.__closure__)


def lecture_functions(path: Path) -> dict[str, Callable[..., Any]]:
    """The top-level functions that the code cells of the lecture ``path`` define, by name.

    The lecture is read with jupytext. Its import statements and function definitions are
    executed, nothing else: no model is trained. A definition that needs more of the lecture
    than its imports (a default argument computed by an earlier cell) is left out, as a
    student who copied that one cell could not run it either.
    """
    import jupytext

    namespace: dict[str, Any] = {"__name__": f"lecture_{path.stem}"}
    defined: dict[str, Callable[..., Any]] = {}
    for cell in jupytext.read(path).cells:
        if cell.cell_type != "code":
            continue
        for node in ast.parse(cell.source).body:
            if not isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef)):
                continue
            code = compile(ast.Module(body=[node], type_ignores=[]), f"<{path.name}>", "exec")
            try:
                exec(code, namespace)
            except Exception:  # noqa: BLE001 - see the docstring
                continue
            if isinstance(node, ast.FunctionDef):
                defined[node.name] = namespace[node.name]
    return defined
