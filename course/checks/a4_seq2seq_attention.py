"""The visible tests of Assignment 4 (coverage scores, log-domain attention, Bahdanau's step, beam search).

Each test cell of the notebook calls one check with the student's functions, which run under
the rule of the part's hidden tests (:func:`course.checks.rules.by_hand`). Every function
here sets ``__tracebackhide__``: when a student's own code raises, IPython shows the cell's
call and the student's frames, not this module's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from course.checks import CheckFailed, as_numpy, assert_close, inputs_kept
from course.checks.rules import by_hand

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


def check_part_a(coverage_scores: Callable[..., Any]) -> None:
    """Part A's visible test (coverage_scores)."""
    __tracebackhide__ = True
    h_a, S_a, past_all_a, params_a = _shared_inputs()
    for T_a, want_a in (
        (
            2,
            [
                [0.4444825210, -1.2735669852, -0.0846779274],
                [-0.2671407043, 0.1620494621, 1.1025436578],
            ],
        ),
        (
            0,
            [
                [1.3698763767, -0.0206517666, 0.6622642664],
                [1.3927999476, 1.3723277849, 1.1025436578],
            ],
        ),
    ):
        past_a = past_all_a[:, :T_a]
        with inputs_kept("coverage_scores", h=h_a, S=S_a, past_weights=past_a, params=params_a):
            scores_a = by_hand(ASSIGNMENT, coverage_scores, h_a, S_a, past_a, params_a)
        assert_close(
            f"coverage_scores(h, S, past_weights, params) with T = {T_a} earlier steps",
            scores_a,
            want_a,
            atol=1e-8,
            against="torch",
        )
    for bad_a, args_a in (
        ("S with B = 1 for h with B = 2", (h_a, S_a[:1], past_all_a, params_a)),
        ("past_weights of shape (2, 2, 2) for m = 3", (h_a, S_a, past_all_a[:, :, :2], params_a)),
        (
            "W_k of shape (2, 2) for H = 3",
            (h_a, S_a, past_all_a, dict(params_a, W_k=np.ones((2, 2)))),
        ),
        (
            "no w_cov in params",
            (h_a, S_a, past_all_a, {k: params_a[k] for k in ("W_q", "W_k", "b_att", "v")}),
        ),
    ):
        try:
            by_hand(ASSIGNMENT, coverage_scores, *args_a)
        except ValueError:
            continue
        raise CheckFailed(f"coverage_scores should raise ValueError for {bad_a}")
    print("Part A, visible test: passed.")


