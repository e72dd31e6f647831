"""``python -m course handin``: what it refuses, what it reports, and the file it writes.

The assignment is Assignment 1 as released (``assignments/``), in a course folder of the test's
own; an honest submission is that release answered from the reference solution.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import nbgrader_format as nbg
from autograder.platform.inputs import student_id
from course import handin
from tests.messages import raises
from tools.notebooks import REPO
from tools.submissions import honest_submission

ASSIGNMENT = "a1_rnn_bptt"
RELEASED = REPO / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"


@pytest.fixture
def folder(tmp_path) -> Path:
    """A course folder holding Assignment 1 as released, and Assignment 2's folder."""
    for name in (ASSIGNMENT, "a2_lstm_gru"):
        shutil.copytree(REPO / "assignments" / name, tmp_path / "assignments" / name)
    return tmp_path


def _notebook(folder: Path) -> Path:
    return folder / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"


def _answered() -> nbformat.NotebookNode:
    source = nbg.read_source(nbg.source_files(ASSIGNMENT)[0])
    return honest_submission(source, nbformat.read(RELEASED, as_version=4))


def test_the_release_names_its_assignment_and_graded_cells():
    released = nbformat.read(RELEASED, as_version=4).metadata["course"]
    assert released["assignment"] == ASSIGNMENT
    assert "test_forward_visible" in released["cells"] and "rnn_forward" in released["cells"]


def test_an_answered_notebook_is_written_without_outputs(folder):
    answered = _answered()
    answered.cells[1].outputs = [nbformat.v4.new_output("stream", text="kept locally\n")]
    nbformat.write(answered, _notebook(folder))
    report = handin.handin("a1", "jdoe7", course_folder=folder, execute=False)
    assert (report.missing, report.edited, report.unanswered) == ([], [], [])
    assert report.written == folder / "handin" / ASSIGNMENT / "jdoe7.ipynb"
    written = nbformat.read(report.written, as_version=4)
    assert all(not c.get("outputs") for c in written.cells if c.cell_type == "code")
    assert [c.source for c in written.cells] == [c.source for c in answered.cells]
    assert written.metadata["course"]["assignment"] == ASSIGNMENT
    assert report.lines()[-1] == f"hand in this file: {report.written}"
    assert any("not run (--no-run)" in line for line in report.lines())


def test_running_it_lists_each_failing_visible_test_in_one_line(folder):
    report = handin.handin(ASSIGNMENT, "jdoe7", course_folder=folder)  # the blank release
    assert report.ran
    failing = dict(report.failing)
    assert {"test_forward_visible", "test_backward_visible", "test_clip_visible"} <= set(failing)
    assert all(message.startswith("NotImplementedError") for message in failing.values()), failing
    assert all("\n" not in message for message in failing.values())
    assert set(report.unanswered) >= {"rnn_forward", "rnn_backward", "clip_by_global_norm"}
    text = "\n".join(report.lines())
    assert "visible test(s) fail:" in text and "not answered yet: " in text
    assert report.written.is_file()  # partial work can be handed in


def test_deleted_and_edited_graded_cells_are_named(folder):
    notebook = _answered()
    notebook.cells = [c for c in notebook.cells if nbg.grade_id(c) != "test_forward_visible"]
    backward = next(c for c in notebook.cells if nbg.grade_id(c) == "test_backward_visible")
    backward.source += "\nassert True  # weakened"
    nbformat.write(notebook, _notebook(folder))
    report = handin.handin(ASSIGNMENT, "jdoe7", course_folder=folder, execute=False)
    assert report.missing == ["test_forward_visible"]
    assert report.edited == ["test_backward_visible"]


@pytest.mark.parametrize(
    "damage, says",
    [
        ("not json", ("not a valid notebook",)),
        ("other assignment", ("a2_lstm_gru", "a1_rnn_bptt")),
        ("no metadata", ("release",)),
    ],
)
def test_what_cannot_be_handed_in_is_refused_with_the_reason(folder, damage, says):
    target = _notebook(folder)
    if damage == "not json":
        target.write_text(target.read_text()[:500])
    elif damage == "other assignment":
        shutil.copyfile(folder / "assignments" / "a2_lstm_gru" / "a2_lstm_gru.ipynb", target)
    else:
        notebook = nbformat.read(target, as_version=4)
        del notebook.metadata["course"]
        nbformat.write(notebook, target)
    with raises(handin.HandinError, *says):
        handin.handin(ASSIGNMENT, "jdoe7", course_folder=folder, execute=False)
    assert not (folder / "handin").exists()


def test_unknown_assignments_and_folders_list_what_there_is(folder, tmp_path_factory):
    with raises(handin.HandinError, "'a9'", "a1_rnn_bptt, a2_lstm_gru"):
        handin.find_notebook("a9", folder)
    with raises(handin.HandinError, "no assignments/", "course folder"):
        handin.find_notebook("a1", tmp_path_factory.mktemp("elsewhere"))


