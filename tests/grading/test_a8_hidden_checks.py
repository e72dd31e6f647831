"""Assignment 8: the hidden checks reject plausible bugs and the course's and libraries' shortcuts.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps) is in ``test_assignments.py``. Here: independent implementations (softmax
through ``np.logaddexp.reduce``, draws by ``np.searchsorted``, min-p by log-probabilities
against log p_base plus the largest, typical sampling by a stable sort of the distances from
the entropy and ``np.searchsorted``, the sliding-window KV step through ``np.einsum``) with
one switch per plausible bug, each of which must fail its check with a message that names
the case; the hidden checks' references agree with ``transformers``' logits warpers (min-p,
typical) and sliding-window mask; the min-p cases never put p_base within rounding of a
token's ratio to the top, nor the typical cases p within 1e-9 of a token's mass ahead; the
visible tests name the typical mistakes; shortcuts through ``course.decoding``,
``transformers`` and torch are caught inside the traps; and the numbers of Part F's model
answer are those its exploration cell prints.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from autograder.hidden import a8_gpt_decoding as hidden
from tests.grading.bug_injection import (
    Failure,
    expect_failure,
    expect_traps,
    reference_namespace,
    row_id,
    run_visible,
    shortcut_tests,
    solution,
    visible_mistake_tests,
)
from tests.grading.solution_loader import as_student, run_cell

ASSIGNMENT = "a8_gpt_decoding"

pytestmark = pytest.mark.usefixtures("one_thread")

# --------------------------------------------------------------------------------------------
# Independent implementations with bug switches
# --------------------------------------------------------------------------------------------


def _logits(logits, *, copy=True):
    z = np.array(logits, dtype=np.float64) if copy else np.asarray(logits)
    if z.ndim == 0 or z.shape[-1] == 0:
        raise ValueError("shape")
    if np.isnan(z).any() or np.isposinf(z).any():
        raise ValueError("nan or +inf")
    if np.isneginf(z).all(axis=-1).any():
        raise ValueError("a row of -inf")
    return z


@np.errstate(all="ignore")  # the bug switches overflow and divide by zero on purpose
def softmax_rows(
    logits,
    temperature,
    *,
    no_shift=False,
    times_tau=False,
    keep_dtype=False,
    in_place=False,
    accept_zero=False,
):
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float, np.number)):
        raise ValueError("temperature")
    if not np.isfinite(temperature) or temperature < 0 or (temperature == 0 and not accept_zero):
        raise ValueError("temperature")
    z = _logits(logits, copy=not in_place)
    dtype = np.asarray(logits).dtype if keep_dtype else np.float64
    if in_place:
        z /= temperature
    else:
        z = z * temperature if times_tau else z / temperature
    if no_shift:
        e = np.exp(z)
        return (e / e.sum(axis=-1, keepdims=True)).astype(dtype)
    total = np.logaddexp.reduce(z, axis=-1, keepdims=True)
    return np.exp(z - total).astype(dtype)


def draw(probs, u, *, inclusive=False, unscaled=False, int32=False, loose_sum=False):
    table = np.array(probs, dtype=np.float64)
    u = np.array(u, dtype=np.float64)
    if table.ndim != 2 or table.shape[1] < 1 or u.shape != (table.shape[0],):
        raise ValueError("shapes")
    if not np.isfinite(table).all() or table.min() < 0:
        raise ValueError("probabilities")
    if np.any(np.abs(table.sum(axis=1) - 1) > (1e-2 if loose_sum else 1e-6)):
        raise ValueError("sums")
    if np.any(~(u >= 0) | ~(u < 1)):
        raise ValueError("u")
    out = []
    for row, value in zip(table, u, strict=True):
        c = np.cumsum(row)
        target = value if unscaled else value * c[-1]
        out.append(np.searchsorted(c, target, side="left" if inclusive else "right"))
    return np.array(out, dtype=np.int32 if int32 else np.int64)


@np.errstate(all="ignore")  # the bug switches overflow and divide by zero on purpose
def min_p(
    logits,
    p_base,
    *,
    max_logit=False,
    unscaled=False,
    strict=False,
    as_logits=False,
    unnormalised=False,
    accept_above_one=False,
):
    if isinstance(p_base, bool) or not isinstance(p_base, (int, float, np.number)):
        raise ValueError("p_base")
    if not (0 <= p_base <= (np.inf if accept_above_one else 1)):
        raise ValueError("p_base")
    z = _logits(logits)
    log_probs = z - np.logaddexp.reduce(z, axis=-1, keepdims=True)
    if max_logit:  # the threshold scales the largest logit, not the largest probability
        keep = z >= p_base * z.max(axis=-1, keepdims=True)
    else:  # log pi_i >= log p_base + log max pi (unscaled: against p_base alone)
        floor = np.log(p_base) + (0.0 if unscaled else log_probs.max(axis=-1, keepdims=True))
        keep = log_probs > floor if strict else log_probs >= floor
    if as_logits:
        return np.where(keep, z, -np.inf)
    kept = np.where(keep, np.exp(log_probs), 0.0)
    return kept if unnormalised else kept / kept.sum(axis=-1, keepdims=True)


@np.errstate(all="ignore")  # the bug switches overflow and divide by zero on purpose
def typical(
    logits,
    p,
    *,
    signed=False,
    bits=False,
    zeros_in_entropy=False,
    drop_crossing=False,
    sorted_ties=False,
    unnormalised=False,
    as_logits=False,
    accept_p_zero=False,
):
    if isinstance(p, bool) or not isinstance(p, (int, float, np.number)):
        raise ValueError("p")
    if not (0 <= p <= 1) or (p == 0 and not accept_p_zero):
        raise ValueError("p")
    z = _logits(logits)
    log_probs = z - np.logaddexp.reduce(z, axis=-1, keepdims=True)  # -inf where pi = 0
    probs = np.exp(log_probs)
    terms = probs * log_probs if zeros_in_entropy else np.where(probs > 0, probs * log_probs, 0)
    entropy = -np.sum(terms, axis=-1, keepdims=True) / (np.log(2) if bits else 1.0)
    offset = -log_probs - entropy  # the surprisal minus the entropy
    distance = offset if signed else np.abs(offset)
    flat_d, flat_p = distance.reshape(-1, z.shape[-1]), probs.reshape(-1, z.shape[-1])
    keep = np.zeros(flat_d.shape, dtype=bool)
    for row, (gaps, values) in enumerate(zip(flat_d, flat_p, strict=True)):
        order = np.argsort(gaps, kind="stable")
        running = np.concatenate([[0.0], np.cumsum(values[order])])  # mass of the first k
        if sorted_ties:  # the sorted tokens up to the one that crosses p, ties cut by the sort
            crossing = min(int(np.count_nonzero(running[1:] < p)), len(gaps) - 1)
            keep[row, order[: crossing + 1]] = True
        else:  # the mass of the tokens strictly closer: the running sum before the first tie
            ahead = running[np.searchsorted(gaps[order], gaps, side="left")]
            keep[row] = (ahead + values < p) if drop_crossing else (ahead < p)
        if p == 1:
            keep[row] = True
    keep = keep.reshape(z.shape)
    if as_logits:
        return np.where(keep, z, -np.inf)
    kept = np.where(keep, probs, 0.0)
    return kept if unnormalised else kept / kept.sum(axis=-1, keepdims=True)


@np.errstate(all="ignore")  # the bug switches overflow and divide by zero on purpose
def attend_step(
    keys,
    values,
    q,
    k,
    v,
    window,
    *,
    no_scale=False,
    scale_by_dv=False,
    cache_only=False,
    prepend=False,
    no_shift=False,
    keep_dtype=False,
    window_plus_one=False,
    narrow=False,
    first_rows=False,
    accept_float_window=False,
    accept_long_cache=False,
):
    kinds = (int, np.integer, float) if accept_float_window else (int, np.integer)
    if isinstance(window, bool) or not isinstance(window, kinds) or window < 1:
        raise ValueError("window")
    window = int(window)
    keys, values = np.asarray(keys), np.asarray(values)
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    if keys.ndim != 2 or values.ndim != 2 or len(keys) != len(values):
        raise ValueError("caches")
    if len(keys) > window and not accept_long_cache:
        raise ValueError("a cache longer than the window")
    d_k, d_v = keys.shape[1], values.shape[1]
    if d_k < 1 or d_v < 1 or q.shape != (d_k,) or k.shape != (d_k,) or v.shape != (d_v,):
        raise ValueError("vectors")
    dtype = np.result_type(keys, k) if keep_dtype else np.float64
    parts_k = [k[None].astype(dtype), keys.astype(dtype)]
    parts_v = [v[None].astype(dtype), values.astype(dtype)]
    if not prepend:
        parts_k, parts_v = parts_k[::-1], parts_v[::-1]
    whole_k, whole_v = np.concatenate(parts_k), np.concatenate(parts_v)  # up to window + 1 rows
    if first_rows:  # the newest rows dropped instead of the oldest
        new_k, new_v = whole_k[:window], whole_v[:window]
    else:
        new_k, new_v = whole_k[-window:], whole_v[-window:]
    # the rows the new position attends to: window_plus_one trims only the old cache
    span = len(whole_k) if window_plus_one else max(window - 1, 1) if narrow else window
    seen_k, seen_v = (new_k, new_v) if first_rows else (whole_k[-span:], whole_v[-span:])
    if cache_only and len(keys):
        seen_k, seen_v = keys, values
    scale = np.sqrt(d_v if scale_by_dv else d_k)
    scores = np.einsum("td,d->t", seen_k.astype(np.float64), q.astype(np.float64))
    scores = scores if no_scale else scores / scale
    log_weights = scores if no_shift else scores - np.logaddexp.reduce(scores)
    weights = np.exp(log_weights)
    if no_shift:
        weights = weights / weights.sum()
    z = np.einsum("t,td->d", weights, seen_v.astype(np.float64))
    return z.astype(dtype), new_k, new_v


# --------------------------------------------------------------------------------------------
# The independent implementations pass; the references agree with the libraries and the course
# --------------------------------------------------------------------------------------------


def test_the_independent_implementations_pass_too(capsys):
    hidden.check_temperature_probs(as_student(softmax_rows, "temperature_probs"))
    hidden.check_sample_tokens(as_student(draw, "sample_tokens"))
    hidden.check_min_p_probs(as_student(min_p, "min_p_probs"))
    hidden.check_typical_probs(as_student(typical, "typical_probs"))
    hidden.check_kv_attention_step(as_student(attend_step, "kv_attention_step"))
    assert capsys.readouterr().out.count("hidden cases passed") == 5


def _warped(warper, logits) -> np.ndarray:
    """A transformers logits warper applied to each row (as (N, |V|) float64 scores)."""
    z = torch.tensor(np.array(logits, dtype=np.float64))
    flat = z.reshape(-1, z.shape[-1])
    return warper(None, flat).reshape(z.shape).numpy()


def test_the_references_agree_with_transformers_warpers():
    from transformers import MinPLogitsWarper, TemperatureLogitsWarper, TypicalLogitsWarper

    for case in hidden.temperature_cases():
        tau = float(case.temperature)
        scaled = _warped(TemperatureLogitsWarper(tau), case.logits)
        expected = torch.tensor(scaled).softmax(-1).numpy()
        np.testing.assert_allclose(hidden.reference_softmax(case.logits, tau), expected,
                                   atol=1e-12, rtol=1e-8, err_msg=case.label)  # fmt: skip
    for case in hidden.min_p_cases():
        p_base = float(case.p_base)
        ours = hidden.kept_by_ratio(case.logits, p_base) & ~np.isneginf(case.logits)
        theirs = np.isfinite(_warped(MinPLogitsWarper(p_base), case.logits))
        assert np.array_equal(ours, theirs), case.label
    for case in hidden.typical_cases():
        p = float(case.p)
        if p == 1.0:
            continue  # TypicalLogitsWarper refuses a mass of 1; it would keep every token
        ours = hidden.kept_by_typicality(case.logits, p) & ~np.isneginf(case.logits)
        theirs = np.isfinite(_warped(TypicalLogitsWarper(p), case.logits))
        assert np.array_equal(ours, theirs), case.label


def test_no_typical_case_lets_rounding_decide():
    for case in hidden.typical_cases():
        assert hidden.typical_margin(case.logits, float(case.p)) > 1e-9, case.label


def test_the_typical_cases_do_what_their_labels_say():
    """The most likely token is removed in every row of the case that says so, and the tie
    cases are ones where cutting ties at the sort's crossing keeps fewer tokens."""
    for case in hidden.typical_cases():
        logits, p, label = case.logits, case.p, case.label
        keep = hidden.kept_by_typicality(logits, float(p)).reshape(-1, np.shape(logits)[-1])
        probs = hidden.reference_softmax(logits).reshape(keep.shape)
        if "most likely token less typical" in label:
            assert not keep[np.arange(len(keep)), probs.argmax(axis=1)].any(), label
        if "ties at the crossing" in label:
            cut = typical(logits, p, sorted_ties=True).reshape(keep.shape) > 0
            assert (cut.sum(axis=1) < keep.sum(axis=1)).any(), label


