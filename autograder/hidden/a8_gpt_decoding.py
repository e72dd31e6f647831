"""Hidden checks of Assignment 8: temperature, inverse-CDF draws, min-p, typical, a sliding KV cache.

The hidden test cells of ``a8_gpt_decoding`` call, at autograde time::

    check_temperature_probs(temperature_probs)
    check_sample_tokens(sample_tokens)
    check_min_p_probs(min_p_probs)
    check_typical_probs(typical_probs)
    check_kv_attention_step(kv_attention_step)

Each check works out its expected values here, before the student's function runs, with
references written from the definitions in another way than the reference solution:
softmax one row at a time with ``math.exp`` and ``math.fsum``; the token of ``u`` by bisection
over the running sums of a Python list; min-p by every token's ratio to the most likely,
e^(z_i - max z) with ``math.exp``, against p_base; typical sampling by every token's
distance |-ln pi_i - H| from the entropy (``math.log`` and ``math.fsum``) and, for every
token, the probability of the tokens strictly closer, summed over distinct distances; the
sliding-window KV step against causal attention with a band mask over the whole prefix,
recomputed at every step from the stacked queries, keys and values. The cases include exact
ties at the top, below it and at the crossing of p, a most likely token that typical
sampling removes, exact boundaries of the cumulative distribution, windows of 1 and longer
than the sequence, full caches, and t = 0; the min-p cases keep p_base at least 1e-9
(relative) from every ratio below 1, and the typical cases keep p 1e-9 from every token's
mass ahead and the distances of tokens of different probability 1e-9 apart (the tests check
both), so rounding cannot decide a case. Then each check makes sure that bad input raises
ValueError.

While a student's function runs, the routines that would do its work (``course.decoding``'s
filters and sampler and ``course.models.gpt`` by name, every public callable of the
``course`` package except ``course.checks``, ``transformers``' logits warpers, torch's
softmax wherever an ordinary import reaches it (``torch``, ``torch.Tensor``, ``torch.special``,
``torch.nn.functional`` with softmin and gumbel_softmax, ``torch.nn``'s modules), top-k,
sorting, multinomial draws and attention, and ``scipy.special``'s softmax and logsumexp) are
replaced by traps that raise :class:`ShortcutUsed`.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

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
    "check_temperature_probs",
    "check_sample_tokens",
    "check_min_p_probs",
    "check_typical_probs",
    "check_kv_attention_step",
]

SOFTMAX_BY_HAND = "compute the probabilities by hand with NumPy"
DRAW_BY_HAND = "map u to tokens by hand with NumPy"
MIN_P_BY_HAND = "choose the tokens above the threshold by hand with NumPy"
TYPICAL_BY_HAND = "choose the typical tokens by hand with NumPy"
CACHE_BY_HAND = "attend over the cache by hand with NumPy"
INF = float("inf")

# --------------------------------------------------------------------------------------------
# Traps
# --------------------------------------------------------------------------------------------

TRAPS = shortcuts.Traps(RULES["a8_gpt_decoding"].library)
shortcut_targets, no_shortcuts, _call_by_hand = TRAPS.methods()


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


_expect_value_error = shortcuts.value_error_checker(_call_by_hand)


_call_valid = shortcuts.valid_caller(_call_by_hand)


def _inputs(**values: Any) -> dict[str, Any]:
    """The arguments that are arrays or lists: the ones a student's function must not change."""
    return {name: value for name, value in values.items() if isinstance(value, (np.ndarray, list))}


def reference_softmax(logits: Any, temperature: float = 1.0) -> np.ndarray:
    """softmax(z / τ) of every row along the last axis, one row at a time with math.exp and an
    exactly rounded sum (math.fsum); a logit of -inf gets probability 0."""
    z = np.array(logits, dtype=np.float64)
    flat = z.reshape(-1, z.shape[-1])
    out = np.zeros_like(flat)
    for row, scores in enumerate(flat):
        top = max(scores)
        terms = [0.0 if s == -INF else math.exp((s - top) / temperature) for s in scores]
        total = math.fsum(terms)
        out[row] = [term / total for term in terms]
    return out.reshape(z.shape)


def _rows(array: np.ndarray) -> np.ndarray:
    return array.reshape(-1, array.shape[-1])


# --------------------------------------------------------------------------------------------
# Part A: temperature_probs
# --------------------------------------------------------------------------------------------


