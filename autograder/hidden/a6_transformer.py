"""Hidden checks of Assignment 6: RMSNorm and its backward pass, an encoder layer, decoder masks,
parameter counts.

The hidden test cells of ``a6_transformer`` call, at autograde time::

    check_rms_norm(rms_norm, rms_norm_backward)
    check_encoder_layer(encoder_layer)
    check_decoder_mask(decoder_mask_and_positions)
    check_count_parameters(count_parameters)

Each check runs the student's function on inputs the visible tests do not use (a single row,
one feature, all-zero rows, rows near 1e200 and 1e-8, normalised shapes of several axes; one token, one
head and as many heads as features, d_ff != 4 d_model, masks, leading dimensions; left and
right padding with caches of every size and sequences of one real token; configurations
without biases, without an encoder, with learned positions...) and compares the results with
references computed *before* the call and in another way than the assignment asks:
``F.rms_norm`` and torch's autograd through it (rows near 1e200 divided exactly by a power of
two first), ``nn.TransformerEncoderLayer`` with the weights
copied in (float64, no dropout), masks and positions filled in one entry at a time, and the
parameters of PyTorch modules built with each configuration on the ``meta`` device (no
memory), shared and tied weights counted once. Then it checks that bad input raises
ValueError.

While a student's function runs, the routines that would do its work (torch's layer and RMS norms,
Transformer layers, attention and softmax functions, ``nn.Linear`` and ``nn.Embedding``,
autograd and ``torch.func``, ``course.models.transformer``, ``course.models.attention`` and
``course.analysis.parameters`` by name, and every public callable of the ``course`` package
except ``course.checks``) are replaced by traps that raise :class:`ShortcutUsed`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

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
    "check_rms_norm",
    "check_encoder_layer",
    "check_decoder_mask",
    "check_count_parameters",
]

NORMALISE_BY_HAND = "compute the mean square and the normalised rows by hand with NumPy"
DIFFERENTIATE_BY_HAND = "compute the gradients from your own formula with NumPy, without autograd"
LAYER_BY_HAND = "run attention, the FFN, the residuals and the layer norms by hand with NumPy"
MASK_BY_HAND = "build the mask and the positions by hand with NumPy"
COUNT_BY_HAND = "count the parameters with the formulas, without building modules"

# --------------------------------------------------------------------------------------------
# Traps
# --------------------------------------------------------------------------------------------

TRAPS = shortcuts.Traps(RULES["a6_transformer"].library)
shortcut_targets, no_shortcuts, _call_by_hand = TRAPS.methods()


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


_expect_value_error = shortcuts.value_error_checker(_call_by_hand)


_call_valid = shortcuts.valid_caller(_call_by_hand)


def _as_float64(array: Any) -> torch.Tensor:
    return torch.from_numpy(np.array(array, dtype=np.float64))


# --------------------------------------------------------------------------------------------
# Part A: rms_norm and rms_norm_backward
# --------------------------------------------------------------------------------------------


def torch_rms_norm(
    x: np.ndarray, gamma: np.ndarray, grad_y: np.ndarray, eps: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(y, rrms, grad_x, grad_gamma) from F.rms_norm and torch's autograd through it.

    Each row (a trailing block of gamma's shape) goes through F.rms_norm on its own. A row
    larger than 1 is first divided by a power of two s of its size, exactly, with eps / s**2
    in place of eps: y is then the same function of the row, and r and dL/dx are divided by
    s. (F.rms_norm squares the row as it stands, which overflows for rows near 1e200.)
    """
    values = np.array(x, dtype=np.float64)
    k = np.ndim(gamma)
    outer = values.shape[: values.ndim - k]
    rows = values.reshape(-1, *np.shape(gamma))
    upstream = np.array(grad_y, dtype=np.float64).reshape(rows.shape)
    scale = _as_float64(gamma).requires_grad_(True)
    axes = tuple(range(1, k + 1))
    ys, rs, grads = [], [], []
    for row, g_row in zip(rows, upstream, strict=True):
        size = float(np.abs(row).max())
        power = np.ldexp(1.0, max(int(np.frexp(size)[1]), 0))  # 1 for rows below 1
        shrunk = torch.from_numpy(row / power)[None].requires_grad_(True)  # (1, *S)
        small_eps = eps / power / power
        out = F.rms_norm(shrunk, tuple(scale.shape), scale, small_eps)
        out.backward(torch.from_numpy(g_row)[None])
        with torch.no_grad():
            r = torch.rsqrt(shrunk.pow(2).mean(dim=axes) + small_eps) / power
        ys.append(out.detach()[0].numpy())
        rs.append(float(r[0]))
        grads.append(shrunk.grad[0].numpy() / power)
    y = np.stack(ys).reshape(values.shape)
    rrms = np.array(rs).reshape(outer)
    grad_x = np.stack(grads).reshape(values.shape)
    return y, rrms, grad_x, scale.grad.numpy()


