"""Hidden checks of Assignment 5: attention with empty rows and in pieces, multi-head attention,
positions read back, partial RoPE.

The hidden test cells of ``a5_self_attention`` call, at autograde time::

    check_attention(local_mask, attention, merge_attention)
    check_multi_head_attention(multi_head_attention)
    check_sinusoidal(shift_matrix, decode_position)
    check_rope(partial_rope)

Each check runs the student's functions on inputs the visible tests do not use (batch
dimensions, n != m, d_k = 1, one head and as many heads as features, scores in the thousands,
blocked keys that score far above the allowed ones, rows and whole sequences with no key,
encodings in float32 and with noise, positions near the ends of the decodable range, large,
negative and fractional offsets, non-contiguous arrays...) and compares the results with
references computed *before* the call and in another way than the assignment asks:
``F.scaled_dot_product_attention`` (its weights with V = I) and ``torch.logsumexp``, local
masks from loops, merges against attention over all the keys, ``nn.MultiheadAttention`` with
the weights copied in (float64), complex exponentials in torch for the encodings and the
shift matrices, and transformers' GPT-NeoX ``apply_rotary_pos_emb`` for the rotations. Then it
checks properties (chunks against one go, scores that depend on offsets only, lengths kept)
and that bad input raises ValueError.

While a student's function runs, the routines that would do its work (torch's attention
functions and layers, every softmax and log-sum-exp of torch and SciPy, autograd, the rotary
helpers of transformers' GPT-NeoX and Llama, ``course.models.attention`` by name, and every
public callable of the ``course`` package except ``course.checks``) are replaced by traps that
raise :class:`ShortcutUsed`.
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
from course.checks.a5_self_attention import expect_log_sum_exp
from course.checks.cases import Case
from course.checks.cases import case as _case
from course.checks.cases import expect_array as _expect_array
from course.checks.cases import expect_unchanged as _expect_unchanged
from course.checks.cases import strided as _strided
from course.checks.cases import unpack as _unpack
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
# Part A: local_mask, attention, merge_attention
# --------------------------------------------------------------------------------------------


def torch_attention(
    Q: np.ndarray, K: np.ndarray, V: np.ndarray, mask: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Z, A, L): Z from F.scaled_dot_product_attention, A its output for V = I, L from
    torch.logsumexp of the allowed scores; rows with no allowed key set to 0 (Z, A) and -inf
    (L) here, whatever the version of torch does with them."""
    q, k, v = _tensor(Q), _tensor(K), _tensor(V)
    scores = q @ k.transpose(-1, -2) / np.sqrt(q.shape[-1])
    allowed = torch.ones(scores.shape, dtype=torch.bool)
    if mask is not None:
        allowed = torch.tensor(np.array(mask, dtype=bool)).broadcast_to(
            torch.broadcast_shapes(scores.shape, np.shape(mask))
        )
        scores = scores.broadcast_to(allowed.shape)
    m = k.shape[-2]
    lead = allowed.shape[:-2]
    identity = torch.eye(m, dtype=torch.float64).expand(*lead, m, m)
    q, k, v = (t.broadcast_to(*lead, *t.shape[-2:]) for t in (q, k, v))
    empty = ~allowed.any(-1, keepdim=True)  # (..., n, 1)
    with torch.no_grad():
        Z = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        A = F.scaled_dot_product_attention(q, k, identity, attn_mask=allowed)
        L = torch.logsumexp(scores.masked_fill(~allowed, -torch.inf), dim=-1)
    Z, A = Z.masked_fill(empty, 0.0), A.masked_fill(empty, 0.0)
    return Z.numpy(), A.numpy(), L.masked_fill(empty[..., 0], -torch.inf).numpy()


def _expect_no_nan(name: str, value: np.ndarray) -> None:
    if np.isnan(np.asarray(value, dtype=np.float64)).any():
        where = [int(i) for i in np.argwhere(np.isnan(np.asarray(value, dtype=np.float64)))[0]]
        raise AssertionError(f"{name} contains nan at {where}")


