"""The visible tests of Assignment 5 (attention with empty rows and in pieces, multi-head
attention, positions read back, partial RoPE).

The expected numbers were worked out once with an independent implementation.

Written as every module of visible tests is (the package's docstring, :mod:`course.checks`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from course.checks import CheckFailed, assert_close, inputs_kept
from course.checks.cases import Case, expect_array, expect_tuple
from course.checks.cases import case as _case
from course.checks.rules import by_hand, expect_refused

__all__ = ["check_part_a", "check_part_b", "check_part_c", "check_part_d"]

ASSIGNMENT = "a5_self_attention"
TORCH_ATTENTION = "torch.nn.functional.scaled_dot_product_attention"
LOG_SUM_EXP = "torch.logsumexp of the allowed scores"
TORCH_HEADS = "torch.nn.MultiheadAttention"
NEOX = "transformers' GPT-NeoX apply_rotary_pos_emb (float64)"


def expect_log_sum_exp(name: str, got: Any, expected: Any, *, against: str) -> None:
    """``got`` matches ``expected``, whose entries may be -inf (a row with no allowed key):
    the -inf entries must be -inf, the others close."""
    __tracebackhide__ = True
    got_array = np.asarray(got, dtype=np.float64)
    expected_array = np.asarray(expected, dtype=np.float64)
    if got_array.shape != expected_array.shape:
        raise CheckFailed(f"{name} should have shape {expected_array.shape}, got {got_array.shape}")
    empty = np.isneginf(expected_array)
    if (got_array[empty] != -np.inf).any():
        where = [int(i) for i in np.argwhere(empty & (got_array != -np.inf))[0]]
        raise CheckFailed(
            f"{name} is {got_array[tuple(where)]} at {where}, where the row has no allowed "
            "key: expected -inf (the log of an empty sum)"
        )
    assert_close(
        name,
        np.where(empty, 0.0, got_array),
        np.where(empty, 0.0, expected_array),
        atol=1e-9,
        against=against,
    )


def _call(label: str, function: str, *args: Any) -> Case:
    """A call on bad input, ``function(*args)``, labelled with the call as it reads."""
    return Case(label, function=function, args=args)


def _expect_value_errors(cases: list[Case], **functions: Callable[..., Any]) -> None:
    """Each case is a call on bad input, ``functions[case.function](*case.args)``, labelled
    with the call: it must raise ValueError."""
    __tracebackhide__ = True
    expect_refused(
        ASSIGNMENT, {bad.label: (functions[bad.function], bad.args, {}) for bad in cases}
    )


# -- Part A: local_mask, attention, merge_attention -----------------------------------------


def _qkv() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Part A's queries (n=3, d_k=2), keys (m=4, d_k=2) and values (m=4, d_v=3)."""
    Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    K = np.array([[1.0, 2.0], [0.5, -1.0], [-1.0, 0.0], [2.0, 1.0]])
    V = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]])
    return Q, K, V


def _local_4_2() -> np.ndarray:
    """local_mask([4, 2], 4, 1): (B=2, m=4, m=4), True where a query may attend."""
    return np.array(
        [
            [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]],
            [[1, 1, 0, 0], [1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]],
        ],
        dtype=bool,
    )


def part_a_local_mask_cases() -> list[Case]:
    """local_mask: lengths, m, radius and the expected mask."""
    return [
        Case(
            "lengths [4, 2], m = 4, radius 1",
            lengths=np.array([4, 2]),
            m=4,
            radius=1,
            expected_mask=_local_4_2(),
        )
    ]