def test_no_min_p_case_puts_p_base_within_rounding_of_a_ratio():
    for case in hidden.min_p_cases():
        assert hidden.min_p_margin(case.logits, float(case.p_base)) > 1e-9, case.label


def test_the_min_p_tie_cases_keep_tied_tokens_together():
    """In each case labelled with ties, some row keeps two or more tokens of the smallest kept
    probability: a rule that kept one of a tied group would keep fewer."""
    for case in hidden.min_p_cases():
        if "tie" not in case.label:
            continue
        ratios = hidden.ratios_to_top(case.logits).reshape(-1, np.shape(case.logits)[-1])
        keep = hidden.kept_by_ratio(case.logits, float(case.p_base)).reshape(ratios.shape)
        lowest = [ratios[r][keep[r]].min() for r in range(len(ratios))]
        tied = [np.count_nonzero(ratios[r][keep[r]] == lowest[r]) for r in range(len(ratios))]
        assert max(tied) >= 2, case.label


def test_the_kv_reference_is_attention_with_a_band_mask():
    """The reference against torch's attention under the sliding-window mask of transformers'
    Mistral-style models (position i attends to j with i - window < j <= i)."""
    from transformers.masking_utils import sliding_window_causal_mask_function

    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(3, 9, 4))
    tensors = [torch.tensor(a) for a in (q, k, v)]
    rows, cols = (torch.tensor(a) for a in np.indices((9, 9)))
    zero = torch.tensor(0)
    for window in (1, 2, 3, 5):
        band = sliding_window_causal_mask_function(window)(zero, zero, rows, cols)  # True: attend
        assert band.sum().item() == sum(min(i + 1, window) for i in range(9))
        expected = torch.nn.functional.scaled_dot_product_attention(*tensors, attn_mask=band)
        np.testing.assert_allclose(
            hidden.banded_attention_rows(q, k, v, window), expected.numpy(), atol=1e-12
        )
    causal = torch.nn.functional.scaled_dot_product_attention(*tensors, is_causal=True)
    np.testing.assert_allclose(hidden.banded_attention_rows(q, k, v, 9), causal.numpy(), atol=1e-12)


