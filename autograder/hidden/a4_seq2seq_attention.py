"""Hidden checks of Assignment 4: coverage scores, log-domain attention, Bahdanau's step, beam search.

The hidden test cells of ``a4_seq2seq_attention`` call, at autograde time::

    check_coverage_scores(coverage_scores)
    check_log_attention(log_attention)
    check_bahdanau_step(bahdanau_step)
    check_beam_search(beam_search_on_table)

Each check runs the student's functions on inputs the visible tests do not use (other shapes
and seeds, B = 1, m = 1, D != H, no earlier step, lengths in any order and of 0, garbage, inf
and nan at padded positions, temperatures from 0.001 to 100, huge logits, float32 and
non-contiguous arrays, other search models) and compares the results with references
computed *before* the call and in another way than the assignment asks: the coverage score
from [h; s_k; cov] concatenated and one matrix, the log-weights with ``masked_fill`` and
``torch.log_softmax``, the decoder step with ``torch.nn.GRUCell`` given the same weights and
``torch.log_softmax``, and, for beam search, exhaustive search, greedy decoding and
:func:`exact_beam_search`, a plain implementation of the rules the notebook states. Then it
checks that bad input raises ValueError.

``beam_search_on_table`` is the notebook's given wrapper: it builds a step function from a
table (plain data, so the TA command can send it into the student's kernel) and calls the
student's ``beam_search``. The tables hold exactly the prefixes a correct search may ask
about; the wrapper raises KeyError for any other.

While a student's function runs, the routines that would do its work are traps that raise
:class:`ShortcutUsed`: torch's attention (``scaled_dot_product_attention``,
``MultiheadAttention``), its recurrent layers and cells (``GRUCell``, ``GRU``, ``gru_cell``...),
the softmax, log-softmax and log-sum-exp of torch and SciPy, autograd, ``course.decoding`` and
``course.models.seq2seq`` by name, and every public callable of the ``course`` package except
``course.checks``.
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from autograder.hidden import shortcuts
from autograder.hidden.shortcuts import ShortcutUsed
from course.checks import assert_close
from course.checks import snapshot_inputs as _snapshot
from course.checks.a4_seq2seq_attention import expect_log_weights
from course.checks.cases import Case
from course.checks.cases import describe as _describe
from course.checks.cases import expect_unchanged as _expect_unchanged
from course.checks.cases import strided as _strided
from course.checks.cases import unpack as _unpack
from course.checks.rules import RULES

__all__ = [
    "ShortcutUsed",
    "no_shortcuts",
    "shortcut_targets",
    "check_coverage_scores",
    "check_log_attention",
    "check_bahdanau_step",
    "check_beam_search",
    "exact_beam_search",
    "exhaustive_search",
    "greedy_search",
    "random_table",
    "search_cases",
]

SCORE_BY_HAND = "compute the coverage scores by hand with NumPy"
ATTEND_BY_HAND = "compute the log-weights and the context by hand with NumPy"
STEP_BY_HAND = "compute the attention, the GRU step and the log-softmax by hand with NumPy"
SEARCH_BY_HAND = "run the search by hand over the given step function"
SCORE_KEYS = ("W_q", "W_k", "w_cov", "b_att", "v")
STEP_KEYS = ("W_ih", "W_hh", "b_ih", "b_hh", "W_o", "b_o")


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


def _torch_scores(
    h: np.ndarray, S: np.ndarray, past_weights: np.ndarray, params: dict
) -> np.ndarray:
    """The scores (B, m), written with torch: [h; s_k; cov_k] concatenated, one matrix
    [W_q W_k w_cov], and the coverage summed one earlier step at a time."""
    query, keys, past = _t(h), _t(S), _t(past_weights)
    B, m, _ = keys.shape
    coverage = torch.zeros(B, m, dtype=torch.float64)
    for step in range(past.shape[1]):
        coverage = coverage + past[:, step]
    triples = torch.cat([query[:, None, :].expand(-1, m, -1), keys, coverage[..., None]], dim=-1)
    W = torch.cat([_t(params["W_q"]), _t(params["W_k"]), _t(params["w_cov"])[:, None]], dim=1)
    return (torch.tanh(triples @ W.T + _t(params["b_att"])) @ _t(params["v"])).numpy()


def _real(lengths: Sequence[int], m: int) -> np.ndarray:
    """(B, m) bool: True at the real positions."""
    return np.arange(m)[None, :] < np.asarray(list(lengths))[:, None]


def _torch_log_attention(
    scores: np.ndarray, lengths: Sequence[int], S: np.ndarray, temperature: float
) -> tuple[np.ndarray, np.ndarray]:
    """log_weights (B, m), -inf at padding and for empty sentences, and the context (B, H):
    torch.log_softmax with the padding filled with -inf."""
    energies = _t(scores) / temperature
    real = torch.tensor(_real(lengths, energies.shape[1]))
    log_weights = torch.log_softmax(energies.masked_fill(~real, float("-inf")), dim=1)
    log_weights = log_weights.masked_fill(~real, float("-inf"))  # an empty row: nan -> -inf
    weights = log_weights.exp().masked_fill(~real, 0.0)
    states = _t(S).masked_fill(~real[:, :, None], 0.0)
    return log_weights.numpy(), torch.einsum("bk,bkh->bh", weights, states).numpy()


def _gru_cell(params: dict, n_in: int, width: int) -> torch.nn.GRUCell:
    cell = torch.nn.GRUCell(n_in, width, dtype=torch.float64)
    with torch.no_grad():
        cell.weight_ih.copy_(_t(params["W_ih"]))
        cell.weight_hh.copy_(_t(params["W_hh"]))
        cell.bias_ih.copy_(_t(params["b_ih"]))
        cell.bias_hh.copy_(_t(params["b_hh"]))
    return cell


def _torch_step(
    x: np.ndarray,
    h_prev: np.ndarray,
    S: np.ndarray,
    lengths: Sequence[int],
    past_weights: np.ndarray,
    params: dict,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, dict[str, np.ndarray]]]:
    """log_probs, h_t, log_weights from torch.nn.GRUCell and torch.log_softmax, and the wrong
    answers that hints recognise, by output."""
    log_weights, context = _torch_log_attention(
        _torch_scores(h_prev, S, past_weights, params), lengths, S, 1.0
    )
    embedded, previous, c = _t(x), _t(h_prev), _t(context)
    width = previous.shape[1]
    cell = _gru_cell(params, embedded.shape[1] + c.shape[1], width)
    W_o, b_o = _t(params["W_o"]), _t(params["b_o"])
    with torch.no_grad():
        state = cell(torch.cat([embedded, c], dim=1), previous)
        logits = torch.cat([state, c, embedded], dim=1) @ W_o.T + b_o
        log_probs = torch.log_softmax(logits, dim=1)
        # Wrong states, from the GRU's formulas with one mistake each.
        g_i = torch.cat([embedded, c], dim=1) @ _t(params["W_ih"]).T + _t(params["b_ih"])
        g_h = previous @ _t(params["W_hh"]).T + _t(params["b_hh"])
        (i_r, i_z, i_n), (s_r, s_z, s_n) = g_i.chunk(3, 1), g_h.chunk(3, 1)
        r, z = torch.sigmoid(i_r + s_r), torch.sigmoid(i_z + s_z)
        n = torch.tanh(i_n + r * s_n)
        b_hn = _t(params["b_hh"])[2 * width :]
        wrong_h = {
            "h_t = z n + (1 - z) h_{t-1}: in PyTorch's GRU, z = 1 keeps the old state": (
                z * n + (1 - z) * previous
            ).numpy(),
            "the reset gate applied to W_hn h_{t-1} without b_hn: it multiplies the bias too": (
                (1 - z) * torch.tanh(i_n + r * (s_n - b_hn) + b_hn) + z * previous
            ).numpy(),
            "the gates read as update, reset: W_ih's first D rows are the reset gate's": (
                (1 - r) * torch.tanh(i_n + z * s_n) + r * previous
            ).numpy(),
        }
        if embedded.shape[1] == c.shape[1]:
            swapped = cell(torch.cat([c, embedded], dim=1), previous)
            wrong_h["the GRU's input [c_t; x_t]: W_ih's first E columns act on x_t"] = (
                swapped.numpy()
            )
    wrong_log_probs = {
        "probabilities: return log-probabilities, the log-softmax of the logits": (
            torch.softmax(logits, dim=1).numpy()
        ),
    }
    reordered = torch.cat([c, state, embedded], dim=1) @ W_o.T + b_o
    wrong_log_probs["W_o [c_t; h_t; x_t]: W_o's first D columns act on h_t"] = torch.log_softmax(
        reordered, dim=1
    ).numpy()
    wrong = {"h": wrong_h, "log_probs": wrong_log_probs}
    return log_probs.numpy(), state.numpy(), log_weights, wrong


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


def _past(rng: np.random.Generator, lengths: Sequence[int], T: int, m: int) -> np.ndarray:
    """(B, T, m): T earlier attention distributions per sentence, 0 at padding (and 0
    everywhere for a sentence with no real position)."""
    past = np.zeros((len(lengths), T, m))
    for b, n in enumerate(lengths):
        if n:
            past[b, :, :n] = rng.dirichlet(np.ones(n), size=T)
    return past


# --------------------------------------------------------------------------------------------
# Part A: coverage_scores
# --------------------------------------------------------------------------------------------

SCORE_CASES = (
    Case("B=1, m=1, D=H=A=1, T=0", seed=401, B=1, m=1, D=1, H=1, A=1, T=0, w=1.0, options=""),
    Case("B=3, m=5, D=4, H=6, A=3, T=2", seed=402, B=3, m=5, D=4, H=6, A=3, T=2, w=1.0, options=""),
    Case("B=2, m=4, D=H=3, A=5, T=1", seed=403, B=2, m=4, D=3, H=3, A=5, T=1, w=1.0, options=""),
    Case(
        "B=4, m=3, D=2, H=5, A=7, T=6, params with extra keys",
        seed=404,
        B=4,
        m=3,
        D=2,
        H=5,
        A=7,
        T=6,
        w=1.0,
        options="extra",
    ),
    Case(
        "B=3, m=4, D=H=2, A=2, T=4, w_cov of about 3",
        seed=405,
        B=3,
        m=4,
        D=2,
        H=2,
        A=2,
        T=4,
        w=3.0,
        options="",
    ),
    Case(
        "B=2, m=6, D=5, H=2, A=4, T=3, float32, non-contiguous",
        seed=406,
        B=2,
        m=6,
        D=5,
        H=2,
        A=4,
        T=3,
        w=1.0,
        options="f32 strided",
    ),
)


def _score_params(rng: np.random.Generator, D: int, H: int, A: int, w: float = 1.0) -> dict:
    return {
        "W_q": 0.7 * rng.normal(size=(A, D)),
        "W_k": 0.7 * rng.normal(size=(A, H)),
        "w_cov": w * rng.normal(size=A),
        "b_att": 0.5 * rng.normal(size=A),
        "v": rng.normal(size=A),
    }


def _score_hints(h: np.ndarray, S: np.ndarray, past: np.ndarray, params: dict) -> dict:
    """Wrong scores that a plausible mistake gives, by what the mistake is."""
    wrong: dict[str, np.ndarray] = {}
    T = np.shape(past)[1]
    if T >= 2:
        wrong["the coverage as the mean of the earlier weights: sum them"] = _torch_scores(
            h, S, np.asarray(past) / T, params
        )
        wrong["the coverage from the last step only: sum every earlier step's weights"] = (
            _torch_scores(h, S, np.asarray(past)[:, -1:], params)
        )
    if np.shape(h)[1] == np.shape(S)[2]:
        swapped = dict(params, W_q=params["W_k"], W_k=params["W_q"])
        wrong["W_q acting on s_k and W_k on h: W_q reads the decoder state"] = _torch_scores(
            h, S, past, swapped
        )
    wrong["the scores without b_att: add it inside the tanh"] = _torch_scores(
        h, S, past, dict(params, b_att=np.zeros_like(params["v"]))
    )
    return wrong


def check_coverage_scores(coverage_scores: Callable[..., Any]) -> None:
    """Hidden test of Part A: the coverage score against torch, on other shapes and layouts."""
    for case in SCORE_CASES:
        B, m, options = case.B, case.m, case.options
        rng = np.random.default_rng(case.seed)
        h, S = rng.normal(size=(B, case.D)), rng.normal(size=(B, m, case.H))
        past = _past(rng, [m] * B, case.T, m)
        params = _score_params(rng, case.D, case.H, case.A, case.w)
        if "extra" in options:
            params |= {"W_ih": rng.normal(size=(3, 3)), "W_o": rng.normal(size=(2, 2))}
        if "f32" in options:
            h, S, past = h.astype(np.float32), S.astype(np.float32), past.astype(np.float32)
            params = {k: v.astype(np.float32) for k, v in params.items()}
        expected = _torch_scores(h, S, past, params)
        wrong = _score_hints(h, S, past, params)
        if "strided" in options:
            h, S, past = _strided(h), _strided(S), _strided(past)
            params = {k: _strided(v) for k, v in params.items()}
        inputs = {"h": h, "S": S, "past_weights": past, "params": params}
        before = _snapshot(inputs)
        tolerance = 1e-5 if "f32" in options else 1e-9
        with case.named("coverage_scores"):
            scores = _call_by_hand(coverage_scores, SCORE_BY_HAND, h, S, past, params)
            _expect_unchanged("coverage_scores", inputs, before)
            try:
                assert_close(
                    "coverage_scores(h, S, past_weights, params)",
                    scores,
                    expected,
                    atol=tolerance,
                    rtol=tolerance,
                    against="torch",
                )
            except AssertionError as error:
                raise AssertionError(f"{error}{_hint(scores, wrong)}") from None

    rng = np.random.default_rng(411)
    h, S = rng.normal(size=(2, 2)), rng.normal(size=(2, 4, 3))  # D = 2, H = 3
    past = _past(rng, [4, 4], 2, 4)
    params = _score_params(rng, 2, 3, 4)  # A = 4
    without_v = {k: params[k] for k in SCORE_KEYS if k != "v"}
    bad_calls = [
        ("h of shape (2,), not (B, D)", h[0], S, past, params),
        ("S of shape (2, 4), not (B, m, H)", h, S[:, :, 0], past, params),
        ("S with B = 3 rows for h with B = 2", h, rng.normal(size=(3, 4, 3)), past, params),
        ("past_weights of shape (2, 4), not (B, T, m)", h, S, past[:, 0], params),
        ("past_weights of shape (2, 2, 5) for m = 4", h, S, np.ones((2, 2, 5)) / 5, params),
        ("past_weights with B = 3 for B = 2", h, S, np.ones((3, 2, 4)) / 4, params),
        ("W_q of shape (4, 3) for D = 2", h, S, past, dict(params, W_q=np.ones((4, 3)))),
        ("W_k of shape (4, 2) for H = 3", h, S, past, dict(params, W_k=np.ones((4, 2)))),
        ("W_k of shape (3, 3) for W_q with A = 4", h, S, past, dict(params, W_k=np.ones((3, 3)))),
        ("w_cov of shape (5,) for A = 4", h, S, past, dict(params, w_cov=np.ones(5))),
        ("b_att of shape (1,) (it would broadcast)", h, S, past, dict(params, b_att=np.ones(1))),
        ("v of shape (4, 1), not (A,)", h, S, past, dict(params, v=np.ones((4, 1)))),
        ("no v in params", h, S, past, without_v),
    ]
    for description, *args in bad_calls:
        call = f"coverage_scores with {description}"
        _expect_value_error(coverage_scores, SCORE_BY_HAND, call, *args)
    total = len(SCORE_CASES) + len(bad_calls)
    print(f"check_coverage_scores: all {total} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part B: log_attention
# --------------------------------------------------------------------------------------------

ATTEND_CASES = (  # scale: of the scores; tau: the temperature
    Case("B=1, m=1, H=1, tau=1", seed=501, lengths=(1,), m=1, H=1, scale=1.0, tau=1.0, options=""),
    Case(
        "B=4, m=6, lengths 6, 0, 3, 5, huge scores and inf, nan states in the padding, tau=0.5",
        seed=502,
        lengths=(6, 0, 3, 5),
        m=6,
        H=3,
        scale=2.0,
        tau=0.5,
        options="garbage",
    ),
    Case(
        "B=3, m=5, lengths 2, 5, 4, real scores about 1e3 apart, tau=0.001",
        seed=503,
        lengths=(2, 5, 4),
        m=5,
        H=2,
        scale=1e3,
        tau=0.001,
        options="",
    ),
    Case(
        "B=2, m=4, lengths 3, 1 given as a list, tau=100, float32, non-contiguous",
        seed=504,
        lengths=(3, 1),
        m=4,
        H=5,
        scale=30.0,
        tau=100.0,
        options="list f32 strided",
    ),
    Case(
        "B=3, m=3, no padding, int32 lengths, tau=0.2",
        seed=505,
        lengths=(3, 3, 3),
        m=3,
        H=4,
        scale=3.0,
        tau=0.2,
        options="int32",
    ),
    Case(
        "B=2, m=5, every length 0",
        seed=506,
        lengths=(0, 0),
        m=5,
        H=2,
        scale=1.0,
        tau=1.0,
        options="garbage",
    ),
    Case(
        "B=2, m=5, lengths 4, 2, every real score 1000, tau=1",
        seed=507,
        lengths=(4, 2),
        m=5,
        H=2,
        scale=0.0,
        tau=1.0,
        options="flat",
    ),
)


def check_log_attention(log_attention: Callable[..., Any]) -> None:
    """Hidden test of Part B: the log-weights and the context against torch.log_softmax."""
    for case in ATTEND_CASES:
        lengths, m, options = case.lengths, case.m, case.options
        rng = np.random.default_rng(case.seed)
        real = _real(lengths, m)
        S = rng.normal(size=(len(lengths), m, case.H))
        S[~real] = 1e3
        scores = case.scale * rng.normal(size=(len(lengths), m))
        if "flat" in options:
            scores[:] = 1000.0
        if "garbage" in options:
            scores[~real] = 1e6  # far above every real score: it must not be the maximum
            padded = np.argwhere(~real)
            for i, (b, k) in enumerate(padded):
                S[b, k, i % case.H] = (np.inf, np.nan, -np.inf)[i % 3]
        sizes: Any = np.array(lengths, dtype=np.int32 if "int32" in options else np.int64)
        if "list" in options:
            sizes = list(lengths)
        if "f32" in options:
            scores, S = scores.astype(np.float32), S.astype(np.float32)
        log_weights_ref, context_ref = _torch_log_attention(scores, lengths, S, case.tau)
        if "strided" in options:
            scores, S = _strided(scores), _strided(S)
        inputs = {"scores": scores, "lengths": sizes, "S": S}
        before = _snapshot(inputs)
        tolerance = 1e-5 if "f32" in options else 1e-9
        with case.named("log_attention"), np.errstate(all="ignore"):
            result = _call_by_hand(log_attention, ATTEND_BY_HAND, scores, sizes, S, case.tau)
            _expect_unchanged("log_attention", inputs, before)
            log_weights, context = _unpack(result, "log_attention", ("log_weights", "context"))
            expect_log_weights(
                log_weights,
                log_weights_ref,
                real,
                where=f"lengths {list(lengths)}",
                atol=tolerance,
                rtol=tolerance,
                against="torch.log_softmax over the real positions",
            )
            assert_close(
                "context",
                context,
                context_ref,
                atol=tolerance,
                rtol=tolerance,
                against="the weighted sum of the real encoder states (0 for no real position)",
            )

    rng = np.random.default_rng(508)
    scores, S = rng.normal(size=(2, 4)), rng.normal(size=(2, 4, 3))
    lengths = np.array([4, 2])
    bad_calls = [
        ("temperature 0", scores, lengths, S, 0.0),
        ("temperature -1", scores, lengths, S, -1.0),
        ("temperature inf", scores, lengths, S, np.inf),
        ("temperature nan", scores, lengths, S, np.nan),
        ("lengths [3, 5] with m = 4", scores, np.array([3, 5]), S, 1.0),
        ("lengths [-1, 2]", scores, np.array([-1, 2]), S, 1.0),
        ("lengths [3] for B = 2 sentences", scores, np.array([3]), S, 1.0),
        ("lengths [1.5, 2.0], not integers", scores, np.array([1.5, 2.0]), S, 1.0),
        (
            "scores of shape (2, 5) and S of shape (2, 4, 3)",
            rng.normal(size=(2, 5)),
            lengths,
            S,
            1.0,
        ),
        ("S of shape (2, 4), not (B, m, H)", scores, lengths, S[:, :, 0], 1.0),
        ("scores of shape (8,), not (B, m)", scores.ravel(), lengths, S, 1.0),
    ]
    for description, *args in bad_calls:
        call = f"log_attention with {description}"
        _expect_value_error(log_attention, ATTEND_BY_HAND, call, *args)
    total = len(ATTEND_CASES) + len(bad_calls)
    print(f"check_log_attention: all {total} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part C: bahdanau_step
# --------------------------------------------------------------------------------------------

STEP_CASES = (  # scale: of the output biases
    Case(
        "B=1, m=1, D=H=E=A=1, vocab_size=1, T=0",
        seed=601,
        lengths=(1,),
        m=1,
        D=1,
        H=1,
        E=1,
        A=1,
        vocab_size=1,
        T=0,
        scale=1.0,
        options="",
    ),
    Case(
        "B=3, m=5, D=4, H=6, E=3, A=5, vocab_size=6, lengths 5, 2, 4, T=2, garbage in the padding",
        seed=602,
        lengths=(5, 2, 4),
        m=5,
        D=4,
        H=6,
        E=3,
        A=5,
        vocab_size=6,
        T=2,
        scale=1.0,
        options="",
    ),
    Case(
        "B=2, m=4, D=3, H=2, E=4, A=3, vocab_size=5, lengths 4, 0, T=1, logits near 1e4",
        seed=603,
        lengths=(4, 0),
        m=4,
        D=3,
        H=2,
        E=4,
        A=3,
        vocab_size=5,
        T=1,
        scale=1e4,
        options="",
    ),
    Case(
        "B=4, m=3, D=H=E=2, A=3, vocab_size=7, lengths 1, 3, 2, 3, T=3",
        seed=604,
        lengths=(1, 3, 2, 3),
        m=3,
        D=2,
        H=2,
        E=2,
        A=3,
        vocab_size=7,
        T=3,
        scale=1.0,
        options="",
    ),
    Case(
        "B=2, m=4, D=3, H=5, E=2, A=2, vocab_size=4, lengths 2, 4, T=2, float32, non-contiguous",
        seed=605,
        lengths=(2, 4),
        m=4,
        D=3,
        H=5,
        E=2,
        A=2,
        vocab_size=4,
        T=2,
        scale=1.0,
        options="f32 strided",
    ),
)


def _step_params(
    rng: np.random.Generator, D: int, H: int, E: int, A: int, vocab_size: int, scale: float
) -> dict[str, np.ndarray]:
    return _score_params(rng, D, H, A) | {
        "W_ih": 0.8 * rng.normal(size=(3 * D, E + H)),
        "W_hh": 0.8 * rng.normal(size=(3 * D, D)),
        "b_ih": 0.5 * rng.normal(size=3 * D),
        "b_hh": 0.5 * rng.normal(size=3 * D),
        "W_o": rng.normal(size=(vocab_size, D + H + E)),
        "b_o": scale * rng.normal(size=vocab_size),
    }


def check_bahdanau_step(bahdanau_step: Callable[..., Any]) -> None:
    """Hidden test of Part C: Bahdanau's step against torch.nn.GRUCell and torch.log_softmax."""
    for case in STEP_CASES:
        lengths, m, D, options = case.lengths, case.m, case.D, case.options
        rng = np.random.default_rng(case.seed)
        S = rng.normal(size=(len(lengths), m, case.H))
        S[~_real(lengths, m)] = 1e3  # garbage: it must get weight 0
        h_prev = rng.normal(size=(len(lengths), D))
        x = rng.normal(size=(len(lengths), case.E))
        past = _past(rng, lengths, case.T, m)
        params = _step_params(rng, D, case.H, case.E, case.A, case.vocab_size, case.scale)
        sizes = np.array(lengths)
        if "f32" in options:
            x, h_prev, S, past = (a.astype(np.float32) for a in (x, h_prev, S, past))
            params = {k: v.astype(np.float32) for k, v in params.items()}
        log_probs_ref, h_ref, log_weights_ref, wrong = _torch_step(
            x, h_prev, S, lengths, past, params
        )
        if "strided" in options:
            x, h_prev, S, past = (_strided(a) for a in (x, h_prev, S, past))
            params = {k: _strided(v) for k, v in params.items()}
        inputs = {"x": x, "h_prev": h_prev, "S": S, "lengths": sizes, "past_weights": past}
        inputs |= {"params": params}
        before = _snapshot(inputs)
        tolerance = 1e-5 if "f32" in options else 1e-9
        with case.named("bahdanau_step"), np.errstate(all="ignore"):
            result = _call_by_hand(bahdanau_step, STEP_BY_HAND, *inputs.values())
            _expect_unchanged("bahdanau_step", inputs, before)
            log_probs, h, log_weights = _unpack(
                result, "bahdanau_step", ("log_probs", "h", "log_weights")
            )
            expect_log_weights(
                log_weights,
                log_weights_ref,
                _real(lengths, m),
                where=f"lengths {list(lengths)}",
                atol=tolerance,
                rtol=tolerance,
                against="torch.log_softmax over the real positions",
            )
            for name, got, want, against in (
                ("h", h, h_ref, "torch.nn.GRUCell on [x; c_t] and h_prev"),
                ("log_probs", log_probs, log_probs_ref, "torch.log_softmax of W_o [h_t; c_t; x_t]"),
            ):
                try:
                    assert_close(name, got, want, atol=tolerance, rtol=tolerance, against=against)
                except AssertionError as error:
                    raise AssertionError(f"{error}{_hint(got, wrong[name])}") from None

    rng = np.random.default_rng(606)
    lengths = np.array([3, 2])
    S, h_prev, x = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 2)), rng.normal(size=(2, 3))
    past = _past(rng, lengths, 1, 3)
    params = _step_params(rng, 2, 4, 3, 3, 5, 1.0)  # D = 2, H = 4, E = 3, vocab_size = 5
    bad_calls = [
        ("x with B = 3 for h_prev with B = 2", rng.normal(size=(3, 3)), params),
        ("x of shape (3,), not (B, E)", x[0], params),
        ("W_ih of shape (6, 3), without the columns of c_t", x, dict(params, W_ih=np.ones((6, 3)))),
        ("W_ih of shape (4, 7): a GRU has three blocks", x, dict(params, W_ih=np.ones((4, 7)))),
        ("W_hh of shape (2, 6), the transpose", x, dict(params, W_hh=params["W_hh"].T)),
        ("b_ih of shape (1,) (it would broadcast)", x, dict(params, b_ih=np.ones(1))),
        ("b_hh of shape (4,) for D = 2", x, dict(params, b_hh=np.ones(4))),
        ("W_o of shape (5, 2), reading h_t only", x, dict(params, W_o=np.ones((5, 2)))),
        ("b_o of shape (6,) for W_o with vocab_size = 5", x, dict(params, b_o=np.ones(6))),
        ("b_o of shape (1,) (it would broadcast)", x, dict(params, b_o=np.ones(1))),
        ("no W_hh in params", x, {k: v for k, v in params.items() if k != "W_hh"}),
    ]
    for description, x_bad, bad in bad_calls:
        call = f"bahdanau_step with {description}"
        args = (x_bad, h_prev, S, lengths, past, bad)
        _expect_value_error(bahdanau_step, STEP_BY_HAND, call, *args)
    total = len(STEP_CASES) + len(bad_calls)
    print(f"check_bahdanau_step: all {total} hidden cases passed.")


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
