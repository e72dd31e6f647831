"""The visible tests of Assignment 8 (temperature, sampling, min-p, typical, a sliding-window KV step).

The expected values were worked out by hand.

Written as every module of visible tests is (the package's docstring, :mod:`course.checks`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from course.checks import CheckFailed, assert_close, inputs_kept
from course.checks.cases import Case, describe, expect_array
from course.checks.rules import by_hand, expect_refused

__all__ = ["check_part_a", "check_part_b", "check_part_c", "check_part_d", "check_part_e"]

ASSIGNMENT = "a8_gpt_decoding"


# -- what the checks share -------------------------------------------------------------------


def _args(*args: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments of one call, for a table of bad inputs."""
    return args, kwargs


def _expect_rejected(function: Callable[..., Any], calls: dict[str, tuple]) -> None:
    """``function`` on each call's arguments (under the part's rule) raises ValueError."""
    __tracebackhide__ = True
    expect_refused(ASSIGNMENT, {said: (function, *call) for said, call in calls.items()})


def _renormalised(pi: np.ndarray, kept: list[list[int]]) -> np.ndarray:
    """pi kept at the listed tokens of each row, renormalised."""
    mass = np.zeros_like(pi)
    for row, tokens in enumerate(kept):
        mass[row, tokens] = pi[row, tokens]
    return mass / mass.sum(axis=1, keepdims=True)


# -- Part A: temperature_probs ---------------------------------------------------------------


