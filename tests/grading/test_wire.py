"""The grader's side of the kernel protocol: what a hostile kernel reply cannot make it do."""

from __future__ import annotations

import ast
import builtins
import json
import sys
import types

import numpy as np
import pytest

from autograder.platform import wire
from autograder.platform.sandbox import Limits, Outcome
from tests.messages import raises


class _Owner:
    calls: list[str] = []

    @staticmethod
    def routine():
        _Owner.calls.append("ran in the grader")


def test_a_reply_cannot_make_the_grader_call_a_routine_whose_trap_is_not_set():
    _Owner.calls.clear()
    session = types.SimpleNamespace(trap_targets=[(_Owner, "routine", "x.routine", _Owner.routine)])
    with raises(wire.StudentError, r"\bf\b", "routine", "must not use"):
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
    from autograder.platform.inputs import collect

    (tmp_path / "s1.ipynb").write_text("first")
    (tmp_path / "s1").mkdir()
    (tmp_path / "s1" / "a1_rnn_bptt.ipynb").write_text("second")
    (tmp_path / "s2.ipynb").write_text("only")
    entries = {
        e.student: e for e in collect(tmp_path, ["a1_rnn_bptt"], tmp_path / ".inbox").entries
    }
    assert set(entries) == {"s1", "s2"}
    assert entries["s1"].problem == "" and len(entries["s1"].files) == 1
    assert entries["s1"].notes == [
        "two files for s1: graded s1/a1_rnn_bptt.ipynb, ignored s1.ipynb"
    ]
    assert entries["s2"].notes == []


# -- attacks on the wire: a fake kernel answers each request as a hostile student could --------


class _Kernel:
    """Stands in for SandboxKernel: ``answer(request)`` gives the outcome of each call."""

    def __init__(self, answer):
        self.answer, self.restarts, self.requests = answer, 0, []
        self.limits = Limits(cell_timeout=5)

    def alive(self) -> bool:
        return True

    def run_hidden(self, code: str, timeout: float, mimetype: str) -> Outcome:
        assert mimetype == wire.MIMETYPE
        if code.startswith("exec(compile("):  # installing the bridge
            return Outcome("ok")
        prefix = "__call_bridge__.call("
        assert code.startswith(prefix) and code.endswith(")")
        request = json.loads(ast.literal_eval(code[len(prefix) : -1]))
        self.requests.append(request)
        return self.answer(request)


def _call(answer):
    kernel = _Kernel(answer)
    session = wire.Session(kernel, [])
    return session.request({"kind": "name", "name": "f"}, "call", (np.arange(3.0),), label="f")


def _payloads(*payloads, status="ok", oversized=0) -> Outcome:
    texts = [p if isinstance(p, str) else json.dumps(p) for p in payloads]
    return Outcome(status, payloads=texts, oversized=oversized)


def _reply(request, **fields) -> dict:
    return {"nonce": request["nonce"], "after": [], **fields}


def test_an_honest_reply_is_decoded():
    assert _call(lambda r: _payloads(_reply(r, value=[1, 2.5, "x"]))) == [1, 2.5, "x"]


def test_replies_for_another_request_and_junk_are_ignored():
    def answer(request):
        return _payloads(
            {"nonce": "0" * 32, "after": [], "value": 99},  # a stale or guessed request
            "not json",
            "[" * 100_000 + "]" * 100_000,  # nested past what JSON decoding allows
            [request["nonce"], 99],  # not an object
            {"value": 99},  # no nonce
            _reply(request, value=7),
        )

    assert _call(answer) == 7


def test_only_a_reply_for_another_request_is_no_answer():
    def answer(request):
        return _payloads({"nonce": request["nonce"][::-1], "after": [], "value": 1})

    with pytest.raises(wire.ProtocolError, match="no answer"):
        _call(answer)


def test_a_student_function_printing_a_reply_of_its_own_fails_the_call():
    def answer(request):  # it read the nonce from the bridge's frame and answered first
        return _payloads(_reply(request, value=[0, 0, 0]), _reply(request, value=[1, 2, 3]))

    with pytest.raises(wire.ProtocolError, match="more than one answer"):
        _call(answer)


def test_a_reply_refused_for_its_size_fails_the_call_even_with_an_answer():
    with pytest.raises(wire.ProtocolError, match="over 128 MB"):
        _call(lambda r: Outcome("ok", payloads=[json.dumps(_reply(r, value=1))], refused=1))


def test_an_oversized_reply_is_not_decoded():
    with pytest.raises(wire.ProtocolError, match="larger than the grader reads"):
        _call(lambda r: _payloads(_reply(r, value=1), oversized=1))


@pytest.mark.parametrize(
    "value, message",
    [
        ({"__t__": "nd", "dtype": "O", "shape": [1], "data": ""}, "only numeric arrays"),
        ({"__t__": "nd", "dtype": "float64", "shape": [10**12], "data": ""}, "bad shape"),
        ({"__t__": "nd", "dtype": "float64", "shape": [2], "data": "AAAA"}, "does not match"),
        ({"__t__": "pickle", "v": "gASVAAAAAAAAAACMBXBvc2l4lC4="}, "unknown value kind"),
        ({"__t__": "float", "v": "1e999999"}, "bad float"),
        ({"__t__": "ref", "path": ["globals", "__builtins__"]}, "bad reference path"),
        ({"__t__": "dict", "v": [[[[1]], 2]]}, "unhashable"),
        (json.loads("[" * 80 + "1" + "]" * 80), "nested too deeply"),
    ],
)
def test_forged_values_are_refused(value, message):
    with pytest.raises(wire.ProtocolError, match=message):
        _call(lambda r: _payloads(_reply(r, value=value)))


