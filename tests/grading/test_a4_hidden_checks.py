"""Assignment 4: the hidden checks reject plausible bugs and the library shortcuts.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps) is in ``test_assignments.py``. Here: independent implementations (scores one
pair at a time, softmax through log-sum-exp, beam search with ``heapq.nlargest``) with one
switch per plausible bug, each of which must fail its check with a message that names the
case; the search cases are what their labels say (exact, greedy, not exact, a tie); the
visible tests name the typical mistakes; and shortcuts through torch's softmaxes, its
attention and bilinear functions, and ``course.decoding``, which give the right answer outside
the traps and are caught inside them.
"""

from __future__ import annotations

import functools
import heapq
import math
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


def scores(
    kind,
    h,
    S,
    params=None,
    *,
    transpose_W_a=False,
    swap_additive=False,
    scale_by_H=False,
    validate=True,
    silent_kind=False,
    in_place=False,
):
    """e[b, k] one pair at a time."""
    h_in = h
    h, S = np.asarray(h, dtype=float), np.asarray(S, dtype=float)
    if kind not in ("dot", "scaled_dot", "bilinear", "additive"):
        raise ValueError("unknown kind of score" if silent_kind else f"unknown kind {kind}")
    if validate:
        if h.ndim != 2 or S.ndim != 3 or S.shape[0] != h.shape[0] or S.shape[2] != h.shape[1]:
            raise ValueError("shapes")
        H = h.shape[1]
        if kind == "bilinear" and np.shape((params or {}).get("W_a")) != (H, H):
            raise ValueError("W_a")
        if kind == "additive":
            W_1 = np.asarray((params or {}).get("W_1"))
            if W_1.ndim != 2 or W_1.shape[1] != 2 * H:
                raise ValueError("W_1")
            if np.shape(params.get("w_2")) != (W_1.shape[0],):
                raise ValueError("w_2")
    B, m, H = S.shape
    out = np.zeros((B, m))
    for b in range(B):
        for k in range(m):
            q, s = h[b], S[b, k]
            if kind == "dot":
                out[b, k] = q @ s
            elif kind == "scaled_dot":
                out[b, k] = q @ s / (H if scale_by_H else math.sqrt(H))
            elif kind == "bilinear":
                W_a = np.asarray(params["W_a"], dtype=float)
                out[b, k] = q @ (W_a.T if transpose_W_a else W_a) @ s
            else:
                pair = np.concatenate([s, q] if swap_additive else [q, s])
                W_1 = np.asarray(params["W_1"], dtype=float)
                out[b, k] = np.asarray(params["w_2"], dtype=float) @ np.tanh(W_1 @ pair)
    if in_place:
        h_in[...] = 0.0
    return out


def attend(
    e,
    lengths,
    S,
    *,
    max_over_all=False,
    ignore_lengths=False,
    additive_mask=False,
    validate=True,
):
    """The masked softmax through log-sum-exp, sentence by sentence."""
    e, S = np.asarray(e, dtype=float), np.asarray(S, dtype=float)
    lengths = np.asarray(lengths)
    if validate:
        if e.ndim != 2 or S.ndim != 3 or S.shape[:2] != e.shape:
            raise ValueError("shapes")
        if lengths.shape != (e.shape[0],) or lengths.min() < 1 or lengths.max() > e.shape[1]:
            raise ValueError("lengths")
    B, m = e.shape
    weights = np.zeros((B, m))
    for b in range(B):
        n = m if ignore_lengths else int(lengths[b])
        if additive_mask:  # -1e4 added at the padding, then a softmax over every position
            row = e[b] - 1e4 * (np.arange(m) >= lengths[b])
            weights[b] = np.exp(row - row.max()) / np.exp(row - row.max()).sum()
            continue
        row = e[b, :n]
        if max_over_all:
            lifted = np.exp(row - e[b].max())
            weights[b, :n] = lifted / lifted.sum()
        else:
            weights[b, :n] = np.exp(row - np.logaddexp.reduce(row))
    return weights, np.einsum("bk,bkh->bh", weights, S)


