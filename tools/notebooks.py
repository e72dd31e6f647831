"""Execute notebooks made from jupytext sources, with errors a person can act on.

Reading a source (:func:`read_source`) and writing a notebook are part of the nbgrader format
module, ``autograder.nbgrader_format``, because the grading command converts the assignment
sources too; they are re-exported here for the build.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

from autograder.nbgrader_format import REPO, NotebookBuildError, read_source, write_notebook

__all__ = [
    "REPO",
    "NotebookBuildError",
    "ExecutionResult",
    "execute",
    "drop_widget_views",
    "read_source",
    "write_notebook",
]


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
