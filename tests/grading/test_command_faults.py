"""The grading command under a TA's accidents: a full disk, two commands on one output folder,
and the command killed in the middle of a batch (``kill -9``, as the out-of-memory killer or a
cancelled job does it)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from autograder.platform import errors, grade, judging, state
from tools.notebooks import REPO

ASSIGNMENT = "a1_rnn_bptt"
RELEASE = REPO / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"


def _submission(folder: Path, student: str, first_cell: str = "") -> Path:
    """The student version of Assignment 1 as ``student``'s file, ``first_cell`` run first."""
    notebook = nbformat.read(RELEASE, as_version=4)
    if first_cell:
        notebook.cells.insert(0, nbformat.v4.new_code_cell(first_cell))
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, folder / f"{student}.ipynb")
    return folder


def _command(folder: Path, out: Path, *options: str) -> list[str]:
    return grade.command_line(ASSIGNMENT, folder, out, "--workers", "1", "--quiet", *options)


def test_a_second_command_on_the_same_folder_refuses_and_names_the_first(tmp_path):
    folder = _submission(tmp_path / "in", "alice")
    out = tmp_path / "out"
    with state.output_lock(out):  # the first command, holding the folder
        second = subprocess.run(
            _command(folder, out), cwd=REPO, capture_output=True, text=True, timeout=120
        )
    assert second.returncode == errors.EXIT_FAILED, second.stderr
    said = second.stderr.strip().splitlines()
    assert len(said) == 1, second.stderr  # one line, no traceback
    assert f"{out} is being graded by another command (process {os.getpid()} on" in said[0]
    assert not (out / "course").exists()  # it touched nothing
    with state.output_lock(out):  # and the lock is free again once the first has ended
        pass


