"""Hidden checks of Assignment 2: LSTM and GRU cells, a masked LSTM loop, a quote cell.

The hidden test cells of ``a2_lstm_gru`` call, at autograde time::

    check_lstm_cell(lstm_cell_forward)
    check_lstm_sequence(lstm_sequence_forward)
    check_gru_cell(gru_cell_forward)
    check_select_quote_cell(select_quote_cell)

Each check runs the student's function on inputs the visible tests do not use (other shapes
and seeds, B = 1, H = 1, non-zero states, non-contiguous arrays, padded batches, constant and
negatively correlated cells...) and compares the results with references computed *before*
the call, never with the student's code. The two cells are variants that torch does not
implement: an LSTM with peephole connections (Part A, and Part B, which runs it) and the GRU
of Cho et al. (2014), with the reset gate before the recurrent matrix (Part C). Their
references, :func:`peephole_lstm_step` and :func:`cho_gru_step`, are written by hand with
torch operations in float64. The library ties them down where it can: the LSTM cases without
peepholes (P = 0) are checked against ``torch.nn.LSTMCell`` and ``torch.nn.LSTM`` (packed
sequences), with the weights reordered from the assignment's gate order (f, i, g, o) into
PyTorch's (i, f, g, o); ``tests/grading/test_a2_hidden_checks.py`` shows that the peephole
reference with P = 0 is ``torch.nn.LSTMCell``, and that the GRU reference is
``torch.nn.GRUCell`` exactly where the two conventions agree.

While a student's function runs, the routines that would do its work (the recurrent modules
and functions of torch, autograd, and every public callable of the ``course`` package except
``course.checks``) are replaced by traps that raise :class:`ShortcutUsed`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from autograder.hidden import shortcuts
from autograder.hidden.shortcuts import Case, ShortcutUsed
from autograder.hidden.shortcuts import describe as _describe
from autograder.hidden.shortcuts import expect_unchanged as _expect_unchanged
from autograder.hidden.shortcuts import snapshot as _snapshot
from autograder.hidden.shortcuts import strided as _strided
from autograder.hidden.shortcuts import unpack as _unpack
from course.checks import assert_close
from course.checks.rules import RULES

__all__ = [
    "ShortcutUsed",
    "no_shortcuts",
    "shortcut_targets",
    "check_lstm_cell",
    "check_lstm_sequence",
    "check_gru_cell",
    "check_select_quote_cell",
]

BY_HAND = "compute the gates by hand with NumPy"
SELECT_BY_HAND = "compute the correlations by hand with NumPy"


# --------------------------------------------------------------------------------------------
# Traps
# --------------------------------------------------------------------------------------------

TRAPS = shortcuts.Traps(RULES["a2_lstm_gru"].library)
shortcut_targets, no_shortcuts, _call_by_hand = TRAPS.methods()


# --------------------------------------------------------------------------------------------
# Helpers and references
# --------------------------------------------------------------------------------------------


LSTM_BLOCKS = "figo"  # the assignment's order: forget, input, candidate g, output
TORCH_LSTM_BLOCKS = "ifgo"
GRU_BLOCKS = "zrn"  # the assignment's order: update, reset, candidate n
TORCH_GRU_BLOCKS = "rzn"

LSTM_REFERENCE = "the peephole equations (torch, float64)"
SEQUENCE_REFERENCE = "the peephole cell over each sequence's real steps"
GRU_REFERENCE = "Cho et al.'s GRU (torch, float64)"


def _tensor(array: Any) -> torch.Tensor:
    return torch.tensor(np.array(array, dtype=np.float64))


def _reorder(matrix: np.ndarray, blocks: str, order: str) -> torch.Tensor:
    """Rows of ``matrix`` (len(blocks) * H, ...) regrouped from the ``blocks`` to ``order``."""
    parts = dict(
        zip(blocks, np.split(np.asarray(matrix, dtype=np.float64), len(blocks)), strict=True)
    )
    return torch.tensor(np.concatenate([parts[key] for key in order]))


def _lstm_params(
    rng: np.random.Generator, D: int, H: int, scale: float = 0.6, peepholes: bool = True
) -> dict:
    return {
        "U": scale * rng.normal(size=(4 * H, D)),  # input matrices U_f, U_i, U_g, U_o
        "W": scale * rng.normal(size=(4 * H, H)),  # recurrent matrices W_f, W_i, W_g, W_o
        "b": 0.5 * rng.normal(size=4 * H),
        "P": rng.normal(size=(3, H)) if peepholes else np.zeros((3, H)),  # rows p_f, p_i, p_o
    }


def peephole_lstm_step(
    x: np.ndarray, h_prev: np.ndarray, c_prev: np.ndarray, params: dict
) -> tuple[np.ndarray, np.ndarray]:
    """The reference of Part A: one peephole LSTM step for a batch, by hand in torch float64.

    The forget and input gates see c_{t-1}, the output gate sees c_t, each unit its own unit
    (rows p_f, p_i, p_o of params["P"]); with P = 0 this is torch.nn.LSTMCell's cell.
    """
    c_prev_t = _tensor(c_prev)
    H = c_prev_t.shape[-1]
    scores = _tensor(x) @ _tensor(params["U"]).T + _tensor(h_prev) @ _tensor(params["W"]).T
    blocks = dict(zip(LSTM_BLOCKS, (scores + _tensor(params["b"])).split(H, dim=-1), strict=True))
    p_f, p_i, p_o = _tensor(params["P"])
    forget = torch.sigmoid(blocks["f"] + p_f * c_prev_t)
    write = torch.sigmoid(blocks["i"] + p_i * c_prev_t)
    c = forget * c_prev_t + write * torch.tanh(blocks["g"])
    out = torch.sigmoid(blocks["o"] + p_o * c)
    return (out * torch.tanh(c)).numpy(), c.numpy()


def _torch_lstm_cell(params: dict, D: int, H: int) -> torch.nn.LSTMCell:
    """torch.nn.LSTMCell with the weights of ``params`` (whose P must be 0: it has none)."""
    if np.any(params["P"]):
        raise ValueError("torch.nn.LSTMCell has no peephole connections: P must be 0")
    cell = torch.nn.LSTMCell(D, H, dtype=torch.float64)
    with torch.no_grad():
        cell.weight_ih.copy_(_reorder(params["U"], LSTM_BLOCKS, TORCH_LSTM_BLOCKS))
        cell.weight_hh.copy_(_reorder(params["W"], LSTM_BLOCKS, TORCH_LSTM_BLOCKS))
        cell.bias_ih.copy_(_reorder(params["b"], LSTM_BLOCKS, TORCH_LSTM_BLOCKS))
        cell.bias_hh.zero_()
    return cell


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


# --------------------------------------------------------------------------------------------
# Part A: lstm_cell_forward
# --------------------------------------------------------------------------------------------

LSTM_CELL_CASES = (  # scale: of the weights
    Case("B=1, D=1, H=1", seed=101, B=1, D=1, H=1, strided=False, scale=0.6, peepholes=True),
    Case(
        "B=5, D=7, H=3, non-zero states",
        seed=102, B=5, D=7, H=3, strided=False, scale=0.6, peepholes=True,
    ),
    Case(
        "B=3, D=4, H=2, no peepholes (P = 0)",
        seed=105, B=3, D=4, H=2, strided=False, scale=0.6, peepholes=False,
    ),
    Case(
        "B=2, D=3, H=6, non-contiguous arrays",
        seed=103, B=2, D=3, H=6, strided=True, scale=0.6, peepholes=True,
    ),
    Case(
        "B=4, D=2, H=5, saturated gates (pre-activations near +-40)",
        seed=104, B=4, D=2, H=5, strided=False, scale=12.0, peepholes=True,
    ),
)  # fmt: skip


def check_lstm_cell(lstm_cell_forward: Callable[..., Any]) -> None:
    """Hidden test of Part A: one peephole LSTM step against the hand-written reference, and
    with P = 0 against torch.nn.LSTMCell with copied weights."""
    for case in LSTM_CELL_CASES:
        B, D, H, peepholes = case.B, case.D, case.H, case.peepholes
        rng = np.random.default_rng(case.seed)
        params = _lstm_params(rng, D, H, case.scale, peepholes)
        x = rng.normal(size=(B, D))
        h_prev, c_prev = rng.normal(size=(B, H)), 2.0 * rng.normal(size=(B, H))
        if peepholes:
            h_ref, c_ref = peephole_lstm_step(x, h_prev, c_prev, params)
            against = LSTM_REFERENCE
        else:
            with torch.no_grad():
                h_ref, c_ref = _torch_lstm_cell(params, D, H)(
                    torch.tensor(x), (torch.tensor(h_prev), torch.tensor(c_prev))
                )
            against = "torch.nn.LSTMCell"
        if case.strided:
            x, h_prev, c_prev = _strided(x), _strided(h_prev), _strided(c_prev)
            params = {k: _strided(v) for k, v in params.items()}
        inputs = {"x": x, "h_prev": h_prev, "c_prev": c_prev, "params": params}
        before = _snapshot(inputs)
        with case.named("lstm_cell_forward"), np.errstate(over="ignore"):
            result = _call_by_hand(lstm_cell_forward, BY_HAND, x, h_prev, c_prev, params)
            h, c = _unpack(result, "lstm_cell_forward", ("h", "c"))
            _expect_unchanged("lstm_cell_forward", inputs, before)
            assert_close("c", c, c_ref, atol=1e-9, rtol=1e-7, against=against)
            assert_close("h", h, h_ref, atol=1e-9, rtol=1e-7, against=against)
    print(f"check_lstm_cell: all {len(LSTM_CELL_CASES)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part B: lstm_sequence_forward with a mask
# --------------------------------------------------------------------------------------------

SEQUENCE_CASES = (
    Case("B=1, T=1, no padding", seed=201, lengths=(1,), D=2, H=3, peepholes=True),
    Case("B=3, T=6, lengths 6, 2, 4", seed=202, lengths=(6, 2, 4), D=3, H=4, peepholes=True),
    Case(
        "B=4, T=9, lengths 9, 1, 9, 5, non-zero h0 and c0",
        seed=203, lengths=(9, 1, 9, 5), D=2, H=5, peepholes=True,
    ),
    Case(
        "B=3, T=7, lengths 3, 7, 5, non-zero h0 and c0, no peepholes (P = 0)",
        seed=205, lengths=(3, 7, 5), D=3, H=2, peepholes=False,
    ),
    Case(
        "B=2, T=5, one sequence is all padding (length 0)",
        seed=204, lengths=(5, 0), D=4, H=2, peepholes=True,
    ),
)  # fmt: skip


def reference_sequence(
    params: dict, xs: np.ndarray, lengths: tuple[int, ...], h0: np.ndarray, c0: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reference of Part B with peepholes: :func:`peephole_lstm_step` run over each
    sequence's real steps alone (no mask), zeros in hs at its padded steps."""
    B, T, _ = xs.shape
    hs = np.zeros((B, T, h0.shape[1]))
    h_last, c_last = np.array(h0, dtype=np.float64), np.array(c0, dtype=np.float64)
    for row, length in enumerate(lengths):
        h, c = h_last[row : row + 1], c_last[row : row + 1]  # (1, H)
        for step in range(length):
            h, c = peephole_lstm_step(xs[row, step][None], h, c, params)
            hs[row, step] = h[0]
        h_last[row], c_last[row] = h[0], c[0]
    return hs, h_last, c_last