def test_the_kv_sequences_fill_the_window_and_give_no_longer_cache():
    """Every sequence but the one longer than its window runs past a full cache (where the
    oldest position must drop out), and no prompt exceeds its window."""
    for case in hidden.kv_sequences():
        window, label = int(case.window), case.label
        assert case.prompt <= window, label
        assert len(case.queries) > window or "whole causal triangle" in label or "t = 0" in label, (
            label
        )


def test_the_inverse_cdf_reference_on_exact_boundaries():
    probs = np.tile([0.25, 0.5, 0.0, 0.25], (5, 1))
    assert hidden.inverse_cdf(probs, [0.0, 0.25, 0.5, 0.75, hidden.BELOW_ONE]).tolist() == [
        0, 1, 1, 3, 3,
    ]  # fmt: skip


# --------------------------------------------------------------------------------------------
# Plausible bugs
# --------------------------------------------------------------------------------------------


BATCH = r"^temperature_probs, a batch \(32, 50\), τ = 0.7$"
MIN_P = r"^min_p_probs, a batch \(16, 30\), p_base = 0.1$"
TYPICAL = r"^typical_probs, a batch \(20, 40\), p = 0.9$"
D8 = r"^kv_attention_step, window 3, d_k = d_v = 8, 10 positions .*, step at position {} \({} cached\)$"


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"no_shift": True}, Failure("^temperature_probs, logits near \\+10,000, τ = 1$", r"^temperature_probs\(logits, 1\) contains nan")),
        ({"times_tau": True}, Failure(BATCH, r"^temperature_probs\(logits, 0.7\) differs", r"softmax\(z / τ\)")),
        ({"keep_dtype": True}, Failure("^temperature_probs, float32 logits$", "^the probabilities should be float64", "got dtype float32")),
        ({"in_place": True}, Failure(BATCH, r"in place: logits\b")),
        ({"accept_zero": True}, Failure(None, "^temperature_probs with τ = 0", "should raise ValueError")),
    ],
    ids=row_id,
)  # fmt: skip
def test_check_temperature_probs_rejects_bug(bugs, failure):
    student = as_student(softmax_rows, "temperature_probs", **bugs)
    expect_failure(lambda: hidden.check_temperature_probs(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"inclusive": True}, Failure("^sample_tokens, u on exact boundaries ", r"^\d+ of 11 tokens differ", "row 1: u = 0.125 gives token 0, expected 1")),
        ({"unscaled": True}, Failure("^sample_tokens, rows summing to 1 ± 5e-7, ", r"^\d+ of \d+ tokens differ", "gives token 6, expected 5")),
        ({"int32": True}, Failure("^sample_tokens, random distributions ", "^the tokens should be int64", "got dtype int32")),
        ({"loose_sum": True}, Failure(None, "^sample_tokens with a row summing to 0.999", "should raise ValueError")),
    ],
    ids=row_id,
)  # fmt: skip
def test_check_sample_tokens_rejects_bug(bugs, failure):
    student = as_student(draw, "sample_tokens", **bugs)
    expect_failure(lambda: hidden.check_sample_tokens(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"max_logit": True}, Failure(MIN_P, r"^min_p_probs\(logits, 0.1\)(: row \d+ keeps tokens .* but the rule keeps| contains nan)")),
        ({"unscaled": True}, Failure(MIN_P, r"^min_p_probs\(logits, 0.1\): row \d+ keeps tokens .* but the rule keeps")),
        ({"strict": True}, Failure("^min_p_probs, two tokens tied at the top, p_base = 1$", r"^min_p_probs\(logits, 1\) contains nan")),
        ({"as_logits": True}, Failure(MIN_P, r"^min_p_probs\(logits, 0.1\) contains -?inf")),
        ({"unnormalised": True}, Failure(MIN_P, r"^min_p_probs\(logits, 0.1\) differs", "renormalised")),
        ({"accept_above_one": True}, Failure(None, "^min_p_probs with p_base = 1.5", "should raise ValueError")),
    ],
    ids=row_id,
)  # fmt: skip
def test_check_min_p_probs_rejects_bug(bugs, failure):
    student = as_student(min_p, "min_p_probs", **bugs)
    expect_failure(lambda: hidden.check_min_p_probs(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"signed": True}, Failure(r"^typical_probs, \|V\| = 5,000, 3 rows, p = 0.95$", r"^typical_probs\(logits, 0.95\): row \d+ keeps tokens .* but the rule keeps")),
        ({"bits": True}, Failure(TYPICAL, r"^typical_probs\(logits, 0.9\): row \d+ keeps tokens .* but the rule keeps")),
        ({"zeros_in_entropy": True}, Failure(r"^typical_probs, -inf logits \(5 finite per row\), p = 0.8$", r"^typical_probs\(logits, 0.8\): row 0 keeps tokens \[0, 1, 2, 3, 4\] but the rule keeps \[0, 1, 4\]")),
        ({"drop_crossing": True}, Failure(TYPICAL, r"^typical_probs\(logits, 0.9\)(: row \d+ keeps tokens .* but the rule keeps| contains nan)")),
        ({"sorted_ties": True}, Failure("^typical_probs, ties at the crossing of p = 0.25$", r"^typical_probs\(logits, 0.25\): row 0 keeps tokens \[[123], [123]\]", r"the rule keeps \[1, 2, 3\]")),
        ({"unnormalised": True}, Failure(TYPICAL, r"^typical_probs\(logits, 0.9\) differs")),
        ({"as_logits": True}, Failure(TYPICAL, r"^typical_probs\(logits, 0.9\) contains -?inf")),
        ({"accept_p_zero": True}, Failure(None, "^typical_probs with p = 0", "should raise ValueError")),
    ],
    ids=row_id,
)  # fmt: skip
def test_check_typical_probs_rejects_bug(bugs, failure):
    student = as_student(typical, "typical_probs", **bugs)
    expect_failure(lambda: hidden.check_typical_probs(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"no_scale": True}, Failure(D8.format(1, 1), "^z at position 1 differs", "row 1 of causal attention with a band of 3")),
        ({"scale_by_dv": True}, Failure(r"^kv_attention_step, window 5, d_k = 4, d_v = 6, 12 positions, step at position 1 ", "^z at position 1 differs")),
        ({"cache_only": True}, Failure(D8.format(1, 1), "^z at position 1 differs")),
        ({"prepend": True}, Failure(D8.format(1, 1), r"^new_keys \(window 3, position 1\) differs", "oldest first")),
        ({"no_shift": True}, Failure("^kv_attention_step, window 3, scores of several thousand ", r"^z at position \d+ contains nan")),
        ({"keep_dtype": True}, Failure("^kv_attention_step, window 3, float32 q, k, v and caches ", "^z should be float64", "got dtype float32")),
        ({"window_plus_one": True}, Failure(D8.format(3, 3), "^z at position 3 differs", "band of 3")),
        ({"narrow": True}, Failure(D8.format(2, 2), "^z at position 2 differs", "band of 3")),
        ({"first_rows": True}, Failure(D8.format(3, 3), r"^new_keys \(window 3, position 3\) differs", "positions 1 to 3, oldest first")),
        ({"accept_float_window": True}, Failure(None, r"^kv_attention_step with window 2.0 \(a float\)", "should raise ValueError")),
        ({"accept_long_cache": True}, Failure(None, "^kv_attention_step with 3 cached positions for window 2", "should raise ValueError")),
    ],
    ids=row_id,
)  # fmt: skip
def test_check_kv_attention_step_rejects_bug(bugs, failure):
    student = as_student(attend_step, "kv_attention_step", **bugs)
    expect_failure(lambda: hidden.check_kv_attention_step(student), failure)


