"""The visible tests of Assignment 4 (attention scores, attend, the decoder's output, beam search).

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

ASSIGNMENT = "a4_seq2seq_attention"


def check_part_a(attention_scores: Callable[..., Any]) -> None:
    """Part A's visible test (attention_scores)."""
    __tracebackhide__ = True
    h_a = np.array([[1.0, -0.5], [0.3, 0.8]])  # (B=2, H=2)
    S_a = np.array(
        [
            [[0.5, 1.0], [-1.0, 0.2], [0.7, -0.3]],
            [[0.1, 0.4], [0.9, -0.6], [-0.2, 0.5]],
        ]
    )  # (B=2, m=3, H=2)
    params_a = {
        "W_a": np.array([[0.6, -0.2], [0.9, 0.3]]),
        "W_1": np.array([[0.4, -0.3, 0.8, 0.1], [-0.6, 0.5, 0.2, -0.7], [0.3, 0.9, -0.4, 0.5]]),
        "w_2": np.array([1.0, -0.8, 0.6]),
    }
    expected_a = {
        "dot": [[0.0, -1.1, 0.85], [0.35, -0.21, 0.34]],
        "scaled_dot": [
            [0.0, -0.7778174593, 0.6010407640],
            [0.2474873734, -0.1484924240, 0.2404163056],
        ],
        "bilinear": [[-0.275, -0.22, 0.21], [0.162, 0.702, -0.09]],
        "additive": [
            [1.5876916769, 0.6402600692, 0.8492935651],
            [0.4812055164, 0.0422630870, 0.3973249407],
        ],
    }
    for kind_a, want_a in expected_a.items():
        with inputs_kept("attention_scores", h=h_a, S=S_a, params=params_a):
            scores_a = by_hand(ASSIGNMENT, attention_scores, kind_a, h_a, S_a, params_a)
        assert_close(
            f'attention_scores("{kind_a}", h, S, params)',
            scores_a,
            want_a,
            atol=1e-8,
            against="torch",
        )
    # W_a is not symmetric: h^T W_a s is not s^T W_a h.
    if not (
        not np.allclose(
            by_hand(ASSIGNMENT, attention_scores, "bilinear", h_a, S_a, params_a),
            by_hand(ASSIGNMENT, attention_scores, "bilinear", h_a, S_a, {"W_a": params_a["W_a"].T}),
        )
    ):
        raise CheckFailed("the bilinear score should change when W_a is transposed")
    try:
        by_hand(ASSIGNMENT, attention_scores, "cosine", h_a, S_a, params_a)
    except ValueError as error_a:
        if "cosine" not in str(error_a):
            raise CheckFailed(f"the ValueError should name the kind: {error_a}") from error_a
    else:
        raise CheckFailed('attention_scores("cosine", ...) should raise ValueError')
    try:
        by_hand(ASSIGNMENT, attention_scores, "dot", h_a, S_a[:, :, :1], params_a)
    except ValueError:
        pass
    else:
        raise CheckFailed(
            "attention_scores should raise ValueError for S with H = 1 and h with H = 2"
        )
    print("Part A, visible test: passed.")