def _local(lengths: tuple[int, ...], m: int, radius: int) -> np.ndarray:
    """(B, m, m) from loops: key j is allowed to query i when |i - j| <= radius, j < length."""
    out = np.zeros((len(lengths), m, m), dtype=bool)
    for b, length in enumerate(lengths):
        for i in range(m):
            for j in range(max(0, i - radius), min(m, i + radius + 1)):
                out[b, i, j] = j < length
    return out


def _lower(n: int, m: int | None = None) -> np.ndarray:
    """Causal booleans (n, m): key j is allowed for query i when j <= i."""
    return np.arange(n if m is None else m)[None, :] <= np.arange(n)[:, None]


def _keys_below(lengths: tuple[int, ...], m: int) -> np.ndarray:
    """(B, 1, m): key j of sequence b is real when j < lengths[b]."""
    return (np.arange(m)[None, :] < np.array(lengths)[:, None])[:, None, :]


def attention_cases() -> list[Case]:
    """The hidden cases of attention: Q, K, V and mask."""
    rng = np.random.default_rng(701)
    cases = [
        Case(
            "B=2, n=4, m=6, d_k=3, d_v=5 (cross-attention), no mask",
            Q=rng.normal(size=(2, 4, 3)),
            K=rng.normal(size=(2, 6, 3)),
            V=rng.normal(size=(2, 6, 5)),
            mask=None,
        ),
        Case(
            "B=3, n=m=5, d_k=1, d_v=2, a causal mask (5, 5) shared by the batch",
            Q=rng.normal(size=(3, 5, 1)),
            K=rng.normal(size=(3, 5, 1)),
            V=rng.normal(size=(3, 5, 2)),
            mask=_lower(5),
        ),
        Case(
            "B=3, m=7, local mask of radius 1, lengths 7, 2, 4: rows with no key",
            Q=rng.normal(size=(3, 7, 4)),
            K=rng.normal(size=(3, 7, 4)),
            V=rng.normal(size=(3, 7, 3)),
            mask=_local((7, 2, 4), 7, 1),
        ),
        Case(
            "B=2 with 2 heads, local mask (2, 1, 5, 5) of radius 0, lengths 0 and 3",
            Q=rng.normal(size=(2, 2, 5, 4)),
            K=rng.normal(size=(2, 2, 5, 4)),
            V=rng.normal(size=(2, 2, 5, 2)),
            mask=_local((0, 3), 5, 0)[:, None],
        ),
        Case(
            "n=3, m=4, d_k=4, scores in the thousands",
            Q=60.0 * rng.normal(size=(3, 4)),
            K=60.0 * rng.normal(size=(4, 4)),
            V=rng.normal(size=(4, 2)),
            mask=None,
        ),
        Case(
            "n=4, m=3, the blocked keys score 2000 or more above the allowed ones, row 3 empty",
            Q=30.0 * np.ones((4, 2)),
            K=np.array([[-40.0, -40.0], [40.0, 40.0], [39.0, 40.0]]),
            V=rng.normal(size=(3, 3)),
            mask=np.array([[1, 0, 0], [1, 0, 1], [1, 1, 1], [0, 0, 0]], dtype=bool),
        ),
        Case(
            "n=3, a single key (m=1), padding mask (2, 1, 1) with lengths 1 and 0",
            Q=rng.normal(size=(2, 3, 2)),
            K=rng.normal(size=(2, 1, 2)),
            V=rng.normal(size=(2, 1, 4)),
            mask=_keys_below((1, 0), 1),
        ),
        Case(
            "n=2, m=3, non-contiguous arrays and mask",
            Q=_strided(rng.normal(size=(2, 3))),
            K=_strided(rng.normal(size=(3, 3))),
            V=_strided(rng.normal(size=(3, 2))),
            mask=_strided(np.array([[True, True, False], [False, True, True]])),
        ),
    ]
    return cases


LOCAL_CASES = (
    Case("local_mask([3, 1, 5], 5, 1)", lengths=[3, 1, 5], m=5, radius=1),
    Case("local_mask([0, 4], 4, 2) (an empty sequence)", lengths=np.array([0, 4]), m=4, radius=2),
    Case("local_mask([1], 1, 0)", lengths=np.array([1], dtype=np.int32), m=1, radius=0),
    Case("local_mask((6, 3), 6, 10) (a radius wider than m)", lengths=(6, 3), m=6, radius=10),
)


