"""Assignment 5: the hidden checks reject plausible bugs and torch's shortcuts.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps) is in ``test_assignments.py``. Here: independent implementations (a softmax
through log-sum-exp, heads in a loop, sinusoids and rotations from complex numbers) with one
switch per plausible bug, each of which must fail its check with a message that names the
case; the visible tests name the typical mistakes; and shortcuts through
``F.scaled_dot_product_attention``, ``torch.softmax``, ``nn.MultiheadAttention`` and
``course.models.attention``, which are caught inside the traps.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
import torch

from autograder.hidden import a5_self_attention as hidden
from tests.grading.bug_injection import (
    Failure,
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
    inverted=False,
    check_rows=True,
    name_row=True,
    accept_floats=False,
):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    if min(Q.ndim, K.ndim, V.ndim) < 2 or Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
        raise ValueError("shapes")
    s = Q @ np.swapaxes(K, -1, -2)
    if not unscaled:
        s = s / np.sqrt(Q.shape[-1])
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != bool and not accept_floats:
            raise ValueError("booleans")
        mask = mask.astype(bool)
        if inverted:
            mask = ~mask
        try:
            shape = np.broadcast_shapes(s.shape, mask.shape)
        except ValueError:
            raise ValueError("mask shape") from None
        if shape[-2:] != s.shape[-2:]:
            raise ValueError("mask shape")
        mask = np.broadcast_to(mask, shape)
        if check_rows and not mask.any(-1).all():
            row = np.argwhere(~mask.any(-1))[0]
            raise ValueError(f"row {row[-1]} sees nothing" if name_row else "a row sees nothing")
        s = np.broadcast_to(s, shape)
        if max_over_all:
            e = np.exp(s - s.max(-1, keepdims=True)) * mask
            A = e / e.sum(-1, keepdims=True)
            return A @ V, A
        s = np.where(mask, s, -np.inf)
    if naive:
        A = np.exp(s) / np.exp(s).sum(-1, keepdims=True)
    else:
        A = np.exp(s - np.logaddexp.reduce(s, axis=-1, keepdims=True))
    return A @ V, A


def causal(n, *, strict=False, as_int=False):
    if not isinstance(n, int) or n < 1:
        raise ValueError("n")
    m = np.tril(np.ones((n, n), dtype=bool), k=-1 if strict else 0)
    return m.astype(int) if as_int else m


def padding(lengths, m, *, flat=False, off_by_one=False):
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.dtype.kind not in "iu" or m < 1:
        raise ValueError("lengths")
    if lengths.min() < 1 or lengths.max() > m:
        raise ValueError("range")
    keep = np.arange(m)[None, :] <= lengths[:, None] - (0 if off_by_one else 1)
    return keep if flat else keep[:, None, :]


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


def sinusoids(n, d, base=10000.0, *, blocks=False, cos_first=False, omega_r_over_d=False):
    if not isinstance(n, int) or n < 1 or not isinstance(d, int) or d < 2 or d % 2:
        raise ValueError("n or d")
    exponent = np.arange(d // 2) / d if omega_r_over_d else 2 * np.arange(d // 2) / d
    z = np.exp(1j * np.arange(n)[:, None] * base**-exponent)
    first, second = (z.real, z.imag) if cos_first else (z.imag, z.real)
    if blocks:
        return np.concatenate([first, second], axis=1)
    return np.stack([first, second], axis=-1).reshape(n, d)


def dots(n, d, *, unit=False):
    p = sinusoids(n, d)
    if unit:
        p = p / np.linalg.norm(p, axis=1, keepdims=True) * 0.5
    return p @ p.T


def shift(k, d, base=10000.0, *, transposed=False, absolute=False):
    if not isinstance(d, int) or d < 2 or d % 2:
        raise ValueError("d")
    turn = (abs(k) if absolute else k) * base ** (-2 * np.arange(d // 2) / d)
    out = np.zeros((d, d))
    for r, b in enumerate(turn):
        block = np.array([[np.cos(b), np.sin(b)], [-np.sin(b), np.cos(b)]])
        out[2 * r : 2 * r + 2, 2 * r : 2 * r + 2] = block.T if transposed else block
    return out


def rotate(
    x, positions, base=10000.0, *, halves=False, backwards=False, arange=False, in_place=False
):
    x = x if in_place else np.array(x, dtype=float)
    if x.ndim < 2 or x.shape[-1] % 2:
        raise ValueError("shape")
    where = np.asarray(positions, dtype=float)
    if where.ndim == 0:
        raise ValueError("one position per row")
    if arange:
        where = np.arange(x.shape[-2], dtype=float)
    try:
        where = np.broadcast_to(where, x.shape[:-1])
    except ValueError:
        raise ValueError("positions") from None
    d = x.shape[-1]
    angle = (-1 if backwards else 1) * where[..., None] * base ** (-2 * np.arange(d // 2) / d)
    if halves:  # GPT-NeoX's layout: x_r is paired with x_(r + d/2)
        z = x[..., : d // 2] + 1j * x[..., d // 2 :]
        z = z * np.exp(1j * angle)
        x[..., : d // 2], x[..., d // 2 :] = z.real, z.imag
        return x
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * angle)
    x[..., 0::2], x[..., 1::2] = z.real, z.imag
    return x


# --------------------------------------------------------------------------------------------
# The independent implementations pass
# --------------------------------------------------------------------------------------------


def test_the_independent_implementations_pass_too(capsys):
    with np.errstate(divide="ignore"):
        hidden.check_attention(
            as_student(attend, "attention"),
            as_student(causal, "causal_mask"),
            as_student(padding, "padding_mask"),
        )
    hidden.check_multi_head_attention(as_student(heads, "multi_head_attention"))
    hidden.check_sinusoidal(
        as_student(sinusoids, "sinusoidal_encoding"),
        as_student(dots, "relative_dot"),
        as_student(shift, "shift_matrix"),
    )
    hidden.check_rope(as_student(rotate, "apply_rope"))
    assert capsys.readouterr().out.count("hidden cases passed") == 4


def test_the_references_agree_with_the_independent_implementations():
    rng = np.random.default_rng(0)
    Q, K, V = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 2))
    mask = rng.random((2, 3, 5)) < 0.7
    mask[..., 0] = True
    for mine, theirs in zip(
        attend(Q, K, V, mask), hidden.torch_attention(Q, K, V, mask), strict=True
    ):
        np.testing.assert_allclose(theirs, mine, atol=1e-13)
    params = hidden._mha_params(rng, 6, True)
    X = rng.normal(size=(2, 4, 6))
    causal4 = np.tril(np.ones((4, 4), bool))
    for mine, theirs in zip(
        heads(X, params, 3, causal4), hidden.torch_multi_head(X, params, 3, causal4), strict=True
    ):
        np.testing.assert_allclose(theirs, mine, atol=1e-13)
    np.testing.assert_allclose(hidden.torch_sinusoids(9, 8), sinusoids(9, 8), atol=1e-13)
    np.testing.assert_allclose(hidden.torch_shift(-4, 6, 50.0), shift(-4, 6, 50.0), atol=1e-13)
    x, where = rng.normal(size=(3, 4, 6)), np.array([0, 3, 4, 9])
    np.testing.assert_allclose(hidden.torch_rope(x, where), rotate(x, where), atol=1e-13)


def test_the_hard_cases_are_hard():
    """Scores beyond exp's range, blocked keys scoring far above the allowed ones."""
    labels = [case.label for case in hidden.attention_cases()]
    for case in hidden.attention_cases():
        Q, K = np.asarray(case.Q), np.asarray(case.K)
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(np.shape(Q)[-1])
        if "thousands" in case.label:
            assert np.abs(scores).max() > 1000, case.label
    assert any("blocked keys score 2000" in label for label in labels)


