"""Assignment 2: the hidden checks reject plausible bugs and the routines that would answer.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps) is in ``test_assignments.py``. Here: the hidden references (torch's LSTM with
``proj_size`` for the LSTMP cell and the packed batch, the GRU with the reset gate before the
recurrent matrix, every pair counted for the AUC) tied to independent computations;
independent implementations with one switch per plausible bug, each of which must fail its
check with a message that names the case, and the visible test with a message that names its
case and the quantity; Lecture 2's cells, adapted to the assignment's signatures, failing the
visible tests; shortcuts through ``torch.nn.LSTM``, the packing routines, ``torch.nn.GRUCell``
and ``course.analysis.interpret``, caught inside the traps; and the model answer of Part E,
whose numbers are those its cell prints.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from autograder.hidden import a2_lstm_gru as hidden
from tests.grading.bug_injection import (
    Failure,
    expect_failure,
    expect_shortcut,
    expect_traps,
    reference_namespace,
    row_id,
    run_visible,
    solution,
    visible_mistake_tests,
)
from tests.grading.solution_loader import ROOT, as_student, lecture_functions, run_cell
from tests.messages import raises

ASSIGNMENT = "a2_lstm_gru"

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

# --------------------------------------------------------------------------------------------
# Independent implementations with bug switches
# --------------------------------------------------------------------------------------------


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def lstmp_step(
    x,
    h,
    c,
    params,
    *,
    order="figo",
    project=True,
    tanh_c=True,
    in_place=False,
    swap_keys=False,
    project_cell=False,
    check_shapes=True,
):
    x, h = np.asarray(x, dtype=float), np.asarray(h, dtype=float)
    if check_shapes:
        if np.ndim(x) != 2 or np.ndim(h) != 2 or np.ndim(c) != 2:
            raise ValueError("x, h_prev, c_prev must be 2-D")
        if not (len(x) == len(h) == len(c)):
            raise ValueError("rows differ")
        P, H = np.shape(params["R"])
        if (
            np.shape(c)[1] != H
            or np.shape(h)[1] != P
            or np.shape(params["U"]) != (4 * H, x.shape[1])
        ):
            raise ValueError("widths differ")  # fmt: skip
        if np.shape(params["W"]) != (4 * H, P) or np.shape(params["b"]) != (4 * H,):
            raise ValueError("W or b")
    U, W = (params["W"], params["U"]) if swap_keys else (params["U"], params["W"])
    a = x @ np.asarray(U).T + h @ np.asarray(W).T + params["b"]
    blocks = dict(zip(order, np.split(a, 4, axis=1), strict=True))
    f, i, o = (sigmoid(blocks[k]) for k in "fio")
    g = np.tanh(blocks["g"])
    if in_place:  # a bug: the caller's c_prev is overwritten
        c *= f
        c += i * g
        new_c = c
    else:
        new_c = f * c + i * g
    shown = o * (np.tanh(new_c) if tanh_c else new_c)
    if project_cell:  # a bug: R applied to the cell, not to the gated output
        shown = o * np.tanh(new_c @ np.asarray(params["R"]).T @ np.asarray(params["R"]))
    return (shown @ np.asarray(params["R"]).T if project else shown), new_c


def packed_lstmp(
    data,
    batch_sizes,
    h0,
    c0,
    params,
    *,
    align="head",
    reset_finished=False,
    use_initial=True,
    validate=True,
    cell=None,
):
    sizes = np.asarray(batch_sizes)
    if validate:
        if sizes.ndim != 1 or len(sizes) == 0 or sizes.dtype.kind not in "iu":
            raise ValueError("batch_sizes")
        if sizes.min() < 1 or (np.diff(sizes) > 0).any():
            raise ValueError("batch_sizes order")
        if np.ndim(data) != 2 or len(data) != sizes.sum():
            raise ValueError("data")
        if np.ndim(h0) != 2 or np.ndim(c0) != 2 or len(h0) != sizes[0] or len(c0) != sizes[0]:
            raise ValueError("h0, c0")
    data = np.asarray(data, dtype=float)
    h = np.array(h0, dtype=float) if use_initial else np.zeros(np.shape(h0))
    c = np.array(c0, dtype=float) if use_initial else np.zeros(np.shape(c0))
    out = np.zeros((len(data), h.shape[1]))
    start = 0
    for n in sizes:
        n = int(n)
        rows = np.arange(n) if align == "head" else np.arange(len(h) - n, len(h))  # "tail": a bug
        new_h, new_c = lstmp_step(data[start : start + n], h[rows], c[rows], params, **(cell or {}))
        if reset_finished:  # a bug: the sequences that ended lose their state
            h, c = np.zeros_like(h), np.zeros_like(c)
        h[rows], c[rows] = new_h, new_c
        out[start : start + n] = new_h
        start += n
    return out, (h, c)


def batch_major(data, batch_sizes, h0, c0, params):
    """A bug: data read as B sequences of T steps each (right only when every length is T)."""
    sizes = np.asarray(batch_sizes)
    B, T = int(sizes[0]), len(sizes)
    if len(data) != B * T:
        return packed_lstmp(data, batch_sizes, h0, c0, params, align="tail")
    xs = np.asarray(data, dtype=float).reshape(B, T, -1)
    h, c = np.array(h0, dtype=float), np.array(c0, dtype=float)
    out = np.zeros((B, T, h.shape[1]))
    for t in range(T):
        h, c = lstmp_step(xs[:, t], h, c, params)
        out[:, t] = h
    return out.reshape(B * T, -1), (h, c)


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


def auc_cell(
    acts,
    labels,
    *,
    statistic="auc",
    furthest=True,
    ties=0.5,
    first=True,
    validate=True,
    as_int=True,
):
    a = np.asarray(acts, dtype=float)
    y = np.asarray(labels)
    if validate:
        if a.ndim != 2 or a.shape[1] == 0 or np.isnan(a).any():
            raise ValueError("activations")
        if y.shape != (len(a),) or not np.isin(y, (0, 1)).all():
            raise ValueError("labels")
        if y.astype(bool).all() or not y.astype(bool).any():
            raise ValueError("one kind")
    y = y.astype(bool)
    n_in, n_out = y.sum(), (~y).sum()
    if statistic == "pearson":  # Lecture 2's statistic: |r|, its argmax
        centred, target = a - a.mean(0), y - y.mean()
        spread = np.sqrt((centred**2).sum(0) * (target**2).sum())
        r = np.divide(target @ centred, spread, out=np.zeros(a.shape[1]), where=spread > 0)
        best = int(np.argmax(np.abs(r)))
    ups, downs = [], []
    for j in range(a.shape[1]):
        above = a[y, j][:, None]
        below = a[~y, j][None, :]
        ups.append((above > below).sum())
        downs.append((above == below).sum())
    score = (np.array(ups) + ties * np.array(downs)) / (n_in * n_out)
    if statistic == "auc":
        twice = 2 * (np.array(ups) + ties * np.array(downs))  # 2 wins + ties, if ties = 1/2
        distance = np.abs(twice - n_in * n_out)
        if not furthest:  # a bug: the largest AUC, so a cell that switches off never wins
            distance = score
        best = (
            int(np.argmax(distance))
            if first
            else len(distance) - 1 - int(np.argmax(distance[::-1]))
        )
    return (best if as_int else float(best)), float(score[best])


# --------------------------------------------------------------------------------------------
# The independent implementations pass; the references are what they say
# --------------------------------------------------------------------------------------------


def test_the_independent_implementations_pass_too():
    hidden.check_lstmp_cell(as_student(lstmp_step, "lstmp_cell_forward"))
    hidden.check_lstmp_packed(as_student(packed_lstmp, "lstmp_packed_forward"))
    hidden.check_gru_cell(as_student(gru_step, "gru_cell_forward"))
    hidden.check_quote_cell_auc(as_student(auc_cell, "quote_cell_auc"))


def unpacked_by_hand(data, batch_sizes, h0, c0, params):
    """Each sequence run alone, by the independent cell: out in the packed order, h_n, c_n."""
    sizes = np.asarray(batch_sizes)
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    out = np.zeros((len(data), np.shape(h0)[1]))
    h_n, c_n = np.array(h0, dtype=float), np.array(c0, dtype=float)
    for b in range(int(sizes[0])):
        h, c = h_n[b : b + 1], c_n[b : b + 1]
        for t in range(int((sizes > b).sum())):
            h, c = lstmp_step(data[starts[t] + b][None], h, c, params)
            out[starts[t] + b] = h[0]
        h_n[b], c_n[b] = h[0], c[0]
    return out, (h_n, c_n)


def test_the_hidden_references_pass_the_visible_tests():
    """The visible tests' expected numbers are the torch references' on the visible inputs
    (course/checks/a2_lstm_gru.py prints them to ten decimals), and Part D's is the pair count.
    The visible tests run under the traps, so the independent implementations answer them
    and record their inputs; the references, outside the traps, then give the same values."""
    calls = {}

    def recorded(name, function):
        def record(*args):
            calls[name] = (args, function(*args))
            return calls[name][1]

        return record

    def pairs(acts, labels):
        twice, count = hidden.pairwise_auc(acts, labels)
        best = int(np.argmax(np.abs(twice - count)))
        return best, float(twice[best] / (2 * count))

    run_visible(ASSIGNMENT, "test_lstmp_cell_visible", lstmp_cell_forward=recorded("A", lstmp_step))
    run_visible(
        ASSIGNMENT,
        "test_lstmp_packed_visible",
        lstmp_packed_forward=recorded("B", unpacked_by_hand),
    )
    run_visible(ASSIGNMENT, "test_gru_cell_visible", gru_cell_forward=hidden.cho_gru_step)
    run_visible(ASSIGNMENT, "test_quote_cell_auc_visible", quote_cell_auc=pairs)

    (x, h, c, params), (h_own, c_own) = calls["A"]
    h_ref, c_ref, against = hidden.lstmp_step_by_torch(x, h, c, params)
    assert against == hidden.LSTMP_REFERENCE
    np.testing.assert_allclose(h_own, h_ref, atol=1e-12)
    np.testing.assert_allclose(c_own, c_ref, atol=1e-12)
    (data, sizes, h0, c0, params), (out_own, (h_n_own, c_n_own)) = calls["B"]
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    sequences = [
        np.stack([data[starts[t] + b] for t in range(int((sizes > b).sum()))])
        for b in range(int(sizes[0]))
    ]
    packed_data, packed_sizes, out, h_n, c_n = hidden.packed_by_torch(params, sequences, h0, c0)
    np.testing.assert_array_equal(packed_data, data)
    np.testing.assert_array_equal(packed_sizes, sizes)
    for own, ref in ((out_own, out), (h_n_own, h_n), (c_n_own, c_n)):
        np.testing.assert_allclose(own, ref, atol=1e-12)


@pytest.mark.parametrize(("B", "D", "H", "P"), [(1, 1, 2, 1), (4, 3, 5, 2), (3, 2, 4, 4)])
def test_the_lstmp_reference_is_the_equations(B, D, H, P):
    """torch's LSTM with proj_size (or LSTMCell and R where P = H) computes the statement's
    equations, and the projection matters."""
    rng = np.random.default_rng(11 + H)
    params = hidden.lstmp_params(rng, D, H, P)
    x, h, c = rng.normal(size=(B, D)), rng.normal(size=(B, P)), rng.normal(size=(B, H))
    h_ref, c_ref, _ = hidden.lstmp_step_by_torch(x, h, c, params)
    h_own, c_own = lstmp_step(x, h, c, params)
    np.testing.assert_allclose(h_ref, h_own, atol=1e-12)
    np.testing.assert_allclose(c_ref, c_own, atol=1e-12)
    other = {**params, "R": rng.normal(size=(P, H))}
    assert np.abs(hidden.lstmp_step_by_torch(x, h, c, other)[0] - h_ref).max() > 1e-3


def test_the_packed_reference_is_each_sequence_run_alone():
    rng = np.random.default_rng(12)
    lengths, D, H, P = (5, 4, 4, 2, 1), 3, 4, 2
    params = hidden.lstmp_params(rng, D, H, P)
    sequences = [rng.normal(size=(n, D)) for n in lengths]
    h0, c0 = rng.normal(size=(len(lengths), P)), rng.normal(size=(len(lengths), H))
    data, sizes, out, h_n, c_n = hidden.packed_by_torch(params, sequences, h0, c0)
    assert sizes.tolist() == [5, 4, 3, 3, 1]
    np.testing.assert_array_equal(data[:5], np.stack([s[0] for s in sequences]))
    by_hand = unpacked_by_hand(data, sizes, h0, c0, params)
    np.testing.assert_allclose(by_hand[0], out, atol=1e-12)
    np.testing.assert_allclose(by_hand[1][0], h_n, atol=1e-12)
    np.testing.assert_allclose(by_hand[1][1], c_n, atol=1e-12)


def test_the_pair_count_is_the_mann_whitney_statistic():
    """Every pair counted gives, per cell, 2U where U is the Mann-Whitney statistic of the
    inside characters (ranks with ties averaged), written here another way."""
    rng = np.random.default_rng(13)
    labels = rng.random(60) < 0.4
    acts = np.round(rng.normal(size=(60, 4)), 1)  # rounded: ties
    twice, pairs = hidden.pairwise_auc(acts, labels)
    for j in range(4):
        values = acts[:, j]
        ranks = np.array([(values < v).sum() + ((values == v).sum() + 1) / 2 for v in values])
        u = ranks[labels].sum() - labels.sum() * (labels.sum() + 1) / 2
        assert twice[j] == 2 * u
    assert pairs == labels.sum() * (~labels).sum()


def test_the_auc_cases_are_what_their_labels_say():
    """The best cell of each case is the one its label and ``best`` name; where the label
    says so, Lecture 2's correlation picks another cell, and ties decide."""
    cases = {case.label: case for case in hidden.auc_cases()}
    for case in cases.values():
        twice, pairs = hidden.pairwise_auc(case.acts, case.labels)
        assert int(np.argmax(np.abs(twice - pairs))) == case.best, case.label
    spike = next(c for label, c in cases.items() if "spiking" in label)
    assert auc_cell(spike.acts, spike.labels, statistic="pearson")[0] == 1
    saturated = next(c for label, c in cases.items() if "saturated" in label)
    assert auc_cell(saturated.acts, saturated.labels, ties=0.0)[0] != saturated.best