def part_a_attention_cases() -> list[Case]:
    """attention: Q, K, V, mask (None: not given), what A, Z are compared with (``against``),
    the one sequence whose A is given (None: all of A), expected A, Z and L; ``pieces``: two
    sets of keys that the student's attention also runs on, merged (None: not this case)."""
    Q, K, V = _qkv()
    X = np.stack([K, K])  # self-attention over the keys, in a padded batch of two
    return [
        Case(
            "3 queries, 4 keys, no mask",
            Q=Q,
            K=K,
            V=V,
            mask=None,
            against=TORCH_ATTENTION,
            sequence=None,
            pieces=None,
            expected_A=[
                [0.2516723491, 0.1767214296, 0.0611857597, 0.5104204616],
                [0.5387760705, 0.0645848386, 0.1309854788, 0.2656536120],
                [0.4665747343, 0.0392732834, 0.0275772480, 0.4665747343],
            ],
            expected_Z=[
                [0.7620928107, 0.6871418913, 0.5716062213],
                [0.8044296825, 0.3302384507, 0.3966390909],
                [0.9331494686, 0.5058480177, 0.4941519823],
            ],
            expected_L=[2.0867340207, 2.0326688104, 2.8836574129],
        ),
        Case(
            "self-attention over the keys in a padded batch under local_mask([4, 2], 4, 1), "
            "where query 3 of sequence 1 (2 real tokens) has no key",
            Q=X,
            K=X,
            V=np.stack([V, V]),
            mask=_local_4_2(),
            sequence=1,
            pieces=None,
            against=f"{TORCH_ATTENTION} (zeros on a row with no key)",
            expected_A=[
                [0.9900106293, 0.0099893707, 0.0, 0.0],
                [0.1251495376, 0.8748504624, 0.0, 0.0],
                [0.0, 1.0, 0.0, 0.0],
                [0.0, 0.0, 0.0, 0.0],
            ],
            expected_Z=[
                [
                    [0.9900106293, 0.0099893707, 0.0],
                    [0.0998147836, 0.6977493584, 0.2024358580],
                    [0.0817633286, 0.3179184799, 0.7638448487],
                    [0.9929646489, 0.9929646489, 1.0],
                ],
                [
                    [0.9900106293, 0.0099893707, 0.0],
                    [0.1251495376, 0.8748504624, 0.0],
                    [0.0, 1.0, 0.0],
                    [0.0, 0.0, 0.0],
                ],
            ],
            expected_L=[
                [3.5455735052, 1.2437788026, 1.0897128786, 3.5425941218],
                [3.5455735052, 1.0175857839, -0.3535533906, -np.inf],
            ],
        ),
        Case(
            # Scores above 700: exp overflows unless each row's largest score is subtracted.
            "the queries times 1000 (scores up to 2121)",
            Q=1000.0 * Q,
            K=K,
            V=V,
            mask=None,
            against=TORCH_ATTENTION,
            sequence=None,
            pieces=([0, 2], [1, 3]),
            expected_A=[[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.5]],
            expected_Z=[[1.0, 1.0, 1.0], [1.0, 0.0, 0.0], [1.0, 0.5, 0.5]],
            expected_L=[1414.2135623731, 1414.2135623731, 2122.0134907402],
        ),
    ]


def part_a_merge_cases() -> list[Case]:
    """merge_attention: the two pieces Z_a, L_a, Z_b, L_b and the expected Z and L."""
    share = 1.0 / (1.0 + np.exp(-2.0))  # piece a's share of row 1
    return [
        Case(
            "numbers worked out by hand (rows: equal halves, L 1000 and 998, no key in a, "
            "no key at all)",
            Z_a=np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0], [5.0, 5.0]]),
            L_a=np.array([0.0, 1000.0, -np.inf, -np.inf]),
            Z_b=np.array([[0.0, 1.0], [1.0, 1.0], [3.0, -1.0], [0.0, 0.0]]),
            L_b=np.array([0.0, 998.0, 5.0, -np.inf]),
            expected_Z=[[0.5, 0.5], [1.0 - share, 1.0], [3.0, -1.0], [0.0, 0.0]],
            expected_L=[np.log(2.0), 1000.0 + np.log1p(np.exp(-2.0)), 5.0, -np.inf],
        )
    ]


