"""The visible tests of Assignment 6 (RMSNorm and its backward pass, an encoder layer, the decoder's mask, parameter counts).

The expected numbers were worked out once with torch.

Written as every module of visible tests is (the package's docstring, :mod:`course.checks`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from course.checks import CheckFailed, assert_close, inputs_kept
from course.checks.cases import Case, describe, expect_array, expect_tuple
from course.checks.rules import by_hand, expect_refused

__all__ = ["check_part_a", "check_part_b", "check_part_c", "check_part_d"]

ASSIGNMENT = "a6_transformer"
TORCH_RMS = "torch.nn.functional.rms_norm"
AUTOGRAD = "torch's autograd through F.rms_norm"
TORCH_ENCODER = "torch.nn.TransformerEncoderLayer"
MASK = "the expected mask (1 = may attend)"


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


# -- Part A: rms_norm, rms_norm_backward ------------------------------------------------------


class Near(NamedTuple):
    """An expected value, the tolerance it is checked to and what it was worked out with;
    ``times``: the value is read times this (the tiny rrms and grad_x of a huge row)."""

    value: Any
    atol: float = 1e-9
    against: str = "the reference"
    times: float = 1.0


# What Part A's quantities are called in messages (when they are not read times a factor).
NAMES = {
    "rrms": "rrms = 1 / sqrt(mean(x**2) + eps) (one per row)",
    "grad_x": "grad_x = dL/dx",
    "grad_gamma": "grad_gamma = dL/dgamma (summed over the rows)",
}


def _rows() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Part A's two rows x (D = 4), gamma and grad_y."""
    x = np.array([[1.0, 2.0, 4.0, 7.0], [0.5, -1.5, 2.5, 0.0]])
    gamma = np.array([1.0, 0.5, 2.0, -1.0])
    grad_y = np.array([[0.3, -0.2, 0.1, 0.5], [-1.0, 0.4, 0.2, 0.0]])
    return x, gamma, grad_y


def part_a_cases() -> list[Case]:
    """rms_norm on x, gamma and eps (None: not given), then rms_norm_backward on grad_y (None:
    not called), x, gamma and rrms (None: the one rms_norm returned); the expected y, rrms,
    grad_x and grad_gamma (each a Near; a quantity not given is not checked)."""
    x, gamma, grad_y = _rows()
    rows_s = np.arange(12.0).reshape(2, 2, 3) ** 2 / 10 - 2  # two rows of shape S = (2, 3)
    return [
        Case(
            "two rows, D = 4",
            x=x,
            gamma=gamma,
            eps=None,
            grad_y=grad_y,
            rrms=None,
            expected_y=Near(
                [
                    [0.2390457150, 0.2390457150, 1.9123657203, -1.6733200053],
                    [0.3380616246, -0.5070924369, 3.3806162462, 0.0],
                ],
                against=TORCH_RMS,
            ),
            expected_rrms=Near([0.2390457150, 0.6761232492], against=TORCH_RMS),
            expected_grad_x=Near(
                [
                    [0.0805925548, -0.0061468908, 0.0833245044, -0.0573709752],
                    [-0.6838503686, 0.1584060078, 0.2318137031, 0.0],
                ],
                against=AUTOGRAD,
            ),
            expected_grad_gamma=Near(
                [-0.2663479101, -0.5012922356, 0.4336799106, 0.8366600026], against=AUTOGRAD
            ),
        ),
        Case(
            "an all-zero row",
            x=np.zeros((1, 4)),
            gamma=gamma,
            eps=None,
            grad_y=grad_y[:1],
            rrms=None,
            expected_y=Near(np.zeros((1, 4)), atol=1e-12, against="0"),
            expected_rrms=Near([1000.0], atol=1e-6, against="1 / sqrt(eps)"),
            expected_grad_x=Near(
                [[300.0, -100.0, 200.0, -500.0]],
                atol=1e-6,
                against=f"{AUTOGRAD} (gamma * grad_y / sqrt(eps))",
            ),
        ),
        Case(
            "row 0 with eps = 0.5",
            x=x[:1],
            gamma=gamma,
            eps=0.5,
            grad_y=None,
            rrms=None,
            expected_y=Near(
                [[0.2357022604, 0.2357022604, 1.8856180832, -1.6499158228]], against=TORCH_RMS
            ),
            expected_rrms=Near([0.2357022604]),
        ),
        Case(
            "the row 1e200 (1, 2, 3, 4) (its squares overflow)",
            x=1e200 * np.array([[1.0, 2.0, 3.0, 4.0]]),
            gamma=gamma,
            eps=None,
            grad_y=grad_y[:1],
            rrms=np.array([3.6514837167e-201]),
            expected_y=Near(
                [[0.3651483717, 0.3651483717, 2.1908902300, -1.4605934867]],
                against=f"{TORCH_RMS} on the row divided by 1e200",
            ),
            expected_rrms=Near([0.3651483717], against="1 / sqrt(7.5)", times=1e200),
            expected_grad_x=Near(
                [[0.12536760761, -0.0048686449556, 0.12049896265, -0.11928180141]],
                against=AUTOGRAD,
                times=1e200,
            ),
            expected_grad_gamma=Near(
                [0.1095445115, -0.1460593487, 0.1095445115, 0.7302967433], against=AUTOGRAD
            ),
        ),
        Case(
            "two rows over the trailing shape S = (2, 3)",
            x=rows_s,
            gamma=np.array([[1.0, 2.0, 1.0], [0.5, 1.0, 1.5]]),
            eps=None,
            grad_y=np.sin(np.arange(12.0)).reshape(2, 2, 3),
            rrms=None,
            expected_y=Near(
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
                against=f"{TORCH_RMS} with normalized_shape (2, 3)",
            ),
            expected_rrms=Near([0.7133761935, 0.1602823436]),
            expected_grad_x=Near(
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
                against=AUTOGRAD,
            ),
            expected_grad_gamma=Near(
                [
                    [-0.0716565934, -0.8351624793, -0.3401365225],
                    [0.2921986119, -0.4816218754, -1.9608726902],
                ],
                against=AUTOGRAD,
            ),
        ),
    ]


