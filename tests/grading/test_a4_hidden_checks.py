"""Assignment 4: the hidden checks reject plausible bugs and the library shortcuts.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps) is in ``test_assignments.py``. Here: independent implementations (the coverage
score one pair at a time, log-weights through ``np.logaddexp``, a GRU step gate by gate, beam
search with ``heapq.nlargest``) with one switch per plausible bug, each of which must fail its
check with a message that names the case; the search cases are what their labels say (exact,
greedy, not exact, a tie); the visible tests name the typical mistakes; and shortcuts through
torch's log-softmax and log-sum-exp, its GRU cell, ``course.models.seq2seq`` and
``course.decoding``, which give the right answer outside the traps and are caught inside them.
"""

from __future__ import annotations

import functools
import heapq
import sys
import types

import numpy as np
import pytest
import torch

from autograder.hidden import a4_seq2seq_attention as hidden
from tests.grading.bug_injection import (
    Failure,
    expect_failure,
    expect_shortcut,
    expect_traps,
    reference_namespace,
    row_id,
    run_visible,
    visible_mistake_tests,
)
from tests.grading.solution_loader import as_student

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

ASSIGNMENT = "a4_seq2seq_attention"

# --------------------------------------------------------------------------------------------
# Independent implementations with bug switches
# --------------------------------------------------------------------------------------------

SCORE_KEYS = ("W_q", "W_k", "w_cov", "b_att", "v")


def scores(
    h,
    S,
    past,
    params,
    *,
    mean_coverage=False,
    last_only=False,
    swap_W=False,
    no_bias=False,
    validate=True,
    in_place=False,
):
    """e[b, k] one pair at a time, the coverage summed in a loop."""
    past_in = past
    h, S, past = (np.asarray(a, dtype=float) for a in (h, S, past))
    P = {k: np.asarray(params[k], dtype=float) for k in SCORE_KEYS if k in params}
    if validate:
        if h.ndim != 2 or S.ndim != 3 or past.ndim != 3 or len(P) != 5:
            raise ValueError("shapes")
        if S.shape[0] != h.shape[0] or past.shape[::2] != S.shape[:2]:
            raise ValueError("shapes")
        A = P["W_q"].shape[0]
        if P["W_q"].shape != (A, h.shape[1]) or P["W_k"].shape != (A, S.shape[2]):
            raise ValueError("W_q or W_k")
        if any(P[k].shape != (A,) for k in ("w_cov", "b_att", "v")):
            raise ValueError("vectors")
    W_q, W_k = (P["W_k"], P["W_q"]) if swap_W else (P["W_q"], P["W_k"])
    B, m, _ = S.shape
    T = past.shape[1]
    out = np.zeros((B, m))
    for b in range(B):
        for k in range(m):
            cov = 0.0
            for t in range(T):
                cov += past[b, t, k]
            if last_only and T:
                cov = past[b, -1, k]
            if mean_coverage and T:
                cov /= T
            pre = W_q @ h[b] + W_k @ S[b, k] + P["w_cov"] * cov
            out[b, k] = P["v"] @ np.tanh(pre if no_bias else pre + P["b_att"])
    if in_place:
        past_in[...] = 0.0
    return out


def log_attend(
    e,
    lengths,
    S,
    temperature=1.0,
    *,
    log_of_softmax=False,
    max_over_all=False,
    times_temperature=False,
    empty_nan=False,
    read_padding=False,
    validate=True,
):
    """Log-weights sentence by sentence, through np.logaddexp.reduce."""
    e, S = np.asarray(e, dtype=float), np.asarray(S, dtype=float)
    lengths = np.asarray(lengths)
    if validate:
        if not (np.isscalar(temperature) and np.isfinite(temperature) and temperature > 0):
            raise ValueError("temperature")
        if e.ndim != 2 or S.ndim != 3 or S.shape[:2] != e.shape:
            raise ValueError("shapes")
        if lengths.shape != (e.shape[0],) or lengths.dtype.kind not in "iu":
            raise ValueError("lengths")
        if lengths.min() < 0 or lengths.max() > e.shape[1]:
            raise ValueError("lengths")
    B, m = e.shape
    z = e * temperature if times_temperature else e / temperature
    log_weights = np.full((B, m), -np.inf)
    context = np.zeros((B, S.shape[2]))
    for b in range(B):
        n = int(lengths[b])
        if n == 0:
            if empty_nan:
                log_weights[b] = np.nan
            continue
        row = z[b, :n]
        if log_of_softmax:
            w = np.exp(row - row.max())
            log_weights[b, :n] = np.log(w / w.sum())
        elif max_over_all:
            top = z[b].max()
            log_weights[b, :n] = row - top - np.log(np.exp(row - top).sum())
        else:
            log_weights[b, :n] = row - np.logaddexp.reduce(row)
        if read_padding:
            context[b] = np.exp(log_weights[b]) @ S[b]
        else:
            context[b] = np.exp(log_weights[b, :n]) @ S[b, :n]
    return log_weights, context


