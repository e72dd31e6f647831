"""The visible tests of Assignment 4 (coverage scores, log-domain attention, Bahdanau's step, beam search).

The expected numbers were worked out once with an independent implementation.

Written as every module of visible tests is (the package's docstring, :mod:`course.checks`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from course.checks import CheckFailed, as_numpy, assert_close, inputs_kept
from course.checks.cases import Case, expect_tuple
from course.checks.rules import by_hand, expect_refused

__all__ = ["check_part_a", "check_part_b", "check_part_c", "check_part_d"]

ASSIGNMENT = "a4_seq2seq_attention"


def _shared_inputs() -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Parts A and C's inputs, made afresh at each call (a function that writes into one
    cannot change the next test's): h (B=2, D=2), S (B=2, m=3, H=3), the attention weights of
    T = 2 earlier steps (B=2, T=2, m=3; the second sentence has 2 real positions in Part C),
    and the score's parameters, A = 2."""
    h = np.array([[0.4, -0.6], [0.9, 0.3]])
    S = np.array(
        [
            [[1.0, -0.7, -0.8], [-0.6, -0.3, -0.7], [0.2, 0.2, -0.8]],
            [[0.1, -1.0, -0.1], [1.0, 0.6, 0.2], [-0.3, -0.6, -0.1]],
        ]
    )
    past = np.array([[[0.2, 0.5, 0.3], [0.6, 0.3, 0.1]], [[0.7, 0.3, 0.0], [0.4, 0.6, 0.0]]])
    params = {
        "W_q": np.array([[-0.4, 0.7], [-0.6, -0.5]]),  # (A=2, D=2)
        "W_k": np.array([[0.6, -0.5, -0.5], [-0.9, -0.1, -0.5]]),  # (A=2, H=3)
        "w_cov": np.array([-1.5, 0.8]),
        "b_att": np.array([0.8, -0.4]),
        "v": np.array([1.0, -0.7]),
    }
    return h, S, past, params


def _expect_refused(name: str, function: Callable[..., Any], bad_inputs: list[Case]) -> None:
    """``function`` must raise ValueError for each case's inputs, passed in order."""
    __tracebackhide__ = True
    calls = {f"{name} with {c.label}": (function, tuple(c.inputs.values()), {}) for c in bad_inputs}
    expect_refused(ASSIGNMENT, calls)


def expect_log_weights(
    got: Any,
    expected: Any,
    real: np.ndarray,
    *,
    where: str,
    atol: float,
    against: str,
    rtol: float = 0.0,
) -> None:
    """Log-weights: exactly -inf where ``real`` is False, finite and close where it is True;
    ``where`` says which call they come from. (The hidden checks use it too.)"""
    __tracebackhide__ = True
    array = as_numpy(got, f"log_weights ({where})").astype(np.float64)
    if array.shape != real.shape:
        raise CheckFailed(f"log_weights ({where}) has shape {array.shape}; expected {real.shape}")
    for b, k in np.argwhere(~real):
        if not array[b, k] == -np.inf:
            raise CheckFailed(
                f"log_weights[{b}, {k}] is {float(array[b, k])!r} at a padded position ({where}); "
                "it must be -inf"
            )
    for b, k in np.argwhere(real):
        if not np.isfinite(array[b, k]):
            hint = (
                "never take the logarithm of a weight that rounded to 0"
                if array[b, k] == -np.inf
                else "take the maximum and the sum over the real positions only"
            )
            raise CheckFailed(
                f"log_weights[{b}, {k}] is {float(array[b, k])!r} at a real position ({where}); "
                f"it must be finite ({hint})"
            )
    assert_close(
        f"log_weights at the real positions ({where})",
        np.where(real, array, 0.0),
        np.where(real, expected, 0.0),
        atol=atol,
        rtol=rtol,
        against=against,
    )


# -- Part A: coverage_scores --------------------------------------------------------------------


def part_a_cases() -> list[Case]:
    """coverage_scores's cases: h, S, past_weights, params; expected_scores (from torch)."""
    h, S, past, params = _shared_inputs()
    return [
        Case(
            "B=2, m=3 source positions, T = 2 earlier steps",
            h=h,
            S=S,
            past_weights=past[:, :2],
            params=params,
            expected_scores=[
                [0.4444825210, -1.2735669852, -0.0846779274],
                [-0.2671407043, 0.1620494621, 1.1025436578],
            ],
        ),
        Case(
            "B=2, m=3 source positions, T = 0 earlier steps (no coverage yet)",
            h=h,
            S=S,
            past_weights=past[:, :0],
            params=params,
            expected_scores=[
                [1.3698763767, -0.0206517666, 0.6622642664],
                [1.3927999476, 1.3723277849, 1.1025436578],
            ],
        ),
    ]


