"""Assignment 2: the hidden checks reject plausible bugs and torch's recurrent modules.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps) is in ``test_assignments.py``. Here: the hidden references (an LSTM with
peephole connections, the GRU with the reset gate before the recurrent matrix) tied to torch
where the variants meet its cells; independent implementations with one switch per plausible
bug, each of which must fail its check with a message that names the case, and the visible
test with a message that names the quantity; Lecture 2's cells, adapted to the assignment's
signatures, failing the visible tests; and shortcuts through ``torch.nn.LSTMCell``,
``torch.lstm_cell``, ``torch.nn.GRUCell`` and the ``course`` helpers, caught inside the traps.
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
    run_visible,
    visible_mistake_tests,
)
from tests.grading.solution_loader import ROOT, as_student, lecture_functions
from tests.messages import raises

ASSIGNMENT = "a2_lstm_gru"

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

# --------------------------------------------------------------------------------------------
# Independent implementations with bug switches
# --------------------------------------------------------------------------------------------


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def lstm_step(
    x,
    h,
    c,
    params,
    *,
    order="figo",
    in_place=False,
    tanh_c=True,
    swap_keys=False,
    peepholes=True,
    peephole_rows="fio",
    output_peeks="c_t",
    gates_peek="c_prev",
):
    H = np.shape(h)[-1]
    U, W = (params["W"], params["U"]) if swap_keys else (params["U"], params["W"])
    a = x @ U.T + h @ W.T + params["b"]  # U: input, W: recurrent
    blocks = dict(zip(order, np.split(a, 4, axis=1), strict=True))
    p = dict(zip(peephole_rows, np.asarray(params["P"]) * peepholes, strict=True))
    g = np.tanh(blocks["g"])
    seen_by_fi = c
    if gates_peek == "c_t":  # a bug: f and i peek at a new cell, made first without peepholes
        seen_by_fi = sigmoid(blocks["f"]) * c + sigmoid(blocks["i"]) * g
    f = sigmoid(blocks["f"] + p["f"] * seen_by_fi)
    i = sigmoid(blocks["i"] + p["i"] * seen_by_fi)
    seen_by_o = np.array(c)  # c_{t-1}, before an in-place update can change it
    if in_place:
        c *= f
        c += i * g
        new_c = c
    else:
        new_c = f * c + i * g
    if output_peeks == "c_t":
        seen_by_o = new_c
    o = sigmoid(blocks["o"] + p["o"] * seen_by_o)
    assert new_c.shape[-1] == H
    return o * (np.tanh(new_c) if tanh_c else new_c), new_c


def lstm_sequence(
    xs, mask, h0, c0, params, *, use_mask=True, zero_padding=True, reset=False, cell=None
):
    B, T, _ = xs.shape
    h, c = np.array(h0, dtype=float), np.array(c0, dtype=float)
    hs = np.zeros((B, T, h.shape[1]))
    for t in range(T):
        new_h, new_c = lstm_step(xs[:, t], h, c, params, **(cell or {}))
        keep = mask[:, t : t + 1] if use_mask else np.ones((B, 1), dtype=bool)
        if reset:  # a bug: padding resets the state to zero
            h, c = np.where(keep, new_h, 0.0), np.where(keep, new_c, 0.0)
        else:
            h, c = np.where(keep, new_h, h), np.where(keep, new_c, c)
        hs[:, t] = np.where(keep, new_h, 0.0 if zero_padding else h)
    return hs, (h, c)


def gru_step(
    x, h, params, *, order="zrn", reset="before", swap_interpolation=False, swap_keys=False
):
    H = np.shape(h)[-1]
    U, W = (params["W"], params["U"]) if swap_keys else (params["U"], params["W"])
    gx = dict(zip(order, np.split(x @ U.T + params["b_in"], 3, axis=1), strict=True))
    gh = dict(zip(order, np.split(h @ W.T + params["b_rec"], 3, axis=1), strict=True))
    z, r = sigmoid(gx["z"] + gh["z"]), sigmoid(gx["r"] + gh["r"])
    W_n = np.split(W, 3)[order.index("n")]
    b_n = np.split(params["b_rec"], 3)[order.index("n")]
    if reset == "before":  # Cho et al.'s convention, the assignment's: W (r * h) + b
        n = np.tanh(gx["n"] + (r * h) @ W_n.T + b_n)
    elif reset == "after":  # PyTorch's, Lecture 2's: r * (W h + b)
        n = np.tanh(gx["n"] + r * gh["n"])
    else:  # "on the product": r * (W h) + b, the same as "before" only where W_n is diagonal
        n = np.tanh(gx["n"] + r * (h @ W_n.T) + b_n)
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


def test_the_hidden_references_pass_the_visible_tests():
    """The visible tests' expected numbers are the hidden references' on the visible inputs
    (course/checks/a2_lstm_gru.py prints them to ten decimals)."""

    def reference_sequence(xs, mask, h0, c0, params):
        lengths = tuple(int(n) for n in np.asarray(mask).sum(axis=1))
        hs, h_last, c_last = hidden.reference_sequence(params, xs, lengths, h0, c0)
        return hs, (h_last, c_last)

    run_visible(ASSIGNMENT, "test_lstm_cell_visible", lstm_cell_forward=hidden.peephole_lstm_step)
    run_visible(ASSIGNMENT, "test_lstm_sequence_visible", lstm_sequence_forward=reference_sequence)
    run_visible(ASSIGNMENT, "test_gru_cell_visible", gru_cell_forward=hidden.cho_gru_step)


# --------------------------------------------------------------------------------------------
# The references are torch's cells where the variants meet them, and differ elsewhere
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("B", "D", "H"), [(1, 1, 1), (4, 3, 5)])
def test_the_peephole_reference_without_peepholes_is_torch_lstm_cell(B, D, H):
    rng = np.random.default_rng(11 + H)
    params = hidden._lstm_params(rng, D, H, peepholes=False)
    x, h, c = rng.normal(size=(B, D)), rng.normal(size=(B, H)), rng.normal(size=(B, H))
    with torch.no_grad():
        h_lib, c_lib = hidden._torch_lstm_cell(params, D, H)(
            torch.tensor(x), (torch.tensor(h), torch.tensor(c))
        )
    h_ref, c_ref = hidden.peephole_lstm_step(x, h, c, params)
    np.testing.assert_allclose(h_ref, h_lib.numpy(), atol=1e-12)
    np.testing.assert_allclose(c_ref, c_lib.numpy(), atol=1e-12)
    # ... and the peepholes change both outputs
    params["P"] = rng.normal(size=(3, H))
    h_peep, c_peep = hidden.peephole_lstm_step(x, h, c, params)
    assert np.abs(c_peep - c_ref).max() > 1e-3 and np.abs(h_peep - h_ref).max() > 1e-3


def test_torch_lstm_cell_refuses_peepholes():
    params = hidden._lstm_params(np.random.default_rng(0), 2, 3)
    with pytest.raises(ValueError, match="P must be 0"):
        hidden._torch_lstm_cell(params, 2, 3)


def test_the_sequence_reference_without_peepholes_is_torch_lstm_on_packed_sequences():
    rng = np.random.default_rng(12)
    lengths, D, H = (4, 0, 2, 4), 3, 2
    params = hidden._lstm_params(rng, D, H, peepholes=False)
    xs = rng.normal(size=(len(lengths), max(lengths), D))
    h0, c0 = rng.normal(size=(len(lengths), H)), rng.normal(size=(len(lengths), H))
    by_hand = hidden.reference_sequence(params, xs, lengths, h0, c0)
    by_torch = hidden.torch_sequence(params, xs, lengths, h0, c0)
    for ours, theirs in zip(by_hand, by_torch, strict=True):
        np.testing.assert_allclose(ours, theirs, atol=1e-12)


def _torch_gru_cell(params, D, H):
    cell = torch.nn.GRUCell(D, H, dtype=torch.float64)
    with torch.no_grad():
        cell.weight_ih.copy_(_reorder(params["U"], "zrn", "rzn"))
        cell.weight_hh.copy_(_reorder(params["W"], "zrn", "rzn"))
        cell.bias_ih.copy_(_reorder(params["b_in"], "zrn", "rzn"))
        cell.bias_hh.copy_(_reorder(params["b_rec"], "zrn", "rzn"))
    return cell


def _gru_cell_output(params, x, h):
    with torch.no_grad():
        return _torch_gru_cell(params, x.shape[1], h.shape[1])(
            torch.tensor(x), torch.tensor(h)
        ).numpy()


def test_the_gru_reference_is_not_torch_gru_cell():
    """With full recurrent matrices, the reset gate before W_n and after it give different
    states: Part C's function is not nn.GRUCell's."""
    rng = np.random.default_rng(13)
    params = hidden.gru_params(rng, 3, 4)
    x, h = rng.normal(size=(5, 3)), rng.normal(size=(5, 4))
    assert np.abs(hidden.cho_gru_step(x, h, params) - _gru_cell_output(params, x, h)).max() > 0.05


@pytest.mark.parametrize("zero_state", [False, True], ids=["diagonal W_n", "h_prev = 0"])
def test_the_gru_reference_is_torch_gru_cell_where_the_conventions_agree(zero_state):
    """W_n (r * h) + b_rec_n = r * (W_n h + b_rec_n) + (1 - r) * b_rec_n whenever W_n is
    diagonal (it then commutes with the elementwise r), in particular when h_prev = 0 (both
    sides are 0 then). Moving b_rec_n to the input side, where it is not reset, gives
    nn.GRUCell the candidate of Cho et al.'s GRU: the states agree to rounding error."""
    rng = np.random.default_rng(14)
    D, H = 3, 4
    params = hidden.gru_params(rng, D, H)
    x, h = rng.normal(size=(5, D)), rng.normal(size=(5, H))
    if zero_state:
        h = np.zeros_like(h)
    else:
        params["W"][2 * H :] = np.diag(rng.normal(size=H))  # W_n diagonal
    moved = {key: value.copy() for key, value in params.items()}
    moved["b_in"][2 * H :] += moved["b_rec"][2 * H :]
    moved["b_rec"][2 * H :] = 0.0
    ours = hidden.cho_gru_step(x, h, params)
    np.testing.assert_allclose(ours, _gru_cell_output(moved, x, h), atol=1e-12)
    # the bias that PyTorch resets is what still tells the two apart
    assert np.abs(ours - _gru_cell_output(params, x, h)).max() > 1e-3