# --------------------------------------------------------------------------------------------
# Plausible bugs
# --------------------------------------------------------------------------------------------


MHA = r"^multi_head_attention, n=5, d_model=6, h=3, no mask$"
MIX = r"^sinusoidal_encoding\(7, 10, base=10000\)$"
ROPE = r"^apply_rope, n=5, d=8, positions 0..4$"
SHIFT = r"^shift_matrix\(-3, 6, base=10000\)$"


@pytest.mark.parametrize(
    ("attention_bugs", "causal_bugs", "padding_bugs", "failure"),
    [
        (
            {"unscaled": True},
            {},
            {},
            Failure(r"^attention, B=2, n=4, m=6, .*\(cross-attention\), no mask$", "^A differs"),
        ),
        (
            {"naive": True},
            {},
            {},
            Failure("^attention, n=3, m=4, d_k=4, scores in the thousands$", "^A contains nan"),
        ),
        (
            {"max_over_all": True},
            {},
            {},
            Failure("^attention, n=3, m=3, the blocked keys score 2000 or more", "^A contains nan"),
        ),
        (
            {"inverted": True},
            {},
            {},
            Failure(
                "^attention, B=3, n=m=5, d_k=1, ",
                r"raised ValueError\('row 4 sees nothing'\)",
                "for valid input",
            ),
        ),
        (
            {"check_rows": False},
            {},
            {},
            Failure(
                None,
                r"^attention with a mask whose row 2 \(of batch entry 1\) allows no key",
                "should raise ValueError",
                "returned",
            ),
        ),
        (
            {"name_row": False},
            {},
            {},
            Failure(None, "^attention with a mask whose row 2", "which row"),
        ),
        (
            {"accept_floats": True},
            {},
            {},
            Failure(None, r"^attention with a float mask of ones", "should raise"),
        ),
        (
            {},
            {"strict": True},
            {},
            Failure(r"^causal_mask\(1\)$", r"^causal_mask\(1\) is False at \[0, 0\]"),
        ),
        (
            {},
            {"as_int": True},
            {},
            Failure(r"^causal_mask\(1\)$", "should hold booleans", "got dtype int"),
        ),
        (
            {},
            {},
            {"flat": True},
            Failure(
                r"^padding_mask\(\[3, 1, 5\], 5\)$",
                r"should be a NumPy array of shape \(3, 1, 5\)",
            ),
        ),
        (
            {},
            {},
            {"off_by_one": True},
            Failure(r"^padding_mask\(\[3, 1, 5\], 5\)$", r"is True at \[0, 0, 3\]"),
        ),
    ],
    ids=row_id,
)
def test_check_attention_rejects_bug(attention_bugs, causal_bugs, padding_bugs, failure):
    students = (
        as_student(attend, "attention", **attention_bugs),
        as_student(causal, "causal_mask", **causal_bugs),
        as_student(padding, "padding_mask", **padding_bugs),
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
    ("encoding_bugs", "dot_bugs", "shift_bugs", "failure"),
    [
        ({"blocks": True}, {}, {}, Failure(MIX, r"^sinusoidal_encoding\(.*\) differs")),
        (
            {"cos_first": True},
            {},
            {},
            Failure(
                r"^sinusoidal_encoding\(1, 2, base=10000\)$", r"^sinusoidal_encoding\(.*\) differs"
            ),
        ),
        ({"omega_r_over_d": True}, {}, {}, Failure(MIX, r"^sinusoidal_encoding\(.*\) differs")),
        (
            {},
            {"unit": True},
            {},
            Failure(r"^relative_dot\(1, 2\)$", r"^relative_dot\(1, 2\) differs"),
        ),
        ({}, {}, {"transposed": True}, Failure(SHIFT, r"^shift_matrix\(.*\) differs")),
        ({}, {}, {"absolute": True}, Failure(SHIFT, r"^shift_matrix\(.*\) differs")),
    ],
    ids=row_id,
)
def test_check_sinusoidal_rejects_bug(encoding_bugs, dot_bugs, shift_bugs, failure):
    students = (
        as_student(sinusoids, "sinusoidal_encoding", **encoding_bugs),
        as_student(dots, "relative_dot", **dot_bugs),
        as_student(shift, "shift_matrix", **shift_bugs),
    )
    expect_failure(lambda: hidden.check_sinusoidal(*students), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"halves": True}, Failure(ROPE, r"^apply_rope\(x, positions\) differs")),
        ({"backwards": True}, Failure(ROPE, r"^apply_rope\(x, positions\) differs")),
        (
            {"arange": True},
            Failure(
                r"^apply_rope, a batch \(2, 3, 6, 4\), positions 0, 2, 3, 7, 8, 20$",
                r"^apply_rope\(x, positions\) differs",
            ),
        ),
        ({"in_place": True}, Failure(ROPE, r"in place: x\b")),
    ],
    ids=row_id,
)
def test_check_rope_rejects_bug(bugs, failure):
    student = as_student(rotate, "apply_rope", **bugs)
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
        lambda: run_visible(
            ASSIGNMENT, "test_sinusoidal_visible", sinusoidal_encoding=_as_tensor(sinusoids)
        ),
        Failure(None, "^sinusoidal_encoding should return a NumPy array", "got Tensor"),
    )
    expect_failure(
        lambda: run_visible(ASSIGNMENT, "test_rope_visible", apply_rope=_as_tensor(rotate)),
        Failure(None, "^apply_rope should return a NumPy array", "got Tensor"),
    )
    expect_failure(
        lambda: hidden.check_rope(as_student(_as_tensor(rotate), "apply_rope")),
        Failure(ROPE, r"^apply_rope\(x, positions\) should be a NumPy array", "got Tensor"),
    )


