"""The visible tests of Assignment 8 (temperature, sampling, min-p, typical, a sliding-window KV step).

Each test cell of the notebook calls one check with the student's functions, which run under
the rule of the part's hidden tests (:func:`course.checks.rules.by_hand`). Every function
here sets ``__tracebackhide__``: when a student's own code raises, IPython shows the cell's
call and the student's frames, not this module's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from course.checks import CheckFailed, assert_close, expect_value_error, inputs_kept
from course.checks.rules import by_hand

__all__ = ["check_part_a", "check_part_b", "check_part_c", "check_part_d", "check_part_e"]

ASSIGNMENT = "a8_gpt_decoding"


def check_part_a(temperature_probs: Callable[..., Any]) -> None:
    """Part A's visible test (temperature_probs)."""
    __tracebackhide__ = True
    logits_a = np.array(
        [[2.0, 1.0, 0.0, -1.0], [0.5, 0.5, 0.5, 0.5], [1000.0, 1001.0, 999.0, -np.inf]]
    )
    expected_a = {
        1.0: [[0.643914259888, 0.236882818090, 0.087144318742, 0.032058603280],
              [0.25, 0.25, 0.25, 0.25],
              [0.244728471055, 0.665240955775, 0.090030573170, 0.0]],
        0.5: [[0.864954876799, 0.117058913239, 0.015842201179, 0.002144008784],
              [0.25, 0.25, 0.25, 0.25],
              [0.117310427826, 0.866813332197, 0.015876239976, 0.0]],
        4.0: [[0.349932008759, 0.272527322443, 0.212244492127, 0.165296176671],
              [0.25, 0.25, 0.25, 0.25],
              [0.326495835800, 0.419228951610, 0.254275212590, 0.0]],
    }  # fmt: skip
    for tau_a, wanted_a in expected_a.items():
        with inputs_kept("temperature_probs", logits=logits_a):
            got_a = by_hand(ASSIGNMENT, temperature_probs, logits_a, tau_a)
        if not (isinstance(got_a, np.ndarray) and got_a.dtype == np.float64):
            raise CheckFailed(
                f"temperature_probs should return a float64 NumPy array, got {type(got_a).__name__} "
                f"of dtype {getattr(got_a, 'dtype', None)}"
            )
        assert_close(
            f"temperature_probs(logits_a, {tau_a})", got_a, wanted_a, atol=1e-10,
            against="softmax(logits / τ) worked out by hand",
        )  # fmt: skip
    assert_close(
        "temperature_probs of one row (|V|,) given as a list", by_hand(ASSIGNMENT, temperature_probs, [2, 1, 0, -1], 1),
        expected_a[1.0][0], atol=1e-10,
    )  # fmt: skip
    cold_a = by_hand(ASSIGNMENT, temperature_probs, [[3.0, 2.9, -5.0]], 1e-3)
    assert_close(
        "temperature_probs([[3, 2.9, -5]], τ = 0.001)", cold_a, [[1.0, 0.0, 0.0]], atol=1e-12
    )
    expect_value_error(
        {
            "temperature_probs(logits_a, 0.0)": lambda: by_hand(
                ASSIGNMENT, temperature_probs, logits_a, 0.0
            ),
            "temperature_probs(logits_a, -1.0)": lambda: by_hand(
                ASSIGNMENT, temperature_probs, logits_a, -1.0
            ),
            "temperature_probs([[1.0, np.inf]], 1.0)": lambda: by_hand(
                ASSIGNMENT, temperature_probs, [[1.0, np.inf]], 1.0
            ),
            "temperature_probs([[-np.inf, -np.inf]], 1.0)": lambda: by_hand(
                ASSIGNMENT, temperature_probs, [[-np.inf, -np.inf]], 1.0
            ),
        }
    )
    print("Part A, visible test: passed.")


