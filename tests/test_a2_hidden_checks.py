"""Assignment 2: the hidden checks accept the reference solution and reject wrong ones.

The reference functions come from the solution source (read with jupytext). Every check must
fail for answers hard-coded from the visible tests, for plausible bugs, and for
implementations that hand the work to torch's recurrent modules or to the ``course`` package.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from solution_loader import (
    load_solution,
    nbgrader_metadata,
    run_cell,
    solution_lines,
    strip_solutions,
)

from autograder.hidden import a2_lstm_gru as hidden

ASSIGNMENT = "a2_lstm_gru"
PARTS = {  # visible test cell -> (hidden test cell, check, the function it takes)
    "test_lstm_cell_visible": ("test_lstm_cell_hidden", "check_lstm_cell", "lstm_cell_forward"),
    "test_lstm_sequence_visible": (
        "test_lstm_sequence_hidden",
        "check_lstm_sequence",
        "lstm_sequence_forward",
    ),
    "test_gru_cell_visible": ("test_gru_cell_hidden", "check_gru_cell", "gru_cell_forward"),
    "test_select_quote_cell_visible": (
        "test_select_quote_cell_hidden",
        "check_select_quote_cell",
        "select_quote_cell",
    ),
}


@pytest.fixture(scope="module")
def solution():
    return load_solution(ASSIGNMENT)


@pytest.fixture(scope="module")
def reference(solution) -> dict[str, Any]:
    return solution.namespace()


def renamed(function: Callable[..., Any], name: str, **bugs: Any) -> Callable[..., Any]:
    def student_function(*args, **kwargs):
        return function(*args, **kwargs, **bugs)

    student_function.__name__ = name
    return student_function


# --------------------------------------------------------------------------------------------
# Independent implementations with bug switches
# --------------------------------------------------------------------------------------------


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def lstm_step(x, h, c, params, *, order="figo", in_place=False, tanh_c=True):
    H = np.shape(h)[-1]
    a = x @ params["W"].T + h @ params["U"].T + params["b"]
    blocks = dict(zip(order, np.split(a, 4, axis=1), strict=True))
    f, i, o = sigmoid(blocks["f"]), sigmoid(blocks["i"]), sigmoid(blocks["o"])
    g = np.tanh(blocks["g"])
    if in_place:
        c *= f
        c += i * g
        new_c = c
    else:
        new_c = f * c + i * g
    assert new_c.shape[-1] == H
    return o * (np.tanh(new_c) if tanh_c else new_c), new_c


def lstm_sequence(xs, mask, h0, c0, params, *, use_mask=True, zero_padding=True, reset=False):
    B, T, _ = xs.shape
    h, c = np.array(h0, dtype=float), np.array(c0, dtype=float)
    hs = np.zeros((B, T, h.shape[1]))
    for t in range(T):
        new_h, new_c = lstm_step(xs[:, t], h, c, params)
        keep = mask[:, t : t + 1] if use_mask else np.ones((B, 1), dtype=bool)
        if reset:  # a bug: padding resets the state to zero
            h, c = np.where(keep, new_h, 0.0), np.where(keep, new_c, 0.0)
        else:
            h, c = np.where(keep, new_h, h), np.where(keep, new_c, c)
        hs[:, t] = np.where(keep, new_h, 0.0 if zero_padding else h)
    return hs, (h, c)


def gru_step(x, h, params, *, order="zrn", reset_before=False, swap_interpolation=False):
    H = np.shape(h)[-1]
    gx = dict(zip(order, np.split(x @ params["W"].T + params["b_W"], 3, axis=1), strict=True))
    gh = dict(zip(order, np.split(h @ params["U"].T + params["b_U"], 3, axis=1), strict=True))
    z, r = sigmoid(gx["z"] + gh["z"]), sigmoid(gx["r"] + gh["r"])
    if reset_before:  # the original paper's convention: U (r * h), not r * (U h + b)
        U_n = np.split(params["U"], 3)[order.index("n")]
        b_n = np.split(params["b_U"], 3)[order.index("n")]
        n = np.tanh(gx["n"] + (r * h) @ U_n.T + b_n)
    else:
        n = np.tanh(gx["n"] + r * gh["n"])
    assert n.shape[-1] == H
    return z * n + (1 - z) * h if swap_interpolation else (1 - z) * n + z * h


def quote_cell(acts, labels, *, absolute=True, covariance=False):
    a = np.asarray(acts, dtype=float)
    y = np.asarray(labels, dtype=float)
    a, y = a - a.mean(0), y - y.mean()
    score = (a * y[:, None]).sum(0)
    if not covariance:
        with np.errstate(invalid="ignore", divide="ignore"):
            score = score / (np.sqrt((a**2).sum(0)) * np.sqrt((y**2).sum()))
        score = np.nan_to_num(score)
    return int(np.argmax(np.abs(score) if absolute else score))


def quote_cell_nan(acts, labels):
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.array([np.corrcoef(acts[:, j], labels)[0, 1] for j in range(acts.shape[1])])
    return int(np.argmax(np.abs(r)))  # nan is the largest for argmax


# --------------------------------------------------------------------------------------------
# Structure of the notebook
# --------------------------------------------------------------------------------------------


def test_every_part_has_a_visible_and_a_hidden_test_cell(solution):
    cells = solution.test_cells
    assert set(cells) == set(PARTS) | {hidden_id for hidden_id, _, _ in PARTS.values()}
    for visible_id, (hidden_id, check_name, argument) in PARTS.items():
        assert not cells[visible_id].is_hidden, visible_id
        assert cells[hidden_id].is_hidden, hidden_id
        released = [line for line in cells[hidden_id].visible_source.splitlines() if line.strip()]
        assert released and all(line.lstrip().startswith("#") for line in released)
        assert f"{check_name}({argument})" in cells[hidden_id].hidden_source
    assert sum(cell.points for cell in cells.values()) >= 10
    assert len(PARTS) >= 3


def test_the_written_question_is_a_manually_graded_markdown_answer(solution):
    answers = [
        nbgrader_metadata(cell)
        for cell in solution.notebook.cells
        if cell.cell_type == "markdown" and nbgrader_metadata(cell).get("solution")
    ]
    assert [(a["grade_id"], a["points"], a["grade"]) for a in answers] == [
        ("forget_gate_gradients", 2, True)
    ]


def test_solution_lines_appear_nowhere_in_the_student_version_or_the_lecture(solution):
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    public = {
        line.strip() for line in (root / "lectures" / "02_lstm_gru.py").read_text().splitlines()
    }
    for module in (root / "course").glob("*.py"):
        public |= {line.strip() for line in module.read_text().splitlines()}
    secret_lines = []
    for cell in solution.notebook.cells:
        if cell.cell_type == "markdown" and nbgrader_metadata(cell).get("solution"):
            continue
        secret_lines += solution_lines(cell.source)
        public |= {line.strip() for line in strip_solutions(cell.source).splitlines()}
    assert len(secret_lines) > 20
    assert sorted(line for line in set(secret_lines) & public if len(line) >= 12) == []


def test_the_unchanged_student_version_fails_every_test_cell_with_not_implemented(solution):
    released = solution.namespace(released=True)
    for grade_id, cell in solution.test_cells.items():
        with pytest.raises(NotImplementedError):
            run_cell(cell.source, dict(released), grade_id)


# --------------------------------------------------------------------------------------------
# The reference and the independent implementation pass
# --------------------------------------------------------------------------------------------


def test_reference_passes_every_test_cell(solution, reference, capsys):
    for grade_id, cell in solution.test_cells.items():
        run_cell(cell.source, dict(reference), grade_id)
    assert capsys.readouterr().out.count("hidden cases passed") == 4


def test_the_independent_implementations_pass_too():
    hidden.check_lstm_cell(renamed(lstm_step, "lstm_cell_forward"))
    hidden.check_lstm_sequence(renamed(lstm_sequence, "lstm_sequence_forward"))
    hidden.check_gru_cell(renamed(gru_step, "gru_cell_forward"))
    hidden.check_select_quote_cell(renamed(quote_cell, "select_quote_cell"))


# --------------------------------------------------------------------------------------------
# Hard-coded answers pass the visible tests and fail the hidden ones
# --------------------------------------------------------------------------------------------


def hard_coded(solution, reference, visible_id: str) -> Callable[..., Any]:
    """A cheat that replays the reference's answers to the visible test's calls."""
    _, _, name = PARTS[visible_id]
    answers: list[Any] = []
    recording = dict(reference)

    def recorder(*args, **kwargs):
        result = reference[name](*args, **kwargs)
        answers.append(copy.deepcopy(result))
        return result

    recording[name] = recorder
    run_cell(solution.test_cells[visible_id].source, recording, visible_id)
    assert answers

    def cheat(*args, **kwargs):
        return copy.deepcopy(answers[0])

    cheat.__name__ = name
    return cheat


@pytest.mark.parametrize("visible_id", list(PARTS))
def test_hard_coded_answers_pass_the_visible_test_but_not_the_hidden_one(
    solution, reference, visible_id
):
    hidden_id, check_name, name = PARTS[visible_id]
    cheat = hard_coded(solution, reference, visible_id)
    run_cell(solution.test_cells[visible_id].source, {**reference, name: cheat}, visible_id)
    with pytest.raises(AssertionError):
        getattr(hidden, check_name)(cheat)


# --------------------------------------------------------------------------------------------
# Plausible bugs
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bugs", "message"),
    [
        ({"order": "ifgo"}, r"\[lstm_cell_forward, B=1, D=1, H=1\] c differs from torch"),
        ({"tanh_c": False}, r"\[lstm_cell_forward, B=1, D=1, H=1\] h differs from torch"),
        ({"in_place": True}, r"lstm_cell_forward modified its input c_prev in place"),
    ],
)
def test_check_lstm_cell_rejects_bug(bugs, message):
    with pytest.raises(AssertionError, match=message):
        hidden.check_lstm_cell(renamed(lstm_step, "lstm_cell_forward", **bugs))


@pytest.mark.parametrize(
    ("bugs", "message"),
    [
        ({"use_mask": False}, r"lengths 6, 2, 4\] hs differs from nn.LSTM \(packed\)"),
        ({"zero_padding": False}, r"lengths 6, 2, 4\] hs differs from nn.LSTM \(packed\)"),
        ({"reset": True}, r"lengths 6, 2, 4\] h_last differs from nn.LSTM \(packed\)"),
    ],
)
def test_check_lstm_sequence_rejects_bug(bugs, message):
    with pytest.raises(AssertionError, match=message):
        hidden.check_lstm_sequence(renamed(lstm_sequence, "lstm_sequence_forward", **bugs))


@pytest.mark.parametrize(
    "bugs", [{"order": "rzn"}, {"reset_before": True}, {"swap_interpolation": True}]
)
def test_check_gru_cell_rejects_bug(bugs):
    with pytest.raises(AssertionError, match=r"h differs from torch.nn.GRUCell"):
        hidden.check_gru_cell(renamed(gru_step, "gru_cell_forward", **bugs))


@pytest.mark.parametrize(
    ("implementation", "message"),
    [
        (
            renamed(quote_cell, "select_quote_cell", absolute=False),
            r"anti-correlated.*chose cell 4",
        ),
        (renamed(quote_cell, "select_quote_cell", covariance=True), r"scales differ.*chose cell 2"),
        (renamed(quote_cell_nan, "select_quote_cell"), r"a constant cell.*chose cell 0"),
        (
            renamed(lambda a, y: float(quote_cell(a, y)), "select_quote_cell"),
            r"should return the index of a cell as an int",
        ),
    ],
)
def test_check_select_quote_cell_rejects_bug(implementation, message):
    with pytest.raises(AssertionError, match=message):
        hidden.check_select_quote_cell(implementation)


# --------------------------------------------------------------------------------------------
# Shortcuts: torch's recurrent modules and the course helpers are trapped
# --------------------------------------------------------------------------------------------


def _reorder(m, blocks, order):
    parts = dict(zip(blocks, np.split(np.asarray(m, dtype=float), len(blocks)), strict=True))
    return torch.tensor(np.concatenate([parts[k] for k in order]))


def lstm_cell_with_torch(x, h, c, params):
    cell = torch.nn.LSTMCell(x.shape[1], h.shape[1], dtype=torch.float64)
    with torch.no_grad():
        cell.weight_ih.copy_(_reorder(params["W"], "figo", "ifgo"))
        cell.weight_hh.copy_(_reorder(params["U"], "figo", "ifgo"))
        cell.bias_ih.copy_(_reorder(params["b"], "figo", "ifgo"))
        cell.bias_hh.zero_()
        h, c = cell(
            torch.tensor(np.array(x)), (torch.tensor(np.array(h)), torch.tensor(np.array(c)))
        )
    return h.numpy(), c.numpy()


def lstm_cell_with_functional(x, h, c, params):
    w = [_reorder(params[k], "figo", "ifgo") for k in ("W", "U")]
    b = _reorder(params["b"], "figo", "ifgo")
    h, c = torch.lstm_cell(
        torch.tensor(np.array(x)),
        (torch.tensor(np.array(h)), torch.tensor(np.array(c))),
        w[0],
        w[1],
        b,
        torch.zeros_like(b),
    )
    return h.numpy(), c.numpy()


def lstm_sequence_with_torch(xs, mask, h0, c0, params):
    hs = np.zeros((*mask.shape, h0.shape[1]))
    h, c = np.array(h0), np.array(c0)
    for t in range(mask.shape[1]):
        nh, nc = lstm_cell_with_torch(xs[:, t], h, c, params)
        keep = mask[:, t : t + 1]
        h, c = np.where(keep, nh, h), np.where(keep, nc, c)
        hs[:, t] = np.where(keep, nh, 0.0)
    return hs, (h, c)


def gru_cell_with_torch(x, h, params):
    cell = torch.nn.GRUCell(x.shape[1], h.shape[1], dtype=torch.float64)
    with torch.no_grad():
        cell.weight_ih.copy_(_reorder(params["W"], "zrn", "rzn"))
        cell.weight_hh.copy_(_reorder(params["U"], "zrn", "rzn"))
        cell.bias_ih.copy_(_reorder(params["b_W"], "zrn", "rzn"))
        cell.bias_hh.copy_(_reorder(params["b_U"], "zrn", "rzn"))
        return cell(torch.tensor(np.array(x)), torch.tensor(np.array(h))).numpy()


def quote_cell_with_course(acts, labels):
    from course.analysis.interpret import best_cells

    return best_cells(acts, {"quote": labels})["quote"].cell


def lstm_cell_that_hides_the_trap(x, h, c, params):
    try:
        return lstm_cell_with_torch(x, h, c, params)
    except Exception:  # noqa: BLE001 - a student who catches everything
        return lstm_step(np.asarray(x), np.asarray(h), np.asarray(c), params)


@pytest.mark.parametrize(
    ("check", "implementation", "name", "called"),
    [
        ("check_lstm_cell", lstm_cell_with_torch, "lstm_cell_forward", "torch.nn.LSTMCell"),
        ("check_lstm_cell", lstm_cell_with_functional, "lstm_cell_forward", "torch.lstm_cell"),
        (
            "check_lstm_cell",
            lstm_cell_that_hides_the_trap,
            "lstm_cell_forward",
            r"torch.nn.LSTMCell \(and caught the error\)",
        ),
        (
            "check_lstm_sequence",
            lstm_sequence_with_torch,
            "lstm_sequence_forward",
            "torch.nn.LSTMCell",
        ),
        ("check_gru_cell", gru_cell_with_torch, "gru_cell_forward", "torch.nn.GRUCell"),
        (
            "check_select_quote_cell",
            quote_cell_with_course,
            "select_quote_cell",
            "course.analysis.interpret.best_cells",
        ),
    ],
)
def test_checks_reject_shortcuts(check, implementation, name, called):
    with pytest.raises(hidden.ShortcutUsed, match=f"{name} must .*; it called {called}"):
        getattr(hidden, check)(renamed(implementation, name))


def test_shortcut_implementations_are_right_outside_the_traps():
    rng = np.random.default_rng(0)
    params = {"W": rng.normal(size=(8, 3)), "U": rng.normal(size=(8, 2)), "b": rng.normal(size=8)}
    x, h, c = rng.normal(size=(4, 3)), rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    expected = lstm_step(x, h, c, params)
    for implementation in (lstm_cell_with_torch, lstm_cell_with_functional):
        for got, want in zip(implementation(x, h, c, params), expected, strict=True):
            np.testing.assert_allclose(got, want, atol=1e-12)
    gru_params = {
        "W": rng.normal(size=(6, 3)),
        "U": rng.normal(size=(6, 2)),
        "b_W": rng.normal(size=6),
        "b_U": rng.normal(size=6),
    }
    np.testing.assert_allclose(
        gru_cell_with_torch(x, h, gru_params), gru_step(x, h, gru_params), atol=1e-12
    )


REQUIRED_TRAPS = {
    "torch.nn.LSTM",
    "torch.nn.LSTMCell",
    "torch.nn.GRU",
    "torch.nn.GRUCell",
    "torch.lstm_cell",
    "torch.gru_cell",
    "torch.autograd.grad",
    "torch.Tensor.backward",
    "course.analysis.interpret.best_cells",
    "course.analysis.interpret.correlations",
    "course.analysis.interpret.lstm_states",
    "course.models.recurrent.CharLSTM",
}


def test_traps_cover_the_required_routines_and_are_restored():
    labels = {label for _, _, label in hidden.shortcut_targets()}
    assert REQUIRED_TRAPS <= labels
    assert not any(label.startswith("course.checks") for label in labels)
    originals = [
        (owner, name, getattr(owner, name)) for owner, name, _ in hidden.shortcut_targets()
    ]

    def student():
        return torch.nn.LSTMCell(2, 3)

    with pytest.raises(
        hidden.ShortcutUsed, match=re.escape("student must work; it called torch.nn.LSTMCell")
    ):
        with hidden.no_shortcuts(student, "work"):
            student()
    for owner, name, original in originals:
        assert getattr(owner, name) is original, name


def test_traps_replace_names_bound_in_the_students_namespace():
    original = torch.nn.LSTMCell
    namespace = {"Cell": original, "np": np}
    exec("def student():\n    return Cell(2, 3)", namespace)
    with hidden.no_shortcuts(namespace["student"], "work"):
        assert namespace["Cell"] is not original
        assert namespace["np"] is np
        with pytest.raises(hidden.ShortcutUsed, match="it called torch.nn.LSTMCell"):
            namespace["student"]()
    assert namespace["Cell"] is original is torch.nn.LSTMCell