# --------------------------------------------------------------------------------------------
# Plausible bugs
# --------------------------------------------------------------------------------------------


CELL = r"^lstm_cell_forward, B=1, D=1, H=1$"
SEQUENCE = r"^lstm_sequence_forward, .*lengths 6, 2, 4$"
FIRST_SEQUENCE = r"^lstm_sequence_forward, B=1, T=1, no padding$"
GRU = r"^gru_cell_forward, B=1, D=1, H=1$"
GRU_FULL = r"^gru_cell_forward, B=6, D=4, H=3$"
ANTI = r"^select_quote_cell, .*the best cell is anti-correlated"
SCALES = r"^select_quote_cell, .*a constant cell, int labels, scales differ"


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"order": "ifgo"}, Failure(CELL, "^c differs")),
        ({"tanh_c": False}, Failure(CELL, "^h differs")),
        ({"in_place": True}, Failure(CELL, r"in place: c_prev\b")),
        # the keys the old way round ("W" as the input matrix): wrong where D = H
        ({"swap_keys": True}, Failure(CELL, "^c differs")),
        # Lecture 2's cell, nn.LSTMCell's: no peepholes
        ({"peepholes": False}, Failure(CELL, "^c differs")),
        # the forget and input gates' peephole rows swapped
        ({"peephole_rows": "ifo"}, Failure(CELL, "^c differs")),
        # the output gate computed with the others, on c_{t-1}: c is right, h is not
        ({"output_peeks": "c_prev"}, Failure(CELL, "^h differs")),
        # the forget and input gates peek at c_t (first made without peepholes), not c_{t-1}
        ({"gates_peek": "c_t"}, Failure(CELL, "^c differs")),
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
        # the steps taken by Lecture 2's cell, without the peepholes
        ({"cell": {"peepholes": False}}, Failure(FIRST_SEQUENCE, "^hs differs")),
    ],
    ids=row_id,
)
def test_check_lstm_sequence_rejects_bug(bugs, failure):
    student = as_student(lstm_sequence, "lstm_sequence_forward", **bugs)
    expect_failure(lambda: hidden.check_lstm_sequence(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"order": "rzn"}, Failure(GRU, "^h differs")),
        # PyTorch's convention, Lecture 2's cell: the bias it resets is wrong even where H = 1
        ({"reset": "after"}, Failure(GRU, "^h differs")),
        # r * (W_n h) + b_rec_n: right where W_n is 1 x 1 (diagonal), wrong from H = 3 on
        ({"reset": "on the product"}, Failure(GRU_FULL, "^h differs")),
        ({"swap_interpolation": True}, Failure(GRU, "^h differs")),
        ({"swap_keys": True}, Failure(GRU, "^h differs")),
    ],
    ids=row_id,
)
def test_check_gru_cell_rejects_bug(bugs, failure):
    student = as_student(gru_step, "gru_cell_forward", **bugs)
    expect_failure(lambda: hidden.check_gru_cell(student), failure)


