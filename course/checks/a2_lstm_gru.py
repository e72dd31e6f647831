"""The visible tests of Assignment 2 (an LSTM with a projection, a packed batch, a GRU, a quote cell).

The expected numbers of Parts A and B are those of ``torch.nn.LSTM`` with ``proj_size`` in
float64 (the weights copied into PyTorch's gate order), run on one step and on the packed
batch; those of Part C come from the GRU with the reset gate before the recurrent matrix,
written by hand in torch (float64); all are printed to ten decimals. Part D's expected AUC is
a count of pairs, 49 of 144. The course's own tests check that the hidden checks' references
give these numbers.

Each test cell of the notebook calls one check with the student's functions, which run under
the rule of the part's hidden tests (:func:`course.checks.rules.by_hand`). Every function
here sets ``__tracebackhide__``: when a student's own code raises, IPython shows the cell's
call and the student's frames, not this module's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from course.checks import CheckFailed, assert_close, inputs_kept
from course.checks.rules import by_hand

__all__ = ["check_part_a", "check_part_b", "check_part_c", "check_part_d"]

ASSIGNMENT = "a2_lstm_gru"


def _lstmp_weights() -> dict[str, np.ndarray]:
    """The weights of Parts A and B: D = 3, H = 3, P = 2, blocks f, i, g, o."""
    return {
        "U": np.linspace(-1.0, 1.0, 12 * 3).reshape(12, 3),
        "W": np.linspace(0.5, -0.5, 12 * 2).reshape(12, 2),
        "b": np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.1, -0.1, 0.2, -0.2, 0.3, 0.0]),
        "R": np.array([[0.8, -0.5, 0.3], [-0.2, 0.6, 0.9]]),
    }


def check_part_a(lstmp_cell_forward: Callable[..., Any]) -> None:
    """Part A's visible test (lstmp_cell_forward)."""
    __tracebackhide__ = True
    params_a = _lstmp_weights()
    x_a = np.array([[1.0, 0.0, -1.0], [0.5, 2.0, -0.5]])  # B=2
    h_a = np.array([[0.1, -0.2], [0.0, 0.3]])  # (B, P)
    c_a = np.array([[1.0, -1.0, 0.5], [0.5, 0.0, -0.3]])  # (B, H)
    with inputs_kept("lstmp_cell_forward", x=x_a, h_prev=h_a, c_prev=c_a, params=params_a):
        h_out_a, c_out_a = by_hand(ASSIGNMENT, lstmp_cell_forward, x_a, h_a, c_a, params_a)
    assert_close(
        "c",
        c_out_a,
        [[0.6977955641, -0.7915656756, 0.4050831130], [0.2117369404, 0.1111991580, 0.1874397959]],
        atol=1e-8,
        against="torch.nn.LSTM with proj_size",
    )
    assert_close(
        "h",
        h_out_a,
        [[0.4476783232, -0.1048072044], [0.1170540249, 0.1671789851]],
        atol=1e-8,
        against="torch.nn.LSTM with proj_size",
    )
    print("Part A, visible test: passed.")


def check_part_b(lstmp_packed_forward: Callable[..., Any]) -> None:
    """Part B's visible test (lstmp_packed_forward)."""
    __tracebackhide__ = True
    data_b = np.array(
        [
            [1.0, 0.0, -1.0],  # step 0 of sequences 0, 1, 2
            [0.2, -0.3, 0.4],
            [-1.0, 0.5, 0.5],
            [0.0, 1.0, 0.0],  # step 1 of sequences 0, 1
            [1.5, -1.0, 0.0],
            [-0.5, 0.5, 1.0],  # step 2 of sequence 0
        ]
    )  # lengths 3, 2, 1
    sizes_b = np.array([3, 2, 1])
    h0_b = np.array([[0.0, 0.0], [0.2, -0.1], [0.0, 0.0]])
    c0_b = np.array([[0.0, 0.0, 0.0], [0.5, -0.5, 0.0], [0.0, 0.0, 0.0]])
    params_b = _lstmp_weights()
    with inputs_kept(
        "lstmp_packed_forward", data=data_b, batch_sizes=sizes_b, h0=h0_b, c0=c0_b,
        params=params_b,
    ):  # fmt: skip
        out_b, (h_n_b, c_n_b) = by_hand(
            ASSIGNMENT, lstmp_packed_forward, data_b, sizes_b, h0_b, c0_b, params_b
        )
    against = "torch.nn.LSTM with proj_size on the packed batch"
    assert_close(
        "out",
        out_b,
        [
            [0.0305158126, -0.0148452107],
            [0.2857549473, -0.0877057897],
            [0.0607470694, 0.0559351115],
            [0.0894371470, 0.1796481661],
            [0.2305193368, -0.0039410190],
            [0.1266412777, 0.3095943227],
        ],
        atol=1e-8,
        against=against,
    )
    assert_close(
        "h_n",
        h_n_b,
        [[0.1266412777, 0.3095943227], [0.2305193368, -0.0039410190], [0.0607470694, 0.0559351115]],
        atol=1e-8,
        against=against,
    )
    assert_close(
        "c_n",
        c_n_b,
        [
            [0.1474419214, 0.1017249298, 0.4736121973],
            [0.2839303689, -0.2653203649, 0.2388298278],
            [0.0957361820, -0.0074482856, 0.1450502158],
        ],
        atol=1e-8,
        against=against,
    )
    print("Part B, visible test: passed.")