def merge_cases() -> list[Case]:
    """The hidden cases of merge_attention: Q, K, V, mask and which keys go to piece a."""
    rng = np.random.default_rng(703)
    lengths = (6, 1, 3)
    return [
        Case(
            "B=2, n=4, m=6, keys split at random",
            Q=rng.normal(size=(2, 4, 3)),
            K=rng.normal(size=(2, 6, 3)),
            V=rng.normal(size=(2, 6, 2)),
            mask=None,
            piece=rng.random(6) < 0.5,
        ),
        Case(
            "n=3, m=5, scores in the thousands, keys {0, 3} and {1, 2, 4}",
            Q=50.0 * rng.normal(size=(3, 4)),
            K=50.0 * rng.normal(size=(5, 4)),
            V=rng.normal(size=(5, 3)),
            mask=None,
            piece=np.array([True, False, False, True, False]),
        ),
        Case(
            "B=3, m=6, local mask of radius 1 with lengths 6, 1, 3, keys {0, 1, 2} and {3, 4, 5}",
            Q=rng.normal(size=(3, 6, 2)),
            K=rng.normal(size=(3, 6, 2)),
            V=rng.normal(size=(3, 6, 4)),
            mask=_local(lengths, 6, 1),
            piece=np.arange(6) < 3,
        ),
    ]


