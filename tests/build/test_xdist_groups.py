"""tools/xdist_groups.py, the plugin behind `make test`'s workers: on a small suite run with
``-n 2 --dist loadgroup``, a module's tests share a worker, a named group's tests share a worker
across modules, and the named group is handed out first."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tools.notebooks import REPO

MODULE = """
import pytest

@pytest.mark.parametrize("i", range(6))
def test_plain(i):
    pass

@pytest.mark.xdist_group("together")
@pytest.mark.parametrize("i", range(3))
def test_grouped(i):
    pass
"""


def _run(folder: Path, *options: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYTEST_XDIST_WORKER", None)  # this test may itself run in a worker
    env.pop("COURSE_XDIST_GROUPS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tools.xdist_groups", "-p", "no:cacheprovider"]
        + ["-v", "-o", "addopts=", *options],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_modules_and_named_groups_each_run_in_one_worker(tmp_path):
    for name in ("test_one.py", "test_two.py", "test_three.py"):
        (tmp_path / name).write_text(MODULE)
    result = _run(tmp_path, "-n", "2", "--dist", "loadgroup")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    ran = re.findall(r"^\[(gw\d+)\] \[ *\d+%\] PASSED (\S+)", result.stdout, re.M)
    assert len(ran) == 27, result.stdout[-3000:]
    workers: dict[str, set[str]] = {}
    for worker, nodeid in ran:
        group = "together" if "test_grouped" in nodeid else nodeid.split("::")[0]
        workers.setdefault(group, set()).add(worker)
    assert sorted(workers) == ["test_one.py", "test_three.py", "test_two.py", "together"]
    assert all(len(found) == 1 for found in workers.values()), workers
    first = [nodeid for worker, nodeid in ran if worker == workers["together"].copy().pop()]
    assert "test_grouped" in first[0], first  # the named group is handed out first


def test_without_loadgroup_the_plugin_does_nothing(tmp_path):
    (tmp_path / "test_one.py").write_text(MODULE)
    result = _run(tmp_path)
    assert result.returncode == 0 and "9 passed" in result.stdout, result.stdout[-3000:]


def test_every_test_of_a_grading_batch_is_in_that_batch_s_group():
    """A test that uses the root batch outside its xdist group would grade the batch again in
    another worker (minutes): each one names the group."""
    import inspect

    from tests.grading import test_ta_grading as module

    for name, function in vars(module).items():
        if not name.startswith("test_") or not callable(function):
            continue
        parameters = inspect.signature(function).parameters
        groups = [m.args[0] for m in getattr(function, "pytestmark", []) if m.name == "xdist_group"]
        if "root_batch" in parameters:
            assert groups == ["ta_root"], name
        if "rootless_batch" in parameters:
            assert groups == ["ta_rootless"], name