# --------------------------------------------------------------------------------------------
# The GRU reference is not nn.GRUCell, except where the conventions agree
# --------------------------------------------------------------------------------------------


def _reorder(m, blocks, order):
    parts = dict(zip(blocks, np.split(np.asarray(m, dtype=float), len(blocks)), strict=True))
    return torch.tensor(np.concatenate([parts[k] for k in order]))


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


CELL = r"^lstmp_cell_forward, B=1, D=1, H=2, P=1$"
SQUARE = r"^lstmp_cell_forward, B=3, D=2, H=3, P=3 \(P = H, a full R\)$"
PACKED = r"^lstmp_packed_forward, lengths 5, 3, 3, 1"
FIRST_PACKED = r"^lstmp_packed_forward, one sequence of one step"
STATES = r"^lstmp_packed_forward, lengths 6, 6, 2, non-zero h0 and c0$"
GRU = r"^gru_cell_forward, B=1, D=1, H=1$"
GRU_FULL = r"^gru_cell_forward, B=6, D=4, H=3$"
ANTI = r"^quote_cell_auc, .*switches off inside quotes"
SPIKE = r"^quote_cell_auc, .*a spiking cell"
DEAD = r"^quote_cell_auc, .*a dead cell"
TWINS = r"^quote_cell_auc, .*two identical best cells"
BAD = "should raise ValueError"


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"order": "ifgo"}, Failure(CELL, "^c differs")),
        ({"tanh_c": False}, Failure(CELL, "^h differs")),
        ({"in_place": True}, Failure(CELL, r"in place: c_prev\b")),
        # Lecture 2's cell: no projection, h has H columns
        ({"project": False}, Failure(CELL, "^h should be a NumPy array of shape")),
        # R applied to the cell state (and back), not to the gated output
        ({"project_cell": True}, Failure(CELL, "^h differs")),
        # the keys the other way round: U and W have the same shape where D = P
        ({"swap_keys": True}, Failure(CELL, "^c differs")),
        # no check of the shapes: an h_prev of one row is broadcast against the batch
        ({"check_shapes": False}, Failure(None, "h_prev of 1 row", BAD)),
    ],
    ids=row_id,
)
def test_check_lstmp_cell_rejects_bug(bugs, failure):
    student = as_student(lstmp_step, "lstmp_cell_forward", **bugs)
    expect_failure(lambda: hidden.check_lstmp_cell(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        # the sequences still running taken from the end of the batch, not its start
        ({"align": "tail"}, Failure(PACKED, "^out differs")),
        # the sequences that ended lose their state
        ({"reset_finished": True}, Failure(PACKED, "^h_n differs")),
        ({"use_initial": False}, Failure(STATES, "^out differs")),
        ({"validate": False}, Failure(None, "empty batch_sizes", BAD)),
        # the steps taken by Lecture 2's cell, without the projection
        ({"cell": {"project": False}}, Failure(FIRST_PACKED, "raised ValueError|shape|differs")),
    ],
    ids=row_id,
)
def test_check_lstmp_packed_rejects_bug(bugs, failure):
    student = as_student(packed_lstmp, "lstmp_packed_forward", **bugs)
    expect_failure(lambda: hidden.check_lstmp_packed(student), failure)