def part_a_bad_cases() -> list[Case]:
    """Calls on bad input that must raise ValueError: the function and its arguments."""
    Q, K, V = _qkv()
    merge = part_a_merge_cases()[0]
    Z_a, L_a, Z_b, L_b = merge.Z_a, merge.L_a, merge.Z_b, merge.L_b
    return [
        _call("attention(Q, K[:, :1], V) (d_k of Q and K differ)", "attention", Q, K[:, :1], V),
        _call("attention(Q, K, V[:3]) (4 keys, 3 values)", "attention", Q, K, V[:3]),
        _call("attention(Q, K, V, np.ones((3, 4))) (a float mask)", "attention",
              Q, K, V, np.ones((3, 4))),
        _call("local_mask(np.array([3, 5]), 4, 1) (a length above m)", "local_mask",
              np.array([3, 5]), 4, 1),
        _call("local_mask(np.array([3]), 4, -1) (a negative radius)", "local_mask",
              np.array([3]), 4, -1),
        _call("merge_attention(Z_a, L_a[:3], Z_b, L_b) (3 log-sum-exps for 4 rows)",
              "merge_attention", Z_a, L_a[:3], Z_b, L_b),
    ]  # fmt: skip


def _check_local_mask(local_mask: Callable[..., Any]) -> None:
    __tracebackhide__ = True
    for case in part_a_local_mask_cases():
        B, m = len(case.lengths), case.m
        with case.named("local_mask"):
            with inputs_kept("local_mask", lengths=case.lengths):
                mask = by_hand(ASSIGNMENT, local_mask, case.lengths, m, case.radius)
            expect_array("the mask", mask, (B, m, m), bool)
            assert_close(
                "the mask",
                mask.astype(float),
                case.expected_mask.astype(float),
                atol=0,
                against=f"the expected mask of shape (B={B}, m={m}, m={m}) (1 = may attend)",
            )


def _check_attention(attention: Callable[..., Any]) -> None:
    __tracebackhide__ = True
    for case in part_a_attention_cases():
        Q, K, V, mask = case.Q, case.K, case.V, case.mask
        masked = () if mask is None else (mask,)
        with case.named("attention"):
            with inputs_kept("attention", Q=Q, K=K, V=V, mask=mask):
                result = by_hand(ASSIGNMENT, attention, Q, K, V, *masked)
            Z, A, L = expect_tuple(result, "attention", ("Z", "A", "L"))
            expect_array("A", A, np.shape(case.expected_Z)[:-1] + K.shape[-2:-1])  # (..., n, m)
            expect_array("Z", Z, np.shape(case.expected_Z))
            expect_array("L", L, np.shape(case.expected_L))
            if case.sequence is not None:
                A = A[case.sequence]
            A_name = "A" if case.sequence is None else f"A of sequence {case.sequence}"
            assert_close(A_name, A, case.expected_A, atol=1e-9, against=case.against)
            assert_close("Z", Z, case.expected_Z, atol=1e-9, against=case.against)
            expect_log_sum_exp("L", L, case.expected_L, against=LOG_SUM_EXP)


def _check_merge(attention: Callable[..., Any], merge_attention: Callable[..., Any]) -> None:
    __tracebackhide__ = True
    for case in part_a_merge_cases():
        pieces = {"Z_a": case.Z_a, "L_a": case.L_a, "Z_b": case.Z_b, "L_b": case.L_b}
        with case.named("merge_attention"):
            with inputs_kept("merge_attention", **pieces):
                result = by_hand(ASSIGNMENT, merge_attention, *pieces.values())
            Z, L = expect_tuple(result, "merge_attention", ("Z", "L"))
            shares = "the mix of Z_a and Z_b by their shares e^(L_a - L), e^(L_b - L)"
            assert_close("Z", Z, case.expected_Z, atol=1e-9, against=shares)
            expect_log_sum_exp("L", L, case.expected_L, against="log(e^L_a + e^L_b)")
    # Your attention over two sets of keys, merged: the attention over all of them.
    for case in part_a_attention_cases():
        if case.pieces is None:
            continue
        keys_a, keys_b = case.pieces
        with case.named("merge_attention", f"your attention over keys {keys_a} and {keys_b}"):
            Z_a, _, L_a = by_hand(ASSIGNMENT, attention, case.Q, case.K[keys_a], case.V[keys_a])
            Z_b, _, L_b = by_hand(ASSIGNMENT, attention, case.Q, case.K[keys_b], case.V[keys_b])
            Z, L = by_hand(ASSIGNMENT, merge_attention, Z_a, L_a, Z_b, L_b)
            assert_close("Z", Z, case.expected_Z, atol=1e-9, against=case.against)
            expect_log_sum_exp("L", L, case.expected_L, against=LOG_SUM_EXP)


