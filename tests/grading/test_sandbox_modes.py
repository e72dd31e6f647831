"""The sandbox's mode follows the user: root, rootless (user namespaces), or a clear refusal.

The attack suite runs in both modes (tests/grading/test_ta_grading.py); these tests check the choice
itself, as root and as an ordinary user (:mod:`unprivileged`), and the refusal on a machine
where ordinary users may not create user namespaces: exit code 3, a message that names the
setting, nothing graded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.platform.grade import command_line
from autograder.platform.sandbox import ROOT, sandbox_mode
from tests.grading import unprivileged
from tools.notebooks import REPO

pytestmark = pytest.mark.sandbox

MODE_OF_THIS_USER = [
    sys.executable,
    "-c",
    "from autograder.platform.sandbox import *; print(sandbox_mode())",
]


@pytest.fixture
def ta_folder():
    folder = unprivileged.own_folder("ta-")
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _as_user(argv: list[str], folder: Path, **options) -> subprocess.CompletedProcess:
    return subprocess.run(
        unprivileged.command(argv, **options),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=unprivileged.environment(folder, folder),
    )


def test_root_gets_the_root_mode():
    assert os.geteuid() == 0, "the test suite runs as root (CI does)"
    assert sandbox_mode() == ROOT


def test_an_ordinary_user_gets_the_rootless_mode(ta_folder):
    result = _as_user(MODE_OF_THIS_USER, ta_folder)
    assert result.stdout.strip() == "rootless", result.stderr[-2000:]


def test_without_user_namespaces_an_ordinary_user_is_refused(ta_folder):
    (ta_folder / "in").mkdir()
    (ta_folder / "in" / "s1.ipynb").write_text("{}")
    unprivileged.give(ta_folder)
    argv = command_line("a1_rnn_bptt", ta_folder / "in", ta_folder / "out")
    result = _as_user(argv, ta_folder, user_namespaces=False)
    assert result.returncode == 3, (result.stdout[-2000:], result.stderr[-2000:])
    message = result.stderr
    assert "needs root or unprivileged user namespaces" in message, message
    assert "user.max_user_namespaces = 0" in message, message
    assert f"uid {unprivileged.UID}" in message, message
    assert not (ta_folder / "out").exists()  # refused before anything, never unsandboxed
    # the same user, where user namespaces are allowed, is not refused
    assert _as_user(MODE_OF_THIS_USER, ta_folder).stdout.strip() == "rootless"


def test_the_helper_reaches_a_folder_under_a_closed_one():
    """A clone under a folder closed to others (such as /root) stays reachable by the user."""
    closed = Path(tempfile.mkdtemp(prefix="closed-"))  # mode 700, root's
    try:
        inner = closed / "repo"
        inner.mkdir()
        (inner / "file").write_text("reached")
        os.chmod(inner, 0o755)
        os.chmod(inner / "file", 0o644)
        cat = ["cat", str(inner / "file")]
        blocked = subprocess.run(
            unprivileged.command(cat, paths=[]), capture_output=True, text=True, timeout=60
        )
        reached = subprocess.run(
            unprivileged.command(cat, paths=[inner]), capture_output=True, text=True, timeout=60
        )
    finally:
        shutil.rmtree(closed)
    assert blocked.returncode != 0 and "Permission denied" in blocked.stderr, blocked
    assert reached.stdout == "reached", reached