def check_part_b(sample_tokens: Callable[..., Any]) -> None:
    """Part B's visible test (sample_tokens)."""
    __tracebackhide__ = True
    row_b = [
        0.25,
        0.5,
        0.0,
        0.25,
    ]  # token 0 owns [0, 0.25), 1 owns [0.25, 0.75), 2 none, 3 [0.75, 1)
    u_b = np.array([0.0, 0.2499, 0.25, 0.5, 0.7499, 0.75, 0.9999999])
    probs_b = np.array([row_b] * len(u_b))
    with inputs_kept("sample_tokens", probs=probs_b, u=u_b):
        tokens_b = by_hand(ASSIGNMENT, sample_tokens, probs_b, u_b)
    if not (isinstance(tokens_b, np.ndarray) and tokens_b.shape == (len(u_b),)):
        raise CheckFailed(
            f"sample_tokens should return a NumPy array of shape ({len(u_b)},), got "
            f"{type(tokens_b).__name__} of shape {np.shape(tokens_b)}"
        )
    if not (tokens_b.dtype == np.int64):
        raise CheckFailed(f"the tokens should be int64, got {tokens_b.dtype}")
    for b_b, (u_value_b, token_b, wanted_b) in enumerate(
        zip(u_b, tokens_b, [0, 0, 1, 1, 1, 3, 3], strict=True)
    ):
        if not (token_b == wanted_b):
            raise CheckFailed(
                f"row {b_b}: u = {u_value_b} gives token {token_b}, expected {wanted_b} (probabilities "
                f"{row_b}, cumulative {np.cumsum(row_b).tolist()}: token i owns [c_(i-1), c_i))"
            )
    first_zero_b = by_hand(
        ASSIGNMENT, sample_tokens, [[0.0, 0.5, 0.5, 0.0], [0.0, 0.5, 0.5, 0.0]], [0.0, 0.9]
    )
    if not (first_zero_b.tolist() == [1, 2]):
        raise CheckFailed(
            f"with probabilities [0, 0.5, 0.5, 0], u = 0 and u = 0.9 give tokens {first_zero_b.tolist()}, "
            "expected [1, 2]: a token of probability 0 is never drawn"
        )
    rng_b = np.random.default_rng(8)
    many_b = by_hand(
        ASSIGNMENT, sample_tokens, np.tile([0.1, 0.6, 0.3], (20_000, 1)), rng_b.random(20_000)
    )
    for token_b, p_b in enumerate([0.1, 0.6, 0.3]):
        share_b = np.mean(many_b == token_b)
        sd_b = np.sqrt(p_b * (1 - p_b) / 20_000)
        if not (abs(share_b - p_b) <= 5 * sd_b):
            raise CheckFailed(
                f"token {token_b} was drawn {share_b:.4f} of the time with uniform u, expected "
                f"{p_b} ± {5 * sd_b:.4f}: off by {share_b - p_b:+.4f}"
            )
    expect_value_error(
        {
            "sample_tokens(probs_b, u_b[:3]) (one u per row)": lambda: by_hand(
                ASSIGNMENT, sample_tokens, probs_b, u_b[:3]
            ),
            "sample_tokens(probs_b[:1], [1.0]) (u must be < 1)": lambda: by_hand(
                ASSIGNMENT, sample_tokens, probs_b[:1], [1.0]
            ),
            "sample_tokens([[0.5, 0.6]], [0.1]) (sums to 1.1)": lambda: by_hand(
                ASSIGNMENT, sample_tokens, [[0.5, 0.6]], [0.1]
            ),
            "sample_tokens([[1.5, -0.5]], [0.1]) (a negative probability)": lambda: by_hand(
                ASSIGNMENT, sample_tokens, [[1.5, -0.5]], [0.1]
            ),
        }
    )
    print("Part B, visible test: passed.")