def check_part_a(
    local_mask: Callable[..., Any],
    attention: Callable[..., Any],
    merge_attention: Callable[..., Any],
) -> None:
    """Part A's visible test (local_mask, attention, merge_attention)."""
    __tracebackhide__ = True
    _check_local_mask(local_mask)
    _check_attention(attention)
    _check_merge(attention, merge_attention)
    _expect_value_errors(
        part_a_bad_cases(),
        local_mask=local_mask,
        attention=attention,
        merge_attention=merge_attention,
    )
    print("Part A, visible test: passed.")


# -- Part B: multi_head_attention ------------------------------------------------------------


def part_b_cases() -> list[Case]:
    """multi_head_attention: X, params, num_heads, mask (None: not given), expected weights
    (num_heads, n, n) and out."""
    X = np.array([[1.0, 0.0, -1.0, 0.5], [0.0, 2.0, 1.0, -1.0], [0.5, -0.5, 0.0, 1.0]])  # (3, 4)
    params = {
        "in_proj_weight": 0.8 * np.sin(np.arange(48.0)).reshape(12, 4),  # [W^Q; W^K; W^V]
        "in_proj_bias": 0.1 * np.arange(12.0) - 0.5,
        "out_proj_weight": 0.5 * np.cos(np.arange(16.0)).reshape(4, 4),  # W^O
        "out_proj_bias": np.array([0.1, -0.2, 0.0, 0.3]),
    }
    return [
        Case(
            "3 tokens, d_model 4, 2 heads, no mask",
            X=X,
            params=params,
            num_heads=2,
            mask=None,
            expected_weights=[
                [
                    [0.1306659146, 0.6709055951, 0.1984284903],
                    [0.1254768011, 0.0003678334, 0.8741553655],
                    [0.1452348189, 0.7274340412, 0.1273311399],
                ],
                [
                    [0.0769850235, 0.6731586548, 0.2498563217],
                    [0.3650159348, 0.1411007556, 0.4938833096],
                    [0.4522474587, 0.3505549068, 0.1971976345],
                ],
            ],
            expected_out=[
                [-0.1456628775, -0.0376557990, 0.0334323747, 0.0939500820],
                [-0.1505436676, 0.4989489929, -0.6631834335, 0.4680222486],
                [0.2302624291, -0.2056318169, -0.1229000268, 0.4662974539],
            ],
        ),
        Case(
            "3 tokens, d_model 4, 2 heads, a causal mask",
            X=X,
            params=params,
            num_heads=2,
            mask=np.tril(np.ones((3, 3), dtype=bool)),
            expected_weights=[
                [
                    [1.0, 0.0, 0.0],
                    [0.9970770833, 0.0029229167, 0.0],
                    [0.1452348189, 0.7274340412, 0.1273311399],
                ],
                [
                    [1.0, 0.0, 0.0],
                    [0.7212090447, 0.2787909553, 0.0],
                    [0.4522474587, 0.3505549068, 0.1971976345],
                ],
            ],
            expected_out=[
                [-0.1756576184, 0.4140302303, -0.5270562677, 0.3749837042],
                [-0.4608121245, 0.5124460964, -0.3705595677, 0.0719816987],
                [0.2302624291, -0.2056318169, -0.1229000268, 0.4662974539],
            ],
        ),
    ]


def part_b_bad_cases() -> list[Case]:
    """Calls on bad input that must raise ValueError: the function and its arguments."""
    first = part_b_cases()[0]  # d_model = 4
    return [
        _call("multi_head_attention(X, params, 3) (d_model = 4, h = 3)", "multi_head_attention",
              first.X, first.params, 3),
    ]  # fmt: skip


