"""Assignment 6: the hidden checks reject plausible bugs and torch's shortcuts.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps) is in ``test_assignments.py``. Here: independent implementations (an RMSNorm
that scales its rows by powers of two, its backward pass one row at a time, and finite
differences for both; an encoder layer with one loop per head, a mask from a causal band
and a cumulative sum, a parameter count summed layer by layer) with one switch per plausible
bug, each of which must fail its check with a message that names the case; the visible
tests name the typical mistakes; and shortcuts through ``F.rms_norm``, autograd,
``torch.func``,
``nn.TransformerEncoderLayer``, ``nn.Embedding`` and the ``course`` package, which are caught
inside the traps.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from autograder.hidden import a6_transformer as hidden
from course.checks import a6_transformer as visible
from tests.grading.bug_injection import (
    Failure,
    expect_bad_cases_refused,
    expect_failure,
    expect_shortcut,
    expect_traps,
    heads_attention,
    row_id,
    run_visible,
    shortcut_tests,
    visible_mistake_tests,
)
from tests.grading.solution_loader import as_student

ASSIGNMENT = "a6_transformer"

pytestmark = pytest.mark.usefixtures("one_thread")

# --------------------------------------------------------------------------------------------
# Independent implementations with bug switches
# --------------------------------------------------------------------------------------------


def rms_forward(
    x,
    gamma,
    eps=1e-6,
    *,
    naive_square=False,
    eps_unscaled=False,
    mean_subtracted=False,
    eps_outside=False,
    rms_not_rrms=False,
    last_axis_only=False,
    keepdims=False,
    accept_zero_eps=False,
):
    """RMSNorm with each row scaled by a power of two of its size (np.frexp), not its max."""
    x, gamma = np.asarray(x, dtype=float), np.asarray(gamma, dtype=float)
    k = gamma.ndim
    if k == 0 or x.ndim < k or x.shape[x.ndim - k :] != gamma.shape:
        raise ValueError("shapes")
    if eps <= 0 and not accept_zero_eps:
        raise ValueError("eps")
    axes = (x.ndim - 1,) if last_axis_only else tuple(range(x.ndim - k, x.ndim))
    if mean_subtracted:
        x = x - x.mean(axis=axes, keepdims=True)
    if naive_square:
        power = np.ones(x.shape[: x.ndim - len(axes)] + (1,) * len(axes))
    else:
        exponent = np.frexp(np.abs(x).max(axis=axes, keepdims=True))[1]
        power = np.ldexp(1.0, np.maximum(exponent, 0))  # 2**e >= the row's size, or 1
    small = x / power
    tiny = eps if eps_unscaled else eps / power / power
    with np.errstate(over="ignore"):
        mean_square = np.mean(small * small, axis=axes, keepdims=True)
    root = power * (
        np.sqrt(mean_square) + np.sqrt(tiny) if eps_outside else np.sqrt(mean_square + tiny)
    )
    rrms = 1.0 / root
    y = x * rrms * gamma
    if keepdims:
        return y, rrms
    rrms = rrms.reshape(x.shape[: x.ndim - len(axes)])
    return y, 1.0 / rrms if rms_not_rrms else rrms


def rms_backward(
    grad_y,
    x,
    gamma,
    rrms,
    *,
    no_projection=False,
    forget_gamma=False,
    cube_form=False,
    sum_not_mean=False,
    gamma_first_axis_only=False,
    recompute_without_eps=False,
    accept_bad_rrms=False,
):
    """dL/dx as the projection of r g away from x_hat, one row at a time (a loop)."""
    grad_y, x, gamma = (np.asarray(a, dtype=float) for a in (grad_y, x, gamma))
    rrms = np.asarray(rrms, dtype=float)
    k = gamma.ndim
    if k == 0 or x.ndim < k or x.shape[x.ndim - k :] != gamma.shape or grad_y.shape != x.shape:
        raise ValueError("shapes")
    outer = x.shape[: x.ndim - k]
    if not accept_bad_rrms and (rrms.shape != outer or np.any(rrms <= 0)):
        raise ValueError("rrms")
    rows, ups = x.reshape(-1, gamma.size), grad_y.reshape(-1, gamma.size)
    r_rows = np.broadcast_to(rrms, outer).reshape(-1)
    if recompute_without_eps:
        r_rows = np.array([1.0 / np.sqrt(np.mean(row**2)) for row in rows])
    flat_gamma = np.ones(gamma.size) if forget_gamma else gamma.reshape(-1)
    grads, gamma_parts = [], []
    for row, up, r in zip(rows, ups, r_rows, strict=True):
        g = up * flat_gamma
        x_hat = row * r
        if no_projection:
            grads.append(r * g)
        elif cube_form:
            with np.errstate(all="ignore"):
                grads.append(r * g - r**3 * row * np.dot(g, row) / row.size)
        else:
            average = np.dot(g, x_hat) / (1 if sum_not_mean else row.size)
            grads.append(r * (g - x_hat * average))
        gamma_parts.append(up * x_hat)
    grad_x = np.array(grads).reshape(x.shape)
    parts = np.array(gamma_parts).reshape(x.shape)
    if gamma_first_axis_only and len(outer) > 0:
        grad_gamma = parts.sum(axis=0)
    else:
        grad_gamma = parts.reshape(-1, *gamma.shape).sum(axis=0)
    return grad_x, grad_gamma


def finite_differences(x, gamma, grad_y, eps, step=1e-6):
    """dL/dx and dL/dgamma of L = sum(grad_y * RMSNorm(x)), by central differences."""

    def loss(x_, gamma_):
        return np.sum(grad_y * rms_forward(x_, gamma_, eps)[0])

    grad_x, grad_gamma = np.zeros_like(x), np.zeros_like(gamma)
    for target, out, other in ((x, grad_x, "x"), (gamma, grad_gamma, "gamma")):
        for index in np.ndindex(target.shape):
            bump = np.zeros_like(target)
            bump[index] = step
            if other == "x":
                out[index] = (loss(x + bump, gamma) - loss(x - bump, gamma)) / (2 * step)
            else:
                out[index] = (loss(x, gamma + bump) - loss(x, gamma - bump)) / (2 * step)
    return grad_x, grad_gamma


def encode(
    x,
    params,
    h,
    norm_first=False,
    mask=None,
    eps=1e-5,
    *,
    other_order=False,
    scale_by_d_model=False,
    ignore_eps=False,
    no_ffn_residual=False,
    gelu=False,
    wrong_split=False,
    torch_mask_convention=False,
    check_divisible=True,
    name_missing=True,
    check_shapes=True,
):
    x = np.asarray(x, dtype=float)
    if x.ndim < 2 or not isinstance(h, int) or h < 1:
        raise ValueError("x or h")
    d = x.shape[-1]
    if check_divisible and d % h:
        raise ValueError("d_model is not divisible by num_heads")
    keys = [f"self_attn.W_{p}.{kind}" for p in "qkvo" for kind in ("weight", "bias")]
    keys += [f"ffn.linear{i}.{kind}" for i in (1, 2) for kind in ("weight", "bias")]
    keys += [f"norm{i}.{kind}" for i in (1, 2) for kind in ("weight", "bias")]
    for key in keys:
        if key not in params:
            raise ValueError(f"missing {key}" if name_missing else "a weight is missing")
    w = {key: np.asarray(params[key], dtype=float) for key in keys}
    d_ff = w["ffn.linear1.weight"].shape[0]
    if check_shapes:
        shapes = [w[k].shape for k in keys]
        wanted = [(d, d), (d,)] * 4 + [(d_ff, d), (d_ff,), (d, d_ff), (d,)] + [(d,)] * 4
        if shapes != wanted:
            raise ValueError("a weight has the wrong shape")
    first = (not norm_first) if other_order else norm_first

    def ln(z, i):
        e = 1e-5 if ignore_eps else eps
        mu = z.mean(-1, keepdims=True)
        return (z - mu) / np.sqrt(z.var(-1, keepdims=True) + e) * w[f"norm{i}.weight"] + w[
            f"norm{i}.bias"
        ]

    def mha(z):
        q, k, v = (z @ w[f"self_attn.W_{p}.weight"].T + w[f"self_attn.W_{p}.bias"] for p in "qkv")
        heads, _ = heads_attention(
            q,
            k,
            v,
            h,
            mask,
            scale_by_d_model=scale_by_d_model,
            wrong_split=wrong_split,
            torch_mask_convention=torch_mask_convention,
        )
        return np.concatenate(heads, -1) @ w["self_attn.W_o.weight"].T + w["self_attn.W_o.bias"]

    def ffn(z):
        inner = z @ w["ffn.linear1.weight"].T + w["ffn.linear1.bias"]
        if gelu:
            inner = 0.5 * inner * (1 + np.tanh(0.7978845608 * (inner + 0.044715 * inner**3)))
        else:
            inner = np.maximum(inner, 0)
        return inner @ w["ffn.linear2.weight"].T + w["ffn.linear2.bias"]

    keep_ffn = 0.0 if no_ffn_residual else 1.0
    if first:
        z = x + mha(ln(x, 1))
        return keep_ffn * z + ffn(ln(z, 2))
    z = ln(x + mha(x), 1)
    return ln(keep_ffn * z + ffn(z), 2)


def layout(
    lengths,
    n,
    m=None,
    left_padded=False,
    *,
    ignore_left=False,
    no_fallback=False,
    diagonal_from_zero=False,
    positions_absolute=False,
    pad_positions_count_on=False,
    allow_more_queries=False,
    accept_floats=False,
):
    m = n if m is None else m
    if not all(isinstance(s, (int, np.integer)) and s >= 1 for s in (n, m)):
        raise ValueError("n and m")
    if n > m and not allow_more_queries:
        raise ValueError("n > m")
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or lengths.size == 0:
        raise ValueError("lengths")
    if lengths.dtype.kind not in "iu" and not accept_floats:
        raise ValueError("lengths")
    lengths = lengths.astype(int)
    if lengths.min() < 1 or lengths.max() > m:
        raise ValueError("range")
    left = left_padded and not ignore_left
    j = np.arange(m)
    start = m - lengths if left else 0 * lengths
    real = (j >= start[:, None]) & (j < (start + lengths)[:, None])  # (B, m)
    band = np.tril(np.ones((n, m), dtype=bool), k=0 if diagonal_from_zero else m - n)  # (n, m)
    mask = band[None] & real[:, None, :]  # (B, n, m)
    if not no_fallback:
        own = np.eye(n, m, k=m - n, dtype=bool)
        mask = mask | (~mask.any(-1, keepdims=True) & own[None])
    order = np.cumsum(real, axis=1) - 1  # (B, m): index among the real tokens
    if positions_absolute:
        positions = np.broadcast_to(j[m - n :], (len(lengths), n)).copy()
    elif pad_positions_count_on:
        positions = np.maximum(order[:, m - n :], 0)
        positions = np.where(real[:, m - n :], positions, j[m - n :] - start[:, None])
        positions = np.maximum(positions, 0)
    else:
        positions = np.where(real[:, m - n :], order[:, m - n :], 0)
    return mask[:, None], positions


DEFAULTS = {
    "encoder_layers": 0,
    "src_vocab_size": None,
    "shared_embeddings": False,
    "tie_output": False,
    "bias": True,
    "final_norm": True,
    "max_len": 0,
}
REQUIRED = ("d_model", "num_heads", "d_ff", "decoder_layers", "tgt_vocab_size")


def count(
    config,
    *,
    cross_without_encoder=False,
    no_final_norm=False,
    norm_bias_always=False,
    output_bias=False,
    shared_twice=False,
    one_position_table=False,
    d_ff_is_4d=False,
    accept_unknown=False,
    accept_bools=False,
    in_place=False,
):
    if not accept_unknown and set(config) - set(REQUIRED) - set(DEFAULTS):
        raise ValueError(f"unknown keys {sorted(set(config) - set(REQUIRED) - set(DEFAULTS))}")
    if any(key not in config for key in REQUIRED):
        raise ValueError("missing key")
    if in_place:
        for key, value in DEFAULTS.items():
            config.setdefault(key, value)
        c = config
    else:
        c = {**DEFAULTS, **config}

    def integer(value, low):
        if isinstance(value, bool) and not accept_bools:
            return False
        return isinstance(value, (int, np.integer)) and value >= low

    if not all(integer(c[k], 1) for k in REQUIRED):
        raise ValueError("sizes")
    if not (integer(c["encoder_layers"], 0) and integer(c["max_len"], 0)):
        raise ValueError("counts")
    if not all(isinstance(c[k], bool) for k in ("shared_embeddings", "tie_output", "bias")):
        raise ValueError("options")
    if not isinstance(c["final_norm"], bool):
        raise ValueError("options")
    d, f = int(c["d_model"]), int(c["d_ff"])
    if d % c["num_heads"]:
        raise ValueError("num_heads")
    if d_ff_is_4d:
        f = 4 * d
    N_e, N_d, enc = int(c["encoder_layers"]), int(c["decoder_layers"]), c["encoder_layers"] > 0
    if enc and not integer(c["src_vocab_size"], 1):
        raise ValueError("src_vocab_size")
    if enc and c["shared_embeddings"] and c["src_vocab_size"] != c["tgt_vocab_size"]:
        raise ValueError("shared")
    b = 1 if c["bias"] else 0
    ln = d + (d if (c["bias"] or norm_bias_always) else 0)
    att = 4 * d * d + 4 * d * b
    ff = 2 * d * f + (f + d) * b
    last = 0 if (no_final_norm or not c["final_norm"]) else ln
    encoder = 0
    for _ in range(N_e):
        encoder += att + ff + 2 * ln
    encoder += last if enc else 0
    decoder = last
    for _ in range(N_d):
        if enc or cross_without_encoder:
            decoder += 2 * att + ff + 3 * ln
        else:
            decoder += att + ff + 2 * ln
    V = int(c["tgt_vocab_size"])
    embeddings = V * d
    if enc and (shared_twice or not c["shared_embeddings"]):
        embeddings += int(c["src_vocab_size"]) * d
    stacks = 1 if (one_position_table or not enc) else 2
    embeddings += int(c["max_len"]) * d * stacks
    output = (0 if c["tie_output"] else V * d) + (V if output_bias else 0)
    parts = {"embeddings": embeddings, "encoder": encoder, "decoder": decoder, "output": output}
    return parts | {"total": sum(parts.values())}


# --------------------------------------------------------------------------------------------
# The independent implementations pass; the references agree with them
# --------------------------------------------------------------------------------------------


def test_the_independent_implementations_pass_too(capsys):
    hidden.check_rms_norm(
        as_student(rms_forward, "rms_norm"), as_student(rms_backward, "rms_norm_backward")
    )
    with np.errstate(all="ignore"):
        hidden.check_encoder_layer(as_student(encode, "encoder_layer"))
    hidden.check_decoder_mask(as_student(layout, "decoder_mask_and_positions"))
    hidden.check_count_parameters(as_student(count, "count_parameters"))
    assert capsys.readouterr().out.count("hidden cases passed") == 4


def test_the_references_agree_with_the_independent_implementations():
    for case in hidden.rms_norm_cases():
        y, rrms, grad_x, grad_gamma = hidden.torch_rms_norm(
            case.x, case.gamma, case.grad_y, case.eps
        )
        mine_y, mine_rrms = rms_forward(case.x, case.gamma, case.eps)
        mine_grads = rms_backward(case.grad_y, case.x, case.gamma, mine_rrms)
        np.testing.assert_allclose(y, mine_y, rtol=1e-12, atol=1e-12, err_msg=case.label)
        np.testing.assert_allclose(rrms, mine_rrms, rtol=1e-12, atol=0, err_msg=case.label)
        for theirs, mine in zip((grad_x, grad_gamma), mine_grads, strict=True):
            size = np.abs(theirs).max()
            np.testing.assert_allclose(theirs / size, mine / size, atol=1e-12, err_msg=case.label)
    rng = np.random.default_rng(0)
    x, gamma, grad_y = (
        rng.normal(size=(3, 2, 4)),
        rng.normal(size=(2, 4)),
        rng.normal(size=(3, 2, 4)),
    )
    _, _, grad_x, grad_gamma = hidden.torch_rms_norm(x, gamma, grad_y, 0.01)
    numeric_x, numeric_gamma = finite_differences(x, gamma, grad_y, 0.01)
    np.testing.assert_allclose(grad_x, numeric_x, atol=1e-8)
    np.testing.assert_allclose(grad_gamma, numeric_gamma, atol=1e-8)
    params = hidden.random_state_dict(rng, 6, 9)
    X = rng.normal(size=(2, 4, 6))
    mask = np.tril(np.ones((4, 4), bool)) & np.array([True, True, True, False])
    for first in (False, True):
        np.testing.assert_allclose(
            hidden.torch_encoder_layer(X, params, 3, first, mask, 1e-4),
            encode(X, params, 3, first, mask, 1e-4),
            atol=1e-12,
        )
    for case in hidden.mask_cases():
        setting = (case.lengths, case.n, case.m, case.left_padded)
        for mine, theirs in zip(
            layout(*setting), hidden.entry_by_entry(**case.inputs), strict=True
        ):
            np.testing.assert_array_equal(theirs, mine)
    for case in hidden.count_cases():
        assert hidden.modules_count(case.config) == count(case.config)


def test_the_visible_tables_agree_with_the_references():
    """Every expected value in the tables of the visible checks (course.checks.a6_...), worked
    out once, against the hidden checks' references, to the tolerance it is checked to (each
    a Near); every call on bad input makes the independent implementation raise ValueError."""
    for case in visible.part_a_cases():
        eps = 1e-6 if case.eps is None else case.eps
        grad_y = np.zeros(np.shape(case.x)) if case.grad_y is None else case.grad_y
        reference = hidden.torch_rms_norm(case.x, case.gamma, grad_y, eps)
        got = dict(zip(("y", "rrms", "grad_x", "grad_gamma"), reference, strict=True))
        for quantity, value in got.items():
            near = case.inputs.get(f"expected_{quantity}")
            if near is not None:
                assert isinstance(near, visible.Near), (case.label, quantity)
                np.testing.assert_allclose(
                    near.value, near.times * value, rtol=0, atol=near.atol, err_msg=case.label
                )
        if case.rrms is not None:  # given to rms_norm_backward in place of rms_norm's
            np.testing.assert_allclose(case.rrms, got["rrms"], rtol=1e-9, atol=0)
    for case in visible.part_b_cases():
        y = hidden.torch_encoder_layer(
            case.x, case.params, case.num_heads, bool(case.norm_first), case.mask, 1e-5
        )
        y = y if case.sequence is None else y[case.sequence]
        np.testing.assert_allclose(case.expected_y, y, rtol=0, atol=1e-9, err_msg=case.label)
    for case in visible.part_c_cases():
        mask, positions = hidden.entry_by_entry(
            case.lengths, case.n, case.m, bool(case.left_padded)
        )
        mask = mask[:, 0] if case.sequence is None else mask[case.sequence, 0]
        np.testing.assert_array_equal(case.expected_mask, mask, err_msg=case.label)
        np.testing.assert_array_equal(case.expected_positions, positions, err_msg=case.label)
    for case in visible.part_d_cases():
        assert hidden.modules_count(case.config) == case.expected_counts, case.label
    functions = {"rms_norm": rms_forward, "rms_norm_backward": rms_backward,
                 "encoder_layer": encode, "decoder_mask_and_positions": layout,
                 "count_parameters": count}  # fmt: skip
    tables = (visible.part_a_bad_cases, visible.part_b_bad_cases, visible.part_c_bad_cases,
              visible.part_d_bad_cases)  # fmt: skip
    expect_bad_cases_refused(tables, functions)


def test_the_visible_counts_are_those_of_the_torch_modules():
    """The visible test's counts, and the base model's, from modules built with each option."""
    base = dict(d_model=512, num_heads=8, d_ff=2048, encoder_layers=6, decoder_layers=6,
                src_vocab_size=37000, tgt_vocab_size=37000, shared_embeddings=True,
                tie_output=True)  # fmt: skip
    assert hidden.modules_count(base)["total"] == 63_084_544
    # the body alone is torch.nn.Transformer's count
    body = torch.nn.Transformer(512, 8, 6, 6, 2048, batch_first=True, device="meta")
    counted = hidden.modules_count(base)
    assert counted["encoder"] + counted["decoder"] == sum(p.numel() for p in body.parameters())
    small = dict(d_model=64, num_heads=4, d_ff=256, decoder_layers=2, tgt_vocab_size=100,
                 bias=False, max_len=32)  # fmt: skip
    assert hidden.modules_count(small) == {
        "embeddings": 8_448, "encoder": 0, "decoder": 98_624, "output": 6_400, "total": 113_472,
    }  # fmt: skip
    gpt2 = dict(d_model=768, num_heads=12, d_ff=3072, decoder_layers=12, tgt_vocab_size=50257,
                tie_output=True, max_len=1024)  # fmt: skip
    assert hidden.modules_count(gpt2)["total"] == 124_439_808  # GPT-2 small's released weights


def test_the_hard_cases_are_hard():
    """Squaring the rows near 1e200 as they stand really overflows, and so does a backward
    pass written with r**3; the rows near 1e-3 are where eps matters; big inputs are big."""
    large = [case for case in hidden.rms_norm_cases() if "1e200" in case.label]
    assert large
    for case in large:
        y, rrms, grad_x, _ = hidden.torch_rms_norm(case.x, case.gamma, case.grad_y, case.eps)
        with np.errstate(all="ignore"):
            naive_y = rms_forward(case.x, case.gamma, case.eps, naive_square=True)[0]
            cubed = rms_backward(case.grad_y, case.x, case.gamma, rrms, cube_form=True)[0]
        assert np.abs(naive_y - y).max() > 0.1
        assert np.abs(cubed - grad_x).max() > 0.01 * np.abs(grad_x).max()
    small = [case for case in hidden.rms_norm_cases() if "1e-3" in case.label]
    for case in small:
        rrms = hidden.torch_rms_norm(case.x, case.gamma, case.grad_y, case.eps)[1]
        assert np.all(1.0 / rrms**2 < 100 * case.eps)  # eps is a real part of r
    lonely = [case for case in hidden.mask_cases() if "all padding but one" in case.label]
    assert lonely and any(case.left_padded for case in lonely)


# --------------------------------------------------------------------------------------------
# Plausible bugs
# --------------------------------------------------------------------------------------------


ROWS = r"^rms_norm, 3 rows of D=5$"
BACK_ROWS = r"^rms_norm_backward, 3 rows of D=5$"
LARGE = r"^rms_norm, rows near 1e200 \(their squares overflow\)$"
POST = r"^encoder_layer, n=5, d_model=8, h=2, d_ff=12, post-norm$"
LEFT = r"^decoder_mask_and_positions, lengths \[5, 3, 1\], n=m=5, left padding$"
RIGHT = r"^decoder_mask_and_positions, lengths \[5, 3, 1\], n=m=5, right padding$"
BIG = r"^count_parameters, the big model "


def _check_rms(forward_bugs: dict, backward_bugs: dict) -> None:
    hidden.check_rms_norm(
        as_student(rms_forward, "rms_norm", **forward_bugs),
        as_student(rms_backward, "rms_norm_backward", **backward_bugs),
    )


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"naive_square": True}, Failure(LARGE, "^y ")),
        ({"eps_unscaled": True}, Failure(ROWS, "^y differs")),
        (
            {"mean_subtracted": True},
            Failure(ROWS, "^y differs"),
        ),
        ({"eps_outside": True}, Failure(ROWS, "^y differs")),
        (
            {"rms_not_rrms": True},
            Failure(ROWS, r"^rrms = 1 / sqrt\(mean\(x\*\*2\) \+ eps\) differs"),
        ),
        (
            {"last_axis_only": True},
            Failure(r"^rms_norm, S = \(3, 4\) over x of shape \(2, 3, 4\)$", "^rrms should be"),
        ),
        ({"keepdims": True}, Failure(ROWS, r"^rrms should be a NumPy array of shape \(3,\)")),
        ({"accept_zero_eps": True}, Failure(None, "^rms_norm with eps = 0", "should raise")),
    ],
    ids=row_id,
)
def test_check_rms_norm_rejects_forward_bug(bugs, failure):
    with np.errstate(all="ignore"):
        expect_failure(lambda: _check_rms(bugs, {}), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"no_projection": True}, Failure(BACK_ROWS, r"^grad_x = dL/dx differs")),
        ({"forget_gamma": True}, Failure(BACK_ROWS, r"^grad_x = dL/dx differs")),
        (
            {"cube_form": True},
            Failure(r"^rms_norm_backward, rows near 1e200 ", r"^grad_x = dL/dx \(divided by"),
        ),
        ({"sum_not_mean": True}, Failure(BACK_ROWS, r"^grad_x = dL/dx differs")),
        (
            {"gamma_first_axis_only": True},
            Failure(r"^rms_norm_backward, a batch \(2, 3, 4\)", r"^grad_gamma should"),
        ),
        (
            {"recompute_without_eps": True},
            Failure(BACK_ROWS, r"^grad_x = dL/dx differs"),
        ),
        (
            {"accept_bad_rrms": True},
            Failure(None, r"^rms_norm_backward with rrms of shape \(1,\) for two rows", "should"),
        ),
    ],
    ids=row_id,
)
def test_check_rms_norm_rejects_backward_bug(bugs, failure):
    with np.errstate(all="ignore"):
        expect_failure(lambda: _check_rms({}, bugs), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"other_order": True}, Failure(POST, "^y differs")),
        ({"scale_by_d_model": True}, Failure(POST, "^y differs")),
        (
            {"ignore_eps": True},
            Failure(r"^encoder_layer, B=2, n=5, d_model=h=4 .*eps=1e-3$", "^y "),
        ),
        ({"no_ffn_residual": True}, Failure(POST, "^y differs")),
        ({"gelu": True}, Failure(POST, "^y differs")),
        ({"wrong_split": True}, Failure(POST, "^y differs")),
        (
            {"torch_mask_convention": True},
            Failure(r"^encoder_layer, B=3, n=4, .*padding mask", "^y contains nan"),
        ),
        (
            {"check_divisible": False},
            Failure(
                None,
                r"^encoder_layer with d_model = 6 and num_heads = 4 \(not a divisor\)",
                r"raised ValueError\(",
                "not divisible",
            ),
        ),
        (
            {"name_missing": False},
            Failure(None, "^encoder_layer with no 'self_attn.W_v.bias'", "the missing weight"),
        ),
        (
            {"check_shapes": False},
            Failure(
                None,
                r"^encoder_layer with a self_attn.W_q.bias of shape \(1,\)",
                "should raise ValueError",
            ),
        ),
    ],
    ids=row_id,
)
def test_check_encoder_layer_rejects_bug(bugs, failure):
    student = as_student(encode, "encoder_layer", **bugs)
    with np.errstate(all="ignore"):
        expect_failure(lambda: hidden.check_encoder_layer(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        (
            {"ignore_left": True},
            Failure(LEFT, r"^mask is True at \[1, 0, 1, 0\]", r"sequence 1, query 1 .*key 0"),
        ),
        ({"no_fallback": True}, Failure(LEFT, r"^mask is False at \[1, 0, 0, 0\]")),
        (
            {"diagonal_from_zero": True},
            Failure(
                r"^decoder_mask_and_positions, a cache: lengths \[6, 4, 1\], n=3 of m=6, left ",
                r"^mask is False at \[0, 0, 0, 1\]",
                r"sequence 0, query 0 at position 3",
            ),
        ),
        ({"positions_absolute": True}, Failure(RIGHT, r"^positions is 3 at \[1, 3\]")),
        ({"pad_positions_count_on": True}, Failure(RIGHT, r"^positions is 3 at \[1, 3\]")),
        ({"allow_more_queries": True}, Failure(None, "with n = 4 > m = 3", "should raise")),
        (
            {"accept_floats": True},
            Failure(None, r"with float lengths \[1.0, 2.0\]", "should raise ValueError"),
        ),
    ],
    ids=row_id,
)
def test_check_decoder_mask_rejects_bug(bugs, failure):
    student = as_student(layout, "decoder_mask_and_positions", **bugs)
    expect_failure(lambda: hidden.check_decoder_mask(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        (
            {"cross_without_encoder": True},
            Failure(
                "^count_parameters, GPT-2 small ",
                "^decoder is 113,422,848",
                "modules have 85,056,000",
                r"off by \+28,366,848",
            ),
        ),
        ({"no_final_norm": True}, Failure(BIG, "^encoder is ")),
        (
            {"norm_bias_always": True},
            Failure("^count_parameters, no biases with an encoder", "^encoder is"),
        ),
        ({"output_bias": True}, Failure(BIG, "^output is 37,000")),
        ({"shared_twice": True}, Failure(BIG, "^embeddings is ")),
        (
            {"one_position_table": True},
            Failure("^count_parameters, one layer each", "^embeddings is "),
        ),
        (
            {"d_ff_is_4d": True},
            Failure("^count_parameters, an encoder-decoder with two vocabularies", "^encoder is "),
        ),
        (
            {"accept_unknown": True},
            Failure(None, "^count_parameters with the unknown key 'n_layers'", "should"),
        ),
        (
            {"accept_bools": True},
            Failure(None, r"^count_parameters with num_heads = True \(a bool\)", "should"),
        ),
        ({"in_place": True}, Failure(BIG, "in place: config had keys")),
    ],
    ids=row_id,
)
def test_check_count_parameters_rejects_bug(bugs, failure):
    student = as_student(count, "count_parameters", **bugs)
    expect_failure(lambda: hidden.check_count_parameters(student), failure)


# --------------------------------------------------------------------------------------------
# The visible tests name the typical mistakes
# --------------------------------------------------------------------------------------------


def lecture_style_rms_norm(x, gamma, eps=1e-6):
    """A torch RMSNorm over the last axis, returning a tensor, as a lecture would write it."""
    x = torch.as_tensor(np.asarray(x, dtype=float))
    return torch.as_tensor(gamma) * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def test_a_lecture_style_rms_norm_fails_the_visible_test():
    expect_failure(
        lambda: run_visible(
            ASSIGNMENT,
            "test_rms_norm_visible",
            rms_norm=lecture_style_rms_norm,
            rms_norm_backward=as_student(rms_backward, "rms_norm_backward"),
        ),
        Failure("^rms_norm, two rows", "^rms_norm should return a tuple", "got Tensor"),
    )


def _visible_rms(forward_bugs: dict, backward_bugs: dict) -> dict:
    return {
        "rms_norm": as_student(rms_forward, "rms_norm", **forward_bugs),
        "rms_norm_backward": as_student(rms_backward, "rms_norm_backward", **backward_bugs),
    }


test_visible_tests_name_the_mistake = visible_mistake_tests(
    ASSIGNMENT,
    [
        (
            "test_rms_norm_visible",
            _visible_rms({"naive_square": True}, {}),
            Failure(r"the row 1e200 \(1, 2, 3, 4\) \(its squares overflow\)", "^y differs"),
        ),
        (
            "test_rms_norm_visible",
            _visible_rms({"mean_subtracted": True}, {}),
            Failure("^rms_norm, two rows, D = 4$", "^y differs"),
        ),
        (
            "test_rms_norm_visible",
            _visible_rms({"last_axis_only": True}, {}),
            Failure(r"over the trailing shape S = \(2, 3\)", "^y differs"),
        ),
        (
            "test_rms_norm_visible",
            _visible_rms({}, {"no_projection": True}),
            Failure("^rms_norm_backward, two rows", r"^grad_x = dL/dx differs"),
        ),
        (
            "test_rms_norm_visible",
            _visible_rms({}, {"cube_form": True}),
            Failure("^rms_norm_backward, the row 1e200", r"^1e200 \* grad_x differs"),
        ),
        (
            "test_rms_norm_visible",
            _visible_rms({"rms_not_rrms": True}, {}),
            Failure(
                "^rms_norm, two rows",
                r"^rrms = 1 / sqrt\(mean\(x\*\*2\) \+ eps\) \(one per row\) differs",
            ),
        ),
        (
            "test_encoder_layer_visible",
            {"encoder_layer": as_student(encode, "encoder_layer", other_order=True)},
            Failure(r"^encoder_layer, x \(3, 4\), 2 heads, post-norm$", "^y differs"),
        ),
        (
            "test_encoder_layer_visible",
            {"encoder_layer": as_student(encode, "encoder_layer", torch_mask_convention=True)},
            Failure("a batch of x and x", r"^y of sequence 0 \(no padding\) contains nan"),
        ),
        (
            "test_decoder_mask_visible",
            {"decoder_mask_and_positions": as_student(layout, "dmp", no_fallback=True)},
            Failure(
                r"^decoder_mask_and_positions, lengths \[3, 1\], n = 3, left padding",
                r"^the mask of sequence 1 differs .* by 1.0e\+00 at \[0, 0\]",
            ),
        ),
        (
            "test_decoder_mask_visible",
            {"decoder_mask_and_positions": as_student(layout, "dmp", diagonal_from_zero=True)},
            Failure(
                r"a cache: .* n = 2 queries at positions 2, 3; m = 4 keys", "^the mask differs"
            ),
        ),
        (
            "test_count_parameters_visible",
            {"count_parameters": as_student(count, "count_parameters", cross_without_encoder=True)},
            Failure(
                "^count_parameters, a decoder-only model without biases",
                "^decoder is 131,520",
                "98,624",
                r"off by \+32,896",
            ),
        ),
        (
            "test_count_parameters_visible",
            {"count_parameters": as_student(count, "count_parameters", no_final_norm=True)},
            Failure(
                "^count_parameters, the base model$",
                "^encoder is 18,914,304",
                "18,915,328",
                "off by -1,024",
            ),
        ),
    ],
)


def test_visible_tests_pass_with_the_independent_implementations():
    run_visible(ASSIGNMENT, "test_rms_norm_visible", **_visible_rms({}, {}))
    with np.errstate(all="ignore"):
        run_visible(
            ASSIGNMENT, "test_encoder_layer_visible", encoder_layer=as_student(encode, "enc")
        )
    run_visible(
        ASSIGNMENT,
        "test_decoder_mask_visible",
        decoder_mask_and_positions=as_student(layout, "decoder_mask_and_positions"),
    )
    run_visible(
        ASSIGNMENT, "test_count_parameters_visible", count_parameters=as_student(count, "count")
    )


# --------------------------------------------------------------------------------------------
# Shortcuts: torch's layers and the course package are trapped
# --------------------------------------------------------------------------------------------


def rms_norm_with_torch(x, gamma, eps=1e-6):
    x, gamma = torch.as_tensor(np.asarray(x, dtype=float)), torch.as_tensor(np.asarray(gamma))
    axes = tuple(range(x.dim() - gamma.dim(), x.dim()))
    y = torch.nn.functional.rms_norm(x, tuple(gamma.shape), gamma, eps)
    return y.numpy(), torch.rsqrt(x.pow(2).mean(dim=axes) + eps).numpy()


def rms_norm_backward_with_autograd(grad_y, x, gamma, rrms):
    """Recomputes the forward pass in torch and asks autograd (eps read back from rrms)."""
    x_t = torch.tensor(np.asarray(x, dtype=float), requires_grad=True)
    gamma_t = torch.tensor(np.asarray(gamma, dtype=float), requires_grad=True)
    k = gamma_t.dim()
    shape = (*np.shape(rrms), *([1] * k))
    eps = torch.as_tensor(1.0 / np.asarray(rrms) ** 2).reshape(shape) - x_t.detach().pow(2).mean(
        dim=tuple(range(x_t.dim() - k, x_t.dim())), keepdim=True
    )
    y = (
        gamma_t
        * x_t
        * torch.rsqrt(
            x_t.pow(2).mean(dim=tuple(range(x_t.dim() - k, x_t.dim())), keepdim=True) + eps
        )
    )
    y.backward(torch.as_tensor(np.asarray(grad_y, dtype=float)))
    return x_t.grad.numpy(), gamma_t.grad.numpy()


def rms_norm_backward_with_func(grad_y, x, gamma, rrms):
    """torch.func.vjp through a torch RMSNorm."""
    k = np.ndim(gamma)

    def forward(x_t, gamma_t):
        axes = tuple(range(x_t.dim() - k, x_t.dim()))
        return gamma_t * x_t * torch.rsqrt(x_t.pow(2).mean(dim=axes, keepdim=True) + 1e-6)

    _, pullback = torch.func.vjp(
        forward,
        torch.as_tensor(np.asarray(x, dtype=float)),
        torch.as_tensor(np.asarray(gamma, dtype=float)),
    )
    grad_x, grad_gamma = pullback(torch.as_tensor(np.asarray(grad_y, dtype=float)))
    return grad_x.numpy(), grad_gamma.numpy()


RMS_SHORTCUTS = [
    ("rms_norm", rms_norm_with_torch, "torch.nn.functional.rms_norm"),
    ("rms_norm_backward", rms_norm_backward_with_autograd, "torch.Tensor.backward"),
    ("rms_norm_backward", rms_norm_backward_with_func, "torch.func.vjp"),
]


@pytest.mark.parametrize(("name", "implementation", "called"), RMS_SHORTCUTS)
def test_check_rms_norm_rejects_torch_and_autograd(name, implementation, called):
    functions = {
        "rms_norm": as_student(rms_forward, "rms_norm"),
        "rms_norm_backward": as_student(rms_backward, "rms_norm_backward"),
    }
    functions[name] = as_student(implementation, name)
    expect_shortcut(
        lambda: hidden.check_rms_norm(functions["rms_norm"], functions["rms_norm_backward"]),
        name,
        re.escape(called),
    )


def encoder_layer_with_torch(x, params, h, norm_first=False, mask=None, eps=1e-5):
    return hidden.torch_encoder_layer(x, params, h, norm_first, mask, eps)


def encoder_layer_with_course(x, params, h, norm_first=False, mask=None, eps=1e-5):
    from course.models.transformer import EncoderLayer

    d, d_ff = np.shape(x)[-1], np.shape(params["ffn.linear1.weight"])[0]
    layer = EncoderLayer(d, h, d_ff, dropout=0.0, norm_first=norm_first).double().eval()
    layer.load_state_dict({k: torch.as_tensor(np.asarray(v)) for k, v in params.items()})
    with torch.no_grad():
        return layer(torch.as_tensor(np.asarray(x))).numpy()


def count_with_modules(config):
    return hidden.modules_count(config)


def count_with_course(config):
    from course.analysis.parameters import count_transformer

    c = {**DEFAULTS, **config}
    found = count_transformer(c["d_model"], c["d_ff"], c["encoder_layers"], c["decoder_layers"])
    return count(config) | {"total": found.total}


test_checks_reject_the_layers_being_taught = shortcut_tests(
    [
        (hidden.check_encoder_layer, encoder_layer_with_torch, "encoder_layer", "torch.nn.TransformerEncoderLayer"),
        (hidden.check_encoder_layer, encoder_layer_with_course, "encoder_layer", "course.models.transformer.EncoderLayer"),
        (hidden.check_count_parameters, count_with_modules, "count_parameters", "torch.nn.Embedding"),
        (hidden.check_count_parameters, count_with_course, "count_parameters", "course.analysis.parameters.count_transformer"),
    ]
)  # fmt: skip


def test_the_shortcuts_are_right_outside_the_traps():
    """The shortcut implementations above give the right answers when nothing is trapped."""
    for case in hidden.rms_norm_cases()[:3]:
        y, rrms = rms_forward(case.x, case.gamma, case.eps)
        np.testing.assert_allclose(
            rms_norm_with_torch(case.x, case.gamma, case.eps)[0], y, atol=1e-12
        )
        grads = rms_backward(case.grad_y, case.x, case.gamma, rrms)
        for shortcut in (rms_norm_backward_with_autograd, rms_norm_backward_with_func):
            for theirs, mine in zip(
                shortcut(case.grad_y, case.x, case.gamma, rrms), grads, strict=True
            ):
                np.testing.assert_allclose(theirs, mine, atol=1e-9)
    rng = np.random.default_rng(4)
    params, x = hidden.random_state_dict(rng, 6, 8), rng.normal(size=(2, 3, 6))
    np.testing.assert_allclose(
        encoder_layer_with_course(x, params, 2, True), encode(x, params, 2, True), atol=1e-12
    )
    config = hidden.count_cases()[0].config
    assert count_with_modules(config) == count(config)


REQUIRED_TRAPS = {
    "torch.nn.LayerNorm",
    "torch.nn.RMSNorm",
    "torch.nn.functional.layer_norm",
    "torch.nn.functional.rms_norm",
    "torch.rms_norm",
    "torch.autograd.functional.vjp",
    "torch.autograd.functional.jacobian",
    "torch.func.grad",
    "torch.func.vjp",
    "torch.func.jacrev",
    "torch.layer_norm",
    "torch.native_layer_norm",
    "torch.nn.TransformerEncoderLayer",
    "torch.nn.TransformerDecoderLayer",
    "torch.nn.Transformer",
    "torch.nn.MultiheadAttention",
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.functional.softmax",
    "torch.softmax",
    "torch.Tensor.softmax",
    "torch.autograd.grad",
    "torch.Tensor.backward",
    "torch.nn.Linear",
    "torch.nn.Embedding",
    "course.models.transformer.EncoderLayer",
    "course.models.transformer.Transformer",
    "course.models.attention.MultiHeadAttention",
    "course.analysis.parameters.count_transformer",
}


def test_traps_cover_the_routines_that_would_do_the_work():
    expect_traps(hidden, REQUIRED_TRAPS)
