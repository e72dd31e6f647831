"""A pytest plugin for ``-n N --dist loadgroup`` (pytest-xdist): which worker runs which tests.

Loaded by ``tests/conftest.py`` (``pytest_plugins``); it does nothing unless pytest runs with
``--dist loadgroup`` (``make test`` does). Then the tests are handed to the workers in
groups, each group to one worker:

- a test with an ``xdist_group`` mark is in the group it names: each JupyterLab of
  ``tests/test_student_flow.py``, each attack batch of ``tests/test_ta_grading.py``;
- any other test is in the group of its module, so a module's tests run in one worker, as they
  were written to (module fixtures made once, module-level state such as the website's page
  sizes seen by the test that reports them).

The named groups, the long chains, are handed out first, in the order they are collected;
then the modules, most tests first. A worker gets its next group when one test of its
current group is left (xdist waits for two), so a new group waits behind one long test at most.

Why not xdist's own ``loadgroup`` scheduler: it passes a test's group to the controller as a
suffix of the test's node id, which pytest 9.2 no longer lets a plugin change
(pytest-dev/pytest-xdist#1386): the marks are then silently ignored. Here each worker writes
its {node id: group} to a file in a folder the controller made (``$COURSE_XDIST_GROUPS``), and
the controller's scheduler reads it once every worker has collected.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

FOLDER_VARIABLE = "COURSE_XDIST_GROUPS"


def _grouping(config: pytest.Config) -> bool:
    """True where the tests are grouped: the controller of ``--dist loadgroup``, and its
    workers (xdist resets their ``dist`` and sets ``loadgroup``)."""
    return config.getoption("dist", "no") == "loadgroup" or bool(
        getattr(config.option, "loadgroup", False)
    )


def _explicit_group(item: pytest.Item) -> str | None:
    names = sorted(
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    )
    return "_".join(dict.fromkeys(names)) or None


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("dist", "no") == "loadgroup" and FOLDER_VARIABLE not in os.environ:
        folder = tempfile.mkdtemp(prefix="xdist-groups-")  # the controller: workers inherit it
        os.environ[FOLDER_VARIABLE] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


@pytest.hookimpl(trylast=True)  # after xdist's own hook, which may still rename node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _grouping(config) or not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    explicit, modules = [], {}
    groups = {}
    for item in items:
        group = _explicit_group(item)
        if group is not None:
            explicit.append(item)
        else:
            group = module_of(item.nodeid)
            modules.setdefault(group, []).append(item)
        groups[item.nodeid] = group
    by_size = sorted(modules.values(), key=len, reverse=True)  # stable: ties keep their order
    items[:] = explicit + [item for module in by_size for item in module]
    folder = os.environ.get(FOLDER_VARIABLE)
    if folder:
        target = Path(folder) / f"{os.environ['PYTEST_XDIST_WORKER']}.json"
        partial = target.with_suffix(".partial")
        partial.write_text(json.dumps(groups))
        partial.replace(target)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getoption("dist", "no") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        """xdist's scope scheduling, a scope being a group of :mod:`tools.xdist_groups`."""

        _groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                found = sorted(Path(os.environ[FOLDER_VARIABLE]).glob("*.json"))
                self._groups = json.loads(found[0].read_text()) if found else {}
            return self._groups.get(nodeid) or module_of(nodeid)

        def _reschedule(self, node) -> None:
            if node.shutting_down:
                return
            if not self.workqueue:
                node.shutdown()
                return
            if self._pending_of(self.assigned_work[node]) > 1:
                return
            self._assign_work_unit(node)

    config.option.loadscopereorder = False  # the workers' collection order is the queue's
    return GroupScheduling(config, log)
