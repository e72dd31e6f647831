"""Hidden checks of Assignment 2: an LSTM with a projection, packed batches, a GRU, a quote cell.

The hidden test cells of ``a2_lstm_gru`` call, at autograde time::

    check_lstmp_cell(lstmp_cell_forward)
    check_lstmp_packed(lstmp_packed_forward)
    check_gru_cell(gru_cell_forward)
    check_quote_cell_auc(quote_cell_auc)

Each check runs the student's function on inputs the visible tests do not use (other shapes
and seeds, B = 1, P = 1, P = H, non-zero states, non-contiguous arrays, packed batches of one
step or of equal lengths, ties, dead and mirrored cells...), compares the results with
references computed *before* the call, never with the student's code, and checks that bad
input raises ValueError.

- Part A (an LSTM with a projection layer, LSTMP) and Part B (that LSTM over a
  ``PackedSequence``) are checked against ``torch.nn.LSTM`` with ``proj_size`` (float64,
  weights copied from the assignment's gate order f, i, g, o into PyTorch's i, f, g, o), run on
  the same packed batch; where P = H, which ``proj_size`` refuses, against
  ``torch.nn.LSTMCell`` followed by the projection.
- Part C (the GRU of Cho et al., 2014, with the reset gate before the recurrent matrix, which
  torch does not implement) is checked against :func:`cho_gru_step`, written by hand with torch
  operations in float64; ``tests/grading/test_a2_hidden_checks.py`` shows that it is
  ``torch.nn.GRUCell`` exactly where the two conventions agree.
- Part D (the cell whose area under the ROC curve is furthest from 1/2) is checked against
  :func:`pairwise_auc`, which counts every (inside, outside) pair, where the reference
  solution ranks.

While a student's function runs, the routines that would do its work (the recurrent modules
and functions of torch, its packing of sequences, autograd, and every public callable of the
``course`` package except ``course.checks``, ``course.analysis.interpret`` included) are
replaced by traps that raise :class:`ShortcutUsed`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from autograder.hidden import shortcuts
from autograder.hidden.shortcuts import ShortcutUsed
from course.checks import assert_close
from course.checks import snapshot_inputs as _snapshot
from course.checks.cases import Case
from course.checks.cases import describe as _describe
from course.checks.cases import expect_array as _expect_array
from course.checks.cases import expect_unchanged as _expect_unchanged
from course.checks.cases import strided as _strided
from course.checks.cases import unpack as _unpack
from course.checks.rules import RULES

__all__ = [
    "ShortcutUsed",
    "no_shortcuts",
    "shortcut_targets",
    "check_lstmp_cell",
    "check_lstmp_packed",
    "check_gru_cell",
    "check_quote_cell_auc",
]

BY_HAND = "compute the gates by hand with NumPy"
PACKED_BY_HAND = "run the packed batch by hand with NumPy"
AUC_BY_HAND = "count the pairs (or ranks) by hand with NumPy"


# --------------------------------------------------------------------------------------------
# Traps
# --------------------------------------------------------------------------------------------

TRAPS = shortcuts.Traps(RULES["a2_lstm_gru"].library)
shortcut_targets, no_shortcuts, _call_by_hand = TRAPS.methods()
_expect_value_error = shortcuts.value_error_checker(_call_by_hand)
_call_valid = shortcuts.valid_caller(_call_by_hand)


# --------------------------------------------------------------------------------------------
# Helpers and references
# --------------------------------------------------------------------------------------------


LSTM_BLOCKS = "figo"  # the assignment's order: forget, input, candidate g, output
TORCH_LSTM_BLOCKS = "ifgo"
GRU_BLOCKS = "zrn"  # the assignment's order: update, reset, candidate n
TORCH_GRU_BLOCKS = "rzn"

LSTMP_REFERENCE = "torch.nn.LSTM with proj_size"
SQUARE_REFERENCE = "torch.nn.LSTMCell followed by R"
PACKED_REFERENCE = "torch.nn.LSTM with proj_size on the packed batch"
GRU_REFERENCE = "Cho et al.'s GRU (torch, float64)"
AUC_REFERENCE = "every (inside, outside) pair counted"


def _tensor(array: Any) -> torch.Tensor:
    return torch.tensor(np.array(array, dtype=np.float64))


def _reorder(matrix: np.ndarray, blocks: str, order: str) -> torch.Tensor:
    """Rows of ``matrix`` (len(blocks) * H, ...) regrouped from the ``blocks`` to ``order``."""
    parts = dict(
        zip(blocks, np.split(np.asarray(matrix, dtype=np.float64), len(blocks)), strict=True)
    )
    return torch.tensor(np.concatenate([parts[key] for key in order]))


def lstmp_params(
    rng: np.random.Generator, D: int, H: int, P: int, scale: float = 0.6
) -> dict[str, np.ndarray]:
    return {
        "U": scale * rng.normal(size=(4 * H, D)),  # input matrices U_f, U_i, U_g, U_o
        "W": scale * rng.normal(size=(4 * H, P)),  # recurrent matrices W_f, W_i, W_g, W_o
        "b": 0.5 * rng.normal(size=4 * H),
        "R": rng.normal(size=(P, H)) / np.sqrt(H),  # the projection
    }


def torch_lstmp(params: dict) -> torch.nn.LSTM:
    """torch.nn.LSTM (one layer, float64) with proj_size P < H and the weights of ``params``."""
    (H4, D), P = np.shape(params["U"]), np.shape(params["R"])[0]
    layer = torch.nn.LSTM(D, H4 // 4, proj_size=P, dtype=torch.float64)
    with torch.no_grad():
        layer.weight_ih_l0.copy_(_reorder(params["U"], LSTM_BLOCKS, TORCH_LSTM_BLOCKS))
        layer.weight_hh_l0.copy_(_reorder(params["W"], LSTM_BLOCKS, TORCH_LSTM_BLOCKS))
        layer.bias_ih_l0.copy_(_reorder(params["b"], LSTM_BLOCKS, TORCH_LSTM_BLOCKS))
        layer.bias_hh_l0.zero_()
        layer.weight_hr_l0.copy_(_tensor(params["R"]))
    return layer


def lstmp_step_by_torch(
    x: np.ndarray, h_prev: np.ndarray, c_prev: np.ndarray, params: dict
) -> tuple[np.ndarray, np.ndarray, str]:
    """One LSTMP step by torch: nn.LSTM with proj_size over a sequence of one step when P < H,
    nn.LSTMCell followed by R when P = H (proj_size must be below H). Returns h, c and the name
    of the reference."""
    P, H = np.shape(params["R"])
    with torch.no_grad():
        if P < H:
            out, (_, c) = torch_lstmp(params)(
                _tensor(x)[None], (_tensor(h_prev)[None], _tensor(c_prev)[None])
            )
            return out[0].numpy(), c[0].numpy(), LSTMP_REFERENCE
        cell = torch.nn.LSTMCell(np.shape(x)[1], H, dtype=torch.float64)
        cell.weight_ih.copy_(_reorder(params["U"], LSTM_BLOCKS, TORCH_LSTM_BLOCKS))
        cell.weight_hh.copy_(_reorder(params["W"], LSTM_BLOCKS, TORCH_LSTM_BLOCKS))
        cell.bias_ih.copy_(_reorder(params["b"], LSTM_BLOCKS, TORCH_LSTM_BLOCKS))
        cell.bias_hh.zero_()
        shown, c = cell(_tensor(x), (_tensor(h_prev), _tensor(c_prev)))
        return (shown @ _tensor(params["R"]).T).numpy(), c.numpy(), SQUARE_REFERENCE


def packed_by_torch(
    params: dict, sequences: list[np.ndarray], h0: np.ndarray, c0: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The packed batch of ``sequences`` (longest first) and nn.LSTM with proj_size run on it:
    data, batch_sizes, out (the packed output's data), h_n and c_n."""
    packed = torch.nn.utils.rnn.pack_sequence([_tensor(s) for s in sequences], enforce_sorted=True)
    with torch.no_grad():
        out, (h_n, c_n) = torch_lstmp(params)(packed, (_tensor(h0)[None], _tensor(c0)[None]))
    return (
        packed.data.numpy(),
        packed.batch_sizes.numpy(),
        out.data.numpy(),
        h_n[0].numpy(),
        c_n[0].numpy(),
    )