# --------------------------------------------------------------------------------------------
# The visible tests name the typical mistakes
# --------------------------------------------------------------------------------------------


def course_style_min_p(logits, p_base):
    """A filter in the style of the lecture's: it returns filtered logits, not probabilities."""
    scores = np.asarray(logits, dtype=np.float64)
    floor = scores.max(axis=-1, keepdims=True) + np.log(p_base)
    return np.where(scores < floor, -np.inf, scores)


def nucleus_as_typical(logits, p):
    """Lecture 8's nucleus rule (most likely first) where the most typical should come first."""
    probs = softmax_rows(logits, 1.0)
    ascending = np.sort(probs, axis=-1)
    above = np.cumsum(ascending[..., ::-1], axis=-1)[..., ::-1] - ascending  # mass more likely
    floor = np.min(np.where(above < p, ascending, np.inf), axis=-1, keepdims=True)
    kept = np.where(probs >= floor, probs, 0.0)
    return kept / kept.sum(axis=-1, keepdims=True)


def min_p_with_torch(logits, p_base):
    """min-p through torch's softmax: the trap names it."""
    probs = torch.tensor(np.asarray(logits, dtype=np.float64)).softmax(-1)
    kept = probs.masked_fill(probs < p_base * probs.amax(-1, keepdim=True), 0.0)
    return (kept / kept.sum(-1, keepdim=True)).numpy()


