"""Execute notebooks made from jupytext sources, with errors a person can act on.

Reading a source (:func:`read_source`) and writing a notebook are part of the nbgrader format
module, ``autograder.nbgrader_format``, because the grading command converts the assignment
sources too; they are re-exported here for the build.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from queue import Empty
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

from autograder.nbgrader_format import REPO, NotebookBuildError, read_source, write_notebook
from course.handin import private_kernel_channels

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
    started = time.perf_counter()
    try:
        _execute_with_private_channels(notebook, name, timeout_per_cell, cwd, kernel_env)
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


# Figures as PNGs with twice the pixels of the size they are shown at (IPython's "retina"
# format, which records that size in the output's metadata): sharp on high-density screens.
KERNEL_ARGUMENTS = ("--InlineBackend.figure_formats=retina",)
KERNEL_START_ATTEMPTS = 3
POLL_SECONDS = 1.0


def poll_in_short_steps(channel: Any, step: float = POLL_SECONDS) -> None:
    """Make ``channel.get_msg(timeout)`` wait in polls of at most ``step`` seconds.

    A reply can arrive without waking an asynchronous poll that is already waiting (seen after
    cells that display ipywidgets: nbclient issue 312); the client then sits until the poll's
    whole timeout, the cell's 300 s, runs out, and only then reads the reply. Each short poll
    looks at the socket afresh, so a waiting reply is read within ``step`` seconds. The overall
    timeout is unchanged: Empty is raised only when it has passed.
    """
    original = channel.get_msg

    async def get_msg(timeout: float | None = None) -> dict[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = step if deadline is None else max(0.0, min(step, deadline - time.monotonic()))
            try:
                return await original(timeout=wait)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    channel.get_msg = get_msg


# Kernel channels that no other process can take: Unix sockets in a private folder (the
# hand-in's, course.handin.private_kernel_channels). On Windows the kernel keeps TCP, and a
# build unit whose kernel fails to start is retried (_execute_with_private_channels).
kernel_channels_config = private_kernel_channels


def _execute_with_private_channels(
    notebook: nbformat.NotebookNode, name: str, timeout: int, cwd: Path, env: dict[str, str]
) -> None:
    for attempt in range(1, KERNEL_START_ATTEMPTS + 1):
        # A short directory name: a Unix socket path must stay under about 100 characters.
        with tempfile.TemporaryDirectory(prefix="ck") as directory:
            client = NotebookClient(
                notebook,
                timeout=timeout,
                kernel_name="python3",
                resources={"metadata": {"path": str(cwd)}},
                config=kernel_channels_config(Path(directory)),
                extra_arguments=list(KERNEL_ARGUMENTS),
            )
            client.on_notebook_start = lambda notebook, c=client: [
                poll_in_short_steps(channel) for channel in (c.kc.shell_channel, c.kc.iopub_channel)
            ]
            try:
                client.execute(env=env)
                return
            except RuntimeError as error:
                # Only a kernel that never started is retried: no cell has run yet.
                if "before replying to kernel_info" not in str(error):
                    raise
                if attempt == KERNEL_START_ATTEMPTS:
                    raise NotebookBuildError(
                        f"{name}: the kernel did not start in {attempt} attempts ({error})"
                    ) from error


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