def check_part_c(min_p_probs: Callable[..., Any]) -> None:
    """Part C's visible test (min_p_probs)."""
    __tracebackhide__ = True
    pi_c = np.array([[0.5, 0.2, 0.2, 0.05, 0.05], [0.1, 0.3, 0.3, 0.25, 0.05]])
    logits_c = np.log(pi_c) + 3.0  # softmax(log pi + 3) = pi

    def expected_c(kept: list[list[int]]) -> np.ndarray:
        """pi_c kept at the listed tokens of each row, renormalised."""
        __tracebackhide__ = True
        mass = np.zeros_like(pi_c)
        for row, tokens in enumerate(kept):
            mass[row, tokens] = pi_c[row, tokens]
        return mass / mass.sum(axis=1, keepdims=True)

    cases_c = [
        (0.3, [[0, 1, 2], [0, 1, 2, 3]],
         "p_base = 0.3: thresholds 0.15 and 0.09 (both tokens of 0.2 kept in row 0)"),
        (0.5, [[0], [1, 2, 3]], "p_base = 0.5: thresholds 0.25 and 0.15"),
        (0.9, [[0], [1, 2]], "p_base = 0.9: thresholds 0.45 and 0.27"),
        (1.0, [[0], [1, 2]], "p_base = 1: the most likely token(s), ties at the top included"),
        (0.05, [[0, 1, 2, 3, 4]] * 2, "p_base = 0.05: thresholds 0.025 and 0.015"),
        (0.0, [[0, 1, 2, 3, 4]] * 2, "p_base = 0: every token"),
    ]  # fmt: skip
    for p_c, kept_c, label_c in cases_c:
        with inputs_kept("min_p_probs", logits=logits_c):
            got_c = by_hand(ASSIGNMENT, min_p_probs, logits_c, p_c)
        if not (isinstance(got_c, np.ndarray) and got_c.shape == logits_c.shape):
            raise CheckFailed(
                f"min_p_probs should return a NumPy array of shape {logits_c.shape}, got "
                f"{type(got_c).__name__} of shape {np.shape(got_c)}"
            )
        assert_close(
            f"min_p_probs(logits_c, {p_c}) for {label_c}", got_c, expected_c(kept_c), atol=1e-12,
            against=f"the renormalised probabilities of tokens {kept_c}",
        )  # fmt: skip
    assert_close(
        "min_p_probs([1000, 1000 + ln 0.3, 0], 0.2): huge logits",
        by_hand(ASSIGNMENT, min_p_probs, [1000.0, 1000.0 + np.log(0.3), 0.0], 0.2),
        [1 / 1.3, 0.3 / 1.3, 0.0], atol=1e-12,
    )  # fmt: skip
    expect_value_error(
        {
            "min_p_probs(logits_c, -0.1)": lambda: by_hand(ASSIGNMENT, min_p_probs, logits_c, -0.1),
            "min_p_probs(logits_c, 1.5)": lambda: by_hand(ASSIGNMENT, min_p_probs, logits_c, 1.5),
            "min_p_probs(logits_c, '0.3') (a string)": lambda: by_hand(
                ASSIGNMENT, min_p_probs, logits_c, "0.3"
            ),
            "min_p_probs([[-np.inf, -np.inf]], 0.1)": lambda: by_hand(
                ASSIGNMENT, min_p_probs, [[-np.inf, -np.inf]], 0.1
            ),
        }
    )
    print("Part C, visible test: passed.")