def decoder_step(
    x,
    h_prev,
    S,
    lengths,
    past,
    params,
    *,
    z_keeps_new=False,
    bias_outside_reset=False,
    gates_swapped=False,
    input_swapped=False,
    output_swapped=False,
    probabilities=False,
    naive=False,
    validate=True,
):
    """Bahdanau's step from the functions above, the GRU one gate at a time."""
    log_weights, c = log_attend(scores(h_prev, S, past, params), lengths, S)
    keys = ("W_ih", "W_hh", "b_ih", "b_hh", "W_o", "b_o")
    if validate and not set(keys) <= set(params):
        raise ValueError("a missing parameter")
    x, h = np.asarray(x, dtype=float), np.asarray(h_prev, dtype=float)
    P = {k: np.asarray(params[k], dtype=float) for k in ("W_ih", "W_hh", "b_ih", "b_hh", "W_o")}
    P["b_o"] = np.asarray(params["b_o"], dtype=float)
    D, E, H = h.shape[1], x.shape[-1], c.shape[1]
    if validate:
        if x.ndim != 2 or x.shape[0] != h.shape[0]:
            raise ValueError("x")
        if P["W_ih"].shape != (3 * D, E + H) or P["W_hh"].shape != (3 * D, D):
            raise ValueError("W")
        if P["b_ih"].shape != (3 * D,) or P["b_hh"].shape != (3 * D,):
            raise ValueError("b")
        V = P["W_o"].shape[0]
        if P["W_o"].shape != (V, D + H + E) or P["b_o"].shape != (V,):
            raise ValueError("W_o or b_o")
    u = np.concatenate([c, x] if input_swapped else [x, c], axis=1)
    rows = {g: slice(i * D, (i + 1) * D) for i, g in enumerate("rzn")}
    if gates_swapped:
        rows["r"], rows["z"] = rows["z"], rows["r"]

    def gate(g, hidden_part=True):
        W_i, b_i = P["W_ih"][rows[g]], P["b_ih"][rows[g]]
        W_h, b_h = P["W_hh"][rows[g]], P["b_hh"][rows[g]]
        return u @ W_i.T + b_i, h @ W_h.T + b_h

    sigmoid = lambda a: 1.0 / (1.0 + np.exp(-a))  # noqa: E731
    r, z = (sigmoid(sum(gate(g))) for g in "rz")
    i_n, s_n = gate("n")
    if bias_outside_reset:
        b_hn = P["b_hh"][rows["n"]]
        n = np.tanh(i_n + r * (s_n - b_hn) + b_hn)
    else:
        n = np.tanh(i_n + r * s_n)
    new = z * n + (1 - z) * h if z_keeps_new else (1 - z) * n + z * h
    parts = [c, new, x] if output_swapped else [new, c, x]
    o = np.concatenate(parts, axis=1) @ P["W_o"].T + P["b_o"]
    if naive:
        log_probs = o - np.log(np.exp(o).sum(axis=1, keepdims=True))
    else:
        log_probs = o - np.logaddexp.reduce(o, axis=1, keepdims=True)
    return (np.exp(log_probs) if probabilities else log_probs), new, log_weights


def search(
    step,
    bos,
    eos,
    beam_size,
    max_len,
    alpha=0.0,
    *,
    ignore_alpha=False,
    length_without_eos=False,
    live_from_top_only=False,
    stop_at_first_finished=False,
    drop_live_at_max_len=False,
    extend_finished=False,
    last_on_tie=False,
    extra_step=False,
    with_bos=False,
    validate=True,
):
    """Beam search with heapq.nlargest (stable, as sorted(..., reverse=True)[:n])."""
    if validate and (beam_size < 1 or max_len < 1 or alpha < 0):
        raise ValueError("bad beam_size, max_len or alpha")
    vocab = None
    beams = [(0.0, (bos,))]
    done = []
    quota = 1 if stop_at_first_finished else beam_size
    for _ in range(max_len + (1 if extra_step else 0)):
        if not beams or len(done) >= quota:
            break
        candidates = []
        for score, prefix in beams:
            row = np.asarray(step(list(prefix)), dtype=float)
            if validate and (vocab is not None and len(row) != vocab or not 0 <= eos < len(row)):
                raise ValueError("the step's outputs")
            vocab = len(row)
            candidates += [(score + float(row[v]), (*prefix, v)) for v in range(len(row))]
        everything = heapq.nlargest(len(candidates), candidates, key=lambda c: c[0])
        done += [c for c in everything[:beam_size] if c[1][-1] == eos]
        if extend_finished:
            beams = everything[:beam_size]
        elif live_from_top_only:
            beams = [c for c in everything[:beam_size] if c[1][-1] != eos]
        else:
            beams = [c for c in everything if c[1][-1] != eos][:beam_size]
    if len(done) < beam_size and not drop_live_at_max_len:
        done += [c for c in beams if c[1][-1] != eos]
    exponent = 0.0 if ignore_alpha else alpha

    def value(item):
        n = len(item[1]) - 1
        if length_without_eos and item[1][-1] == eos:
            n = max(n - 1, 1)
        return item[0] / n**exponent

    order = range(len(done) - 1, -1, -1) if last_on_tie else range(len(done))
    best = max(order, key=lambda i: value(done[i]))
    score, prefix = done[best]
    return list(prefix if with_bos else prefix[1:]), score, value(done[best])


