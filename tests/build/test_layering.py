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
