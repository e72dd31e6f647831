"""Assignment 5: the hidden checks reject plausible bugs and torch's shortcuts.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps) is in ``test_assignments.py``. Here: independent implementations (a softmax
through log-sum-exp, local masks from loops, heads in a loop, positions and rotations from
complex numbers) with one switch per plausible bug, each of which must fail its check with a
message that names the case; the visible tests name the typical mistakes; and shortcuts through
``F.scaled_dot_product_attention``, ``torch.softmax``, the log-sum-exps of torch and SciPy,
``nn.MultiheadAttention``, transformers' GPT-NeoX rotary helpers and
``course.models.attention``, which are caught inside the traps.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
import torch

from autograder.hidden import a5_self_attention as hidden
from course.checks import a5_self_attention as visible
from tests.grading.bug_injection import (
    Failure,
    expect_bad_cases_refused,
    expect_failure,
    expect_shortcut,
    expect_traps,
    heads_attention,
    row_id,
    run_visible,
    visible_mistake_tests,
)
from tests.grading.solution_loader import as_student

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

ASSIGNMENT = "a5_self_attention"

# --------------------------------------------------------------------------------------------
# Independent implementations with bug switches
# --------------------------------------------------------------------------------------------


def attend(
    Q,
    K,
    V,
    mask=None,
    *,
    unscaled=False,
    naive=False,
    max_over_all=False,
    nan_rows=False,
    lse_zero=False,
    accept_floats=False,
):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    if min(Q.ndim, K.ndim, V.ndim) < 2 or Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
        raise ValueError("shapes")
    s = Q @ np.swapaxes(K, -1, -2)
    if not unscaled:
        s = s / np.sqrt(Q.shape[-1])
    keep = np.ones((1, 1), dtype=bool)
    if mask is not None:
        keep = np.asarray(mask)
        if keep.dtype != bool and not accept_floats:
            raise ValueError("booleans")
        keep = keep.astype(bool)
        try:
            shape = np.broadcast_shapes(s.shape, keep.shape)
        except ValueError:
            raise ValueError("mask shape") from None
        if shape[-2:] != s.shape[-2:]:
            raise ValueError("mask shape")
    shape = np.broadcast_shapes(s.shape, keep.shape)
    keep, s = np.broadcast_to(keep, shape), np.broadcast_to(s, shape)
    if max_over_all:  # subtracts the largest score, blocked ones included
        e = np.exp(s - s.max(-1, keepdims=True)) * keep
        total = e.sum(-1, keepdims=True)
        lse = np.log(total[..., 0]) + s.max(-1)
    else:
        masked = np.where(keep, s, -np.inf)
        if naive:
            e = np.exp(masked)
            lse = np.log(e.sum(-1))
        else:
            lse = np.logaddexp.reduce(masked, axis=-1)  # -inf on an empty row
            e = np.exp(masked - np.where(np.isfinite(lse), lse, 0.0)[..., None])
        total = e.sum(-1, keepdims=True)
    empty = ~keep.any(-1, keepdims=True)
    A = e / (total if nan_rows else np.where(empty, 1.0, total))
    if lse_zero:  # an empty row's L as 0, not -inf
        lse = np.where(empty[..., 0], 0.0, lse)
    return A @ V, A, lse


def local(lengths, m, radius, *, padding_queries=False, strict=False, off_by_one=False):
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.dtype.kind not in "iu" or m < 1 or radius < 0:
        raise ValueError("lengths")
    if lengths.min() < 0 or lengths.max() > m:
        raise ValueError("range")
    out = np.zeros((len(lengths), m, m), dtype=bool)
    for b, length in enumerate(lengths):
        for i in range(m):
            for j in range(m):
                near = abs(i - j) < radius if strict else abs(i - j) <= radius
                real = j <= length if off_by_one else j < length
                if padding_queries:  # blocks padding queries too
                    real = real and i < length
                out[b, i, j] = near and real and j < m
    return out


def merge(Z_a, L_a, Z_b, L_b, *, plain_mean=False, unshifted=False, nan_empty=False):
    Z_a, L_a, Z_b, L_b = (np.asarray(a, dtype=float) for a in (Z_a, L_a, Z_b, L_b))
    if Z_a.ndim < 2 or Z_a.shape != Z_b.shape:
        raise ValueError("Z shapes")
    if L_a.shape != Z_a.shape[:-1] or L_b.shape != Z_a.shape[:-1]:
        raise ValueError("L shapes")
    if any(np.isnan(x).any() or np.isposinf(x).any() for x in (L_a, L_b)):
        raise ValueError("L values")
    L = np.logaddexp(L_a, L_b)
    if plain_mean:  # the two outputs averaged, not weighted by their denominators
        return (Z_a + Z_b) / 2, L
    if unshifted:  # e^L_a / (e^L_a + e^L_b) without subtracting the larger
        a, b = np.exp(L_a), np.exp(L_b)
        return (a[..., None] * Z_a + b[..., None] * Z_b) / (a + b)[..., None], L
    shift = L if nan_empty else np.where(np.isfinite(L), L, 0.0)
    a, b = np.exp(L_a - shift), np.exp(L_b - shift)
    return a[..., None] * Z_a + b[..., None] * Z_b, L


def heads(
    X,
    params,
    h,
    mask=None,
    *,
    scale_by_d_model=False,
    wrong_split=False,
    torch_mask_convention=False,
    skip_out_bias=False,
    averaged=False,
    check_divisible=True,
):
    X = np.asarray(X, dtype=float)
    d = X.shape[-1] if X.ndim >= 2 else 0
    if X.ndim < 2 or not isinstance(h, int) or h < 1:
        raise ValueError("X or h")
    if check_divisible and d % h:
        raise ValueError("d_model is not divisible by h")
    if "in_proj_weight" not in params or "out_proj_weight" not in params:
        raise ValueError("missing weight")
    w_in, w_out = np.asarray(params["in_proj_weight"]), np.asarray(params["out_proj_weight"])
    b_in = np.asarray(params.get("in_proj_bias", np.zeros(3 * d)))
    b_out = np.asarray(params.get("out_proj_bias", np.zeros(d)))
    if w_in.shape != (3 * d, d) or w_out.shape != (d, d) or b_in.shape != (3 * d,):
        raise ValueError("shape")
    if b_out.shape != (d,):
        raise ValueError("shape")
    q, k, v = np.split(X @ w_in.T + b_in, 3, axis=-1)  # (..., n, d) each
    outs, weights = heads_attention(
        q,
        k,
        v,
        h,
        mask,
        scale_by_d_model=scale_by_d_model,
        wrong_split=wrong_split,
        torch_mask_convention=torch_mask_convention,
    )
    out = np.concatenate(outs, axis=-1) @ w_out.T + (0 if skip_out_bias else b_out)
    weights = np.stack(weights, axis=-3)
    if averaged:
        weights = np.broadcast_to(weights.mean(-3, keepdims=True), weights.shape)
    return out, weights


def shift(k, d, base=10000.0, *, transposed=False, absolute=False):
    if not isinstance(d, int) or d < 2 or d % 2:
        raise ValueError("d")
    turn = (abs(k) if absolute else k) * base ** (-2 * np.arange(d // 2) / d)
    out = np.zeros((d, d))
    for r, b in enumerate(turn):
        block = np.array([[np.cos(b), np.sin(b)], [-np.sin(b), np.cos(b)]])
        out[2 * r : 2 * r + 2, 2 * r : 2 * r + 2] = block.T if transposed else block
    return out


def decode(p, base=10000.0, *, slowest_only=False, fastest_only=False, plain_arctan=False,
           from_zero=False, swapped=False):  # fmt: skip
    p = np.asarray(p, dtype=float)
    if p.ndim < 1 or p.shape[-1] < 2 or p.shape[-1] % 2:
        raise ValueError("d")
    d = p.shape[-1]
    omega = base ** (-2 * np.arange(d // 2) / d)
    sines, cosines = p[..., 0::2], p[..., 1::2]
    if swapped:
        sines, cosines = cosines, sines
    if plain_arctan:  # loses the quadrant
        angle = np.arctan(sines / cosines)
    else:
        angle = np.angle(cosines + 1j * sines)
    if from_zero:  # angles in [0, 2 pi): positions in [0, P)
        angle = np.mod(angle, 2 * np.pi)
    if fastest_only:
        return angle[..., 0] / omega[0]
    estimate = angle[..., -1] / omega[-1]
    if slowest_only:
        return estimate
    for r in reversed(range(d // 2 - 1)):
        wraps = np.round((estimate * omega[r] - angle[..., r]) / (2 * np.pi))
        estimate = (angle[..., r] + 2 * np.pi * wraps) / omega[r]
    return estimate


def neox(x, offset, rotary_dim, base=10000.0, *, interleaved=False, theta_of_d=False,
         no_offset=False, last_features=False, backwards=False, in_place=False):  # fmt: skip
    x = x if in_place else np.array(x, dtype=float)
    if x.ndim < 2 or not isinstance(rotary_dim, int) or rotary_dim < 2:
        raise ValueError("shape")
    d, n = x.shape[-1], x.shape[-2]
    if rotary_dim % 2 or rotary_dim > d:
        raise ValueError("rotary_dim")
    start = np.asarray(offset, dtype=float)
    if start.ndim > x.ndim - 2:
        raise ValueError("offset")
    try:
        np.broadcast_to(start, x.shape[:-2])
    except ValueError:
        raise ValueError("offset") from None
    where = (0.0 if no_offset else start[..., None]) + np.arange(n)  # (..., n)
    width = d if theta_of_d else rotary_dim
    theta = base ** (-2 * np.arange(rotary_dim // 2) / width)
    angle = (-1 if backwards else 1) * where[..., None] * theta
    cols = np.arange(d - rotary_dim, d) if last_features else np.arange(rotary_dim)
    if interleaved:  # Lecture 5's layout: feature 2r with 2r + 1
        first, second = cols[0::2], cols[1::2]
    else:
        first, second = cols[: rotary_dim // 2], cols[rotary_dim // 2 :]
    z = (x[..., first] + 1j * x[..., second]) * np.exp(1j * angle)
    x[..., first], x[..., second] = z.real, z.imag
    return x


# --------------------------------------------------------------------------------------------
# The independent implementations pass
# --------------------------------------------------------------------------------------------


def test_the_independent_implementations_pass_too(capsys):
    with np.errstate(divide="ignore", invalid="ignore"):
        hidden.check_attention(
            as_student(local, "local_mask"),
            as_student(attend, "attention"),
            as_student(merge, "merge_attention"),
        )
    hidden.check_multi_head_attention(as_student(heads, "multi_head_attention"))
    hidden.check_sinusoidal(
        as_student(shift, "shift_matrix"), as_student(decode, "decode_position")
    )
    hidden.check_rope(as_student(neox, "partial_rope"))
    assert capsys.readouterr().out.count("hidden cases passed") == 4


def test_the_references_agree_with_the_independent_implementations():
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 2))
    mask = rng.random((2, 3, 5)) < 0.6
    mask[1, 2] = False  # a row with no key
    with np.errstate(divide="ignore"):
        mine = attend(Q, K, V, mask)
    theirs = hidden.torch_attention(Q, K, V, mask)
    for ours, reference in zip(mine, theirs, strict=True):
        np.testing.assert_allclose(reference, ours, atol=1e-13)
    assert theirs[2][1, 2] == -np.inf and not theirs[0][1, 2].any()
    params = hidden._mha_params(rng, 6, True)
    X = rng.normal(size=(2, 4, 6))
    causal4 = np.tril(np.ones((4, 4), bool))
    for ours, reference in zip(
        heads(X, params, 3, causal4), hidden.torch_multi_head(X, params, 3, causal4), strict=True
    ):
        np.testing.assert_allclose(reference, ours, atol=1e-13)
    np.testing.assert_allclose(hidden.torch_shift(-4, 6, 50.0), shift(-4, 6, 50.0), atol=1e-13)
    spots = np.array([[0.0, 3.5], [-70.0, 1000.0]])
    np.testing.assert_allclose(decode(hidden.torch_sinusoids(spots, 12)), spots, atol=1e-9)
    x, offsets = rng.normal(size=(2, 3, 4, 10)), np.array([[0], [6]])
    np.testing.assert_allclose(
        hidden.torch_partial_rope(x, offsets, 6), neox(x, offsets, 6), atol=1e-13
    )


def test_the_visible_tables_agree_with_the_references():
    """Every expected value in the tables of the visible checks (course.checks.a5_...), worked
    out once, against the hidden checks' torch references, to the tolerance it is checked to;
    every call on bad input makes the independent implementation raise ValueError."""
    for case in visible.part_a_local_mask_cases():
        expected = hidden._local(tuple(case.lengths), case.m, case.radius)
        np.testing.assert_array_equal(case.expected_mask, expected, err_msg=case.label)
    for case in visible.part_a_attention_cases():
        Z, A, L = hidden.torch_attention(case.Q, case.K, case.V, case.mask)
        A = A if case.sequence is None else A[case.sequence]
        for mine, theirs in ((case.expected_A, A), (case.expected_Z, Z), (case.expected_L, L)):
            np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-9, err_msg=case.label)
    for case in visible.part_a_merge_cases():
        with np.errstate(invalid="ignore"):
            Z, L = merge(case.Z_a, case.L_a, case.Z_b, case.L_b)
        np.testing.assert_allclose(case.expected_Z, Z, rtol=0, atol=1e-9, err_msg=case.label)
        np.testing.assert_allclose(case.expected_L, L, rtol=0, atol=1e-9, err_msg=case.label)
    for case in visible.part_b_cases():
        out, weights = hidden.torch_multi_head(case.X, case.params, case.num_heads, case.mask)
        np.testing.assert_allclose(case.expected_weights, weights, rtol=0, atol=1e-9)
        np.testing.assert_allclose(case.expected_out, out, rtol=0, atol=1e-9)
    for case in visible.part_c_shift_cases():
        base = 10000.0 if case.base is None else case.base
        if case.expected_M_k is not None:
            M_k = hidden.torch_shift(case.k, case.d, base)
            np.testing.assert_allclose(case.expected_M_k, M_k, rtol=0, atol=1e-9)
    for case in visible.part_c_decode_cases():  # p encodes the positions before the move by k
        start = np.asarray(case.expected_positions) - (case.k or 0)
        p = hidden.torch_sinusoids(start, case.p.shape[-1])
        np.testing.assert_allclose(case.p, p, rtol=0, atol=1e-7, err_msg=case.label)
    for case in visible.part_d_cases():
        rotated = hidden.torch_partial_rope(case.x, case.offset, case.rotary_dim)
        np.testing.assert_allclose(case.expected_rotated, rotated, rtol=0, atol=1e-9)
    functions = {"local_mask": local, "attention": attend, "merge_attention": merge,
                 "multi_head_attention": heads, "shift_matrix": shift, "decode_position": decode,
                 "partial_rope": neox}  # fmt: skip
    tables = (visible.part_a_bad_cases, visible.part_b_bad_cases, visible.part_c_bad_cases,
              visible.part_d_bad_cases)  # fmt: skip
    expect_bad_cases_refused(tables, functions)


def test_the_rope_reference_is_transformers_and_its_fallback_agrees(monkeypatch):
    """The rotations come from transformers' GPT-NeoX; the complex-number fallback (used where
    transformers is missing) gives the same rows."""
    pytest.importorskip("transformers")
    rng = np.random.default_rng(1)
    x = rng.normal(size=(3, 5, 12))
    with_transformers = hidden.torch_partial_rope(x, np.array([0, 4, 9]), 8, 500.0)
    monkeypatch.setitem(sys.modules, "transformers.models.gpt_neox.modeling_gpt_neox", None)
    fallback = hidden.torch_partial_rope(x, np.array([0, 4, 9]), 8, 500.0)
    np.testing.assert_allclose(with_transformers, fallback, atol=1e-13)
    np.testing.assert_allclose(fallback, neox(x, np.array([0, 4, 9]), 8, 500.0), atol=1e-13)


def test_the_hard_cases_are_hard():
    """Scores beyond exp's range; rows and a whole sequence with no key; a slowest pair that
    misses in float32; offsets beyond one turn of the fastest pair."""
    labels = [case.label for case in hidden.attention_cases()]
    empty_rows = 0
    for case in hidden.attention_cases():
        Q, K = np.asarray(case.Q), np.asarray(case.K)
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(np.shape(Q)[-1])
        if "thousands" in case.label:
            assert np.abs(scores).max() > 1000, case.label
        if case.mask is not None:
            empty_rows += int((~np.broadcast_to(case.mask, scores.shape).any(-1)).sum())
    assert empty_rows >= 10
    assert any("blocked keys score 2000" in label for label in labels)
    assert 0 in np.asarray(hidden.LOCAL_CASES[1].lengths)  # a sequence of padding only
    float32 = next(case for case in hidden.decode_cases() if case.stored == "float32")
    coarse = decode(hidden._stored(float32), slowest_only=True)
    assert np.abs(coarse - float32.positions).max() > 50 * float32.tol


# --------------------------------------------------------------------------------------------
# Plausible bugs
# --------------------------------------------------------------------------------------------


MHA = r"^multi_head_attention, n=5, d_model=6, h=3, no mask$"
LOCAL = r"^attention, B=3, m=7, local mask of radius 1, lengths 7, 2, 4: rows with no key$"
DECODE = r"^decode_position, d=8, base 100, a batch \(3, 4\) of positions in \(-P/2, P/2\)$"
ROPE = r"^partial_rope, n=5, d=8, rotary_dim=4, offset 0$"
SHIFT = r"^shift_matrix\(-3, 6, base=10000\)$"


@pytest.mark.parametrize(
    ("mask_bugs", "attention_bugs", "merge_bugs", "failure"),
    [
        (
            {},
            {"unscaled": True},
            {},
            Failure(r"^attention, B=2, n=4, m=6, .*\(cross-attention\), no mask$", "^A differs"),
        ),
        (
            {},
            {"naive": True},
            {},
            Failure("^attention, n=3, m=4, d_k=4, scores in the thousands$", "^A contains nan"),
        ),
        (
            {},
            {"max_over_all": True},
            {},
            Failure("^attention, n=4, m=3, the blocked keys score 2000 or more", "^A contains nan"),
        ),
        ({}, {"nan_rows": True}, {}, Failure(LOCAL, "^A contains nan")),
        ({}, {"lse_zero": True}, {}, Failure(LOCAL, r"^L is 0.0 at \[1, 3\]", "expected -inf")),
        (
            {},
            {"accept_floats": True},
            {},
            Failure(None, r"^attention with an additive float mask of zeros", "should raise"),
        ),
        (
            {"padding_queries": True},
            {},
            {},
            Failure(r"^local_mask\(\[3, 1, 5\], 5, 1\)$", r"is False at \[0, 3, 2\]"),
        ),
        (
            {"strict": True},
            {},
            {},
            Failure(r"^local_mask\(\[3, 1, 5\], 5, 1\)$", r"is False at \[0, 0, 1\]"),
        ),
        (
            {"off_by_one": True},
            {},
            {},
            Failure(r"^local_mask\(\[3, 1, 5\], 5, 1\)$", r"is True at \[0, 2, 3\]"),
        ),
        (
            {},
            {},
            {"plain_mean": True},
            Failure(r"^merge_attention, B=2, n=4, m=6, keys split at random$", "^Z differs"),
        ),
        (
            {},
            {},
            {"unshifted": True},
            Failure(r"^merge_attention, n=3, m=5, scores in the thousands", "^Z contains nan"),
        ),
        (
            {},
            {},
            {"nan_empty": True},
            Failure(r"^merge_attention, B=3, m=6, local mask", "^Z contains nan"),
        ),
    ],
    ids=row_id,
)
def test_check_attention_rejects_bug(mask_bugs, attention_bugs, merge_bugs, failure):
    students = (
        as_student(local, "local_mask", **mask_bugs),
        as_student(attend, "attention", **attention_bugs),
        as_student(merge, "merge_attention", **merge_bugs),
    )
    with np.errstate(all="ignore"):
        expect_failure(lambda: hidden.check_attention(*students), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"scale_by_d_model": True}, Failure(MHA, "^the weights of the heads differs")),
        ({"wrong_split": True}, Failure(MHA, "^the weights of the heads differs")),
        (
            {"torch_mask_convention": True},
            Failure(r"d_model=h=4 \(d_k = 1\), causal$", "^the weights of the heads contains nan"),
        ),
        ({"skip_out_bias": True}, Failure(MHA, "^out differs")),
        ({"averaged": True}, Failure(MHA, "^the weights of the heads differs")),
        (
            {"check_divisible": False},
            Failure(
                None,
                r"^multi_head_attention with d_model = 6 and num_heads = 4 \(not a divisor\)",
                r"raised ValueError\('matmul: ",
                "not divisible",
            ),
        ),
    ],
    ids=row_id,
)
def test_check_multi_head_attention_rejects_bug(bugs, failure):
    student = as_student(heads, "multi_head_attention", **bugs)
    with np.errstate(all="ignore"):
        expect_failure(lambda: hidden.check_multi_head_attention(student), failure)


@pytest.mark.parametrize(
    ("shift_bugs", "decode_bugs", "failure"),
    [
        ({"transposed": True}, {}, Failure(SHIFT, r"^shift_matrix\(.*\) differs")),
        ({"absolute": True}, {}, Failure(SHIFT, r"^shift_matrix\(.*\) differs")),
        (
            {},
            {"slowest_only": True},
            Failure(r"^decode_position, d=64, 40 positions .* float32$", "^the positions differ"),
        ),
        ({}, {"fastest_only": True}, Failure(DECODE, "^the positions differ")),
        ({}, {"plain_arctan": True}, Failure(r"^decode_position, d=2, ", "^the positions differ")),
        ({}, {"from_zero": True}, Failure(r"^decode_position, d=2, ", "^the positions differ")),
        ({}, {"swapped": True}, Failure(r"^decode_position, d=2, ", "^the positions differ")),
    ],
    ids=row_id,
)
def test_check_sinusoidal_rejects_bug(shift_bugs, decode_bugs, failure):
    students = (
        as_student(shift, "shift_matrix", **shift_bugs),
        as_student(decode, "decode_position", **decode_bugs),
    )
    with np.errstate(all="ignore"):
        expect_failure(lambda: hidden.check_sinusoidal(*students), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"interleaved": True}, Failure(ROPE, r"^partial_rope\(x, offset, rotary_dim\) differs")),
        ({"theta_of_d": True}, Failure(ROPE, r"^partial_rope\(x, offset, rotary_dim\) differs")),
        (
            {"no_offset": True},
            Failure(r"^partial_rope, \(B, heads, n, d\) = ", r"^partial_rope\(.*\) differs"),
        ),
        ({"last_features": True}, Failure(ROPE, r"^partial_rope\(x, offset, rotary_dim\) differs")),
        ({"backwards": True}, Failure(ROPE, r"^partial_rope\(x, offset, rotary_dim\) differs")),
        ({"in_place": True}, Failure(ROPE, r"in place: x\b")),
    ],
    ids=row_id,
)
def test_check_rope_rejects_bug(bugs, failure):
    student = as_student(neox, "partial_rope", **bugs)
    expect_failure(lambda: hidden.check_rope(student), failure)


# --------------------------------------------------------------------------------------------
# The visible tests name the typical mistakes
# --------------------------------------------------------------------------------------------


def _as_tensor(function):
    """A lecture-style function in torch: the right numbers, as a tensor."""

    def in_torch(*args, **kwargs):
        return torch.tensor(function(*args, **kwargs))

    return in_torch


def test_functions_that_return_tensors_fail_the_visible_and_hidden_tests():
    expect_failure(
        lambda: run_visible(ASSIGNMENT, "test_sinusoidal_visible", shift_matrix=_as_tensor(shift)),
        Failure("shift_matrix", "^M_k should be a NumPy array", "got Tensor"),
    )
    expect_failure(
        lambda: run_visible(ASSIGNMENT, "test_rope_visible", partial_rope=_as_tensor(neox)),
        Failure("partial_rope", "^the rotated x should be a NumPy array", "got Tensor"),
    )
    expect_failure(
        lambda: hidden.check_rope(as_student(_as_tensor(neox), "partial_rope")),
        Failure(ROPE, r"^partial_rope\(x, offset, rotary_dim\) should be a NumPy array", "Tensor"),
    )


test_visible_tests_name_the_mistake = visible_mistake_tests(
    ASSIGNMENT,
    [
        (
            "test_attention_visible",
            {"attention": as_student(attend, "attention", unscaled=True)},
            Failure(r"^attention, 3 queries, 4 keys, no mask$", "^A differs", r" at \["),
        ),
        (
            "test_attention_visible",
            {"attention": as_student(attend, "attention", nan_rows=True)},
            Failure("padded batch", r"^A of sequence 1 contains nan at \[3, 0\]"),
        ),
        (
            "test_attention_visible",
            {"attention": as_student(attend, "attention", lse_zero=True)},
            Failure("padded batch", r"^L is 0.0 at \[1, 3\]", "expected -inf"),
        ),
        (
            "test_attention_visible",
            {"local_mask": as_student(local, "local_mask", padding_queries=True)},
            Failure(r"^local_mask, lengths \[4, 2\]", "^the mask differs", r"at \[1, 2, 1\]"),
        ),
        (
            "test_attention_visible",
            {"merge_attention": as_student(merge, "merge_attention", plain_mean=True)},
            Failure("^merge_attention, numbers", "^Z differs", r"at \[3, 0\]"),
        ),
        (
            "test_attention_visible",
            {"merge_attention": as_student(merge, "merge_attention", unshifted=True)},
            Failure("^merge_attention, numbers", r"^Z contains nan at \[1, 0\]"),
        ),
        (
            "test_multi_head_visible",
            {"multi_head_attention": as_student(heads, "multi_head_attention", wrong_split=True)},
            Failure("no mask", r"^the weights of head 0 \(columns 0..1 of Q, K and V\) differs"),
        ),
        (
            "test_multi_head_visible",
            {"multi_head_attention": as_student(heads, "multi_head_attention", skip_out_bias=True)},
            Failure("no mask", "^out differs", r"by 3.0e-01 at \[\d, 3\]"),
        ),
        (
            "test_sinusoidal_visible",
            {"shift_matrix": as_student(shift, "shift_matrix", transposed=True)},
            Failure("^shift_matrix, k = 2, d = 4$", "^M_k differs", r"by 1.8e\+00"),
        ),
        (
            "test_sinusoidal_visible",
            {"decode_position": as_student(decode, "decode_position", fastest_only=True)},
            Failure(r"^decode_position, the encodings .* \(d = 8\)$", "differs", r"at \[5\]"),
        ),
        (
            "test_sinusoidal_visible",
            {"decode_position": as_student(decode, "decode_position", slowest_only=True)},
            Failure("float32 encodings .* use the faster pairs", r"^decode_position\(p\) differs"),
        ),
        (
            "test_rope_visible",
            {"partial_rope": as_student(neox, "partial_rope", interleaved=True)},
            Failure("offset 0, rotary_dim 4", "^the rotated x differs", r"r \+ 2"),
        ),
        (
            "test_rope_visible",
            {"partial_rope": as_student(neox, "partial_rope", no_offset=True)},
            Failure(
                r"offset 5 \(rows at positions 5, 6, 7\), rotary_dim 4", "^the rotated x differs"
            ),
        ),
        (
            "test_rope_visible",
            {"partial_rope": as_student(neox, "partial_rope", theta_of_d=True)},
            Failure("offset 0, rotary_dim 4", "^the rotated x differs"),
        ),
    ],
)


def test_visible_tests_pass_with_the_independent_implementations():
    with np.errstate(divide="ignore", invalid="ignore"):
        run_visible(
            ASSIGNMENT,
            "test_attention_visible",
            local_mask=as_student(local, "local_mask"),
            attention=as_student(attend, "attention"),
            merge_attention=as_student(merge, "merge_attention"),
        )
    run_visible(
        ASSIGNMENT, "test_multi_head_visible", multi_head_attention=as_student(heads, "mha")
    )
    run_visible(
        ASSIGNMENT,
        "test_sinusoidal_visible",
        shift_matrix=as_student(shift, "shift_matrix"),
        decode_position=as_student(decode, "decode_position"),
    )
    run_visible(ASSIGNMENT, "test_rope_visible", partial_rope=as_student(neox, "partial_rope"))


# --------------------------------------------------------------------------------------------
# Shortcuts: torch's attention, softmax, logsumexp, transformers' RoPE and
# course.models.attention are trapped
# --------------------------------------------------------------------------------------------


def attention_with_sdpa(Q, K, V, mask=None):
    return hidden.torch_attention(Q, K, V, mask)


def attention_with_torch_softmax(Q, K, V, mask=None):
    s = np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2) / np.sqrt(np.shape(Q)[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    A = torch.nan_to_num(torch.softmax(torch.tensor(s), dim=-1)).numpy()
    return A @ np.asarray(V), A, torch.logsumexp(torch.tensor(s), dim=-1).numpy()


def merge_with_logsumexp(Z_a, L_a, Z_b, L_b):
    L = torch.logsumexp(torch.tensor(np.stack([L_a, L_b])), dim=0).numpy()
    share = np.nan_to_num(np.exp(np.asarray(L_a) - L))
    return share[..., None] * Z_a + (1 - share)[..., None] * Z_b, L


def heads_with_torch(X, params, h, mask=None):
    return hidden.torch_multi_head(X, params, h, mask)


def rope_with_transformers(x, offset, rotary_dim, base=10000.0):
    return hidden.torch_partial_rope(x, offset, rotary_dim, base)


@pytest.mark.parametrize(
    ("attention", "merging", "called"),
    [
        (attention_with_sdpa, merge, "torch.nn.functional.scaled_dot_product_attention"),
        (attention_with_torch_softmax, merge, "torch.softmax"),
        (attend, merge_with_logsumexp, "torch.logsumexp"),
    ],
)
def test_check_attention_rejects_torch_shortcuts(attention, merging, called):
    rng = np.random.default_rng(3)
    Q, K, V = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 2))
    for ours, theirs in zip(attend(Q, K, V), attention(Q, K, V), strict=True):  # right, untrapped
        np.testing.assert_allclose(theirs, ours, atol=1e-12)
    Z_a, _, L_a = attend(Q, K[:, :2], V[:, :2])
    Z_b, _, L_b = attend(Q, K[:, 2:], V[:, 2:])
    for ours, theirs in zip(merge(Z_a, L_a, Z_b, L_b), merging(Z_a, L_a, Z_b, L_b), strict=True):
        np.testing.assert_allclose(theirs, ours, atol=1e-12)
    students = (
        as_student(local, "local_mask"),
        as_student(attention, "attention"),
        as_student(merging, "merge_attention"),
    )
    name = "attention" if attention is not attend else "merge_attention"
    with np.errstate(all="ignore"):
        expect_shortcut(lambda: hidden.check_attention(*students), name, called)


def test_check_multi_head_attention_rejects_nn_multihead_attention():
    student = as_student(heads_with_torch, "multi_head_attention")
    expect_shortcut(
        lambda: hidden.check_multi_head_attention(student),
        "multi_head_attention",
        "torch.nn.MultiheadAttention",
    )


def test_check_rope_rejects_transformers_rotary_helpers():
    pytest.importorskip("transformers")
    x = np.random.default_rng(4).normal(size=(3, 8))
    np.testing.assert_allclose(rope_with_transformers(x, 2, 4), neox(x, 2, 4), atol=1e-13)
    expect_shortcut(
        lambda: hidden.check_rope(as_student(rope_with_transformers, "partial_rope")),
        "partial_rope",
        r"transformers\.models\.gpt_neox\.modeling_gpt_neox\.apply_rotary_pos_emb",
    )


@pytest.fixture
def lecture_module(monkeypatch):
    """A stand-in for Lecture 5's ``course.models.attention`` (on a branch without it)."""
    import course.models

    module = types.ModuleType("course.models.attention")

    def rope(x, positions, base=10000.0):
        return neox(x, positions[0], x.shape[-1], base, interleaved=True)

    def sinusoidal_encoding(n, d, base=10000.0):
        return hidden.torch_sinusoids(np.arange(n), d, base)

    for function in (rope, sinusoidal_encoding):
        function.__module__ = "course.models.attention"
        setattr(module, function.__name__, function)
    monkeypatch.setitem(sys.modules, "course.models.attention", module)
    monkeypatch.setattr(course.models, "attention", module, raising=False)
    return module


