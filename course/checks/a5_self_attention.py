"""The visible tests of Assignment 5 (attention with empty rows and in pieces, multi-head
attention, positions read back, partial RoPE).

Each test cell of the notebook calls one check with the student's functions, which run under
the rule of the part's hidden tests (:func:`course.checks.rules.by_hand`). Every function
here sets ``__tracebackhide__``: when a student's own code raises, IPython shows the cell's
call and the student's frames, not this module's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from course.checks import CheckFailed, assert_close, expect_value_error, inputs_kept
from course.checks.rules import by_hand

__all__ = ["check_part_a", "check_part_b", "check_part_c", "check_part_d"]

ASSIGNMENT = "a5_self_attention"


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


def check_part_a(
    local_mask: Callable[..., Any],
    attention: Callable[..., Any],
    merge_attention: Callable[..., Any],
) -> None:
    """Part A's visible test (local_mask, attention, merge_attention)."""
    __tracebackhide__ = True
    Q_a = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # (n=3, d_k=2)
    K_a = np.array([[1.0, 2.0], [0.5, -1.0], [-1.0, 0.0], [2.0, 1.0]])  # (m=4, d_k=2)
    V_a = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]])  # (4, 3)
    torch_a = "torch.nn.functional.scaled_dot_product_attention"
    lse_a = "torch.logsumexp of the allowed scores"

    with inputs_kept("attention", Q=Q_a, K=K_a, V=V_a):
        result_a = by_hand(ASSIGNMENT, attention, Q_a, K_a, V_a)
    if not (isinstance(result_a, tuple) and len(result_a) == 3):
        raise CheckFailed("attention should return the tuple (Z, A, L)")
    Z_a, A_a, L_a = result_a
    if not all(isinstance(value, np.ndarray) for value in result_a):
        kinds = ", ".join(type(value).__name__ for value in result_a)
        raise CheckFailed(f"attention should return NumPy arrays, got {kinds}")
    assert_close(
        "A (3 queries, 4 keys, no mask)",
        A_a,
        [
            [0.2516723491, 0.1767214296, 0.0611857597, 0.5104204616],
            [0.5387760705, 0.0645848386, 0.1309854788, 0.2656536120],
            [0.4665747343, 0.0392732834, 0.0275772480, 0.4665747343],
        ],
        atol=1e-9,
        against=torch_a,
    )
    assert_close(
        "Z (3 queries, 4 keys, no mask)",
        Z_a,
        [
            [0.7620928107, 0.6871418913, 0.5716062213],
            [0.8044296825, 0.3302384507, 0.3966390909],
            [0.9331494686, 0.5058480177, 0.4941519823],
        ],
        atol=1e-9,
        against=torch_a,
    )
    expect_log_sum_exp(
        "L (3 queries, 4 keys, no mask)",
        L_a,
        [2.0867340207, 2.0326688104, 2.8836574129],
        against=lse_a,
    )

    lengths_a = np.array([4, 2])
    with inputs_kept("local_mask", lengths=lengths_a):
        local_a = by_hand(ASSIGNMENT, local_mask, lengths_a, 4, 1)
    if not (isinstance(local_a, np.ndarray) and local_a.dtype == bool):
        raise CheckFailed("local_mask should return a NumPy array of booleans")
    assert_close(
        "local_mask([4, 2], 4, radius=1)",
        local_a.astype(float),
        [
            [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]],
            [[1, 1, 0, 0], [1, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]],
        ],
        atol=0,
        against="the expected mask of shape (B=2, m=4, m=4) (1 = may attend)",
    )
    # Self-attention over the keys in a padded batch of two: sequence 1 has 2 real tokens, so
    # its query 3 (padding, radius 1) has no key at all.
    X_a, values_a = np.stack([K_a, K_a]), np.stack([V_a, V_a])
    with inputs_kept("attention", X=X_a, V=values_a, mask=local_a):
        Z_al, A_al, L_al = by_hand(ASSIGNMENT, attention, X_a, X_a, values_a, local_a)
    assert_close(
        "A of sequence 1 (2 real tokens, radius 1), whose row 3 has no key",
        A_al[1],
        [
            [0.9900106293, 0.0099893707, 0.0, 0.0],
            [0.1251495376, 0.8748504624, 0.0, 0.0],
            [0.0, 1.0, 0.0, 0.0],
            [0.0, 0.0, 0.0, 0.0],
        ],
        atol=1e-9,
        against=f"{torch_a} (zeros on a row with no key)",
    )
    assert_close(
        "Z of the padded batch with the local mask",
        Z_al,
        [
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
        atol=1e-9,
        against=f"{torch_a} (zeros on a row with no key)",
    )
    expect_log_sum_exp(
        "L of the padded batch with the local mask",
        L_al,
        [
            [3.5455735052, 1.2437788026, 1.0897128786, 3.5425941218],
            [3.5455735052, 1.0175857839, -0.3535533906, -np.inf],
        ],
        against=lse_a,
    )

    # Scores above 700: exp overflows unless the largest score of each row is subtracted first.
    Z_ab, A_ab, L_ab = by_hand(ASSIGNMENT, attention, 1000.0 * Q_a, K_a, V_a)
    expected_ab = {
        "A": [[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.5]],
        "Z": [[1.0, 1.0, 1.0], [1.0, 0.0, 0.0], [1.0, 0.5, 0.5]],
    }
    assert_close("A for the queries times 1000 (scores up to 2121)", A_ab, expected_ab["A"],
                 atol=1e-9, against=torch_a)  # fmt: skip
    assert_close("Z for the queries times 1000", Z_ab, expected_ab["Z"], atol=1e-9, against=torch_a)
    big_lse = [1414.2135623731, 1414.2135623731, 2122.0134907402]
    expect_log_sum_exp("L for the queries times 1000", L_ab, big_lse, against=lse_a)

    # Merging, on numbers worked out by hand: row 0 two equal halves; row 1 denominators e^1000
    # and e^998; row 2 nothing in piece a; row 3 nothing in either piece.
    Z_ma = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0], [5.0, 5.0]])
    L_ma = np.array([0.0, 1000.0, -np.inf, -np.inf])
    Z_mb = np.array([[0.0, 1.0], [1.0, 1.0], [3.0, -1.0], [0.0, 0.0]])
    L_mb = np.array([0.0, 998.0, 5.0, -np.inf])
    with inputs_kept("merge_attention", Z_a=Z_ma, L_a=L_ma, Z_b=Z_mb, L_b=L_mb):
        merged = by_hand(ASSIGNMENT, merge_attention, Z_ma, L_ma, Z_mb, L_mb)
    if not (isinstance(merged, tuple) and len(merged) == 2):
        raise CheckFailed("merge_attention should return the tuple (Z, L)")
    share = 1.0 / (1.0 + np.exp(-2.0))  # piece a's share of row 1
    assert_close(
        "Z of merge_attention (rows: equal halves, L 1000 and 998, no key in a, no key at all)",
        merged[0],
        [[0.5, 0.5], [1.0 - share, 1.0], [3.0, -1.0], [0.0, 0.0]],
        atol=1e-9,
        against="the mix of Z_a and Z_b by their shares e^(L_a - L), e^(L_b - L)",
    )
    expect_log_sum_exp(
        "L of merge_attention",
        merged[1],
        [np.log(2.0), 1000.0 + np.log1p(np.exp(-2.0)), 5.0, -np.inf],
        against="log(e^L_a + e^L_b)",
    )
    # Your attention in two pieces, keys {0, 2} and {1, 3}, joined: the attention over all 4.
    even, odd = [0, 2], [1, 3]
    Z_e, _, L_e = by_hand(ASSIGNMENT, attention, 1000.0 * Q_a, K_a[even], V_a[even])
    Z_o, _, L_o = by_hand(ASSIGNMENT, attention, 1000.0 * Q_a, K_a[odd], V_a[odd])
    Z_eo, L_eo = by_hand(ASSIGNMENT, merge_attention, Z_e, L_e, Z_o, L_o)
    assert_close("Z of keys {0, 2} merged with keys {1, 3} (queries times 1000)", Z_eo,
                 expected_ab["Z"], atol=1e-9, against=torch_a)  # fmt: skip
    expect_log_sum_exp("L of keys {0, 2} merged with keys {1, 3}", L_eo, big_lse, against=lse_a)

    expect_value_error(
        {
            "attention(Q_a, K_a[:, :1], V_a) (d_k of Q and K differ)": lambda: by_hand(
                ASSIGNMENT, attention, Q_a, K_a[:, :1], V_a
            ),
            "attention(Q_a, K_a, V_a[:3]) (4 keys, 3 values)": lambda: by_hand(
                ASSIGNMENT, attention, Q_a, K_a, V_a[:3]
            ),
            "attention(Q_a, K_a, V_a, np.ones((3, 4))) (a float mask)": lambda: by_hand(
                ASSIGNMENT, attention, Q_a, K_a, V_a, np.ones((3, 4))
            ),
            "local_mask(np.array([3, 5]), 4, 1) (a length above m)": lambda: by_hand(
                ASSIGNMENT, local_mask, np.array([3, 5]), 4, 1
            ),
            "local_mask(np.array([3]), 4, -1) (a negative radius)": lambda: by_hand(
                ASSIGNMENT, local_mask, np.array([3]), 4, -1
            ),
            "merge_attention(Z_a, L_a[:3], Z_b, L_b) (3 log-sum-exps for 4 rows)": lambda: by_hand(
                ASSIGNMENT, merge_attention, Z_ma, L_ma[:3], Z_mb, L_mb
            ),
        }
    )
    print("Part A, visible test: passed.")


