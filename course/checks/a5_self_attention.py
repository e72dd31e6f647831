"""The visible tests of Assignment 5 (scaled dot-product attention, multi-head attention, positions).

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


def check_part_a(
    attention: Callable[..., Any], causal_mask: Callable[..., Any], padding_mask: Callable[..., Any]
) -> None:
    """Part A's visible test (attention, causal_mask, padding_mask)."""
    __tracebackhide__ = True
    Q_a = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])  # (n=3, d_k=2)
    K_a = np.array([[1.0, 2.0], [0.5, -1.0], [-1.0, 0.0], [2.0, 1.0]])  # (m=4, d_k=2)
    V_a = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]])  # (4, 3)
    torch_a = "torch.nn.functional.scaled_dot_product_attention"

    with inputs_kept("attention", Q=Q_a, K=K_a, V=V_a):
        result_a = by_hand(ASSIGNMENT, attention, Q_a, K_a, V_a)
    if not (isinstance(result_a, tuple) and len(result_a) == 2):
        raise CheckFailed("attention should return (Z, A)")
    Z_a, A_a = result_a
    if not (isinstance(Z_a, np.ndarray) and isinstance(A_a, np.ndarray)):
        raise CheckFailed(
            f"attention should return NumPy arrays, got {type(Z_a).__name__} and {type(A_a).__name__}"
        )
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

    causal_a = by_hand(ASSIGNMENT, causal_mask, 3)
    assert_close(
        "causal_mask(3)",
        np.asarray(causal_a, dtype=float),
        [[1, 0, 0], [1, 1, 0], [1, 1, 1]],
        atol=0,
        against="the expected mask (1 = may attend)",
    )
    if not (isinstance(causal_a, np.ndarray) and causal_a.dtype == bool):
        raise CheckFailed("causal_mask should return a NumPy array of booleans")
    with inputs_kept("attention", Q=Q_a, K=K_a, V=V_a, mask=causal_a):
        Z_ac, A_ac = by_hand(ASSIGNMENT, attention, Q_a, K_a[:3], V_a[:3], causal_a)
    expected_ac = [
        [1.0, 0.0, 0.0],
        [0.8929581985, 0.1070418015, 0.0],
        [0.8746768560, 0.0736247154, 0.0516984286],
    ]
    assert_close("A with the causal mask", A_ac, expected_ac, atol=1e-9, against=torch_a)
    assert_close("Z with the causal mask", Z_ac, expected_ac, atol=1e-9, against=torch_a)

    lengths_a = np.array([4, 2])
    with inputs_kept("padding_mask", lengths=lengths_a):
        padding_a = by_hand(ASSIGNMENT, padding_mask, lengths_a, 4)
    assert_close(
        "padding_mask([4, 2], 4)",
        np.asarray(padding_a, dtype=float),
        [[[1, 1, 1, 1]], [[1, 1, 0, 0]]],
        atol=0,
        against="the expected mask of shape (B=2, 1, m=4)",
    )
    # A batch of two: the same queries and keys, the second sequence has 2 real keys.
    _, A_ap = by_hand(
        ASSIGNMENT,
        attention,
        np.stack([Q_a, Q_a]),
        np.stack([K_a, K_a]),
        np.stack([V_a, V_a]),
        padding_a,
    )
    assert_close(
        "A of sequence 1 (2 real keys) in the padded batch",
        A_ap[1],
        [
            [0.5874790008, 0.4125209992, 0.0, 0.0],
            [0.8929581985, 0.1070418015, 0.0, 0.0],
            [0.9223614959, 0.0776385041, 0.0, 0.0],
        ],
        atol=1e-9,
        against=torch_a,
    )

    # Scores above 700: exp overflows unless the largest score of each row is subtracted first.
    Z_al, A_al = by_hand(ASSIGNMENT, attention, 1000.0 * Q_a, K_a, V_a)
    assert_close(
        "A for the queries times 1000 (scores up to 2121)",
        A_al,
        [[0.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0], [0.5, 0.0, 0.0, 0.5]],
        atol=1e-9,
        against=torch_a,
    )
    assert_close(
        "Z for the queries times 1000",
        Z_al,
        [[1.0, 1.0, 1.0], [1.0, 0.0, 0.0], [1.0, 0.5, 0.5]],
        atol=1e-9,
        against=torch_a,
    )

    blind_a = np.array([[True, False, False, False], [False] * 4, [True] * 4])
    try:
        by_hand(ASSIGNMENT, attention, Q_a, K_a, V_a, blind_a)
    except ValueError as error_a:
        if "1" not in str(error_a):
            raise CheckFailed(
                f"the error should name the row that sees no key (1): {error_a}"
            ) from error_a
    else:
        raise CheckFailed("attention should raise ValueError when row 1 of the mask allows no key")
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
            "padding_mask(np.array([3, 5]), 4)": lambda: by_hand(
                ASSIGNMENT, padding_mask, np.array([3, 5]), 4
            ),
            "causal_mask(0)": lambda: by_hand(ASSIGNMENT, causal_mask, 0),
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