test_visible_tests_name_the_mistake = visible_mistake_tests(
    ASSIGNMENT,
    [
        (
            "test_lstm_cell_visible",
            {"lstm_cell_forward": as_student(lstm_step, "lstm_cell_forward", peepholes=False)},
            Failure(None, "^c differs"),
        ),
        (
            "test_lstm_cell_visible",
            {"lstm_cell_forward": as_student(lstm_step, "lstm_cell_forward", peephole_rows="ifo")},
            Failure(None, "^c differs"),
        ),
        (
            "test_lstm_cell_visible",
            {
                "lstm_cell_forward": as_student(
                    lstm_step, "lstm_cell_forward", output_peeks="c_prev"
                )
            },
            Failure(None, "^h differs"),
        ),
        (
            "test_lstm_cell_visible",
            {"lstm_cell_forward": as_student(lstm_step, "lstm_cell_forward", gates_peek="c_t")},
            Failure(None, "^c differs"),
        ),
        (
            "test_lstm_sequence_visible",
            {
                "lstm_sequence_forward": as_student(
                    lstm_sequence, "lstm_sequence_forward", use_mask=False
                )
            },
            # the padding's 99s close the output gate: hs there is within 1e-28 of its 0, but
            # h_last is that near-0 state, not the state after the last real step
            Failure(None, "^h_last differs"),
        ),
        (
            "test_lstm_sequence_visible",
            {
                "lstm_sequence_forward": as_student(
                    lstm_sequence, "lstm_sequence_forward", cell={"peepholes": False}
                )
            },
            Failure(None, "^hs differs"),
        ),
        (
            "test_gru_cell_visible",
            {"gru_cell_forward": as_student(gru_step, "gru_cell_forward", reset="after")},
            Failure(None, "^h differs"),
        ),
        (
            "test_gru_cell_visible",
            {"gru_cell_forward": as_student(gru_step, "gru_cell_forward", reset="on the product")},
            Failure(None, "^h differs"),
        ),
    ],
)


