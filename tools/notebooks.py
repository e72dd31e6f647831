"""Turn jupytext sources into notebooks and execute them, with errors a person can act on."""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

import jupytext
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

REPO = Path(__file__).resolve().parent.parent


class NotebookBuildError(RuntimeError):
    """A notebook could not be read, converted or executed; the message says which and why."""


def read_source(path: Path) -> nbformat.NotebookNode:
    """Read a jupytext ``py:percent`` source (or an .ipynb) as a notebook with stable cell ids.

    Cell ids are derived from the nbgrader ``grade_id`` when there is one and from the cell's
    position otherwise, so converting the same source twice gives byte-identical notebooks.
    """
    if not path.is_file():
        raise NotebookBuildError(f"{path}: no such notebook source")
    try:
        notebook = jupytext.read(path)
    except Exception as error:  # jupytext raises many kinds; all mean "unreadable source"
        raise NotebookBuildError(f"{path}: cannot be read as a notebook ({error})") from error
    seen: set[str] = set()
    for index, cell in enumerate(notebook.cells):
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        cell_id = grade_id or f"cell-{index:03d}"
        if cell_id in seen:
            raise NotebookBuildError(f"{path}: two cells share the id {cell_id!r}")
        seen.add(cell_id)
        cell["id"] = cell_id
    notebook.metadata.pop("jupytext", None)
    notebook.nbformat, notebook.nbformat_minor = 4, 5
    return notebook


def write_notebook(notebook: nbformat.NotebookNode, path: Path) -> None:
    """Validate and write ``notebook`` to ``path`` (creating its folder)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.validate(notebook)
    path.write_text(nbformat.writes(notebook) + "\n", encoding="utf-8")


@dataclass
class ExecutionResult:
    notebook: nbformat.NotebookNode
    seconds: float


def execute(
    notebook: nbformat.NotebookNode,
    *,
    name: str,
    cwd: Path,
    timeout_per_cell: int = 300,
    env: dict[str, str] | None = None,
) -> ExecutionResult:
    """Execute ``notebook`` top to bottom in a fresh kernel; raise NotebookBuildError on failure.

    The error names the notebook, the failing cell's position and the exception, so a build
    log points straight at the problem.
    """
    cwd.mkdir(parents=True, exist_ok=True)
    kernel_env = {
        **os.environ,
        **(env or {}),
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",
    }
    client = NotebookClient(
        notebook,
        timeout=timeout_per_cell,
        kernel_name="python3",
        resources={"metadata": {"path": str(cwd)}},
    )
    started = time.perf_counter()
    try:
        client.execute(env=kernel_env)
    except CellTimeoutError as error:
        raise NotebookBuildError(
            f"{name}: a cell ran longer than {timeout_per_cell} s ({error})"
        ) from error
    except DeadKernelError as error:
        raise NotebookBuildError(f"{name}: the kernel died ({error})") from error
    except CellExecutionError as error:
        position = _failing_cell(notebook)
        raise NotebookBuildError(f"{name}: cell {position} failed:\n{error}") from error
    seconds = time.perf_counter() - started
    drop_widget_views(notebook)
    return ExecutionResult(notebook, seconds)


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def drop_widget_views(notebook: nbformat.NotebookNode) -> None:
    """Remove live-widget outputs (sliders, tqdm bars) and their saved state.

    They need a running kernel: saved, they show a bar frozen at 0% or "model not found", and
    their state would make the static site fetch widget JavaScript from the internet. Figures
    and printed text stay.
    """
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.outputs if WIDGET_VIEW not in o.get("data", {})]


def _failing_cell(notebook: nbformat.NotebookNode) -> str:
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                return f"#{index} ({cell.get('id', '?')})"
    return "?"


def fingerprint(*paths: Path) -> str:
    """A hash of the given files' contents (folders: every .py file below them), for incremental builds."""
    digest = hashlib.sha256()
    for path in paths:
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            if "__pycache__" in file.parts:
                continue
            digest.update(str(file.relative_to(path.parent)).encode())
            digest.update(file.read_bytes())
    return digest.hexdigest()