def rms_norm_cases() -> list[Case]:
    """The hidden cases of rms_norm and rms_norm_backward: x, gamma, grad_y, eps and scale,
    the size of the gradient dL/dx (for its tolerance)."""
    rng = np.random.default_rng(6101)

    def case(label: str, x: np.ndarray, *shape: int, eps: float = 1e-6, strided: bool = False):
        gamma = 1.0 + 0.5 * rng.normal(size=shape)
        grad_y = rng.normal(size=np.shape(x))
        if strided:
            gamma, grad_y = _strided(gamma), _strided(grad_y)
        return Case(label, x=x, gamma=gamma, grad_y=grad_y, eps=eps)

    zero_inside = rng.normal(size=(3, 4))
    zero_inside[1] = 0.0
    return [
        case("3 rows of D=5", rng.normal(size=(3, 5)), 5),
        case("a batch (2, 3, 4) with rows of mean 2", 2.0 + 3.0 * rng.normal(size=(2, 3, 4)), 4),
        case("a single row x of shape (6,) (0-d rrms)", rng.normal(size=6), 6),
        case("one feature, D=1", rng.normal(size=(4, 1)), 1),
        case("row 1 of 3 all zero", zero_inside, 4),
        case("rows near 1e200 (their squares overflow)", 1e200 * rng.normal(size=(3, 8)), 8),
        case("rows near 1e-8 (eps dominates)", 1e-8 * rng.normal(size=(2, 6)), 6),
        case("rows near 1e-3 (eps matters)", 1e-3 * rng.normal(size=(2, 6)), 6),
        case("eps = 0.25", rng.normal(size=(2, 3)), 3, eps=0.25),
        case("S = (3, 4) over x of shape (2, 3, 4)", rng.normal(size=(2, 3, 4)), 3, 4),
        case("S = (2, 2, 2) over x of shape (3, 2, 2, 2)", rng.normal(size=(3, 2, 2, 2)), 2, 2, 2),
        case("x of shape S = (2, 3) itself (one row)", rng.normal(size=(2, 3)), 2, 3),
        case("non-contiguous x, gamma, grad_y", _strided(rng.normal(size=(3, 5))), 5, strided=True),
    ]