# --------------------------------------------------------------------------------------------
# Lecture 2 wrote the standard cells: adapted to the assignment's signatures, they fail
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lecture():
    """The functions that Lecture 2's cells define (read with jupytext, defined, not run)."""
    return lecture_functions(ROOT / "lectures" / "02_lstm_gru.py")


def lecture_lstm_batched(lecture, x, h, c, params):
    """Lecture 2's lstm_cell with the assignment's weights regrouped into its [W_g U_g]
    matrices and one bias per gate (the candidate's key is "c" there), run row by row: the
    closest a student gets to Part A by copying the lecture's cell. It has no peepholes."""
    weights = {}
    for gate, U_g, W_g, b_g in zip(
        "fico",
        np.split(np.asarray(params["U"]), 4),
        np.split(np.asarray(params["W"]), 4),
        np.split(np.asarray(params["b"]), 4),
        strict=True,
    ):
        weights[f"WU_{gate}"] = torch.tensor(np.concatenate([W_g, U_g], axis=1))
        weights[f"b_{gate}"] = torch.tensor(b_g)
    rows = [
        lecture["lstm_cell"](
            torch.tensor(np.array(x[row])),
            torch.tensor(np.array(h[row])),
            torch.tensor(np.array(c[row])),
            weights,
        )[:2]
        for row in range(len(x))
    ]
    return tuple(torch.stack(states).numpy() for states in zip(*rows, strict=True))