def test_a_forged_mutation_report_cannot_reach_beyond_the_arguments():
    def answer(request):
        report = [{"path": ["globals", "x"], "array": {}}]
        return _payloads(_reply(request, value=1, after=report))

    with pytest.raises(wire.ProtocolError, match="bad reference path"):
        _call(answer)


def test_a_forged_exception_is_a_student_error_and_never_a_grader_exit():
    for name in ("SystemExit", "KeyboardInterrupt", "GeneratorExit", "StopIteration"):
        with pytest.raises(wire.StudentError, match=name):
            _call(lambda r, name=name: _payloads(_reply(r, raised=[name, "bye"])))


# -- the agent's traps, inside the kernel ----------------------------------------------------------


def test_traps_set_in_the_kernel_are_all_undone_even_for_modules_imported_by_them(
    tmp_path, monkeypatch
):
    """A trapped module that is first imported while the traps are installed must not keep a
    trap it imported from another one (``from first import helper``) once they are undone."""
    (tmp_path / "trap_first_module.py").write_text("def helper():\n    return 'real'\n")
    (tmp_path / "trap_second_module.py").write_text("from trap_first_module import helper\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict = {"__name__": "__bridge__"}
    user: dict = {}
    shell = types.SimpleNamespace(user_ns=user)
    monkeypatch.setattr("builtins.get_ipython", lambda: shell, raising=False)
    exec(compile(wire.AGENT_SOURCE, "<bridge>", "exec"), namespace)
    agent = namespace["_Agent"](user)
    traps = [
        ["trap_first_module", "helper", "trap_first_module.helper"],
        ["trap_second_module", "helper", "trap_second_module.helper"],
    ]
    try:
        undo = agent._install_traps(traps, lambda: None, [])
        for step in reversed(undo):
            step[0](*step[1:])
        import trap_first_module
        import trap_second_module

        assert trap_first_module.helper() == "real"
        assert trap_second_module.helper() == "real", "a trap outlived the call"
    finally:
        for name in ("trap_first_module", "trap_second_module"):
            sys.modules.pop(name, None)
        vars(builtins).pop("__call_bridge__", None)  # the agent's last line sets it


def test_the_trap_owners_are_imported_when_the_bridge_is_installed_not_in_a_graded_call():
    """Importing what the traps guard (the course package, torch...) in the kernel takes seconds,
    more on a loaded machine: the grader's work, given the kernel's start-up time, so the first
    graded call of a student's function keeps the whole cell timeout for itself."""
    seen: list[tuple[str, float]] = []
    kernel = _Kernel(lambda r: _payloads(_reply(r, value=1)))
    kernel.limits = Limits(cell_timeout=5, startup_timeout=60)
    answer = kernel.run_hidden
    kernel.run_hidden = lambda code, timeout, mimetype: (
        seen.append((code, timeout)) or answer(code, timeout, mimetype)
    )
    targets = [
        (_Owner, "routine", "x.routine", _Owner.routine),
        (np.linalg, "solve", "numpy.linalg.solve", np.linalg.solve),
    ]
    session = wire.Session(kernel, targets)
    for _ in range(2):
        session.request({"kind": "name", "name": "f"}, "call", (1.0,), label="f")
    (install, startup), *calls = seen
    assert startup == 60 and f"preload({['numpy.linalg', f'{__name__}._Owner']!r})" in install
    assert [timeout for _, timeout in calls] == [5, 5]


def test_a_bridge_not_ready_in_time_is_a_timeout_never_the_students_name_error():
    kernel = _Kernel(lambda r: _payloads(_reply(r, value=1)))
    kernel.run_hidden = lambda code, timeout, mimetype: Outcome("timeout")
    session = wire.Session(kernel, [])
    with raises(wire.KernelTimeout, "not ready", "60 s"):
        session.request({"kind": "name", "name": "f"}, "call", (1.0,), label="f")
    assert session.timeouts == 1 and session.installed_at == -1


def test_the_agent_imports_the_owners_it_can_and_skips_the_rest(tmp_path, monkeypatch):
    (tmp_path / "trap_owner_module.py").write_text("class Owner:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    namespace: dict = {"__name__": "__bridge__"}
    shell = types.SimpleNamespace(user_ns={})
    monkeypatch.setattr("builtins.get_ipython", lambda: shell, raising=False)
    exec(compile(wire.AGENT_SOURCE, "<bridge>", "exec"), namespace)
    try:
        namespace["_Agent"]({}).preload(["no_such_module_here", "trap_owner_module.Owner"])
        assert "trap_owner_module" in sys.modules
    finally:
        sys.modules.pop("trap_owner_module", None)
        vars(builtins).pop("__call_bridge__", None)