def check_part_b(multi_head_attention: Callable[..., Any]) -> None:
    """Part B's visible test (multi_head_attention)."""
    __tracebackhide__ = True
    X_b = np.array([[1.0, 0.0, -1.0, 0.5], [0.0, 2.0, 1.0, -1.0], [0.5, -0.5, 0.0, 1.0]])  # (3, 4)
    params_b = {
        "in_proj_weight": 0.8 * np.sin(np.arange(48.0)).reshape(12, 4),  # [W^Q; W^K; W^V]
        "in_proj_bias": 0.1 * np.arange(12.0) - 0.5,
        "out_proj_weight": 0.5 * np.cos(np.arange(16.0)).reshape(4, 4),  # W^O
        "out_proj_bias": np.array([0.1, -0.2, 0.0, 0.3]),
    }
    torch_b = "torch.nn.MultiheadAttention"
    with inputs_kept("multi_head_attention", X=X_b, params=params_b):
        result_b = by_hand(ASSIGNMENT, multi_head_attention, X_b, params_b, 2)
    if not (isinstance(result_b, tuple) and len(result_b) == 2):
        raise CheckFailed("multi_head_attention should return (out, weights)")
    out_b, weights_b = result_b
    if not (isinstance(out_b, np.ndarray) and isinstance(weights_b, np.ndarray)):
        raise CheckFailed(
            "multi_head_attention should return NumPy arrays, got "
            f"{type(out_b).__name__} and {type(weights_b).__name__}"
        )
    expected_weights_b = [
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
    ]
    if not (np.shape(weights_b) == (2, 3, 3)):
        raise CheckFailed(
            f"the weights should have shape (num_heads, n, n) = (2, 3, 3), got {np.shape(weights_b)}"
        )
    for r_b in range(2):
        assert_close(
            f"the weights of head {r_b} (columns {2 * r_b}..{2 * r_b + 1} of Q, K and V)",
            weights_b[r_b],
            expected_weights_b[r_b],
            atol=1e-9,
            against=torch_b,
        )
    assert_close(
        "out (no mask)",
        out_b,
        [
            [-0.1456628775, -0.0376557990, 0.0334323747, 0.0939500820],
            [-0.1505436676, 0.4989489929, -0.6631834335, 0.4680222486],
            [0.2302624291, -0.2056318169, -0.1229000268, 0.4662974539],
        ],
        atol=1e-9,
        against=torch_b,
    )
    lower_b = np.tril(np.ones((3, 3), dtype=bool))  # True = may attend
    with inputs_kept("multi_head_attention", X=X_b, params=params_b, mask=lower_b):
        out_bc, weights_bc = by_hand(ASSIGNMENT, multi_head_attention, X_b, params_b, 2, lower_b)
    assert_close(
        "the weights of both heads with a causal mask",
        weights_bc,
        [
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
        atol=1e-9,
        against=torch_b,
    )
    assert_close(
        "out with a causal mask",
        out_bc,
        [
            [-0.1756576184, 0.4140302303, -0.5270562677, 0.3749837042],
            [-0.4608121245, 0.5124460964, -0.3705595677, 0.0719816987],
            [0.2302624291, -0.2056318169, -0.1229000268, 0.4662974539],
        ],
        atol=1e-9,
        against=torch_b,
    )
    try:
        by_hand(ASSIGNMENT, multi_head_attention, X_b, params_b, 3)
    except ValueError:
        pass
    else:
        raise CheckFailed("multi_head_attention should raise ValueError for d_model = 4, h = 3")
    print("Part B, visible test: passed.")


def _encode(positions: Any, d: int, base: float = 10000.0) -> np.ndarray:
    """The sinusoidal encodings of ``positions`` (interleaved sin, cos), computed here."""
    where = np.asarray(positions, dtype=np.float64)
    phase = where[..., None] * float(base) ** (-np.arange(0, d, 2) / d)
    return np.stack([np.sin(phase), np.cos(phase)], axis=-1).reshape(*where.shape, d)


def check_part_c(shift_matrix: Callable[..., Any], decode_position: Callable[..., Any]) -> None:
    """Part C's visible test (shift_matrix, decode_position)."""
    __tracebackhide__ = True
    shift_c = by_hand(ASSIGNMENT, shift_matrix, 2, 4)
    if not isinstance(shift_c, np.ndarray):
        raise CheckFailed(f"shift_matrix should return a NumPy array, got {type(shift_c).__name__}")
    assert_close(
        "shift_matrix(2, 4)",
        shift_c,
        [
            [-0.4161468365, 0.9092974268, 0.0, 0.0],
            [-0.9092974268, -0.4161468365, 0.0, 0.0],
            [0.0, 0.0, 0.9998000067, 0.0199986667],
            [0.0, 0.0, -0.0199986667, 0.9998000067],
        ],
        atol=1e-9,
        against="the expected blocks",
    )
    table_c = _encode(np.arange(8), 6, base=100.0)
    assert_close(
        "p_{t+3} - M_3 p_t for t = 0..4 (d = 6, base 100)",
        table_c[3:] - table_c[:-3] @ by_hand(ASSIGNMENT, shift_matrix, 3, 6, base=100.0).T,
        np.zeros((5, 6)),
        atol=1e-12,
        against="zero",
    )

    spots_c = np.array([0.0, 3.0, 250.0, -40.0, 12.75, 3000.0])  # d = 8: P/2 is about 3142
    encoded_c = _encode(spots_c, 8)
    with inputs_kept("decode_position", p=encoded_c):
        decoded_c = by_hand(ASSIGNMENT, decode_position, encoded_c)
    if not (isinstance(decoded_c, np.ndarray) and decoded_c.shape == (6,)):
        raise CheckFailed(
            "decode_position of 6 encodings (6, 8) should return a NumPy array of shape (6,), "
            f"got {type(decoded_c).__name__} of shape {np.shape(decoded_c)}"
        )
    assert_close(
        f"decode_position of the encodings of {spots_c.tolist()} (d = 8)",
        decoded_c,
        spots_c,
        atol=1e-8,
        against="the positions",
    )
    spots_32 = np.array([0.0, 1.0, 5.0, 37.0, 1000.0, -250.0, 12.75, -9000.0])
    stored_c = _encode(spots_32, 16).astype(np.float32)
    assert_close(
        f"decode_position of float32 encodings of {spots_32.tolist()} (d = 16; the slowest pair "
        "alone is off by about 1e-4, use the faster pairs)",
        by_hand(ASSIGNMENT, decode_position, stored_c),
        spots_32,
        atol=1e-5,
        against="the positions",
    )
    moved_c = encoded_c @ by_hand(ASSIGNMENT, shift_matrix, -7, 8).T  # p_t M_(-7)^T = p_(t-7)
    assert_close(
        "decode_position(p_t M_(-7)^T), your two functions together",
        by_hand(ASSIGNMENT, decode_position, moved_c),
        spots_c - 7.0,
        atol=1e-8,
        against="the positions minus 7",
    )
    expect_value_error(
        {
            "shift_matrix(1, 5) (odd d)": lambda: by_hand(ASSIGNMENT, shift_matrix, 1, 5),
            "decode_position(np.ones((2, 5))) (odd d)": lambda: by_hand(
                ASSIGNMENT, decode_position, np.ones((2, 5))
            ),
        }
    )
    print("Part C, visible test: passed.")


def check_part_d(partial_rope: Callable[..., Any]) -> None:
    """Part D's visible test (partial_rope)."""
    __tracebackhide__ = True
    x_d = np.array(
        [[1.0, 0.0, 0.5, -1.0, 2.0, 0.3], [0.0, 1.0, 2.0, 0.0, -1.0, 1.0], [1.0] * 6]
    )  # (n=3, d=6)
    neox = "transformers' GPT-NeoX apply_rotary_pos_emb (float64)"
    with inputs_kept("partial_rope", x=x_d):
        rotated_d = by_hand(ASSIGNMENT, partial_rope, x_d, 0, 4)
    if not isinstance(rotated_d, np.ndarray):
        raise CheckFailed(
            f"partial_rope should return a NumPy array, got {type(rotated_d).__name__}"
        )
    assert_close(
        "partial_rope(x, offset=0, rotary_dim=4)",
        rotated_d,
        [
            [1.0, 0.0, 0.5, -1.0, 2.0, 0.3],
            [-1.6829419696, 0.9999500004, 1.0806046117, 0.0099998333, -1.0, 1.0],
            [-1.3254442634, 0.9798013400, 0.4931505903, 1.0197986734, 1.0, 1.0],
        ],
        atol=1e-9,
        against=f"{neox} (feature r turns with feature r + 2; features 4, 5 pass)",
    )
    assert_close(
        "partial_rope(x, offset=5, rotary_dim=4) (rows at positions 5, 6, 7)",
        by_hand(ASSIGNMENT, partial_rope, x_d, 5, 4),
        [
            [0.7631243228, 0.0499791693, -0.8170931819, -0.9987502604, 2.0, 0.3],
            [0.5588309964, 0.9982005399, 1.9203405733, 0.0599640065, -1.0, 1.0],
            [0.0969156556, 0.9276081529, 1.4108888531, 1.0674938476, 1.0, 1.0],
        ],
        atol=1e-9,
        against=neox,
    )
    assert_close(
        "partial_rope(x, offset=5, rotary_dim=6) (theta_r = 10000^(-2r/6))",
        by_hand(ASSIGNMENT, partial_rope, x_d, 5, 6),
        [
            [-0.6752620892, -0.4600034233, 0.4967394008, -1.2425864601, 1.9463804486, 0.3053685768],
            [0.0, 1.2363794393, 1.9869066570, 0.0, -0.6865609093, 1.0257689489],
            [0.0969156556, 0.6284544208, 0.9848058121, 1.4108888531, 1.2669037220, 1.0149667544],
        ],
        atol=1e-9,
        against=neox,
    )
    whole_d = by_hand(ASSIGNMENT, partial_rope, x_d, 2, 4)
    assert_close(
        "rows 1, 2 rotated as a chunk at offset 3, after row 0 at offset 2",
        by_hand(ASSIGNMENT, partial_rope, x_d[1:], 3, 4),
        np.asarray(whole_d)[1:],
        atol=1e-12,
        against="the same rows rotated with the whole sequence at offset 2",
    )
    q_d = np.array([[0.3, -1.2, 0.8, 0.5, 1.0, -0.4]])
    k_d = np.array([[1.0, 0.4, -0.6, 0.9, 0.2, 0.7]])
    starts_d = [0, 4, 9, 30]
    scores_d = [
        float(
            np.asarray(by_hand(ASSIGNMENT, partial_rope, q_d, i + 2, 4))[0]
            @ np.asarray(by_hand(ASSIGNMENT, partial_rope, k_d, i, 4))[0]
        )
        for i in starts_d
    ]
    assert_close(
        f"the rotated score of q at i + 2 and k at i for i = {starts_d}",
        scores_d,
        np.full(4, -0.9517973413),
        atol=1e-9,
        against="one value for the offset 2",
    )
    batch_d, offsets_d = np.stack([x_d, x_d]), np.array([0, 5])  # (2, 3, 6): offsets 0 and 5
    with inputs_kept("partial_rope", x=batch_d, offset=offsets_d):
        batch_rotated_d = by_hand(ASSIGNMENT, partial_rope, batch_d, offsets_d, 4)
    assert_close(
        "partial_rope(batch, offset=[0, 5], rotary_dim=4), sequence 1",
        np.asarray(batch_rotated_d)[1],
        by_hand(ASSIGNMENT, partial_rope, x_d, 5, 4),
        atol=1e-12,
        against="the sequence alone at offset 5",
    )
    expect_value_error(
        {
            "partial_rope(x, 0, 3) (odd rotary_dim)": lambda: by_hand(
                ASSIGNMENT, partial_rope, x_d, 0, 3
            ),
            "partial_rope(x, 0, 8) (rotary_dim above d = 6)": lambda: by_hand(
                ASSIGNMENT, partial_rope, x_d, 0, 8
            ),
        }
    )
    print("Part D, visible test: passed.")
