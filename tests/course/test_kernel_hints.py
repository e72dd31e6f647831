"""The student's kernels: a name from the notebook's first cell, used before that cell has run,
says to run it (course.kernel_hints)."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from course.kernel_hints import HINT, first_cell_names, load_ipython_extension
from tools.notebooks import kernel_channels_config

ANSI = re.compile(r"\x1b\[[0-9;]*m")

FIRST_CELL = (
    "import numpy as np\n"
    "import torch.nn.functional as F\n"
    "from course.checks import assert_close as close\n"
    "SEED, (a, b) = 3, (1, 2)\n"
    "def helper():\n    inner = 1\n"
    "np.set_printoptions(precision=4)\n"
)


def _saved_notebook(tmp_path, first: str = FIRST_CELL):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# An assignment"),
        nbformat.v4.new_code_cell(first),
        nbformat.v4.new_code_cell("answer = helper()"),
    ]
    path = tmp_path / "a0.ipynb"
    nbformat.write(notebook, path)
    return path


def test_the_names_the_first_code_cell_binds(tmp_path):
    names = first_cell_names(_saved_notebook(tmp_path))
    assert names == {"np", "F", "close", "SEED", "a", "b", "helper"}
    assert first_cell_names(_saved_notebook(tmp_path, "%matplotlib inline\nx = 1")) == set()
    assert first_cell_names(tmp_path / "missing.ipynb") == set()
    (tmp_path / "broken.ipynb").write_text('{"cells": [')
    assert first_cell_names(tmp_path / "broken.ipynb") == set()


def test_a_kernel_says_to_run_the_first_cell_for_its_names_only(tmp_path):
    """A real ipykernel started for the saved notebook (as Jupyter's server starts one, with
    the notebook's path in JPY_SESSION_NAME) and the extension loaded as the bundle loads it."""
    cells = [
        "%load_ext course.kernel_hints",
        "np.zeros(2)",  # the first cell's import, not run
        "def mine():\n    return close(1, 1)\n\nmine()",  # inside the student's own function
        "not_from_the_first_cell + 1",
        "1 / 0",
    ]
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    sockets = Path(tempfile.mkdtemp(prefix="ck"))  # short: a Unix socket's path is limited
    client = NotebookClient(
        notebook, kernel_name="python3", allow_errors=True, timeout=60,
        config=kernel_channels_config(sockets),  # no TCP port to race for
    )  # fmt: skip
    try:
        client.execute(env={"JPY_SESSION_NAME": str(_saved_notebook(tmp_path))})
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
    errors = [
        [ANSI.sub("", line) for line in output.traceback]
        for cell in notebook.cells[1:]
        for output in cell.outputs
        if output.output_type == "error"
    ]
    assert len(errors) == 4, errors
    np_error, close_error, other, zero = errors
    assert np_error[0] == f"NameError: name 'np' is not defined: {HINT}"
    assert close_error[0] == f"NameError: name 'close' is not defined: {HINT}"
    assert HINT not in "\n".join(other) and "not_from_the_first_cell" in other[-1]
    assert HINT not in "\n".join(zero) and "ZeroDivisionError" in zero[-1]
    assert np_error[-1].startswith("NameError"), "the usual traceback follows the hint"


def test_loading_and_unloading_the_extension_sets_and_clears_the_handler():
    from course import kernel_hints

    class Shell:  # what IPython's shell offers the extension (a real one is the kernel above)
        def set_custom_exc(self, exceptions, handler):
            self.handled = (exceptions, handler)

    shell = Shell()
    load_ipython_extension(shell)
    assert shell.handled == ((NameError,), kernel_hints._show_name_error)
    kernel_hints.unload_ipython_extension(shell)
    assert shell.handled == ((), None)