def part_a_bad_cases() -> list[Case]:
    """Calls on bad input that must raise ValueError: the function and its arguments."""
    x, gamma, grad_y = _rows()
    rrms = np.array([0.2390457150, 0.6761232492])  # of x
    return [
        _call("rms_norm(x[:, :3], gamma) (3 features, gamma has 4)", "rms_norm", x[:, :3], gamma),
        _call("rms_norm(x, gamma, eps=0.0)", "rms_norm", x, gamma, 0.0),
        _call("rms_norm_backward(grad_y[:1], x, gamma, rrms) (grad_y is not x's shape)",
              "rms_norm_backward", grad_y[:1], x, gamma, rrms),
        _call("rms_norm_backward(grad_y, x, gamma, rrms[:1]) (one rrms for two rows)",
              "rms_norm_backward", grad_y, x, gamma, rrms[:1]),
    ]  # fmt: skip


def _expect_near(case: Case, **got: Any) -> None:
    """Each quantity of ``got`` that the case expects (``expected_<quantity>``) is near it."""
    __tracebackhide__ = True
    for quantity, value in got.items():
        near = case.inputs.get(f"expected_{quantity}")
        if near is None:
            continue
        name = NAMES.get(quantity, quantity)
        if near.times != 1.0:  # e.g. "1e200 * rrms"
            name = f"{near.times:.0e}".replace("e+", "e") + f" * {quantity}"
            value = near.times * np.asarray(value, dtype=np.float64)
        assert_close(name, value, near.value, atol=near.atol, against=near.against)


def check_part_a(rms_norm: Callable[..., Any], rms_norm_backward: Callable[..., Any]) -> None:
    """Part A's visible test (rms_norm and rms_norm_backward)."""
    __tracebackhide__ = True
    for case in part_a_cases():
        x, gamma, eps = case.x, case.gamma, () if case.eps is None else (case.eps,)
        with case.named("rms_norm"):
            with inputs_kept("rms_norm", x=x, gamma=gamma):
                result = by_hand(ASSIGNMENT, rms_norm, x, gamma, *eps)
            y, rrms = expect_tuple(result, "rms_norm", ("y", "rrms"))
            expect_array("y", y, np.shape(x))
            _expect_near(case, y=y, rrms=rrms)
        if case.grad_y is None:
            continue
        grad_y, rrms = case.grad_y, rrms if case.rrms is None else case.rrms
        with case.named("rms_norm_backward"):
            with inputs_kept("rms_norm_backward", grad_y=grad_y, x=x, gamma=gamma, rrms=rrms):
                result = by_hand(ASSIGNMENT, rms_norm_backward, grad_y, x, gamma, rrms)
            grad_x, grad_gamma = expect_tuple(result, "rms_norm_backward", ("grad_x", "grad_gamma"))
            _expect_near(case, grad_x=grad_x, grad_gamma=grad_gamma)
    _expect_value_errors(part_a_bad_cases(), rms_norm=rms_norm, rms_norm_backward=rms_norm_backward)
    print("Part A, visible test: passed.")