def part_a_cases() -> list[Case]:
    """Part A's cases: logits and temperature, and softmax(logits / τ) worked out by hand."""
    logits = np.array(
        [[2.0, 1.0, 0.0, -1.0], [0.5, 0.5, 0.5, 0.5], [1000.0, 1001.0, 999.0, -np.inf]]
    )
    by_tau = {
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
    return [
        *(
            Case(f"three rows (the last near 1,000, with a -inf), τ = {tau:g}", logits=logits,
                 temperature=tau, expected_probs=np.array(probs), atol=1e-10)
            for tau, probs in by_tau.items()
        ),
        Case("one row (|V|,) given as a list of ints, τ = 1", logits=[2, 1, 0, -1], temperature=1,
             expected_probs=np.array(by_tau[1.0][0]), atol=1e-10),
        Case("[[3, 2.9, -5]], τ = 0.001: nearly greedy", logits=[[3.0, 2.9, -5.0]],
             temperature=1e-3, expected_probs=np.array([[1.0, 0.0, 0.0]]), atol=1e-12),
    ]  # fmt: skip


def part_a_bad_inputs() -> dict[str, tuple]:
    """Calls of temperature_probs that must raise ValueError."""
    logits = part_a_cases()[0].logits
    return {
        "temperature_probs(logits, 0.0)": _args(logits, 0.0),
        "temperature_probs(logits, -1.0)": _args(logits, -1.0),
        "temperature_probs([[1.0, np.inf]], 1.0)": _args([[1.0, np.inf]], 1.0),
        "temperature_probs([[-np.inf, -np.inf]], 1.0)": _args([[-np.inf, -np.inf]], 1.0),
    }


def check_part_a(temperature_probs: Callable[..., Any]) -> None:
    """Part A's visible test (temperature_probs)."""
    __tracebackhide__ = True
    for case in part_a_cases():
        with case.named("temperature_probs"):
            with inputs_kept("temperature_probs", logits=case.logits):
                probs = by_hand(ASSIGNMENT, temperature_probs, case.logits, case.temperature)
            expect_array("probs", probs, case.expected_probs.shape, np.float64)
            assert_close(
                "probs", probs, case.expected_probs, atol=case.atol,
                against="softmax(logits / τ) worked out by hand",
            )  # fmt: skip
    _expect_rejected(temperature_probs, part_a_bad_inputs())
    print("Part A, visible test: passed.")


# -- Part B: sample_tokens -------------------------------------------------------------------


def part_b_cases() -> list[Case]:
    """Part B's cases: probs and u, and the token each u draws (token i owns [c_(i-1), c_i) of
    the cumulative sums c) or, for many uniform u, the share of each token."""
    row = [0.25, 0.5, 0.0, 0.25]  # token 0 owns [0, 0.25), 1 [0.25, 0.75), 2 none, 3 [0.75, 1)
    u = np.array([0.0, 0.2499, 0.25, 0.5, 0.7499, 0.75, 0.9999999])
    return [
        Case("u on and just below the boundaries of [0.25, 0.5, 0, 0.25]",
             probs=np.array([row] * len(u)), u=u, expected_tokens=[0, 0, 1, 1, 1, 3, 3]),
        Case("a token of probability 0 is never drawn",
             probs=[[0.0, 0.5, 0.5, 0.0], [0.0, 0.5, 0.5, 0.0]], u=[0.0, 0.9],
             expected_tokens=[1, 2]),
        Case("20,000 uniform u on [0.1, 0.6, 0.3]", probs=np.tile([0.1, 0.6, 0.3], (20_000, 1)),
             u=np.random.default_rng(8).random(20_000), expected_shares=[0.1, 0.6, 0.3]),
    ]  # fmt: skip


def part_b_bad_inputs() -> dict[str, tuple]:
    """Calls of sample_tokens that must raise ValueError."""
    probs, u = part_b_cases()[0].probs, part_b_cases()[0].u
    return {
        "sample_tokens(probs, u[:3]) (one u per row)": _args(probs, u[:3]),
        "sample_tokens(probs[:1], [1.0]) (u must be < 1)": _args(probs[:1], [1.0]),
        "sample_tokens([[0.5, 0.6]], [0.1]) (sums to 1.1)": _args([[0.5, 0.6]], [0.1]),
        "sample_tokens([[1.5, -0.5]], [0.1]) (a negative probability)": _args([[1.5, -0.5]], [0.1]),
    }


def _expect_tokens(tokens: np.ndarray, probs: Any, u: Any, expected: list[int]) -> None:
    """Each row's token is the expected one; the first that is not is named, with its row."""
    __tracebackhide__ = True
    for row, (token, wanted) in enumerate(zip(tokens, expected, strict=True)):
        if token != wanted:
            row_probs = np.asarray(probs[row]).tolist()
            raise CheckFailed(
                f"row {row}: u = {u[row]} gives token {token}, expected {wanted} (probabilities "
                f"{row_probs}, cumulative {np.cumsum(row_probs).tolist()}: token i owns "
                "[c_(i-1), c_i))"
            )


def _expect_shares(tokens: np.ndarray, shares: list[float]) -> None:
    """Each token is drawn its share of the time, within 5 binomial standard deviations."""
    __tracebackhide__ = True
    for token, p in enumerate(shares):
        share, sd = np.mean(tokens == token), np.sqrt(p * (1 - p) / len(tokens))
        if not abs(share - p) <= 5 * sd:
            raise CheckFailed(
                f"token {token} was drawn {share:.4f} of the time with uniform u, expected "
                f"{p} ± {5 * sd:.4f}: off by {share - p:+.4f}"
            )


def check_part_b(sample_tokens: Callable[..., Any]) -> None:
    """Part B's visible test (sample_tokens)."""
    __tracebackhide__ = True
    for case in part_b_cases():
        with case.named("sample_tokens"):
            with inputs_kept("sample_tokens", probs=case.probs, u=case.u):
                tokens = by_hand(ASSIGNMENT, sample_tokens, case.probs, case.u)
            expect_array("the tokens", tokens, np.shape(case.u), np.int64)
            if "expected_shares" in case.inputs:
                _expect_shares(tokens, case.expected_shares)
            else:
                _expect_tokens(tokens, case.probs, case.u, case.expected_tokens)
    _expect_rejected(sample_tokens, part_b_bad_inputs())
    print("Part B, visible test: passed.")


# -- Part C: min_p_probs ---------------------------------------------------------------------


def part_c_cases() -> list[Case]:
    """Part C's cases: logits and p_base, the tokens that min-p keeps and their renormalised
    probabilities."""
    pi = np.array([[0.5, 0.2, 0.2, 0.05, 0.05], [0.1, 0.3, 0.3, 0.25, 0.05]])
    logits = np.log(pi) + 3.0  # softmax(log pi + 3) = pi
    table = [
        (0.3, [[0, 1, 2], [0, 1, 2, 3]],
         "p_base = 0.3: thresholds 0.15 and 0.09 (both tokens of 0.2 kept in row 0)"),
        (0.5, [[0], [1, 2, 3]], "p_base = 0.5: thresholds 0.25 and 0.15"),
        (0.9, [[0], [1, 2]], "p_base = 0.9: thresholds 0.45 and 0.27"),
        (1.0, [[0], [1, 2]], "p_base = 1: the most likely token(s), ties at the top included"),
        (0.05, [[0, 1, 2, 3, 4]] * 2, "p_base = 0.05: thresholds 0.025 and 0.015"),
        (0.0, [[0, 1, 2, 3, 4]] * 2, "p_base = 0: every token"),
    ]  # fmt: skip
    return [
        *(
            Case(label, logits=logits, p_base=p_base, kept=kept,
                 expected_probs=_renormalised(pi, kept))
            for p_base, kept, label in table
        ),
        Case("huge logits [1000, 1000 + ln 0.3, 0], p_base = 0.2",
             logits=[1000.0, 1000.0 + np.log(0.3), 0.0], p_base=0.2, kept=[0, 1],
             expected_probs=np.array([1 / 1.3, 0.3 / 1.3, 0.0])),
    ]  # fmt: skip


def part_c_bad_inputs() -> dict[str, tuple]:
    """Calls of min_p_probs that must raise ValueError."""
    logits = part_c_cases()[0].logits
    return {
        "min_p_probs(logits, -0.1)": _args(logits, -0.1),
        "min_p_probs(logits, 1.5)": _args(logits, 1.5),
        "min_p_probs(logits, '0.3') (a string)": _args(logits, "0.3"),
        "min_p_probs([[-np.inf, -np.inf]], 0.1)": _args([[-np.inf, -np.inf]], 0.1),
    }


def check_part_c(min_p_probs: Callable[..., Any]) -> None:
    """Part C's visible test (min_p_probs)."""
    __tracebackhide__ = True
    for case in part_c_cases():
        with case.named("min_p_probs"):
            with inputs_kept("min_p_probs", logits=case.logits):
                probs = by_hand(ASSIGNMENT, min_p_probs, case.logits, case.p_base)
            expect_array("probs", probs, case.expected_probs.shape)
            assert_close(
                "probs", probs, case.expected_probs, atol=1e-12,
                against=f"the renormalised probabilities of tokens {case.kept}",
            )  # fmt: skip
    _expect_rejected(min_p_probs, part_c_bad_inputs())
    print("Part C, visible test: passed.")


# -- Part D: typical_probs -------------------------------------------------------------------


def part_d_cases() -> list[Case]:
    """Part D's cases: logits and p, the tokens that typical sampling keeps and their
    renormalised probabilities."""
    pi = np.array([[0.4, 0.12, 0.12, 0.12, 0.12, 0.12], [0.5, 0.25, 0.125, 0.0625, 0.0625, 0.0]])
    with np.errstate(divide="ignore"):
        logits = np.log(pi)  # row 1 ends with a token of probability 0 (logit -inf)
    table = [
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
    return [
        Case(label, logits=logits, p=p, kept=kept, expected_probs=_renormalised(pi, kept))
        for p, kept, label in table
    ]


def part_d_bad_inputs() -> dict[str, tuple]:
    """Calls of typical_probs that must raise ValueError."""
    logits = part_d_cases()[0].logits
    return {
        "typical_probs(logits, 0.0)": _args(logits, 0.0),
        "typical_probs(logits, 1.5)": _args(logits, 1.5),
        "typical_probs([[np.inf, 1.0]], 0.5)": _args([[np.inf, 1.0]], 0.5),
    }


def check_part_d(typical_probs: Callable[..., Any]) -> None:
    """Part D's visible test (typical_probs)."""
    __tracebackhide__ = True
    for case in part_d_cases():
        with case.named("typical_probs"):
            with inputs_kept("typical_probs", logits=case.logits):
                probs = by_hand(ASSIGNMENT, typical_probs, case.logits, case.p)
            expect_array("probs", probs, case.expected_probs.shape)
            assert_close(
                "probs", probs, case.expected_probs, atol=1e-12,
                against=f"the renormalised probabilities of tokens {case.kept}",
            )  # fmt: skip
    _expect_rejected(typical_probs, part_d_bad_inputs())
    print("Part D, visible test: passed.")


# -- Part E: kv_attention_step ---------------------------------------------------------------


def part_e_cases() -> list[Case]:
    """Part E's cases: the four steps of a sequence with a window of 2, each given the cache
    that the step before left; a window of 1; scores near 700 (exp would overflow). Expected:
    z, worked out by hand, and the caches rolled, which hold the positions ``kept`` (counted
    from 1), oldest first."""
    q = np.array([[1.0, -1.0, 0.5, 2.0], [2 * np.log(3.0), 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0],
                  [2 * np.log(3.0), 0.0, 0.0, 0.0]])  # fmt: skip
    k = np.array([[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, -0.2, 0.7, 1.0],
                  [1.0, 0.0, 0.0, 0.0]])  # fmt: skip
    v = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 5.0], [4.0, -2.0, 0.0], [2.0, 1.0, -1.0]])
    z = [v[0].copy(), 0.25 * v[0] + 0.75 * v[1], 0.5 * (v[1] + v[2]), 0.25 * v[2] + 0.75 * v[3]]
    cases = []
    for t in range(4):
        start, first = max(0, t - 2), max(0, t - 1)  # the oldest position cached before, after
        cases.append(Case(
            f"step {t + 1} ({t - start} cached, window 2)", keys=k[start:t], values=v[start:t],
            q=q[t], k=k[t], v=v[t], window=2, expected_z=z[t],
            expected_new_keys=k[first : t + 1].copy(), expected_new_values=v[first : t + 1].copy(),
            kept=(first + 1, t + 1),
        ))  # fmt: skip
    weights = np.exp([0.0, -np.sqrt(2.0), -2 * np.sqrt(2.0)])  # scores 1000/√2, 998/√2, 996/√2
    return [
        *cases,
        Case("window 1: the position attends to itself only", keys=k[:1], values=v[:1], q=q[1],
             k=k[1], v=v[1], window=1, expected_z=v[1].copy(), expected_new_keys=k[1:2].copy(),
             expected_new_values=v[1:2].copy(), kept=(2, 2)),
        Case("scores near 700 (exp would overflow), window 3",
             keys=np.array([[500.0, 0.0], [499.0, 0.0]]), values=np.array([[1.0], [2.0]]),
             q=[2.0, 0.0], k=[498.0, 0.0], v=[3.0], window=3,
             expected_z=np.array([weights @ [1.0, 2.0, 3.0] / weights.sum()]),
             expected_new_keys=np.array([[500.0, 0.0], [499.0, 0.0], [498.0, 0.0]]),
             expected_new_values=np.array([[1.0], [2.0], [3.0]]), kept=(1, 3)),
    ]  # fmt: skip