def search_on_table(table, bos, eos, beam_size, max_len, alpha=0.0, **bugs):
    """The notebook's given wrapper, around ``search``."""

    def step(prefix):
        key = tuple(int(t) for t in prefix)
        if key not in table:
            raise KeyError(f"the model has no entry for the prefix {list(key)}")
        return np.array(table[key], dtype=float)

    return search(step, bos, eos, beam_size, max_len, alpha, **bugs)


# --------------------------------------------------------------------------------------------
# The independent implementations pass; the search cases are what they say
# --------------------------------------------------------------------------------------------


def test_the_independent_implementations_pass_too(capsys):
    hidden.check_coverage_scores(as_student(scores, "coverage_scores"))
    with np.errstate(all="ignore"):
        hidden.check_log_attention(as_student(log_attend, "log_attention"))
        hidden.check_bahdanau_step(as_student(decoder_step, "bahdanau_step"))
    hidden.check_beam_search(as_student(search_on_table, "beam_search_on_table"))
    assert capsys.readouterr().out.count("hidden cases passed") == 4


def test_the_hidden_cases_are_what_their_labels_say():
    """The low temperature puts real log-weights where a softmax's weights round to 0, the
    garbage case has inf and nan in the padding, and the step's cases have D = H = E where the
    hints for swapped blocks need it."""
    case = next(c for c in hidden.ATTEND_CASES if "tau=0.001" in c.label)
    rng = np.random.default_rng(case.seed)
    rng.normal(size=(len(case.lengths), case.m, case.H))
    z = case.scale * rng.normal(size=(len(case.lengths), case.m)) / case.tau
    real = hidden._real(case.lengths, case.m)
    gaps = np.where(real, z.max(axis=1, keepdims=True, where=real, initial=-np.inf) - z, 0)
    assert gaps.max() > 800  # exp(-800) is 0 in float64
    for case in hidden.STEP_CASES:
        if "D=H=E" in case.label:
            assert case.D == case.H == case.E
    assert any(0 in c.lengths for c in hidden.STEP_CASES)
    assert any(0 in c.lengths for c in hidden.ATTEND_CASES)
    assert any(c.T == 0 for c in hidden.SCORE_CASES) and any(c.D != c.H for c in hidden.SCORE_CASES)


def test_the_torch_reference_of_the_step_is_the_notebook_formula():
    """The GRUCell reference and the gate-by-gate step agree (so the GRUCell's layout is the
    one the notebook states)."""
    rng = np.random.default_rng(3)
    lengths = [4, 2, 0]
    S, h, x = rng.normal(size=(3, 4, 5)), rng.normal(size=(3, 3)), rng.normal(size=(3, 2))
    past = hidden._past(rng, lengths, 2, 4)
    params = hidden._step_params(rng, 3, 5, 2, 4, 6, 1.0)
    log_probs, state, log_weights, _ = hidden._torch_step(x, h, S, lengths, past, params)
    mine = decoder_step(x, h, S, np.array(lengths), past, params)
    np.testing.assert_allclose(mine[0], log_probs, atol=1e-12)
    np.testing.assert_allclose(mine[1], state, atol=1e-12)
    np.testing.assert_array_equal(np.isinf(mine[2]), np.isinf(log_weights))


def test_the_exact_rules_agree_with_the_independent_search_on_random_models():
    for seed in range(40):
        rng = np.random.default_rng(seed)
        V, max_len = int(rng.integers(2, 5)), int(rng.integers(1, 5))
        eos, beam, alpha = int(rng.integers(V)), int(rng.integers(1, 4)), float(rng.uniform(0, 1.5))
        table = hidden.random_table(seed, V, V + 1, eos, max_len, sharpness=2.0)
        step = hidden._step_of(table)
        got = hidden.exact_beam_search(step, V + 1, eos, beam, max_len, alpha)
        want = search(step, V + 1, eos, beam, max_len, alpha)
        assert got[0] == want[0] and got[1:] == pytest.approx(want[1:], abs=1e-12), seed


