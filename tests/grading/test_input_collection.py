"""What the TA command makes of its input, before any grading: every notebook-named file or zip
member is one student's row or a row that says why it cannot be graded, nothing outside the
input is read, nothing blocks, and no two students share an id (autograder/platform/inputs.py:
collect)."""

from __future__ import annotations

import io
import os
import signal
import struct
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from autograder.platform.errors import GradingError
from autograder.platform.inputs import collect, student_id
from tests.messages import raises

NOTEBOOK = "a1_rnn_bptt"


def _collect(path: Path, tmp_path: Path):
    """collect(), with an alarm: reading the input must never block."""
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("blocked")))
    signal.alarm(20)
    try:
        found = collect(path, [NOTEBOOK], tmp_path / "inbox")
    finally:
        signal.alarm(0)
    return {entry.student: entry for entry in found.entries}, found.skipped


def test_links_and_special_files_are_rows_never_opened(tmp_path):
    folder = tmp_path / "in"
    (folder / "s1").mkdir(parents=True)
    (folder / "s1" / f"{NOTEBOOK}.ipynb").write_text("s1's notebook")
    secret = tmp_path / "secret.txt"
    secret.write_text("the instructor's solutions")
    (folder / "link_out.ipynb").symlink_to(secret)
    (folder / "link_zero.ipynb").symlink_to("/dev/zero")
    (folder / "link_inside.ipynb").symlink_to(folder / "s1" / f"{NOTEBOOK}.ipynb")
    (folder / "linked_folder").symlink_to(tmp_path, target_is_directory=True)
    (folder / "s2.ipynb").mkdir()  # a folder named like a notebook: walked, not read
    (folder / "s2.ipynb" / "s3.ipynb").write_text("s3's notebook")
    os.mkfifo(folder / "pipe.ipynb")
    (folder / "notes.txt").write_text("not a notebook")
    (folder / ".ipynb_checkpoints").mkdir()
    (folder / ".ipynb_checkpoints" / "s4.ipynb").write_text("a checkpoint")
    entries, skipped = _collect(folder, tmp_path)
    assert sorted(entries) == ["link_inside", "link_out", "link_zero", "pipe", "s1", "s3"]
    for name in ("link_out", "link_zero", "link_inside"):
        assert entries[name].status == "refused link" and entries[name].files == {}
        assert "symbolic link" in entries[name].problem and name in entries[name].problem
    assert (
        entries["pipe"].status == "special file" and "not a regular file" in entries["pipe"].problem
    )
    assert entries["s1"].files[NOTEBOOK].read_text() == "s1's notebook"
    assert entries["s3"].files[NOTEBOOK].read_text() == "s3's notebook"
    assert entries["s1"].problem == "" and entries["s1"].origin == f"s1/{NOTEBOOK}.ipynb"
    assert sorted(skipped) == [".ipynb_checkpoints/s4.ipynb", "linked_folder", "notes.txt"]
    inbox = b"".join(p.read_bytes() for p in (tmp_path / "inbox").iterdir())
    assert b"solutions" not in inbox  # nothing was read through a link
    rows = {row["input"]: row for row in collect(folder, [NOTEBOOK], tmp_path / "in2").inputs}
    everything = {
        path.relative_to(folder).as_posix()
        for path in folder.rglob("*")
        if not path.is_dir() or path.is_symlink()
    }
    assert set(rows) == everything - {"s2.ipynb"}  # every file a row; s2.ipynb is a folder
    assert rows["notes.txt"]["status"] == "not a notebook"
    assert rows[".ipynb_checkpoints/s4.ipynb"]["status"] == "hidden"
    assert rows["link_out.ipynb"] == {
        "input": "link_out.ipynb",
        "student": "link_out",
        "status": "refused link",
        "message": "is a symbolic link; only files inside the input folder are graded",
    }
    assert rows["s1/a1_rnn_bptt.ipynb"]["status"] == "read"


