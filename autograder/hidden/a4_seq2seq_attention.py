"""Hidden checks of Assignment 4: attention scores, masked softmax, Luong's output, beam search.

The hidden test cells of ``a4_seq2seq_attention`` call, at autograde time::

    check_attention_scores(attention_scores)
    check_attend(attend)
    check_decoder_output(decoder_output)
    check_beam_search(beam_search_on_table)

Each check runs the student's functions on inputs the visible tests do not use (other shapes
and seeds, B = 1, m = 1, H = 1, lengths in any order, garbage at padded positions, huge
scores and logits, float32 and non-contiguous arrays, other search models) and compares the
results with references computed *before* the call and in another way than the assignment
asks: the scores, the masked softmax and Luong's output written with torch (``torch.cat``
instead of split weights, ``masked_fill`` and ``torch.softmax``, ``torch.log_softmax``),
and, for beam search, exhaustive search, greedy decoding and :func:`exact_beam_search`, a
plain implementation of the rules the notebook states. Then it checks that bad input raises
ValueError.

``beam_search_on_table`` is the notebook's given wrapper: it builds a step function from a
table (plain data, so the TA command can send it into the student's kernel) and calls the
student's ``beam_search``. The tables hold exactly the prefixes a correct search may ask
about; the wrapper raises KeyError for any other.

While a student's function runs, the routines that would do its work are traps that raise
:class:`ShortcutUsed`: torch's attention (``scaled_dot_product_attention``,
``MultiheadAttention``), the softmax, log-softmax and log-sum-exp of torch and SciPy, autograd,
``course.decoding`` and ``course.models.seq2seq`` by name, and every public callable of the
``course`` package except ``course.checks``.
"""

from __future__ import annotations

import itertools
import math
import numbers
import re
from collections.abc import Callable, Sequence
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
    "check_attention_scores",
    "check_attend",
    "check_decoder_output",
    "check_beam_search",
    "exact_beam_search",
    "exhaustive_search",
    "greedy_search",
    "random_table",
    "search_cases",
]

SCORE_BY_HAND = "compute the scores by hand with NumPy"
ATTEND_BY_HAND = "compute the masked softmax and the context by hand with NumPy"
OUTPUT_BY_HAND = "compute the attentional state and the log-softmax by hand with NumPy"
SEARCH_BY_HAND = "run the search by hand over the given step function"
KINDS = ("dot", "scaled_dot", "bilinear", "additive")


# --------------------------------------------------------------------------------------------
# Traps
# --------------------------------------------------------------------------------------------

TRAPS = shortcuts.Traps(RULES["a4_seq2seq_attention"].library)
shortcut_targets, no_shortcuts, _call_by_hand = TRAPS.methods()


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


_expect_value_error = shortcuts.value_error_checker(_call_by_hand)


def _t(array: Any) -> torch.Tensor:
    return torch.tensor(np.asarray(array, dtype=np.float64))


def _torch_scores(kind: str, h: np.ndarray, S: np.ndarray, params: dict | None) -> np.ndarray:
    """The scores (B, m), written with torch: [h_t; s_k] concatenated for the additive one."""
    query, keys = _t(h), _t(S)
    if kind == "dot":
        return torch.einsum("bh,bkh->bk", query, keys).numpy()
    if kind == "scaled_dot":
        return (torch.einsum("bh,bkh->bk", query, keys) / math.sqrt(query.shape[1])).numpy()
    if kind == "bilinear":
        return torch.einsum("bh,hj,bkj->bk", query, _t(params["W_a"]), keys).numpy()
    pairs = torch.cat([query[:, None, :].expand(-1, keys.shape[1], -1), keys], dim=-1)
    return (torch.tanh(pairs @ _t(params["W_1"]).T) @ _t(params["w_2"])).numpy()