def check_part_b(log_attention: Callable[..., Any]) -> None:
    """Part B's visible test (log_attention)."""
    __tracebackhide__ = True
    scores_b = np.array([[1.0, 0.0, 0.5], [0.3, 900.0, -2.0], [5.0, 1.0, 2.0]])  # 900: padding
    lengths_b = np.array([3, 1, 0])  # the third sentence has no real position
    S_b = np.array(
        [
            [[1.0, 0.0], [0.0, 1.0], [2.0, -1.0]],
            [[0.5, 0.5], [np.inf, 3.0], [-np.inf, 0.0]],  # padding: infinite states
            [[1e300, np.inf], [1.0, 1.0], [-np.inf, 2.0]],  # all padding
        ]
    )  # (B=3, m=3, H=2)
    real_b = np.arange(3)[None, :] < lengths_b[:, None]
    for tau_b, log_weights_want, context_want in (
        (
            1.0,
            [[-0.6802696706, -1.6802696706, -1.1802696706], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
            [[1.1208721625, -0.1208721625], [0.5, 0.5], [0.0, 0.0]],
        ),
        (
            0.001,
            [[0.0, -1000.0, -500.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
            [[1.0, 0.0], [0.5, 0.5], [0.0, 0.0]],
        ),
    ):
        call_b = f"log_attention(scores, lengths, S, temperature={tau_b})"
        with (
            inputs_kept("log_attention", scores=scores_b, lengths=lengths_b, S=S_b),
            np.errstate(all="ignore"),
        ):
            result_b = by_hand(ASSIGNMENT, log_attention, scores_b, lengths_b, S_b, tau_b)
        if not (isinstance(result_b, tuple) and len(result_b) == 2):
            raise CheckFailed(f"{call_b} should return a tuple (log_weights, context)")
        log_weights_b, context_b = result_b
        expect_log_weights(
            log_weights_b,
            np.array(log_weights_want),
            real_b,
            where=f"temperature {tau_b}",
            atol=1e-9,
            against="torch.log_softmax over the real positions",
        )
        assert_close(
            f"context at temperature {tau_b}",
            context_b,
            context_want,
            atol=1e-9,
            against="the weighted sum of the real encoder states (0 for no real position)",
        )
    for bad_b, args_b in (
        ("temperature 0", (scores_b, lengths_b, S_b, 0.0)),
        ("temperature -1", (scores_b, lengths_b, S_b, -1.0)),
        ("lengths [3, 1, 4] with m = 3", (scores_b, np.array([3, 1, 4]), S_b, 1.0)),
        ("lengths [3, -1, 0]", (scores_b, np.array([3, -1, 0]), S_b, 1.0)),
        ("lengths [3, 1] for B = 3", (scores_b, np.array([3, 1]), S_b, 1.0)),
    ):
        try:
            with np.errstate(all="ignore"):
                by_hand(ASSIGNMENT, log_attention, *args_b)
        except ValueError:
            continue
        raise CheckFailed(f"log_attention should raise ValueError for {bad_b}")
    print("Part B, visible test: passed.")


def check_part_c(bahdanau_step: Callable[..., Any]) -> None:
    """Part C's visible test (bahdanau_step)."""
    __tracebackhide__ = True
    x_c = np.array([[0.5, -0.2], [-0.3, 0.8]])  # (B=2, E=2)
    h_c, S_c, past_c, score_params_c = _shared_inputs()
    params_c = score_params_c | {
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
    lengths_c = np.array([3, 2])
    inputs_c = {"x": x_c, "h_prev": h_c, "S": S_c, "lengths": lengths_c, "past_weights": past_c}
    with inputs_kept("bahdanau_step", **inputs_c, params=params_c):
        result_c = by_hand(ASSIGNMENT, bahdanau_step, *inputs_c.values(), params_c)
    if not (isinstance(result_c, tuple) and len(result_c) == 3):
        raise CheckFailed("bahdanau_step should return a tuple (log_probs, h, log_weights)")
    log_probs_c, h_c, log_weights_c = result_c
    expect_log_weights(
        log_weights_c,
        np.array(
            [[-0.5701402666, -2.2881897728, -1.0993007150], [-0.9305932040, -0.5014030376, 0]]
        ),
        np.array([[True, True, True], [True, True, False]]),
        where="lengths 3 and 2",
        atol=1e-9,
        against="torch, scored with h_prev (lengths 3 and 2)",
    )
    assert_close(
        "h",
        h_c,
        [[0.2324175107, -0.4898096895], [-0.1458121864, 0.3083708561]],
        atol=1e-9,
        against="torch.nn.GRUCell on [x; c_t] and h_prev",
    )
    assert_close(
        "log_probs",
        log_probs_c,
        [
            [-1.7457043381, -1.5155389023, -1.2250198279, -1.1646356254],
            [-1.7414953438, -2.9486491283, -2.9620766848, -0.3276433384],
        ],
        atol=1e-9,
        against="torch.log_softmax of W_o [h_t; c_t; x_t] + b_o",
    )
    loud_c = dict(params_c, b_o=params_c["b_o"] + np.array([1000.0, 0.0, 0.0, 0.0]))
    assert_close(
        "log_probs with b_o[0] = 1000",
        by_hand(ASSIGNMENT, bahdanau_step, *inputs_c.values(), loud_c)[0],
        [
            [0.0, -999.7698345642, -999.4793154899, -999.4189312874],
            [0.0, -1001.2071537845, -1001.2205813410, -998.5861479946],
        ],
        atol=1e-9,
        against="torch.log_softmax",
    )
    for bad_c, params_bad_c in (
        (
            "W_ih of shape (6, 3), without the columns of c_t",
            dict(params_c, W_ih=params_c["W_ih"][:, :3]),
        ),
        ("W_o of shape (4, 4), without c_t and x_t", dict(params_c, W_o=params_c["W_o"][:, :4])),
    ):
        try:
            by_hand(ASSIGNMENT, bahdanau_step, *inputs_c.values(), params_bad_c)
        except ValueError:
            continue
        raise CheckFailed(f"bahdanau_step should raise ValueError for {bad_c}")
    print("Part C, visible test: passed.")


def check_part_d(
    beam_search_on_table: Callable[..., Any],
    table_d: dict[tuple[int, ...], np.ndarray],
    words_d: list[str],
) -> None:
    """Part D's visible test (beam_search_on_table), on the notebook's tiny model: its table
    of log-probabilities and its words."""
    __tracebackhide__ = True
    for beam_d, max_len_d, alpha_d, tokens_d, prob_d, normalised_d in [
        (1, 3, 0.0, [1, 1, 0], 0.0925, -2.3805466345),  # greedy: yes yes </s>
        (2, 3, 0.0, [2, 2, 0], 0.144, -1.9379419794),  # ok ok </s>
        (3, 3, 0.0, [1, 0], 0.175, -1.7429693051),  # yes </s>: short and probable
        (3, 3, 1.0, [2, 2, 0], 0.144, -0.6459806598),  # per token, ok ok </s> is better
        (2, 2, 0.0, [2, 2], 0.32, -1.1394342832),  # cut at max_len = 2: no </s>
    ]:
        call_d = f"beam_search(beam_size={beam_d}, max_len={max_len_d}, alpha={alpha_d})"
        with inputs_kept("beam_search_on_table", table=table_d):
            result_d = by_hand(
                ASSIGNMENT, beam_search_on_table, table_d, 3, 0, beam_d, max_len_d, alpha_d
            )
        if not (isinstance(result_d, tuple) and len(result_d) == 3):
            raise CheckFailed(f"{call_d} should return a tuple (tokens, log_prob, normalised)")
        got_d = [int(t) for t in result_d[0]]
        if not (got_d == tokens_d):
            raise CheckFailed(
                f"{call_d} found {' '.join(words_d[t] for t in got_d)!r}; expected "
                f"{' '.join(words_d[t] for t in tokens_d)!r}"
            )
        assert_close(f"log_prob of {call_d}", result_d[1], np.log(prob_d), atol=1e-9)
        assert_close(f"normalised score of {call_d}", result_d[2], normalised_d, atol=1e-9)
    for bad_d in ({"beam_size": 0}, {"max_len": 0}, {"alpha": -1.0}):
        arguments_d = {"beam_size": 2, "max_len": 3, "alpha": 0.0} | bad_d
        try:
            by_hand(ASSIGNMENT, beam_search_on_table, table_d, 3, 0, **arguments_d)
        except ValueError:
            continue
        raise CheckFailed(f"beam_search should raise ValueError for {bad_d}")
    print("Part D, visible test: passed.")