# -- Part B: encoder_layer --------------------------------------------------------------------


def _wave(shape: tuple[int, ...] | int, start: int, scale: float) -> np.ndarray:
    """scale * sin(start, start + 1, ...) in the given shape: fixed weights for the test."""
    return scale * np.sin(start + np.arange(np.prod(shape))).reshape(shape)


def _layer_params() -> dict[str, np.ndarray]:
    """The weights of an encoder layer with d_model = 4, d_ff = 6."""
    return {
        "self_attn.W_q.weight": _wave((4, 4), 0, 0.8),
        "self_attn.W_q.bias": _wave(4, 20, 0.2),
        "self_attn.W_k.weight": _wave((4, 4), 30, 0.8),
        "self_attn.W_k.bias": _wave(4, 50, 0.2),
        "self_attn.W_v.weight": _wave((4, 4), 60, 0.8),
        "self_attn.W_v.bias": _wave(4, 80, 0.2),
        "self_attn.W_o.weight": _wave((4, 4), 90, 0.6),
        "self_attn.W_o.bias": _wave(4, 110, 0.2),
        "ffn.linear1.weight": _wave((6, 4), 120, 0.7),  # d_ff = 6
        "ffn.linear1.bias": _wave(6, 150, 0.2),
        "ffn.linear2.weight": _wave((4, 6), 160, 0.5),
        "ffn.linear2.bias": _wave(4, 190, 0.2),
        "norm1.weight": 1.0 + _wave(4, 200, 0.3),
        "norm1.bias": _wave(4, 210, 0.1),
        "norm2.weight": 1.0 + _wave(4, 220, 0.3),
        "norm2.bias": _wave(4, 230, 0.1),
    }


def _tokens() -> np.ndarray:
    """Part B's x: 3 tokens, d_model = 4."""
    return np.array([[1.0, 0.0, -1.0, 0.5], [0.0, 2.0, 1.0, -1.0], [0.5, -0.5, 0.0, 1.0]])


def part_b_cases() -> list[Case]:
    """encoder_layer on x, params, num_heads and the keywords norm_first and mask (None: not
    given); ``alone``: a sequence without padding, whose y must be its y alone (None: no
    such check); ``sequence``: the one sequence whose expected y is given (None: all of y)."""
    x, params = _tokens(), _layer_params()
    return [
        Case(
            "x (3, 4), 2 heads, post-norm",
            x=x,
            params=params,
            num_heads=2,
            norm_first=None,
            mask=None,
            alone=None,
            sequence=None,
            expected_y=[
                [1.0214494778, -0.2209199140, -2.0366698068, 0.6795821636],
                [-0.0303974910, 1.2802308910, 0.5648392884, -1.5806706607],
                [0.4524469969, -1.6327141212, -0.8681884048, 1.4341986600],
            ],
        ),
        Case(
            "x (3, 4), 2 heads, pre-norm (norm_first=True)",
            x=x,
            params=params,
            num_heads=2,
            norm_first=True,
            mask=None,
            alone=None,
            sequence=None,
            expected_y=[
                [1.5138172999, -0.8073709043, -1.8896723195, 0.3840146047],
                [1.1928267791, 0.7430005507, 1.4892848677, -0.8116131836],
                [0.5330045090, -0.6974223025, -0.2537669796, 0.4218062391],
            ],
        ),
        Case(
            "a batch of x and x with its rows reversed, whose last token is padding (post-norm)",
            x=np.stack([x, x[::-1]]),
            params=params,
            num_heads=2,
            norm_first=None,
            mask=np.array([[[True, True, True]], [[True, True, False]]]),  # (B=2, 1, n=3)
            alone=0,
            sequence=1,
            expected_y=[
                [0.0851063337, -1.1127294010, -1.2068161198, 1.6532864357],
                [-0.0029879468, 1.3690357573, 0.4185393545, -1.5611768690],
                [0.9615603028, -0.0102292093, -2.1089301402, 0.6279829747],
            ],
        ),
    ]


def part_b_bad_cases() -> list[Case]:
    """Calls on bad input that must raise ValueError: the function and its arguments."""
    x, params = _tokens(), _layer_params()
    missing = {key: value for key, value in params.items() if key != "norm2.bias"}
    return [
        _call("encoder_layer(x, params, 3) (d_model = 4, h = 3)", "encoder_layer", x, params, 3),
        _call("encoder_layer(x, params without 'norm2.bias', 2)", "encoder_layer",
              x, missing, 2),
        _call("encoder_layer(x[:, :3], params, 1) (3 features, the weights want 4)",
              "encoder_layer", x[:, :3], params, 1),
    ]  # fmt: skip


