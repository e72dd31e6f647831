"""Hidden checks of Assignment 5: attention with masks, multi-head attention, positions.

The hidden test cells of ``a5_self_attention`` call, at autograde time::

    check_attention(attention, causal_mask, padding_mask)
    check_multi_head_attention(multi_head_attention)
    check_sinusoidal(sinusoidal_encoding, relative_dot, shift_matrix)
    check_rope(apply_rope)

Each check runs the student's functions on inputs the visible tests do not use (batch
dimensions, n != m, d_k = 1, one head and as many heads as features, scores in the thousands,
blocked keys that score far above the allowed ones, positions that skip, negative and
fractional positions, non-contiguous arrays...) and compares the results with references
computed *before* the call and in another way than the assignment asks:
``F.scaled_dot_product_attention`` (its weights with V = I), ``nn.MultiheadAttention`` with
the weights copied in (float64), complex exponentials in torch for the sinusoids, the shift
matrices and the rotations. Then it checks properties (scores that depend on offsets only,
lengths kept) and that bad input raises ValueError.

While a student's function runs, the routines that would do its work (torch's attention
functions and layers, every softmax of torch and SciPy, autograd, ``course.models.attention``
by name, and every public callable of the ``course`` package except ``course.checks``) are
replaced by traps that raise :class:`ShortcutUsed`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from autograder.hidden import shortcuts
from autograder.hidden.shortcuts import Case, ShortcutUsed
from autograder.hidden.shortcuts import case as _case
from autograder.hidden.shortcuts import expect_array as _expect_array
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
    "check_attention",
    "check_multi_head_attention",
    "check_sinusoidal",
    "check_rope",
]

ATTEND_BY_HAND = "compute the scores, the masked softmax and the weighted sum by hand with NumPy"
HEADS_BY_HAND = "project, split into heads, attend and mix by hand with NumPy"
WAVES_BY_HAND = "compute the sines and cosines by hand with NumPy"
ROTATE_BY_HAND = "rotate the pairs of features by hand with NumPy"

# --------------------------------------------------------------------------------------------
# Traps
# --------------------------------------------------------------------------------------------

TRAPS = shortcuts.Traps(RULES["a5_self_attention"].library)
shortcut_targets, no_shortcuts, _call_by_hand = TRAPS.methods()


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


_expect_value_error = shortcuts.value_error_checker(_call_by_hand)


def _names_row(row: int) -> tuple[str, str]:
    return rf"(?<![\d.]){row}(?![\d.])", f"say which row: name row {row}"


_call_valid = shortcuts.valid_caller(_call_by_hand)


def _expect_bool_mask(name: str, value: Any, expected: np.ndarray) -> None:
    got = _expect_array(name, value, expected.shape)
    if got.dtype != np.bool_:
        raise AssertionError(f"{name} should hold booleans, got dtype {got.dtype}")
    if not np.array_equal(got, expected):
        where = [int(i) for i in np.argwhere(got != expected)[0]]
        raise AssertionError(
            f"{name} is {bool(got[tuple(where)])} at {where}, expected {bool(expected[tuple(where)])}"
            " (True = may attend)"
        )


def _tensor(array: Any) -> torch.Tensor:
    return torch.tensor(np.array(array, dtype=np.float64))


# --------------------------------------------------------------------------------------------
# Part A: attention, causal_mask, padding_mask
# --------------------------------------------------------------------------------------------


def torch_attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """(Z, A) from F.scaled_dot_product_attention; A is its output for V = I."""
    q, k, v = _tensor(Q), _tensor(K), _tensor(V)
    allowed = None if mask is None else torch.tensor(np.array(mask, dtype=bool))
    m = k.shape[-2]
    identity = torch.eye(m, dtype=torch.float64).expand(*k.shape[:-2], m, m)
    with torch.no_grad():
        Z = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        A = F.scaled_dot_product_attention(q, k, identity, attn_mask=allowed)
    return Z.numpy(), A.numpy()


def _lower(n: int, m: int | None = None) -> np.ndarray:
    """Causal booleans (n, m): key j is allowed for query i when j <= i."""
    return np.arange(n if m is None else m)[None, :] <= np.arange(n)[:, None]


def _keys_below(lengths: tuple[int, ...], m: int) -> np.ndarray:
    """(B, 1, m): key j of sequence b is real when j < lengths[b]."""
    return (np.arange(m)[None, :] < np.array(lengths)[:, None])[:, None, :]


def attention_cases() -> list[Case]:
    """The hidden cases of attention: Q, K, V and mask."""
    rng = np.random.default_rng(701)
    cases = []
    cases.append(
        Case(
            "B=2, n=4, m=6, d_k=3, d_v=5 (cross-attention), no mask",
            Q=rng.normal(size=(2, 4, 3)),
            K=rng.normal(size=(2, 6, 3)),
            V=rng.normal(size=(2, 6, 5)),
            mask=None,
        )
    )
    cases.append(
        Case(
            "B=3, n=m=5, d_k=1, d_v=2, a causal mask (5, 5) shared by the batch",
            Q=rng.normal(size=(3, 5, 1)),
            K=rng.normal(size=(3, 5, 1)),
            V=rng.normal(size=(3, 5, 2)),
            mask=_lower(5),
        )
    )
    lengths = (6, 2, 4)
    cases.append(
        Case(
            "B=3, n=m=6, causal & padding (lengths 6, 2, 4), mask (3, 6, 6)",
            Q=rng.normal(size=(3, 6, 4)),
            K=rng.normal(size=(3, 6, 4)),
            V=rng.normal(size=(3, 6, 3)),
            mask=_lower(6) & _keys_below(lengths, 6),
        )
    )
    cases.append(
        Case(
            "B=2 with 2 heads (2, 2, 3, 4), padding mask (2, 1, 1, 5) over heads and queries",
            Q=rng.normal(size=(2, 2, 3, 4)),
            K=rng.normal(size=(2, 2, 5, 4)),
            V=rng.normal(size=(2, 2, 5, 4)),
            mask=_keys_below((5, 3), 5)[:, None],
        )
    )
    cases.append(
        Case(
            "n=3, m=4, d_k=4, scores in the thousands",
            Q=60.0 * rng.normal(size=(3, 4)),
            K=60.0 * rng.normal(size=(4, 4)),
            V=rng.normal(size=(4, 2)),
            mask=None,
        )
    )
    big_q, big_k = np.ones((3, 2)), np.array([[-40.0, -40.0], [40.0, 40.0], [39.0, 40.0]])
    cases.append(
        Case(
            "n=3, m=3, the blocked keys score 2000 or more above the allowed ones",
            Q=30.0 * big_q,
            K=big_k,
            V=rng.normal(size=(3, 3)),
            mask=np.array([[True, False, False], [True, False, True], [True, True, True]]),
        )
    )
    cases.append(
        Case(
            "n=3, a single key (m=1)",
            Q=rng.normal(size=(3, 2)),
            K=rng.normal(size=(1, 2)),
            V=rng.normal(size=(1, 4)),
            mask=np.ones((3, 1), dtype=bool),
        )
    )
    cases.append(
        Case(
            "n=2, m=3, non-contiguous arrays and mask",
            Q=_strided(rng.normal(size=(2, 3))),
            K=_strided(rng.normal(size=(3, 3))),
            V=_strided(rng.normal(size=(3, 2))),
            mask=_strided(np.array([[True, True, False], [False, True, True]])),
        )
    )
    return cases


def _padding_mask_case(lengths: Any, m: int) -> Case:
    """A case of padding_mask, labelled by the call."""
    return Case(f"padding_mask({list(np.asarray(lengths).tolist())}, {m})", lengths=lengths, m=m)


def padding_mask_cases() -> list[Case]:
    """The hidden cases of padding_mask: lengths (a list, an int32 array, a tuple) and m."""
    return [
        _padding_mask_case([3, 1, 5], 5),
        _padding_mask_case(np.array([1], dtype=np.int32), 1),
        _padding_mask_case((2, 2), 4),
    ]


def check_attention(
    attention: Callable[..., Any],
    causal_mask: Callable[..., Any],
    padding_mask: Callable[..., Any],
) -> None:
    """Hidden test of Part A: attention against F.scaled_dot_product_attention, the masks."""
    cases = attention_cases()
    for case in cases:
        Q, K, V, mask = case.Q, case.K, case.V, case.mask
        Z_ref, A_ref = torch_attention(Q, K, V, mask)
        inputs = {"Q": Q, "K": K, "V": V} | ({} if mask is None else {"mask": mask})
        before = _snapshot(inputs)
        with case.named("attention"), np.errstate(all="ignore"):
            result = _call_valid(attention, ATTEND_BY_HAND, Q, K, V, mask)
            _expect_unchanged("attention", inputs, before)
            Z, A = _unpack(result, "attention", ("Z", "A"))
            _expect_array("A", A, A_ref.shape)
            _expect_array("Z", Z, Z_ref.shape)
            against = "torch.nn.functional.scaled_dot_product_attention"
            assert_close("A", A, A_ref, atol=1e-10, rtol=1e-8, against=against)
            assert_close("Z", Z, Z_ref, atol=1e-10, rtol=1e-8, against=against)

    for n in (1, 4, 7):
        with _case(f"causal_mask({n})"):
            got = _call_valid(causal_mask, ATTEND_BY_HAND, n)
            _expect_bool_mask(f"causal_mask({n})", got, _lower(n))
    for case in padding_mask_cases():
        lengths, m = case.lengths, case.m
        before = _snapshot({"lengths": lengths})
        with _case(case.label):
            got = _call_valid(padding_mask, ATTEND_BY_HAND, lengths, m)
            _expect_unchanged("padding_mask", {"lengths": lengths}, before)
            _expect_bool_mask(case.label, got, _keys_below(tuple(np.asarray(lengths)), m))

    rng = np.random.default_rng(702)
    Q, K, V = rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 4, 2)), rng.normal(size=(2, 4, 3))
    blind = np.ones((2, 3, 4), dtype=bool)
    blind[1, 2] = False
    _expect_value_error(
        attention,
        ATTEND_BY_HAND,
        "attention with a mask whose row 2 (of batch entry 1) allows no key",
        Q,
        K,
        V,
        blind,
        says=_names_row(2),
    )
    single = np.array([[True, True, False, False], [False] * 4, [True] * 4])
    _expect_value_error(
        attention,
        ATTEND_BY_HAND,
        "attention with a (3, 4) mask whose row 1 allows no key",
        Q[0],
        K[0],
        V[0],
        single,
        says=_names_row(1),
    )
    bad_calls = [
        ("Q with d_k = 2 and K with d_k = 3", Q, rng.normal(size=(2, 4, 3)), V, None),
        ("4 keys and 5 values", Q, K, rng.normal(size=(2, 5, 3)), None),
        ("a 1-D Q", Q[0, 0], K[0], V[0], None),
        ("an additive float mask of zeros (not booleans)", Q, K, V, np.zeros((3, 4))),
        ("a float mask of ones (not booleans)", Q, K, V, np.ones((3, 4))),
        ("an integer mask of ones", Q, K, V, np.ones((3, 4), dtype=np.int64)),
        ("a mask of shape (3, 5) for n = 3, m = 4", Q, K, V, np.ones((3, 5), dtype=bool)),
    ]
    for description, *args in bad_calls:
        _expect_value_error(attention, ATTEND_BY_HAND, f"attention with {description}", *args)
    for n in (0, -2):
        _expect_value_error(causal_mask, ATTEND_BY_HAND, f"causal_mask({n})", n)
    bad_lengths = [
        ([0, 2], 3, "a length of 0"),
        ([4], 3, "a length above m = 3"),
        ([[1, 2]], 3, "a 2-D array of lengths"),
        ([1.5, 2.0], 3, "lengths that are not integers"),
    ]
    for lengths, m, description in bad_lengths:
        call = f"padding_mask({lengths}, {m}) ({description})"
        _expect_value_error(padding_mask, ATTEND_BY_HAND, call, lengths, m)
    total = len(cases) + 6 + 2 + len(bad_calls) + 2 + len(bad_lengths)
    print(f"check_attention: all {total} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part B: multi_head_attention
# --------------------------------------------------------------------------------------------


def _mha_params(rng: np.random.Generator, d: int, bias: bool, scale: float = 1.0) -> dict:
    params = {
        "in_proj_weight": scale * rng.normal(size=(3 * d, d)) / np.sqrt(d),
        "out_proj_weight": rng.normal(size=(d, d)) / np.sqrt(d),
    }
    if bias:
        params["in_proj_bias"] = 0.3 * rng.normal(size=3 * d)
        params["out_proj_bias"] = 0.3 * rng.normal(size=d)
    return params


def torch_multi_head(
    X: np.ndarray, params: Mapping[str, np.ndarray], num_heads: int, mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """(out, weights per head) from nn.MultiheadAttention with the weights copied in."""
    X = np.array(X, dtype=np.float64)
    lead, (n, d) = X.shape[:-2], X.shape[-2:]
    flat = X.reshape(-1, n, d)  # (B, n, d)
    bias = "in_proj_bias" in params
    layer = torch.nn.MultiheadAttention(
        d, num_heads, bias=bias, batch_first=True, dtype=torch.float64
    )
    blocked = None
    if mask is not None:  # nn.MultiheadAttention: True = blocked, one (n, n) per (b, head)
        full = np.broadcast_to(np.asarray(mask, dtype=bool), (*lead, n, n)).reshape(-1, n, n)
        blocked = torch.tensor(np.repeat(~full, num_heads, axis=0))  # (B * h, n, n)
    with torch.no_grad():
        layer.in_proj_weight.copy_(_tensor(params["in_proj_weight"]))
        layer.out_proj.weight.copy_(_tensor(params["out_proj_weight"]))
        if bias:
            layer.in_proj_bias.copy_(_tensor(params["in_proj_bias"]))
            layer.out_proj.bias.copy_(_tensor(params["out_proj_bias"]))
        x = torch.tensor(flat)
        out, weights = layer(
            x, x, x, attn_mask=blocked, need_weights=True, average_attn_weights=False
        )
    return (
        out.numpy().reshape(*lead, n, d),
        weights.numpy().reshape(*lead, num_heads, n, n),
    )


def multi_head_cases() -> list[Case]:
    """The hidden cases of multi_head_attention: X, params, num_heads and mask."""
    rng = np.random.default_rng(801)
    return [
        Case(
            "n=5, d_model=6, h=3, no mask",
            X=rng.normal(size=(5, 6)),
            params=_mha_params(rng, 6, True),
            num_heads=3,
            mask=None,
        ),
        Case(
            "n=3, d_model=4, one head",
            X=rng.normal(size=(3, 4)),
            params=_mha_params(rng, 4, True),
            num_heads=1,
            mask=None,
        ),
        Case(
            "n=4, d_model=h=4 (d_k = 1), causal",
            X=rng.normal(size=(4, 4)),
            params=_mha_params(rng, 4, True),
            num_heads=4,
            mask=_lower(4),
        ),
        Case(
            "B=2, n=5, d_model=8, h=2, causal mask (5, 5)",
            X=rng.normal(size=(2, 5, 8)),
            params=_mha_params(rng, 8, True),
            num_heads=2,
            mask=_lower(5),
        ),
        Case(
            "B=3, n=4, d_model=6, h=2, padding mask (3, 1, 4), lengths 4, 1, 3",
            X=rng.normal(size=(3, 4, 6)),
            params=_mha_params(rng, 6, True),
            num_heads=2,
            mask=_keys_below((4, 1, 3), 4),
        ),
        Case(
            "n=3, d_model=4, h=2, no biases (bias=False)",
            X=rng.normal(size=(3, 4)),
            params=_mha_params(rng, 4, False),
            num_heads=2,
            mask=None,
        ),
        Case(
            "leading dimensions (2, 3), n=4, d_model=6, h=3, causal",
            X=rng.normal(size=(2, 3, 4, 6)),
            params=_mha_params(rng, 6, True),
            num_heads=3,
            mask=_lower(4),
        ),
        Case(
            "n=4, d_model=4, h=2, scores in the hundreds, non-contiguous",
            X=_strided(4.0 * rng.normal(size=(4, 4))),
            params={k: _strided(v) for k, v in _mha_params(rng, 4, True, scale=8.0).items()},
            num_heads=2,
            mask=None,
        ),
    ]


def check_multi_head_attention(multi_head_attention: Callable[..., Any]) -> None:
    """Hidden test of Part B: against nn.MultiheadAttention with the same weights (float64)."""
    cases = multi_head_cases()
    for case in cases:
        X, params, num_heads, mask = case.X, case.params, case.num_heads, case.mask
        out_ref, weights_ref = torch_multi_head(X, params, num_heads, mask)
        inputs = {"X": X, "params": params} | ({} if mask is None else {"mask": mask})
        before = _snapshot(inputs)
        with case.named("multi_head_attention"), np.errstate(all="ignore"):
            result = _call_by_hand(multi_head_attention, HEADS_BY_HAND, X, params, num_heads, mask)
            _expect_unchanged("multi_head_attention", inputs, before)
            out, weights = _unpack(result, "multi_head_attention", ("out", "weights"))
            _expect_array("the weights (..., num_heads, n, n)", weights, weights_ref.shape)
            _expect_array("out", out, out_ref.shape)
            against = "torch.nn.MultiheadAttention"
            assert_close(
                "the weights of the heads", weights, weights_ref, atol=1e-10, rtol=1e-8,
                against=against,
            )  # fmt: skip
            assert_close("out", out, out_ref, atol=1e-10, rtol=1e-8, against=against)

    rng = np.random.default_rng(802)
    X, params = rng.normal(size=(3, 6)), _mha_params(rng, 6, True)
    missing = {k: v for k, v in params.items() if k != "in_proj_weight"}
    square = params | {"in_proj_weight": rng.normal(size=(6, 6))}
    wrong_out = params | {"out_proj_weight": rng.normal(size=(6, 5))}
    wrong_bias = params | {"in_proj_bias": rng.normal(size=6)}
    bad_calls = [
        ("d_model = 6 and num_heads = 4 (not a divisor)", X, params, 4),
        ("num_heads = 0", X, params, 0),
        ("no 'in_proj_weight'", X, missing, 2),
        ("an in_proj_weight of shape (6, 6), not (18, 6)", X, square, 2),
        ("an out_proj_weight of shape (6, 5)", X, wrong_out, 2),
        ("an in_proj_bias of shape (6,), not (18,)", X, wrong_bias, 2),
        ("a 1-D X", X[0], params, 2),
    ]
    divisible = (r"divis|divid|multiple", "say that d_model is not divisible by num_heads")
    for description, *args in bad_calls:
        call = f"multi_head_attention with {description}"
        says = divisible if "not a divisor" in description else None
        _expect_value_error(multi_head_attention, HEADS_BY_HAND, call, *args, says=says)
    total = len(cases) + len(bad_calls)
    print(f"check_multi_head_attention: all {total} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part C: sinusoidal_encoding, relative_dot, shift_matrix
# --------------------------------------------------------------------------------------------


def _omega(d: int, base: float) -> torch.Tensor:
    return torch.exp(-torch.arange(d // 2, dtype=torch.float64) * 2.0 / d * np.log(base))


def torch_sinusoids(n: int, d: int, base: float = 10000.0) -> np.ndarray:
    """p_i as (sin, cos) pairs, from the complex numbers exp(1j * i * omega_r)."""
    turns = torch.polar(
        torch.ones(n, d // 2, dtype=torch.float64),
        torch.arange(n, dtype=torch.float64)[:, None] * _omega(d, base),
    )  # cos + i sin
    return torch.stack([turns.imag, turns.real], dim=-1).reshape(n, d).numpy()


def closed_form_dots(n: int, d: int) -> np.ndarray:
    """sum_r cos((i - j) omega_r)."""
    offsets = torch.arange(n, dtype=torch.float64)
    gaps = offsets[:, None] - offsets[None, :]
    return torch.cos(gaps[..., None] * _omega(d, 10000.0)).sum(-1).numpy()


def torch_shift(k: int, d: int, base: float = 10000.0) -> np.ndarray:
    """M_k from its action on the basis: (sin a, cos a) -> (sin(a + b), cos(a + b))."""
    angle = k * _omega(d, base)
    shift = torch.zeros(d, d, dtype=torch.float64)
    for r, b in enumerate(angle):
        rotation = torch.tensor([[torch.cos(b), torch.sin(b)], [-torch.sin(b), torch.cos(b)]])
        shift[2 * r : 2 * r + 2, 2 * r : 2 * r + 2] = rotation
    return shift.numpy()


# The cases of Part C are labelled by the call.


def _encoding(n: int, d: int, base: float) -> Case:
    return Case(f"sinusoidal_encoding({n}, {d}, base={base:g})", n=n, d=d, base=base)


def _dots(n: int, d: int) -> Case:
    return Case(f"relative_dot({n}, {d})", n=n, d=d)


def _shift(k: int, d: int, base: float) -> Case:
    return Case(f"shift_matrix({k}, {d}, base={base:g})", k=k, d=d, base=base)


ENCODING_CASES = (
    _encoding(1, 2, 10000.0),
    _encoding(7, 10, 10000.0),
    _encoding(50, 16, 100.0),
    _encoding(2048, 64, 10000.0),
)
DOT_CASES = (_dots(1, 2), _dots(9, 6), _dots(40, 32))
SHIFT_CASES = (
    _shift(0, 2, 10000.0),
    _shift(-3, 6, 10000.0),
    _shift(5, 8, 500.0),
    _shift(1000, 4, 10000.0),
)


def check_sinusoidal(
    sinusoidal_encoding: Callable[..., Any],
    relative_dot: Callable[..., Any],
    shift_matrix: Callable[..., Any],
) -> None:
    """Hidden test of Part C: the encoding, its dot products and its shift matrices."""
    for case in ENCODING_CASES:
        n, d, base, call = case.n, case.d, case.base, case.label
        with _case(call):
            got = _call_valid(sinusoidal_encoding, WAVES_BY_HAND, n, d, base)
            _expect_array(call, got, (n, d))
            assert_close(
                call, got, torch_sinusoids(n, d, base), atol=1e-9, against="exp(1j i omega_r)"
            )
    for case in DOT_CASES:
        n, d, call = case.n, case.d, case.label
        with _case(call):
            got = _call_valid(relative_dot, WAVES_BY_HAND, n, d)
            _expect_array(call, got, (n, n))
            assert_close(
                call, got, closed_form_dots(n, d), atol=1e-9, against="sum_r cos((i - j) omega_r)"
            )
    for case in SHIFT_CASES:
        k, d, base, call = case.k, case.d, case.base, case.label
        with _case(call):
            got = _call_valid(shift_matrix, WAVES_BY_HAND, k, d, base)
            _expect_array(call, got, (d, d))
            expected = torch_shift(k, d, base)
            assert_close(call, got, expected, atol=1e-9, against="the rotation blocks")
            table = torch_sinusoids(abs(k) + 6, d, base)
            start = max(0, -k)
            moved = table[start : start + 5] @ np.asarray(got, dtype=np.float64).T
            assert_close(
                f"p_(i+{k}) from {call} applied to p_i",
                moved,
                table[start + k : start + k + 5],
                atol=1e-9,
                against=f"p_(i+{k})",
            )
    bad_calls = [
        (sinusoidal_encoding, "sinusoidal_encoding(4, 7) (odd d)", (4, 7)),
        (sinusoidal_encoding, "sinusoidal_encoding(4, 0)", (4, 0)),
        (sinusoidal_encoding, "sinusoidal_encoding(0, 4)", (0, 4)),
        (relative_dot, "relative_dot(3, 3) (odd d)", (3, 3)),
        (shift_matrix, "shift_matrix(1, 5) (odd d)", (1, 5)),
    ]
    for function, call, args in bad_calls:
        _expect_value_error(function, WAVES_BY_HAND, call, *args)
    total = len(ENCODING_CASES) + len(DOT_CASES) + len(SHIFT_CASES) + len(bad_calls)
    print(f"check_sinusoidal: all {total} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part D: apply_rope
# --------------------------------------------------------------------------------------------


def torch_rope(x: np.ndarray, positions: Any, base: float = 10000.0) -> np.ndarray:
    """Each pair (x_2r, x_2r+1) as a complex number, times exp(1j * position * theta_r)."""
    values = _tensor(x)
    d = values.shape[-1]
    where = torch.broadcast_to(_tensor(positions), values.shape[:-1])
    pairs = torch.view_as_complex(values.reshape(*values.shape[:-1], d // 2, 2).contiguous())
    turn = torch.polar(torch.ones(d // 2, dtype=torch.float64), where[..., None] * _omega(d, base))
    return torch.view_as_real(pairs * turn).reshape(values.shape).numpy()


def rope_cases() -> list[Case]:
    """The hidden cases of apply_rope: x, positions and base."""
    rng = np.random.default_rng(901)
    return [
        Case(
            "n=5, d=8, positions 0..4",
            x=rng.normal(size=(5, 8)),
            positions=np.arange(5),
            base=10000.0,
        ),
        Case(
            "a batch (2, 3, 6, 4), positions 0, 2, 3, 7, 8, 20",
            x=rng.normal(size=(2, 3, 6, 4)),
            positions=np.array([0, 2, 3, 7, 8, 20]),
            base=10000.0,
        ),
        Case(
            "n=5, d=2, positions -3..1",
            x=rng.normal(size=(5, 2)),
            positions=np.arange(-3, 2),
            base=10000.0,
        ),
        Case(
            "n=4, d=6, positions 10000..10003",
            x=rng.normal(size=(4, 6)),
            positions=np.arange(10000, 10004),
            base=10000.0,
        ),
        Case(
            "n=4, d=4, fractional positions 0, 0.25, 0.5, 0.75",
            x=rng.normal(size=(4, 4)),
            positions=np.array([0.0, 0.25, 0.5, 0.75]),
            base=10000.0,
        ),
        Case(
            "B=3, n=4, d=6, one set of positions per sequence (3, 4)",
            x=rng.normal(size=(3, 4, 6)),
            positions=np.array([[0, 1, 2, 3], [5, 6, 7, 8], [40, 41, 42, 43]]),
            base=10000.0,
        ),
        Case(
            "n=3, d=8, base 500, positions as a list, non-contiguous x",
            x=_strided(rng.normal(size=(3, 8))),
            positions=[2, 9, 4],
            base=500.0,
        ),
    ]


def check_rope(apply_rope: Callable[..., Any]) -> None:
    """Hidden test of Part D: rotations against complex numbers; offsets only; lengths kept."""
    cases = rope_cases()
    for case in cases:
        x, positions, base = case.x, case.positions, case.base
        expected = torch_rope(x, positions, base)
        inputs = {"x": x, "positions": positions}
        before = _snapshot(inputs)
        with case.named("apply_rope"):
            got = _call_valid(apply_rope, ROTATE_BY_HAND, x, positions, base)
            _expect_unchanged("apply_rope", inputs, before)
            _expect_array("apply_rope(x, positions)", got, expected.shape)
            assert_close(
                "apply_rope(x, positions)",
                got,
                expected,
                atol=1e-9,
                rtol=1e-9,
                against="the pairs as complex numbers times exp(1j position theta_r)",
            )
            assert_close(
                "the lengths of the rotated rows",
                np.linalg.norm(np.asarray(got, dtype=np.float64), axis=-1),
                np.linalg.norm(x, axis=-1),
                atol=1e-9,
                against="the lengths of the rows of x",
            )

    rng = np.random.default_rng(902)
    q, k = rng.normal(size=(1, 16)), rng.normal(size=(1, 16))
    for offset in (0, 3, -7):
        with _case(f"apply_rope, q at position i + {offset}, k at i"):
            starts = [0, 1, 17, 250]
            scores = []
            for i in starts:
                turned_q = _call_valid(apply_rope, ROTATE_BY_HAND, q, [i + offset])
                turned_k = _call_valid(apply_rope, ROTATE_BY_HAND, k, [i])
                scores.append(float(np.asarray(turned_q)[0] @ np.asarray(turned_k)[0]))
            reference = float(torch_rope(q, [offset])[0] @ k[0])
            assert_close(
                f"the score of the rotated q and k for i = {starts}",
                scores,
                np.full(len(starts), reference),
                atol=1e-9,
                against=f"q . R_({-offset}) k, which depends on the offset only",
            )
    x = rng.normal(size=(4, 6))
    bad_calls = [
        ("an odd d = 5", rng.normal(size=(3, 5)), np.arange(3)),
        ("a 1-D x", x[0], np.arange(6)),
        ("3 positions for n = 4 rows", x, np.arange(3)),
        ("a single position for n = 4 rows", x, 2),
    ]
    for description, *args in bad_calls:
        _expect_value_error(apply_rope, ROTATE_BY_HAND, f"apply_rope with {description}", *args)
    total = len(cases) + 3 + len(bad_calls)
    print(f"check_rope: all {total} hidden cases passed.")