def temperature_cases() -> list[Case]:
    """The hidden cases of temperature_probs: logits and temperature."""
    rng = np.random.default_rng(8101)
    with_holes = rng.normal(0.0, 2.0, size=(6, 9))
    with_holes[rng.random((6, 9)) < 0.4] = -INF
    with_holes[:, 4] = rng.normal(size=6)  # every row keeps a finite logit
    return [
        Case("one row (|V|,) = (7,), τ = 1", logits=rng.normal(0.0, 2.0, size=7), temperature=1.0),
        Case(
            "a batch (32, 50), τ = 0.7", logits=rng.normal(0.0, 3.0, size=(32, 50)), temperature=0.7
        ),
        Case("three axes (2, 3, 11), τ = 1.3", logits=rng.normal(size=(2, 3, 11)), temperature=1.3),
        Case("a single token, (4, 1), τ = 0.5", logits=rng.normal(size=(4, 1)), temperature=0.5),
        Case(
            "|V| = 5,000, a batch of 3, τ = 1",
            logits=rng.normal(0.0, 4.0, size=(3, 5000)),
            temperature=1.0,
        ),
        Case(
            "logits near +10,000, τ = 1",
            logits=10_000.0 + rng.normal(0.0, 3.0, size=(5, 20)),
            temperature=1.0,
        ),
        Case(
            "logits near -10,000, τ = 2",
            logits=-10_000.0 + rng.normal(0.0, 3.0, size=(5, 20)),
            temperature=2.0,
        ),
        Case(
            "τ = 0.001 (nearly greedy)",
            logits=np.arange(12.0).reshape(2, 6) * 0.01,
            temperature=0.001,
        ),
        Case(
            "τ = 1,000 (nearly uniform)",
            logits=rng.normal(0.0, 5.0, size=(4, 30)),
            temperature=1000.0,
        ),
        Case("rows with -inf logits (removed tokens)", logits=with_holes, temperature=0.9),
        Case(
            "float32 logits",
            logits=rng.normal(0.0, 2.0, size=(6, 13)).astype(np.float32),
            temperature=1.0,
        ),
        Case(
            "integer logits, τ = 2 (an int)", logits=rng.integers(-5, 6, size=(4, 8)), temperature=2
        ),
        Case("a list of lists", logits=rng.normal(size=(3, 5)).round(3).tolist(), temperature=1.5),
        Case(
            "τ given as a NumPy float", logits=rng.normal(size=(2, 6)), temperature=np.float64(0.8)
        ),
        Case("non-contiguous logits", logits=_strided(rng.normal(size=(4, 7))), temperature=1.0),
    ]