def check_part_b(encoder_layer: Callable[..., Any]) -> None:
    """Part B's visible test (encoder_layer)."""
    __tracebackhide__ = True
    for case in part_b_cases():
        x, params, h = case.x, case.params, case.num_heads
        keywords = {
            key: case.inputs[key] for key in ("norm_first", "mask") if case.inputs[key] is not None
        }
        with case.named("encoder_layer"):
            with inputs_kept("encoder_layer", x=x, params=params, mask=case.mask) as before:
                y = by_hand(ASSIGNMENT, encoder_layer, x, params, h, **keywords)
            expect_array("y", y, np.shape(x))
            if case.alone is not None:  # no padding: as it is on its own
                b = case.alone
                alone = by_hand(ASSIGNMENT, encoder_layer, before["x"][b], params, h)
                assert_close(f"y of sequence {b} (no padding)", y[b], alone, atol=1e-12,
                             against="y of x alone")  # fmt: skip
            if case.sequence is not None:
                y = y[case.sequence]
            name = "y" if case.sequence is None else f"y of sequence {case.sequence}"
            assert_close(name, y, case.expected_y, atol=1e-9, against=TORCH_ENCODER)
    _expect_value_errors(part_b_bad_cases(), encoder_layer=encoder_layer)
    print("Part B, visible test: passed.")


# -- Part C: decoder_mask_and_positions -------------------------------------------------------


def part_c_cases() -> list[Case]:
    """decoder_mask_and_positions on lengths, n, m (None: not given, n) and the keyword
    left_padded (None: not given); ``sequence``: the one sequence whose expected mask is given
    (None: all), the expected mask[:, 0] (1 = may attend) and positions."""
    return [
        Case(
            "lengths [3, 1], n = 3, right padding",
            lengths=np.array([3, 1]),
            n=3,
            m=None,
            left_padded=None,
            sequence=None,
            expected_mask=[
                [[1, 0, 0], [1, 1, 0], [1, 1, 1]],  # 3 real tokens
                [[1, 0, 0], [1, 0, 0], [1, 0, 0]],  # 1 real token
            ],
            expected_positions=[[0, 1, 2], [0, 0, 0]],
        ),
        Case(
            "lengths [3, 1], n = 3, left padding: queries 0 and 1 of sequence 1 see themselves",
            lengths=np.array([3, 1]),
            n=3,
            m=None,
            left_padded=True,
            sequence=1,
            expected_mask=[[1, 0, 0], [0, 1, 0], [0, 0, 1]],
            expected_positions=[[0, 1, 2], [0, 0, 0]],
        ),
        Case(
            "a cache: lengths [4, 2], n = 2 queries at positions 2, 3; m = 4 keys; left padding",
            lengths=[4, 2],
            n=2,
            m=4,
            left_padded=True,
            sequence=None,
            expected_mask=[[[1, 1, 1, 0], [1, 1, 1, 1]], [[0, 0, 1, 0], [0, 0, 1, 1]]],
            expected_positions=[[2, 3], [0, 1]],
        ),
        Case(
            "lengths [4, 2], one query at position 3 of m = 4, right padding",
            lengths=[4, 2],
            n=1,
            m=4,
            left_padded=None,
            sequence=None,
            expected_mask=[[[1, 1, 1, 1]], [[1, 1, 0, 0]]],
            expected_positions=[[3], [0]],
        ),
    ]


def part_c_bad_cases() -> list[Case]:
    """Calls on bad input that must raise ValueError: the function and its arguments."""
    function = "decoder_mask_and_positions"
    return [
        _call(f"{function}([0, 2], 3) (a length of 0)", function, [0, 2], 3),
        _call(f"{function}([2, 4], 3) (a length above m)", function, [2, 4], 3),
        _call(f"{function}([2, 2], 4, 3) (n > m)", function, [2, 2], 4, 3),
    ]