def test_a_beam_wider_than_every_prefix_is_exhaustive_search():
    for seed in range(20):
        table = hidden.random_table(seed, 3, 3, 0, 4, sharpness=2.0)
        for alpha in (0.0, 0.7):
            exact = hidden.exact_beam_search(hidden._step_of(table), 3, 0, 81, 4, alpha)
            assert exact[0] == hidden.exhaustive_search(table, 3, 0, 4, alpha)[0], seed


def _searched(case, beam_size=None):
    """What the rules of beam search give on the search case (with another beam, if given)."""
    step = hidden._step_of(case.table)
    width = case.beam_size if beam_size is None else beam_size
    return hidden.exact_beam_search(step, case.bos, case.eos, width, case.max_len, case.alpha)


def test_the_search_cases_are_what_their_labels_say():
    cases = {case.label: case for case in hidden.search_cases()}
    for label, case in cases.items():
        table, bos, eos, max_len = case.table, case.bos, case.eos, case.max_len
        exact = _searched(case)
        best = hidden.exhaustive_search(table, bos, eos, max_len, case.alpha)
        greedy = hidden.greedy_search(table, bos, eos, max_len)
        if case.reference == "exhaustive":
            assert case.beam_size >= len(table) * len(table[(bos,)]), label  # every candidate
            assert exact[0] == best[0] and exact[0] != greedy[0], label
        if case.reference == "greedy":
            assert case.beam_size == 1 and exact[0] == greedy[0], label
            assert _searched(case, beam_size=2)[0] != greedy[0], label
        if label.startswith("not exact"):
            assert exact[0] != best[0] and exact[0] != greedy[0], label
    alpha_0 = next(c for label, c in cases.items() if label.startswith("alpha=0,"))
    alpha_1 = next(c for label, c in cases.items() if label.startswith("alpha=1,"))
    assert _searched(alpha_0)[0] == [0]
    assert _searched(alpha_1)[0] == [1, 1, 0]
    cut = next(c for label, c in cases.items() if label.startswith("cut"))
    tokens = _searched(cut)[0]
    assert len(tokens) == cut.max_len and cut.eos not in tokens
    table = next(c for label, c in cases.items() if label.startswith("a tie")).table
    one, two = table[(2,)][0], table[(2,)][1] + table[(2, 1)][0]
    assert one == two / 2  # exactly: "</s>" and "a </s>" tie with alpha = 1


# --------------------------------------------------------------------------------------------
# Plausible bugs
# --------------------------------------------------------------------------------------------