def check_part_c(gru_cell_forward: Callable[..., Any]) -> None:
    """Part C's visible test (gru_cell_forward)."""
    __tracebackhide__ = True
    params_c = {
        "U": np.linspace(-0.8, 0.8, 6 * 3).reshape(6, 3),  # H=2, D=3
        "W": np.linspace(0.6, -0.6, 6 * 2).reshape(6, 2),
        "b_in": np.array([0.1, 0.2, -0.1, 0.0, 0.3, -0.3]),
        "b_rec": np.array([0.0, -0.2, 0.1, 0.1, 0.5, 0.5]),
    }
    x_c = np.array([[1.0, 0.0, -1.0], [0.5, 2.0, -0.5]])  # B=2
    h_prev_c = np.array([[0.1, -0.2], [0.0, 0.3]])
    with inputs_kept("gru_cell_forward", x=x_c, h_prev=h_prev_c, params=params_c):
        h_out_c = by_hand(ASSIGNMENT, gru_cell_forward, x_c, h_prev_c, params_c)
    assert_close(
        "h",
        h_out_c,
        [[0.3458136119, -0.0635837548], [0.7033326856, 0.7137587136]],
        atol=1e-8,
        against="the expected value",
    )
    print("Part C, visible test: passed.")


def check_part_d(quote_cell_auc: Callable[..., Any]) -> None:
    """Part D's visible test (quote_cell_auc)."""
    __tracebackhide__ = True
    line_d = 'name = "quote" + f(x, "y")'
    labels_d = np.zeros(len(line_d), dtype=bool)
    labels_d[7:13] = labels_d[22:24] = True  # from each opening quote to its closing one
    steps_d = np.arange(len(line_d))
    opening_d = np.isin(steps_d, (7, 22)).astype(float)
    activations_d = np.stack(
        [
            np.sin(steps_d),  # a wiggle
            4.0 * opening_d + 0.1 * np.cos(steps_d),  # fires at the opening quotes only
            np.zeros(len(line_d)),  # a dead cell
            -0.3 * labels_d + 0.45 * np.cos(2.5 * steps_d),  # small, lower inside quotes
            np.array([ch in "()" for ch in line_d], dtype=float),  # brackets
        ],
        axis=1,
    )  # (N=26, H=5)
    with inputs_kept("quote_cell_auc", activations=activations_d, inside_quotes=labels_d):
        result_d = by_hand(ASSIGNMENT, quote_cell_auc, activations_d, labels_d)
    if not (isinstance(result_d, tuple) and len(result_d) == 2):
        raise CheckFailed(f"quote_cell_auc should return a tuple (cell, auc), got {result_d!r}")
    chosen_d, auc_d = result_d
    if isinstance(chosen_d, bool) or not isinstance(chosen_d, int):
        raise CheckFailed(f"quote_cell_auc should return the cell as an int, got {type(chosen_d)}")
    if chosen_d == 1:
        raise CheckFailed(
            "quote_cell_auc chose cell 1, the cell with the largest correlation; its AUC is "
            "1/2 (inside the strings it is as low as outside): expected cell 3"
        )
    if chosen_d != 3:
        raise CheckFailed(f"quote_cell_auc chose cell {chosen_d}, expected cell 3")
    if isinstance(auc_d, bool) or not isinstance(auc_d, float):
        raise CheckFailed(f"quote_cell_auc should return the AUC as a float, got {type(auc_d)}")
    # 8 characters inside, 18 outside: 144 pairs, of which cell 3 wins 49 (no ties)
    assert_close("auc", auc_d, 49 / 144, atol=1e-12, against="the expected value, 49/144")
    print("Part D, visible test: passed.")
