"""Make submissions of an assignment for testing the grading: honest and hard-coded.

An *honest* submission is the student version answered with the reference solution (the
untouched student version is the *blank* one); a *deleted-test* one is the reference with its
first visible test cell deleted. A *hard-coded* submission is the strongest cheap cheat: it runs the reference solution on the
visible tests' inputs, records what each graded function returned (or raised), and submits
functions that replay those records whatever they are called with. It passes every visible
test, so the hidden tests alone must take its points away.
"""

from __future__ import annotations

import ast
import base64
import copy
import pickle
from pathlib import Path
from typing import Any

import nbformat

from autograder.nbgrader_format import (
    grade_id,
    has_hidden_tests,
    is_solution_code,
    is_test_code,
    nbgrader_meta,
    without_hidden_tests,
    without_solution_markers,
)


def honest_submission(
    source: nbformat.NotebookNode, release: nbformat.NotebookNode
) -> nbformat.NotebookNode:
    """The student version with every solution cell (code and written) answered from the source."""
    answered = copy.deepcopy(release)
    reference = {grade_id(c): c for c in source.cells if grade_id(c)}
    for cell in answered.cells:
        if nbgrader_meta(cell).get("solution"):
            cell.source = without_solution_markers(reference[grade_id(cell)].source)
    return answered


def honest_folder(course: Path, assignment: str, folder: Path, honest: list[str],
                  blank: list[str] = ()) -> Path:  # fmt: skip
    """``folder`` (made here) with ``NAME.ipynb`` for each student of ``honest`` (an honest
    submission) and of ``blank`` (the student version untouched), from ``course``'s source and
    release of ``assignment`` (an nbgrader course folder)."""
    source, release = (
        nbformat.read(course / kind / assignment / f"{assignment}.ipynb", as_version=4)
        for kind in ("source", "release")
    )
    folder.mkdir(parents=True)
    for name in honest:
        nbformat.write(honest_submission(source, release), folder / f"{name}.ipynb")
    for name in blank:
        nbformat.write(release, folder / f"{name}.ipynb")
    return folder


def defined_functions(code: str) -> list[str]:
    """Names of the top-level functions that ``code`` defines."""
    return [node.name for node in ast.parse(code).body if isinstance(node, ast.FunctionDef)]


class _Recorder:
    """Wraps a function, remembering each outcome: ("return", value) or ("raise", exception)."""

    def __init__(self, function):
        self.function, self.outcomes = function, []

    def __call__(self, *args, **kwargs):
        try:
            value = self.function(*args, **kwargs)
        except Exception as error:
            self.outcomes.append(("raise", error))
            raise
        self.outcomes.append(("return", copy.deepcopy(value)))
        return value


def record_visible_outcomes(source: nbformat.NotebookNode) -> dict[str, list[tuple[str, Any]]]:
    """Run the reference notebook in this process (hidden tests stripped) and record outcomes."""
    namespace: dict[str, Any] = {"__name__": "__reference__"}
    recorders: dict[str, _Recorder] = {}
    for cell in source.cells:
        if cell["cell_type"] != "code":
            continue
        exec(compile(without_hidden_tests(cell["source"]), "<reference>", "exec"), namespace)
        if is_solution_code(cell):
            for name in defined_functions(cell["source"]):
                recorders[name] = namespace[name] = _Recorder(namespace[name])
    return {name: recorder.outcomes for name, recorder in recorders.items()}


def _replay_code(names: list[str], outcomes: dict[str, list]) -> str:
    """Code defining each function in ``names`` as a replay of its recorded outcomes, in order."""
    lines = ["import base64, itertools, pickle"]
    for name in names:
        payload = base64.b64encode(pickle.dumps(outcomes.get(name, []))).decode()
        lines += [
            "",
            f"_replay_{name} = itertools.cycle(pickle.loads(base64.b64decode({payload!r})))",
            "",
            f"def {name}(*args, **kwargs):",
            f"    kind, value = next(_replay_{name}, ('raise', NotImplementedError()))",
            "    if kind == 'raise':",
            "        raise value",
            "    return value",
        ]
    return "\n".join(lines) + "\n"


def hardcoded_submission(
    source: nbformat.NotebookNode, release: nbformat.NotebookNode
) -> nbformat.NotebookNode:
    """The student version with every solution cell replaced by replayed visible-test answers."""
    outcomes = record_visible_outcomes(source)
    submission = copy.deepcopy(release)
    source_cells = {c.get("id"): c for c in source.cells}
    for cell in submission.cells:
        original = source_cells.get(cell.get("id"))
        if original is not None and is_solution_code(original):
            cell["source"] = _replay_code(defined_functions(original["source"]), outcomes)
    return submission


def without_first_visible_test(source: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The reference with its first visible test cell deleted: nbgrader must put it back
    (``OverwriteCells.add_missing_cells``) and grade it, not give a silent zero."""
    deleted = copy.deepcopy(source)
    first_visible = next(
        i for i, c in enumerate(deleted.cells) if is_test_code(c) and not has_hidden_tests(c.source)
    )
    del deleted.cells[first_visible]
    return deleted


def write(notebook: nbformat.NotebookNode, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(nbformat.writes(notebook), encoding="utf-8")
    return path