def output(
    kind,
    h,
    S,
    lengths,
    params,
    *,
    swap_halves=False,
    probabilities=False,
    naive=False,
    no_tanh=False,
    validate=True,
):
    """Luong's output from the functions above."""
    weights, context = attend(scores(kind, h, S, params), lengths, S)
    h = np.asarray(h, dtype=float)
    H = h.shape[1]
    W_c, b_c, W_o, b_o = (np.asarray(params[k], dtype=float) for k in ("W_c", "b_c", "W_o", "b_o"))
    if validate:
        if W_c.shape != (H, 2 * H) or b_c.shape != (H,):
            raise ValueError("W_c or b_c")
        if W_o.ndim != 2 or W_o.shape[1] != H or b_o.shape != (W_o.shape[0],):
            raise ValueError("W_o or b_o")
    pair = np.concatenate([h, context] if swap_halves else [context, h], axis=1)
    z = pair @ W_c.T + b_c
    o = (z if no_tanh else np.tanh(z)) @ W_o.T + b_o
    if naive:
        log_probs = o - np.log(np.exp(o).sum(axis=1, keepdims=True))
    else:
        log_probs = o - np.logaddexp.reduce(o, axis=1, keepdims=True)
    return (np.exp(log_probs) if probabilities else log_probs), weights


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
    hidden.check_attention_scores(as_student(scores, "attention_scores"))
    hidden.check_attend(as_student(attend, "attend"))
    hidden.check_decoder_output(as_student(output, "decoder_output"))
    hidden.check_beam_search(as_student(search_on_table, "beam_search_on_table"))
    assert capsys.readouterr().out.count("hidden cases passed") == 4


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