def cho_gru_step(x: np.ndarray, h_prev: np.ndarray, params: dict) -> np.ndarray:
    """The reference of Part C: one GRU step with the reset gate before the recurrent matrix,
    n = tanh(U_n x + b_in_n + W_n (r * h_{t-1}) + b_rec_n), by hand in torch float64."""
    h = _tensor(h_prev)
    H = h.shape[-1]
    U = dict(zip(GRU_BLOCKS, _tensor(params["U"]).split(H), strict=True))
    W = dict(zip(GRU_BLOCKS, _tensor(params["W"]).split(H), strict=True))
    b_in = dict(zip(GRU_BLOCKS, _tensor(params["b_in"]).split(H), strict=True))
    b_rec = dict(zip(GRU_BLOCKS, _tensor(params["b_rec"]).split(H), strict=True))
    x_t = _tensor(x)

    def gate(key: str) -> torch.Tensor:
        return torch.sigmoid(x_t @ U[key].T + b_in[key] + h @ W[key].T + b_rec[key])

    update, reset = gate("z"), gate("r")
    candidate = torch.tanh(x_t @ U["n"].T + b_in["n"] + (reset * h) @ W["n"].T + b_rec["n"])
    return ((1 - update) * candidate + update * h).numpy()


def pairwise_auc(activations: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, int]:
    """The reference of Part D: for each cell, 2 * (pairs won) + (pairs tied), counted over
    every (inside, outside) pair, and the number of pairs: (H,) integers and an int."""
    table = np.asarray(activations, dtype=np.float64)
    inside = np.asarray(labels).astype(bool)
    above, below = table[inside][:, None, :], table[~inside][None, :, :]  # (n_in, 1, H), ...
    twice = 2 * (above > below).sum(axis=(0, 1)) + (above == below).sum(axis=(0, 1))
    return twice.astype(np.int64), int(inside.sum() * (~inside).sum())