def check_attention(
    local_mask: Callable[..., Any],
    attention: Callable[..., Any],
    merge_attention: Callable[..., Any],
) -> None:
    """Hidden test of Part A: attention against F.scaled_dot_product_attention and
    torch.logsumexp, local masks against loops, merges against attention over all the keys."""
    cases = attention_cases()
    against = "torch.nn.functional.scaled_dot_product_attention (0 on a row with no key)"
    for case in cases:
        Q, K, V, mask = case.Q, case.K, case.V, case.mask
        Z_ref, A_ref, L_ref = torch_attention(Q, K, V, mask)
        inputs = {"Q": Q, "K": K, "V": V} | ({} if mask is None else {"mask": mask})
        before = _snapshot(inputs)
        with case.named("attention"), np.errstate(all="ignore"):
            result = _call_valid(attention, ATTEND_BY_HAND, Q, K, V, mask)
            _expect_unchanged("attention", inputs, before)
            Z, A, L = _unpack(result, "attention", ("Z", "A", "L"))
            _expect_array("A", A, A_ref.shape)
            _expect_array("Z", Z, Z_ref.shape)
            _expect_array("L", L, L_ref.shape)
            assert_close("A", A, A_ref, atol=1e-10, rtol=1e-8, against=against)
            assert_close("Z", Z, Z_ref, atol=1e-10, rtol=1e-8, against=against)
            _expect_no_nan("L", L)
            expect_log_sum_exp("L", L, L_ref, against="torch.logsumexp of the allowed scores")

    for case in LOCAL_CASES:
        lengths, m, radius = case.lengths, case.m, case.radius
        before = _snapshot({"lengths": lengths})
        with _case(case.label):
            got = _call_valid(local_mask, ATTEND_BY_HAND, lengths, m, radius)
            _expect_unchanged("local_mask", {"lengths": lengths}, before)
            _expect_bool_mask(case.label, got, _local(tuple(np.asarray(lengths)), m, radius))

    merges = merge_cases()
    for case in merges:
        Q, K, V, mask, piece = case.Q, case.K, case.V, case.mask, case.piece
        keys_a, keys_b = np.flatnonzero(piece), np.flatnonzero(~piece)
        mask_a = None if mask is None else mask[..., keys_a]
        mask_b = None if mask is None else mask[..., keys_b]
        Z_a, _, L_a = torch_attention(Q, K[..., keys_a, :], V[..., keys_a, :], mask_a)
        Z_b, _, L_b = torch_attention(Q, K[..., keys_b, :], V[..., keys_b, :], mask_b)
        Z_ref, _, L_ref = torch_attention(Q, K, V, mask)
        pieces = {"Z_a": Z_a, "L_a": L_a, "Z_b": Z_b, "L_b": L_b}
        before = _snapshot(pieces)
        with case.named("merge_attention"), np.errstate(all="ignore"):
            result = _call_valid(merge_attention, ATTEND_BY_HAND, Z_a, L_a, Z_b, L_b)
            _expect_unchanged("merge_attention", pieces, before)
            Z, L = _unpack(result, "merge_attention", ("Z", "L"))
            _expect_array("Z", Z, Z_ref.shape)
            _expect_array("L", L, L_ref.shape)
            whole = "attention over all the keys (torch.nn.functional.scaled_dot_product_attention)"
            assert_close("Z", Z, Z_ref, atol=1e-10, rtol=1e-8, against=whole)
            _expect_no_nan("L", L)
            expect_log_sum_exp("L", L, L_ref, against="torch.logsumexp over all the keys")

    rng = np.random.default_rng(702)
    Q, K, V = rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 4, 2)), rng.normal(size=(2, 4, 3))
    bad_calls = [
        ("Q with d_k = 2 and K with d_k = 3", Q, rng.normal(size=(2, 4, 3)), V, None),
        ("4 keys and 5 values", Q, K, rng.normal(size=(2, 5, 3)), None),
        ("a 1-D Q", Q[0, 0], K[0], V[0], None),
        ("an additive float mask of zeros (not booleans)", Q, K, V, np.zeros((3, 4))),
        ("an integer mask of ones", Q, K, V, np.ones((3, 4), dtype=np.int64)),
        ("a mask of shape (3, 5) for n = 3, m = 4", Q, K, V, np.ones((3, 5), dtype=bool)),
    ]
    for description, *args in bad_calls:
        _expect_value_error(attention, ATTEND_BY_HAND, f"attention with {description}", *args)
    bad_masks = [
        ([2, 5], 4, 1, "a length above m = 4"),
        ([-1, 2], 4, 1, "a negative length"),
        ([[1, 2]], 4, 1, "a 2-D array of lengths"),
        ([1.5, 2.0], 4, 1, "lengths that are not integers"),
        ([2, 3], 4, -1, "a negative radius"),
        ([2, 3], 0, 1, "m = 0"),
    ]
    for lengths, m, radius, description in bad_masks:
        call = f"local_mask({lengths}, {m}, {radius}) ({description})"
        _expect_value_error(local_mask, ATTEND_BY_HAND, call, lengths, m, radius)
    Z, L = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3))
    bad_merges = [
        ("Z_b of shape (2, 3, 5), Z_a (2, 3, 4)", Z, L, rng.normal(size=(2, 3, 5)), L),
        ("L_a of shape (2, 4) for Z (2, 3, 4)", Z, rng.normal(size=(2, 4)), Z, L),
        ("L_b of shape (3,) for Z (2, 3, 4)", Z, L, Z, L[0]),
        ("an L_a holding nan", Z, np.where(np.arange(3) == 1, np.nan, L), Z, L),
        ("an L_b holding +inf", Z, L, Z, np.full((2, 3), np.inf)),
    ]
    for description, *args in bad_merges:
        call = f"merge_attention with {description}"
        _expect_value_error(merge_attention, ATTEND_BY_HAND, call, *args)
    total = len(cases) + len(LOCAL_CASES) + len(merges)
    total += len(bad_calls) + len(bad_masks) + len(bad_merges)
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
                "the weights of the heads",
                weights,
                weights_ref,
                atol=1e-10,
                rtol=1e-8,
                against=against,
            )
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
# Part C: shift_matrix, decode_position
# --------------------------------------------------------------------------------------------