def _torch_attend(
    scores: np.ndarray, lengths: Sequence[int], S: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """weights (B, m) and context (B, H): torch.softmax with the padding filled with -inf."""
    energies = _t(scores)
    real = torch.arange(energies.shape[1])[None, :] < torch.tensor(list(lengths))[:, None]
    weights = torch.softmax(energies.masked_fill(~real, float("-inf")), dim=1)
    states = _t(S).masked_fill(~real[:, :, None], 0.0)
    return weights.numpy(), torch.einsum("bk,bkh->bh", weights, states).numpy()


def _torch_output(
    kind: str, h: np.ndarray, S: np.ndarray, lengths: Sequence[int], params: dict
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """log_probs (B, vocab_size), weights (B, m), and wrong answers that hints recognise."""
    weights, context = _torch_attend(_torch_scores(kind, h, S, params), lengths, S)
    c, query = _t(context), _t(h)
    W_c, b_c, W_o, b_o = (_t(params[k]) for k in ("W_c", "b_c", "W_o", "b_o"))
    attentional = torch.tanh(torch.cat([c, query], dim=1) @ W_c.T + b_c)
    log_probs = torch.log_softmax(attentional @ W_o.T + b_o, dim=1)
    swapped = torch.tanh(torch.cat([query, c], dim=1) @ W_c.T + b_c)
    wrong = {
        "the halves of [c_t; h_t] swapped: W_c's first H columns act on c_t, the last H on h_t": (
            torch.log_softmax(swapped @ W_o.T + b_o, dim=1).numpy()
        ),
        "probabilities: return log-probabilities, the log-softmax of the logits": (
            torch.softmax(attentional @ W_o.T + b_o, dim=1).numpy()
        ),
    }
    return log_probs.numpy(), weights, wrong


def _hint(got: Any, wrong: dict[str, np.ndarray]) -> str:
    """ ". It matches <what>" when ``got`` equals one of the recognised wrong answers."""
    try:
        array = np.asarray(got, dtype=np.float64)
    except (TypeError, ValueError):
        return ""
    for what, value in wrong.items():
        if array.shape == value.shape and np.allclose(array, value, atol=1e-7, rtol=1e-6):
            return f". It matches {what}"
    return ""


def _lengths_cases_inputs(
    rng: np.random.Generator, lengths: Sequence[int], m: int, H: int
) -> tuple[np.ndarray, np.ndarray]:
    """S (B, m, H) with garbage in the padding, and the real-position mask (B, m)."""
    S = rng.normal(size=(len(lengths), m, H))
    real = np.arange(m)[None, :] < np.array(lengths)[:, None]
    S[~real] = 1e3  # garbage: it must get weight 0
    return S, real


# --------------------------------------------------------------------------------------------
# Part A: attention_scores
# --------------------------------------------------------------------------------------------

SCORE_CASES = (
    Case("dot, B=1, m=1, H=1", seed=401, kind="dot", B=1, m=1, H=1, A=0, options=""),
    Case(
        "dot, B=3, m=5, H=4, params=None", seed=402, kind="dot", B=3, m=5, H=4, A=0, options="none"
    ),
    Case("scaled_dot, B=2, m=4, H=9", seed=403, kind="scaled_dot", B=2, m=4, H=9, A=0, options=""),
    Case(
        "scaled_dot, B=4, m=2, H=3, params with every key",
        seed=404,
        kind="scaled_dot",
        B=4,
        m=2,
        H=3,
        A=5,
        options="all",
    ),
    Case(
        "bilinear, B=3, m=4, H=3, W_a far from symmetric",
        seed=405,
        kind="bilinear",
        B=3,
        m=4,
        H=3,
        A=0,
        options="skew",
    ),
    Case("bilinear, B=1, m=1, H=1", seed=406, kind="bilinear", B=1, m=1, H=1, A=0, options=""),
    Case(
        "bilinear, B=2, m=3, H=5, float32, non-contiguous",
        seed=407,
        kind="bilinear",
        B=2,
        m=3,
        H=5,
        A=0,
        options="f32 strided",
    ),
    Case("additive, B=3, m=4, H=3, A=5", seed=408, kind="additive", B=3, m=4, H=3, A=5, options=""),
    Case("additive, B=1, m=1, H=1, A=1", seed=409, kind="additive", B=1, m=1, H=1, A=1, options=""),
    Case(
        "additive, B=2, m=6, H=4, A=2, params with every key, non-contiguous",
        seed=410,
        kind="additive",
        B=2,
        m=6,
        H=4,
        A=2,
        options="all strided",
    ),
)


def _score_params(rng: np.random.Generator, H: int, A: int, skew: bool = False) -> dict:
    W_a = rng.normal(size=(H, H))
    if skew:  # mostly antisymmetric: W_a and its transpose give very different scores
        W_a = W_a - W_a.T + 0.1 * np.eye(H)
    return {
        "W_a": W_a,
        "W_1": 0.7 * rng.normal(size=(max(A, 1), 2 * H)),
        "w_2": rng.normal(size=max(A, 1)),
    }


def _score_hints(kind: str, h: np.ndarray, S: np.ndarray, params: dict) -> dict[str, np.ndarray]:
    """Wrong scores that a plausible mistake gives, by what the mistake is."""
    wrong: dict[str, np.ndarray] = {}
    H = np.shape(h)[1]
    if kind == "scaled_dot" and H > 1:
        dot = _torch_scores("dot", h, S, params)
        wrong["the dot product divided by H: divide by the square root of H"] = dot / H
        wrong["the unscaled dot product: divide by the square root of H"] = dot
    if kind == "bilinear" and H > 1:
        flipped = {"W_a": np.asarray(params["W_a"]).T}
        wrong["s_k^T W_a h_t, that is h_t^T W_a^T s_k: W_a acts on s_k"] = _torch_scores(
            "bilinear", h, S, flipped
        )
    if kind == "additive":
        W_1 = np.asarray(params["W_1"])
        swapped = {"W_1": np.concatenate([W_1[:, H:], W_1[:, :H]], axis=1), "w_2": params["w_2"]}
        wrong["W_1 [s_k; h_t]: W_1's first H columns act on h_t"] = _torch_scores(
            "additive", h, S, swapped
        )
    return wrong


def check_attention_scores(attention_scores: Callable[..., Any]) -> None:
    """Hidden test of Part A: every kind against torch, on other shapes and layouts."""
    for case in SCORE_CASES:
        kind, B, m, H, A, options = case.kind, case.B, case.m, case.H, case.A, case.options
        rng = np.random.default_rng(case.seed)
        h, S = rng.normal(size=(B, H)), rng.normal(size=(B, m, H))
        all_params = _score_params(rng, H, A, skew="skew" in options)
        needed = {"bilinear": ("W_a",), "additive": ("W_1", "w_2")}.get(kind, ())
        params: dict | None = {k: all_params[k] for k in needed}
        if "all" in options:
            params = dict(all_params, W_c=rng.normal(size=(H, 2 * H)))
        if "none" in options:
            params = None
        if "f32" in options:
            h, S = h.astype(np.float32), S.astype(np.float32)
            params = {k: v.astype(np.float32) for k, v in (params or {}).items()}
        expected = _torch_scores(kind, h, S, params)
        wrong = _score_hints(kind, h, S, params or {})
        if "strided" in options:
            h, S = _strided(h), _strided(S)
            params = {k: _strided(v) for k, v in params.items()} if params else params
        inputs = {"h": h, "S": S} | ({"params": params} if params else {})
        before = _snapshot(inputs)
        tolerance = 1e-5 if "f32" in options else 1e-9
        with case.named("attention_scores"):
            scores = _call_by_hand(attention_scores, SCORE_BY_HAND, kind, h, S, params)
            _expect_unchanged("attention_scores", inputs, before)
            try:
                assert_close(
                    f'attention_scores("{kind}", h, S, params)',
                    scores,
                    expected,
                    atol=tolerance,
                    rtol=tolerance,
                    against="torch",
                )
            except AssertionError as error:
                raise AssertionError(f"{error}{_hint(scores, wrong)}") from None

    rng = np.random.default_rng(411)
    h, S = rng.normal(size=(2, 3)), rng.normal(size=(2, 4, 3))
    params = _score_params(rng, 3, 4)
    bad_calls = [
        ('kind "cosine" (not one of the four)', "cosine", h, S, params),
        ('kind "general" (the bilinear score is called "bilinear" here)', "general", h, S, params),
        ("h of shape (3,), not (B, H)", "dot", h[0], S, params),
        ("S of shape (2, 4, 4) for h with H = 3", "dot", h, rng.normal(size=(2, 4, 4)), params),
        ("S with B = 3 rows for h with B = 2", "scaled_dot", h, rng.normal(size=(3, 4, 3)), params),
        ("S of shape (2, 4), not (B, m, H)", "dot", h, S[:, :, 0], params),
        ("W_a of shape (3, 4)", "bilinear", h, S, dict(params, W_a=rng.normal(size=(3, 4)))),
        ("no W_a in params", "bilinear", h, S, {"W_1": params["W_1"], "w_2": params["w_2"]}),
        ("W_1 of shape (4, 3), not (A, 2H)", "additive", h, S, dict(params, W_1=np.ones((4, 3)))),
        ("w_2 of shape (5,) for W_1 with A = 4", "additive", h, S, dict(params, w_2=np.ones(5))),
        ("no w_2 in params", "additive", h, S, {"W_1": params["W_1"], "W_a": params["W_a"]}),
    ]
    for description, kind, *args in bad_calls:
        call = f"attention_scores with {description}"
        naming = "" if kind in KINDS else kind  # an unknown kind must be named in the message
        _expect_value_error(
            attention_scores, SCORE_BY_HAND, call, kind, *args,
            says=(re.escape(naming), f"name {naming!r}") if naming else None,
        )  # fmt: skip
    total = len(SCORE_CASES) + len(bad_calls)
    print(f"check_attention_scores: all {total} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part B: attend
# --------------------------------------------------------------------------------------------

ATTEND_CASES = (  # scale: of the scores
    Case("B=1, m=1, H=1", seed=501, lengths=(1,), m=1, H=1, scale=1.0, options=""),
    Case(
        "B=4, m=6, lengths 6, 1, 3, 5, huge scores and garbage states in the padding",
        seed=502,
        lengths=(6, 1, 3, 5),
        m=6,
        H=3,
        scale=2.0,
        options="garbage",
    ),
    Case(
        "B=3, m=5, lengths 2, 5, 4, real scores of about 1e4",
        seed=503,
        lengths=(2, 5, 4),
        m=5,
        H=2,
        scale=1e4,
        options="",
    ),
    Case(
        "B=2, m=4, lengths 3, 1 given as a list, float32, non-contiguous",
        seed=504,
        lengths=(3, 1),
        m=4,
        H=5,
        scale=1.0,
        options="list f32 strided",
    ),
    Case(
        "B=3, m=3, no padding, int32 lengths",
        seed=505,
        lengths=(3, 3, 3),
        m=3,
        H=4,
        scale=3.0,
        options="int32",
    ),
    Case(
        "B=2, m=5, lengths 4, 2, every real score 1000",
        seed=506,
        lengths=(4, 2),
        m=5,
        H=2,
        scale=0.0,
        options="flat",
    ),
)


def check_attend(attend: Callable[..., Any]) -> None:
    """Hidden test of Part B: the masked softmax and the context against torch."""
    for case in ATTEND_CASES:
        lengths, m, options = case.lengths, case.m, case.options
        rng = np.random.default_rng(case.seed)
        S, real = _lengths_cases_inputs(rng, lengths, m, case.H)
        scores = case.scale * rng.normal(size=(len(lengths), m))
        if "flat" in options:
            scores[:] = 1000.0
        if "garbage" in options:
            scores[~real] = 1e6  # far above every real score: it must not be the maximum
        sizes: Any = np.array(lengths, dtype=np.int32 if "int32" in options else np.int64)
        if "list" in options:
            sizes = list(lengths)
        if "f32" in options:
            scores, S = scores.astype(np.float32), S.astype(np.float32)
        weights_ref, context_ref = _torch_attend(scores, lengths, S)
        if "strided" in options:
            scores, S = _strided(scores), _strided(S)
        inputs = {"scores": scores, "lengths": sizes, "S": S}
        before = _snapshot(inputs)
        tolerance = 1e-6 if "f32" in options else 1e-9
        with case.named("attend"), np.errstate(all="ignore"):
            result = _call_by_hand(attend, ATTEND_BY_HAND, scores, sizes, S)
            _expect_unchanged("attend", inputs, before)
            weights, context = _unpack(result, "attend", ("weights", "context"))
            weights_array = np.asarray(weights, dtype=np.float64)
            if weights_array.shape == real.shape and np.all(np.isfinite(weights_array)):
                leaks = np.argwhere(~real & (weights_array != 0))
                if len(leaks):
                    b, k = (int(i) for i in leaks[0])
                    raise AssertionError(
                        f"the weight of padded position [{b}, {k}] (sentence {b} has "
                        f"{lengths[b]} real positions) is {weights_array[b, k]!r}; it must be "
                        "exactly 0"
                    )
            assert_close(
                "weights",
                weights,
                weights_ref,
                atol=tolerance,
                rtol=tolerance,
                against="torch.softmax over the real positions",
            )
            assert_close(
                "the sum of each row of weights",
                np.sum(weights_array, axis=1),
                np.ones(len(lengths)),
                atol=tolerance,
                against="1",
            )
            assert_close(
                "context",
                context,
                context_ref,
                atol=tolerance,
                rtol=tolerance,
                against="the weighted sum of the real encoder states",
            )

    rng = np.random.default_rng(507)
    scores, S = rng.normal(size=(2, 4)), rng.normal(size=(2, 4, 3))
    bad_calls = [
        ("lengths [3, 0] (a sentence of length 0)", scores, np.array([3, 0]), S),
        ("lengths [3, 5] with m = 4", scores, np.array([3, 5]), S),
        ("lengths [-1, 2]", scores, np.array([-1, 2]), S),
        ("lengths [3] for B = 2 sentences", scores, np.array([3]), S),
        ("scores of shape (2, 5) and S of shape (2, 4, 3)", rng.normal(size=(2, 5)), [4, 4], S),
        ("S of shape (2, 4), not (B, m, H)", scores, np.array([4, 2]), S[:, :, 0]),
        ("scores of shape (8,), not (B, m)", scores.ravel(), np.array([4, 2]), S),
    ]
    for description, *args in bad_calls:
        _expect_value_error(attend, ATTEND_BY_HAND, f"attend with {description}", *args)
    total = len(ATTEND_CASES) + len(bad_calls)
    print(f"check_attend: all {total} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part C: decoder_output
# --------------------------------------------------------------------------------------------

OUTPUT_CASES = (  # scale: of the logits
    Case(
        "dot, B=1, m=1, H=1, vocab_size=1",
        seed=601,
        kind="dot",
        lengths=(1,),
        m=1,
        H=1,
        A=0,
        vocab_size=1,
        scale=1.0,
        options="",
    ),
    Case(
        "scaled_dot, B=3, m=5, H=4, vocab_size=6, lengths 5, 2, 4, garbage in the padding",
        seed=602,
        kind="scaled_dot",
        lengths=(5, 2, 4),
        m=5,
        H=4,
        A=0,
        vocab_size=6,
        scale=1.0,
        options="",
    ),
    Case(
        "bilinear, B=2, m=4, H=3, vocab_size=5, logits near 1e4",
        seed=603,
        kind="bilinear",
        lengths=(4, 3),
        m=4,
        H=3,
        A=0,
        vocab_size=5,
        scale=1e4,
        options="",
    ),
    Case(
        "additive, B=4, m=3, H=2, A=3, vocab_size=7, lengths 1, 3, 2, 3",
        seed=604,
        kind="additive",
        lengths=(1, 3, 2, 3),
        m=3,
        H=2,
        A=3,
        vocab_size=7,
        scale=1.0,
        options="",
    ),
    Case(
        "additive, B=2, m=4, H=3, A=2, vocab_size=4, float32, non-contiguous",
        seed=605,
        kind="additive",
        lengths=(2, 4),
        m=4,
        H=3,
        A=2,
        vocab_size=4,
        scale=1.0,
        options="f32 strided",
    ),
)


def _output_params(
    rng: np.random.Generator, H: int, A: int, vocab_size: int, scale: float
) -> dict[str, np.ndarray]:
    return _score_params(rng, H, A) | {
        "W_c": rng.normal(size=(H, 2 * H)),
        "b_c": 0.3 * rng.normal(size=H),
        "W_o": rng.normal(size=(vocab_size, H)),
        "b_o": scale * rng.normal(size=vocab_size),
    }


def check_decoder_output(decoder_output: Callable[..., Any]) -> None:
    """Hidden test of Part C: Luong's attentional output against torch.log_softmax."""
    for case in OUTPUT_CASES:
        kind, lengths, H, options = case.kind, case.lengths, case.H, case.options
        rng = np.random.default_rng(case.seed)
        S, _ = _lengths_cases_inputs(rng, lengths, case.m, H)
        h = rng.normal(size=(len(lengths), H))
        params = _output_params(rng, H, case.A, case.vocab_size, case.scale)
        sizes = np.array(lengths)
        if "f32" in options:
            h, S = h.astype(np.float32), S.astype(np.float32)
            params = {k: v.astype(np.float32) for k, v in params.items()}
        log_probs_ref, weights_ref, wrong = _torch_output(kind, h, S, lengths, params)
        if "strided" in options:
            h, S = _strided(h), _strided(S)
            params = {k: _strided(v) for k, v in params.items()}
        inputs = {"h": h, "S": S, "lengths": sizes, "params": params}
        before = _snapshot(inputs)
        tolerance = 1e-5 if "f32" in options else 1e-9
        with case.named("decoder_output"), np.errstate(all="ignore"):
            result = _call_by_hand(decoder_output, OUTPUT_BY_HAND, kind, h, S, sizes, params)
            _expect_unchanged("decoder_output", inputs, before)
            log_probs, weights = _unpack(result, "decoder_output", ("log_probs", "weights"))
            assert_close(
                "weights",
                weights,
                weights_ref,
                atol=tolerance,
                rtol=tolerance,
                against="torch.softmax over the real positions",
            )
            try:
                assert_close(
                    "log_probs",
                    log_probs,
                    log_probs_ref,
                    atol=tolerance,
                    rtol=tolerance,
                    against="torch.log_softmax of Luong's attentional state",
                )
            except AssertionError as error:
                raise AssertionError(f"{error}{_hint(log_probs, wrong)}") from None

    rng = np.random.default_rng(606)
    lengths = np.array([3, 2])
    S, _ = _lengths_cases_inputs(rng, lengths, 3, 2)
    h = rng.normal(size=(2, 2))
    params = _output_params(rng, 2, 3, 5, 1.0)
    bad_calls = [
        ("W_c of shape (2, 2), not (H, 2H)", dict(params, W_c=np.ones((2, 2)))),
        ("W_c of shape (4, 2), the transpose", dict(params, W_c=params["W_c"].T)),
        ("b_c of shape (1,) (it would broadcast)", dict(params, b_c=np.ones(1))),
        ("b_c of shape (3,) for H = 2", dict(params, b_c=np.ones(3))),
        ("W_o of shape (5, 3) for H = 2", dict(params, W_o=np.ones((5, 3)))),
        ("b_o of shape (4,) for W_o with vocab_size = 5", dict(params, b_o=np.ones(4))),
        ("b_o of shape (1,) (it would broadcast)", dict(params, b_o=np.ones(1))),
    ]
    for description, bad in bad_calls:
        call = f"decoder_output with {description}"
        _expect_value_error(decoder_output, OUTPUT_BY_HAND, call, "dot", h, S, lengths, bad)
    total = len(OUTPUT_CASES) + len(bad_calls)
    print(f"check_decoder_output: all {total} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part D: beam search
# --------------------------------------------------------------------------------------------

Table = dict[tuple[int, ...], np.ndarray]
Step = Callable[[list[int]], Any]


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    return (torch.log_softmax(_t(logits), dim=-1)).numpy()


def random_table(
    seed: int, vocab_size: int, bos: int, eos: int, max_len: int, sharpness: float = 1.0
) -> Table:
    """A model as a table: for every prefix a correct search may pass to step (bos, then up to
    max_len - 1 tokens other than eos), random next-token log-probabilities."""
    rng = np.random.default_rng(seed)
    words = [v for v in range(vocab_size) if v != eos]
    table = {}
    for length in range(max_len):
        for tail in itertools.product(words, repeat=length):
            table[(bos, *tail)] = _log_softmax(sharpness * rng.normal(size=vocab_size))
    return table


def table_from_probabilities(probabilities: dict[tuple[int, ...], Sequence[float]]) -> Table:
    return {prefix: np.log(np.asarray(p, dtype=np.float64)) for prefix, p in probabilities.items()}


def _step_of(table: Table) -> Step:
    def step(prefix: list[int]) -> np.ndarray:
        return table[tuple(int(token) for token in prefix)]

    return step


def exact_beam_search(
    step: Step, bos: int, eos: int, beam_size: int, max_len: int, alpha: float = 0.0
) -> tuple[list[int], float, float]:
    """The notebook's rules, one by one, with Python lists and a stable ``sorted``."""
    live: list[tuple[float, list[int]]] = [(0.0, [bos])]
    finished: list[tuple[float, list[int]]] = []
    generated = 0
    while live and len(finished) < beam_size and generated < max_len:
        candidates = []
        for score, prefix in live:
            row = [float(x) for x in step(prefix)]
            candidates += [(score + row[v], [*prefix, v]) for v in range(len(row))]
        ranked = sorted(candidates, key=lambda item: -item[0])  # stable: ties keep the list order
        finished += [c for c in ranked[:beam_size] if c[1][-1] == eos]
        live = [c for c in ranked if c[1][-1] != eos][:beam_size]
        generated += 1
    if len(finished) < beam_size:
        finished += live
    best_score, best_prefix, best_value = None, None, -math.inf
    for score, prefix in finished:
        value = score / (len(prefix) - 1) ** alpha
        if best_prefix is None or value > best_value:
            best_score, best_prefix, best_value = score, prefix, value
    return best_prefix[1:], best_score, best_value


def exhaustive_search(
    table: Table, bos: int, eos: int, max_len: int, alpha: float = 0.0
) -> tuple[list[int], float, float]:
    """The best normalised score over every output of at most max_len tokens: eos at the end,
    or max_len tokens without eos."""
    best: tuple[list[int], float, float] | None = None
    for prefix, row in table.items():
        score = sum(float(table[prefix[:i]][prefix[i]]) for i in range(1, len(prefix)))
        endings = [(list(prefix[1:]) + [eos], score + float(row[eos]))]
        if len(prefix) == max_len:  # the last step: max_len tokens without eos are outputs too
            endings += [
                (list(prefix[1:]) + [v], score + float(row[v])) for v in range(len(row)) if v != eos
            ]
        for tokens, total in endings:
            value = total / len(tokens) ** alpha
            if best is None or value > best[2]:
                best = (tokens, total, value)
    assert best is not None
    return best


def greedy_search(table: Table, bos: int, eos: int, max_len: int) -> tuple[list[int], float]:
    """The most probable token at each step, until eos or max_len tokens."""
    prefix, score = [bos], 0.0
    while len(prefix) - 1 < max_len and prefix[-1] != eos:
        row = table[tuple(prefix)]
        token = int(np.argmax(row))
        prefix, score = [*prefix, token], score + float(row[token])
    return prefix[1:], score


def _search_case(
    label: str,
    reference: str,
    table: Table,
    *,
    bos: int,
    eos: int,
    beam_size: int,
    max_len: int,
    alpha: float,
) -> Case:
    return Case(
        label,
        reference=reference,
        table=table,
        bos=bos,
        eos=eos,
        beam_size=beam_size,
        max_len=max_len,
        alpha=alpha,
    )


def _exhaustive(
    label: str, *, seed: int, V: int, bos: int, eos: int, max_len: int, alpha: float
) -> Case:
    """A beam as wide as every output (V ** max_len): beam search is exhaustive search."""
    table = random_table(seed, V, bos, eos, max_len)
    return _search_case(
        f"exhaustive, {label}",
        "exhaustive",
        table,
        bos=bos,
        eos=eos,
        beam_size=V**max_len,
        max_len=max_len,
        alpha=alpha,
    )


def _greedy(
    label: str, *, seed: int, V: int, bos: int, eos: int, max_len: int, sharpness: float
) -> Case:
    """beam_size = 1: beam search is greedy decoding."""
    table = random_table(seed, V, bos, eos, max_len, sharpness)
    return _search_case(
        f"beam_size=1 as greedy, {label}",
        "greedy",
        table,
        bos=bos,
        eos=eos,
        beam_size=1,
        max_len=max_len,
        alpha=0.0,
    )


def _not_exact(
    label: str,
    *,
    seed: int,
    V: int,
    bos: int,
    eos: int,
    beam_size: int,
    max_len: int,
    alpha: float,
    sharpness: float,
) -> Case:
    """A narrow beam on a random model: only the rules of the search give the answer."""
    table = random_table(seed, V, bos, eos, max_len, sharpness)
    return _search_case(
        f"not exact, {label}",
        "exact",
        table,
        bos=bos,
        eos=eos,
        beam_size=beam_size,
        max_len=max_len,
        alpha=alpha,
    )


def search_cases() -> list[Case]:
    """Every hidden case of beam_search: table, bos, eos, beam_size, max_len, alpha, and the
    reference that gives the answer: "exhaustive", "greedy" or "exact" (the rules, on models
    where beam search is not exact)."""
    cases = [
        _exhaustive(
            "vocab_size=3, max_len=4, alpha=0.5, the best output cut at max_len",
            seed=929,
            V=3,
            bos=3,
            eos=0,
            max_len=4,
            alpha=0.5,
        ),
        _exhaustive(
            "vocab_size=4, max_len=3, eos=2, bos=9, alpha=0.8",
            seed=903,
            V=4,
            bos=9,
            eos=2,
            max_len=3,
            alpha=0.8,
        ),
        _exhaustive(
            "vocab_size=2 (eos=1 and one word), max_len=5, alpha=0",
            seed=959,
            V=2,
            bos=2,
            eos=1,
            max_len=5,
            alpha=0.0,
        ),
        _greedy(
            "vocab_size=4, max_len=6, eos=2, bos=7",
            seed=911,
            V=4,
            bos=7,
            eos=2,
            max_len=6,
            sharpness=1.0,
        ),
        _greedy(
            "vocab_size=5, max_len=4, eos=0, bos=5, peaked",
            seed=912,
            V=5,
            bos=5,
            eos=0,
            max_len=4,
            sharpness=3.0,
        ),
        _not_exact(
            "vocab_size=4, max_len=4, beam_size=2, alpha=0",
            seed=942,
            V=4,
            bos=4,
            eos=0,
            beam_size=2,
            max_len=4,
            alpha=0.0,
            sharpness=1.5,
        ),
        _not_exact(
            "vocab_size=4, max_len=5, eos=3, beam_size=2, alpha=0.6",
            seed=922,
            V=4,
            bos=4,
            eos=3,
            beam_size=2,
            max_len=5,
            alpha=0.6,
            sharpness=1.5,
        ),
        _not_exact(
            "vocab_size=5, max_len=5, beam_size=3, alpha=1",
            seed=924,
            V=5,
            bos=5,
            eos=0,
            beam_size=3,
            max_len=5,
            alpha=1.0,
            sharpness=2.0,
        ),
    ]
    # alpha: "</s>" alone (p 0.4) against "a </s>" (0.24) and "a a </s>" (0.324, the best per
    # token); all three finish with beam_size=3.
    short_long = table_from_probabilities(
        {(2,): [0.4, 0.6], (2, 1): [0.4, 0.6], (2, 1, 1): [0.9, 0.1]}
    )
    for alpha in (0.0, 1.0):
        label = f"alpha={alpha:g}, a short output against a long one, vocab_size=2, max_len=3"
        cases.append(
            _search_case(
                label, "exact", short_long, bos=2, eos=0, beam_size=3, max_len=3, alpha=alpha
            )
        )
    # max_len cuts every hypothesis: eos is very unlikely everywhere.
    cut = random_table(931, 3, 3, 1, 3)
    cut = {prefix: _log_softmax(row - 10.0 * (np.arange(3) == 1)) for prefix, row in cut.items()}
    label = "cut at max_len=3, eos=1 unlikely, beam_size=2"
    cases.append(_search_case(label, "exact", cut, bos=3, eos=1, beam_size=2, max_len=3, alpha=0.0))
    # A tie: "</s>" (found first) and "a </s>" have the same score per token (alpha = 1).
    tie = table_from_probabilities({(2,): [0.5, 0.5], (2, 1): [0.5, 0.5]})
    label = "a tie between finished hypotheses, alpha=1"
    cases.append(_search_case(label, "exact", tie, bos=2, eos=0, beam_size=2, max_len=2, alpha=1.0))
    # "</s>" finishes at step 1, then two more at step 2: three finished for beam_size=2, and
    # the search stops there (the table knows no prefix of two tokens).
    many = table_from_probabilities(
        {(3,): [0.45, 0.35, 0.2], (3, 1): [0.7, 0.2, 0.1], (3, 2): [0.8, 0.1, 0.1]}
    )
    label = "two finish at once after one did, beam_size=2, max_len=3"
    cases.append(
        _search_case(label, "exact", many, bos=3, eos=0, beam_size=2, max_len=3, alpha=0.5)
    )
    # After step 1 "</s>" is finished and ranks above "b": b is live all the same, and "b </s>"
    # (p 0.2375) is the answer per token.
    below = table_from_probabilities(
        {(3,): [0.4, 0.35, 0.25], (3, 1): [0.3, 0.42, 0.28], (3, 2): [0.95, 0.03, 0.02]}
    )
    label = "a live hypothesis ranked below a finished one, beam_size=2, alpha=1"
    cases.append(
        _search_case(label, "exact", below, bos=3, eos=0, beam_size=2, max_len=3, alpha=1.0)
    )
    return cases


def _expect_search_result(call: str, result: Any) -> tuple[list[int], float, float]:
    tokens, log_prob, normalised = _unpack(
        result, "beam_search", ("tokens", "log_prob", "normalised")
    )
    if not isinstance(tokens, (list, tuple)) or not all(
        isinstance(t, (int, np.integer)) and not isinstance(t, (bool, np.bool_)) for t in tokens
    ):
        raise AssertionError(
            f"{call} should return the tokens as a list of ints, got {_describe(tokens)}"
        )
    for name, value in (("log_prob", log_prob), ("normalised", normalised)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (numbers.Real, np.floating)
        ):
            raise AssertionError(f"{call} should return {name} as a float, got {_describe(value)}")
    return [int(t) for t in tokens], float(log_prob), float(normalised)


def check_beam_search(beam_search_on_table: Callable[..., Any]) -> None:
    """Hidden test of Part D: exhaustive search, greedy decoding and the exact rules."""
    cases = search_cases()
    for case in cases:
        table, bos, eos, max_len, alpha = case.table, case.bos, case.eos, case.max_len, case.alpha
        beam_size = case.beam_size
        if case.reference == "exhaustive":
            tokens_ref, log_prob_ref, value_ref = exhaustive_search(table, bos, eos, max_len, alpha)
            against = "exhaustive search (a beam this wide is exact)"
        elif case.reference == "greedy":
            tokens_ref, log_prob_ref = greedy_search(table, bos, eos, max_len)
            value_ref = log_prob_ref
            against = "greedy decoding"
        else:
            step = _step_of(table)
            tokens_ref, log_prob_ref, value_ref = exact_beam_search(
                step, bos, eos, beam_size, max_len, alpha
            )
            against = "the rules of the search"
        call = (
            f"beam_search(bos={bos}, eos={eos}, beam_size={beam_size}, max_len={max_len}, "
            f"alpha={alpha:g})"
        )
        before = _snapshot({"table": table})
        with case.named("beam_search"):
            try:
                result = _call_by_hand(
                    beam_search_on_table,
                    SEARCH_BY_HAND,
                    table,
                    bos,
                    eos,
                    beam_size,
                    max_len,
                    alpha,
                )
            except KeyError as error:
                message = error.args[0] if error.args else error
                raise AssertionError(f"{call} failed: {message}") from None  # wrapper's KeyError
            _expect_unchanged("beam_search", {"table": table}, before)
            tokens, log_prob, normalised = _expect_search_result(call, result)
            if tokens != tokens_ref:
                raise AssertionError(
                    f"{call} returned the tokens {tokens}; expected {tokens_ref}, from {against} "
                    f"(log-probability {log_prob_ref:.6g}, normalised score {value_ref:.6g})"
                )
            assert_close(
                f"the log_prob of {call}", log_prob, log_prob_ref, atol=1e-9, against=against
            )
            assert_close(
                f"the normalised score of {call}", normalised, value_ref, atol=1e-9, against=against
            )

    table = random_table(941, 3, 3, 0, 3)
    longer = dict(table)
    longer[(3, 1)] = np.log(np.full(4, 0.25))  # the model's outputs change length
    favour_one = table_from_probabilities({(3,): [0.1, 0.6, 0.3]})
    longer.update(favour_one)
    bad_calls = [
        ("beam_size=0", table, 3, 0, 0, 3, 0.0),
        ("max_len=0", table, 3, 0, 2, 0, 0.0),
        ("alpha=-0.5", table, 3, 0, 2, 3, -0.5),
        ("eos=3 for a model with 3 tokens", table, 3, 3, 2, 3, 0.0),
        ("a step whose outputs change length (3, then 4 values)", longer, 3, 0, 2, 3, 0.0),
    ]
    for description, *args in bad_calls:
        call = f"beam_search with {description}"
        _expect_value_error(beam_search_on_table, SEARCH_BY_HAND, call, *args)
    total = len(cases) + len(bad_calls)
    print(f"check_beam_search: all {total} hidden cases passed.")