SCORES_T2 = r"^coverage_scores, B=3, m=5, D=4, H=6, A=3, T=2$"
GARBAGE = r"^log_attention, B=4, m=6, lengths 6, 0, 3, 5, huge scores"
COLD = r"^log_attention, B=3, m=5, lengths 2, 5, 4, real scores about 1e3 apart, tau=0.001$"
STEP = r"^bahdanau_step, B=3, m=5, D=4, H=6, E=3, A=5, vocab_size=6"
FIRST = r"^bahdanau_step, B=1, m=1, D=H=E=A=1, vocab_size=1, T=0$"
EXHAUSTIVE = r"^beam_search, exhaustive, vocab_size=3, max_len=4, alpha=0.5"


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        (
            {"mean_coverage": True},
            Failure(SCORES_T2, "^coverage_scores.* differs", "mean of the earlier weights"),
        ),
        (
            {"last_only": True},
            Failure(SCORES_T2, "^coverage_scores.* differs", "from the last step only"),
        ),
        (
            {"swap_W": True},
            Failure(r"^coverage_scores, B=1, ", "differs", "W_q acting on s_k"),
        ),
        (
            {"no_bias": True},
            Failure(r"^coverage_scores, B=1, ", "differs", "without b_att"),
        ),
        (
            {"validate": False},
            Failure(None, r"^coverage_scores with S with B = 3 rows", "IndexError"),
        ),
        ({"in_place": True}, Failure("^coverage_scores, B=3, ", r"in place: past_weights\b")),
    ],
    ids=row_id,
)
def test_check_coverage_scores_rejects_bug(bugs, failure):
    student = as_student(scores, "coverage_scores", **bugs)
    with np.errstate(all="ignore"):
        expect_failure(lambda: hidden.check_coverage_scores(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        (
            {"log_of_softmax": True},
            Failure(COLD, r"^log_weights\[\d, \d\] is -inf at a real position", "finite"),
        ),
        (
            {"max_over_all": True},
            Failure(GARBAGE, r"^log_weights\[\d, \d\] is inf at a real position"),
        ),
        (
            {"times_temperature": True},
            Failure(
                GARBAGE, r"^log_weights at the real positions \(lengths \[6, 0, 3, 5\]\) differs"
            ),
        ),
        (
            {"empty_nan": True},
            Failure(GARBAGE, r"^log_weights\[1, 0\] is nan at a padded position", "must be -inf"),
        ),
        ({"read_padding": True}, Failure(GARBAGE, "^context contains nan")),
        (
            {"validate": False},
            Failure(None, r"^log_attention with temperature 0", "should raise ValueError"),
        ),
    ],
    ids=row_id,
)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_check_log_attention_rejects_bug(bugs, failure):
    student = as_student(log_attend, "log_attention", **bugs)
    with np.errstate(all="ignore"):
        expect_failure(lambda: hidden.check_log_attention(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"z_keeps_new": True}, Failure(FIRST, "^h differs", "z = 1 keeps the old state")),
        (
            {"bias_outside_reset": True},
            Failure(FIRST, "^h differs", "it multiplies the bias too"),
        ),
        ({"gates_swapped": True}, Failure(FIRST, "^h differs", "update, reset")),
        ({"input_swapped": True}, Failure(FIRST, "^h differs", r"input \[c_t; x_t\]")),
        (
            {"output_swapped": True},
            Failure(STEP, "^log_probs differs", r"W_o \[c_t; h_t; x_t\]"),
        ),
        (
            {"probabilities": True},
            Failure(r"^bahdanau_step, B=1, ", "^log_probs differs", "matches probabilities"),
        ),
        (
            {"naive": True},
            Failure(r"^bahdanau_step, .*logits near 1e4$", "^log_probs contains"),
        ),
        (
            {"validate": False},
            Failure(None, r"^bahdanau_step with b_o of shape \(1,\)", "should raise ValueError"),
        ),
    ],
    ids=row_id,
)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_check_bahdanau_step_rejects_bug(bugs, failure):
    student = as_student(decoder_step, "bahdanau_step", **bugs)
    with np.errstate(all="ignore"):
        expect_failure(lambda: hidden.check_bahdanau_step(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        (
            {"ignore_alpha": True},
            Failure(
                EXHAUSTIVE,
                r"returned the tokens \[0\]; expected \[1, 1, 1, 2\]",
                "exhaustive search",
            ),
        ),
        (
            {"length_without_eos": True},
            Failure(
                r"^beam_search, exhaustive, .*alpha=0.8$",
                r"^the normalised score of beam_search\(.*\) differs",
                "exhaustive search",
            ),
        ),
        (
            {"live_from_top_only": True},
            Failure(
                "^beam_search, a live hypothesis ranked below a finished one, ",
                r"returned the tokens \[0\]; expected \[2, 0\]",
                "rules of the search",
            ),
        ),
        ({"stop_at_first_finished": True}, Failure(EXHAUSTIVE, "returned the tokens")),
        (
            {"drop_live_at_max_len": True},
            Failure(EXHAUSTIVE + ", the best output cut at max_len$", "returned the tokens"),
        ),
        ({"extend_finished": True}, Failure(EXHAUSTIVE, "failed: the model has no entry")),
        (
            {"last_on_tie": True},
            Failure(
                "^beam_search, a tie between finished hypotheses, alpha=1$",
                r"returned the tokens \[1, 0\]; expected \[0\]",
            ),
        ),
        ({"extra_step": True}, Failure(EXHAUSTIVE, "failed: the model has no entry")),
        ({"with_bos": True}, Failure(EXHAUSTIVE, r"returned the tokens \[3, ")),
        (
            {"validate": False},
            Failure(None, "^beam_search with (beam_size|max_len)=0", "should raise ValueError"),
        ),
    ],
    ids=row_id,
)
def test_check_beam_search_rejects_bug(bugs, failure):
    student = as_student(search_on_table, "beam_search_on_table", **bugs)
    expect_failure(lambda: hidden.check_beam_search(student), failure)