def _expect_statistic(name: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """One number per row: an array of ``shape`` (a NumPy scalar is accepted for shape ())."""
    scalar_ok = shape == () and isinstance(value, (np.generic, float))
    if not (isinstance(value, np.ndarray) or scalar_ok) or np.shape(value) != shape:
        raise AssertionError(
            f"{name} should be a NumPy array of shape {shape} (one number per row), "
            f"got {_describe(value)}"
        )
    return np.asarray(value, dtype=np.float64)


def _close(name: str, got: Any, expected: np.ndarray, against: str) -> None:
    """assert_close, on arrays divided by the largest |expected| when that is far from 1 (rows
    near 1e200 have an r and a dL/dx near 1e-200)."""
    size = float(np.abs(expected).max())
    if 1e-3 <= size <= 1e3 or size == 0.0:
        assert_close(name, got, expected, atol=1e-9, rtol=1e-8, against=against)
        return
    scaled = f"{name} (divided by {size:.1e}, the largest expected value)"
    got = np.asarray(got, dtype=np.float64) / size
    assert_close(scaled, got, expected / size, atol=1e-9, rtol=1e-8, against=against)


def check_rms_norm(rms_norm: Callable[..., Any], rms_norm_backward: Callable[..., Any]) -> None:
    """Hidden test of Part A: against F.rms_norm and torch's autograd through it."""
    cases = rms_norm_cases()
    for case in cases:
        x, gamma, grad_y, eps = case.x, case.gamma, case.grad_y, case.eps
        y_ref, rrms_ref, grad_x_ref, grad_gamma_ref = torch_rms_norm(x, gamma, grad_y, eps)
        forward_inputs = {"x": x, "gamma": gamma}
        before = _snapshot(forward_inputs)
        with case.named("rms_norm"):
            result = _call_valid(rms_norm, NORMALISE_BY_HAND, x, gamma, eps)
            _expect_unchanged("rms_norm", forward_inputs, before)
            y, rrms = _unpack(result, "rms_norm", ("y", "rrms"))
            _expect_array("y", y, y_ref.shape)
            rrms = _expect_statistic("rrms", rrms, rrms_ref.shape)
            against = "torch.nn.functional.rms_norm"
            assert_close("y", y, y_ref, atol=1e-9, rtol=1e-8, against=against)
            _close("rrms = 1 / sqrt(mean(x**2) + eps)", rrms, rrms_ref, against)
        backward_inputs = {"grad_y": grad_y, "x": x, "gamma": gamma, "rrms": rrms_ref}
        before = _snapshot(backward_inputs)
        with case.named("rms_norm_backward"):
            result = _call_valid(
                rms_norm_backward, DIFFERENTIATE_BY_HAND, grad_y, x, gamma, rrms_ref
            )
            _expect_unchanged("rms_norm_backward", backward_inputs, before)
            grad_x, grad_gamma = _unpack(result, "rms_norm_backward", ("grad_x", "grad_gamma"))
            _expect_array("grad_x", grad_x, grad_x_ref.shape)
            _expect_array("grad_gamma", grad_gamma, grad_gamma_ref.shape)
            against = "torch's autograd through F.rms_norm"
            _close("grad_x = dL/dx", grad_x, grad_x_ref, against)
            _close("grad_gamma = dL/dgamma", grad_gamma, grad_gamma_ref, against)

    rng = np.random.default_rng(6102)
    x, ones = rng.normal(size=(2, 3)), np.ones(3)
    r = 1.0 / np.sqrt(np.mean(x**2, axis=-1) + 1e-6)
    bad_forward = [
        ("x of shape (2, 3) and gamma of shape (4,)", x, np.ones(4), 1e-6),
        ("x of shape (2, 3) and gamma of shape (3, 2)", x, np.ones((3, 2)), 1e-6),
        ("x of shape (3,) and gamma of shape (2, 3)", x[0], np.ones((2, 3)), 1e-6),
        ("a gamma with no axis (a number)", x, np.float64(1.0), 1e-6),
        ("eps = 0", x, ones, 0.0),
        ("eps = -1e-6", x, ones, -1e-6),
    ]
    for description, *args in bad_forward:
        _expect_value_error(rms_norm, NORMALISE_BY_HAND, f"rms_norm with {description}", *args)
    bad_backward = [
        ("grad_y of shape (1, 3) for x of shape (2, 3)", x[:1], x, ones, r),
        ("grad_y of shape (3, 2) for x of shape (2, 3)", x.T, x, ones, r),
        ("gamma of shape (4,) for x of shape (2, 3)", x, x, np.ones(4), r),
        ("rrms of shape (1,) for two rows", x, x, ones, r[:1]),
        ("rrms of shape (2, 1) for two rows (it would broadcast)", x, x, ones, r[:, None]),
        ("an rrms of 0", x, x, ones, np.array([r[0], 0.0])),
        ("a negative rrms", x, x, ones, -r),
    ]
    for description, *args in bad_backward:
        call = f"rms_norm_backward with {description}"
        _expect_value_error(rms_norm_backward, DIFFERENTIATE_BY_HAND, call, *args)
    total = 2 * len(cases) + len(bad_forward) + len(bad_backward)
    print(f"check_rms_norm: all {total} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part B: encoder_layer
# --------------------------------------------------------------------------------------------


def random_state_dict(rng: np.random.Generator, d: int, d_ff: int) -> dict[str, np.ndarray]:
    """Weights laid out as course.models.transformer.EncoderLayer's state dict."""
    params = {}
    for p in "qkvo":
        params[f"self_attn.W_{p}.weight"] = rng.normal(size=(d, d)) / np.sqrt(d)
        params[f"self_attn.W_{p}.bias"] = 0.2 * rng.normal(size=d)
    params["ffn.linear1.weight"] = rng.normal(size=(d_ff, d)) / np.sqrt(d)
    params["ffn.linear1.bias"] = 0.2 * rng.normal(size=d_ff)
    params["ffn.linear2.weight"] = rng.normal(size=(d, d_ff)) / np.sqrt(d_ff)
    params["ffn.linear2.bias"] = 0.2 * rng.normal(size=d)
    for i in (1, 2):
        params[f"norm{i}.weight"] = 1.0 + 0.3 * rng.normal(size=d)
        params[f"norm{i}.bias"] = 0.2 * rng.normal(size=d)
    return params


def torch_encoder_layer(
    x: np.ndarray,
    params: Mapping[str, np.ndarray],
    num_heads: int,
    norm_first: bool,
    mask: np.ndarray | None,
    eps: float,
) -> np.ndarray:
    """nn.TransformerEncoderLayer (float64, no dropout) with the weights copied in."""
    x = np.array(x, dtype=np.float64)
    lead, (n, d) = x.shape[:-2], x.shape[-2:]
    d_ff = np.shape(params["ffn.linear1.weight"])[0]
    layer = torch.nn.TransformerEncoderLayer(
        d, num_heads, d_ff, dropout=0.0, layer_norm_eps=eps, batch_first=True,
        norm_first=norm_first, dtype=torch.float64,
    )  # fmt: skip
    attention = layer.self_attn

    def stacked(kind: str) -> torch.Tensor:
        return torch.cat([_as_float64(params[f"self_attn.W_{p}.{kind}"]) for p in "qkv"])

    copies = [
        (attention.in_proj_weight, stacked("weight")),
        (attention.in_proj_bias, stacked("bias")),
        (attention.out_proj.weight, _as_float64(params["self_attn.W_o.weight"])),
        (attention.out_proj.bias, _as_float64(params["self_attn.W_o.bias"])),
    ]
    for ours, theirs in (("ffn.linear1", layer.linear1), ("ffn.linear2", layer.linear2),
                         ("norm1", layer.norm1), ("norm2", layer.norm2)):  # fmt: skip
        copies += [(theirs.weight, _as_float64(params[f"{ours}.weight"]))]
        copies += [(theirs.bias, _as_float64(params[f"{ours}.bias"]))]
    blocked = None
    if mask is not None:  # torch: True = blocked, one (n, n) per (batch entry, head)
        every = np.broadcast_to(np.asarray(mask, dtype=bool), (*lead, n, n)).reshape(-1, n, n)
        blocked = torch.from_numpy(np.repeat(~every, num_heads, axis=0))
    layer.train()  # training mode with dropout 0: the plain path, never the fused fast path
    with torch.no_grad():
        for parameter, value in copies:
            parameter.copy_(value)
        out = layer(torch.from_numpy(x.reshape(-1, n, d)), src_mask=blocked)
    return out.numpy().reshape(x.shape)


def _lower(n: int) -> np.ndarray:
    return np.arange(n)[None, :] <= np.arange(n)[:, None]


def _real_keys(lengths: tuple[int, ...], n: int) -> np.ndarray:
    """(B, 1, n): key j of sequence b is real when j < lengths[b]."""
    return (np.arange(n)[None, :] < np.array(lengths)[:, None])[:, None, :]


def encoder_cases() -> list[Case]:
    """The hidden cases of encoder_layer: x, params, num_heads, norm_first, mask and eps."""
    rng = np.random.default_rng(6201)
    shared = random_state_dict(rng, 8, 12)
    x_shared = rng.normal(size=(5, 8))
    both = _lower(3) & _real_keys((3, 2), 3)[:, None]  # (2, 1, 3, 3) over leading (2, 2)
    strided = {key: _strided(value) for key, value in random_state_dict(rng, 4, 3).items()}
    return [
        Case(
            "n=5, d_model=8, h=2, d_ff=12, post-norm",
            x=x_shared,
            params=shared,
            num_heads=2,
            norm_first=False,
            mask=None,
            eps=1e-5,
        ),
        Case(
            "n=5, d_model=8, h=2, d_ff=12, pre-norm",
            x=x_shared,
            params=shared,
            num_heads=2,
            norm_first=True,
            mask=None,
            eps=1e-5,
        ),
        Case(
            "one token (n=1), d_model=6, h=3, d_ff=6, post-norm",
            x=rng.normal(size=(1, 6)),
            params=random_state_dict(rng, 6, 6),
            num_heads=3,
            norm_first=False,
            mask=None,
            eps=1e-5,
        ),
        Case(
            "B=3, n=4, d_model=6, h=3, d_ff=10, padding mask (3, 1, 4), lengths 4, 1, 2, post-norm",
            x=rng.normal(size=(3, 4, 6)),
            params=random_state_dict(rng, 6, 10),
            num_heads=3,
            norm_first=False,
            mask=_real_keys((4, 1, 2), 4),
            eps=1e-5,
        ),
        Case(
            "B=2, n=5, d_model=h=4 (d_k = 1), causal mask (5, 5), pre-norm, eps=1e-3",
            x=rng.normal(size=(2, 5, 4)),
            params=random_state_dict(rng, 4, 16),
            num_heads=4,
            norm_first=True,
            mask=_lower(5),
            eps=1e-3,
        ),
        Case(
            "leading dimensions (2, 2), n=3, d_model=8, one head, d_ff=5, pre-norm, causal and "
            "padding mask (2, 1, 3, 3)",
            x=rng.normal(size=(2, 2, 3, 8)),
            params=random_state_dict(rng, 8, 5),
            num_heads=1,
            norm_first=True,
            mask=both,
            eps=1e-5,
        ),
        Case(
            "n=4, d_model=6, h=2, d_ff=24, inputs of size 1000, post-norm",
            x=1000.0 * rng.normal(size=(4, 6)),
            params=random_state_dict(rng, 6, 24),
            num_heads=2,
            norm_first=False,
            mask=None,
            eps=1e-5,
        ),
        Case(
            "n=3, d_model=4, h=2, d_ff=3, pre-norm, non-contiguous x and weights",
            x=_strided(rng.normal(size=(3, 4))),
            params=strided,
            num_heads=2,
            norm_first=True,
            mask=None,
            eps=1e-5,
        ),
    ]


def check_encoder_layer(encoder_layer: Callable[..., Any]) -> None:
    """Hidden test of Part B: against nn.TransformerEncoderLayer with the same weights."""
    cases = encoder_cases()
    for case in cases:
        x, params, mask = case.x, case.params, case.mask
        expected = torch_encoder_layer(**case.inputs)
        inputs = {"x": x, "params": params} | ({} if mask is None else {"mask": mask})
        before = _snapshot(inputs)
        with case.named("encoder_layer"), np.errstate(all="ignore"):
            y = _call_valid(
                encoder_layer,
                LAYER_BY_HAND,
                x,
                params,
                case.num_heads,
                case.norm_first,
                mask,
                case.eps,
            )
            _expect_unchanged("encoder_layer", inputs, before)
            _expect_array("y", y, expected.shape)
            against = "torch.nn.TransformerEncoderLayer"
            assert_close("y", y, expected, atol=1e-9, rtol=1e-8, against=against)

    rng = np.random.default_rng(6202)
    x, params = rng.normal(size=(3, 6)), random_state_dict(rng, 6, 10)
    without = {key: value for key, value in params.items() if key != "self_attn.W_v.bias"}
    bad_calls = [
        ("d_model = 6 and num_heads = 4 (not a divisor)", x, params, 4),
        ("num_heads = 0", x, params, 0),
        ("no 'self_attn.W_v.bias'", x, without, 2),
        (
            "a self_attn.W_k.weight of shape (6, 5)",
            x,
            params | {"self_attn.W_k.weight": np.ones((6, 5))},
            2,
        ),
        (
            "an ffn.linear1.bias of shape (9,) for d_ff = 10",
            x,
            params | {"ffn.linear1.bias": np.ones(9)},
            2,
        ),
        (
            "an ffn.linear2.weight of shape (6, 9) for d_ff = 10",
            x,
            params | {"ffn.linear2.weight": np.ones((6, 9))},
            2,
        ),
        ("a norm2.weight of shape (5,)", x, params | {"norm2.weight": np.ones(5)}, 2),
        (
            "a self_attn.W_q.bias of shape (1,) (it would broadcast)",
            x,
            params | {"self_attn.W_q.bias": np.ones(1)},
            2,
        ),
        ("x with 5 features and weights for 6", x[:, :5], params, 1),
        ("a 1-D x", x[0], params, 2),
    ]
    divisible = (r"divis|divid|multiple", "say that d_model is not divisible by num_heads")
    names_it = (r"W_v\.bias", "name the missing weight 'self_attn.W_v.bias'")
    for description, *args in bad_calls:
        says = {"not a divisor": divisible, "no 'self_attn": names_it}
        found = next((v for k, v in says.items() if k in description), None)
        _expect_value_error(
            encoder_layer, LAYER_BY_HAND, f"encoder_layer with {description}", *args, says=found
        )
    print(f"check_encoder_layer: all {len(cases) + len(bad_calls)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part C: decoder_mask_and_positions
# --------------------------------------------------------------------------------------------


def entry_by_entry(
    lengths: Any, n: int, m: int | None, left_padded: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The mask (B, 1, n, m) and the positions (B, n), one query at a time."""
    m = n if m is None else m
    sizes = [int(size) for size in np.asarray(lengths)]
    mask = np.zeros((len(sizes), 1, n, m), dtype=bool)
    positions = np.zeros((len(sizes), n), dtype=np.int64)
    for b, size in enumerate(sizes):
        real = list(range(m - size, m)) if left_padded else list(range(size))
        for i in range(n):
            here = m - n + i
            visible = [j for j in real if j <= here] or [here]  # nothing to see: itself
            mask[b, 0, i, visible] = True
            positions[b, i] = real.index(here) if here in real else 0
    return mask, positions


def mask_cases() -> list[Case]:
    """The hidden cases of decoder_mask_and_positions: lengths, n, m and left_padded."""
    return [
        Case("lengths [5, 3, 1], n=m=5, right padding",
             lengths=[5, 3, 1], n=5, m=None, left_padded=False),
        Case("lengths [5, 3, 1], n=m=5, left padding",
             lengths=[5, 3, 1], n=5, m=None, left_padded=True),
        Case("one position, lengths [1], right padding",
             lengths=[1], n=1, m=None, left_padded=False),
        Case("one position, lengths [1], left padding",
             lengths=[1], n=1, m=1, left_padded=True),
        Case("all padding but one, lengths [1, 1, 1], n=m=4, left padding",
             lengths=[1, 1, 1], n=4, m=4, left_padded=True),
        Case("all padding but one, lengths [1, 1, 1], n=m=4, right padding",
             lengths=[1, 1, 1], n=4, m=4, left_padded=False),
        Case("a batch of one, length 6 = m, left padding (plain causal)",
             lengths=[6], n=6, m=None, left_padded=True),
        Case("a cache: lengths [6, 4, 1], n=3 of m=6, left padding",
             lengths=[6, 4, 1], n=3, m=6, left_padded=True),
        Case("a cache: lengths [6, 4, 1], n=3 of m=6, right padding",
             lengths=[6, 4, 1], n=3, m=6, left_padded=False),
        Case("a cache: lengths int32 [7, 2], n=1 of m=7, left padding",
             lengths=np.array([7, 2], dtype=np.int32), n=1, m=7, left_padded=True),
        Case("a cache: lengths (2, 5) as a tuple, n=4 of m=5, right padding",
             lengths=(2, 5), n=4, m=5, left_padded=False),
        Case("lengths [2], n=3 of m=3, left padding",
             lengths=[2], n=3, m=3, left_padded=True),
    ]  # fmt: skip


def _compare_mask(got: np.ndarray, expected: np.ndarray, setting: str) -> None:
    if got.dtype != np.bool_:
        raise AssertionError(f"the mask should hold booleans, got dtype {got.dtype}")
    if not np.array_equal(got, expected):
        b, _, i, j = (int(k) for k in np.argwhere(got != expected)[0])
        n, m = expected.shape[-2:]
        raise AssertionError(
            f"mask is {bool(got[b, 0, i, j])} at [{b}, 0, {i}, {j}] (sequence {b}, query {i} at "
            f"position {m - n + i}, key {j}; {setting}), expected {bool(expected[b, 0, i, j])} "
            "(True = may attend)"
        )


def _compare_positions(got: np.ndarray, expected: np.ndarray) -> None:
    if not np.issubdtype(got.dtype, np.integer):
        raise AssertionError(f"positions should hold integers, got dtype {got.dtype}")
    if not np.array_equal(got, expected):
        b, i = (int(k) for k in np.argwhere(got != expected)[0])
        raise AssertionError(
            f"positions is {got[b, i]} at [{b}, {i}], expected {expected[b, i]} "
            "(counted among the real tokens; 0 on padding)"
        )


def check_decoder_mask(decoder_mask_and_positions: Callable[..., Any]) -> None:
    """Hidden test of Part C: the mask and the positions against entry-by-entry versions."""
    function = decoder_mask_and_positions
    cases = mask_cases()
    for case in cases:
        lengths, n, m, left_padded = case.lengths, case.n, case.m, case.left_padded
        mask_ref, positions_ref = entry_by_entry(lengths, n, m, left_padded)
        before = _snapshot({"lengths": lengths})
        with case.named("decoder_mask_and_positions"):
            result = _call_valid(function, MASK_BY_HAND, lengths, n, m, left_padded)
            _expect_unchanged("decoder_mask_and_positions", {"lengths": lengths}, before)
            mask, positions = _unpack(result, "decoder_mask_and_positions", ("mask", "positions"))
            _expect_array("the mask", mask, mask_ref.shape)
            _expect_array("positions", positions, positions_ref.shape)
            _compare_mask(mask, mask_ref, case.label)
            _compare_positions(positions, positions_ref)

    bad_calls = [
        ("n = 0", [1], 0, None, False),
        ("m = 0 and n = 1", [1], 1, 0, False),
        ("n = 4 > m = 3", [2, 3], 4, 3, True),
        ("a length of 0", [3, 0], 3, None, False),
        ("a length of 4 > m = 3", [4, 1], 3, None, True),
        ("float lengths [1.0, 2.0]", [1.0, 2.0], 2, None, False),
        ("a 2-D array of lengths", [[1, 2]], 2, None, False),
        ("no lengths at all", [], 2, None, False),
        ("n = 2.5", [2], 2.5, 3, False),
    ]
    for description, *args in bad_calls:
        call = f"decoder_mask_and_positions with {description}"
        _expect_value_error(function, MASK_BY_HAND, call, *args)
    print(f"check_decoder_mask: all {len(cases) + len(bad_calls)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part D: count_parameters
# --------------------------------------------------------------------------------------------

PARTS = ("embeddings", "encoder", "decoder", "output", "total")
_OPTIONS = dict(encoder_layers=0, src_vocab_size=None, shared_embeddings=False,
                tie_output=False, bias=True, final_norm=True, max_len=0)  # fmt: skip


def modules_count(config: Mapping[str, Any]) -> dict[str, int]:
    """Build the configuration from PyTorch modules on the meta device and count the
    parameters of each part; a parameter met a second time (shared, tied) counts 0."""
    c = _OPTIONS | dict(config)
    d, heads, d_ff, bias = int(c["d_model"]), int(c["num_heads"]), int(c["d_ff"]), c["bias"]
    n_enc, n_dec = int(c["encoder_layers"]), int(c["decoder_layers"])
    build = {"device": "meta"}
    nn = torch.nn

    def table(rows: int) -> nn.Embedding:  # an empty weight: nn.Embedding's normal_ on meta is slow
        return nn.Embedding(rows, d, _weight=torch.empty((rows, d), device="meta"))

    def blocks(kind: type, count: int) -> list[nn.Module]:
        made = [kind(d, heads, d_ff, bias=bias, batch_first=True, **build) for _ in range(count)]
        if c["final_norm"]:
            made.append(nn.LayerNorm(d, bias=bias, **build))
        return made

    target = table(int(c["tgt_vocab_size"]))
    tables = [target]
    if n_enc:
        same = c["shared_embeddings"]
        tables.append(target if same else table(int(c["src_vocab_size"])))
    if c["max_len"]:
        tables += [table(int(c["max_len"])) for _ in range(1 + (n_enc > 0))]
    encoder = blocks(nn.TransformerEncoderLayer, n_enc) if n_enc else []
    # Without an encoder, a decoder layer has no cross-attention: an encoder layer's shape.
    decoder = blocks(nn.TransformerDecoderLayer if n_enc else nn.TransformerEncoderLayer, n_dec)
    output = nn.Linear(d, int(c["tgt_vocab_size"]), bias=False, **build)
    if c["tie_output"]:
        output.weight = target.weight
    seen: set[int] = set()

    def fresh(modules: list[nn.Module]) -> int:
        total = 0
        for module in modules:
            for parameter in module.parameters():
                if id(parameter) not in seen:
                    seen.add(id(parameter))
                    total += parameter.numel()
        return total

    parts = {"embeddings": fresh(tables), "encoder": fresh(encoder), "decoder": fresh(decoder)}
    parts["output"] = fresh([output])
    return parts | {"total": sum(parts.values())}


def count_cases() -> list[Case]:
    """The hidden cases of count_parameters: config."""
    big = dict(
        d_model=1024,
        num_heads=16,
        d_ff=4096,
        encoder_layers=6,
        decoder_layers=6,
        src_vocab_size=37000,
        tgt_vocab_size=37000,
        shared_embeddings=True,
        tie_output=True,
    )
    return [
        Case("the big model (d_model 1024, 16 heads, shared and tied)", config=big),
        Case("GPT-2 small (decoder-only, tied, learned positions)",
             config=dict(d_model=768, num_heads=12, d_ff=3072, decoder_layers=12,
                         tgt_vocab_size=50257, tie_output=True, max_len=1024)),
        Case("an encoder-decoder with two vocabularies, nothing shared or tied",
             config=dict(d_model=32, num_heads=4, d_ff=50, encoder_layers=2, decoder_layers=3,
                         src_vocab_size=300, tgt_vocab_size=200)),
        Case("no biases with an encoder, shared embeddings, untied, no final norms",
             config=dict(d_model=16, num_heads=2, d_ff=40, encoder_layers=3, decoder_layers=1,
                         src_vocab_size=50, tgt_vocab_size=50, shared_embeddings=True,
                         bias=False, final_norm=False)),
        Case("one layer each, d_ff = d_model, 24 heads of 1, learned positions for both stacks",
             config=dict(d_model=24, num_heads=24, d_ff=24, encoder_layers=1, decoder_layers=1,
                         src_vocab_size=7, tgt_vocab_size=9, max_len=10, tie_output=True)),
        Case("decoder-only, no final norm, d_ff = 7, one token in the vocabulary",
             config=dict(d_model=6, num_heads=3, d_ff=7, decoder_layers=2, tgt_vocab_size=1,
                         final_norm=False)),
        Case("decoder-only with src_vocab_size and shared_embeddings given (both ignored)",
             config=dict(d_model=12, num_heads=2, d_ff=30, decoder_layers=3, tgt_vocab_size=40,
                         src_vocab_size=99, shared_embeddings=True, bias=False)),
        Case("sizes as NumPy integers",
             config=dict(d_model=np.int64(20), num_heads=np.int32(4), d_ff=np.int64(36),
                         encoder_layers=np.int64(1), decoder_layers=np.int64(2),
                         src_vocab_size=np.int64(15), tgt_vocab_size=np.int64(25))),
    ]  # fmt: skip


def check_count_parameters(count_parameters: Callable[..., Any]) -> None:
    """Hidden test of Part D: against PyTorch modules built with each configuration."""
    cases = count_cases()
    for case in cases:
        config = case.config
        expected = modules_count(config)
        before = _snapshot({"config": config})
        with case.named("count_parameters"):
            got = _call_valid(count_parameters, COUNT_BY_HAND, config)
            _expect_unchanged("count_parameters", {"config": config}, before)
            if not isinstance(got, dict) or set(got) != set(PARTS):
                keys = sorted(got) if isinstance(got, dict) else _describe(got)
                raise AssertionError(
                    f"count_parameters should return a dict of {PARTS}, got {keys}"
                )
            for part in PARTS:
                value = got[part]
                if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                    raise AssertionError(f"{part} should be an integer, got {value!r}")
                if value != expected[part]:
                    raise AssertionError(
                        f"{part} is {int(value):,}, but the PyTorch modules have "
                        f"{expected[part]:,} (off by {int(value) - expected[part]:+,})"
                    )

    valid = dict(d_model=64, num_heads=4, d_ff=128, encoder_layers=2, decoder_layers=2,
                 src_vocab_size=100, tgt_vocab_size=100)  # fmt: skip
    missing = {key: value for key, value in valid.items() if key != "d_ff"}
    bad_calls = [
        ("no d_ff", missing),
        ("the unknown key 'n_layers'", valid | {"n_layers": 6}),
        ("d_model = 0", valid | {"d_model": 0}),
        ("d_model = 64.0 (a float)", valid | {"d_model": 64.0}),
        ("num_heads = True (a bool)", valid | {"num_heads": True}),
        ("decoder_layers = 0", valid | {"decoder_layers": 0}),
        ("encoder_layers = -1", valid | {"encoder_layers": -1}),
        ("max_len = -5", valid | {"max_len": -5}),
        ("num_heads = 5 for d_model = 64", valid | {"num_heads": 5}),
        (
            "an encoder and no src_vocab_size",
            {k: v for k, v in valid.items() if k != "src_vocab_size"},
        ),
        (
            "shared embeddings with vocabularies of 100 and 120",
            valid | {"shared_embeddings": True, "src_vocab_size": 120},
        ),
        ("bias = 'yes'", valid | {"bias": "yes"}),
        ("tie_output = 1 (not True or False)", valid | {"tie_output": 1}),
    ]
    names_key = (r"n_layers", "name the unknown key 'n_layers'")
    for description, config in bad_calls:
        says = names_key if "n_layers" in description else None
        call = f"count_parameters with {description}"
        _expect_value_error(count_parameters, COUNT_BY_HAND, call, config, says=says)
    print(f"check_count_parameters: all {len(cases) + len(bad_calls)} hidden cases passed.")