def test_a_file_over_the_size_limit_is_a_row_and_is_not_kept(tmp_path, monkeypatch):
    import autograder.platform.inputs as inputs

    monkeypatch.setattr(inputs, "MAX_FILE_BYTES", 1000)
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "big.ipynb").write_bytes(b"x" * 1001)
    (folder / "small.ipynb").write_bytes(b"x" * 1000)
    entries, _ = _collect(folder, tmp_path)
    assert entries["big"].status == "invalid notebook" and "larger than" in entries["big"].problem
    assert entries["big"].files == {} and entries["small"].files[NOTEBOOK].stat().st_size == 1000


def _zip(members: dict[str, bytes], method=zipfile.ZIP_STORED) -> bytearray:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return bytearray(buffer.getvalue())


def _patch(data: bytearray, name: str, **fields) -> None:
    """Set header fields of member ``name`` in its local header and the central directory."""
    encoded = name.encode()
    local = data.find(b"PK\x03\x04" + b"\x00" * 0)  # noqa: B018 - headers are found below
    for signature, offsets in ((b"PK\x03\x04", (6, 8, 22)), (b"PK\x01\x02", (8, 10, 24))):
        start = 0
        while (local := data.find(signature, start)) >= 0:
            start = local + 4
            name_at = local + (30 if signature == b"PK\x03\x04" else 46)
            if data[name_at : name_at + len(encoded)] != encoded:
                continue
            flags_at, method_at, size_at = (local + o for o in offsets)
            if "flags" in fields:
                struct.pack_into("<H", data, flags_at, fields["flags"])
            if "method" in fields:
                struct.pack_into("<H", data, method_at, fields["method"])
            if "size" in fields:
                struct.pack_into("<I", data, size_at, fields["size"])


def test_every_zip_member_is_a_row_whatever_is_wrong_with_it(tmp_path):
    good = b'{"cells": []}' * 50
    data = _zip(
        {
            f"./s1/{NOTEBOOK}.ipynb": good,
            f"s2\\{NOTEBOOK}.ipynb": good,
            "bad_crc.ipynb": good,
            "encrypted.ipynb": good,
            "unknown_method.ipynb": good,
            "lying_size.ipynb": good,
            "../escape.ipynb": good,
            "s5/../../up.ipynb": good,
            "__MACOSX/s6.ipynb": good,
            "readme.md": b"hello",
        }
    )
    crc_at = data.find(b"bad_crc.ipynb") + len("bad_crc.ipynb") + 10
    data[crc_at] ^= 0xFF  # a byte of the stored member's data
    _patch(data, "encrypted.ipynb", flags=1)
    _patch(data, "unknown_method.ipynb", method=99)
    _patch(data, "lying_size.ipynb", size=10)
    path = tmp_path / "batch.zip"
    path.write_bytes(bytes(data))
    entries, skipped = _collect(path, tmp_path)
    assert entries["s1"].files[NOTEBOOK].read_bytes() == good and entries["s1"].problem == ""
    assert entries["s2"].files[NOTEBOOK].read_bytes() == good
    for name, says in [
        ("bad_crc", "CRC"),
        ("encrypted", "encrypted"),
        ("unknown_method", "compression"),
        ("lying_size", "BadZipFile"),
        ("escape", "leaves the archive"),
        ("up", "leaves the archive"),
    ]:
        entry = entries[name]
        assert entry.status == "unreadable zip member" and says in entry.problem, entry
        assert entry.files == {}
    assert sorted(skipped) == ["__MACOSX/s6.ipynb", "readme.md"]