def test_a_search_that_waits_for_exactly_beam_size_finished_is_caught():
    """Three finish for beam_size=2 by the second step: the search must stop there (the table
    knows no longer prefix); one that waits for exactly beam_size goes on."""

    def waits_for_exactly(step, bos, eos, beam_size, max_len, alpha=0.0):
        live, finished = [(0.0, [bos])], []
        for _ in range(max_len):
            if len(finished) == beam_size:
                break
            candidates = [
                (score + float(p), [*prefix, v])
                for score, prefix in live
                for v, p in enumerate(step(prefix))
            ]
            ranked = sorted(candidates, key=lambda c: -c[0])
            finished += [c for c in ranked[:beam_size] if c[1][-1] == eos]
            live = [c for c in ranked if c[1][-1] != eos][:beam_size]
        finished += live if len(finished) < beam_size else []
        score, prefix = max(finished, key=lambda c: c[0] / (len(c[1]) - 1) ** alpha)
        return prefix[1:], score, score / (len(prefix) - 1) ** alpha

    def on_table(table, bos, eos, beam_size, max_len, alpha=0.0):
        return waits_for_exactly(hidden._step_of(table), bos, eos, beam_size, max_len, alpha)

    expect_failure(
        lambda: hidden.check_beam_search(as_student(on_table, "beam_search_on_table")),
        Failure("^beam_search, two finish at once after one did, ", r"failed: .*\(3, 1, 1\)"),
    )


# --------------------------------------------------------------------------------------------
# The visible tests name the typical mistakes
# --------------------------------------------------------------------------------------------


test_visible_tests_name_the_mistake = visible_mistake_tests(
    ASSIGNMENT,
    [
        (
            "test_coverage_scores_visible",
            {"coverage_scores": as_student(scores, "coverage_scores", mean_coverage=True)},
            Failure(r"^coverage_scores, .*T = 2 earlier steps", "^scores differs from torch"),
        ),
        (
            "test_coverage_scores_visible",
            {"coverage_scores": as_student(scores, "coverage_scores", no_bias=True)},
            Failure(r"^coverage_scores, .*T = 2 earlier steps", "^scores differs from torch"),
        ),
        (
            "test_log_attention_visible",
            {"log_attention": as_student(log_attend, "log_attention", log_of_softmax=True)},
            Failure(
                r"^log_attention, .*temperature 0.001",
                r"^log_weights\[0, 1\] is -inf at a real position",
            ),
        ),
        (
            "test_log_attention_visible",
            {"log_attention": as_student(log_attend, "log_attention", empty_nan=True)},
            Failure(
                r"^log_attention, .*temperature 1.0",
                r"^log_weights\[2, 0\] is nan at a padded position",
            ),
        ),
        (
            "test_log_attention_visible",
            {"log_attention": as_student(log_attend, "log_attention", read_padding=True)},
            Failure(r"^log_attention, .*temperature 1.0", r"^context contains nan at \[1, 0\]"),
        ),
        (
            "test_bahdanau_step_visible",
            {"bahdanau_step": as_student(decoder_step, "bahdanau_step", z_keeps_new=True)},
            Failure("^bahdanau_step, .*lengths 3 and 2", "^h differs from torch.nn.GRUCell"),
        ),
        (
            "test_bahdanau_step_visible",
            {"bahdanau_step": as_student(decoder_step, "bahdanau_step", naive=True)},
            Failure(r"^bahdanau_step, .*b_o\[0\] = 1000", "^log_probs contains -?inf"),
        ),
        (
            "test_beam_search_visible",
            {
                "beam_search_on_table": as_student(
                    search_on_table, "beam_search_on_table", ignore_alpha=True
                )
            },
            Failure(
                "^beam_search_on_table, beam_size=3, max_len=3, alpha=1.0",
                "found 'yes </s>'; expected 'ok ok </s>'",
            ),
        ),
        (
            "test_beam_search_visible",
            {
                "beam_search_on_table": as_student(
                    search_on_table, "beam_search_on_table", stop_at_first_finished=True
                )
            },
            Failure(
                "^beam_search_on_table, beam_size=3, max_len=3, alpha=0.0",
                "found 'yes'; expected 'yes </s>'",
            ),
        ),
    ],
)


def test_visible_tests_pass_with_the_independent_implementations():
    run_visible(ASSIGNMENT, "test_coverage_scores_visible", coverage_scores=as_student(scores, "x"))
    with np.errstate(all="ignore"):
        run_visible(
            ASSIGNMENT, "test_log_attention_visible", log_attention=as_student(log_attend, "x")
        )
        run_visible(
            ASSIGNMENT, "test_bahdanau_step_visible", bahdanau_step=as_student(decoder_step, "x")
        )
    run_visible(
        ASSIGNMENT,
        "test_beam_search_visible",
        beam_search_on_table=as_student(search_on_table, "beam_search_on_table"),
    )


def test_the_notebook_beam_search_calls_the_step_only_on_live_prefixes():
    """The reference asks a model for exactly the prefixes the rules extend: the table cases
    hold no other, and a model that records its calls sees each live prefix once per step."""
    beam_search = reference_namespace(ASSIGNMENT)["beam_search"]
    table = hidden.random_table(7, 4, 4, 0, 4, sharpness=1.5)
    calls = []

    def step(prefix):
        calls.append(tuple(prefix))
        return table[tuple(prefix)]

    beam_search(step, 4, 0, 2, 4, 0.5)
    assert calls[0] == (4,) and all(call[-1] != 0 for call in calls[1:])
    assert max(len(call) for call in calls) <= 4