def test_the_lock_is_dropped_when_its_holder_dies(tmp_path):
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [
            *grade.command_line("x", tmp_path, out)[:1],
            "-c",
            "import sys, time; from pathlib import Path; from autograder.platform import state\n"
            "with state.output_lock(Path(sys.argv[1])):\n    print('held', flush=True); "
            "time.sleep(600)",
            str(out),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(errors.GradingError, match=f"process {holder.pid} on"):
            with state.output_lock(out):
                pass
    finally:
        holder.kill()
        holder.wait()
    with state.output_lock(out):  # killed with SIGKILL: the folder is free
        pass


def test_state_is_replaced_whole_or_not_at_all(tmp_path, monkeypatch):
    path = tmp_path / "state.json"
    state.write_atomically(path, json.dumps({"records": {"alice": 1}}))

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        state.write_atomically(path, json.dumps({"records": {}}))
    assert json.loads(path.read_text()) == {"records": {"alice": 1}}
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # no temporary file left


@pytest.fixture
def small_disk(tmp_path):
    """A 64 MB tmpfs, mounted for the test (the suite runs as root, as the root sandbox does)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.sandbox
def test_a_full_disk_is_said_in_one_line_and_loses_nothing(tmp_path, small_disk):
    folder = _submission(tmp_path / "in", "alice")
    out = small_disk / "out"
    first = subprocess.run(
        _command(folder, out), cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert first.returncode in (errors.EXIT_OK, errors.EXIT_MANUAL, errors.EXIT_LOOK), first.stderr
    grades = (out / "grades.csv").read_text()
    assert "alice" in json.loads((out / "state.json").read_text())["records"]
    filler = small_disk / "filler"
    with filler.open("wb", buffering=0) as file:  # fill the disk to the last page
        for chunk in (1 << 20, 4096):
            try:
                while True:
                    file.write(b"\0" * chunk)
            except OSError:
                pass
    again = subprocess.run(
        _command(folder, out, "--force"), cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert again.returncode == errors.EXIT_NO_SPACE, again.stderr
    said = again.stderr.strip().splitlines()
    assert len(said) == 1 and said[0].startswith("error: no space left on the device"), said
    assert "what was graded before is kept" in said[0]
    # nothing earlier is lost: the state and the grades are the last run's, whole
    assert json.loads((out / "state.json").read_text())["records"].keys() == {"alice"}
    assert (out / "grades.csv").read_text() == grades
    filler.unlink()  # space again: the same command goes on and finishes
    last = subprocess.run(
        _command(folder, out, "--force"), cwd=REPO, capture_output=True, text=True, timeout=600
    )
    assert last.returncode in (errors.EXIT_OK, errors.EXIT_MANUAL, errors.EXIT_LOOK), last.stderr
    assert (out / "grades.csv").read_text() == grades


def _said(out: Path) -> str:
    return (out / "grades.csv").read_text() if (out / "grades.csv").exists() else "no grades"


def _processes_under(folder: Path) -> list[str]:
    """Processes whose command line, working folder or root lies under ``folder``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            places = [os.readlink(entry / "cwd"), os.readlink(entry / "root")]
        except OSError:  # gone, or not ours to read
            continue
        if str(folder) in line or any(p.startswith(str(folder)) for p in places):
            found.append(f"{entry.name}: {line[:120]}")
    return found


def _is_kernel(listed: str) -> bool:
    """A line of :func:`_processes_under` that is a kernel itself, not its launchers (setpriv,
    unshare and the shell, whose command lines name the kernel too)."""
    line = listed.split(": ", 1)[1]
    return "ipykernel_launcher" in line and not line.startswith(("setpriv", "unshare", "/bin/sh"))


def test_only_the_kernel_folders_of_processes_that_are_gone_are_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    mine = judging.make_scratch()  # this process's: alive
    (mine / "work").mkdir()
    dead = subprocess.Popen(["true"])
    dead.wait()
    gone, reused, unreadable = (tmp_path / f"kernels-{n}" for n in ("gone", "reused", "unread"))
    for folder in (gone, reused, unreadable):
        (folder / "run" / "work").mkdir(parents=True)
    owner = judging.OWNER_SUFFIX
    gone.with_name(gone.name + owner).write_text(f"{dead.pid} 12345\n")
    reused.with_name(reused.name + owner).write_text(f"{os.getpid()} 1\n")  # another start
    unreadable.with_name(unreadable.name + owner).write_text("half-writ")
    assert judging.remove_abandoned() == [gone, reused]
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == sorted([mine.name, mine.name + owner, unreadable.name, unreadable.name + owner])
    judging.remove_scratch(mine)
    assert not mine.exists() and not mine.with_name(mine.name + owner).exists()


@pytest.mark.sandbox
def test_killing_the_command_kills_its_workers_and_kernels(tmp_path):
    folder = tmp_path / "in"
    for student in ("alice", "bob"):
        _submission(folder, student, "import time\ntime.sleep(600)")
    out = tmp_path / "out"
    kernels = Path(tempfile.mkdtemp(prefix="gk"))  # short: socket paths have a length limit
    argv = _command(folder, out, "--timeout", "600", "--deadline", "900")
    argv[argv.index("--workers") + 1] = "2"
    command = subprocess.Popen(
        argv,
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(kernels)},
        stdout=(tmp_path / "stdout.txt").open("w"),
        stderr=subprocess.STDOUT,
    )
    try:
        started = time.monotonic()
        # both kernels running in the sandbox (each chrooted under the batch's TMPDIR), then a
        # few seconds for their cells to start sleeping: the kill lands on running kernels,
        # not on one still being launched (a kill -9 between unshare's fork and its child's
        # prctl(PR_SET_PDEATHSIG) can orphan that child: util-linux does not check for it)
        while len([p for p in _processes_under(kernels) if _is_kernel(p)]) < 2:
            assert command.poll() is None, f"the command ended first: {_said(out)}"
            assert time.monotonic() - started < 180, _processes_under(kernels)
            time.sleep(0.5)
        time.sleep(3)
        before = _processes_under(kernels)
        command.send_signal(signal.SIGKILL)
        command.wait(timeout=30)
        deadline = time.monotonic() + 30
        while (_processes_under(kernels) or _processes_under(out)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _processes_under(kernels), (before, _processes_under(kernels))
        assert not _processes_under(out), _processes_under(out)  # its workers and recorder
        # the killed run could not remove its kernels' folders; the next run does, first
        left = sorted(p.name for p in kernels.iterdir())
        assert len([name for name in left if name.endswith(judging.OWNER_SUFFIX)]) == 2, left
        (tmp_path / "again").mkdir()
        (tmp_path / "again" / "carol.ipynb").write_text("not a notebook")  # judged, no kernel
        again = subprocess.run(
            _command(tmp_path / "again", tmp_path / "out2"),
            cwd=REPO,
            env={**os.environ, "TMPDIR": str(kernels)},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert again.returncode in (errors.EXIT_OK, errors.EXIT_LOOK), again.stderr
        assert "removed 2" in again.stderr and str(kernels) in again.stderr, again.stderr
        assert not list(kernels.iterdir()), sorted(p.name for p in kernels.iterdir())
    finally:
        if command.poll() is None:
            command.kill()
        for process in _processes_under(kernels):  # what a failure left behind
            with contextlib.suppress(OSError):
                os.kill(int(process.partition(":")[0]), signal.SIGKILL)
        shutil.rmtree(kernels, ignore_errors=True)
