"""Assignment 2: the hidden checks reject plausible bugs and torch's recurrent modules.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps) is in ``test_assignments.py``. Here: independent implementations with one
switch per plausible bug, each of which must fail its check with a message that names the
case; and shortcuts through ``torch.nn.LSTMCell``, ``torch.lstm_cell``, ``torch.nn.GRUCell``
and the ``course`` helpers, which give the right answer outside the traps and are caught
inside them.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from autograder.hidden import a2_lstm_gru as hidden
from tests.grading.bug_injection import (
    Failure,
    expect_failure,
    expect_shortcut,
    expect_traps,
    row_id,
)
from tests.grading.solution_loader import as_student

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

# --------------------------------------------------------------------------------------------
# Independent implementations with bug switches
# --------------------------------------------------------------------------------------------


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def lstm_step(x, h, c, params, *, order="figo", in_place=False, tanh_c=True, swap_keys=False):
    H = np.shape(h)[-1]
    U, W = (params["W"], params["U"]) if swap_keys else (params["U"], params["W"])
    a = x @ U.T + h @ W.T + params["b"]  # U: input, W: recurrent
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


def gru_step(
    x, h, params, *, order="zrn", reset_before=False, swap_interpolation=False, swap_keys=False
):
    H = np.shape(h)[-1]
    U, W = (params["W"], params["U"]) if swap_keys else (params["U"], params["W"])
    gx = dict(zip(order, np.split(x @ U.T + params["b_in"], 3, axis=1), strict=True))
    gh = dict(zip(order, np.split(h @ W.T + params["b_rec"], 3, axis=1), strict=True))
    z, r = sigmoid(gx["z"] + gh["z"]), sigmoid(gx["r"] + gh["r"])
    if reset_before:  # the original paper's convention: W (r * h), not r * (W h + b)
        W_n = np.split(W, 3)[order.index("n")]
        b_n = np.split(params["b_rec"], 3)[order.index("n")]
        n = np.tanh(gx["n"] + (r * h) @ W_n.T + b_n)
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
# The independent implementations pass
# --------------------------------------------------------------------------------------------


def test_the_independent_implementations_pass_too():
    hidden.check_lstm_cell(as_student(lstm_step, "lstm_cell_forward"))
    hidden.check_lstm_sequence(as_student(lstm_sequence, "lstm_sequence_forward"))
    hidden.check_gru_cell(as_student(gru_step, "gru_cell_forward"))
    hidden.check_select_quote_cell(as_student(quote_cell, "select_quote_cell"))


# --------------------------------------------------------------------------------------------
# Plausible bugs
# --------------------------------------------------------------------------------------------


CELL = r"^lstm_cell_forward, B=1, D=1, H=1$"
SEQUENCE = r"^lstm_sequence_forward, .*lengths 6, 2, 4$"
GRU = r"^gru_cell_forward, B=1, D=1, H=1$"
ANTI = r"^select_quote_cell, .*the best cell is anti-correlated"
SCALES = r"^select_quote_cell, .*a constant cell, int labels, scales differ"


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"order": "ifgo"}, Failure(CELL, "^c differs")),
        ({"tanh_c": False}, Failure(CELL, "^h differs")),
        ({"in_place": True}, Failure(CELL, "modified its input c_prev")),
        # the keys the old way round ("W" as the input matrix): wrong where D = H
        ({"swap_keys": True}, Failure(CELL, "^c differs")),
    ],
    ids=row_id,
)
def test_check_lstm_cell_rejects_bug(bugs, failure):
    student = as_student(lstm_step, "lstm_cell_forward", **bugs)
    expect_failure(lambda: hidden.check_lstm_cell(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"use_mask": False}, Failure(SEQUENCE, "^hs differs")),
        ({"zero_padding": False}, Failure(SEQUENCE, "^hs differs")),
        ({"reset": True}, Failure(SEQUENCE, "^h_last differs")),
    ],
    ids=row_id,
)
def test_check_lstm_sequence_rejects_bug(bugs, failure):
    student = as_student(lstm_sequence, "lstm_sequence_forward", **bugs)
    expect_failure(lambda: hidden.check_lstm_sequence(student), failure)


@pytest.mark.parametrize(
    "bugs",
    [
        {"order": "rzn"},
        {"reset_before": True},
        {"swap_interpolation": True},
        {"swap_keys": True},
    ],
    ids=row_id,
)
def test_check_gru_cell_rejects_bug(bugs):
    student = as_student(gru_step, "gru_cell_forward", **bugs)
    expect_failure(lambda: hidden.check_gru_cell(student), Failure(GRU, "^h differs"))


@pytest.mark.parametrize(
    ("implementation", "failure"),
    [
        (
            as_student(quote_cell, "select_quote_cell", absolute=False),
            Failure(ANTI, "chose cell 4", "but cell 9"),
        ),
        (
            as_student(quote_cell, "select_quote_cell", covariance=True),
            Failure(SCALES, "chose cell 2", "but cell 5"),
        ),
        (
            as_student(quote_cell_nan, "select_quote_cell"),
            Failure(SCALES, "chose cell 0", "but cell 5"),
        ),
        (
            as_student(lambda a, y: float(quote_cell(a, y)), "select_quote_cell"),
            Failure(ANTI, "should return the index", "as an int"),
        ),
    ],
    ids=row_id,
)
def test_check_select_quote_cell_rejects_bug(implementation, failure):
    expect_failure(lambda: hidden.check_select_quote_cell(implementation), failure)


# --------------------------------------------------------------------------------------------
# Shortcuts: torch's recurrent modules and the course helpers are trapped
# --------------------------------------------------------------------------------------------


def _reorder(m, blocks, order):
    parts = dict(zip(blocks, np.split(np.asarray(m, dtype=float), len(blocks)), strict=True))
    return torch.tensor(np.concatenate([parts[k] for k in order]))


def lstm_cell_with_torch(x, h, c, params):
    cell = torch.nn.LSTMCell(x.shape[1], h.shape[1], dtype=torch.float64)
    with torch.no_grad():
        cell.weight_ih.copy_(_reorder(params["U"], "figo", "ifgo"))
        cell.weight_hh.copy_(_reorder(params["W"], "figo", "ifgo"))
        cell.bias_ih.copy_(_reorder(params["b"], "figo", "ifgo"))
        cell.bias_hh.zero_()
        h, c = cell(
            torch.tensor(np.array(x)), (torch.tensor(np.array(h)), torch.tensor(np.array(c)))
        )
    return h.numpy(), c.numpy()


def lstm_cell_with_functional(x, h, c, params):
    w = [_reorder(params[k], "figo", "ifgo") for k in ("U", "W")]  # weight_ih, weight_hh
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
        cell.weight_ih.copy_(_reorder(params["U"], "zrn", "rzn"))
        cell.weight_hh.copy_(_reorder(params["W"], "zrn", "rzn"))
        cell.bias_ih.copy_(_reorder(params["b_in"], "zrn", "rzn"))
        cell.bias_hh.copy_(_reorder(params["b_rec"], "zrn", "rzn"))
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
    student = as_student(implementation, name)
    expect_shortcut(lambda: getattr(hidden, check)(student), name, called)


def test_shortcut_implementations_are_right_outside_the_traps():
    rng = np.random.default_rng(0)
    params = {"U": rng.normal(size=(8, 3)), "W": rng.normal(size=(8, 2)), "b": rng.normal(size=8)}
    x, h, c = rng.normal(size=(4, 3)), rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    expected = lstm_step(x, h, c, params)
    for implementation in (lstm_cell_with_torch, lstm_cell_with_functional):
        for got, want in zip(implementation(x, h, c, params), expected, strict=True):
            np.testing.assert_allclose(got, want, atol=1e-12)
    gru_params = {
        "U": rng.normal(size=(6, 3)),
        "W": rng.normal(size=(6, 2)),
        "b_in": rng.normal(size=6),
        "b_rec": rng.normal(size=6),
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


def test_traps_cover_the_routines_that_would_do_the_work():
    expect_traps(hidden, REQUIRED_TRAPS)