ATTEND = r"^attend, B=4, m=6, lengths 6, 1, 3, 5, huge scores"
OUTPUT = r"^decoder_output, scaled_dot, B=3, m=5, H=4, vocab_size=6, lengths 5, 2, 4"
EXHAUSTIVE = r"^beam_search, exhaustive, vocab_size=3, max_len=4, alpha=0.5"


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        (
            {"transpose_W_a": True},
            Failure(
                r"^attention_scores, bilinear, .*W_a far from symmetric$",
                r'^attention_scores\("bilinear", h, S, params\) differs',
                r"s_k\^T W_a h_t",
            ),
        ),
        (
            {"swap_additive": True},
            Failure(
                r"^attention_scores, additive, B=3, m=4, H=3, A=5$",
                r'^attention_scores\("additive", h, S, params\) differs',
                r"W_1 \[s_k; h_t\]",
            ),
        ),
        (
            {"scale_by_H": True},
            Failure(
                r"^attention_scores, scaled_dot, B=2, m=4, H=9$",
                r'^attention_scores\("scaled_dot", h, S, params\) differs',
                "divided by H",
            ),
        ),
        ({"silent_kind": True}, Failure(None, '^attention_scores with kind "cosine"', "'cosine'")),
        (
            {"validate": False},
            Failure(
                None, "^attention_scores with S with B = 3 rows for h with B = 2", "IndexError"
            ),
        ),
        ({"in_place": True}, Failure("^attention_scores, dot, ", r"in place: h\b")),
    ],
    ids=row_id,
)
def test_check_attention_scores_rejects_bug(bugs, failure):
    student = as_student(scores, "attention_scores", **bugs)
    expect_failure(lambda: hidden.check_attention_scores(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"max_over_all": True}, Failure(ATTEND, "^weights contains nan")),
        (
            {"ignore_lengths": True},
            Failure(ATTEND, r"^the weight of padded position \[1, 1\]", "exactly 0"),
        ),
        (
            {"additive_mask": True},
            Failure(ATTEND, r"^the weight of padded position \[1, 1\]", "exactly 0"),
        ),
        (
            {"validate": False},
            Failure(None, r"^attend with lengths \[3, 0\]", "should raise ValueError", "returned"),
        ),
    ],
    ids=row_id,
)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_check_attend_rejects_bug(bugs, failure):
    student = as_student(attend, "attend", **bugs)
    with np.errstate(all="ignore"):
        expect_failure(lambda: hidden.check_attend(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        (
            {"swap_halves": True},
            Failure(OUTPUT, "^log_probs differs", r"\[c_t; h_t\] swapped"),
        ),
        (
            {"probabilities": True},
            Failure(r"^decoder_output, dot, B=1, ", "^log_probs differs", "matches probabilities"),
        ),
        (
            {"naive": True},
            Failure(r"^decoder_output, bilinear, .*logits near 1e4$", "^log_probs contains"),
        ),
        ({"no_tanh": True}, Failure(OUTPUT, "^log_probs differs")),
        (
            {"validate": False},
            Failure(None, r"^decoder_output with b_c of shape \(1,\)", "should raise"),
        ),
    ],
    ids=row_id,
)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_check_decoder_output_rejects_bug(bugs, failure):
    student = as_student(output, "decoder_output", **bugs)
    with np.errstate(all="ignore"):
        expect_failure(lambda: hidden.check_decoder_output(student), failure)


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
            "test_attention_scores_visible",
            {"attention_scores": as_student(scores, "attention_scores", transpose_W_a=True)},
            Failure(None, r'^attention_scores\("bilinear", h, S, params\) differs'),
        ),
        (
            "test_attention_scores_visible",
            {"attention_scores": as_student(scores, "attention_scores", swap_additive=True)},
            Failure(None, r'^attention_scores\("additive", h, S, params\) differs'),
        ),
        (
            "test_attend_visible",
            {"attend": as_student(attend, "attend", max_over_all=True)},
            Failure(None, r"^weights contains nan at \[1, 0\]"),
        ),
        (
            "test_attend_visible",
            {"attend": as_student(attend, "attend", ignore_lengths=True)},
            Failure(None, "^weights differs", r"by 1.0e\+00 at \[1, 2\]"),
        ),
        (
            "test_decoder_output_visible",
            {"decoder_output": as_student(output, "decoder_output", swap_halves=True)},
            Failure(None, "^log_probs differs"),
        ),
        (
            "test_decoder_output_visible",
            {"decoder_output": as_student(output, "decoder_output", naive=True)},
            Failure(None, r"^log_probs with b_o\[0\] = 1000 contains -?inf"),
        ),
        (
            "test_beam_search_visible",
            {
                "beam_search_on_table": as_student(
                    search_on_table, "beam_search_on_table", ignore_alpha=True
                )
            },
            Failure(
                None,
                r"^beam_search\(beam_size=3, max_len=3, alpha=1.0\)",
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
                None,
                r"^beam_search\(beam_size=3, max_len=3, alpha=0.0\)",
                "found 'yes'; expected 'yes </s>'",
            ),
        ),
    ],
)


def test_visible_tests_pass_with_the_independent_implementations():
    run_visible(
        ASSIGNMENT, "test_attention_scores_visible", attention_scores=as_student(scores, "x")
    )
    run_visible(ASSIGNMENT, "test_attend_visible", attend=as_student(attend, "attend"))
    run_visible(ASSIGNMENT, "test_decoder_output_visible", decoder_output=as_student(output, "x"))
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
# Shortcuts: torch's softmaxes and attention, course.decoding, are trapped
# --------------------------------------------------------------------------------------------


def scores_with_torch_bilinear(kind, h, S, params=None):
    if kind != "bilinear":
        return scores(kind, h, S, params)
    query, keys = torch.tensor(np.asarray(h, dtype=float)), torch.tensor(np.asarray(S, dtype=float))
    W_a = torch.tensor(np.asarray(params["W_a"], dtype=float))[None]  # (1, H, H)
    expanded = query[:, None, :].expand_as(keys).contiguous()
    return torch.nn.functional.bilinear(expanded, keys, W_a)[..., 0].numpy()