def part_a_bad_inputs() -> list[Case]:
    """Input that coverage_scores must refuse with ValueError: h, S, past_weights, params."""
    h, S, past, params = _shared_inputs()
    no_w_cov = {k: params[k] for k in ("W_q", "W_k", "b_att", "v")}
    return [
        Case("S with B = 1 for h with B = 2", h=h, S=S[:1], past_weights=past, params=params),
        Case(
            "past_weights of shape (2, 2, 2) for m = 3",
            h=h, S=S, past_weights=past[:, :, :2], params=params,
        ),
        Case(
            "W_k of shape (2, 2) for H = 3",
            h=h, S=S, past_weights=past, params=dict(params, W_k=np.ones((2, 2))),
        ),
        Case("no w_cov in params", h=h, S=S, past_weights=past, params=no_w_cov),
    ]  # fmt: skip


def check_part_a(coverage_scores: Callable[..., Any]) -> None:
    """Part A's visible test (coverage_scores)."""
    __tracebackhide__ = True
    for case in part_a_cases():
        h, S, past_weights, params = case.h, case.S, case.past_weights, case.params
        with case.named("coverage_scores"):
            kept = {"h": h, "S": S, "past_weights": past_weights, "params": params}
            with inputs_kept("coverage_scores", **kept):
                scores = by_hand(ASSIGNMENT, coverage_scores, h, S, past_weights, params)
            assert_close("scores", scores, case.expected_scores, atol=1e-8, against="torch")
    _expect_refused("coverage_scores", coverage_scores, part_a_bad_inputs())
    print("Part A, visible test: passed.")


# -- Part B: log_attention ----------------------------------------------------------------------