def test_a_zip_is_read_a_member_at_a_time(tmp_path, monkeypatch):
    import autograder.platform.inputs as inputs

    monkeypatch.setattr(inputs, "MAX_FILE_BYTES", 8 << 20)
    zeros = b"\0" * (20 << 20)
    members = {f"s{i}.ipynb": zeros for i in range(4)} | {"ok.ipynb": b"\0" * (4 << 20)}
    path = tmp_path / "bomb.zip"
    path.write_bytes(bytes(_zip(members, zipfile.ZIP_DEFLATED)))
    del zeros, members
    tracemalloc.start()
    entries, _ = _collect(path, tmp_path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert all(entries[f"s{i}"].status == "invalid notebook" for i in range(4))
    assert "larger than 8 MB" in entries["s0"].problem
    assert entries["ok"].files[NOTEBOOK].stat().st_size == 4 << 20
    assert peak < 6 << 20, f"collecting held {peak >> 20} MB at once"


def test_an_unreadable_zip_is_the_command_s_error_with_the_reason(tmp_path):
    path = tmp_path / "broken.zip"
    data = _zip({"s1.ipynb": b"{}"})
    path.write_bytes(bytes(data[: len(data) // 2]) + bytes(data[-22:]))  # a truncated archive
    with raises(GradingError, "broken.zip", "cannot be read|neither a folder"):
        _collect(path, tmp_path)


@pytest.mark.parametrize(
    "names",
    [
        ["z_uni_学生", "z_uni_老师"],
        ["élise", "lise"],
        ["a b", "a_b", "a.b", "a-b"],
        ["x" * 100 + "1", "x" * 100 + "2", "x" * 64],
        ["\u00d6mer", "O\u0308mer"],  # composed and decomposed: two names, two ids
        ["..", "unnamed", ""],
    ],
)
def test_student_ids_never_merge_two_names(names):
    ids = [student_id(name) for name in names]
    assert len(set(ids)) == len(names), ids
    assert all(0 < len(i) <= 73 and "/" not in i and not i.startswith(".") for i in ids), ids
    assert [student_id(name) for name in names] == ids  # the same name, the same id


def test_readable_names_are_their_own_ids_and_others_keep_a_readable_part():
    assert student_id("z_uni_学生") == "z_uni_学生" and student_id("élise") == "élise"
    assert student_id("jane.doe@uni.edu") == "jane.doe@uni.edu"
    assert student_id("a b").startswith("a_b-") and len(student_id("a b")) == 12
    assert student_id("x" * 100).startswith("x" * 64 + "-")


def test_a_folder_of_unicode_names_gives_every_student_a_row(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    names = ["z_uni_学生", "z_uni_老师", "élise", "lise", "y" * 120]
    for name in names:
        (folder / f"{name}.ipynb").write_text(name)
    entries, _ = _collect(folder, tmp_path)
    assert sorted(entries) == sorted(student_id(name) for name in names)
    assert {e.files[NOTEBOOK].read_text() for e in entries.values()} == set(names)
    long = entries[student_id("y" * 120)]
    assert long.origin == "y" * 120 + ".ipynb"  # the original name, shown in grades.csv's file


def test_the_grading_s_own_output_inside_the_input_is_not_input(tmp_path):
    folder = tmp_path / "in"
    (folder / "out" / "course").mkdir(parents=True)
    (folder / "out" / "course" / "s9.ipynb").write_text("nbgrader's copy")
    (folder / "s1.ipynb").write_text("s1")
    found = collect(folder, [NOTEBOOK], folder / "out" / "inbox")
    assert [e.student for e in found.entries] == ["s1"]


@pytest.mark.sandbox
def test_a_zip_with_bad_members_is_graded_and_every_member_is_a_row(tmp_path):
    """Through the TA command: a zip with an honest notebook, a duplicate, a member with a bad
    CRC, one whose path leaves the archive and a stray file. The batch runs to the end; each
    member is a row of inputs.csv, each student a row of grades.csv, and the exit code says
    that some need a look."""
    import csv
    import subprocess

    from autograder.platform.errors import EXIT_LOOK
    from autograder.platform.grade import command_line
    from tools.notebooks import REPO

    blank = (REPO / "assignments" / NOTEBOOK / f"{NOTEBOOK}.ipynb").read_bytes()
    data = _zip(
        {
            f"./s1/{NOTEBOOK}.ipynb": blank,
            "s1.ipynb": blank,
            "bad_crc.ipynb": blank,
            "../up.ipynb": blank,
            "readme.md": b"exported by the learning platform",
        }
    )
    crc_at = data.find(b"bad_crc.ipynb") + len("bad_crc.ipynb") + 100
    data[crc_at] ^= 0xFF
    batch = tmp_path / "batch.zip"
    batch.write_bytes(bytes(data))
    out = tmp_path / "out"
    argv = command_line(NOTEBOOK, batch, out, "--workers", "1", "--timeout", "60", "--quiet")
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == EXIT_LOOK, result.stderr[-3000:]
    with (out / "grades.csv").open(newline="") as handle:
        grades = {row["student"]: row for row in csv.DictReader(handle)}
    with (out / "inputs.csv").open(newline="") as handle:
        inputs = {row["input"]: row for row in csv.DictReader(handle)}
    assert set(grades) == {"s1", "bad_crc", "up"}, grades
    assert grades["s1"]["status"] == "duplicate upload" and grades["s1"]["total"] == "0.0"
    assert grades["s1"]["file"] == f"s1/{NOTEBOOK}.ipynb"
    for student in ("bad_crc", "up"):
        assert grades[student]["status"] == "unreadable zip member", grades[student]
        assert grades[student]["total"] == ""
    assert "CRC" in grades["bad_crc"]["message"]
    assert {name: row["status"] for name, row in inputs.items()} == {
        f"s1/{NOTEBOOK}.ipynb": "read",
        "s1.ipynb": "duplicate upload",
        "bad_crc.ipynb": "unreadable zip member",
        "up.ipynb": "unreadable zip member",
        "readme.md": "not a notebook",
    }


def test_nbgrader_collect_s_layout_is_read_as_it_is(tmp_path):
    """``submitted/STUDENT/ASSIGNMENT/NAME.ipynb``, as ``nbgrader collect`` files submissions:
    the student is the folder above the assignment's; another assignment's notebook, or one not
    named like this assignment's, is a row that says so and is not graded; the student's row
    names the notebook passed over."""
    submitted = tmp_path / "course" / "submitted"
    for student in ("ada", "bob"):
        folder = submitted / student / NOTEBOOK
        folder.mkdir(parents=True)
        (folder / f"{NOTEBOOK}.ipynb").write_text(f"{student}'s notebook")
        (folder / "timestamp.txt").write_text("2026-11-20 10:00:00.000000 UTC")
    (submitted / "ada" / NOTEBOOK / "Untitled.ipynb").write_text("a scratch notebook")
    other = submitted / "bob" / "a2_lstm_gru"
    other.mkdir()
    (other / "a2_lstm_gru.ipynb").write_text("bob's assignment 2")
    found = collect(submitted, [NOTEBOOK], tmp_path / "inbox", NOTEBOOK)
    entries = {entry.student: entry for entry in found.entries}
    assert sorted(entries) == ["ada", "bob"]
    for student in ("ada", "bob"):
        assert entries[student].files[NOTEBOOK].read_text() == f"{student}'s notebook"
        assert entries[student].origin == f"{student}/{NOTEBOOK}/{NOTEBOOK}.ipynb"
    rows = {row["input"]: row for row in found.inputs}
    scratch = rows[f"ada/{NOTEBOOK}/Untitled.ipynb"]
    assert scratch["status"] == "other notebook" and scratch["student"] == "ada"
    assert f"not one of the assignment's notebooks ({NOTEBOOK}.ipynb)" in scratch["message"]
    assert any("Untitled.ipynb" in note for note in entries["ada"].notes), entries["ada"].notes
    second = rows["bob/a2_lstm_gru/a2_lstm_gru.ipynb"]
    assert second["status"] == "other assignment" and second["student"] == ""
    assert second["message"] == f"not graded: a submission of a2_lstm_gru, not of {NOTEBOOK}"
    assert entries["bob"].notes == []
    assert rows[f"bob/{NOTEBOOK}/timestamp.txt"]["status"] == "exchange file"  # nbgrader's own
    assert f"bob/{NOTEBOOK}/timestamp.txt" not in found.skipped  # not "not graded" in the summary
    (submitted / "notes.txt").write_text("a file of the TA's")
    again = collect(submitted, [NOTEBOOK], tmp_path / "inbox2", NOTEBOOK)
    assert {r["input"]: r["status"] for r in again.inputs}["notes.txt"] == "not a notebook"