test_visible_tests_name_the_mistake = visible_mistake_tests(
    ASSIGNMENT,
    [
        (
            "test_attention_visible",
            {"attention": as_student(attend, "attention", unscaled=True)},
            Failure(None, r"^A \(3 queries, 4 keys, no mask\) differs", r" at \["),
        ),
        (
            "test_attention_visible",
            {"attention": as_student(attend, "attention", naive=True)},
            Failure(None, r"^A for the queries times 1000 .* contains nan"),
        ),
        (
            "test_attention_visible",
            {"padding_mask": as_student(padding, "padding_mask", off_by_one=True)},
            Failure(None, r"^padding_mask\(\[4, 2\], 4\) differs", r"by 1.0e\+00 at \[1, 0, 2\]"),
        ),
        (
            "test_multi_head_visible",
            {"multi_head_attention": as_student(heads, "multi_head_attention", wrong_split=True)},
            Failure(None, r"^the weights of head 0 \(columns 0..1 of Q, K and V\) differs"),
        ),
        (
            "test_multi_head_visible",
            {"multi_head_attention": as_student(heads, "multi_head_attention", skip_out_bias=True)},
            Failure(None, r"^out \(no mask\) differs", r"by 3.0e-01 at \[\d, 3\]"),
        ),
        (
            "test_sinusoidal_visible",
            {"sinusoidal_encoding": as_student(sinusoids, "sinusoidal_encoding", blocks=True)},
            Failure(None, r"^sinusoidal_encoding\(3, 4\) differs", "sines in even columns"),
        ),
        (
            "test_sinusoidal_visible",
            {"shift_matrix": as_student(shift, "shift_matrix", transposed=True)},
            Failure(None, r"^shift_matrix\(2, 4\) differs", r"by 1.8e\+00"),
        ),
        (
            "test_rope_visible",
            {"apply_rope": as_student(rotate, "apply_rope", halves=True)},
            Failure(None, r"^apply_rope\(x, \[0, 1, 2\]\) differs", r" at \[1, \d\]"),
        ),
        (
            "test_rope_visible",
            {"apply_rope": as_student(rotate, "apply_rope", arange=True)},
            Failure(None, r"^apply_rope\(x, \[3, 10, 11\]\) \(positions that skip\) differs"),
        ),
    ],
)


