"""tools/xdist_groups.py, the plugin behind `make test`'s workers: on a small suite run with
``-n 2 --dist loadgroup``, a module's tests share a worker, a named group's tests share a worker
across modules, and the named group is handed out first."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from tools.notebooks import REPO
from tools.xdist_groups import MEASURED_FILE, SECONDS_FILE, expected_seconds, ordered, update

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
    measured = json.loads((tmp_path / MEASURED_FILE).read_text())  # each group's time
    assert sorted(measured) == sorted(workers), measured
    assert all(isinstance(s, float) and s >= 0 for s in measured.values()), measured


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


def _items(*nodeids: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(nodeid=n) for n in nodeids]


def test_the_longest_groups_are_queued_first_then_named_groups_then_modules_by_size():
    lab = _items("tests/a.py::test_lab", "tests/b.py::test_lab")
    modules = {
        "tests/small.py": _items("tests/small.py::test_x"),
        "tests/many.py": _items(*(f"tests/many.py::test_{i}" for i in range(3))),
        "tests/slow.py": _items("tests/slow.py::test_x"),
    }
    groups = {i.nodeid: "lab" for i in lab} | {
        i.nodeid: m for m, found in modules.items() for i in found
    }
    queue = [i.nodeid for i in ordered(lab, modules, groups, {"tests/slow.py": 300.0})]
    assert queue == [
        "tests/slow.py::test_x",  # a known time: first
        "tests/a.py::test_lab",  # a named group, its tests together
        "tests/b.py::test_lab",
        "tests/many.py::test_0",  # then the modules, most tests first
        "tests/many.py::test_1",
        "tests/many.py::test_2",
        "tests/small.py::test_x",
    ]
    by_time = ordered(lab, modules, groups, {"lab": 9.0, "tests/small.py": 10.0})
    assert [i.nodeid for i in by_time][:3] == [
        "tests/small.py::test_x",
        "tests/a.py::test_lab",
        "tests/b.py::test_lab",
    ]


def test_the_measured_times_are_copied_for_a_fresh_clone(tmp_path):
    (tmp_path / "tests").mkdir()
    assert expected_seconds(tmp_path) == {}  # no file: nothing known
    (tmp_path / SECONDS_FILE).write_text("[1, 2]")
    assert expected_seconds(tmp_path) == {}  # not a table of times
    (tmp_path / SECONDS_FILE).write_text(json.dumps({"old": 5, "tests/a.py": 1}))
    (tmp_path / "build").mkdir()
    (tmp_path / MEASURED_FILE).write_text(json.dumps({"tests/a.py": 12.6, "lab": 40.2}))
    assert update(tmp_path) == {"lab": 40, "old": 5, "tests/a.py": 13}
    assert expected_seconds(tmp_path) == {"lab": 40.0, "old": 5.0, "tests/a.py": 13.0}


def test_every_group_with_a_time_is_a_group_of_this_suite():
    """A renamed module or group leaves a stale time, which orders nothing: rerun
    ``python -m tools.xdist_groups update`` after a full ``make test``, or delete the line."""
    named = set()
    for path in (REPO / "tests").rglob("test_*.py"):
        for found in re.finditer(r'xdist_group\(f?"([\w{}]+)"', path.read_text()):
            named.add(re.sub(r"\{\w+\}", r"\\d+", found.group(1)))
    known = expected_seconds(REPO)
    assert len(known) > 20, "tests/group_seconds.json lists too few groups"
    stale = [
        group
        for group in known
        if not (group.endswith(".py") and (REPO / group).is_file())
        and not any(re.fullmatch(pattern, group) for pattern in named)
    ]
    assert not stale, f"{SECONDS_FILE} names groups this suite does not have: {stale}"