def torch_sequence(
    params: dict, xs: np.ndarray, lengths: tuple[int, ...], h0: np.ndarray, c0: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Part B without peepholes (P = 0) by torch.nn.LSTM on packed sequences: hs (B, T, H)
    with zeros at padded steps, and the state after each last real step."""
    B, T, D = xs.shape
    H = h0.shape[1]
    cell = _torch_lstm_cell(params, D, H)
    layer = torch.nn.LSTM(D, H, batch_first=True, dtype=torch.float64)
    hs = torch.zeros(B, T, H, dtype=torch.float64)
    h_last, c_last = torch.tensor(h0).clone(), torch.tensor(c0).clone()
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            getattr(layer, f"{name}_l0").copy_(getattr(cell, name))
        real = [b for b in range(B) if lengths[b] > 0]
        packed = torch.nn.utils.rnn.pack_padded_sequence(
            torch.tensor(xs[real]),
            [lengths[b] for b in real],
            batch_first=True,
            enforce_sorted=False,
        )
        out, (h_n, c_n) = layer(
            packed, (torch.tensor(h0[real])[None], torch.tensor(c0[real])[None])
        )
        padded, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=T)
        hs[real] = padded
        h_last[real], c_last[real] = h_n[0], c_n[0]
    return hs.numpy(), h_last.numpy(), c_last.numpy()


def check_lstm_sequence(lstm_sequence_forward: Callable[..., Any]) -> None:
    """Hidden test of Part B: padded batches against the peephole cell run over each
    sequence's real steps, and with P = 0 against torch.nn.LSTM on packed sequences."""
    for case in SEQUENCE_CASES:
        lengths, D, H, peepholes = case.lengths, case.D, case.H, case.peepholes
        rng = np.random.default_rng(case.seed)
        B, T = len(lengths), max(lengths)
        params = _lstm_params(rng, D, H, peepholes=peepholes)
        xs = rng.normal(size=(B, T, D))
        mask = np.arange(T)[None, :] < np.array(lengths)[:, None]  # (B, T)
        xs[~mask] = 7.0  # padding with garbage: it must not matter
        nonzero = "non-zero" in case.label
        h0 = rng.normal(size=(B, H)) if nonzero else np.zeros((B, H))
        c0 = rng.normal(size=(B, H)) if nonzero else np.zeros((B, H))
        reference = reference_sequence if peepholes else torch_sequence
        against = SEQUENCE_REFERENCE if peepholes else "nn.LSTM (packed)"
        hs_ref, h_ref, c_ref = reference(params, xs, lengths, h0, c0)
        inputs = {"xs": xs, "mask": mask, "h0": h0, "c0": c0, "params": params}
        before = _snapshot(inputs)
        with case.named("lstm_sequence_forward"):
            result = _call_by_hand(lstm_sequence_forward, BY_HAND, xs, mask, h0, c0, params)
            hs, final = _unpack(result, "lstm_sequence_forward", ("hs", "(h_last, c_last)"))
            h_last, c_last = _unpack(
                final, "the second output of lstm_sequence_forward", ("h", "c")
            )
            _expect_unchanged("lstm_sequence_forward", inputs, before)
            assert_close("hs", hs, hs_ref, atol=1e-9, rtol=1e-7, against=against)
            assert_close("h_last", h_last, h_ref, atol=1e-9, rtol=1e-7, against=against)
            assert_close("c_last", c_last, c_ref, atol=1e-9, rtol=1e-7, against=against)
    print(f"check_lstm_sequence: all {len(SEQUENCE_CASES)} hidden cases passed.")


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
# Part D: select_quote_cell
# --------------------------------------------------------------------------------------------


def quote_cases() -> list[Case]:
    """Every hidden case: activations (N, H), labels (N,) and best, the index of the best cell."""
    cases = []
    rng = np.random.default_rng(401)
    labels = rng.random(300) < 0.3
    acts = np.tanh(rng.normal(size=(300, 12)))
    acts[:, 9] = -0.8 * labels + 0.3 * rng.normal(size=300)  # strongly *negative*
    acts[:, 4] = 0.4 * labels + 0.4 * rng.normal(size=300)  # positive, weaker
    cases.append(
        Case(
            "N=300, H=12, the best cell is anti-correlated (off inside quotes)",
            acts=acts,
            labels=labels,
            best=9,
        )
    )

    rng = np.random.default_rng(402)
    labels = (rng.random(200) < 0.5).astype(np.int64)
    acts = 0.1 * rng.normal(size=(200, 6))
    acts[:, 0] = 0.0  # a dead cell: constant, its correlation must count as 0, not nan
    acts[:, 2] = 50.0 * rng.normal(size=200) + 5.0 * labels  # large but mostly noise
    acts[:, 5] = 0.05 * labels + 0.01 * rng.normal(size=200)  # small but clean
    cases.append(
        Case(
            "N=200, H=6, a constant cell, int labels, scales differ",
            acts=acts,
            labels=labels,
            best=5,
        )
    )

    rng = np.random.default_rng(403)
    labels = rng.random(50) < 0.4
    acts = rng.normal(size=(50, 3))
    acts[:, 1] = labels + 0.2 * rng.normal(size=50)
    cases.append(
        Case(
            "N=50, H=3, float32 activations, non-contiguous",
            acts=_strided(acts.astype(np.float32)),
            labels=labels,
            best=1,
        )
    )

    rng = np.random.default_rng(404)
    labels = rng.random(80) < 0.5
    acts = rng.normal(size=(80, 1))
    cases.append(Case("N=80, H=1, a single cell", acts=acts, labels=labels, best=0))
    return cases


def check_select_quote_cell(select_quote_cell: Callable[..., Any]) -> None:
    """Hidden test of Part D: the cell with the largest |correlation|, as an int."""
    cases = quote_cases()
    for case in cases:
        acts, labels, best = case.acts, case.labels, case.best
        inputs = {"activations": acts, "inside_quotes": labels}
        before = _snapshot(inputs)
        with case.named("select_quote_cell"):
            chosen = _call_by_hand(select_quote_cell, SELECT_BY_HAND, acts, labels)
            _expect_unchanged("select_quote_cell", inputs, before)
            if isinstance(chosen, (bool, np.bool_)) or not isinstance(chosen, (int, np.integer)):
                raise AssertionError(
                    f"select_quote_cell should return the index of a cell as an int, got "
                    f"{_describe(chosen)}"
                )
            if int(chosen) != best:
                raise AssertionError(
                    f"select_quote_cell chose cell {int(chosen)}, but cell {best} has the "
                    "largest absolute correlation with the labels"
                )
    print(f"check_select_quote_cell: all {len(cases)} hidden cases passed.")