def test_visible_tests_pass_with_the_independent_implementations():
    with np.errstate(divide="ignore"):
        run_visible(
            ASSIGNMENT,
            "test_attention_visible",
            attention=as_student(attend, "attention"),
            causal_mask=as_student(causal, "causal_mask"),
            padding_mask=as_student(padding, "padding_mask"),
        )
    run_visible(
        ASSIGNMENT, "test_multi_head_visible", multi_head_attention=as_student(heads, "mha")
    )
    run_visible(
        ASSIGNMENT,
        "test_sinusoidal_visible",
        sinusoidal_encoding=as_student(sinusoids, "sinusoidal_encoding"),
        relative_dot=as_student(dots, "relative_dot"),
        shift_matrix=as_student(shift, "shift_matrix"),
    )
    run_visible(ASSIGNMENT, "test_rope_visible", apply_rope=as_student(rotate, "apply_rope"))


# --------------------------------------------------------------------------------------------
# Shortcuts: torch's attention, softmax and course.models.attention are trapped
# --------------------------------------------------------------------------------------------


def attention_with_sdpa(Q, K, V, mask=None):
    return hidden.torch_attention(Q, K, V, mask)


def attention_with_torch_softmax(Q, K, V, mask=None):
    s = np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2) / np.sqrt(np.shape(Q)[-1])
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    A = torch.softmax(torch.tensor(s), dim=-1).numpy()
    return A @ np.asarray(V), A