def check_part_b(attend: Callable[..., Any]) -> None:
    """Part B's visible test (attend)."""
    __tracebackhide__ = True
    scores_b = np.array([[1000.0, 1001.0, 999.0], [0.5, -0.5, 800.0]])  # 800 sits in the padding
    lengths_b = np.array([3, 2])
    S_b = np.array(
        [
            [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
            [[2.0, -1.0], [0.0, 3.0], [50.0, 50.0]],  # the last position is padding
        ]
    )  # (B=2, m=3, H=2)
    with inputs_kept("attend", scores=scores_b, lengths=lengths_b, S=S_b):
        result_b = by_hand(ASSIGNMENT, attend, scores_b, lengths_b, S_b)
    if not (isinstance(result_b, tuple) and len(result_b) == 2):
        raise CheckFailed("attend should return a tuple (weights, context)")
    weights_b, context_b = result_b
    assert_close(
        "weights",
        weights_b,
        [[0.2447284711, 0.6652409558, 0.0900305732], [0.7310585786, 0.2689414214, 0.0]],
        atol=1e-9,
        against="torch.softmax over the real positions",
    )
    if not (np.asarray(weights_b)[1, 2] == 0.0):
        raise CheckFailed(
            f"the weight of a padded position must be exactly 0, got {np.asarray(weights_b)[1, 2]!r}"
        )
    assert_close(
        "the sum of each row of weights", np.sum(weights_b, axis=1), [1.0, 1.0], atol=1e-12
    )
    assert_close(
        "context",
        context_b,
        [[0.3347590442, 0.7552715289], [1.4621171573, 0.0757656855]],
        atol=1e-9,
        against="the weighted sum of the real encoder states",
    )
    for bad_lengths_b in ([3, 0], [4, 2], [3]):
        try:
            by_hand(ASSIGNMENT, attend, scores_b, np.array(bad_lengths_b), S_b)
        except ValueError:
            continue
        raise CheckFailed(f"attend should raise ValueError for lengths {bad_lengths_b} with m = 3")
    print("Part B, visible test: passed.")


def check_part_c(decoder_output: Callable[..., Any]) -> None:
    """Part C's visible test (decoder_output)."""
    __tracebackhide__ = True
    h_c = np.array([[1.0, -0.5], [0.3, 0.8]])  # Part A's inputs, (B=2, H=2)
    S_c = np.array(
        [
            [[0.5, 1.0], [-1.0, 0.2], [0.7, -0.3]],
            [[0.1, 0.4], [0.9, -0.6], [-0.2, 0.5]],
        ]
    )  # (B=2, m=3, H=2)
    params_c = {
        "W_c": np.array([[0.5, -0.4, 0.3, 0.8], [-0.7, 0.2, 0.6, -0.1]]),  # (H=2, 2H=4)
        "b_c": np.array([0.1, -0.2]),
        "W_o": np.array([[1.0, -1.0], [0.5, 0.5], [-0.3, 0.9], [0.0, -0.6]]),  # (vocab_size=4, H=2)
        "b_o": np.array([0.0, 0.2, -0.1, 0.3]),
    }
    lengths_c = np.array([3, 2])
    with inputs_kept("decoder_output", h=h_c, S=S_c, lengths=lengths_c, params=params_c):
        result_c = by_hand(ASSIGNMENT, decoder_output, "dot", h_c, S_c, lengths_c, params_c)
    if not (isinstance(result_c, tuple) and len(result_c) == 2):
        raise CheckFailed("decoder_output should return a tuple (log_probs, weights)")
    log_probs_c, weights_c = result_c
    assert_close(
        "weights",
        weights_c,
        [[0.2722927478, 0.0906383820, 0.6370688702], [0.6364525403, 0.3635474597, 0.0]],
        atol=1e-9,
        against="torch (dot score, lengths 3 and 2)",
    )
    assert_close(
        "log_probs",
        log_probs_c,
        [
            [-1.4749990926, -1.1887995732, -1.6012413984, -1.3280694269],
            [-0.7925376910, -1.5017134092, -2.5548991918, -1.3989451509],
        ],
        atol=1e-9,
        against="torch.log_softmax",
    )
    loud_c = dict(params_c, b_o=params_c["b_o"] + np.array([1000.0, 0.0, 0.0, 0.0]))
    assert_close(
        "log_probs with b_o[0] = 1000",
        by_hand(ASSIGNMENT, decoder_output, "dot", h_c, S_c, lengths_c, loud_c)[0],
        [
            [0.0, -999.7138004806, -1000.1262423058, -999.8530703343],
            [0.0, -1000.7091757182, -1001.7623615007, -1000.6064074598],
        ],
        atol=1e-9,
        against="torch.log_softmax",
    )
    try:
        by_hand(
            ASSIGNMENT,
            decoder_output,
            "dot",
            h_c,
            S_c,
            lengths_c,
            dict(params_c, W_c=params_c["W_c"][:, :2]),
        )
    except ValueError:
        pass
    else:
        raise CheckFailed("decoder_output should raise ValueError for W_c of shape (2, 2)")
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
