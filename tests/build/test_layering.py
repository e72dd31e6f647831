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