def check_part_c(
    sinusoidal_encoding: Callable[..., Any],
    relative_dot: Callable[..., Any],
    shift_matrix: Callable[..., Any],
) -> None:
    """Part C's visible test (sinusoidal_encoding, relative_dot, shift_matrix)."""
    __tracebackhide__ = True
    encoding_c = by_hand(ASSIGNMENT, sinusoidal_encoding, 3, 4)
    if not (isinstance(encoding_c, np.ndarray)):
        raise CheckFailed(
            f"sinusoidal_encoding should return a NumPy array, got {type(encoding_c).__name__}"
        )
    assert_close(
        "sinusoidal_encoding(3, 4)",
        encoding_c,
        [
            [0.0, 1.0, 0.0, 1.0],
            [0.8414709848, 0.5403023059, 0.0099998333, 0.9999500004],
            [0.9092974268, -0.4161468365, 0.0199986667, 0.9998000067],
        ],
        atol=1e-9,
        against="the formula (sines in even columns, cosines in odd ones)",
    )
    dots_c = np.asarray(by_hand(ASSIGNMENT, relative_dot, 6, 8))
    if not (dots_c.shape == (6, 6)):
        raise CheckFailed(f"relative_dot(6, 8) should have shape (6, 6), got {dots_c.shape}")
    for offset_c in range(-5, 6):
        along_c = np.diagonal(dots_c, offset=offset_c)
        assert_close(
            f"relative_dot(6, 8) along the diagonal j - i = {offset_c}",
            along_c,
            np.full(along_c.shape, along_c[0]),
            atol=1e-12,
            against="its first entry (p_i . p_j must depend on i - j only)",
        )
    assert_close(
        "relative_dot(6, 8) in row 0 (offsets 0..5)",
        dots_c[0],
        [4.0, 3.5352559716, 2.5637177480, 1.9648895263, 2.2666094798, 3.1599825078],
        atol=1e-9,
        against="the sum of cos((i - j) omega_r)",
    )
    assert_close(
        "shift_matrix(2, 4)",
        by_hand(ASSIGNMENT, shift_matrix, 2, 4),
        [
            [-0.4161468365, 0.9092974268, 0.0, 0.0],
            [-0.9092974268, -0.4161468365, 0.0, 0.0],
            [0.0, 0.0, 0.9998000067, 0.0199986667],
            [0.0, 0.0, -0.0199986667, 0.9998000067],
        ],
        atol=1e-9,
        against="the expected blocks",
    )
    positions_c = by_hand(ASSIGNMENT, sinusoidal_encoding, 8, 6, base=100.0)
    assert_close(
        "p_{i+3} - M_3 p_i for i = 0..4 (d = 6, base 100)",
        positions_c[3:] - positions_c[:-3] @ by_hand(ASSIGNMENT, shift_matrix, 3, 6, base=100.0).T,
        np.zeros((5, 6)),
        atol=1e-12,
        against="zero",
    )
    for bad_c in (
        lambda: by_hand(ASSIGNMENT, sinusoidal_encoding, 3, 5),
        lambda: by_hand(ASSIGNMENT, sinusoidal_encoding, 0, 4),
    ):
        try:
            bad_c()
        except ValueError:
            continue
        raise CheckFailed("sinusoidal_encoding should raise ValueError for d = 5 and for n = 0")
    print("Part C, visible test: passed.")


def check_part_d(apply_rope: Callable[..., Any]) -> None:
    """Part D's visible test (apply_rope)."""
    __tracebackhide__ = True
    x_d = np.array(
        [[1.0, 0.0, 0.5, -1.0], [0.0, 1.0, 2.0, 0.0], [1.0, 1.0, 1.0, 1.0]]
    )  # (n=3, d=4)
    positions_d = np.array([0, 1, 2])
    with inputs_kept("apply_rope", x=x_d, positions=positions_d):
        rotated_d = by_hand(ASSIGNMENT, apply_rope, x_d, positions_d)
    if not (isinstance(rotated_d, np.ndarray)):
        raise CheckFailed(f"apply_rope should return a NumPy array, got {type(rotated_d).__name__}")
    assert_close(
        "apply_rope(x, [0, 1, 2])",
        rotated_d,
        [
            [1.0, 0.0, 0.5, -1.0],
            [-0.8414709848, 0.5403023059, 1.9999000008, 0.0199996667],
            [-1.3254442634, 0.4931505903, 0.9798013400, 1.0197986734],
        ],
        atol=1e-9,
        against="the rotated pairs",
    )
    assert_close(
        "apply_rope(x, [3, 10, 11]) (positions that skip)",
        by_hand(ASSIGNMENT, apply_rope, x_d, [3, 10, 11]),
        [
            [-0.9899924966, 0.1411200081, 0.5297705171, -0.9845522836],
            [0.5440211109, -0.8390715291, 1.9900083306, 0.1996668333],
            [1.0044159045, -0.9955645086, 0.8841777971, 1.1037343988],
        ],
        atol=1e-9,
        against="the rotated pairs",
    )
    q_d, k_d = np.array([0.3, -1.2, 0.8, 0.5]), np.array([1.0, 0.4, -0.6, 0.9])
    starts_d = [0, 4, 9, 30]
    scores_d = [
        float(
            by_hand(ASSIGNMENT, apply_rope, q_d[None], [i + 2])[0]
            @ by_hand(ASSIGNMENT, apply_rope, k_d[None], [i])[0]
        )
        for i in starts_d
    ]
    assert_close(
        f"the rotated score q_(i+2) . k_i for i = {starts_d}",
        scores_d,
        np.full(4, 1.2655836738),
        atol=1e-9,
        against="one value for the offset 2",
    )
    with inputs_kept("apply_rope", x=x_d) as before_d:
        skipping_d = by_hand(ASSIGNMENT, apply_rope, x_d, [3, 10, 11])
    assert_close(
        "the lengths of the rows of apply_rope(x, [3, 10, 11])",
        np.linalg.norm(skipping_d, axis=-1),
        np.linalg.norm(before_d["x"], axis=-1),
        atol=1e-12,
        against="the lengths of the rows of x (a rotation keeps lengths)",
    )
    try:
        by_hand(ASSIGNMENT, apply_rope, np.ones((2, 3)), [0, 1])
    except ValueError:
        pass
    else:
        raise CheckFailed("apply_rope should raise ValueError for d = 3")
    print("Part D, visible test: passed.")