def lecture_gru_batched(lecture, x, h, params):
    """Lecture 2's gru_cell with the assignment's weights regrouped (z and r get the sum of
    their two biases, the candidate its input bias as b_h and its recurrent one as b_hh), run
    row by row. It computes PyTorch's convention."""
    H = np.shape(h)[-1]
    weights = {}
    for index, (gate, label) in enumerate(zip("zrn", "zrh", strict=True)):
        rows = slice(index * H, (index + 1) * H)
        weights[f"U_{label}"] = torch.tensor(np.array(params["U"][rows]))
        weights[f"W_{label}"] = torch.tensor(np.array(params["W"][rows]))
        b_in, b_rec = np.array(params["b_in"][rows]), np.array(params["b_rec"][rows])
        weights[f"b_{label}"] = torch.tensor(b_in if gate == "n" else b_in + b_rec)
    weights["b_hh"] = torch.tensor(np.array(params["b_rec"][2 * H :]))
    states = [
        lecture["gru_cell"](torch.tensor(np.array(x[row])), torch.tensor(np.array(h[row])), weights)
        for row in range(len(x))
    ]
    return torch.stack(states).numpy()


def test_the_lecture_adapters_are_faithful(lecture):
    """Adapted, Lecture 2's cells compute nn.LSTMCell and nn.GRUCell: without peepholes the
    LSTM adapter is Part A's reference, and the GRU adapter is Part C's bug "reset after"."""
    rng = np.random.default_rng(15)
    B, D, H = 3, 4, 2
    x, h, c = rng.normal(size=(B, D)), rng.normal(size=(B, H)), rng.normal(size=(B, H))
    params = hidden._lstm_params(rng, D, H, peepholes=False)
    for got, want in zip(
        lecture_lstm_batched(lecture, x, h, c, params),
        lstm_cell_with_torch(x, h, c, params),
        strict=True,
    ):
        np.testing.assert_allclose(got, want, atol=1e-12)
    gru = hidden.gru_params(rng, D, H)
    np.testing.assert_allclose(
        lecture_gru_batched(lecture, x, h, gru), _gru_cell_output(gru, x, h), atol=1e-12
    )
    np.testing.assert_allclose(
        lecture_gru_batched(lecture, x, h, gru), gru_step(x, h, gru, reset="after"), atol=1e-12
    )


def test_the_lecture_cells_adapted_fail_the_visible_tests(lecture):
    def lstm(x, h, c, params):
        return lecture_lstm_batched(lecture, x, h, c, params)

    def gru(x, h, params):
        return lecture_gru_batched(lecture, x, h, params)

    expect_failure(
        lambda: run_visible(ASSIGNMENT, "test_lstm_cell_visible", lstm_cell_forward=lstm),
        Failure(None, "^c differs"),
    )
    expect_failure(
        lambda: run_visible(ASSIGNMENT, "test_gru_cell_visible", gru_cell_forward=gru),
        Failure(None, "^h differs"),
    )


def test_the_lecture_cells_pasted_as_they_are_fail(lecture):
    """Pasted unchanged, the lecture's cells fail at once (test_assignments.py checks every
    lecture function; here the error says why: torch.cat does not take NumPy arrays, and
    the GRU's weights have other keys)."""
    with raises(TypeError, "Tensor", "numpy.ndarray"):
        run_visible(ASSIGNMENT, "test_lstm_cell_visible", lstm_cell_forward=lecture["lstm_cell"])
    with pytest.raises(KeyError, match="U_z"):
        run_visible(ASSIGNMENT, "test_gru_cell_visible", gru_cell_forward=lecture["gru_cell"])


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
    """nn.GRUCell, PyTorch's convention: a wrong answer, but the trap stops it first."""
    return _gru_cell_output(params, np.array(x), np.array(h))


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


def test_shortcut_implementations_are_right_outside_the_traps_where_torch_can_be():
    """torch has no peephole LSTM and no GRU with the reset gate before W_n: its cells give
    the right answer only without peepholes, and PyTorch's convention of the GRU."""
    rng = np.random.default_rng(0)
    params = {
        "U": rng.normal(size=(8, 3)),
        "W": rng.normal(size=(8, 2)),
        "b": rng.normal(size=8),
        "P": np.zeros((3, 2)),
    }
    x, h, c = rng.normal(size=(4, 3)), rng.normal(size=(4, 2)), rng.normal(size=(4, 2))
    expected = lstm_step(x, h, c, params)
    for implementation in (lstm_cell_with_torch, lstm_cell_with_functional):
        for got, want in zip(implementation(x, h, c, params), expected, strict=True):
            np.testing.assert_allclose(got, want, atol=1e-12)
    gru_params = hidden.gru_params(rng, 3, 2)
    np.testing.assert_allclose(
        gru_cell_with_torch(x, h, gru_params),
        gru_step(x, h, gru_params, reset="after"),
        atol=1e-12,
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