def check_part_b(multi_head_attention: Callable[..., Any]) -> None:
    """Part B's visible test (multi_head_attention)."""
    __tracebackhide__ = True
    for case in part_b_cases():
        X, params, h, mask = case.X, case.params, case.num_heads, case.mask
        masked = () if mask is None else (mask,)
        with case.named("multi_head_attention"):
            with inputs_kept("multi_head_attention", X=X, params=params, mask=mask):
                result = by_hand(ASSIGNMENT, multi_head_attention, X, params, h, *masked)
            out, weights = expect_tuple(result, "multi_head_attention", ("out", "weights"))
            shape = np.shape(case.expected_weights)
            expect_array("the weights (num_heads, n, n)", weights, shape)
            expect_array("out", out, np.shape(case.expected_out))
            d_k = X.shape[-1] // h
            for r in range(h):
                assert_close(
                    f"the weights of head {r} (columns {r * d_k}..{r * d_k + d_k - 1} of Q, K "
                    "and V)",
                    weights[r],
                    case.expected_weights[r],
                    atol=1e-9,
                    against=TORCH_HEADS,
                )
            assert_close("out", out, case.expected_out, atol=1e-9, against=TORCH_HEADS)
    _expect_value_errors(part_b_bad_cases(), multi_head_attention=multi_head_attention)
    print("Part B, visible test: passed.")


# -- Part C: shift_matrix, decode_position ---------------------------------------------------


def _encode(positions: Any, d: int, base: float = 10000.0) -> np.ndarray:
    """The sinusoidal encodings of ``positions`` (interleaved sin, cos), computed here."""
    where = np.asarray(positions, dtype=np.float64)
    phase = where[..., None] * float(base) ** (-np.arange(0, d, 2) / d)
    return np.stack([np.sin(phase), np.cos(phase)], axis=-1).reshape(*where.shape, d)


def part_c_shift_cases() -> list[Case]:
    """shift_matrix: k, d, base (None: not given) and the expected M_k, or ``moves``: how many
    positions t = 0, 1, ... of the encoding (made here with that base) M_k must move by k > 0,
    to within 1e-12 (None: not checked)."""
    return [
        Case(
            "k = 2, d = 4",
            k=2,
            d=4,
            base=None,
            moves=None,
            expected_M_k=[
                [-0.4161468365, 0.9092974268, 0.0, 0.0],
                [-0.9092974268, -0.4161468365, 0.0, 0.0],
                [0.0, 0.0, 0.9998000067, 0.0199986667],
                [0.0, 0.0, -0.0199986667, 0.9998000067],
            ],
        ),
        Case("k = 3, d = 6, base 100", k=3, d=6, base=100.0, moves=5, expected_M_k=None),
    ]


def part_c_decode_cases() -> list[Case]:
    """decode_position: p (encodings made here), the expected positions and the tolerance;
    ``k``: p is first moved by the student's M_k (None: not moved)."""
    spots = np.array([0.0, 3.0, 250.0, -40.0, 12.75, 3000.0])  # d = 8: P/2 is about 3142
    spots_32 = np.array([0.0, 1.0, 5.0, 37.0, 1000.0, -250.0, 12.75, -9000.0])
    return [
        Case(
            f"the encodings (6, 8) of {spots.tolist()} (d = 8)",
            p=_encode(spots, 8),
            k=None,
            expected_positions=spots,
            atol=1e-8,
            against="the positions",
        ),
        Case(
            f"float32 encodings of {spots_32.tolist()} (d = 16; the slowest pair alone is off "
            "by about 1e-4, use the faster pairs)",
            p=_encode(spots_32, 16).astype(np.float32),
            k=None,
            expected_positions=spots_32,
            atol=1e-5,
            against="the positions",
        ),
        Case(
            f"p_t M_(-7)^T, the encodings of {spots.tolist()} moved by your shift_matrix(-7, 8)",
            p=_encode(spots, 8),
            k=-7,
            expected_positions=spots - 7.0,
            atol=1e-8,
            against="the positions minus 7",
        ),
    ]


