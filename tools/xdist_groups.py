"""A pytest plugin for ``-n N --dist loadgroup`` (pytest-xdist): which worker runs which tests.

Loaded by ``tests/conftest.py`` (``pytest_plugins``); it does nothing unless pytest runs with
``--dist loadgroup`` (``make test`` does). Then the tests are handed to the workers in
groups, each group to one worker:

- a test with an ``xdist_group`` mark is in the group it names: each JupyterLab of
  ``tests/test_student_flow.py``, each attack batch of ``tests/test_ta_grading.py``;
- any other test is in the group of its module, so a module's tests run in one worker, as they
  were written to (module fixtures made once, module-level state such as the website's page
  sizes seen by the test that reports them).

The longest groups are handed out first, so that no long group starts when the others are
nearly done and leaves the cores idle at the end: the groups named in ``tests/group_seconds.json``
(``{group: seconds}``, each group's time in a full run, its setup included), longest first; then
the other named groups, in the order they are collected; then the other modules, most tests
first. A worker gets its next group when one test of its current group is left (xdist waits for
two), so a new group waits behind one long test at most.

Each run with ``--dist loadgroup`` measures its groups' times (the sum of their tests' setup, call
and teardown) into ``build/group_seconds.json``, merged with what earlier runs measured there;
``python -m tools.xdist_groups update`` copies them into ``tests/group_seconds.json``, where a
fresh clone finds them. The file only orders the queue: a stale or missing time changes when a
group starts, never what runs.

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
SECONDS_FILE = Path("tests") / "group_seconds.json"  # under the rootdir: the ordering's hint
MEASURED_FILE = Path("build") / "group_seconds.json"  # under the rootdir: what runs measured


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
        config.pluginmanager.register(_Timer(config.rootpath), "course-group-timer")


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
    items[:] = ordered(explicit, modules, groups, expected_seconds(config.rootpath))
    folder = os.environ.get(FOLDER_VARIABLE)
    if folder:
        target = Path(folder) / f"{os.environ['PYTEST_XDIST_WORKER']}.json"
        partial = target.with_suffix(".partial")
        partial.write_text(json.dumps(groups))
        partial.replace(target)


def collected_groups() -> dict[str, str]:
    """{node id: group} as the workers collected them (every worker writes the same; the
    first file is read); {} where no worker has written one."""
    folder = os.environ.get(FOLDER_VARIABLE)
    found = sorted(Path(folder).glob("*.json")) if folder else []
    return json.loads(found[0].read_text()) if found else {}


def expected_seconds(root: Path) -> dict[str, float]:
    """{group: seconds} from ``root/tests/group_seconds.json``; {} where it is missing or
    unreadable (the queue is then ordered as if no time were known)."""
    try:
        found = json.loads((root / SECONDS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {str(k): float(v) for k, v in found.items() if isinstance(v, (int, float))}


def ordered(
    explicit: list[pytest.Item],
    modules: dict[str, list[pytest.Item]],
    groups: dict[str, str],
    seconds: dict[str, float],
) -> list[pytest.Item]:
    """The items, a group's together: the groups with a known time, longest first; then the
    other named groups in collection order; then the other modules, most tests first."""
    members: dict[str, list[pytest.Item]] = {}
    for item in explicit:
        members.setdefault(groups[item.nodeid], []).append(item)
    named = list(members)
    members.update(modules)
    known = sorted((g for g in members if g in seconds), key=lambda g: -seconds[g])
    rest = [g for g in named if g not in seconds] + sorted(
        (g for g in modules if g not in seconds), key=lambda g: -len(modules[g])
    )  # sorted is stable: ties keep their order
    return [item for group in known + rest for item in members[group]]


class _Timer:
    """On the controller: each test's time (setup, call and teardown), summed by group at the
    end of the run and merged into ``build/group_seconds.json``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        groups = collected_groups()
        if not groups or not self.seconds:
            return
        by_group: dict[str, float] = {}
        for nodeid, seconds in self.seconds.items():
            group = groups.get(nodeid) or module_of(nodeid)
            by_group[group] = by_group.get(group, 0.0) + seconds
        target = self.root / MEASURED_FILE
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            earlier = json.loads(target.read_text()) if target.is_file() else {}
            earlier.update({g: round(s, 1) for g, s in by_group.items()})
            partial = target.with_suffix(".partial")
            partial.write_text(json.dumps(dict(sorted(earlier.items())), indent=1) + "\n")
            partial.replace(target)
        except (OSError, ValueError):
            pass  # a hint for the next ordering; the run's result does not depend on it


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
                self._groups = collected_groups()
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


def update(root: Path) -> dict[str, float]:
    """Copy the measured times (``build/group_seconds.json``) into ``tests/group_seconds.json``,
    whole seconds, keeping the groups measured in no run yet; return what was written."""
    measured = json.loads((root / MEASURED_FILE).read_text())
    kept = expected_seconds(root)
    kept.update({g: float(s) for g, s in measured.items()})
    written = {g: round(s) for g, s in sorted(kept.items())}
    (root / SECONDS_FILE).write_text(json.dumps(written, indent=1) + "\n")
    return written


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["update"]:
        sys.exit("usage: python -m tools.xdist_groups update  (after a full `make test`)")
    from tools.notebooks import REPO

    if not (REPO / MEASURED_FILE).is_file():
        sys.exit(f"{REPO / MEASURED_FILE} is missing: run `make test` first, which measures it")
    written = update(REPO)
    print(f"{REPO / SECONDS_FILE}: {len(written)} groups, {sum(written.values()):,.0f} s in all")
