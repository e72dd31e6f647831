"""The grader's side of the kernel protocol: what a hostile kernel reply cannot make it do."""

from __future__ import annotations

import types

import pytest

from autograder import wire


class _Owner:
    calls: list[str] = []

    @staticmethod
    def routine():
        _Owner.calls.append("ran in the grader")


def test_a_reply_cannot_make_the_grader_call_a_routine_whose_trap_is_not_set():
    _Owner.calls.clear()
    session = types.SimpleNamespace(trap_targets=[(_Owner, "routine", "x.routine", _Owner.routine)])
    with pytest.raises(wire.StudentError, match="f called a routine it must not use"):
        wire.Session._spring_trap(session, "x.routine", "f")
    assert _Owner.calls == []


def test_a_reported_shortcut_fires_the_trap_the_check_has_set(monkeypatch):
    original = _Owner.routine

    def trap():
        raise AssertionError("f must work by hand; it called x.routine")

    monkeypatch.setattr(_Owner, "routine", trap)
    session = types.SimpleNamespace(trap_targets=[(_Owner, "routine", "x.routine", original)])
    with pytest.raises(AssertionError, match="it called x.routine"):
        wire.Session._spring_trap(session, "x.routine", "f")


@pytest.mark.parametrize("name", ["StopIteration", "StopAsyncIteration"])
def test_a_student_stop_iteration_cannot_end_a_check_early(name):
    assert name not in wire._MIRRORED
    with pytest.raises(wire.StudentError, match=name):
        wire._raise_student_error(name, "")


def test_ordinary_builtin_errors_are_mirrored_for_checks_that_expect_them():
    with pytest.raises(ValueError, match="max_norm must be positive"):
        wire._raise_student_error("ValueError", "max_norm must be positive")


def test_a_second_file_for_one_student_is_reported_not_a_reason_to_zero_them(tmp_path):
    from autograder.grade import collect

    (tmp_path / "s1.ipynb").write_text("first")
    (tmp_path / "s1").mkdir()
    (tmp_path / "s1" / "a1_rnn_bptt.ipynb").write_text("second")
    (tmp_path / "s2.ipynb").write_text("only")
    entries = {e.student: e for e in collect(tmp_path, ["a1_rnn_bptt"])}
    assert set(entries) == {"s1", "s2"}
    assert entries["s1"].problem == "" and len(entries["s1"].files) == 1
    assert entries["s1"].notes == [
        "two files for s1: graded s1/a1_rnn_bptt.ipynb, ignored s1.ipynb"
    ]
    assert entries["s2"].notes == []