# --------------------------------------------------------------------------------------------
# Shortcuts: torch's log-softmax and GRU cell, course.models.seq2seq, course.decoding
# --------------------------------------------------------------------------------------------


def _real(lengths, m):
    return torch.arange(m)[None, :] < torch.tensor(np.asarray(lengths))[:, None]


def log_attend_with_torch_log_softmax(e, lengths, S, temperature=1.0):
    e, S = torch.tensor(np.asarray(e, dtype=float)), torch.tensor(np.asarray(S, dtype=float))
    real = _real(lengths, e.shape[1])
    log_weights = torch.log_softmax((e / temperature).masked_fill(~real, float("-inf")), dim=1)
    log_weights = log_weights.masked_fill(~real, float("-inf"))
    states = S.masked_fill(~real[:, :, None], 0.0)
    return log_weights.numpy(), torch.einsum("bk,bkh->bh", log_weights.exp(), states).numpy()


def log_attend_with_torch_logsumexp(e, lengths, S, temperature=1.0):
    z = torch.tensor(np.asarray(e, dtype=float)) / temperature
    real = _real(lengths, z.shape[1])
    kept = z.masked_fill(~real, float("-inf"))
    norm = torch.logsumexp(kept, dim=1, keepdim=True).nan_to_num(neginf=0.0)
    log_weights = (kept - norm).masked_fill(~real, float("-inf"))
    states = torch.tensor(np.asarray(S, dtype=float)).masked_fill(~real[:, :, None], 0.0)
    return log_weights.numpy(), torch.einsum("bk,bkh->bh", log_weights.exp(), states).numpy()


def log_attend_with_course_masked_softmax(e, lengths, S, temperature=1.0):
    """The lecture's masked_softmax, then a logarithm: right where no weight rounds to 0."""
    from course.models.seq2seq import masked_softmax

    z = torch.tensor(np.asarray(e, dtype=float)) / temperature
    real = _real(lengths, z.shape[1])
    if not bool(real.any(-1).all()):
        return log_attend(e, lengths, S, temperature)
    weights = masked_softmax(z, real)
    states = torch.tensor(np.asarray(S, dtype=float)).masked_fill(~real[:, :, None], 0.0)
    return weights.log().numpy(), torch.einsum("bk,bkh->bh", weights, states).numpy()


def step_with_gru_cell(x, h_prev, S, lengths, past, params):
    """Parts A and B by hand, then torch.nn.GRUCell given the weights."""
    log_weights, c = log_attend(scores(h_prev, S, past, params), lengths, S)
    x, h = torch.tensor(np.asarray(x, dtype=float)), torch.tensor(np.asarray(h_prev, dtype=float))
    c = torch.tensor(c)
    cell = torch.nn.GRUCell(x.shape[1] + c.shape[1], h.shape[1], dtype=torch.float64)
    with torch.no_grad():
        for name, key in (("weight_ih", "W_ih"), ("weight_hh", "W_hh")):
            getattr(cell, name).copy_(torch.tensor(np.asarray(params[key], dtype=float)))
        for name, key in (("bias_ih", "b_ih"), ("bias_hh", "b_hh")):
            getattr(cell, name).copy_(torch.tensor(np.asarray(params[key], dtype=float)))
        new = cell(torch.cat([x, c], dim=1), h)
    o = torch.cat([new, c, x], dim=1).numpy() @ np.asarray(params["W_o"], dtype=float).T
    o = o + np.asarray(params["b_o"], dtype=float)
    return o - np.logaddexp.reduce(o, axis=1, keepdims=True), new.numpy(), log_weights


def step_with_torch_gru_cell(x, h_prev, S, lengths, past, params):
    """The functional torch.gru_cell, which nn.GRUCell calls."""
    log_weights, c = log_attend(scores(h_prev, S, past, params), lengths, S)
    t = lambda a: torch.tensor(np.asarray(a, dtype=float))  # noqa: E731
    x, h, c = t(x), t(h_prev), t(c)
    new = torch.gru_cell(
        torch.cat([x, c], dim=1),
        h,
        t(params["W_ih"]),
        t(params["W_hh"]),
        t(params["b_ih"]),
        t(params["b_hh"]),
    )
    o = torch.cat([new, c, x], dim=1) @ t(params["W_o"]).T + t(params["b_o"])
    return torch.log_softmax(o, dim=1).numpy(), new.numpy(), log_weights


@pytest.fixture
def course_decoding(monkeypatch):
    """A stand-in for Lecture 4's course.decoding (not on this branch), with a beam_search of
    the same rules."""
    module = types.ModuleType("course.decoding")
    module.beam_search = hidden.exact_beam_search
    module.greedy_search = hidden.greedy_search
    monkeypatch.setitem(sys.modules, "course.decoding", module)
    return module