def test_check_lstmp_packed_rejects_data_read_batch_major():
    """data reshaped to (B, T, D): right for sequences of equal length only."""
    student = as_student(batch_major, "lstmp_packed_forward")
    expect_failure(lambda: hidden.check_lstmp_packed(student), Failure(PACKED, "^out differs"))


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


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"furthest": False}, Failure(ANTI, "chose cell 4", "but cell 9")),
        # Lecture 2's statistic: the largest |Pearson r|
        ({"statistic": "pearson"}, Failure(SPIKE, "chose cell 1", "but cell 3")),
        # ties counted as losses (or wins): the dead cell's AUC is 0 (or 1), the furthest of all;
        # the saturated case would fail next (test_the_auc_cases_are_what_their_labels_say)
        ({"ties": 0.0}, Failure(DEAD, "chose cell 0", "but cell 3")),
        ({"ties": 1.0}, Failure(DEAD, "chose cell 0", "but cell 3")),
        ({"first": False}, Failure(TWINS, "chose cell 4", "but cell 2")),
        ({"as_int": False}, Failure(ANTI, "should return the index", "as an int")),
        ({"validate": False}, Failure(None, "of one axis", BAD, "IndexError")),
    ],
    ids=row_id,
)
def test_check_quote_cell_auc_rejects_bug(bugs, failure):
    student = as_student(auc_cell, "quote_cell_auc", **bugs)
    expect_failure(lambda: hidden.check_quote_cell_auc(student), failure)