def heads_with_torch(X, params, h, mask=None):
    return hidden.torch_multi_head(X, params, h, mask)


@pytest.mark.parametrize(
    ("implementation", "called"),
    [
        (attention_with_sdpa, "torch.nn.functional.scaled_dot_product_attention"),
        (attention_with_torch_softmax, "torch.softmax"),
    ],
)
def test_check_attention_rejects_torch_shortcuts(implementation, called):
    rng = np.random.default_rng(3)
    Q, K, V = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 2))
    for mine, theirs in zip(
        attend(Q, K, V), implementation(Q, K, V), strict=True
    ):  # right outside the traps
        np.testing.assert_allclose(theirs, mine, atol=1e-12)
    students = (
        as_student(implementation, "attention"),
        as_student(causal, "causal_mask"),
        as_student(padding, "padding_mask"),
    )
    expect_shortcut(lambda: hidden.check_attention(*students), "attention", called)


def test_check_multi_head_attention_rejects_nn_multihead_attention():
    student = as_student(heads_with_torch, "multi_head_attention")
    expect_shortcut(
        lambda: hidden.check_multi_head_attention(student),
        "multi_head_attention",
        "torch.nn.MultiheadAttention",
    )


@pytest.fixture
def lecture_module(monkeypatch):
    """A stand-in for Lecture 5's ``course.models.attention`` (on a branch without it)."""
    import course.models

    module = types.ModuleType("course.models.attention")

    def rope(x, positions, base=10000.0):
        return rotate(x, positions, base)

    def sinusoidal_encoding(n, d, base=10000.0):
        return sinusoids(n, d, base)

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

    def student_rope(x, positions, base=10000.0):
        return np.asarray(lecture_module.rope(x, positions, base))

    expect_shortcut(
        lambda: hidden.check_rope(as_student(student_rope, "apply_rope")),
        "apply_rope",
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
    "torch.Tensor.softmax",
    "torch.autograd.grad",
    "torch.Tensor.backward",
    "course.models.recurrent.CharLSTM",
}


def test_traps_cover_the_routines_that_would_do_the_work():
    expect_traps(hidden, REQUIRED_TRAPS)