def attend_with_torch_softmax(e, lengths, S):
    e, S = np.asarray(e, dtype=float), np.asarray(S, dtype=float)
    real = torch.arange(e.shape[1])[None, :] < torch.tensor(np.asarray(lengths))[:, None]
    weights = torch.softmax(torch.tensor(e).masked_fill(~real, float("-inf")), dim=1)
    states = torch.tensor(S).masked_fill(~real[:, :, None], 0.0)
    return weights.numpy(), torch.einsum("bk,bkh->bh", weights, states).numpy()


def output_with_torch_log_softmax(kind, h, S, lengths, params):
    weights, context = attend(scores(kind, h, S, params), lengths, S)
    pair = np.concatenate([context, np.asarray(h, dtype=float)], axis=1)
    o = np.tanh(pair @ np.asarray(params["W_c"]).T + params["b_c"]) @ np.asarray(params["W_o"]).T
    o = o + params["b_o"]
    return torch.log_softmax(torch.tensor(o), dim=1).numpy(), weights


def output_with_sdpa(kind, h, S, lengths, params):
    """The context from F.scaled_dot_product_attention when the score is the scaled dot."""
    log_probs, weights = output(kind, h, S, lengths, params)
    if kind == "scaled_dot":
        real = np.arange(np.shape(S)[1])[None, :] < np.asarray(lengths)[:, None]
        torch.nn.functional.scaled_dot_product_attention(
            torch.tensor(np.asarray(h, dtype=float))[:, None],
            torch.tensor(np.asarray(S, dtype=float)),
            torch.tensor(np.asarray(S, dtype=float)),
            attn_mask=torch.tensor(real)[:, None],
        )
    return log_probs, weights


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
    h, S = rng.normal(size=(3, 4)), rng.normal(size=(3, 5, 4))
    params = {"W_a": rng.normal(size=(4, 4))}
    np.testing.assert_allclose(
        scores_with_torch_bilinear("bilinear", h, S, params),
        scores("bilinear", h, S, params),
        atol=1e-12,
    )
    e, lengths = rng.normal(size=(3, 5)), np.array([5, 2, 3])
    for mine, theirs in zip(
        attend(e, lengths, S), attend_with_torch_softmax(e, lengths, S), strict=True
    ):
        np.testing.assert_allclose(theirs, mine, atol=1e-12)
    params |= {
        "W_c": rng.normal(size=(4, 8)),
        "b_c": rng.normal(size=4),
        "W_o": rng.normal(size=(6, 4)),
        "b_o": rng.normal(size=6),
    }
    np.testing.assert_allclose(
        output_with_torch_log_softmax("dot", h, S, lengths, params)[0],
        output("dot", h, S, lengths, params)[0],
        atol=1e-12,
    )


def test_checks_reject_shortcuts(course_decoding):
    cases = [
        (
            hidden.check_attention_scores,
            scores_with_torch_bilinear,
            "attention_scores",
            "torch.nn.functional.bilinear",
        ),
        (hidden.check_attend, attend_with_torch_softmax, "attend", "torch.softmax"),
        (
            hidden.check_decoder_output,
            output_with_torch_log_softmax,
            "decoder_output",
            "torch.log_softmax",
        ),
        (
            hidden.check_decoder_output,
            output_with_sdpa,
            "decoder_output",
            "torch.nn.functional.scaled_dot_product_attention",
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
        expect_shortcut(functools.partial(check, as_student(function, name)), name, called)


REQUIRED_TRAPS = {
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.MultiheadAttention",
    "torch.softmax",
    "torch.log_softmax",
    "torch.logsumexp",
    "torch.Tensor.softmax",
    "torch.Tensor.log_softmax",
    "torch.nn.functional.softmax",
    "torch.nn.functional.log_softmax",
    "torch.special.logsumexp",
    "torch.nn.functional.bilinear",
    "torch.autograd.grad",
    "torch.Tensor.backward",
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