test_visible_tests_name_the_mistake = visible_mistake_tests(
    ASSIGNMENT,
    [
        (
            "temperature_probs_visible",
            {"temperature_probs": as_student(softmax_rows, "tp", times_tau=True)},
            Failure("τ = 0.5", "^probs differs", r"softmax\(logits / τ\)"),
        ),
        (
            "temperature_probs_visible",
            {"temperature_probs": as_student(softmax_rows, "tp", no_shift=True)},
            Failure("τ = 1$", r"^probs contains nan at \[2, 0\]"),
        ),
        (
            "sample_tokens_visible",
            {"sample_tokens": as_student(draw, "st", inclusive=True)},
            Failure("boundaries", "^row 2: u = 0.25 gives token 0, expected 1"),
        ),
        (
            "min_p_probs_visible",
            {"min_p_probs": as_student(min_p, "mp", max_logit=True)},
            Failure("p_base = 0.5:", "^probs differs"),
        ),
        (
            "min_p_probs_visible",
            {"min_p_probs": as_student(min_p, "mp", strict=True)},
            Failure("p_base = 1:", "^probs contains nan"),
        ),
        (
            "min_p_probs_visible",
            {"min_p_probs": course_style_min_p},
            Failure("p_base = 0.3:", "^probs contains -inf"),
        ),
        (
            "min_p_probs_visible",
            {"min_p_probs": as_student(min_p_with_torch, "min_p_probs")},
            Failure(
                "p_base = 0.3:",
                r"^min_p_probs called torch\.Tensor\.softmax \(a routine this part forbids\): "
                r"this part's hidden tests forbid the course's helpers and .*softmax",
            ),
        ),
        (
            "typical_probs_visible",
            {"typical_probs": as_student(typical, "tp", signed=True)},
            Failure("p = 0.2:", "^probs differs"),
        ),
        (
            "typical_probs_visible",
            {"typical_probs": as_student(typical, "tp", zeros_in_entropy=True)},
            Failure("p = 0.2:", "^probs differs", r"at \[1, 1\]"),
        ),
        (
            "typical_probs_visible",
            {"typical_probs": as_student(typical, "tp", sorted_ties=True)},
            Failure("p = 0.2:", "^probs differs"),
        ),
        (
            "typical_probs_visible",
            {"typical_probs": as_student(nucleus_as_typical, "typical_probs")},
            Failure("p = 0.2:", "^probs differs"),
        ),
        (
            "kv_attention_step_visible",
            {"kv_attention_step": as_student(attend_step, "kv", no_scale=True)},
            Failure(r"step 2 \(1 cached, window 2\)", "^z differs"),
        ),
        (
            "kv_attention_step_visible",
            {"kv_attention_step": as_student(attend_step, "kv", prepend=True)},
            Failure(r"step 2 \(1 cached", "^new_keys differs", "oldest first"),
        ),
        (
            "kv_attention_step_visible",
            {"kv_attention_step": as_student(attend_step, "kv", window_plus_one=True)},
            Failure(r"step 3 \(2 cached, window 2\)", "^z differs"),
        ),
        (
            "kv_attention_step_visible",
            {"kv_attention_step": as_student(attend_step, "kv", first_rows=True)},
            Failure(r"step 3 \(2 cached", "^new_keys differs", "positions 2 to 3, oldest first"),
        ),
    ],
)


