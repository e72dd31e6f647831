"""The visible tests of Assignment 2 (an LSTM with a projection, a packed batch, a GRU, a quote cell).

The expected numbers of Parts A and B are those of ``torch.nn.LSTM`` with ``proj_size`` in
float64 (the weights copied into PyTorch's gate order), run on one step and on the packed
batch; those of Part C come from the GRU with the reset gate before the recurrent matrix,
written by hand in torch (float64); all are printed to ten decimals. Part D's expected AUC is
a count of pairs, 49 of 144. The course's own tests check that the hidden checks' references
give these numbers.

Written as every module of visible tests is (the package's docstring, :mod:`course.checks`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from course.checks import CheckFailed, assert_close, inputs_kept
from course.checks.cases import Case, unpack
from course.checks.rules import by_hand

__all__ = ["check_part_a", "check_part_b", "check_part_c", "check_part_d"]

ASSIGNMENT = "a2_lstm_gru"
EXPECTED = "the expected value"
LSTMP = "torch.nn.LSTM with proj_size"


def _lstmp_weights() -> dict[str, np.ndarray]:
    """The weights of Parts A and B: D = 3, H = 3, P = 2, blocks f, i, g, o."""
    return {
        "U": np.linspace(-1.0, 1.0, 12 * 3).reshape(12, 3),
        "W": np.linspace(0.5, -0.5, 12 * 2).reshape(12, 2),
        "b": np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.1, -0.1, 0.2, -0.2, 0.3, 0.0]),
        "R": np.array([[0.8, -0.5, 0.3], [-0.2, 0.6, 0.9]]),
    }


def part_a_cases() -> list[Case]:
    """Part A's case: one step of two rows."""
    return [
        Case(
            "two rows, D = 3, H = 3, P = 2",
            x=np.array([[1.0, 0.0, -1.0], [0.5, 2.0, -0.5]]),
            h_prev=np.array([[0.1, -0.2], [0.0, 0.3]]),  # (B, P)
            c_prev=np.array([[1.0, -1.0, 0.5], [0.5, 0.0, -0.3]]),  # (B, H)
            params=_lstmp_weights(),
            expected_c=[
                [0.6977955641, -0.7915656756, 0.4050831130],
                [0.2117369404, 0.1111991580, 0.1874397959],
            ],
            expected_h=[[0.4476783232, -0.1048072044], [0.1170540249, 0.1671789851]],
        )
    ]


def check_part_a(lstmp_cell_forward: Callable[..., Any]) -> None:
    """Part A's visible test (lstmp_cell_forward)."""
    __tracebackhide__ = True
    for case in part_a_cases():
        x, h_prev, c_prev, params = case.x, case.h_prev, case.c_prev, case.params
        with case.named("lstmp_cell_forward"):
            with inputs_kept(
                "lstmp_cell_forward", x=x, h_prev=h_prev, c_prev=c_prev, params=params
            ):
                returned = by_hand(ASSIGNMENT, lstmp_cell_forward, x, h_prev, c_prev, params)
            h, c = unpack(returned, "lstmp_cell_forward", ("h", "c"))
            assert_close("c", c, case.expected_c, atol=1e-8, against=LSTMP)
            assert_close("h", h, case.expected_h, atol=1e-8, against=LSTMP)
    print("Part A, visible test: passed.")


def part_b_cases() -> list[Case]:
    """Part B's case: a packed batch, its rows step by step (the longest sequences first)."""
    return [
        Case(
            "three packed sequences of lengths 3, 2 and 1, the second from a non-zero state",
            data=np.array(
                [
                    [1.0, 0.0, -1.0],  # step 0 of sequences 0, 1, 2
                    [0.2, -0.3, 0.4],
                    [-1.0, 0.5, 0.5],
                    [0.0, 1.0, 0.0],  # step 1 of sequences 0, 1
                    [1.5, -1.0, 0.0],
                    [-0.5, 0.5, 1.0],  # step 2 of sequence 0
                ]
            ),
            batch_sizes=np.array([3, 2, 1]),
            h0=np.array([[0.0, 0.0], [0.2, -0.1], [0.0, 0.0]]),
            c0=np.array([[0.0, 0.0, 0.0], [0.5, -0.5, 0.0], [0.0, 0.0, 0.0]]),
            params=_lstmp_weights(),
            expected_out=[
                [0.0305158126, -0.0148452107],
                [0.2857549473, -0.0877057897],
                [0.0607470694, 0.0559351115],
                [0.0894371470, 0.1796481661],
                [0.2305193368, -0.0039410190],
                [0.1266412777, 0.3095943227],
            ],
            expected_h_n=[
                [0.1266412777, 0.3095943227],
                [0.2305193368, -0.0039410190],
                [0.0607470694, 0.0559351115],
            ],
            expected_c_n=[
                [0.1474419214, 0.1017249298, 0.4736121973],
                [0.2839303689, -0.2653203649, 0.2388298278],
                [0.0957361820, -0.0074482856, 0.1450502158],
            ],
        )
    ]


