"""Every public function and class of the course package is exercised by some test."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import course

TESTS = Path(__file__).resolve().parents[1]  # tests/, with every layer's folder


def _public_api() -> list[str]:
    """``module.name`` of every public function and class defined in a public course module."""
    names = []
    for info in pkgutil.walk_packages(course.__path__, prefix="course."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if obj.__module__ == module.__name__:
                names.append(f"{info.name}.{name}")
    return sorted(names)


def test_every_public_function_has_a_test():
    corpus = "\n".join(
        p.read_text() for p in TESTS.rglob("test_*.py") if p.name != Path(__file__).name
    )
    api = _public_api()
    assert len(api) >= 10, api
    assert "course.analysis.lm.bits_per_char" in api, "the walk must reach the subpackages"
    words = set(re.findall(r"\w+", corpus))  # a name is mentioned where it is a whole word
    untested = [name for name in api if name.rsplit(".", 1)[1] not in words]
    assert not untested, f"public names with no test mentioning them: {untested}"
