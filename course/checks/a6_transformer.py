"""The visible tests of Assignment 6 (RMSNorm and its backward pass, an encoder layer, the decoder's mask, parameter counts).

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

ASSIGNMENT = "a6_transformer"


def check_part_a(rms_norm: Callable[..., Any], rms_norm_backward: Callable[..., Any]) -> None:
    """Part A's visible test (rms_norm and rms_norm_backward)."""
    __tracebackhide__ = True
    x_a = np.array([[1.0, 2.0, 4.0, 7.0], [0.5, -1.5, 2.5, 0.0]])  # two rows, D = 4
    gamma_a = np.array([1.0, 0.5, 2.0, -1.0])
    grad_y_a = np.array([[0.3, -0.2, 0.1, 0.5], [-1.0, 0.4, 0.2, 0.0]])
    torch_a = "torch.nn.functional.rms_norm"
    autograd_a = "torch's autograd through F.rms_norm"

    with inputs_kept("rms_norm", x=x_a, gamma=gamma_a):
        result_a = by_hand(ASSIGNMENT, rms_norm, x_a, gamma_a)
    if not (isinstance(result_a, tuple) and len(result_a) == 2):
        raise CheckFailed("rms_norm should return the tuple (y, rrms)")
    y_a, rrms_a = result_a
    if not (isinstance(y_a, np.ndarray)):
        raise CheckFailed(f"y should be a NumPy array, got {type(y_a).__name__}")
    assert_close(
        "y",
        y_a,
        [
            [0.2390457150, 0.2390457150, 1.9123657203, -1.6733200053],
            [0.3380616246, -0.5070924369, 3.3806162462, 0.0],
        ],
        atol=1e-9,
        against=torch_a,
    )
    assert_close(
        "rrms = 1 / sqrt(mean(x**2) + eps) (one per row)",
        rrms_a,
        [0.2390457150, 0.6761232492],
        atol=1e-9,
        against=torch_a,
    )
    with inputs_kept("rms_norm_backward", grad_y=grad_y_a, x=x_a, gamma=gamma_a, rrms=rrms_a):
        result_ab = by_hand(ASSIGNMENT, rms_norm_backward, grad_y_a, x_a, gamma_a, rrms_a)
    if not (isinstance(result_ab, tuple) and len(result_ab) == 2):
        raise CheckFailed("rms_norm_backward should return the tuple (grad_x, grad_gamma)")
    grad_x_a, grad_gamma_a = result_ab
    assert_close(
        "grad_x = dL/dx",
        grad_x_a,
        [
            [0.0805925548, -0.0061468908, 0.0833245044, -0.0573709752],
            [-0.6838503686, 0.1584060078, 0.2318137031, 0.0],
        ],
        atol=1e-9,
        against=autograd_a,
    )
    assert_close(
        "grad_gamma = dL/dgamma (summed over the rows)",
        grad_gamma_a,
        [-0.2663479101, -0.5012922356, 0.4336799106, 0.8366600026],
        atol=1e-9,
        against=autograd_a,
    )

    zero_a = np.zeros((1, 4))
    y_az, rrms_az = by_hand(ASSIGNMENT, rms_norm, zero_a, gamma_a)
    assert_close("y of an all-zero row", y_az, zero_a, atol=1e-12, against="0")
    assert_close("rrms of an all-zero row", rrms_az, [1000.0], atol=1e-6, against="1 / sqrt(eps)")
    grad_x_az, _ = by_hand(ASSIGNMENT, rms_norm_backward, grad_y_a[:1], zero_a, gamma_a, rrms_az)
    assert_close(
        "grad_x at an all-zero row",
        grad_x_az,
        [[300.0, -100.0, 200.0, -500.0]],
        atol=1e-6,
        against=f"{autograd_a} (gamma * grad_y / sqrt(eps))",
    )
    y_ae, rrms_ae = by_hand(ASSIGNMENT, rms_norm, x_a[:1], gamma_a, 0.5)
    assert_close(
        "y of row 0 with eps = 0.5",
        y_ae,
        [[0.2357022604, 0.2357022604, 1.8856180832, -1.6499158228]],
        atol=1e-9,
        against=torch_a,
    )
    assert_close("rrms of row 0 with eps = 0.5", rrms_ae, [0.2357022604], atol=1e-9)

    big_a = 1e200 * np.array([[1.0, 2.0, 3.0, 4.0]])
    y_ab, rrms_ab = by_hand(ASSIGNMENT, rms_norm, big_a, gamma_a)
    assert_close(
        "y of the row 1e200 (1, 2, 3, 4) (its squares overflow)",
        y_ab,
        [[0.3651483717, 0.3651483717, 2.1908902300, -1.4605934867]],
        atol=1e-9,
        against=f"{torch_a} on the row divided by 1e200",
    )
    assert_close(
        "1e200 * rrms of that row",
        1e200 * np.asarray(rrms_ab, dtype=np.float64),
        [0.3651483717],
        atol=1e-9,
        against="1 / sqrt(7.5)",
    )
    grad_x_ab, grad_gamma_ab = by_hand(
        ASSIGNMENT, rms_norm_backward, grad_y_a[:1], big_a, gamma_a, np.array([3.6514837167e-201])
    )
    assert_close(
        "1e200 * grad_x at that row",
        1e200 * np.asarray(grad_x_ab, dtype=np.float64),
        [[0.12536760761, -0.0048686449556, 0.12049896265, -0.11928180141]],
        atol=1e-9,
        against=autograd_a,
    )
    assert_close(
        "grad_gamma at that row",
        grad_gamma_ab,
        [0.1095445115, -0.1460593487, 0.1095445115, 0.7302967433],
        atol=1e-9,
        against=autograd_a,
    )

    x_at = np.arange(12.0).reshape(2, 2, 3) ** 2 / 10 - 2  # two rows of shape S = (2, 3)
    gamma_at = np.array([[1.0, 2.0, 1.0], [0.5, 1.0, 1.5]])
    grad_y_at = np.sin(np.arange(12.0)).reshape(2, 2, 3)
    y_at, rrms_at = by_hand(ASSIGNMENT, rms_norm, x_at, gamma_at)
    assert_close(
        "y over the trailing shape S = (2, 3)",
        y_at,
        [
            [
                [-1.4267523870, -2.7108295352, -1.1414019096],
                [-0.3923569064, -0.2853504774, 0.5350321451],
            ],
            [
                [0.2564517497, 0.9296375926, 0.7052423116],
                [0.4888611478, 1.2822587484, 2.4282775048],
            ],
        ],
        atol=1e-9,
        against=f"{torch_a} with normalized_shape (2, 3)",
    )
    assert_close("rrms over S = (2, 3)", rrms_at, [0.7133761935, 0.1602823436], atol=1e-9)
    grad_x_at, grad_gamma_at = by_hand(
        ASSIGNMENT, rms_norm_backward, grad_y_at, x_at, gamma_at, rrms_at
    )
    assert_close(
        "grad_x over S = (2, 3)",
        grad_x_at,
        [
            [
                [-0.6228035823, 0.6089073329, 0.1504282712],
                [-0.2922061432, -0.6644455998, -0.8704097278],
            ],
            [
                [-0.0332245358, 0.2315607171, 0.1903689549],
                [0.0771033422, -0.0293928031, -0.1674433891],
            ],
        ],
        atol=1e-9,
        against=autograd_a,
    )
    assert_close(
        "grad_gamma over S = (2, 3)",
        grad_gamma_at,
        [
            [-0.0716565934, -0.8351624793, -0.3401365225],
            [0.2921986119, -0.4816218754, -1.9608726902],
        ],
        atol=1e-9,
        against=autograd_a,
    )
    expect_value_error(
        {
            "rms_norm(x_a[:, :3], gamma_a) (3 features, gamma has 4)": lambda: by_hand(
                ASSIGNMENT, rms_norm, x_a[:, :3], gamma_a
            ),
            "rms_norm(x_a, gamma_a, eps=0.0)": lambda: by_hand(
                ASSIGNMENT, rms_norm, x_a, gamma_a, 0.0
            ),
            "rms_norm_backward(grad_y_a[:1], x_a, gamma_a, rrms_a) (grad_y is not x's shape)": (
                lambda: by_hand(ASSIGNMENT, rms_norm_backward, grad_y_a[:1], x_a, gamma_a, rrms_a)
            ),
            "rms_norm_backward(grad_y_a, x_a, gamma_a, rrms_a[:1]) (one rrms for two rows)": (
                lambda: by_hand(
                    ASSIGNMENT, rms_norm_backward, grad_y_a, x_a, gamma_a, np.asarray(rrms_a)[:1]
                )
            ),
        }
    )
    print("Part A, visible test: passed.")


