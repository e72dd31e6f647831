"""Kernels that no other process can take the channels of: the JupyterLab of the student flow
(``tools.student_lab.running_lab``) starts its kernels, and nbgrader's Validate in it starts
its own, on Unix sockets in a private folder (``tools.student_lab.kernel_socket_options``).

Over TCP, a kernel started while others start beside it could find its port taken between
the moment it was picked and the moment it was bound, and die at once ("Address already in
use"): a Validate failed that way in a run of the suite. Here one server, run exactly as the
suite runs the student's, starts 30 kernels at once, and every one answers.
"""

from __future__ import annotations

import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
from jupyter_client import BlockingKernelClient

from tools.student_lab import Installation, running_lab

pytestmark = [
    pytest.mark.sandbox,  # a Jupyter server and its kernels: not in `make test-fast`
    pytest.mark.skipif(os.name == "nt", reason="ZeroMQ has no IPC transport on Windows"),
]

KERNELS = 30


def _answer(connection_file: Path, timeout: float = 240) -> dict:
    """Connect to a kernel through its connection file, run one line; what it printed."""
    client = BlockingKernelClient()
    client.load_connection_file(str(connection_file))
    client.start_channels(hb=False)  # a heartbeat missed on a busy machine is no death
    try:
        client.wait_for_ready(timeout=timeout)
        code = (
            "import json, os\nfrom ipykernel.connect import get_connection_info\n"
            "info = json.loads(get_connection_info())\n"
            "print(json.dumps({'pid': os.getpid(), 'transport': info['transport']}))"
        )
        outputs: list[dict] = []
        reply = client.execute_interactive(code, timeout=timeout, output_hook=outputs.append)
        assert reply["content"]["status"] == "ok", reply["content"]
        printed = [m["content"]["text"] for m in outputs if m["msg_type"] == "stream"]
        return json.loads("".join(printed))
    finally:
        client.stop_channels()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab started as the student flow starts one, on this venv (whose nbgrader
    enables Validate), in a folder of its own."""
    root = tmp_path_factory.mktemp("root")
    venv = Installation(bundle=root, venv=Path(sys.prefix), seconds=0.0, megabytes=0.0)
    with running_lab(venv, tmp_path_factory.mktemp("home")) as lab:
        yield lab


def test_thirty_kernels_started_at_once_all_answer_on_private_sockets(lab):
    with ThreadPoolExecutor(KERNELS) as pool:
        started = list(pool.map(lambda _: lab.request("/api/kernels", "POST"), range(KERNELS)))
    assert [status for status, _ in started] == [201] * KERNELS, started
    ids = [json.loads(body)["id"] for _, body in started]
    files = [lab.runtime / f"kernel-{kernel}.json" for kernel in ids]
    for file in files:
        info = json.loads(file.read_text())
        assert info["transport"] == "ipc", info
        assert info["ip"].startswith(str(lab.runtime)) and len(info["ip"]) + 3 < 100, info["ip"]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(_answer, files))
    assert len({a["pid"] for a in answers}) == KERNELS
    assert {a["transport"] for a in answers} == {"ipc"}
    log = lab.log.read_text()
    assert "Address already in use" not in log and "died" not in log.lower(), log[-3000:]
    lab.shut_down_kernels()
    for kernel in ids:
        lab.request(f"/api/kernels/{kernel}", "DELETE")


def test_validate_runs_its_kernel_on_a_private_socket(lab):
    # A notebook whose one test cell passes only in a kernel on a Unix socket.
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    cell = nbformat.v4.new_code_cell(
        "import json\nfrom ipykernel.connect import get_connection_info\n"
        "assert json.loads(get_connection_info())['transport'] == 'ipc'"
    )
    cell.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": "transport",
        "points": 1,
        "solution": False,
        "locked": True,
        "schema_version": 3,
    }
    notebook.cells = [cell]
    nbformat.write(notebook, lab.root / "transport.ipynb")
    status, body = lab.request("/assignments/validate?path=transport.ipynb", "POST")
    assert status == 200, body
    result = json.loads(body)
    assert result["success"] is True, result["value"]
    value = json.loads(result["value"]) if isinstance(result["value"], str) else result["value"]
    assert value == {}, value  # nothing failed, nothing changed: "Success!"