def part_c_bad_cases() -> list[Case]:
    """Calls on bad input that must raise ValueError: the function and its arguments."""
    return [
        _call("shift_matrix(1, 5) (odd d)", "shift_matrix", 1, 5),
        _call("decode_position(np.ones((2, 5))) (odd d)", "decode_position", np.ones((2, 5))),
    ]


def check_part_c(shift_matrix: Callable[..., Any], decode_position: Callable[..., Any]) -> None:
    """Part C's visible test (shift_matrix, decode_position)."""
    __tracebackhide__ = True
    for case in part_c_shift_cases():
        k, d, base = case.k, case.d, {} if case.base is None else {"base": case.base}
        with case.named("shift_matrix"):
            M_k = expect_array("M_k", by_hand(ASSIGNMENT, shift_matrix, k, d, **base), (d, d))
            if case.expected_M_k is not None:
                assert_close(
                    "M_k", M_k, case.expected_M_k, atol=1e-9, against="the expected blocks"
                )
            if case.moves is not None:
                table = _encode(np.arange(case.moves + k), d, **base)
                assert_close(
                    f"p_(t+{k}) - M_{k} p_t for t = 0..{case.moves - 1}",
                    table[k:] - table[:-k] @ M_k.T,
                    np.zeros((case.moves, d)),
                    atol=1e-12,
                    against="zero",
                )
    for case in part_c_decode_cases():
        with case.named("decode_position"):
            p = case.p
            if case.k is not None:  # p_t M_k^T = p_(t+k), with your shift_matrix
                p = p @ np.asarray(by_hand(ASSIGNMENT, shift_matrix, case.k, p.shape[-1])).T
            with inputs_kept("decode_position", p=p):
                positions = by_hand(ASSIGNMENT, decode_position, p)
            expect_array("decode_position(p)", positions, np.shape(case.expected_positions))
            assert_close(
                "decode_position(p)",
                positions,
                case.expected_positions,
                atol=case.atol,
                against=case.against,
            )
    _expect_value_errors(
        part_c_bad_cases(), shift_matrix=shift_matrix, decode_position=decode_position
    )
    print("Part C, visible test: passed.")


# -- Part D: partial_rope ----------------------------------------------------------------------


def _rope_x() -> np.ndarray:
    """Part D's x (n=3, d=6)."""
    return np.array([[1.0, 0.0, 0.5, -1.0, 2.0, 0.3], [0.0, 1.0, 2.0, 0.0, -1.0, 1.0], [1.0] * 6])


def part_d_cases() -> list[Case]:
    """partial_rope: x, offset, rotary_dim, what the rows are compared with and the expected
    rotated x."""
    x = _rope_x()
    all_turned = [  # rotary_dim = d = 6
        [-0.6752620892, -0.4600034233, 0.4967394008, -1.2425864601, 1.9463804486, 0.3053685768],
        [0.0, 1.2363794393, 1.9869066570, 0.0, -0.6865609093, 1.0257689489],
        [0.0969156556, 0.6284544208, 0.9848058121, 1.4108888531, 1.2669037220, 1.0149667544],
    ]
    return [
        Case(
            "x (n=3, d=6) at offset 0, rotary_dim 4",
            x=x,
            offset=0,
            rotary_dim=4,
            against=f"{NEOX} (feature r turns with feature r + 2; features 4, 5 pass)",
            expected_rotated=[
                [1.0, 0.0, 0.5, -1.0, 2.0, 0.3],
                [-1.6829419696, 0.9999500004, 1.0806046117, 0.0099998333, -1.0, 1.0],
                [-1.3254442634, 0.9798013400, 0.4931505903, 1.0197986734, 1.0, 1.0],
            ],
        ),
        Case(
            "x at offset 5 (rows at positions 5, 6, 7), rotary_dim 4",
            x=x,
            offset=5,
            rotary_dim=4,
            against=NEOX,
            expected_rotated=[
                [0.7631243228, 0.0499791693, -0.8170931819, -0.9987502604, 2.0, 0.3],
                [0.5588309964, 0.9982005399, 1.9203405733, 0.0599640065, -1.0, 1.0],
                [0.0969156556, 0.9276081529, 1.4108888531, 1.0674938476, 1.0, 1.0],
            ],
        ),
        Case(
            "x at offset 5, rotary_dim 6 (theta_r = 10000^(-2r/6))",
            x=x,
            offset=5,
            rotary_dim=6,
            against=NEOX,
            expected_rotated=all_turned,
        ),
    ]


