"""Assignment 6: the hidden checks reject plausible bugs and torch's shortcuts.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps) is in ``test_assignments.py``. Here: independent implementations (a layer
norm through ``np.var``, an encoder layer with one loop per head, a mask from a causal band
and a cumulative sum, a parameter count summed layer by layer) with one switch per plausible
bug, each of which must fail its check with a message that names the case; the visible
tests name the typical mistakes; and shortcuts through ``F.layer_norm``,
``nn.TransformerEncoderLayer``, ``nn.Embedding`` and the ``course`` package, which are caught
inside the traps.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from autograder.hidden import a6_transformer as hidden
from tests.grading.bug_injection import (
    Failure,
    expect_failure,
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


def normalise(
    x,
    gamma,
    beta,
    eps=1e-5,
    *,
    one_pass=False,
    unbiased=False,
    last_axis_only=False,
    eps_outside=False,
    std_not_rstd=False,
    keepdims=False,
    accept_zero_eps=False,
):
    x, gamma, beta = (np.asarray(a, dtype=float) for a in (x, gamma, beta))
    k = gamma.ndim
    if k == 0 or gamma.shape != beta.shape or x.ndim < k or x.shape[x.ndim - k :] != gamma.shape:
        raise ValueError("shapes")
    if eps <= 0 and not accept_zero_eps:
        raise ValueError("eps")
    axes = (x.ndim - 1,) if last_axis_only else tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    if one_pass:
        var = (x**2).mean(axis=axes, keepdims=True) - mean**2
    else:
        var = np.var(x, axis=axes, keepdims=True, ddof=1 if unbiased else 0)
    if eps_outside:
        rstd = 1.0 / (np.sqrt(var) + eps)
    else:
        rstd = 1.0 / np.sqrt(var + eps)
    y = (x - mean) * rstd * gamma + beta
    if keepdims:
        return y, mean, rstd
    squeeze = x.shape[:-1] if last_axis_only else x.shape[: x.ndim - k]
    mean, rstd = mean.reshape(squeeze), rstd.reshape(squeeze)
    return y, mean, 1.0 / rstd if std_not_rstd else rstd


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
    hidden.check_layer_norm(as_student(normalise, "layer_norm"))
    with np.errstate(all="ignore"):
        hidden.check_encoder_layer(as_student(encode, "encoder_layer"))
    hidden.check_decoder_mask(as_student(layout, "decoder_mask_and_positions"))
    hidden.check_count_parameters(as_student(count, "count_parameters"))
    assert capsys.readouterr().out.count("hidden cases passed") == 4


def test_the_references_agree_with_the_independent_implementations():
    rng = np.random.default_rng(0)
    x, gamma, beta = rng.normal(size=(3, 2, 4)), rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    for mine, theirs in zip(
        normalise(x, gamma, beta, 0.01), hidden.torch_layer_norm(x, gamma, beta, 0.01), strict=True
    ):
        np.testing.assert_allclose(theirs, mine, atol=1e-13)
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
    """The one-pass variance really fails on the rows near 1e8; big inputs are big."""
    labels = [case.label for case in hidden.layer_norm_cases()]
    assert any("1e8" in label for label in labels)
    for case in hidden.layer_norm_cases():
        if "1e8" in case.label:
            setting = (case.x, case.gamma, case.beta, case.eps)
            naive = normalise(*setting, one_pass=True)[0]
            assert np.abs(naive - hidden.torch_layer_norm(*setting)[0]).max() > 0.01
    lonely = [case for case in hidden.mask_cases() if "all padding but one" in case.label]
    assert lonely and any(case.left_padded for case in lonely)


# --------------------------------------------------------------------------------------------
# Plausible bugs
# --------------------------------------------------------------------------------------------


ROWS = r"^layer_norm, 3 rows of D=5$"
POST = r"^encoder_layer, n=5, d_model=8, h=2, d_ff=12, post-norm$"
LEFT = r"^decoder_mask_and_positions, lengths \[5, 3, 1\], n=m=5, left padding$"
RIGHT = r"^decoder_mask_and_positions, lengths \[5, 3, 1\], n=m=5, right padding$"
BIG = r"^count_parameters, the big model "


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"one_pass": True}, Failure(r"^layer_norm, rows near 1e8 ", "^y differs")),
        ({"unbiased": True}, Failure(ROWS, "^y differs")),
        (
            {"last_axis_only": True},
            Failure(r"^layer_norm, S = \(3, 4\) over x of shape \(2, 3, 4\)$", "^mean should be"),
        ),
        ({"eps_outside": True}, Failure(ROWS, "^y differs", "by 1.0e-05")),
        ({"std_not_rstd": True}, Failure(ROWS, r"^rstd = 1 / sqrt\(var \+ eps\) differs")),
        ({"keepdims": True}, Failure(ROWS, r"^mean should be a NumPy array of shape \(3,\)")),
        ({"accept_zero_eps": True}, Failure(None, "^layer_norm with eps = 0", "should raise")),
    ],
    ids=row_id,
)
def test_check_layer_norm_rejects_bug(bugs, failure):
    student = as_student(normalise, "layer_norm", **bugs)
    with np.errstate(all="ignore"):
        expect_failure(lambda: hidden.check_layer_norm(student), failure)


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


def lecture_style_layer_norm(x, gamma, beta, eps=1e-5):
    """A torch layer norm over the last axis, returning a tensor, as a lecture would write."""
    x = torch.as_tensor(np.asarray(x, dtype=float))
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    return torch.as_tensor(gamma) * (x - mean) / torch.sqrt(var + eps) + torch.as_tensor(beta)


def test_a_lecture_style_layer_norm_fails_the_visible_test():
    expect_failure(
        lambda: run_visible(
            ASSIGNMENT, "test_layer_norm_visible", layer_norm=lecture_style_layer_norm
        ),
        Failure(None, "^layer_norm should return the tuple"),
    )


test_visible_tests_name_the_mistake = visible_mistake_tests(
    ASSIGNMENT,
    [
        (
            "test_layer_norm_visible",
            {"layer_norm": as_student(normalise, "layer_norm", one_pass=True)},
            Failure(None, r"^y of the row 1e8 \+ \(1, 2, 3, 4\) \(variance 1.25\) differs"),
        ),
        (
            "test_layer_norm_visible",
            {"layer_norm": as_student(normalise, "layer_norm", unbiased=True)},
            Failure(None, "^y differs"),
        ),
        (
            "test_layer_norm_visible",
            {"layer_norm": as_student(normalise, "layer_norm", last_axis_only=True)},
            Failure(None, r"^y over the trailing shape S = \(2, 3\) differs"),
        ),
        (
            "test_encoder_layer_visible",
            {"encoder_layer": as_student(encode, "encoder_layer", other_order=True)},
            Failure(None, r"^y \(post-norm\) differs"),
        ),
        (
            "test_encoder_layer_visible",
            {"encoder_layer": as_student(encode, "encoder_layer", torch_mask_convention=True)},
            Failure(None, r"^y of sequence 0 \(no padding\) in the batch contains nan"),
        ),
        (
            "test_decoder_mask_visible",
            {"decoder_mask_and_positions": as_student(layout, "dmp", no_fallback=True)},
            Failure(
                None,
                r"^mask of sequence 1 \(1 real token, left padding",
                r"differs .* by 1.0e\+00 at \[0, 0\]",
            ),
        ),
        (
            "test_decoder_mask_visible",
            {"decoder_mask_and_positions": as_student(layout, "dmp", diagonal_from_zero=True)},
            Failure(
                None, r"^mask with a cache \(n = 2 queries at positions 2, 3; m = 4 keys", "differs"
            ),
        ),
        (
            "test_count_parameters_visible",
            {"count_parameters": as_student(count, "count_parameters", cross_without_encoder=True)},
            Failure(
                None,
                "^a decoder-only model without biases",
                "decoder is 131,520",
                "98,624",
                r"off by \+32,896",
            ),
        ),
        (
            "test_count_parameters_visible",
            {"count_parameters": as_student(count, "count_parameters", no_final_norm=True)},
            Failure(None, "^the base model: encoder is 18,914,304", "18,915,328", "off by -1,024"),
        ),
    ],
)


def test_visible_tests_pass_with_the_independent_implementations():
    run_visible(
        ASSIGNMENT, "test_layer_norm_visible", layer_norm=as_student(normalise, "layer_norm")
    )
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


def layer_norm_with_torch(x, gamma, beta, eps=1e-5):
    return hidden.torch_layer_norm(x, gamma, beta, eps)


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
        (hidden.check_layer_norm, layer_norm_with_torch, "layer_norm", "torch.nn.functional.layer_norm"),
        (hidden.check_encoder_layer, encoder_layer_with_torch, "encoder_layer", "torch.nn.TransformerEncoderLayer"),
        (hidden.check_encoder_layer, encoder_layer_with_course, "encoder_layer", "course.models.transformer.EncoderLayer"),
        (hidden.check_count_parameters, count_with_modules, "count_parameters", "torch.nn.Embedding"),
        (hidden.check_count_parameters, count_with_course, "count_parameters", "course.analysis.parameters.count_transformer"),
    ]
)  # fmt: skip


def test_the_shortcuts_are_right_outside_the_traps():
    """The shortcut implementations above give the right answers when nothing is trapped."""
    rng = np.random.default_rng(4)
    params, x = hidden.random_state_dict(rng, 6, 8), rng.normal(size=(2, 3, 6))
    np.testing.assert_allclose(
        encoder_layer_with_course(x, params, 2, True), encode(x, params, 2, True), atol=1e-12
    )
    config = hidden.count_cases()[0].config
    assert count_with_modules(config) == count(config)


REQUIRED_TRAPS = {
    "torch.nn.LayerNorm",
    "torch.nn.functional.layer_norm",
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