def part_e_bad_inputs() -> dict[str, tuple]:
    """Calls of kv_attention_step that must raise ValueError."""
    first = part_e_cases()[0]
    q, k, v = first.q, first.k, first.v
    return {
        "kv_attention_step(np.zeros((2, 4)), np.zeros((3, 3)), q, k, v, 4) (2 keys, 3 values)":
            _args(np.zeros((2, 4)), np.zeros((3, 3)), q, k, v, 4),
        "kv_attention_step(np.zeros((2, 4)), np.zeros((2, 3)), q[:3], k, v, 4)":
            _args(np.zeros((2, 4)), np.zeros((2, 3)), q[:3], k, v, 4),
        "kv_attention_step(np.zeros((2, 4)), np.zeros((2, 3)), q, k, v, 0) (window 0)":
            _args(np.zeros((2, 4)), np.zeros((2, 3)), q, k, v, 0),
        "kv_attention_step(np.zeros((3, 4)), np.zeros((3, 3)), q, k, v, 2) (3 cached > window 2)":
            _args(np.zeros((3, 4)), np.zeros((3, 3)), q, k, v, 2),
    }  # fmt: skip


def check_part_e(kv_attention_step: Callable[..., Any]) -> None:
    """Part E's visible test (kv_attention_step with a sliding window)."""
    __tracebackhide__ = True
    for case in part_e_cases():
        with case.named("kv_attention_step"):
            with inputs_kept("kv_attention_step", keys=case.keys, values=case.values, q=case.q,
                             k=case.k, v=case.v):  # fmt: skip
                result = by_hand(ASSIGNMENT, kv_attention_step, case.keys, case.values, case.q,
                                 case.k, case.v, case.window)  # fmt: skip
            if not (isinstance(result, tuple) and len(result) == 3):
                raise CheckFailed(
                    "kv_attention_step should return the tuple (z, new_keys, new_values), got "
                    f"{describe(result)}"
                )
            z, new_keys, new_values = result
            expect_array("z", z, case.expected_z.shape)
            expect_array("new_keys", new_keys, case.expected_new_keys.shape)
            expect_array("new_values", new_values, case.expected_new_values.shape)
            first, last = case.kept
            kept = (
                f"positions {first} to {last}, oldest first"
                if first < last
                else f"position {last} alone"
            )
            for name, got in (("new_keys", new_keys), ("new_values", new_values)):
                assert_close(name, got, case.inputs[f"expected_{name}"], atol=0,
                             against=f"the {name[4:]} of {kept}")  # fmt: skip
            assert_close("z", z, case.expected_z, atol=1e-12,
                         against="the weighted values worked out by hand")  # fmt: skip
    _expect_rejected(kv_attention_step, part_e_bad_inputs())
    print("Part E, visible test: passed.")