def test_shortcut_implementations_are_right_outside_the_traps():
    rng = np.random.default_rng(0)
    e, lengths, S = rng.normal(size=(3, 5)), np.array([5, 2, 3]), rng.normal(size=(3, 5, 4))
    for shortcut in (
        log_attend_with_torch_log_softmax,
        log_attend_with_torch_logsumexp,
        log_attend_with_course_masked_softmax,
    ):
        for mine, theirs in zip(
            log_attend(e, lengths, S, 0.7), shortcut(e, lengths, S, 0.7), strict=True
        ):
            np.testing.assert_allclose(theirs, mine, atol=1e-12)
    h, x, past = rng.normal(size=(3, 2)), rng.normal(size=(3, 3)), hidden._past(rng, lengths, 2, 5)
    params = hidden._step_params(rng, 2, 4, 3, 3, 6, 1.0)
    for shortcut in (step_with_gru_cell, step_with_torch_gru_cell):
        for mine, theirs in zip(
            decoder_step(x, h, S, lengths, past, params),
            shortcut(x, h, S, lengths, past, params),
            strict=True,
        ):
            np.testing.assert_allclose(theirs, mine, atol=1e-12)


def test_checks_reject_shortcuts(course_decoding):
    cases = [
        (
            hidden.check_log_attention,
            log_attend_with_torch_log_softmax,
            "log_attention",
            "torch.log_softmax",
        ),
        (
            hidden.check_log_attention,
            log_attend_with_torch_logsumexp,
            "log_attention",
            "torch.logsumexp",
        ),
        (
            hidden.check_log_attention,
            log_attend_with_course_masked_softmax,
            "log_attention",
            "course.models.seq2seq.masked_softmax",
        ),
        (hidden.check_bahdanau_step, step_with_gru_cell, "bahdanau_step", "torch.nn.GRUCell"),
        (
            hidden.check_bahdanau_step,
            step_with_torch_gru_cell,
            "bahdanau_step",
            "torch.gru_cell",
        ),
    ]

    def search_with_course(table, bos, eos, beam_size, max_len, alpha=0.0):
        from course.decoding import beam_search

        return beam_search(hidden._step_of(table), bos, eos, beam_size, max_len, alpha)

    cases.append(
        (
            hidden.check_beam_search,
            search_with_course,
            "beam_search_on_table",
            "course.decoding.beam_search",
        )
    )
    for check, function, name, called in cases:
        with np.errstate(all="ignore"):
            expect_shortcut(functools.partial(check, as_student(function, name)), name, called)


REQUIRED_TRAPS = {
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.MultiheadAttention",
    "torch.softmax",
    "torch.log_softmax",
    "torch.logsumexp",
    "torch.Tensor.softmax",
    "torch.Tensor.log_softmax",
    "torch.Tensor.logsumexp",
    "torch.nn.functional.softmax",
    "torch.nn.functional.log_softmax",
    "torch.special.logsumexp",
    "torch.nn.GRUCell",
    "torch.nn.GRU",
    "torch.gru_cell",
    "torch.autograd.grad",
    "torch.Tensor.backward",
    "course.models.seq2seq.masked_softmax",
    "course.models.seq2seq.Attention",
    "course.models.seq2seq.Seq2Seq",
    "course.decoding.beam_search",
    "course.models.recurrent.CharLSTM",
}


def test_traps_cover_the_routines_that_would_do_the_work():
    expect_traps(hidden, REQUIRED_TRAPS)
    labels = [label for _, _, label in hidden.shortcut_targets()]
    assert len(labels) == len(set(labels)), "a label names two targets"


def test_lecture_4_helpers_and_scipy_are_trapped_by_name_once_they_exist(
    monkeypatch, course_decoding
):
    seq2seq = types.ModuleType("course.models.seq2seq")
    seq2seq.Seq2Seq = type("Seq2Seq", (), {})
    monkeypatch.setitem(sys.modules, "course.models.seq2seq", seq2seq)
    special = types.ModuleType("scipy.special")
    special.softmax = special.log_softmax = special.logsumexp = lambda *a, **k: None
    monkeypatch.setitem(sys.modules, "scipy.special", special)
    labels = [label for _, _, label in hidden.shortcut_targets()]
    assert {
        "course.decoding.beam_search",
        "course.decoding.greedy_search",
        "course.models.seq2seq.Seq2Seq",
        "scipy.special.softmax",
        "scipy.special.log_softmax",
        "scipy.special.logsumexp",
    } <= set(labels)
    assert len(labels) == len(set(labels))