def check_part_d(typical_probs: Callable[..., Any]) -> None:
    """Part D's visible test (typical_probs)."""
    __tracebackhide__ = True
    pi_d = np.array([[0.4, 0.12, 0.12, 0.12, 0.12, 0.12], [0.5, 0.25, 0.125, 0.0625, 0.0625, 0.0]])
    with np.errstate(divide="ignore"):
        logits_d = np.log(pi_d)  # row 1 ends with a token of probability 0 (logit -inf)

    def expected_d(kept: list[list[int]]) -> np.ndarray:
        """pi_d kept at the listed tokens of each row, renormalised."""
        __tracebackhide__ = True
        mass = np.zeros_like(pi_d)
        for row, tokens in enumerate(kept):
            mass[row, tokens] = pi_d[row, tokens]
        return mass / mass.sum(axis=1, keepdims=True)

    cases_d = [
        (0.2, [[1, 2, 3, 4, 5], [1]],
         "p = 0.2: the most typical tokens (row 0: all five tied ones, not the most likely)"),
        (0.5, [[1, 2, 3, 4, 5], [0, 1]], "p = 0.5: the token that crosses p is kept"),
        (0.7, [[0, 1, 2, 3, 4, 5], [0, 1]], "p = 0.7"),
        (0.8, [[0, 1, 2, 3, 4, 5], [0, 1, 2]], "p = 0.8"),
        (0.9, [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4]],
         "p = 0.9: row 1 crosses p at 0.0625, and both tokens of 0.0625 are kept"),
        (1.0, [[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4]], "p = 1: every token"),
        (1e-9, [[1, 2, 3, 4, 5], [1]], "p = 1e-9: at least the most typical token(s)"),
    ]  # fmt: skip
    for p_d, kept_d, label_d in cases_d:
        with inputs_kept("typical_probs", logits=logits_d):
            got_d = by_hand(ASSIGNMENT, typical_probs, logits_d, p_d)
        if not (isinstance(got_d, np.ndarray) and got_d.shape == logits_d.shape):
            raise CheckFailed(
                f"typical_probs should return a NumPy array of shape {logits_d.shape}, got "
                f"{type(got_d).__name__} of shape {np.shape(got_d)}"
            )
        assert_close(
            f"typical_probs(logits_d, {p_d}) for {label_d}", got_d, expected_d(kept_d), atol=1e-12,
            against=f"the renormalised probabilities of tokens {kept_d}",
        )  # fmt: skip
    expect_value_error(
        {
            "typical_probs(logits_d, 0.0)": lambda: by_hand(
                ASSIGNMENT, typical_probs, logits_d, 0.0
            ),
            "typical_probs(logits_d, 1.5)": lambda: by_hand(
                ASSIGNMENT, typical_probs, logits_d, 1.5
            ),
            "typical_probs([[np.inf, 1.0]], 0.5)": lambda: by_hand(
                ASSIGNMENT, typical_probs, [[np.inf, 1.0]], 0.5
            ),
        }
    )
    print("Part D, visible test: passed.")