def check_part_b(lstmp_packed_forward: Callable[..., Any]) -> None:
    """Part B's visible test (lstmp_packed_forward)."""
    __tracebackhide__ = True
    against = f"{LSTMP} on the packed batch"
    for case in part_b_cases():
        inputs = {name: case.inputs[name] for name in ("data", "batch_sizes", "h0", "c0", "params")}
        with case.named("lstmp_packed_forward"):
            with inputs_kept("lstmp_packed_forward", **inputs):
                returned = by_hand(ASSIGNMENT, lstmp_packed_forward, *inputs.values())
            out, (h_n, c_n) = unpack(returned, "lstmp_packed_forward", ("out", "(h_n, c_n)"))
            assert_close("out", out, case.expected_out, atol=1e-8, against=against)
            assert_close("h_n", h_n, case.expected_h_n, atol=1e-8, against=against)
            assert_close("c_n", c_n, case.expected_c_n, atol=1e-8, against=against)
    print("Part B, visible test: passed.")


def part_c_cases() -> list[Case]:
    """Part C's case: one step of two rows."""
    return [
        Case(
            "two rows, D = 3, H = 2",
            x=np.array([[1.0, 0.0, -1.0], [0.5, 2.0, -0.5]]),
            h_prev=np.array([[0.1, -0.2], [0.0, 0.3]]),
            params={
                "U": np.linspace(-0.8, 0.8, 6 * 3).reshape(6, 3),
                "W": np.linspace(0.6, -0.6, 6 * 2).reshape(6, 2),
                "b_in": np.array([0.1, 0.2, -0.1, 0.0, 0.3, -0.3]),
                "b_rec": np.array([0.0, -0.2, 0.1, 0.1, 0.5, 0.5]),
            },
            expected_h=[[0.3458136119, -0.0635837548], [0.7033326856, 0.7137587136]],
        )
    ]


def check_part_c(gru_cell_forward: Callable[..., Any]) -> None:
    """Part C's visible test (gru_cell_forward)."""
    __tracebackhide__ = True
    for case in part_c_cases():
        x, h_prev, params = case.x, case.h_prev, case.params
        with case.named("gru_cell_forward"):
            with inputs_kept("gru_cell_forward", x=x, h_prev=h_prev, params=params):
                h = by_hand(ASSIGNMENT, gru_cell_forward, x, h_prev, params)
            assert_close("h", h, case.expected_h, atol=1e-8, against=EXPECTED)
    print("Part C, visible test: passed.")


def part_d_cases() -> list[Case]:
    """Part D's case: five cells over one line of code; ``wrong_cells`` says why a tempting
    cell is not the answer."""
    line = 'name = "quote" + f(x, "y")'
    inside_quotes = np.zeros(len(line), dtype=bool)
    inside_quotes[7:13] = inside_quotes[22:24] = True  # from each opening quote to its closing one
    steps = np.arange(len(line))
    opening = np.isin(steps, (7, 22)).astype(float)
    activations = np.stack(
        [
            np.sin(steps),  # a wiggle
            4.0 * opening + 0.1 * np.cos(steps),  # fires at the opening quotes only
            np.zeros(len(line)),  # a dead cell
            -0.3 * inside_quotes + 0.45 * np.cos(2.5 * steps),  # small, lower inside quotes
            np.array([ch in "()" for ch in line], dtype=float),  # brackets
        ],
        axis=1,
    )  # (N=26, H=5)
    return [
        Case(
            f"five cells over the line {line!r}",
            activations=activations,
            inside_quotes=inside_quotes,
            expected_cell=3,
            # 8 characters inside, 18 outside: 144 pairs, of which cell 3 wins 49 (no ties)
            expected_auc_pairs=(49, 144),
            wrong_cells={
                1: "the cell with the largest correlation; its AUC is 1/2 (inside the strings it "
                "is as low as outside)"
            },
        )
    ]


def check_part_d(quote_cell_auc: Callable[..., Any]) -> None:
    """Part D's visible test (quote_cell_auc)."""
    __tracebackhide__ = True
    for case in part_d_cases():
        activations, inside_quotes = case.activations, case.inside_quotes
        with case.named("quote_cell_auc"):
            with inputs_kept(
                "quote_cell_auc", activations=activations, inside_quotes=inside_quotes
            ):
                result = by_hand(ASSIGNMENT, quote_cell_auc, activations, inside_quotes)
            if not (isinstance(result, tuple) and len(result) == 2):
                raise CheckFailed(
                    f"quote_cell_auc should return a tuple (cell, auc), got {result!r}"
                )
            cell, auc = result
            if isinstance(cell, bool) or not isinstance(cell, int):
                raise CheckFailed(
                    f"quote_cell_auc should return the cell as an int, got {type(cell)}"
                )
            if cell != case.expected_cell:
                why = f", {case.wrong_cells[cell]}:" if cell in case.wrong_cells else ","
                raise CheckFailed(
                    f"quote_cell_auc chose cell {cell}{why} expected cell {case.expected_cell}"
                )
            if isinstance(auc, bool) or not isinstance(auc, float):
                raise CheckFailed(
                    f"quote_cell_auc should return the AUC as a float, got {type(auc)}"
                )
            won, pairs = case.expected_auc_pairs
            assert_close("auc", auc, won / pairs, atol=1e-12, against=f"{EXPECTED}, {won}/{pairs}")
    print("Part D, visible test: passed.")