def check_part_b(encoder_layer: Callable[..., Any]) -> None:
    """Part B's visible test (encoder_layer)."""
    __tracebackhide__ = True

    def wave_b(shape: tuple[int, ...] | int, start: int, scale: float) -> np.ndarray:
        """scale * sin(start, start + 1, ...) in the given shape: fixed weights for the test."""
        __tracebackhide__ = True
        return scale * np.sin(start + np.arange(np.prod(shape))).reshape(shape)

    params_b = {
        "self_attn.W_q.weight": wave_b((4, 4), 0, 0.8),
        "self_attn.W_q.bias": wave_b(4, 20, 0.2),
        "self_attn.W_k.weight": wave_b((4, 4), 30, 0.8),
        "self_attn.W_k.bias": wave_b(4, 50, 0.2),
        "self_attn.W_v.weight": wave_b((4, 4), 60, 0.8),
        "self_attn.W_v.bias": wave_b(4, 80, 0.2),
        "self_attn.W_o.weight": wave_b((4, 4), 90, 0.6),
        "self_attn.W_o.bias": wave_b(4, 110, 0.2),
        "ffn.linear1.weight": wave_b((6, 4), 120, 0.7),  # d_ff = 6
        "ffn.linear1.bias": wave_b(6, 150, 0.2),
        "ffn.linear2.weight": wave_b((4, 6), 160, 0.5),
        "ffn.linear2.bias": wave_b(4, 190, 0.2),
        "norm1.weight": 1.0 + wave_b(4, 200, 0.3),
        "norm1.bias": wave_b(4, 210, 0.1),
        "norm2.weight": 1.0 + wave_b(4, 220, 0.3),
        "norm2.bias": wave_b(4, 230, 0.1),
    }
    x_b = np.array([[1.0, 0.0, -1.0, 0.5], [0.0, 2.0, 1.0, -1.0], [0.5, -0.5, 0.0, 1.0]])  # (3, 4)
    torch_b = "torch.nn.TransformerEncoderLayer"

    with inputs_kept("encoder_layer", x=x_b, params=params_b):
        y_b = by_hand(ASSIGNMENT, encoder_layer, x_b, params_b, 2)
    if not (isinstance(y_b, np.ndarray)):
        raise CheckFailed(f"encoder_layer should return a NumPy array, got {type(y_b)}")
    assert_close(
        "y (post-norm)",
        y_b,
        [
            [1.0214494778, -0.2209199140, -2.0366698068, 0.6795821636],
            [-0.0303974910, 1.2802308910, 0.5648392884, -1.5806706607],
            [0.4524469969, -1.6327141212, -0.8681884048, 1.4341986600],
        ],
        atol=1e-9,
        against=torch_b,
    )
    assert_close(
        "y (pre-norm, norm_first=True)",
        by_hand(ASSIGNMENT, encoder_layer, x_b, params_b, 2, norm_first=True),
        [
            [1.5138172999, -0.8073709043, -1.8896723195, 0.3840146047],
            [1.1928267791, 0.7430005507, 1.4892848677, -0.8116131836],
            [0.5330045090, -0.6974223025, -0.2537669796, 0.4218062391],
        ],
        atol=1e-9,
        against=torch_b,
    )
    # A batch of two: x and x with its rows reversed, whose last token is padding.
    mask_b = np.array([[[True, True, True]], [[True, True, False]]])  # (B=2, 1, n=3)
    x_bp = np.stack([x_b, x_b[::-1]])
    with inputs_kept("encoder_layer", x=x_bp, params=params_b, mask=mask_b):
        y_bp = by_hand(ASSIGNMENT, encoder_layer, x_bp, params_b, 2, mask=mask_b)
    assert_close(
        "y of sequence 0 (no padding) in the batch",
        y_bp[0],
        y_b,
        atol=1e-12,
        against="y of x alone",
    )
    assert_close(
        "y of sequence 1 (2 real tokens) in the padded batch (post-norm)",
        y_bp[1],
        [
            [0.0851063337, -1.1127294010, -1.2068161198, 1.6532864357],
            [-0.0029879468, 1.3690357573, 0.4185393545, -1.5611768690],
            [0.9615603028, -0.0102292093, -2.1089301402, 0.6279829747],
        ],
        atol=1e-9,
        against=torch_b,
    )
    missing_b = {key: value for key, value in params_b.items() if key != "norm2.bias"}
    expect_value_error(
        {
            "encoder_layer(x_b, params_b, 3) (d_model = 4, h = 3)": lambda: by_hand(
                ASSIGNMENT, encoder_layer, x_b, params_b, 3
            ),
            "encoder_layer(x_b, missing_b, 2)": lambda: by_hand(
                ASSIGNMENT, encoder_layer, x_b, missing_b, 2
            ),
            "encoder_layer(x_b[:, :3], params_b, 1) (3 features, the weights want 4)": lambda: (
                by_hand(ASSIGNMENT, encoder_layer, x_b[:, :3], params_b, 1)
            ),
        }
    )
    print("Part B, visible test: passed.")