# The cases of the visible tests (course/checks/a2_lstm_gru.py), as their failures name them.
VISIBLE_CELL = r"^lstmp_cell_forward, two rows"
VISIBLE_PACKED = r"^lstmp_packed_forward, three packed sequences of lengths 3, 2 and 1"
VISIBLE_GRU = r"^gru_cell_forward, two rows"
VISIBLE_AUC = r"^quote_cell_auc, five cells"

test_visible_tests_name_the_mistake = visible_mistake_tests(
    ASSIGNMENT,
    [
        (
            "test_lstmp_cell_visible",
            {"lstmp_cell_forward": as_student(lstmp_step, "lstmp_cell_forward", order="ifgo")},
            Failure(VISIBLE_CELL, "^c differs"),
        ),
        (
            "test_lstmp_cell_visible",
            {"lstmp_cell_forward": as_student(lstmp_step, "lstmp_cell_forward", project=False)},
            Failure(VISIBLE_CELL, "^h has shape"),
        ),
        (
            "test_lstmp_cell_visible",
            {"lstmp_cell_forward": as_student(lstmp_step, "lstmp_cell_forward", project_cell=True)},
            Failure(VISIBLE_CELL, "^h differs"),
        ),
        (
            "test_lstmp_packed_visible",
            {
                "lstmp_packed_forward": as_student(
                    packed_lstmp, "lstmp_packed_forward", align="tail"
                )
            },
            Failure(VISIBLE_PACKED, "^out differs"),
        ),
        (
            "test_lstmp_packed_visible",
            {
                "lstmp_packed_forward": as_student(
                    packed_lstmp, "lstmp_packed_forward", reset_finished=True
                )
            },
            Failure(VISIBLE_PACKED, "^h_n differs"),
        ),
        (
            "test_lstmp_packed_visible",
            {
                "lstmp_packed_forward": as_student(
                    packed_lstmp, "lstmp_packed_forward", use_initial=False
                )
            },
            Failure(VISIBLE_PACKED, "^out differs"),
        ),
        (
            "test_gru_cell_visible",
            {"gru_cell_forward": as_student(gru_step, "gru_cell_forward", reset="after")},
            Failure(VISIBLE_GRU, "^h differs"),
        ),
        (
            "test_gru_cell_visible",
            {"gru_cell_forward": as_student(gru_step, "gru_cell_forward", reset="on the product")},
            Failure(VISIBLE_GRU, "^h differs"),
        ),
        (
            "test_quote_cell_auc_visible",
            {"quote_cell_auc": as_student(auc_cell, "quote_cell_auc", statistic="pearson")},
            Failure(VISIBLE_AUC, "chose cell 1", "largest correlation"),
        ),
        (
            "test_quote_cell_auc_visible",
            {"quote_cell_auc": as_student(auc_cell, "quote_cell_auc", furthest=False)},
            Failure(VISIBLE_AUC, "chose cell 1|chose cell [024]"),
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
    closest a student gets to Part A by copying the lecture's cell (its [W_g U_g] acts on
    [h_{t-1}; x_t], P + D numbers). It has no projection: its h is o * tanh(c), of H numbers."""
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
    """Adapted, Lecture 2's cells compute Part A's cell without the projection and
    nn.GRUCell, Part C's bug "reset after"."""
    rng = np.random.default_rng(15)
    B, D, H, P = 3, 4, 3, 2
    x, h, c = rng.normal(size=(B, D)), rng.normal(size=(B, P)), rng.normal(size=(B, H))
    params = hidden.lstmp_params(rng, D, H, P)
    for got, want in zip(
        lecture_lstm_batched(lecture, x, h, c, params),
        lstmp_step(x, h, c, params, project=False),
        strict=True,
    ):
        np.testing.assert_allclose(got, want, atol=1e-12)
    gru = hidden.gru_params(rng, D, H)
    h = rng.normal(size=(B, H))
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
        lambda: run_visible(ASSIGNMENT, "test_lstmp_cell_visible", lstmp_cell_forward=lstm),
        Failure(VISIBLE_CELL, "^h has shape"),
    )
    expect_failure(
        lambda: run_visible(ASSIGNMENT, "test_gru_cell_visible", gru_cell_forward=gru),
        Failure(VISIBLE_GRU, "^h differs"),
    )


def test_the_lecture_cells_pasted_as_they_are_fail(lecture):
    """Pasted unchanged, the lecture's cells fail at once (test_assignments.py checks every
    lecture function; here the error says why: torch.cat does not take NumPy arrays, and
    the GRU's weights have other keys)."""
    with raises(TypeError, "Tensor", "numpy.ndarray"):
        run_visible(ASSIGNMENT, "test_lstmp_cell_visible", lstmp_cell_forward=lecture["lstm_cell"])
    with pytest.raises(KeyError, match="U_z"):
        run_visible(ASSIGNMENT, "test_gru_cell_visible", gru_cell_forward=lecture["gru_cell"])


# --------------------------------------------------------------------------------------------
# Shortcuts: torch's recurrent modules, its packing and the course helpers are trapped
# --------------------------------------------------------------------------------------------


def lstmp_cell_with_torch(x, h, c, params):
    """nn.LSTM with proj_size over one step: the right answer, outside the traps."""
    layer = hidden.torch_lstmp(params)
    with torch.no_grad():
        out, (_, c_new) = layer(
            torch.tensor(np.array(x))[None],
            (torch.tensor(np.array(h))[None], torch.tensor(np.array(c))[None]),
        )
    return out[0].numpy(), c_new[0].numpy()


def lstmp_cell_that_hides_the_trap(x, h, c, params):
    try:
        return lstmp_cell_with_torch(x, h, c, params)
    except Exception:  # noqa: BLE001 - a student who catches everything
        return lstmp_step(np.asarray(x), np.asarray(h), np.asarray(c), params)


def packed_with_torch(data, batch_sizes, h0, c0, params):
    """nn.LSTM with proj_size on a PackedSequence built from the arguments."""
    packed = torch.nn.utils.rnn.PackedSequence(
        torch.tensor(np.array(data)), torch.tensor(np.asarray(batch_sizes))
    )
    with torch.no_grad():
        out, (h_n, c_n) = hidden.torch_lstmp(params)(
            packed, (torch.tensor(np.array(h0))[None], torch.tensor(np.array(c0))[None])
        )
    return out.data.numpy(), (h_n[0].numpy(), c_n[0].numpy())


def packed_unpacked_by_torch(data, batch_sizes, h0, c0, params):
    """pad_packed_sequence to undo the packing, then a masked loop of the student's own cell:
    the layout, which is the part's point, left to torch."""
    packed = torch.nn.utils.rnn.PackedSequence(
        torch.tensor(np.array(data)), torch.tensor(np.asarray(batch_sizes))
    )
    padded, lengths = torch.nn.utils.rnn.pad_packed_sequence(packed, batch_first=True)
    xs, lengths = padded.numpy(), lengths.numpy()
    h, c = np.array(h0, dtype=float), np.array(c0, dtype=float)
    steps = []
    for t in range(xs.shape[1]):
        new_h, new_c = lstmp_step(xs[:, t], h, c, params)
        real = (lengths > t)[:, None]
        h, c = np.where(real, new_h, h), np.where(real, new_c, c)
        steps.append(new_h[lengths > t])
    return np.concatenate(steps), (h, c)


def gru_cell_with_torch(x, h, params):
    """nn.GRUCell, PyTorch's convention: a wrong answer, but the trap stops it first."""
    return _gru_cell_output(params, np.array(x), np.array(h))


def auc_cell_with_course(acts, labels):
    """Lecture 2's helper: the largest |Pearson r| (a wrong answer, but trapped first)."""
    from course.analysis.interpret import correlations

    r = correlations(acts, np.asarray(labels, dtype=float))
    return int(np.argmax(np.abs(r))), 0.5


@pytest.mark.parametrize(
    ("check", "implementation", "name", "called"),
    [
        ("check_lstmp_cell", lstmp_cell_with_torch, "lstmp_cell_forward", "torch.nn.LSTM"),
        (
            "check_lstmp_cell",
            lstmp_cell_that_hides_the_trap,
            "lstmp_cell_forward",
            r"torch.nn.LSTM \(and caught the error\)",
        ),
        ("check_lstmp_packed", packed_with_torch, "lstmp_packed_forward", "torch.nn.LSTM"),
        (
            "check_lstmp_packed",
            packed_unpacked_by_torch,
            "lstmp_packed_forward",
            "torch.nn.utils.rnn.pad_packed_sequence",
        ),
        ("check_gru_cell", gru_cell_with_torch, "gru_cell_forward", "torch.nn.GRUCell"),
        (
            "check_quote_cell_auc",
            auc_cell_with_course,
            "quote_cell_auc",
            "course.analysis.interpret.correlations",
        ),
    ],
)
def test_checks_reject_shortcuts(check, implementation, name, called):
    student = as_student(implementation, name)
    expect_shortcut(lambda: getattr(hidden, check)(student), name, called)


def test_shortcut_implementations_are_right_outside_the_traps():
    """Outside the traps, nn.LSTM with proj_size and the unpacking by torch give Parts A and B
    (so only the traps stop them), and nn.GRUCell gives PyTorch's convention of the GRU."""
    rng = np.random.default_rng(0)
    params = hidden.lstmp_params(rng, 3, 4, 2)
    x, h, c = rng.normal(size=(4, 3)), rng.normal(size=(4, 2)), rng.normal(size=(4, 4))
    for got, want in zip(lstmp_cell_with_torch(x, h, c, params), lstmp_step(x, h, c, params), strict=True):  # fmt: skip
        np.testing.assert_allclose(got, want, atol=1e-12)
    sequences = [rng.normal(size=(n, 3)) for n in (4, 2, 2)]
    h0, c0 = rng.normal(size=(3, 2)), rng.normal(size=(3, 4))
    data, sizes, out, h_n, c_n = hidden.packed_by_torch(params, sequences, h0, c0)
    for implementation in (packed_with_torch, packed_unpacked_by_torch):
        got_out, (got_h, got_c) = implementation(data, sizes, h0, c0, params)
        np.testing.assert_allclose(got_out, out, atol=1e-12)
        np.testing.assert_allclose(got_h, h_n, atol=1e-12)
        np.testing.assert_allclose(got_c, c_n, atol=1e-12)
    gru_params = hidden.gru_params(rng, 3, 2)
    x, h = rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
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
    "torch.nn.utils.rnn.pack_padded_sequence",
    "torch.nn.utils.rnn.pad_packed_sequence",
    "torch.nn.utils.rnn.pack_sequence",
    "torch.nn.utils.rnn.unpack_sequence",
    "torch.autograd.grad",
    "torch.Tensor.backward",
    "course.analysis.interpret.best_cells",
    "course.analysis.interpret.correlations",
    "course.analysis.interpret.lstm_states",
    "course.models.recurrent.CharLSTM",
}