def check_part_c(decoder_mask_and_positions: Callable[..., Any]) -> None:
    """Part C's visible test (decoder_mask_and_positions)."""
    __tracebackhide__ = True
    for case in part_c_cases():
        B, n, m = len(case.lengths), case.n, case.n if case.m is None else case.m
        args = (case.lengths, n) if case.m is None else (case.lengths, n, m)
        left = {} if case.left_padded is None else {"left_padded": case.left_padded}
        with case.named("decoder_mask_and_positions"):
            with inputs_kept("decoder_mask_and_positions", lengths=case.lengths):
                result = by_hand(ASSIGNMENT, decoder_mask_and_positions, *args, **left)
            mask, positions = expect_tuple(
                result, "decoder_mask_and_positions", ("mask", "positions")
            )
            expect_array("the mask", mask, (B, 1, n, m), bool)
            b = slice(None) if case.sequence is None else case.sequence
            name = "the mask" if case.sequence is None else f"the mask of sequence {b}"
            assert_close(name, mask[b, 0] * 1.0, case.expected_mask, atol=0, against=MASK)
            expect_array("positions", positions, (B, n))
            if not np.issubdtype(positions.dtype, np.integer):
                raise CheckFailed(f"positions should be integers, got dtype {positions.dtype}")
            assert_close("positions", positions, case.expected_positions, atol=0)
    _expect_value_errors(part_c_bad_cases(), decoder_mask_and_positions=decoder_mask_and_positions)
    print("Part C, visible test: passed.")


# -- Part D: count_parameters -----------------------------------------------------------------


def _base_config() -> dict[str, Any]:
    """The base model of "Attention is all you need": 37,000 shared tokens, output tied."""
    return {"d_model": 512, "num_heads": 8, "d_ff": 2048, "encoder_layers": 6,
            "decoder_layers": 6, "src_vocab_size": 37000, "tgt_vocab_size": 37000,
            "shared_embeddings": True, "tie_output": True}  # fmt: skip


def part_d_cases() -> list[Case]:
    """count_parameters on a config, and the expected count of each part."""
    return [
        Case(
            "the base model",
            config=_base_config(),
            expected_counts={
                "embeddings": 18_944_000,
                "encoder": 18_915_328,
                "decoder": 25_225_216,
                "output": 0,
                "total": 63_084_544,
            },
        ),
        Case(
            "a decoder-only model without biases, learned positions, output not tied",
            config={
                "d_model": 64,
                "num_heads": 4,
                "d_ff": 256,
                "decoder_layers": 2,
                "tgt_vocab_size": 100,
                "bias": False,
                "max_len": 32,
            },  # fmt: skip
            expected_counts={
                "embeddings": 8_448,
                "encoder": 0,
                "decoder": 98_624,
                "output": 6_400,
                "total": 113_472,
            },  # fmt: skip
        ),
        Case(
            "an encoder-decoder with two vocabularies and no final norms",
            config={
                "d_model": 8,
                "num_heads": 2,
                "d_ff": 20,
                "encoder_layers": 1,
                "decoder_layers": 2,
                "src_vocab_size": 11,
                "tgt_vocab_size": 13,
                "final_norm": False,
            },  # fmt: skip
            expected_counts={
                "embeddings": 192,
                "encoder": 668,
                "decoder": 1_944,
                "output": 104,
                "total": 2_908,
            },  # fmt: skip
        ),
    ]


def part_d_bad_cases() -> list[Case]:
    """Calls on bad input that must raise ValueError: the function and its arguments."""
    base = _base_config()
    return [
        _call("count_parameters(base | {'num_heads': 7}) (7 does not divide 512)",
              "count_parameters", base | {"num_heads": 7}),
        _call("count_parameters(base | {'dff': 2048}) (an unknown key)",
              "count_parameters", base | {"dff": 2048}),
        _call("count_parameters(base | {'tgt_vocab_size': 36000}) (shared embeddings, two "
              "vocabularies)", "count_parameters", base | {"tgt_vocab_size": 36000}),
    ]  # fmt: skip


def check_part_d(count_parameters: Callable[..., Any]) -> None:
    """Part D's visible test (count_parameters)."""
    __tracebackhide__ = True
    for case in part_d_cases():
        with case.named("count_parameters"):
            with inputs_kept("count_parameters", config=case.config):
                counts = by_hand(ASSIGNMENT, count_parameters, case.config)
            if not isinstance(counts, dict):
                raise CheckFailed(f"count_parameters should return a dict, got {describe(counts)}")
            expected = case.expected_counts
            if set(counts) != set(expected):
                raise CheckFailed(f"expected the keys {sorted(expected)}, got {sorted(counts)}")
            for part, count in expected.items():
                value = counts[part]
                if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                    raise CheckFailed(f"{part} should be an integer, got {value!r}")
                if value != count:
                    raise CheckFailed(
                        f"{part} is {value:,}, expected {count:,} (off by {value - count:+,})"
                    )
    _expect_value_errors(part_d_bad_cases(), count_parameters=count_parameters)
    print("Part D, visible test: passed.")