def check_part_e(kv_attention_step: Callable[..., Any]) -> None:
    """Part E's visible test (kv_attention_step with a sliding window)."""
    __tracebackhide__ = True
    window_e = 2
    q_e = np.array([[1.0, -1.0, 0.5, 2.0], [2 * np.log(3.0), 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0],
                    [2 * np.log(3.0), 0.0, 0.0, 0.0]])  # fmt: skip
    k_e = np.array([[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, -0.2, 0.7, 1.0],
                    [1.0, 0.0, 0.0, 0.0]])  # fmt: skip
    v_e = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 5.0], [4.0, -2.0, 0.0], [2.0, 1.0, -1.0]])
    expected_e = [v_e[0], 0.25 * v_e[0] + 0.75 * v_e[1], 0.5 * (v_e[1] + v_e[2]),
                  0.25 * v_e[2] + 0.75 * v_e[3]]  # fmt: skip
    keys_e, values_e = np.zeros((0, 4)), np.zeros((0, 3))
    for step_e in range(4):
        first_e = max(0, step_e + 1 - window_e)  # the oldest position still in the window
        with inputs_kept("kv_attention_step", keys=keys_e, values=values_e, q_e=q_e, k_e=k_e,
                         v_e=v_e) as before_e:  # fmt: skip
            result_e = by_hand(
                ASSIGNMENT,
                kv_attention_step,
                keys_e,
                values_e,
                q_e[step_e],
                k_e[step_e],
                v_e[step_e],
                window_e,
            )
        if not (isinstance(result_e, tuple) and len(result_e) == 3):
            raise CheckFailed("kv_attention_step should return the tuple (z, new_keys, new_values)")
        z_e, new_keys_e, new_values_e = result_e
        rows_e = step_e + 1 - first_e
        for name_e, got_e, shape_e in (("z", z_e, (3,)), ("new_keys", new_keys_e, (rows_e, 4)),
                                       ("new_values", new_values_e, (rows_e, 3))):  # fmt: skip
            if not (isinstance(got_e, np.ndarray) and got_e.shape == shape_e):
                raise CheckFailed(
                    f"step {step_e + 1} (window {window_e}): {name_e} should be a NumPy array of "
                    f"shape {shape_e}, got {type(got_e).__name__} of shape {np.shape(got_e)}"
                )
        assert_close(f"new_keys after step {step_e + 1}", new_keys_e,
                     before_e["k_e"][first_e : step_e + 1], atol=0,
                     against=f"the keys of positions {first_e + 1} to {step_e + 1}, oldest first")  # fmt: skip
        assert_close(f"new_values after step {step_e + 1}", new_values_e,
                     before_e["v_e"][first_e : step_e + 1], atol=0,
                     against=f"the values of positions {first_e + 1} to {step_e + 1}, oldest first")  # fmt: skip
        assert_close(f"z at step {step_e + 1} ({len(keys_e)} cached, window {window_e})",
                     z_e, expected_e[step_e], atol=1e-12,
                     against="the weighted values worked out by hand")  # fmt: skip
        keys_e, values_e = new_keys_e, new_values_e
    z_one_e, keys_one_e, _ = by_hand(ASSIGNMENT, kv_attention_step, k_e[:1], v_e[:1], q_e[1],
                                     k_e[1], v_e[1], 1)  # fmt: skip
    assert_close("z with window 1 (the position attends to itself only)", z_one_e, v_e[1],
                 atol=1e-12)  # fmt: skip
    assert_close("new_keys with window 1", keys_one_e, k_e[1:2], atol=0,
                 against="the new key alone")  # fmt: skip
    z_big_e, _, _ = by_hand(ASSIGNMENT, kv_attention_step,
        np.array([[500.0, 0.0], [499.0, 0.0]]), np.array([[1.0], [2.0]]), [2.0, 0.0], [498.0, 0.0],
        [3.0], 3,
    )  # fmt: skip
    # scores 1000/√2, 998/√2 and 996/√2: weights proportional to 1, e^(-√2), e^(-2√2)
    weights_big_e = np.exp([0.0, -np.sqrt(2.0), -2 * np.sqrt(2.0)])
    assert_close("z with scores near 700 (exp would overflow)", z_big_e,
                 [weights_big_e @ [1.0, 2.0, 3.0] / weights_big_e.sum()], atol=1e-12)  # fmt: skip
    expect_value_error(
        {
            "kv_attention_step(np.zeros((2, 4)), np.zeros((3, 3)), q_e[0], k_e[0], v_e[0], 4)": lambda: (
                by_hand(ASSIGNMENT, kv_attention_step, np.zeros((2, 4)), np.zeros((3, 3)), q_e[0],
                        k_e[0], v_e[0], 4)
            ),
            "kv_attention_step(np.zeros((2, 4)), np.zeros((2, 3)), q_e[0][:3], k_e[0], v_e[0], 4)": lambda: (
                by_hand(ASSIGNMENT, kv_attention_step, np.zeros((2, 4)), np.zeros((2, 3)),
                        q_e[0][:3], k_e[0], v_e[0], 4)
            ),
            "kv_attention_step(np.zeros((2, 4)), np.zeros((2, 3)), q_e[0], k_e[0], v_e[0], 0) (window 0)": lambda: (
                by_hand(ASSIGNMENT, kv_attention_step, np.zeros((2, 4)), np.zeros((2, 3)), q_e[0],
                        k_e[0], v_e[0], 0)
            ),
            "kv_attention_step(np.zeros((3, 4)), np.zeros((3, 3)), q_e[0], k_e[0], v_e[0], 2) (3 cached > window 2)": lambda: (
                by_hand(ASSIGNMENT, kv_attention_step, np.zeros((3, 4)), np.zeros((3, 3)), q_e[0],
                        k_e[0], v_e[0], 2)
            ),
        }
    )  # fmt: skip
    print("Part E, visible test: passed.")