def check_temperature_probs(temperature_probs: Callable[..., Any]) -> None:
    """Hidden test of Part A: softmax(z / τ) row by row, against math.exp and math.fsum."""
    cases = temperature_cases()
    for case in cases:
        logits, tau = case.logits, case.temperature
        expected = reference_softmax(logits, float(tau))
        inputs = _inputs(logits=logits)
        before = _snapshot(inputs)
        with case.named("temperature_probs"):
            got = _call_valid(temperature_probs, SOFTMAX_BY_HAND, logits, tau)
            _expect_unchanged("temperature_probs", inputs, before)
            _expect_array("the probabilities", got, expected.shape, np.float64)
            assert_close(
                f"temperature_probs(logits, {float(tau):g})", got, expected, atol=1e-12,
                rtol=1e-8, against="softmax(z / τ) worked out row by row",
            )  # fmt: skip
            if isinstance(logits, np.ndarray) and np.shares_memory(got, logits):
                raise AssertionError(
                    "the probabilities are a view of the logits: return a new array"
                )

    good = [[1.0, 2.0, 3.0], [0.0, -1.0, 4.0]]
    bad_calls = [
        ("τ = 0", good, 0.0),
        ("τ = -0.5", good, -0.5),
        ("τ = inf", good, INF),
        ("τ = nan", good, float("nan")),
        ("τ = True", good, True),
        ("τ = '1.0' (a string)", good, "1.0"),
        ("a NaN logit", [[1.0, float("nan"), 0.0]], 1.0),
        ("a +inf logit", [[1.0, INF, 0.0]], 1.0),
        ("a row of -inf only (the other row is fine)", [[0.0, 1.0], [-INF, -INF]], 1.0),
        ("a single number as logits (no axis)", np.array(3.0), 1.0),
        ("an empty last axis, shape (2, 0)", np.zeros((2, 0)), 1.0),
    ]
    for description, *args in bad_calls:
        _expect_value_error(
            temperature_probs, SOFTMAX_BY_HAND, f"temperature_probs with {description}", *args
        )
    print(f"check_temperature_probs: all {len(cases) + len(bad_calls)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part B: sample_tokens
# --------------------------------------------------------------------------------------------

BELOW_ONE = float(np.nextafter(1.0, 0.0))  # the largest double below 1


def inverse_cdf(probs: Any, u: Any) -> np.ndarray:
    """Row b's token: the first i whose running sum exceeds u_b times the row's total, found by
    bisection over a Python list of running sums."""
    table = np.array(probs, dtype=np.float64)
    tokens = []
    for row, draw in zip(table.tolist(), np.asarray(u, dtype=np.float64).tolist(), strict=True):
        running = list(itertools.accumulate(row))
        tokens.append(bisect.bisect_right(running, draw * running[-1]))
    return np.array(tokens, dtype=np.int64)


def sample_cases() -> list[Case]:
    """The hidden cases of sample_tokens: probs and u."""
    rng = np.random.default_rng(8201)
    dyadic = np.array([0.125, 0.375, 0.25, 0.0, 0.25])  # boundaries 0.125, 0.5, 0.75
    edges = [0.0, 0.125, 0.5, 0.75]
    just_below = [float(np.nextafter(e, 0.0)) for e in edges[1:]] + [BELOW_ONE]
    exact_u = np.array(edges + just_below + [0.3, 0.6, 0.9])
    holes = np.array([0.0, 0.0, 0.3, 0.0, 0.2, 0.5, 0.0, 0.0])  # zeros first, inside, last
    holes_u = np.array([0.0, 1e-12, 0.3, 0.29999, 0.5, 0.49999, BELOW_ONE, 0.99])
    off = rng.dirichlet(np.ones(6), size=4) * np.array([[1 + 5e-7], [1 - 5e-7], [1 + 9e-8],
                                                         [1 - 9e-8]])  # fmt: skip
    big = rng.dirichlet(np.full(20_000, 0.1), size=2)
    return [
        Case("random distributions (400, 20), uniform u",
                       probs=rng.dirichlet(np.ones(20), size=400), u=rng.random(400)),
        Case("u on exact boundaries (probabilities [1/8, 3/8, 1/4, 0, 1/4])",
                       probs=np.tile(dyadic, (len(exact_u), 1)), u=exact_u),
        Case("zero probabilities at the start, inside and at the end of a row",
                       probs=np.tile(holes, (len(holes_u), 1)), u=holes_u),
        Case("rows summing to 1 ± 5e-7, u = 0 and u = the largest double below 1",
                       probs=np.repeat(off, 2, axis=0), u=np.tile([0.0, BELOW_ONE], 4)),
        Case("a single token (|V| = 1)", probs=np.ones((3, 1)),
                       u=np.array([0.0, 0.5, BELOW_ONE])),
        Case("|V| = 20,000 (two rows)", probs=big, u=rng.random(2)),
        Case("float32 probabilities",
                       probs=rng.dirichlet(np.ones(7), size=50).astype(np.float32),
                       u=rng.random(50)),
        Case("lists of plain numbers", probs=[[0.5, 0.25, 0.25], [0.1, 0.0, 0.9]],
                       u=[0.6, 0.1]),
        Case("peaked rows (one token of 0.999999)",
                       probs=np.tile([0.999999, 0.0000005, 0.0000005], (4, 1)),
                       u=np.array([0.2, 0.9999991, 0.99999951, BELOW_ONE])),
    ]  # fmt: skip


def check_sample_tokens(sample_tokens: Callable[..., Any]) -> None:
    """Hidden test of Part B: the inverse cumulative distribution, row by row."""
    cases = sample_cases()
    for case in cases:
        probs, u = case.probs, case.u
        expected = inverse_cdf(probs, u)
        inputs = _inputs(probs=probs, u=u)
        before = _snapshot(inputs)
        with case.named("sample_tokens"):
            got = _call_valid(sample_tokens, DRAW_BY_HAND, probs, u)
            _expect_unchanged("sample_tokens", inputs, before)
            if not isinstance(got, np.ndarray) or got.shape != expected.shape:
                raise AssertionError(
                    f"the tokens should be a NumPy array of shape {expected.shape}, got "
                    f"{_describe(got)}"
                )
            if got.dtype != np.int64:
                raise AssertionError(f"the tokens should be int64, got dtype {got.dtype}")
            wrong = np.flatnonzero(got != expected)
            if wrong.size:
                b = int(wrong[0])
                row = np.asarray(probs, dtype=np.float64)[b]
                raise AssertionError(
                    f"{wrong.size} of {len(expected)} tokens differ; row {b}: u = {float(np.asarray(u)[b])!r} "
                    f"gives token {got[b]}, expected {expected[b]} (probabilities "
                    f"{np.array2string(row[:8], precision=6)}{' ...' if len(row) > 8 else ''}; "
                    "token i owns [c_(i-1), c_i) of the cumulative sums scaled to end at 1)"
                )

    good = np.array([[0.5, 0.5], [0.2, 0.8]])
    bad_calls = [
        ("probs of one row (|V|,) = (2,)", good[0], [0.5]),
        ("probs of three axes", good[None], [0.5, 0.5]),
        ("no column, shape (2, 0)", np.zeros((2, 0)), [0.5, 0.5]),
        ("three u for two rows", good, [0.1, 0.2, 0.3]),
        ("u of shape (2, 1)", good, [[0.1], [0.2]]),
        ("u = 1", good, [0.5, 1.0]),
        ("u = -0.1", good, [-0.1, 0.5]),
        ("u = nan", good, [float("nan"), 0.5]),
        ("a negative probability", [[1.2, -0.2], [0.2, 0.8]], [0.5, 0.5]),
        ("a NaN probability", [[float("nan"), 1.0], [0.2, 0.8]], [0.5, 0.5]),
        ("an infinite probability", [[INF, 0.0], [0.2, 0.8]], [0.5, 0.5]),
        ("a row summing to 1.01", [[0.51, 0.5], [0.2, 0.8]], [0.5, 0.5]),
        ("a row summing to 0.999", [[0.5, 0.5], [0.2, 0.799]], [0.5, 0.5]),
    ]
    for description, *args in bad_calls:
        _expect_value_error(sample_tokens, DRAW_BY_HAND, f"sample_tokens with {description}", *args)
    print(f"check_sample_tokens: all {len(cases) + len(bad_calls)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part C: min_p_probs
# --------------------------------------------------------------------------------------------


def renormalised(probs: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """probs restricted to keep and scaled so that every row sums to 1 (fsum per row)."""
    out = np.where(keep, probs, 0.0)
    flat = _rows(out)
    for row in range(flat.shape[0]):
        flat[row] = flat[row] / math.fsum(flat[row])
    return out


def _tied_rows(rng: np.random.Generator, rows: int, width: int, levels: int) -> np.ndarray:
    """Logits from a few levels only: many exact ties everywhere, at the k-th value too."""
    return rng.integers(0, levels, size=(rows, width)).astype(np.float64) * 0.7


def ratios_to_top(logits: Any) -> np.ndarray:
    """Every token's probability over its row's largest, e^(z_i - max z) by math.exp token by
    token (0 for a logit of -inf)."""
    z = np.array(logits, dtype=np.float64)
    out = np.zeros_like(z)
    flat = _rows(out)
    for row, scores in enumerate(_rows(z)):
        top = max(scores)
        flat[row] = [0.0 if s == -INF else math.exp(s - top) for s in scores]
    return out


def kept_by_ratio(logits: Any, p_base: float) -> np.ndarray:
    """Token i is kept when pi_i >= p_base * max_j pi_j, i.e. e^(z_i - max z) >= p_base."""
    return ratios_to_top(logits) >= p_base


def min_p_margin(logits: Any, p_base: float) -> float:
    """How far p_base lies, relative to it, from every ratio where rounding could matter (the
    tests keep it above 1e-9). Tokens tied with the top have a ratio of exactly 1 in any
    order of operations, and a ratio of 0 holds no probability."""
    ratios = ratios_to_top(logits)
    near = ratios[(ratios > 0) & (ratios < 1)]
    if p_base == 0 or near.size == 0:
        return INF
    return float(np.min(np.abs(near - p_base)) / p_base)


def min_p_cases() -> list[Case]:
    """The hidden cases of min_p_probs: logits and p_base."""
    rng = np.random.default_rng(8301)
    holes = rng.normal(size=(4, 10))
    holes[:, 3:] = -INF  # 3 finite logits per row
    top_tie = rng.normal(size=(5, 8))
    top_tie[:, [1, 6]] = top_tie.max(axis=1, keepdims=True) + 1.0  # two tokens share the top
    peaked = rng.normal(size=(4, 30))
    peaked[:, 0] = 9.0  # one token far above the others
    return [
        Case(
            "a batch (16, 30), p_base = 0.1", logits=rng.normal(0.0, 2.0, size=(16, 30)), p_base=0.1
        ),
        Case(
            "|V| = 5,000, 3 rows, p_base = 0.05",
            logits=rng.normal(0.0, 3.0, size=(3, 5000)),
            p_base=0.05,
        ),
        Case("three axes (2, 4, 9), p_base = 0.3", logits=rng.normal(size=(2, 4, 9)), p_base=0.3),
        Case("one row (|V|,) = (12,), p_base = 0.2", logits=rng.normal(size=12), p_base=0.2),
        Case("exact ties (40, 20), p_base = 0.45", logits=_tied_rows(rng, 40, 20, 5), p_base=0.45),
        Case("exact ties (40, 20), p_base = 0.2", logits=_tied_rows(rng, 40, 20, 6), p_base=0.2),
        Case("two tokens tied at the top, p_base = 1", logits=top_tie, p_base=1.0),
        Case("p_base = 1 (greedy) on random logits", logits=rng.normal(size=(10, 15)), p_base=1.0),
        Case("p_base = 0: every token", logits=rng.normal(0.0, 3.0, size=(6, 15)), p_base=0.0),
        Case(
            "p_base = 1e-6 on widely spread logits",
            logits=rng.normal(0.0, 6.0, size=(6, 40)),
            p_base=1e-6,
        ),
        Case("peaked rows (one token 9 above the rest), p_base = 0.01", logits=peaked, p_base=0.01),
        Case("flat rows, p_base = 0.8", logits=rng.normal(0.0, 0.1, size=(5, 50)), p_base=0.8),
        Case(
            "p_base given as a NumPy float", logits=rng.normal(size=(5, 9)), p_base=np.float64(0.35)
        ),
        Case("p_base given as an integer 1", logits=rng.normal(size=(5, 9)), p_base=1),
        Case("-inf logits: 3 finite per row, p_base = 0.25", logits=holes, p_base=0.25),
        Case("-inf logits: 3 finite per row, p_base = 0", logits=holes, p_base=0.0),
        Case(
            "logits near 10,000, p_base = 0.15",
            logits=10_000.0 + rng.normal(size=(4, 12)),
            p_base=0.15,
        ),
        Case(
            "float32 logits, p_base = 0.3",
            logits=rng.normal(size=(8, 16)).astype(np.float32),
            p_base=0.3,
        ),
        Case(
            "integer logits (ties), p_base = 0.1",
            logits=rng.integers(-3, 4, size=(8, 12)),
            p_base=0.1,
        ),
        Case("a single token (|V| = 1), p_base = 0.5", logits=rng.normal(size=(3, 1)), p_base=0.5),
    ]


def _kept_message(name: str, got: np.ndarray, expected: np.ndarray, z: Any) -> str | None:
    """Where the student's kept tokens (probability > 0) differ from the expected ones."""
    got_rows, expected_rows = _rows(got), _rows(expected)
    scores = _rows(np.array(z, dtype=np.float64))
    for row in range(expected_rows.shape[0]):
        mine = np.flatnonzero(got_rows[row] > 0).tolist()
        wanted = np.flatnonzero(expected_rows[row] > 0).tolist()
        if mine != wanted:
            shown = np.array2string(scores[row][:12], precision=3)
            return (
                f"{name}: row {row} keeps tokens {mine[:12]}{' ...' if len(mine) > 12 else ''} "
                f"but the rule keeps {wanted[:12]}{' ...' if len(wanted) > 12 else ''} "
                f"(logits {shown}{' ...' if scores.shape[1] > 12 else ''})"
            )
    return None


def _judge_filtered(name: str, got: Any, expected: np.ndarray, logits: Any) -> None:
    _expect_array("the probabilities", got, expected.shape, np.float64)
    if not np.all(np.isfinite(got)):
        raise AssertionError(
            f"{name} contains {got[~np.isfinite(got)][0]}: return probabilities (0 for a removed "
            "token), not filtered logits"
        )
    message = _kept_message(name, got, expected, logits)
    if message:
        raise AssertionError(message)
    assert_close(name, got, expected, atol=1e-12, rtol=1e-8,
                 against="the kept tokens' probabilities renormalised")  # fmt: skip
    if isinstance(logits, np.ndarray) and np.shares_memory(got, logits):
        raise AssertionError("the probabilities are a view of the logits: return a new array")


def check_min_p_probs(min_p_probs: Callable[..., Any]) -> None:
    """Hidden test of Part C: the tokens kept by their ratio to the most likely, renormalised."""
    cases = min_p_cases()
    for case in cases:
        logits, p_base = case.logits, case.p_base
        expected = renormalised(reference_softmax(logits), kept_by_ratio(logits, float(p_base)))
        inputs = _inputs(logits=logits)
        before = _snapshot(inputs)
        with case.named("min_p_probs"):
            got = _call_valid(min_p_probs, MIN_P_BY_HAND, logits, p_base)
            _expect_unchanged("min_p_probs", inputs, before)
            _judge_filtered(f"min_p_probs(logits, {float(p_base):g})", got, expected, logits)

    good = [[1.0, 2.0, 3.0], [0.0, -1.0, 4.0]]
    bad_calls = [
        ("p_base = -0.1", good, -0.1),
        ("p_base = 1.5", good, 1.5),
        ("p_base = nan", good, float("nan")),
        ("p_base = inf", good, INF),
        ("p_base = True", good, True),
        ("p_base = '0.1' (a string)", good, "0.1"),
        ("p_base = None", good, None),
        ("a NaN logit", [[1.0, float("nan"), 0.0]], 0.1),
        ("a +inf logit", [[1.0, INF, 0.0]], 0.1),
        ("a row of -inf only", [[0.0, 1.0], [-INF, -INF]], 0.1),
    ]
    for description, *args in bad_calls:
        _expect_value_error(min_p_probs, MIN_P_BY_HAND, f"min_p_probs with {description}", *args)
    print(f"check_min_p_probs: all {len(cases) + len(bad_calls)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part D: typical_probs
# --------------------------------------------------------------------------------------------


def typicality(logits: Any) -> np.ndarray:
    """Every token's distance from typical, |-ln pi_i - H(pi)|: the entropy of each row by
    math.log and math.fsum (a token of probability 0 adds 0), inf for a probability of 0."""
    probs = reference_softmax(logits)
    out = np.zeros_like(probs)
    flat = _rows(out)
    for row, values in enumerate(_rows(probs).tolist()):
        entropy = -math.fsum(x * math.log(x) for x in values if x > 0)
        flat[row] = [abs(-math.log(x) - entropy) if x > 0 else INF for x in values]
    return out


def mass_more_typical(logits: Any) -> np.ndarray:
    """For every token, the total probability of the tokens of its row strictly more typical
    (smaller distance): each row's distinct distances from the smallest, with exact (fsum)
    running totals."""
    probs = reference_softmax(logits)
    distance = typicality(logits)
    ahead_all = np.zeros_like(probs)
    flat = _rows(ahead_all)
    for row, (values, gaps) in enumerate(zip(_rows(probs), _rows(distance), strict=True)):
        ahead, sums = 0.0, {}
        for level in sorted(set(gaps.tolist())):
            sums[level] = ahead
            ahead = math.fsum([ahead, math.fsum(values[gaps == level].tolist())])
        flat[row] = [sums[gap] for gap in gaps.tolist()]
    return ahead_all


def kept_by_typicality(logits: Any, p: float) -> np.ndarray:
    """Token i is kept when the tokens strictly more typical than it hold less than p; p = 1
    keeps every token."""
    if p == 1:
        return np.ones(np.shape(logits), dtype=bool)
    return mass_more_typical(logits) < p


def typical_margin(logits: Any, p: float) -> float:
    """Where rounding could decide a case (the tests keep this above 1e-9): the distance of p
    from every token's mass ahead, and the gap between the distances of two tokens of
    different probability. (Tokens of equal probability have equal distances in any order of
    operations, and the most typical tokens have exactly 0 ahead.)"""
    if p == 1:
        return INF
    probs = _rows(reference_softmax(logits))
    distance = _rows(typicality(logits))
    ahead = _rows(mass_more_typical(logits))
    margin = INF
    for values, gaps, before in zip(probs, distance, ahead, strict=True):
        summed = before[before > 0]
        if summed.size:
            margin = min(margin, float(np.min(np.abs(summed - p))))
        finite = np.isfinite(gaps)
        order = np.argsort(gaps[finite])
        sorted_gaps, sorted_probs = gaps[finite][order], values[finite][order]
        differ = sorted_probs[1:] != sorted_probs[:-1]
        if differ.any():
            margin = min(margin, float(np.min(np.diff(sorted_gaps)[differ])))
    return margin


def _log_rows(rows: list[list[float]]) -> np.ndarray:
    """Logits whose probabilities are the given rows (each summing to 1)."""
    with np.errstate(divide="ignore"):
        return np.log(np.array(rows, dtype=np.float64))


def typical_cases() -> list[Case]:
    """The hidden cases of typical_probs: logits and p."""
    rng = np.random.default_rng(8401)
    crossing_ties = _log_rows([
        [0.4, 0.15, 0.15, 0.15, 0.1, 0.05],  # the three of 0.15 are the most typical
        [0.05, 0.15, 0.4, 0.15, 0.1, 0.15],  # the same values, shuffled
        [0.3, 0.3, 0.1, 0.1, 0.1, 0.1],  # p = 0.25 and 0.5 cross inside a tied group
        [0.2, 0.2, 0.2, 0.2, 0.2, 0.0],  # five tokens tied, one impossible
    ])  # fmt: skip
    top_dropped = rng.normal(0.0, 0.2, size=(6, 12))
    top_dropped[:, 3] += 2.0  # one token far more likely than the others: far below H
    peaked = rng.normal(size=(4, 30))
    peaked[:, 0] = 12.0  # one token of probability about 0.9999
    holes = rng.normal(size=(4, 12))
    holes[:, 5:] = -INF
    return [
        Case("a batch (20, 40), p = 0.9", logits=rng.normal(0.0, 2.0, size=(20, 40)), p=0.9),
        Case("|V| = 5,000, 3 rows, p = 0.95", logits=rng.normal(0.0, 2.0, size=(3, 5000)), p=0.95),
        Case("three axes (2, 3, 12), p = 0.5", logits=rng.normal(size=(2, 3, 12)), p=0.5),
        Case("one row (|V|,) = (25,), p = 0.3", logits=rng.normal(0.0, 1.5, size=25), p=0.3),
        Case(
            "the most likely token less typical than the rest, p = 0.4", logits=top_dropped, p=0.4
        ),
        Case("ties at the crossing of p = 0.25", logits=crossing_ties, p=0.25),
        Case("ties at the crossing of p = 0.5", logits=crossing_ties, p=0.5),
        Case("many exact ties (30, 16), p = 0.37", logits=_tied_rows(rng, 30, 16, 4), p=0.37),
        Case("p = 1e-12: the most typical token(s) only", logits=rng.normal(size=(6, 20)), p=1e-12),
        Case("p = 1: every token", logits=rng.normal(size=(6, 20)), p=1.0),
        Case("p = 0.999 on flat rows", logits=rng.normal(0.0, 0.1, size=(3, 50)), p=0.999),
        Case("peaked rows (one token near 0.9999), p = 0.9", logits=peaked, p=0.9),
        Case("-inf logits (5 finite per row), p = 0.8", logits=holes, p=0.8),
        Case("-inf logits, p = 1", logits=holes, p=1.0),
        Case("logits near 10,000, p = 0.7", logits=10_000.0 + rng.normal(size=(4, 12)), p=0.7),
        Case("float32 logits, p = 0.8", logits=rng.normal(size=(8, 16)).astype(np.float32), p=0.8),
        Case("integer logits (ties), p = 0.55", logits=rng.integers(-3, 4, size=(8, 12)), p=0.55),
        Case("p given as a NumPy float", logits=rng.normal(size=(5, 9)), p=np.float64(0.66)),
        Case("a single token (|V| = 1), p = 0.5", logits=rng.normal(size=(3, 1)), p=0.5),
    ]


def check_typical_probs(typical_probs: Callable[..., Any]) -> None:
    """Hidden test of Part D: the tokens kept by the mass strictly more typical, renormalised."""
    cases = typical_cases()
    for case in cases:
        logits, p = case.logits, case.p
        expected = renormalised(reference_softmax(logits), kept_by_typicality(logits, float(p)))
        inputs = _inputs(logits=logits)
        before = _snapshot(inputs)
        with case.named("typical_probs"):
            got = _call_valid(typical_probs, TYPICAL_BY_HAND, logits, p)
            _expect_unchanged("typical_probs", inputs, before)
            _judge_filtered(f"typical_probs(logits, {float(p):g})", got, expected, logits)

    good = [[1.0, 2.0, 3.0], [0.0, -1.0, 4.0]]
    bad_calls = [
        ("p = 0", good, 0.0),
        ("p = -0.3", good, -0.3),
        ("p = 1.5", good, 1.5),
        ("p = nan", good, float("nan")),
        ("p = True", good, True),
        ("p = '0.9' (a string)", good, "0.9"),
        ("p = None", good, None),
        ("a NaN logit", [[1.0, float("nan"), 0.0]], 0.9),
        ("a +inf logit", [[1.0, INF, 0.0]], 0.9),
        ("a row of -inf only", [[0.0, 1.0], [-INF, -INF]], 0.9),
    ]
    for description, *args in bad_calls:
        _expect_value_error(
            typical_probs, TYPICAL_BY_HAND, f"typical_probs with {description}", *args
        )
    print(f"check_typical_probs: all {len(cases) + len(bad_calls)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part E: kv_attention_step
# --------------------------------------------------------------------------------------------


def banded_attention_rows(
    queries: np.ndarray, keys: np.ndarray, values: np.ndarray, window: int
) -> np.ndarray:
    """Causal attention with a band mask over a whole prefix, every row: row i attends to the
    positions j with i - window < j <= i.

    queries, keys (n, d_k), values (n, d_v) -> (n, d_v); each row's weights by math.exp and
    math.fsum after subtracting the row's largest allowed score.
    """
    n, d_k = keys.shape
    scores = queries @ keys.T / math.sqrt(d_k)  # (n, n)
    out = np.zeros((n, values.shape[1]))
    for i in range(n):
        first = max(0, i - window + 1)
        allowed = scores[i, first : i + 1]  # the band: the last `window` positions up to i
        top = float(np.max(allowed))
        weights = [math.exp(float(s) - top) for s in allowed]
        total = math.fsum(weights)
        out[i] = sum(w / total * values[first + j] for j, w in enumerate(weights))
    return out


def kv_sequences() -> list[Case]:
    """The hidden sequences of kv_attention_step: queries, keys, values, prompt (its length),
    kind (None, a dtype or list: how q, k, v and the caches are given) and window.

    queries, keys (n, d_k) and values (n, d_v) are whole sequences; the first ``prompt``
    positions (no more than the window) are given as a ready cache, the others are fed one
    step at a time.
    """
    rng = np.random.default_rng(8501)

    def projected(n: int, d_model: int, d_k: int, d_v: int) -> dict[str, np.ndarray]:
        """queries, keys and values: projections of random inputs."""
        x = rng.normal(size=(n, d_model))  # inputs, then W^Q, W^K (d_k, d_model), W^V
        w_q, w_k = rng.normal(size=(2, d_k, d_model)) / math.sqrt(d_model)
        w_v = rng.normal(size=(d_v, d_model)) / math.sqrt(d_model)
        return {"queries": x @ w_q.T, "keys": x @ w_k.T, "values": x @ w_v.T}

    huge_q = rng.normal(size=(6, 4)) * 100.0
    huge_k = rng.normal(size=(6, 4)) * 100.0  # scores of a few thousand
    far = {
        "queries": np.array([[1.0, 0.0, 0.0]]),
        "keys": np.array([[-1.0, 0.0, 0.0]]),
        "values": np.array([[2.0, -3.0]]),
    }
    return [
        Case(
            "window 3, d_k = d_v = 8, 10 positions from projections of random inputs",
            **projected(10, 12, 8, 8),
            prompt=0,
            kind=None,
            window=3,
        ),
        Case(
            "window 5, d_k = 4, d_v = 6, 12 positions",
            **projected(12, 10, 4, 6),
            prompt=0,
            kind=None,
            window=5,
        ),
        Case(
            "window 1, d_k = 1, d_v = 2, 6 positions",
            **projected(6, 3, 1, 2),
            prompt=0,
            kind=None,
            window=1,
        ),
        Case(
            "window 2, d_k = 3, d_v = 5, 7 positions",
            **projected(7, 6, 3, 5),
            prompt=0,
            kind=None,
            window=2,
        ),
        Case(
            "window 20 > 9 positions (the whole causal triangle), d_k = 5, d_v = 4",
            **projected(9, 6, 5, 4),
            prompt=0,
            kind=None,
            window=20,
        ),
        Case(
            "window 4, a full cache of 4 positions given, then 5 steps (d_k = 6, d_v = 3)",
            **projected(9, 8, 6, 3),
            prompt=4,
            kind=None,
            window=4,
        ),
        Case(
            "window 6, a prompt of 3 positions given, then 6 steps (d_k = 2, d_v = 2)",
            **projected(9, 5, 2, 2),
            prompt=3,
            kind=None,
            window=6,
        ),
        Case(
            "window 3, scores of several thousand (exp would overflow)",
            queries=huge_q,
            keys=huge_k,
            values=rng.normal(size=(6, 3)),
            prompt=0,
            kind=None,
            window=3,
        ),
        Case(
            "window 3, float32 q, k, v and caches (d_k = 5, d_v = 4)",
            **projected(6, 7, 5, 4),
            prompt=2,
            kind=np.float32,
            window=3,
        ),
        Case(
            "window 2, q, k, v given as lists (d_k = 3, d_v = 3)",
            **projected(5, 4, 3, 3),
            prompt=0,
            kind=list,
            window=2,
        ),
        Case(
            "window given as a NumPy integer 3 (d_k = 4, d_v = 2)",
            **projected(6, 5, 4, 2),
            prompt=0,
            kind=None,
            window=np.int64(3),
        ),
        Case(
            "window 1, t = 0: the query points away from the key",
            **far,
            prompt=0,
            kind=None,
            window=1,
        ),
    ]


def _as_given(vector: np.ndarray, kind: Any) -> Any:
    if kind is list:
        return vector.tolist()
    if kind is not None:
        return vector.astype(kind)
    return vector.copy()


def check_kv_attention_step(kv_attention_step: Callable[..., Any]) -> None:
    """Hidden test of Part E: step after step on the student's own caches, against causal
    attention with a band mask over the whole prefix."""
    sequences = kv_sequences()
    steps = 0
    for case in sequences:
        queries, keys, values = case.queries, case.keys, case.values
        prompt, kind, window = case.prompt, case.kind, case.window
        w = int(window)
        if kind not in (None, list):
            queries, keys, values = (a.astype(kind) for a in (queries, keys, values))
        exact = [np.asarray(a, dtype=np.float64) for a in (queries, keys, values)]
        expected = banded_attention_rows(*exact, w)  # (n, d_v)
        cache_k, cache_v = keys[:prompt].copy(), values[:prompt].copy()
        for t in range(prompt, len(keys)):
            steps += 1
            first = max(0, t + 1 - w)  # the oldest position the new one attends to
            args = (cache_k, cache_v, *(_as_given(a[t], kind) for a in (queries, keys, values)),
                    window)  # fmt: skip
            inputs = _inputs(keys=args[0], values=args[1], q=args[2], k=args[3], v=args[4])
            before = _snapshot(inputs)
            with case.named("kv_attention_step",
                            f"step at position {t} ({len(cache_k)} cached)"):  # fmt: skip
                result = _call_valid(kv_attention_step, CACHE_BY_HAND, *args)
                _expect_unchanged("kv_attention_step", inputs, before)
                z, new_k, new_v = _unpack(result, "kv_attention_step",
                                          ("z", "new_keys", "new_values"))  # fmt: skip
                _expect_array("z", z, (values.shape[1],), np.float64)
                _expect_array("new_keys", new_k, (t + 1 - first, keys.shape[1]), np.float64)
                _expect_array("new_values", new_v, (t + 1 - first, values.shape[1]), np.float64)
                assert_close(f"new_keys (window {w}, position {t})", new_k,
                             exact[1][first : t + 1], atol=0,
                             against=f"the keys of positions {first} to {t}, oldest first")  # fmt: skip
                assert_close(f"new_values (window {w}, position {t})", new_v,
                             exact[2][first : t + 1], atol=0,
                             against=f"the values of positions {first} to {t}, oldest first")  # fmt: skip
                assert_close(f"z at position {t}", z, expected[t], atol=1e-10, rtol=1e-9,
                             against=f"row {t} of causal attention with a band of {w} over "
                             "the prefix")  # fmt: skip
                for cache in (args[0], args[1]):
                    if np.shares_memory(new_k, cache) or np.shares_memory(new_v, cache):
                        raise AssertionError("a returned cache shares memory with an input cache")
            cache_k, cache_v = new_k, new_v

    ks, vs = np.zeros((2, 4)), np.zeros((2, 3))
    q, k, v = np.ones(4), np.ones(4), np.ones(3)
    bad_calls = [
        ("window 0", ks, vs, q, k, v, 0),
        ("window -1", ks, vs, q, k, v, -1),
        ("window 2.0 (a float)", ks, vs, q, k, v, 2.0),
        ("window True", ks, vs, q, k, v, True),
        ("window None", ks, vs, q, k, v, None),
        ("3 cached positions for window 2", np.zeros((3, 4)), np.zeros((3, 3)), q, k, v, 2),
        ("keys of one axis, shape (4,)", np.zeros(4), vs, q, k, v, 4),
        ("keys of three axes, shape (1, 2, 4)", ks[None], vs, q, k, v, 4),
        ("2 cached keys but 3 cached values", ks, np.zeros((3, 3)), q, k, v, 4),
        ("q of length 3 for d_k = 4", ks, vs, np.ones(3), k, v, 4),
        ("k of length 5 for d_k = 4", ks, vs, q, np.ones(5), v, 4),
        ("v of length 4 for d_v = 3", ks, vs, q, k, np.ones(4), 4),
        ("q of shape (1, 4)", ks, vs, np.ones((1, 4)), k, v, 4),
        ("d_k = 0 (caches (0, 0) and (0, 3))", np.zeros((0, 0)), np.zeros((0, 3)), np.ones(0),
         np.ones(0), v, 4),
        ("d_v = 0", np.zeros((0, 4)), np.zeros((0, 0)), q, k, np.ones(0), 4),
    ]  # fmt: skip
    for description, *args in bad_calls:
        _expect_value_error(
            kv_attention_step, CACHE_BY_HAND, f"kv_attention_step with {description}", *args
        )
    print(f"check_kv_attention_step: all {steps + len(bad_calls)} hidden cases passed.")