def test_visible_tests_pass_with_the_independent_implementations():
    run_visible(
        ASSIGNMENT, "temperature_probs_visible", temperature_probs=as_student(softmax_rows, "tp")
    )
    run_visible(
        ASSIGNMENT, "sample_tokens_visible", sample_tokens=as_student(draw, "sample_tokens")
    )
    run_visible(ASSIGNMENT, "min_p_probs_visible", min_p_probs=as_student(min_p, "min_p_probs"))
    run_visible(
        ASSIGNMENT, "typical_probs_visible", typical_probs=as_student(typical, "typical_probs")
    )
    run_visible(
        ASSIGNMENT, "kv_attention_step_visible", kv_attention_step=as_student(attend_step, "kv")
    )


# --------------------------------------------------------------------------------------------
# Shortcuts: the course's helpers and the libraries are trapped
# --------------------------------------------------------------------------------------------


def probs_with_torch(logits, temperature):
    z = torch.tensor(np.array(logits, dtype=np.float64))
    torch.softmax(z / temperature, dim=-1)
    return softmax_rows(logits, temperature)


def draw_with_multinomial(probs, u):
    torch.multinomial(torch.tensor([[0.5, 0.5]]), 1)
    return draw(probs, u)


def min_p_with_warper(logits, p_base):
    from transformers import MinPLogitsWarper

    MinPLogitsWarper(0.1)
    return min_p(logits, p_base)