def check_part_c(decoder_mask_and_positions: Callable[..., Any]) -> None:
    """Part C's visible test (decoder_mask_and_positions)."""
    __tracebackhide__ = True
    expected_c = "the expected mask (1 = may attend)"
    lengths_c = np.array([3, 1])
    with inputs_kept("decoder_mask_and_positions", lengths=lengths_c):
        result_c = by_hand(ASSIGNMENT, decoder_mask_and_positions, lengths_c, 3)
    if not (isinstance(result_c, tuple) and len(result_c) == 2):
        raise CheckFailed("decoder_mask_and_positions should return (mask, positions)")
    mask_c, positions_c = result_c
    if not (isinstance(mask_c, np.ndarray) and mask_c.dtype == bool):
        raise CheckFailed("the mask should be a NumPy array of booleans")
    if not (np.shape(mask_c) == (2, 1, 3, 3)):
        raise CheckFailed(f"mask: expected shape (2, 1, 3, 3), got {mask_c.shape}")
    lower_c = [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert_close(
        "mask of sequence 0 (3 real tokens)",
        mask_c[0, 0] * 1.0,
        lower_c,
        atol=0,
        against=expected_c,
    )
    assert_close(
        "mask of sequence 1 (1 real token, right padding)",
        mask_c[1, 0] * 1.0,
        [[1, 0, 0], [1, 0, 0], [1, 0, 0]],
        atol=0,
        against=expected_c,
    )
    if not (isinstance(positions_c, np.ndarray) and np.issubdtype(positions_c.dtype, np.integer)):
        raise CheckFailed("positions should be a NumPy array of integers")
    assert_close("positions (right padding)", positions_c, [[0, 1, 2], [0, 0, 0]], atol=0)

    mask_cl, positions_cl = by_hand(
        ASSIGNMENT, decoder_mask_and_positions, np.array([3, 1]), 3, left_padded=True
    )
    assert_close(
        "mask of sequence 1 (1 real token, left padding: queries 0 and 1 see themselves)",
        mask_cl[1, 0] * 1.0,
        [[1, 0, 0], [0, 1, 0], [0, 0, 1]],
        atol=0,
        against=expected_c,
    )
    assert_close("positions (left padding)", positions_cl, [[0, 1, 2], [0, 0, 0]], atol=0)

    mask_cc, positions_cc = by_hand(
        ASSIGNMENT, decoder_mask_and_positions, [4, 2], 2, 4, left_padded=True
    )
    if not (np.shape(mask_cc) == (2, 1, 2, 4)):
        raise CheckFailed(f"mask: expected (2, 1, 2, 4), got {np.shape(mask_cc)}")
    assert_close(
        "mask with a cache (n = 2 queries at positions 2, 3; m = 4 keys; left padding)",
        mask_cc[:, 0] * 1.0,
        [[[1, 1, 1, 0], [1, 1, 1, 1]], [[0, 0, 1, 0], [0, 0, 1, 1]]],
        atol=0,
        against=expected_c,
    )
    assert_close("positions with that cache", positions_cc, [[2, 3], [0, 1]], atol=0)
    mask_cr, positions_cr = by_hand(ASSIGNMENT, decoder_mask_and_positions, [4, 2], 1, 4)
    assert_close(
        "mask of one query at position 3 of 4 (right padding)",
        mask_cr[:, 0] * 1.0,
        [[[1, 1, 1, 1]], [[1, 1, 0, 0]]],
        atol=0,
        against=expected_c,
    )
    assert_close("positions of that query", positions_cr, [[3], [0]], atol=0)
    expect_value_error(
        {
            "decoder_mask_and_positions([0, 2], 3) (a length of 0)": lambda: by_hand(
                ASSIGNMENT, decoder_mask_and_positions, [0, 2], 3
            ),
            "decoder_mask_and_positions([2, 4], 3) (a length above m)": lambda: by_hand(
                ASSIGNMENT, decoder_mask_and_positions, [2, 4], 3
            ),
            "decoder_mask_and_positions([2, 2], 4, 3) (n > m)": lambda: by_hand(
                ASSIGNMENT, decoder_mask_and_positions, [2, 2], 4, 3
            ),
        }
    )
    print("Part C, visible test: passed.")


def check_part_d(count_parameters: Callable[..., Any]) -> None:
    """Part D's visible test (count_parameters)."""
    __tracebackhide__ = True

    def expect_counts_d(label: str, config: dict, expected: dict[str, int]) -> None:
        """Compare count_parameters(config) with the expected counts, one part at a time."""
        __tracebackhide__ = True
        with inputs_kept("count_parameters", config=config):
            got = by_hand(ASSIGNMENT, count_parameters, config)
        if not (isinstance(got, dict)):
            raise CheckFailed(f"count_parameters should return a dict, got {type(got).__name__}")
        if not (set(got) == set(expected)):
            raise CheckFailed(f"{label}: expected the keys {sorted(expected)}, got {sorted(got)}")
        for part, count in expected.items():
            value = got[part]
            if not (isinstance(value, (int, np.integer)) and not isinstance(value, bool)):
                raise CheckFailed(f"{label}: {part} should be an integer, got {value!r}")
            if not (value == count):
                raise CheckFailed(
                    f"{label}: {part} is {value:,}, expected {count:,} (off by {value - count:+,})"
                )

    base_d = {"d_model": 512, "num_heads": 8, "d_ff": 2048, "encoder_layers": 6, "decoder_layers": 6,
              "src_vocab_size": 37000, "tgt_vocab_size": 37000, "shared_embeddings": True,
              "tie_output": True}  # fmt: skip
    expect_counts_d(
        "the base model",
        base_d,
        {
            "embeddings": 18_944_000,
            "encoder": 18_915_328,
            "decoder": 25_225_216,
            "output": 0,
            "total": 63_084_544,
        },
    )
    small_gpt_d = {"d_model": 64, "num_heads": 4, "d_ff": 256, "decoder_layers": 2,
                   "tgt_vocab_size": 100, "bias": False, "max_len": 32}  # fmt: skip
    expect_counts_d(
        "a decoder-only model without biases, learned positions, output not tied",
        small_gpt_d,
        {"embeddings": 8_448, "encoder": 0, "decoder": 98_624, "output": 6_400, "total": 113_472},
    )
    tiny_d = {"d_model": 8, "num_heads": 2, "d_ff": 20, "encoder_layers": 1, "decoder_layers": 2,
              "src_vocab_size": 11, "tgt_vocab_size": 13, "final_norm": False}  # fmt: skip
    expect_counts_d(
        "an encoder-decoder with two vocabularies and no final norms",
        tiny_d,
        {"embeddings": 192, "encoder": 668, "decoder": 1_944, "output": 104, "total": 2_908},
    )
    for bad_d in (
        base_d | {"num_heads": 7},  # 7 does not divide 512
        base_d | {"dff": 2048},  # an unknown key
        base_d | {"tgt_vocab_size": 36000},  # shared embeddings, two vocabularies
    ):
        try:
            by_hand(ASSIGNMENT, count_parameters, bad_d)
        except ValueError:
            continue
        raise CheckFailed(f"count_parameters should raise ValueError for {bad_d}")
    print("Part D, visible test: passed.")