def part_d_bad_cases() -> list[Case]:
    """Calls on bad input that must raise ValueError: the function and its arguments."""
    x = _rope_x()
    return [
        _call("partial_rope(x, 0, 3) (odd rotary_dim)", "partial_rope", x, 0, 3),
        _call("partial_rope(x, 0, 8) (rotary_dim above d = 6)", "partial_rope", x, 0, 8),
    ]


def _rope(partial_rope: Callable[..., Any], *args: Any) -> np.ndarray:
    __tracebackhide__ = True
    return np.asarray(by_hand(ASSIGNMENT, partial_rope, *args))


def _check_rope_in_pieces(partial_rope: Callable[..., Any]) -> None:
    """The rows of x rotated in a chunk, as a score and in a batch, against the student's own
    rotation of the whole: the offset is all that counts."""
    __tracebackhide__ = True
    x = _rope_x()
    with _case("partial_rope, rows 1, 2 of x as a chunk at offset 3, after row 0 at offset 2"):
        assert_close(
            "the rotated rows",
            _rope(partial_rope, x[1:], 3, 4),
            _rope(partial_rope, x, 2, 4)[1:],
            atol=1e-12,
            against="the same rows rotated with the whole sequence at offset 2",
        )
    q = np.array([[0.3, -1.2, 0.8, 0.5, 1.0, -0.4]])
    k = np.array([[1.0, 0.4, -0.6, 0.9, 0.2, 0.7]])
    starts = [0, 4, 9, 30]
    with _case(f"partial_rope, q at position i + 2 and k at i, for i = {starts}, rotary_dim 4"):
        scores = [
            float(_rope(partial_rope, q, i + 2, 4)[0] @ _rope(partial_rope, k, i, 4)[0])
            for i in starts
        ]
        assert_close(
            "the scores of the rotated q and k",
            scores,
            np.full(4, -0.9517973413),
            atol=1e-9,
            against="one value for the offset 2",
        )
    batch, offsets = np.stack([x, x]), np.array([0, 5])  # (2, 3, 6): offsets 0 and 5
    with _case("partial_rope, a batch of x twice at offsets [0, 5], rotary_dim 4"):
        with inputs_kept("partial_rope", x=batch, offset=offsets):
            rotated = _rope(partial_rope, batch, offsets, 4)
        assert_close(
            "sequence 1 of the rotated batch",
            rotated[1],
            _rope(partial_rope, x, 5, 4),
            atol=1e-12,
            against="the sequence alone at offset 5",
        )


def check_part_d(partial_rope: Callable[..., Any]) -> None:
    """Part D's visible test (partial_rope)."""
    __tracebackhide__ = True
    for case in part_d_cases():
        x, offset, rotary_dim = case.x, case.offset, case.rotary_dim
        with case.named("partial_rope"):
            with inputs_kept("partial_rope", x=x, offset=offset):
                rotated = by_hand(ASSIGNMENT, partial_rope, x, offset, rotary_dim)
            expect_array("the rotated x", rotated, np.shape(case.expected_rotated))
            assert_close(
                "the rotated x", rotated, case.expected_rotated, atol=1e-9, against=case.against
            )
    _check_rope_in_pieces(partial_rope)
    _expect_value_errors(part_d_bad_cases(), partial_rope=partial_rope)
    print("Part D, visible test: passed.")