# --------------------------------------------------------------------------------------------
# Part A: lstmp_cell_forward
# --------------------------------------------------------------------------------------------

LSTMP_CELL_CASES = (  # scale: of the weights
    Case("B=1, D=1, H=2, P=1", seed=101, B=1, D=1, H=2, P=1, strided=False, scale=0.6),
    Case(
        "B=5, D=4, H=6, P=3, non-zero states",
        seed=102, B=5, D=4, H=6, P=3, strided=False, scale=0.6,
    ),
    Case(
        "B=3, D=2, H=3, P=3 (P = H, a full R)",
        seed=103, B=3, D=2, H=3, P=3, strided=False, scale=0.6,
    ),
    Case(
        "B=2, D=3, H=7, P=2, non-contiguous arrays",
        seed=104, B=2, D=3, H=7, P=2, strided=True, scale=0.6,
    ),
    Case(
        "B=4, D=2, H=5, P=4, saturated gates (pre-activations near +-40)",
        seed=105, B=4, D=2, H=5, P=4, strided=False, scale=12.0,
    ),
)  # fmt: skip


def lstmp_cell_bad_calls() -> list[tuple[Any, ...]]:
    """(description, x, h_prev, c_prev, params) that must raise ValueError: B=2, D=3, H=4,
    P=2 unless said otherwise."""
    rng = np.random.default_rng(109)
    params = lstmp_params(rng, 3, 4, 2)
    x, h, c = rng.normal(size=(2, 3)), rng.normal(size=(2, 2)), rng.normal(size=(2, 4))

    def swapped(key: str, value: np.ndarray) -> dict:
        return {**params, key: value}

    return [
        ("h_prev of 1 row for a batch of 2", x, h[:1], c, params),
        ("c_prev of 1 row for a batch of 2", x, h, c[:1], params),
        ("x of 1 row for a batch of 2", x[:1], h, c, params),
        ("x of one axis, shape (3,)", x[0], h, c, params),
        ("R of shape (H, P) = (4, 2), transposed", x, h, c, swapped("R", params["R"].T)),
        ("W of shape (16, 4) for h_prev of width 2", x, h, c, swapped("W", np.ones((16, 4)))),
        ("b of length 12 for H = 4", x, h, c, swapped("b", np.ones(12))),
        ("c_prev of width 3 for U of 16 rows", x, h, c[:, :3], params),
    ]