def min_p_with_course(logits, p_base):
    from course.decoding import top_k_filter

    top_k_filter(torch.zeros(1, 3), 1)
    return min_p(logits, p_base)


def typical_with_warper(logits, p):
    from transformers import TypicalLogitsWarper

    TypicalLogitsWarper(0.5)
    return typical(logits, p)


def typical_with_course(logits, p):
    from course.decoding import filter_logits

    filter_logits(torch.zeros(1, 3), top_p=0.5)
    return typical(logits, p)


def typical_with_torch_sort(logits, p):
    torch.tensor([2.0, 1.0]).sort()
    return typical(logits, p)


def step_with_course_gpt(keys, values, q, k, v, window):
    from course.models.gpt import block_with_cache

    block_with_cache(None, None, None)
    return attend_step(keys, values, q, k, v, window)


def step_with_sdpa(keys, values, q, k, v, window):
    torch.nn.functional.scaled_dot_product_attention(torch.zeros(1, 2), torch.zeros(1, 2),
                                                     torch.zeros(1, 2))  # fmt: skip
    return attend_step(keys, values, q, k, v, window)


test_checks_reject_the_helpers_being_rewritten = shortcut_tests(
    [
        (hidden.check_temperature_probs, probs_with_torch, "temperature_probs", "torch.softmax"),
        (hidden.check_sample_tokens, draw_with_multinomial, "sample_tokens", "torch.multinomial"),
        (hidden.check_min_p_probs, min_p_with_warper, "min_p_probs", "transformers.MinPLogitsWarper"),
        (hidden.check_min_p_probs, min_p_with_course, "min_p_probs", "course.decoding.top_k_filter"),
        (hidden.check_typical_probs, typical_with_warper, "typical_probs", "transformers.TypicalLogitsWarper"),
        (hidden.check_typical_probs, typical_with_course, "typical_probs", "course.decoding.filter_logits"),
        (hidden.check_typical_probs, typical_with_torch_sort, "typical_probs", "torch.Tensor.sort"),
        (hidden.check_kv_attention_step, step_with_course_gpt, "kv_attention_step", "course.models.gpt.block_with_cache"),
        (hidden.check_kv_attention_step, step_with_sdpa, "kv_attention_step", "torch.nn.functional.scaled_dot_product_attention"),
    ]
)  # fmt: skip