@pytest.mark.parametrize("name", ["jdoe7", "jane.doe@uni.example", "ana-lópez", "学生01", "x"])
def test_a_good_id_is_the_one_the_ta_command_keeps(name):
    assert handin.check_student_id(name) == name
    assert student_id(name) == name


@pytest.mark.parametrize("name", ["", "jane doe", "../x", "_x", "x.", "a" * 65, "x/y", "x\\y"])
def test_a_bad_id_is_refused(name):
    with pytest.raises(handin.HandinError, match="use your course id"):
        handin.check_student_id(name)


def test_the_command_line_reports_and_exits(folder):
    nbformat.write(_answered(), _notebook(folder))
    command = [sys.executable, "-m", "course", "handin", "a1", "--student", "jdoe7", "--no-run"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # the course package, from another folder
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith(f"hand in this file: handin/{ASSIGNMENT}/jdoe7.ipynb")
    refused = subprocess.run(
        [*command[:-3], "--student", "bad id"], cwd=folder, capture_output=True, text=True,
        timeout=120, env=env,
    )  # fmt: skip
    assert refused.returncode == 2 and refused.stdout.startswith("course handin: --student")
    assert "Traceback" not in refused.stdout + refused.stderr


def test_on_the_course_hub_it_says_to_submit_in_the_assignment_list(
    folder, tmp_path, monkeypatch, capsys
):
    nbformat.write(_answered(), _notebook(folder))
    monkeypatch.chdir(folder)
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    monkeypatch.setenv("JUPYTERHUB_USER", "jdoe7")  # what the hub sets in every user's server
    monkeypatch.setenv("SEQCOURSE_EXCHANGE", str(exchange))  # deploy/jupyterhub's hook
    assert handin.main(["a1", "--student", "jdoe7", "--no-run"]) == 0
    said = capsys.readouterr().out
    assert "Assignment List" in said and str(exchange) in said and "Nothing was written" in said
    assert not (folder / "handin").exists()
    # --file writes it anyway; a hub without the exchange (no such folder) is an ordinary one
    assert handin.main(["a1", "--student", "jdoe7", "--no-run", "--file"]) == 0
    assert (folder / "handin" / ASSIGNMENT / "jdoe7.ipynb").is_file()
    shutil.rmtree(folder / "handin")
    monkeypatch.setenv("SEQCOURSE_EXCHANGE", str(tmp_path / "none"))
    assert handin.main(["a1", "--student", "jdoe7", "--no-run"]) == 0
    assert (folder / "handin" / ASSIGNMENT / "jdoe7.ipynb").is_file()
    monkeypatch.delenv("JUPYTERHUB_USER")  # not on a hub at all
    monkeypatch.setenv("SEQCOURSE_EXCHANGE", str(exchange))
    assert handin.hub_exchange() is None


def test_the_handed_in_file_keeps_every_graded_cell_of_the_release(folder):
    nbformat.write(_answered(), _notebook(folder))
    report = handin.handin(ASSIGNMENT, "jdoe7", course_folder=folder, execute=False)
    written = json.loads(report.written.read_text())
    released = nbformat.read(RELEASED, as_version=4)
    ids = [c["metadata"].get("nbgrader", {}).get("grade_id") for c in written["cells"]]
    assert [i for i in ids if i] == released.metadata["course"]["cells"]
    assert written["metadata"]["kernelspec"] == released.metadata["kernelspec"]


def test_the_pieces_read_strip_and_report(tmp_path):
    broken = tmp_path / "broken.ipynb"
    broken.write_bytes(b"\xff\xfe not text")
    with raises(handin.HandinError, "broken.ipynb", "cannot be read|not a valid"):
        handin.read_notebook(broken)
    answered = _answered()
    answered.cells[1].outputs = [nbformat.v4.new_output("stream", text="x\n")]
    answered.cells[1].execution_count = 3
    clean = handin.without_outputs(answered)
    assert clean.cells[1].outputs == [] and clean.cells[1].execution_count is None
    assert answered.cells[1].outputs, "the student's own notebook keeps its outputs"
    report = handin.Report(RELEASED, ASSIGNMENT, failing=[("test_x", "ValueError: shape")])
    report.ran = True
    assert report.lines()[1:] == ["  1 visible test(s) fail:", "    test_x: ValueError: shape"]


def test_the_commands_import_nothing_heavy():
    """The graders' traps import every module of the course package in each check process:
    the command modules must not pull in nbformat (seconds) or torch when imported."""
    code = (
        "import sys, course.__main__, course.doctor, course.handin; "
        "print(sorted(m for m in ('nbformat', 'torch', 'jsonschema', 'nbclient') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


def test_private_kernel_channels_are_unix_sockets_in_the_folder_given(tmp_path):
    config = handin.private_kernel_channels(tmp_path)
    if os.name == "nt":  # ZeroMQ has no Unix sockets there: TCP, as configured by default
        assert not config
    else:
        assert config.KernelManager.transport == "ipc"
        assert config.KernelManager.ip == str(tmp_path / "kernel")