def check_lstmp_cell(lstmp_cell_forward: Callable[..., Any]) -> None:
    """Hidden test of Part A: one LSTMP step against torch.nn.LSTM with proj_size (or, where
    P = H, torch.nn.LSTMCell followed by R), and bad shapes refused."""
    for case in LSTMP_CELL_CASES:
        B, D, H, P = case.B, case.D, case.H, case.P
        rng = np.random.default_rng(case.seed)
        params = lstmp_params(rng, D, H, P, case.scale)
        x = rng.normal(size=(B, D))
        h_prev, c_prev = rng.normal(size=(B, P)), 2.0 * rng.normal(size=(B, H))
        h_ref, c_ref, against = lstmp_step_by_torch(x, h_prev, c_prev, params)
        if case.strided:
            x, h_prev, c_prev = _strided(x), _strided(h_prev), _strided(c_prev)
            params = {k: _strided(v) for k, v in params.items()}
        inputs = {"x": x, "h_prev": h_prev, "c_prev": c_prev, "params": params}
        before = _snapshot(inputs)
        with case.named("lstmp_cell_forward"), np.errstate(over="ignore"):
            result = _call_valid(lstmp_cell_forward, BY_HAND, x, h_prev, c_prev, params)
            h, c = _unpack(result, "lstmp_cell_forward", ("h", "c"))
            _expect_unchanged("lstmp_cell_forward", inputs, before)
            _expect_array("c", c, (B, H))
            _expect_array("h", h, (B, P))
            assert_close("c", c, c_ref, atol=1e-9, rtol=1e-7, against=against)
            assert_close("h", h, h_ref, atol=1e-9, rtol=1e-7, against=against)
    bad_calls = lstmp_cell_bad_calls()
    for description, *args in bad_calls:
        _expect_value_error(
            lstmp_cell_forward, BY_HAND, f"lstmp_cell_forward with {description}", *args
        )
    print(f"check_lstmp_cell: all {len(LSTMP_CELL_CASES) + len(bad_calls)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part B: lstmp_packed_forward
# --------------------------------------------------------------------------------------------

PACKED_CASES = (  # lengths: longest first, as a PackedSequence sorts them
    Case(
        "one sequence of one step (batch_sizes [1])",
        seed=201, lengths=(1,), D=2, H=3, P=1, states=False, as_list=False, strided=False,
    ),
    Case(
        "lengths 5, 3, 3, 1 (batch_sizes [4, 3, 3, 1, 1])",
        seed=202, lengths=(5, 3, 3, 1), D=3, H=4, P=2, states=False, as_list=False,
        strided=False,
    ),
    Case(
        "lengths 6, 6, 2, non-zero h0 and c0",
        seed=203, lengths=(6, 6, 2), D=2, H=5, P=3, states=True, as_list=False, strided=False,
    ),
    Case(
        "three sequences of 4 steps (batch_sizes [3, 3, 3, 3]), non-zero h0 and c0",
        seed=204, lengths=(4, 4, 4), D=3, H=3, P=2, states=True, as_list=False, strided=False,
    ),
    Case(
        "lengths 7, 1, batch_sizes given as a list, non-contiguous data",
        seed=205, lengths=(7, 1), D=4, H=3, P=2, states=True, as_list=True, strided=True,
    ),
)  # fmt: skip


def packed_bad_calls() -> list[tuple[Any, ...]]:
    """(description, data, batch_sizes, h0, c0, params) that must raise ValueError: D=2, H=3,
    P=1, lengths 2, 1 (batch_sizes [2, 1], 3 rows of data) unless said otherwise."""
    rng = np.random.default_rng(209)
    params = lstmp_params(rng, 2, 3, 1)
    data, sizes = rng.normal(size=(3, 2)), np.array([2, 1])
    h0, c0 = np.zeros((2, 1)), np.zeros((2, 3))
    return [
        ("empty batch_sizes", data[:0], np.array([], dtype=np.int64), h0, c0, params),
        ("batch_sizes of two axes, [[2, 1]]", data, sizes[None], h0, c0, params),
        ("batch_sizes as floats, [2.0, 1.0]", data, np.array([2.0, 1.0]), h0, c0, params),
        ("batch_sizes [2, 1, 0]", data, np.array([2, 1, 0]), h0, c0, params),
        ("batch_sizes [1, 2] (increasing)", data, np.array([1, 2]), h0[:1], c0[:1], params),
        ("4 rows of data for batch_sizes [2, 1]", np.ones((4, 2)), sizes, h0, c0, params),
        ("data of one axis, shape (3,)", data[:, 0], sizes, h0, c0, params),
        ("h0 of 1 row for batch_sizes [2, 1]", data, sizes, h0[:1], c0, params),
        ("c0 of 3 rows for batch_sizes [2, 1]", data, sizes, h0, np.zeros((3, 3)), params),
        ("h0 of one axis, shape (2,)", data, sizes, h0[:, 0], c0, params),
    ]


def check_lstmp_packed(lstmp_packed_forward: Callable[..., Any]) -> None:
    """Hidden test of Part B: packed batches against torch.nn.LSTM with proj_size run on the
    same PackedSequence, and bad input refused."""
    for case in PACKED_CASES:
        lengths, D, H, P = case.lengths, case.D, case.H, case.P
        rng = np.random.default_rng(case.seed)
        B = len(lengths)
        params = lstmp_params(rng, D, H, P)
        sequences = [rng.normal(size=(length, D)) for length in lengths]
        h0 = rng.normal(size=(B, P)) if case.states else np.zeros((B, P))
        c0 = rng.normal(size=(B, H)) if case.states else np.zeros((B, H))
        data, sizes, out_ref, h_ref, c_ref = packed_by_torch(params, sequences, h0, c0)
        batch_sizes = sizes.tolist() if case.as_list else sizes.copy()
        if case.strided:
            data = _strided(data)
        inputs = {"data": data, "batch_sizes": batch_sizes, "h0": h0, "c0": c0, "params": params}
        before = _snapshot(inputs)
        with case.named("lstmp_packed_forward"):
            args = (data, batch_sizes, h0, c0, params)
            result = _call_valid(lstmp_packed_forward, PACKED_BY_HAND, *args)
            out, final = _unpack(result, "lstmp_packed_forward", ("out", "(h_n, c_n)"))
            h_n, c_n = _unpack(final, "the second output of lstmp_packed_forward", ("h_n", "c_n"))
            _expect_unchanged("lstmp_packed_forward", inputs, before)
            _expect_array("out", out, (len(data), P))
            _expect_array("h_n", h_n, (B, P))
            _expect_array("c_n", c_n, (B, H))
            assert_close("out", out, out_ref, atol=1e-9, rtol=1e-7, against=PACKED_REFERENCE)
            assert_close("h_n", h_n, h_ref, atol=1e-9, rtol=1e-7, against=PACKED_REFERENCE)
            assert_close("c_n", c_n, c_ref, atol=1e-9, rtol=1e-7, against=PACKED_REFERENCE)
    bad_calls = packed_bad_calls()
    for description, *args in bad_calls:
        _expect_value_error(
            lstmp_packed_forward,
            PACKED_BY_HAND,
            f"lstmp_packed_forward with {description}",
            *args,
        )
    print(f"check_lstmp_packed: all {len(PACKED_CASES) + len(bad_calls)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part C: gru_cell_forward
# --------------------------------------------------------------------------------------------

GRU_CASES = (
    Case("B=1, D=1, H=1", seed=301, B=1, D=1, H=1, strided=False),
    Case("B=6, D=4, H=3", seed=302, B=6, D=4, H=3, strided=False),
    Case("B=2, D=5, H=7, non-contiguous arrays", seed=303, B=2, D=5, H=7, strided=True),
)


def gru_params(rng: np.random.Generator, D: int, H: int) -> dict:
    return {
        "U": 0.7 * rng.normal(size=(3 * H, D)),
        "W": 0.7 * rng.normal(size=(3 * H, H)),
        "b_in": 0.5 * rng.normal(size=3 * H),
        "b_rec": 0.5 * rng.normal(size=3 * H),
    }


def check_gru_cell(gru_cell_forward: Callable[..., Any]) -> None:
    """Hidden test of Part C: one GRU step (reset gate before the recurrent matrix) against
    the hand-written reference."""
    for case in GRU_CASES:
        B, D, H = case.B, case.D, case.H
        rng = np.random.default_rng(case.seed)
        params = gru_params(rng, D, H)
        x, h_prev = rng.normal(size=(B, D)), rng.normal(size=(B, H))
        h_ref = cho_gru_step(x, h_prev, params)
        if case.strided:
            x, h_prev = _strided(x), _strided(h_prev)
            params = {k: _strided(v) for k, v in params.items()}
        inputs = {"x": x, "h_prev": h_prev, "params": params}
        before = _snapshot(inputs)
        with case.named("gru_cell_forward"):
            h = _call_by_hand(gru_cell_forward, BY_HAND, x, h_prev, params)
            _expect_unchanged("gru_cell_forward", inputs, before)
            assert_close("h", h, h_ref, atol=1e-9, rtol=1e-7, against=GRU_REFERENCE)
    print(f"check_gru_cell: all {len(GRU_CASES)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part D: quote_cell_auc
# --------------------------------------------------------------------------------------------


def auc_cases() -> list[Case]:
    """Every hidden case: activations (N, H), labels (N,) and best, the cell the statement
    asks for (``tests/grading/test_a2_hidden_checks.py`` checks it against the pair counts)."""
    cases = []
    rng = np.random.default_rng(401)
    labels = rng.random(300) < 0.3
    acts = np.tanh(rng.normal(size=(300, 12)))
    acts[:, 9] = -0.8 * labels + 0.3 * rng.normal(size=300)  # strongly *lower* inside
    acts[:, 4] = 0.4 * labels + 0.4 * rng.normal(size=300)  # higher inside, weaker
    cases.append(
        Case(
            "N=300, H=12, the best cell switches off inside quotes",
            acts=acts,
            labels=labels,
            best=9,
        )  # fmt: skip
    )

    rng = np.random.default_rng(402)
    labels = (rng.random(400) < 0.4).astype(np.int64)
    acts = 0.1 * rng.normal(size=(400, 5))
    acts[:, 0] = 0.0  # a dead cell: its AUC is 1/2 exactly
    spikes = np.flatnonzero(labels)[:12]
    acts[spikes, 1] = 30.0  # fires hard on a few characters inside: the largest correlation
    acts[:, 3] = 0.02 * labels + 0.1 * rng.normal(size=400)  # small shift, clean ranks
    cases.append(
        Case(
            "N=400, H=5, int labels, a dead cell, a spiking cell with the largest correlation",
            acts=acts,
            labels=labels,
            best=3,
        )
    )

    rng = np.random.default_rng(403)
    labels = rng.random(200) < 0.5
    acts = rng.normal(size=(200, 4))
    acts[:, 2] = np.where(labels, rng.random(200) < 0.85, rng.random(200) < 0.25)  # 0 or 1
    acts[:, 0] = labels + 1.1 * rng.normal(size=200)  # continuous, a little less far from 1/2
    cases.append(
        Case(
            "N=200, H=4, a saturated cell (only 0s and 1s: ties everywhere)",
            acts=acts,
            labels=labels,
            best=2,
        )  # fmt: skip
    )

    rng = np.random.default_rng(404)
    labels = rng.random(120) < 0.3
    acts = rng.normal(size=(120, 6))
    acts[:, 2] = labels + 0.8 * rng.normal(size=120)
    acts[:, 4] = acts[:, 2]  # the same cell twice: the lower index wins
    cases.append(
        Case("N=120, H=6, two identical best cells (2 and 4)", acts=acts, labels=labels, best=2)
    )

    rng = np.random.default_rng(405)
    labels = rng.random(90) < 0.4
    acts = rng.normal(size=(90, 5))
    acts[:, 1] = -(labels + 0.7 * rng.normal(size=90))
    acts[:, 3] = -acts[:, 1]  # AUC 1 - AUC of cell 1: just as far from 1/2
    cases.append(
        Case(
            "N=90, H=5, mirrored best cells (1 and 3 = -1 * cell 1)",
            acts=acts,
            labels=labels,
            best=1,
        )  # fmt: skip
    )

    rng = np.random.default_rng(406)
    labels = rng.random(50) < 0.4
    acts = rng.normal(size=(50, 3))
    acts[:, 1] = labels + 0.5 * rng.normal(size=50)
    cases.append(
        Case(
            "N=50, H=3, float32 activations, non-contiguous",
            acts=_strided(acts.astype(np.float32)),
            labels=labels,
            best=1,
        )  # fmt: skip
    )

    rng = np.random.default_rng(407)
    labels = rng.random(80) < 0.5
    cases.append(
        Case(
            "N=80, H=1, a single cell, labels as a list of bools",
            acts=rng.normal(size=(80, 1)),
            labels=labels.tolist(),
            best=0,
        )  # fmt: skip
    )
    return cases


def auc_bad_calls() -> list[tuple[Any, ...]]:
    """(description, activations, labels) that must raise ValueError."""
    acts, labels = np.arange(12.0).reshape(6, 2), np.array([1, 0, 1, 0, 0, 1])
    with_nan = acts.copy()
    with_nan[3, 1] = np.nan
    return [
        ("activations of one axis, shape (6,)", acts[:, 0], labels),
        ("activations of shape (6, 0)", acts[:, :0], labels),
        ("a NaN among the activations", with_nan, labels),
        ("5 labels for 6 characters", acts, labels[:5]),
        ("a label 2", acts, np.array([1, 0, 2, 0, 0, 1])),
        ("a label 0.5", acts, np.array([1, 0, 0.5, 0, 0, 1])),
        ("every label 1 (no character outside)", acts, np.ones(6, dtype=int)),
        ("every label False (no character inside)", acts, np.zeros(6, dtype=bool)),
    ]


def check_quote_cell_auc(quote_cell_auc: Callable[..., Any]) -> None:
    """Hidden test of Part D: the cell whose AUC is furthest from 1/2 (lowest index among
    equals) and its AUC, against every pair counted; bad input refused."""
    cases = auc_cases()
    for case in cases:
        acts, labels = case.acts, case.labels
        twice, pairs = pairwise_auc(acts, labels)
        best = int(np.argmax(np.abs(twice - pairs)))
        auc = twice[best] / (2 * pairs)
        inputs = {"activations": acts, "inside_quotes": labels}
        before = _snapshot(inputs)
        with case.named("quote_cell_auc"):
            result = _call_valid(quote_cell_auc, AUC_BY_HAND, acts, labels)
            cell, value = _unpack(result, "quote_cell_auc", ("cell", "auc"))
            _expect_unchanged("quote_cell_auc", inputs, before)
            if isinstance(cell, (bool, np.bool_)) or not isinstance(cell, (int, np.integer)):
                raise AssertionError(
                    f"quote_cell_auc should return the index of a cell as an int, got "
                    f"{_describe(cell)}"
                )
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (float, np.floating)):
                raise AssertionError(
                    f"quote_cell_auc should return the AUC as a float, got {_describe(value)}"
                )
            if int(cell) != best:
                raise AssertionError(
                    f"quote_cell_auc chose cell {int(cell)} (AUC "
                    f"{twice[int(cell)] / (2 * pairs):.4f} by {AUC_REFERENCE}), but cell {best} "
                    f"is the first furthest from 1/2 (AUC {auc:.4f})"
                    if 0 <= int(cell) < len(twice)
                    else f"quote_cell_auc chose cell {int(cell)}, but there are {len(twice)} cells"
                )
            assert_close("auc", float(value), auc, atol=1e-12, against=AUC_REFERENCE)
    bad_calls = auc_bad_calls()
    for description, *args in bad_calls:
        _expect_value_error(
            quote_cell_auc, AUC_BY_HAND, f"quote_cell_auc with {description}", *args
        )
    print(f"check_quote_cell_auc: all {len(cases) + len(bad_calls)} hidden cases passed.")