def part_b_cases() -> list[Case]:
    """log_attention's cases: scores, lengths, S, temperature; expected_log_weights (0 where
    they must be -inf) and expected_context."""
    scores = np.array([[1.0, 0.0, 0.5], [0.3, 900.0, -2.0], [5.0, 1.0, 2.0]])  # 900: padding
    lengths = np.array([3, 1, 0])  # the third sentence has no real position
    S = np.array(
        [
            [[1.0, 0.0], [0.0, 1.0], [2.0, -1.0]],
            [[0.5, 0.5], [np.inf, 3.0], [-np.inf, 0.0]],  # padding: infinite states
            [[1e300, np.inf], [1.0, 1.0], [-np.inf, 2.0]],  # all padding
        ]
    )  # (B=3, m=3, H=2)
    batch = "lengths 3, 1 and 0, infinite states in the padding"
    return [
        Case(
            f"{batch}, temperature 1.0",
            scores=scores,
            lengths=lengths,
            S=S,
            temperature=1.0,
            expected_log_weights=[
                [-0.6802696706, -1.6802696706, -1.1802696706],
                [0.0, 0.0, 0.0],
                [0.0, 0.0, 0.0],
            ],
            expected_context=[[1.1208721625, -0.1208721625], [0.5, 0.5], [0.0, 0.0]],
        ),
        Case(
            f"{batch}, temperature 0.001",
            scores=scores,
            lengths=lengths,
            S=S,
            temperature=0.001,
            expected_log_weights=[[0.0, -1000.0, -500.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
            expected_context=[[1.0, 0.0], [0.5, 0.5], [0.0, 0.0]],
        ),
    ]


def part_b_bad_inputs() -> list[Case]:
    """Input that log_attention must refuse with ValueError: scores, lengths, S, temperature."""
    good = part_b_cases()[0]
    scores, lengths, S = good.scores, good.lengths, good.S
    return [
        Case("temperature 0", scores=scores, lengths=lengths, S=S, temperature=0.0),
        Case("temperature -1", scores=scores, lengths=lengths, S=S, temperature=-1.0),
        Case("lengths [3, 1, 4] with m = 3", scores=scores, lengths=np.array([3, 1, 4]), S=S,
             temperature=1.0),
        Case("lengths [3, -1, 0]", scores=scores, lengths=np.array([3, -1, 0]), S=S,
             temperature=1.0),
        Case("lengths [3, 1] for B = 3", scores=scores, lengths=np.array([3, 1]), S=S,
             temperature=1.0),
    ]  # fmt: skip


def check_part_b(log_attention: Callable[..., Any]) -> None:
    """Part B's visible test (log_attention)."""
    __tracebackhide__ = True
    for case in part_b_cases():
        scores, lengths, S, tau = case.scores, case.lengths, case.S, case.temperature
        real = np.arange(scores.shape[1])[None, :] < lengths[:, None]
        with case.named("log_attention"):
            with (
                inputs_kept("log_attention", scores=scores, lengths=lengths, S=S),
                np.errstate(all="ignore"),
            ):
                result = by_hand(ASSIGNMENT, log_attention, scores, lengths, S, tau)
            log_weights, context = expect_tuple(result, "log_attention", ("log_weights", "context"))
            expect_log_weights(
                log_weights, np.array(case.expected_log_weights), real,
                where=f"temperature {tau}", atol=1e-9,
                against="torch.log_softmax over the real positions",
            )  # fmt: skip
            assert_close(
                "context", context, case.expected_context, atol=1e-9,
                against="the weighted sum of the real encoder states (0 for no real position)",
            )  # fmt: skip
    _expect_refused("log_attention", log_attention, part_b_bad_inputs())
    print("Part B, visible test: passed.")


# -- Part C: bahdanau_step ----------------------------------------------------------------------


def part_c_cases() -> list[Case]:
    """bahdanau_step's cases: x, h_prev, S, lengths, past_weights, params; expected_log_probs
    (and what they are compared against), expected_h, expected_log_weights (0 at padding)."""
    h, S, past, score_params = _shared_inputs()
    params = score_params | {
        "W_ih": np.array(
            [
                [0.3, 0.8, 0.6, -0.5, -0.4],
                [0.7, -1.0, 0.6, 0.6, -0.1],
                [-0.4, -0.4, -0.5, -0.1, 0.0],
                [0.1, 1.0, 0.6, 0.2, 1.0],
                [-0.6, -0.7, 0.2, -0.9, -0.9],
                [0.0, -0.1, 0.8, 0.3, 0.0],
            ]
        ),  # (3D=6, E + H=5): reset, update, candidate
        "W_hh": np.array(
            [[0.0, -0.5], [-1.0, -0.6], [0.4, -0.6], [-0.3, -1.0], [0.7, -0.7], [-0.5, 0.8]]
        ),  # (3D=6, D=2)
        "b_ih": np.array([0.0, 0.7, 0.3, 0.5, -0.8, 0.1]),
        "b_hh": np.array([0.0, 0.7, -0.3, 0.2, -0.9, -0.2]),
        "W_o": np.array(
            [
                [-0.4, -0.7, 0.6, -0.2, 1.0, 0.2, 0.2],
                [0.3, 0.4, -0.7, -0.1, -0.5, -0.2, -0.8],
                [0.9, -0.6, 0.3, -0.4, 0.7, 0.3, -0.7],
                [0.7, 0.9, 0.8, 0.1, -0.7, -0.6, 0.9],
            ]
        ),  # (vocab_size=4, D + H + E=7): [h_t; c_t; x_t]
        "b_o": np.array([0.0, 0.2, -0.1, 0.3]),
    }
    inputs = {
        "x": np.array([[0.5, -0.2], [-0.3, 0.8]]),  # (B=2, E=2)
        "h_prev": h,
        "S": S,
        "lengths": np.array([3, 2]),
        "past_weights": past,
    }
    expected = {  # b_o does not change h and the log-weights
        "expected_h": [[0.2324175107, -0.4898096895], [-0.1458121864, 0.3083708561]],
        "expected_log_weights": [
            [-0.5701402666, -2.2881897728, -1.0993007150],
            [-0.9305932040, -0.5014030376, 0],
        ],
    }
    loud = dict(params, b_o=params["b_o"] + np.array([1000.0, 0.0, 0.0, 0.0]))
    return [
        Case(
            "B=2, lengths 3 and 2, T = 2 earlier steps",
            **inputs,
            params=params,
            expected_log_probs=[
                [-1.7457043381, -1.5155389023, -1.2250198279, -1.1646356254],
                [-1.7414953438, -2.9486491283, -2.9620766848, -0.3276433384],
            ],
            against="torch.log_softmax of W_o [h_t; c_t; x_t] + b_o",
            **expected,
        ),
        Case(
            "B=2, lengths 3 and 2, T = 2 earlier steps, b_o[0] = 1000",
            **inputs,
            params=loud,
            expected_log_probs=[
                [0.0, -999.7698345642, -999.4793154899, -999.4189312874],
                [0.0, -1001.2071537845, -1001.2205813410, -998.5861479946],
            ],
            against="torch.log_softmax",
            **expected,
        ),
    ]


def part_c_bad_inputs() -> list[Case]:
    """Input that bahdanau_step must refuse with ValueError: x, h_prev, S, lengths,
    past_weights, params."""
    good = part_c_cases()[0]
    inputs = {name: good.inputs[name] for name in ("x", "h_prev", "S", "lengths", "past_weights")}
    W_ih, W_o = good.params["W_ih"], good.params["W_o"]
    return [
        Case("W_ih of shape (6, 3), without the columns of c_t", **inputs,
             params=dict(good.params, W_ih=W_ih[:, :3])),
        Case("W_o of shape (4, 4), without c_t and x_t", **inputs,
             params=dict(good.params, W_o=W_o[:, :4])),
    ]  # fmt: skip


def check_part_c(bahdanau_step: Callable[..., Any]) -> None:
    """Part C's visible test (bahdanau_step)."""
    __tracebackhide__ = True
    for case in part_c_cases():
        parameters = ("x", "h_prev", "S", "lengths", "past_weights", "params")
        inputs = {name: case.inputs[name] for name in parameters}
        where = "lengths " + " and ".join(str(n) for n in case.lengths)
        real = np.arange(case.S.shape[1])[None, :] < case.lengths[:, None]
        with case.named("bahdanau_step"):
            with inputs_kept("bahdanau_step", **inputs):
                result = by_hand(ASSIGNMENT, bahdanau_step, *inputs.values())
            returned = ("log_probs", "h", "log_weights")
            log_probs, h, log_weights = expect_tuple(result, "bahdanau_step", returned)
            expect_log_weights(
                log_weights, np.array(case.expected_log_weights), real, where=where, atol=1e-9,
                against=f"torch, scored with h_prev ({where})",
            )  # fmt: skip
            assert_close(
                "h", h, case.expected_h, atol=1e-9,
                against="torch.nn.GRUCell on [x; c_t] and h_prev",
            )  # fmt: skip
            assert_close(
                "log_probs", log_probs, case.expected_log_probs, atol=1e-9, against=case.against
            )
    _expect_refused("bahdanau_step", bahdanau_step, part_c_bad_inputs())
    print("Part C, visible test: passed.")


# -- Part D: beam_search_on_table ---------------------------------------------------------------


def part_d_cases(table: dict[tuple[int, ...], np.ndarray]) -> list[Case]:
    """beam_search_on_table's cases on the notebook's tiny model (its table; </s> = 0,
    <s> = 3): table, bos, eos, beam_size, max_len, alpha; expected_tokens, expected_log_prob,
    expected_normalised."""
    return [
        Case(
            f"beam_size={beam_size}, max_len={max_len}, alpha={alpha}{note}",
            table=table, bos=3, eos=0, beam_size=beam_size, max_len=max_len, alpha=alpha,
            expected_tokens=tokens, expected_log_prob=np.log(probability),
            expected_normalised=normalised,
        )
        for beam_size, max_len, alpha, note, tokens, probability, normalised in [
            (1, 3, 0.0, " (greedy)", [1, 1, 0], 0.0925, -2.3805466345),
            (2, 3, 0.0, "", [2, 2, 0], 0.144, -1.9379419794),
            (3, 3, 0.0, " (a short hypothesis is the most probable)", [1, 0], 0.175,
             -1.7429693051),
            (3, 3, 1.0, " (scored per token)", [2, 2, 0], 0.144, -0.6459806598),
            (2, 2, 0.0, " (cut at max_len: no </s>)", [2, 2], 0.32, -1.1394342832),
        ]
    ]  # fmt: skip


def part_d_bad_inputs(table: dict[tuple[int, ...], np.ndarray]) -> list[Case]:
    """Input that beam_search_on_table must refuse with ValueError: table, bos, eos,
    beam_size, max_len, alpha."""
    good = {"table": table, "bos": 3, "eos": 0, "beam_size": 2, "max_len": 3, "alpha": 0.0}
    return [
        Case(f"{name} {value}", **(good | {name: value}))
        for name, value in [("beam_size", 0), ("max_len", 0), ("alpha", -1.0)]
    ]


def check_part_d(
    beam_search_on_table: Callable[..., Any],
    table_d: dict[tuple[int, ...], np.ndarray],
    words_d: list[str],
) -> None:
    """Part D's visible test (beam_search_on_table), on the notebook's tiny model: its table
    of log-probabilities and its words."""
    __tracebackhide__ = True
    for case in part_d_cases(table_d):
        with case.named("beam_search_on_table"):
            with inputs_kept("beam_search_on_table", table=case.table):
                result = by_hand(
                    ASSIGNMENT, beam_search_on_table, case.table, case.bos, case.eos,
                    case.beam_size, case.max_len, case.alpha,
                )  # fmt: skip
            returned = ("tokens", "log_prob", "normalised")
            tokens, log_prob, normalised = expect_tuple(result, "beam_search_on_table", returned)
            found = [int(t) for t in tokens]
            if found != case.expected_tokens:
                raise CheckFailed(
                    f"the search found {' '.join(words_d[t] for t in found)!r}; expected "
                    f"{' '.join(words_d[t] for t in case.expected_tokens)!r}"
                )
            assert_close("log_prob", log_prob, case.expected_log_prob, atol=1e-9)
            assert_close("normalised score", normalised, case.expected_normalised, atol=1e-9)
    _expect_refused("beam_search_on_table", beam_search_on_table, part_d_bad_inputs(table_d))
    print("Part D, visible test: passed.")
