"""A hint in the student's kernels: a name that the notebook's first cell defines says so.

A student who opens an assignment and runs a test cell (or their own function) before the
first cell gets ``NameError: name 'np' is not defined``, which does not say what to do. With
this IPython extension loaded, the error starts with one line that does::

    NameError: name 'np' is not defined: run the first cell (imports) first

The extension knows the notebook from ``__session__``, the path that Jupyter's server gives
each kernel it starts for a notebook; it reads the notebook's first code cell as saved and
collects the names that cell binds. Other NameErrors are shown as usual.

The student bundle loads it in every kernel of the student's environment, through
``etc/ipython/ipython_kernel_config.json`` (installed with the course package); nothing else
loads it. Standard library only: the grader's traps import every module of the package.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["HINT", "first_cell_names", "load_ipython_extension"]

HINT = "run the first cell (imports) first"
_RED, _BOLD, _RESET = "\x1b[31m", "\x1b[1m", "\x1b[0m"


def first_cell_names(notebook: str | os.PathLike) -> set[str]:
    """The names that the first code cell of ``notebook`` (an .ipynb file) binds at its top
    level: imports, assignments, functions and classes. Empty if the file cannot be read."""
    try:
        cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
        source = next(c["source"] for c in cells if c.get("cell_type") == "code")
        tree = ast.parse("".join(source) if isinstance(source, list) else source)
    except (OSError, ValueError, KeyError, TypeError, StopIteration, SyntaxError):
        return set()
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


def _show_name_error(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset=None):
    """IPython's custom handler for NameError: the usual traceback, led by the hint when the
    missing name is one the notebook's first cell defines."""
    stb = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
    name = getattr(value, "name", None)
    notebook = shell.user_ns.get("__session__") or os.environ.get("JPY_SESSION_NAME")
    if name and notebook and name in first_cell_names(notebook):
        headline = f"{_RED}{_BOLD}NameError{_RESET}{_BOLD}: name '{name}' is not defined: {HINT}"
        stb = [headline + _RESET, *stb]
    shell._showtraceback(etype, value, stb)  # what IPython's own showtraceback ends with
    return stb


def load_ipython_extension(shell: Any) -> None:
    """Called by IPython for ``%load_ext course.kernel_hints`` or the kernel's configuration."""
    shell.set_custom_exc((NameError,), _show_name_error)


def unload_ipython_extension(shell: Any) -> None:
    shell.set_custom_exc((), None)
