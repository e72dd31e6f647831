"""Dependencies run one way: tests -> tools -> autograder -> course.

``course`` is what students get; ``autograder`` grades with it and is imported by the
grading command without the build tools (``tools`` is not an installed package); ``tools``
builds the course with both. A module may import only from the layers below its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LAYERS = ["course", "autograder", "tools", "tests"]  # each may import the ones before it


def _imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("layer", LAYERS[:-1])
def test_a_layer_imports_nothing_above_it(layer):
    above = set(LAYERS[LAYERS.index(layer) + 1 :])
    wrong = {
        str(path.relative_to(REPO)): sorted(_imported_packages(path) & above)
        for path in sorted((REPO / layer).rglob("*.py"))
        if "__pycache__" not in path.parts
    }
    wrong = {path: names for path, names in wrong.items() if names}
    assert not wrong, f"{layer} must not import {sorted(above)}: {wrong}"


def test_the_check_sees_an_upward_import(tmp_path):
    module = tmp_path / "bad.py"
    module.write_text("def f():\n    from tools.build import BUILD\n    import tests.x\n")
    assert _imported_packages(module) == {"tools", "tests"}


def _imported_modules(path: Path) -> set[str]:
    """The absolute dotted names that ``path`` imports (``from a.b import c``: ``a.b`` and
    ``a.b.c``, since ``c`` may be a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_only_the_command_imports_the_grading_platform():
    """Inside ``autograder``, the per-assignment checks (``autograder.hidden``) and the modules
    the build shares (nbgrader's format, the fingerprint) import nothing of
    ``autograder.platform``; only ``python -m autograder`` (``__main__``) starts it."""
    outside = [
        path
        for path in sorted((REPO / "autograder").rglob("*.py"))
        if "platform" not in path.relative_to(REPO / "autograder").parts
        and "__pycache__" not in path.parts
        and path.name != "__main__.py"
    ]
    assert REPO / "autograder" / "hidden" / "shortcuts.py" in outside
    wrong = {
        str(path.relative_to(REPO)): sorted(
            name for name in _imported_modules(path) if name.startswith("autograder.platform")
        )
        for path in outside
    }
    wrong = {path: names for path, names in wrong.items() if names}
    assert not wrong, f"the platform is imported outside it: {wrong}"


def test_the_platform_check_sees_every_way_to_import_it(tmp_path):
    module = tmp_path / "bad.py"
    module.write_text(
        "import autograder.platform.judge\nfrom autograder import platform\n"
        "def f():\n    from autograder.platform.sandbox import Limits\n"
    )
    names = {n for n in _imported_modules(module) if n.startswith("autograder.platform")}
    assert names == {
        "autograder.platform.judge",
        "autograder.platform",
        "autograder.platform.sandbox",
        "autograder.platform.sandbox.Limits",
    }


# The grading command's modules by job, each importing only the ones before it (besides the
# platform's other modules): the command line last, the errors first.
COMMAND_MODULES = [
    "errors",
    "record",
    "inputs",
    "course_folder",
    "state",
    "judging",
    "results",
    "jobs",
    "pipeline",
    "grade",
]
COMMAND_MODULE_LINES = 420  # each is a job one can read whole: a module past it is split


def _imports_above(path: Path, name: str) -> list[str]:
    """The command's modules after ``name`` in :data:`COMMAND_MODULES` that ``path`` imports."""
    above = COMMAND_MODULES[COMMAND_MODULES.index(name) + 1 :]
    imported = _imported_modules(path)
    return [
        module
        for module in above
        if f"autograder.platform.{module}" in imported
        or f"autograder.platform.{module}" in {n.rsplit(".", 1)[0] for n in imported}
    ]


def test_the_grading_command_modules_import_only_those_before_them():
    platform = REPO / "autograder" / "platform"
    assert {p.stem for p in platform.glob("*.py")} >= set(COMMAND_MODULES)
    wrong = {name: _imports_above(platform / f"{name}.py", name) for name in COMMAND_MODULES}
    wrong = {name: above for name, above in wrong.items() if above}
    assert not wrong, f"a module of the grading command imports one after it: {wrong}"


def test_the_order_check_sees_an_import_of_a_later_module(tmp_path):
    module = tmp_path / "state.py"
    module.write_text(
        "from autograder.platform.inputs import Entry\n"
        "def f():\n    from autograder.platform.pipeline import grade\n"
        "import autograder.platform.grade\n"
    )
    assert _imports_above(module, "state") == ["pipeline", "grade"]


def test_the_grading_command_modules_stay_short():
    lengths = {
        name: len((REPO / "autograder" / "platform" / f"{name}.py").read_text().splitlines())
        for name in COMMAND_MODULES
    }
    long = {name: n for name, n in lengths.items() if n > COMMAND_MODULE_LINES}
    assert not long, f"modules over {COMMAND_MODULE_LINES} lines: split them by job: {long}"
