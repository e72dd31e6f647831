"""The visible tests of Assignment 2 (LSTM and GRU cells, a padded LSTM, the quote cell).

The expected numbers are those of references written by hand in torch (float64): the peephole
LSTM step, run over each sequence's real steps for Part B, and the GRU with the reset gate
before the recurrent matrix, printed to ten decimals. The course's own tests check that those
references pass these tests, and that with the peepholes at 0 they agree with
``torch.nn.LSTMCell`` and ``torch.nn.LSTM``.

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


def check_part_a(lstm_cell_forward: Callable[..., Any]) -> None:
    """Part A's visible test (lstm_cell_forward)."""
    __tracebackhide__ = True
    params_a = {
        "U": np.linspace(-1.0, 1.0, 8 * 3).reshape(8, 3),  # H=2, D=3
        "W": np.linspace(0.5, -0.5, 8 * 2).reshape(8, 2),
        "b": np.array([1.0, 1.0, 0.0, 0.0, 0.1, -0.1, 0.2, -0.2]),
        "P": np.array([[0.5, -0.8], [-1.0, 0.6], [0.9, -1.2]]),  # peepholes p_f, p_i, p_o
    }
    x_a = np.array([[1.0, 0.0, -1.0], [0.5, 2.0, -0.5]])  # B=2
    h_a = np.array([[0.1, -0.2], [0.0, 0.3]])
    c_a = np.array([[1.0, -1.0], [0.5, 0.0]])
    with inputs_kept("lstm_cell_forward", x=x_a, h_prev=h_a, c_prev=c_a, params=params_a):
        h_out_a, c_out_a = by_hand(ASSIGNMENT, lstm_cell_forward, x_a, h_a, c_a, params_a)
    assert_close(
        "c",
        c_out_a,
        [[0.7706480357, -0.9080710171], [0.2353462489, 0.2006958032]],
        atol=1e-8,
        against="the expected value",
    )
    assert_close(
        "h",
        h_out_a,
        [[0.4414663139, -0.4926550329], [0.1895954522, 0.1503548370]],
        atol=1e-8,
        against="the expected value",
    )
    print("Part A, visible test: passed.")


def check_part_b(lstm_sequence_forward: Callable[..., Any]) -> None:
    """Part B's visible test (lstm_sequence_forward)."""
    __tracebackhide__ = True
    xs_b = np.array(
        [
            [[1.0, 0.0, -1.0], [0.0, 1.0, 0.0], [-0.5, 0.5, 1.0]],
            [[0.2, -0.3, 0.4], [99.0, 99.0, 99.0], [-99.0, 99.0, -99.0]],
        ]
    )  # (B=2, T=3, D=3)
    mask_b = np.array([[True, True, True], [True, False, False]])
    params_b = {  # the weights of Part A's visible test, peepholes included
        "U": np.linspace(-1.0, 1.0, 8 * 3).reshape(8, 3),
        "W": np.linspace(0.5, -0.5, 8 * 2).reshape(8, 2),
        "b": np.array([1.0, 1.0, 0.0, 0.0, 0.1, -0.1, 0.2, -0.2]),
        "P": np.array([[0.5, -0.8], [-1.0, 0.6], [0.9, -1.2]]),
    }
    h0_b, c0_b = np.zeros((2, 2)), np.array([[0.0, 0.0], [0.5, -0.5]])
    with inputs_kept(
        "lstm_sequence_forward", xs=xs_b, mask=mask_b, h0=h0_b, c0=c0_b, params=params_b
    ):
        hs_b, (h_last_b, c_last_b) = by_hand(
            ASSIGNMENT, lstm_sequence_forward, xs_b, mask_b, h0_b, c0_b, params_b
        )
    assert_close(
        "hs",
        hs_b,
        [
            [
                [-0.0168028145, -0.0538428562],
                [0.0558072888, 0.0394647312],
                [0.1401929786, 0.1430160391],
            ],
            [[0.2730452308, -0.2242930631], [0.0, 0.0], [0.0, 0.0]],
        ],
        atol=1e-8,
        against="the expected value",
    )
    assert_close(
        "h_last",
        h_last_b,
        [[0.1401929786, 0.1430160391], [0.2730452308, -0.2242930631]],
        atol=1e-8,
        against="the expected value",
    )
    assert_close(
        "c_last",
        c_last_b,
        [[0.1880912726, 0.2320211469], [0.4199011581, -0.3715731619]],
        atol=1e-8,
        against="the expected value",
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


def check_part_d(select_quote_cell: Callable[..., Any]) -> None:
    """Part D's visible test (select_quote_cell)."""
    __tracebackhide__ = True
    line_d = 'x = "a, b" + f(1)'
    labels_d = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0], dtype=bool)
    steps_d = np.arange(len(line_d))
    activations_d = np.stack(
        [
            np.sin(steps_d),  # a wiggle
            steps_d / len(line_d),  # position in the line
            np.zeros(len(line_d)),  # a dead cell
            0.9 * labels_d - 0.1 * np.cos(3 * steps_d),  # the quote cell
            np.array([ch in "()" for ch in line_d], dtype=float),  # brackets
        ],
        axis=1,
    )  # (N=17, H=5)
    with inputs_kept("select_quote_cell", activations=activations_d, inside_quotes=labels_d):
        chosen_d = by_hand(ASSIGNMENT, select_quote_cell, activations_d, labels_d)
    if not (isinstance(chosen_d, int)):
        raise CheckFailed(f"select_quote_cell should return an int, got {type(chosen_d)}")
    if not (chosen_d == 3):
        raise CheckFailed(f"select_quote_cell chose cell {chosen_d}, expected cell 3")
    print("Part D, visible test: passed.")