REQUIRED_TRAPS = {
    "torch.softmax",
    "torch.topk",
    "torch.multinomial",
    "torch.Tensor.softmax",
    "torch.Tensor.topk",
    "torch.nn.functional.softmax",
    "torch.nn.functional.scaled_dot_product_attention",
    "transformers.TemperatureLogitsWarper",
    "transformers.TopKLogitsWarper",
    "transformers.MinPLogitsWarper",
    "transformers.TopPLogitsWarper",
    "transformers.TypicalLogitsWarper",
    "course.decoding.temperature_scale",
    "course.decoding.top_k_filter",
    "course.decoding.top_p_filter",
    "course.decoding.filter_logits",
    "course.decoding.sample",
    "course.models.gpt.GPT",
    "course.models.gpt.block_with_cache",
}


def test_traps_cover_the_routines_that_would_do_the_work():
    expect_traps(hidden, REQUIRED_TRAPS)


# --------------------------------------------------------------------------------------------
# Part F: the model answer's numbers are those the exploration cell prints
# --------------------------------------------------------------------------------------------

# Numbers of the model answer that are the question's own settings, not results.
SETTINGS = {"0.1", "0.9", "2,000"}


def test_the_model_answer_quotes_the_numbers_the_exploration_cell_prints(capsys):
    """Every number of Part F's model answer (counts, masses, probabilities, temperatures)
    appears in what the reference's exploration cell for Part F prints."""
    notebook = solution(ASSIGNMENT).notebook
    explore = next(
        cell.source
        for before, cell in zip(notebook.cells, notebook.cells[1:], strict=False)
        if "the numbers for Part F" in before.source and cell.cell_type == "code"
    )
    answer = next(c.source for c in notebook.cells if "**Model answer.**" in c.source and
                  "long-tail" in c.source)  # fmt: skip
    capsys.readouterr()
    run_cell(explore, dict(reference_namespace(ASSIGNMENT)), "Part F's exploration cell")
    printed = capsys.readouterr().out
    assert "long tail: H" in printed, printed
    said = answer.split("*Grading notes")[0]
    numbers = re.findall(r"(?<![\w.^])\d[\d,]*(?:\.\d+)?(?:e-\d+)?(?![\w^])", said)
    assert len(numbers) >= 15, numbers
    missing = [n for n in numbers if n not in SETTINGS and n.replace(",", "") not in printed]
    assert missing == [], f"numbers of the model answer that the cell does not print: {missing}"


def test_part_e_visible_cases_agree_with_attention_under_the_band_mask():
    """Every expected z of the visible Part E table is the last row of banded attention (the
    new position attends to the last ``window`` positions: the cache, then itself), and its
    expected caches are what the window keeps; every bad input of the table makes the reference
    raise ValueError."""
    from course.checks import a8_gpt_decoding as visible

    for row in visible.part_e_cases():
        keys = np.vstack([np.reshape(row.keys, (-1, np.size(row.k))), [row.k]])
        values = np.vstack([np.reshape(row.values, (-1, np.size(row.v))), [row.v]])
        queries = np.vstack([np.zeros((len(keys) - 1, np.size(row.q))), [row.q]])
        rows = hidden.banded_attention_rows(queries, keys, values, row.window)
        np.testing.assert_allclose(rows[-1], row.expected_z, atol=1e-9, err_msg=row.label)
        np.testing.assert_array_equal(row.expected_new_keys, keys[-row.window :], row.label)
        np.testing.assert_array_equal(row.expected_new_values, values[-row.window :], row.label)
    step = reference_namespace(ASSIGNMENT)["kv_attention_step"]
    bad = visible.part_e_bad_inputs()
    assert len(bad) == 4
    for said, (args, kwargs) in bad.items():
        try:
            step(*args, **kwargs)
        except ValueError:
            continue
        raise AssertionError(f"the reference's {said} should raise ValueError")
