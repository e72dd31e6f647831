"""Every public function and class of the course package is exercised by some test."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import course

TESTS = Path(__file__).parent


def _public_api() -> list[str]:
    names = []
    for info in pkgutil.iter_modules(course.__path__):
        module = importlib.import_module(f"course.{info.name}")
        for name, obj in vars(module).items():
            if name.startswith("_") or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if obj.__module__ == module.__name__:
                names.append(f"{info.name}.{name}")
    return sorted(names)


def test_every_public_function_has_a_test():
    corpus = "\n".join(
        p.read_text() for p in TESTS.glob("test_*.py") if p.name != Path(__file__).name
    )
    api = _public_api()
    assert len(api) >= 10, api
    untested = [
        name for name in api if not re.search(rf"\b{re.escape(name.split('.')[1])}\b", corpus)
    ]
    assert not untested, f"public names with no test mentioning them: {untested}"