def test_traps_cover_the_routines_that_would_do_the_work():
    expect_traps(hidden, REQUIRED_TRAPS)


# --------------------------------------------------------------------------------------------
# Part E: the model answer's numbers are those its cell prints
# --------------------------------------------------------------------------------------------

# Numbers of the model answer that are the question's own settings, not results.
SETTINGS = {"1", "2", "4", "6", "32", "64", "128"}


def test_the_model_answer_quotes_the_numbers_the_part_e_cell_prints(capsys):
    """Every number of Part E's model answer (counts, ratios, singular values) appears in what
    the reference's cell for Part E prints, and the prediction (rank at most P) holds there."""
    notebook = solution(ASSIGNMENT).notebook
    cell = next(c.source for c in notebook.cells if "The numbers for Part E" in c.source)
    answer = next(c.source for c in notebook.cells if "**Model answer.**" in c.source)
    capsys.readouterr()
    run_cell(cell, dict(reference_namespace(ASSIGNMENT)), "Part E's cell")
    printed = capsys.readouterr().out
    assert "2 above 1e-6, 4 below" in printed, printed
    said = answer.split("*Grading notes")[0]
    numbers = [
        n.rstrip(",") for n in re.findall(r"(?<![\w.^])\d[\d,]*(?:\.\d+)?(?:e-\d+)?(?![\w^])", said)
    ]
    assert len(numbers) >= 15, numbers
    missing = [n for n in numbers if n not in SETTINGS and n not in printed]
    assert missing == [], f"numbers of the model answer that the cell does not print: {missing}"