def _omega(d: int, base: float) -> torch.Tensor:
    return torch.exp(-torch.arange(d // 2, dtype=torch.float64) * 2.0 / d * np.log(base))


def torch_sinusoids(positions: Any, d: int, base: float = 10000.0) -> np.ndarray:
    """p_t as (sin, cos) pairs, from the complex numbers exp(1j * t * omega_r)."""
    where = _tensor(positions)
    turns = torch.polar(
        torch.ones(*where.shape, d // 2, dtype=torch.float64), where[..., None] * _omega(d, base)
    )
    return torch.stack([turns.imag, turns.real], dim=-1).reshape(*where.shape, d).numpy()


def torch_shift(k: int, d: int, base: float = 10000.0) -> np.ndarray:
    """M_k from its action on the basis: (sin a, cos a) -> (sin(a + b), cos(a + b))."""
    angle = k * _omega(d, base)
    shift = torch.zeros(d, d, dtype=torch.float64)
    for r, b in enumerate(angle):
        rotation = torch.tensor([[torch.cos(b), torch.sin(b)], [-torch.sin(b), torch.cos(b)]])
        shift[2 * r : 2 * r + 2, 2 * r : 2 * r + 2] = rotation
    return shift.numpy()


def _shift(k: int, d: int, base: float) -> Case:
    return Case(f"shift_matrix({k}, {d}, base={base:g})", k=k, d=d, base=base)


SHIFT_CASES = (
    _shift(0, 2, 10000.0),
    _shift(-3, 6, 10000.0),
    _shift(5, 8, 500.0),
    _shift(1000, 4, 10000.0),
)


def _half_period(d: int, base: float) -> float:
    """P / 2 = pi / omega_(d/2 - 1): decode_position answers in (-P/2, P/2]."""
    return float(np.pi / _omega(d, base)[-1])


def decode_cases() -> list[Case]:
    """The hidden cases of decode_position: the positions, d, base and how p is stored."""
    rng = np.random.default_rng(904)
    edge = _half_period(64, 10000.0)
    return [
        Case(
            "d=2, positions -3, -1.5, 0, 2, 3.1",
            positions=np.array([-3.0, -1.5, 0.0, 2.0, 3.1]),
            d=2,
            base=10000.0,
            stored="float64",
            tol=1e-9,
        ),
        Case(
            "d=8, base 100, a batch (3, 4) of positions in (-P/2, P/2)",
            positions=rng.uniform(-0.99, 0.99, size=(3, 4)) * _half_period(8, 100.0),
            d=8,
            base=100.0,
            stored="float64",
            tol=1e-9,
        ),
        Case(
            "d=64, 40 positions up to 20000 apart, float32",
            d=64,
            base=10000.0,
            positions=np.concatenate([rng.uniform(-20000, 20000, 38), [0.0, 12345.5]]),
            stored="float32",
            tol=2e-6,
        ),
        Case(
            "d=64, positions near both ends of (-P/2, P/2]",
            d=64,
            base=10000.0,
            positions=np.array([edge - 2.0, -edge + 2.0, edge - 0.5]),
            stored="float64",
            tol=1e-7,
        ),
        Case(
            "d=32, 30 positions, noise of 1e-3 on every feature",
            d=32,
            base=10000.0,
            positions=rng.uniform(-8000, 8000, 30),
            stored="noisy",
            tol=2e-2,
        ),
        Case(
            "d=16, fractional positions, non-contiguous p",
            d=16,
            base=10000.0,
            positions=np.array([0.25, -7.5, 99.125, 1234.75]),
            stored="strided",
            tol=1e-8,
        ),
    ]


def _stored(case: Case) -> np.ndarray:
    p = torch_sinusoids(case.positions, case.d, case.base)
    if case.stored == "float32":
        return p.astype(np.float32)
    if case.stored == "noisy":
        return p + 1e-3 * np.random.default_rng(905).normal(size=p.shape)
    if case.stored == "strided":
        return _strided(p)
    return p


def check_sinusoidal(shift_matrix: Callable[..., Any], decode_position: Callable[..., Any]) -> None:
    """Hidden test of Part C: shift matrices against rotation blocks and the encoding,
    positions read back from encodings made with complex numbers."""
    for case in SHIFT_CASES:
        k, d, base, call = case.k, case.d, case.base, case.label
        with _case(call):
            got = _call_valid(shift_matrix, WAVES_BY_HAND, k, d, base)
            _expect_array(call, got, (d, d))
            assert_close(
                call, got, torch_shift(k, d, base), atol=1e-9, against="the rotation blocks"
            )
            start = max(0, -k)
            table = torch_sinusoids(np.arange(abs(k) + 6), d, base)
            moved = table[start : start + 5] @ np.asarray(got, dtype=np.float64).T
            assert_close(
                f"p_(t+{k}) from {call} applied to p_t",
                moved,
                table[start + k : start + k + 5],
                atol=1e-9,
                against=f"p_(t+{k})",
            )
    cases = decode_cases()
    for case in cases:
        p = _stored(case)
        before = _snapshot({"p": p})
        with case.named("decode_position"), np.errstate(all="ignore"):
            got = _call_valid(decode_position, WAVES_BY_HAND, p, case.base)
            _expect_unchanged("decode_position", {"p": p}, before)
            _expect_array("the positions", got, np.shape(case.positions))
            assert_close(
                "the positions", got, case.positions, atol=case.tol, against="the positions encoded"
            )
    bad_calls = [
        (shift_matrix, "shift_matrix(1, 5) (odd d)", (1, 5)),
        (shift_matrix, "shift_matrix(2, 0) (d = 0)", (2, 0)),
        (decode_position, "decode_position of p with d = 7", (np.ones((3, 7)),)),
        (decode_position, "decode_position of a single number", (np.float64(0.5),)),
    ]
    for function, call, args in bad_calls:
        _expect_value_error(function, WAVES_BY_HAND, call, *args)
    total = len(SHIFT_CASES) + len(cases) + len(bad_calls)
    print(f"check_sinusoidal: all {total} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part D: partial_rope
# --------------------------------------------------------------------------------------------


def torch_partial_rope(x: Any, offset: Any, rotary_dim: int, base: float = 10000.0) -> np.ndarray:
    """transformers' GPT-NeoX apply_rotary_pos_emb, with cos and sin built in float64 the way
    GPTNeoXRotaryEmbedding builds them (its frequencies of rotary_dim features, duplicated);
    complex numbers in torch where transformers is not installed."""
    values = _tensor(x)
    lead, n = values.shape[:-1], values.shape[-2]
    where = _tensor(offset)[..., None] + torch.arange(n, dtype=torch.float64)  # (..., n)
    where = where.reshape(*where.shape[:-1], *[1] * (len(lead) - where.dim()), n)
    where = torch.broadcast_to(where, lead)  # x.shape[:-1]
    half = rotary_dim // 2
    freqs = where[..., None] * _omega(rotary_dim, base)  # (..., n, half)
    try:
        from transformers.models.gpt_neox.modeling_gpt_neox import apply_rotary_pos_emb
    except ImportError:  # the halves as complex numbers x_r + 1j x_(r+h), times exp(1j angle)
        pairs = torch.complex(values[..., :half], values[..., half:rotary_dim])
        turned = pairs * torch.polar(torch.ones_like(freqs), freqs)
        return torch.cat([turned.real, turned.imag, values[..., rotary_dim:]], dim=-1).numpy()
    emb = torch.cat([freqs, freqs], dim=-1)  # (..., n, rotary_dim)
    rotated, _ = apply_rotary_pos_emb(values[None], values[None], emb.cos(), emb.sin(), 0)
    return rotated[0].numpy()


def rope_cases() -> list[Case]:
    """The hidden cases of partial_rope: x, offset, rotary_dim and base."""
    rng = np.random.default_rng(901)
    return [
        Case(
            "n=5, d=8, rotary_dim=4, offset 0",
            x=rng.normal(size=(5, 8)),
            offset=0,
            rotary_dim=4,
            base=10000.0,
        ),
        Case(
            "(B, heads, n, d) = (2, 3, 4, 8), rotary_dim=2, offsets (2, 1) = 0 and 9",
            x=rng.normal(size=(2, 3, 4, 8)),
            offset=np.array([[0], [9]]),
            rotary_dim=2,
            base=10000.0,
        ),
        Case(
            "n=4, d=6, rotary_dim=d, offset 10000",
            x=rng.normal(size=(4, 6)),
            offset=10000,
            rotary_dim=6,
            base=10000.0,
        ),
        Case(
            "B=3, n=2, d=16, rotary_dim=4 (a quarter), offsets 3, 0, 250 (shape (3,))",
            x=rng.normal(size=(3, 2, 16)),
            offset=np.array([3, 0, 250]),
            rotary_dim=4,
            base=10000.0,
        ),
        Case(
            "n=3, d=8, rotary_dim=8, offset -5",
            x=rng.normal(size=(3, 8)),
            offset=-5,
            rotary_dim=8,
            base=10000.0,
        ),
        Case(
            "n=4, d=10, rotary_dim=6, fractional offset 2.25 (position interpolation)",
            x=rng.normal(size=(4, 10)),
            offset=2.25,
            rotary_dim=6,
            base=10000.0,
        ),
        Case(
            "n=3, d=12, rotary_dim=8, base 500, offset 7, non-contiguous x",
            x=_strided(rng.normal(size=(3, 12))),
            offset=7,
            rotary_dim=8,
            base=500.0,
        ),
    ]


def check_rope(partial_rope: Callable[..., Any]) -> None:
    """Hidden test of Part D: partial_rope against GPT-NeoX's rotation; chunks against one go;
    offsets only; lengths kept."""
    cases = rope_cases()
    against = "transformers' GPT-NeoX apply_rotary_pos_emb (float64)"
    for case in cases:
        x, offset, rotary_dim, base = case.x, case.offset, case.rotary_dim, case.base
        expected = torch_partial_rope(x, offset, rotary_dim, base)
        inputs = {"x": x, "offset": offset}
        before = _snapshot(inputs)
        with case.named("partial_rope"):
            got = _call_valid(partial_rope, ROTATE_BY_HAND, x, offset, rotary_dim, base)
            _expect_unchanged("partial_rope", inputs, before)
            _expect_array("partial_rope(x, offset, rotary_dim)", got, expected.shape)
            assert_close(
                "partial_rope(x, offset, rotary_dim)",
                got,
                expected,
                atol=1e-9,
                rtol=1e-9,
                against=against,
            )
            assert_close(
                "the lengths of the rotated rows",
                np.linalg.norm(np.asarray(got, dtype=np.float64), axis=-1),
                np.linalg.norm(x, axis=-1),
                atol=1e-9,
                against="the lengths of the rows of x",
            )

    rng = np.random.default_rng(902)
    x = rng.normal(size=(2, 7, 12))
    with _case("partial_rope, 7 rows in chunks of 3, 1 and 3 (offsets 4, 7, 8) against one go"):
        whole = np.asarray(_call_valid(partial_rope, ROTATE_BY_HAND, x, 4, 6))
        chunks = [
            np.asarray(_call_valid(partial_rope, ROTATE_BY_HAND, x[:, a:b], 4 + a, 6))
            for a, b in ((0, 3), (3, 4), (4, 7))
        ]
        assert_close(
            "the rows rotated in chunks",
            np.concatenate(chunks, axis=-2),
            whole,
            atol=1e-12,
            against="the rows rotated in one go",
        )
    q, k = rng.normal(size=(1, 16)), rng.normal(size=(1, 16))
    for shift in (0, 3, -7):
        with _case(f"partial_rope, q at position i + {shift}, k at i, rotary_dim=8"):
            starts = [0, 1, 17, 250]
            scores = [
                float(
                    np.asarray(_call_valid(partial_rope, ROTATE_BY_HAND, q, i + shift, 8))[0]
                    @ np.asarray(_call_valid(partial_rope, ROTATE_BY_HAND, k, i, 8))[0]
                )
                for i in starts
            ]
            reference = float(torch_partial_rope(q, shift, 8)[0] @ k[0])
            assert_close(
                f"the score of the rotated q and k for i = {starts}",
                scores,
                np.full(len(starts), reference),
                atol=1e-9,
                against=f"q_rotated_by_{shift} . k, which depends on the offset only",
            )
    x = rng.normal(size=(2, 3, 6))
    bad_calls = [
        ("rotary_dim = 5 (odd)", x, 0, 5),
        ("rotary_dim = 8 for d = 6", x, 0, 8),
        ("rotary_dim = 0", x, 0, 0),
        ("a 1-D x", x[0, 0], 0, 4),
        ("offsets of shape (3,) for a batch of 2", x, np.arange(3), 4),
        ("offsets of shape (2, 3) for x of shape (2, 3, 6)", x, np.zeros((2, 3)), 4),
    ]
    for description, *args in bad_calls:
        _expect_value_error(partial_rope, ROTATE_BY_HAND, f"partial_rope with {description}", *args)
    total = len(cases) + 1 + 3 + len(bad_calls)
    print(f"check_rope: all {total} hidden cases passed.")