def test_course_models_attention_is_trapped_by_name(lecture_module):
    labels = {label for _, _, label in hidden.shortcut_targets()}
    assert {"course.models.attention.rope", "course.models.attention.sinusoidal_encoding"} <= labels
    pairs = [(id(owner), attribute) for owner, attribute, _ in hidden.shortcut_targets()]
    assert len(pairs) == len(set(pairs)), "a target is listed twice"

    def student_rope(x, offset, rotary_dim, base=10000.0):  # the lecture's rope on each half
        x = np.array(x, dtype=float)
        half = rotary_dim // 2
        paired = np.stack([x[..., :half], x[..., half:rotary_dim]], axis=-1).reshape(
            *x.shape[:-1], rotary_dim
        )
        turned = lecture_module.rope(paired, np.array([offset]), base)
        x[..., :half], x[..., half:rotary_dim] = turned[..., 0::2], turned[..., 1::2]
        return x

    expect_shortcut(
        lambda: hidden.check_rope(as_student(student_rope, "partial_rope")),
        "partial_rope",
        "course.models.attention.rope",
    )
    assert lecture_module.rope.__name__ == "rope"  # restored


REQUIRED_TRAPS = {
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.functional.multi_head_attention_forward",
    "torch.nn.functional.softmax",
    "torch.nn.MultiheadAttention",
    "torch.nn.Softmax",
    "torch.softmax",
    "torch.logsumexp",
    "torch.Tensor.softmax",
    "torch.Tensor.logsumexp",
    "torch.special.logsumexp",
    "torch.autograd.grad",
    "torch.Tensor.backward",
    "transformers.models.gpt_neox.modeling_gpt_neox.apply_rotary_pos_emb",
    "transformers.models.gpt_neox.modeling_gpt_neox.rotate_half",
    "transformers.models.llama.modeling_llama.apply_rotary_pos_emb",
    "course.models.recurrent.CharLSTM",
}


def test_traps_cover_the_routines_that_would_do_the_work():
    expect_traps(hidden, REQUIRED_TRAPS)
