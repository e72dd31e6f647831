"""The visible tests of Assignment 3 (a stacked bidirectional GRU, ELMo's scalar mix, context measures, senses).

The expected numbers were worked out once with an independent implementation.

Written as every module of visible tests is (the package's docstring, :mod:`course.checks`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from course.checks import CheckFailed, assert_close, inputs_kept
from course.checks.cases import Case, expect_floats
from course.checks.rules import by_hand, expect_refused

__all__ = ["check_part_a", "check_part_b", "check_part_c", "check_part_d"]

ASSIGNMENT = "a3_bilstm_elmo"


def _gru_weights(
    U: tuple[float, float, int, int], W: tuple[float, float], b_in: list, b_rec: list
) -> dict[str, np.ndarray]:
    """A GRU's weights with H = 2: U from linspace(U[0], U[1]) of shape (6, U[3]), W (6, 2)."""
    return {
        "U": np.linspace(U[0], U[1], 6 * U[3]).reshape(6, U[3]),
        "W": np.linspace(W[0], W[1], 6 * 2).reshape(6, 2),
        "b_in": np.array(b_in),
        "b_rec": np.array(b_rec),
    }


def _expect_refused(name: str, function: Callable[..., Any], bad_inputs: list[Case]) -> None:
    """``function`` must raise ValueError for each case's inputs, passed in order."""
    __tracebackhide__ = True
    calls = {f"{name} with {c.label}": (function, tuple(c.inputs.values()), {}) for c in bad_inputs}
    expect_refused(ASSIGNMENT, calls)


@contextlib.contextmanager
def _hinted(got: Any, mistakes: tuple) -> Iterator[None]:
    """Add to a failure inside the block the hint of the first known mistake (values, atol,
    hint) whose values ``got`` matches."""
    __tracebackhide__ = True
    try:
        yield
    except AssertionError as error:
        values = np.asarray(got, dtype=float)
        hint = next((h for v, atol, h in mistakes if np.allclose(values, v, atol=atol)), "")
        raise CheckFailed(f"{error}{hint}") from None


# -- Part A: stacked_bidirectional_gru ----------------------------------------------------------


def part_a_cases() -> list[Case]:
    """stacked_bidirectional_gru's cases: xs, lengths, layers; expected_h_n, expected_states
    (from torch.nn.GRU with bidirectional=True, num_layers=2, on packed sequences)."""
    layers = [
        (  # layer 1 reads x (D = 3)
            _gru_weights((-1.0, 1.0, 6, 3), (0.5, -0.5), [0.1, 0.2, -0.1, 0.0, 0.3, -0.3],
                         [0.0, -0.2, 0.1, 0.1, 0.5, 0.5]),
            _gru_weights((0.9, -0.7, 6, 3), (-0.4, 0.6), [0.0, 0.1, 0.2, -0.2, 0.1, 0.0],
                         [0.3, 0.0, -0.1, 0.2, 0.0, 0.1]),
        ),
        (  # layer 2 reads the 2H = 4 numbers [forward; backward] of layer 1
            _gru_weights((1.2, -0.8, 6, 4), (-0.6, 0.4), [0.2, -0.1, 0.0, 0.1, -0.2, 0.3],
                         [-0.1, 0.0, 0.2, 0.0, 0.1, -0.2]),
            _gru_weights((-0.9, 1.1, 6, 4), (0.3, -0.7), [0.0, 0.2, -0.3, 0.1, 0.0, 0.2],
                         [0.1, 0.1, 0.0, -0.2, 0.3, 0.0]),
        ),
    ]  # fmt: skip
    return [
        Case(
            "two layers, lengths 3 and 2 (T = 3), large numbers in the padding",
            xs=np.array(
                [
                    [[1.0, 0.0, -1.0], [0.0, 1.0, 0.0], [-0.5, 0.5, 1.0]],
                    [[0.2, -0.3, 0.4], [1.0, 1.0, -1.0], [9.0, -9.0, 9.0]],  # position 2: padding
                ]
            ),
            lengths=np.array([3, 2]),
            layers=layers,
            expected_h_n=[
                [[0.7083785076, 0.5285622525], [0.5414950636, 0.3462801772]],
                [[-0.0313722276, -0.1648837708], [-0.0198415449, -0.1403671311]],
                [[-0.1030302754, 0.0068147050], [-0.1195457690, -0.0674532866]],
                [[0.0663856724, 0.1351410245], [0.2045012113, 0.3072099132]],
            ],
            expected_states=[
                [
                    [-0.0224095473, 0.1963812927, 0.0663856724, 0.1351410245],
                    [-0.0564264229, 0.1347864456, 0.2211990488, 0.3591414860],
                    [-0.1030302754, 0.0068147050, 0.3284823354, 0.4082508618],
                ],
                [
                    [-0.0641062351, 0.0239594156, 0.2045012113, 0.3072099132],
                    [-0.1195457690, -0.0674532866, 0.2962344263, 0.3671120922],
                    [0.0, 0.0, 0.0, 0.0],
                ],
            ],
        ),
    ]


def part_a_bad_inputs() -> list[Case]:
    """Input that stacked_bidirectional_gru must refuse with ValueError: xs, lengths, layers."""
    (good,) = part_a_cases()
    return [
        Case("lengths [3, 0] (T = 3)", xs=good.xs, lengths=np.array([3, 0]), layers=good.layers),
        Case("lengths [4, 2] (T = 3)", xs=good.xs, lengths=np.array([4, 2]), layers=good.layers),
        Case("layers = []", xs=good.xs, lengths=good.lengths, layers=[]),
    ]


def _expect_padding_ignored(
    stacked_bidirectional_gru: Callable[..., Any], case: Case, out: Any
) -> None:
    """The first padded sequence, read alone without its padding, gets the same h_n and
    states as in the batch ``out``."""
    __tracebackhide__ = True
    T = case.xs.shape[1]
    b = int(np.flatnonzero(case.lengths < T)[0])
    n = int(case.lengths[b])
    alone = by_hand(
        ASSIGNMENT, stacked_bidirectional_gru, case.xs[b : b + 1, :n], np.array([n]), case.layers
    )
    for key, got, want in [
        ("h_n", np.asarray(out["h_n"])[:, b], np.asarray(alone["h_n"])[:, 0]),
        ("states", np.asarray(out["states"])[b, :n], np.asarray(alone["states"])[0]),
    ]:
        try:
            assert_close(
                f"{key} of sequence {b} (length {n}) in the padded batch",
                got,
                want,
                atol=1e-10,
                against="the same sequence read alone",
            )
        except AssertionError as error:
            padding = f"position {n}" if n == T - 1 else f"positions {n} to {T - 1}"
            raise CheckFailed(
                f"{error}. The padding at {padding} changed this sequence: in every layer the "
                f"backward reader must start at its last real token (position lengths[b] - 1 = "
                f"{n - 1}), never at the padding, and the forward reader must stop there."
            ) from None


def check_part_a(stacked_bidirectional_gru: Callable[..., Any]) -> None:
    """Part A's visible test (stacked_bidirectional_gru)."""
    __tracebackhide__ = True
    for case in part_a_cases():
        xs, lengths, layers = case.xs, case.lengths, case.layers
        with case.named("stacked_bidirectional_gru"):
            with inputs_kept("stacked_bidirectional_gru", xs=xs, lengths=lengths, layers=layers):
                out = by_hand(ASSIGNMENT, stacked_bidirectional_gru, xs, lengths, layers)
            if not (isinstance(out, dict) and {"states", "h_n"} <= set(out)):
                raise CheckFailed(
                    "stacked_bidirectional_gru should return a dict with the keys 'states', 'h_n'"
                )
            _expect_padding_ignored(stacked_bidirectional_gru, case, out)
            torch_gru = f"torch.nn.GRU (bidirectional, num_layers={len(layers)}, packed)"
            assert_close(
                "h_n (layer 1 forward, layer 1 backward, layer 2 forward, layer 2 backward)",
                out["h_n"], case.expected_h_n, atol=1e-8,
                against=f"{torch_gru} (layer 2 reads [forward; backward] of layer 1, the forward"
                " half first)",
            )  # fmt: skip
            assert_close(
                "states (the top layer)", out["states"], case.expected_states, atol=1e-8,
                against=torch_gru,
            )  # fmt: skip
    _expect_refused("stacked_bidirectional_gru", stacked_bidirectional_gru, part_a_bad_inputs())
    print("Part A, visible test: passed.")


# -- Part B: mix_weights and scalar_mix ---------------------------------------------------------


def part_b_mix_weights_cases() -> list[Case]:
    """mix_weights's cases: w; expected_weights, and what they are compared against."""
    return [
        Case(
            "w = [0, 1, 2]",
            w=np.array([0.0, 1.0, 2.0]),
            expected_weights=[0.0900305732, 0.2447284711, 0.6652409558],
            against="the expected value",
        ),
        Case(
            "w = [1000, 1001, 999]",
            w=np.array([1000.0, 1001.0, 999.0]),
            expected_weights=[0.2447284711, 0.6652409558, 0.0900305732],
            against="the expected value (subtract the largest weight before exp)",
        ),
    ]


def part_b_mix_weights_bad_inputs() -> list[Case]:
    """Input that mix_weights must refuse with ValueError: w."""
    return [Case("w of shape (2, 3), not 1-D", w=np.zeros((2, 3)))]


def part_b_scalar_mix_cases() -> list[Case]:
    """scalar_mix's cases: layers (L=3, B=2, T=3, D=2), w, gamma, mask, layer_norm; the
    expected mix (at the real tokens when there is a mask), and what it is compared against."""
    layers = (
        np.sin(np.arange(36.0)).reshape(3, 2, 3, 2) * np.array([1.0, 2.0, 3.0])[:, None, None, None]
    )
    layers[:, 1, 2] = 50.0  # the padded token of sequence 1
    return [
        Case(
            "3 layers, w = [0, 1, 2], gamma = 0.5",
            layers=layers,
            w=np.array([0.0, 1.0, 2.0]),
            gamma=0.5,
            mask=None,
            layer_norm=False,
            expected_mix=[
                [
                    [-1.0349563924, 0.0086371869],
                    [1.0442897765, 1.1198271615],
                    [0.1658006186, -0.9406622484],
                ],
                [[-1.1822845823, -0.3369199236], [0.8182073591, 1.2210785692], [25.0, 25.0]],
            ],
            against="the expected value",
        ),
        Case(
            "3 layers, w = [0, 1, 2], gamma = 0.5, mask (lengths 3 and 2), layer_norm=True",
            layers=layers,
            w=np.array([0.0, 1.0, 2.0]),
            gamma=0.5,
            mask=np.array([[1, 1, 1], [1, 1, 0]]),
            layer_norm=True,
            expected_mix=[
                [-0.5687818203, 0.0121824209],
                [0.5276528556, 0.5037083435],
                [-0.0376366415, -0.5986720167],
                [-0.6635844455, -0.1726937402],
                [0.4226774486, 0.5751475956],
            ],
            against="the expected value (mean and variance over the real tokens only)",
        ),
    ]


def part_b_scalar_mix_bad_inputs() -> list[Case]:
    """Input that scalar_mix must refuse with ValueError: layers, w, gamma."""
    (good, _) = part_b_scalar_mix_cases()
    return [
        Case(f"3 layers and w of shape {shape}", layers=good.layers, w=np.zeros(shape), gamma=1.0)
        for shape in [(2,), (1, 3)]
    ]


def check_part_b(scalar_mix: Callable[..., Any], mix_weights: Callable[..., Any]) -> None:
    """Part B's visible test (scalar_mix, mix_weights)."""
    __tracebackhide__ = True
    for case in part_b_mix_weights_cases():
        with case.named("mix_weights"):
            with inputs_kept("mix_weights", w=case.w):
                weights = by_hand(ASSIGNMENT, mix_weights, case.w)
            assert_close(
                "the softmax of w", weights, case.expected_weights, atol=1e-9,
                against=case.against,
            )  # fmt: skip
    _expect_refused("mix_weights", mix_weights, part_b_mix_weights_bad_inputs())
    for case in part_b_scalar_mix_cases():
        with case.named("scalar_mix"):
            with inputs_kept("scalar_mix", layers=case.layers, w=case.w, mask=case.mask):
                mixed = by_hand(
                    ASSIGNMENT, scalar_mix, case.layers, case.w, case.gamma, mask=case.mask,
                    layer_norm=case.layer_norm,
                )  # fmt: skip
            if case.mask is not None:
                mixed = np.asarray(mixed)[np.asarray(case.mask, dtype=bool)]
            assert_close(
                "the mix" if case.mask is None else "the mix at the real tokens",
                mixed, case.expected_mix, atol=1e-8, against=case.against,
            )  # fmt: skip
    _expect_refused("scalar_mix", scalar_mix, part_b_scalar_mix_bad_inputs())
    print("Part B, visible test: passed.")


# -- Part C: centred_self_similarity and first_component_share ---------------------------------


def part_c_similarity_cases() -> list[Case]:
    """centred_self_similarity's cases: vectors_by_layer, background_by_layer; the expected
    similarity by layer, and the values of known mistakes with their hints."""
    return [
        Case(
            "L=2, N=4, D=2, background means (1, 1) and (0.5, 0.5)",
            vectors_by_layer=np.array(
                [
                    [[2.0, 1.0], [1.0, 2.0], [2.0, 2.0], [3.0, 1.0]],
                    [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]],
                ]
            ),
            background_by_layer=np.array(
                [[[1.0, 1.0], [2.0, 0.0], [0.0, 2.0]], [[1.0, 1.0], [0.0, 0.0], [0.5, 0.5]]]
            ),
            expected_similarity=[0.5202200573, -0.0666666667],
            mistakes=(
                ([0.8814750103, -1 / 3], 1e-6,
                 " (your values are the raw self-similarities: subtract the layer's mean vector)"),
                ([-1 / 3, -1 / 3], 1e-6,
                 " (your values centre the word's vectors on their own mean: subtract the mean of "
                 "the background vectors)"),
            ),
        ),
    ]  # fmt: skip


def part_c_similarity_bad_inputs() -> list[Case]:
    """Input that centred_self_similarity must refuse with ValueError: vectors_by_layer,
    background_by_layer."""
    (good,) = part_c_similarity_cases()
    at_mean = good.vectors_by_layer.copy()
    at_mean[0, 2] = [1.0, 1.0]  # occurrence 2 of layer 0 is the layer's mean vector
    return [
        Case(
            "N = 1 occurrence",
            vectors_by_layer=good.vectors_by_layer[:, :1],
            background_by_layer=good.background_by_layer,
        ),
        Case(
            "an occurrence equal to the layer's mean (1, 1)",
            vectors_by_layer=at_mean,
            background_by_layer=good.background_by_layer,
        ),
    ]


def part_c_share_cases() -> list[Case]:
    """first_component_share's cases: vectors_by_layer; the expected share by layer, and the
    values of known mistakes with their hints."""
    return [
        Case(
            "L=3, N=4, D=2: on a line, a cross around (3, -1), a cross stretched along x",
            vectors_by_layer=np.array(
                [
                    [[1.0, 1.0], [2.0, 3.0], [3.0, 5.0], [4.0, 7.0]],
                    [[4.0, -1.0], [2.0, -1.0], [3.0, 0.0], [3.0, -2.0]],
                    [[3.0, 1.0], [-1.0, 1.0], [1.0, 2.0], [1.0, 0.0]],
                ]
            ),
            expected_share=[1.0, 0.5, 0.8],
            mistakes=(
                ([0.9985, 0.9545, 0.7778], 1e-4,
                 " (your shares are those of the vectors not centred: subtract their mean first)"),
                ([1.0, 0.5, 2 / 3], 1e-6,
                 " (the variances are the squared singular values, not the singular values)"),
            ),
        ),
    ]  # fmt: skip


def part_c_share_bad_inputs() -> list[Case]:
    """Input that first_component_share must refuse with ValueError: vectors_by_layer."""
    (good,) = part_c_share_cases()
    still = np.stack([good.vectors_by_layer[0], np.ones((4, 2))])
    return [Case("a layer whose vectors are all equal", vectors_by_layer=still)]


def check_part_c(
    centred_self_similarity: Callable[..., Any], first_component_share: Callable[..., Any]
) -> None:
    """Part C's visible test (centred_self_similarity, first_component_share)."""
    __tracebackhide__ = True
    for case in part_c_similarity_cases():
        vectors, background = case.vectors_by_layer, case.background_by_layer
        with case.named("centred_self_similarity"):
            kept = {"vectors_by_layer": vectors, "background_by_layer": background}
            with inputs_kept("centred_self_similarity", **kept):
                got = by_hand(ASSIGNMENT, centred_self_similarity, vectors, background)
            got = expect_floats("centred_self_similarity", got, len(vectors))
            with _hinted(got, case.mistakes):
                assert_close(
                    "the centred self-similarity by layer", got, case.expected_similarity,
                    atol=1e-9, against="the expected value (mean cosine over pairs i != k of "
                    "v_i - mean(background))",
                )  # fmt: skip
    _expect_refused(
        "centred_self_similarity", centred_self_similarity, part_c_similarity_bad_inputs()
    )
    for case in part_c_share_cases():
        vectors = case.vectors_by_layer
        with case.named("first_component_share"):
            with inputs_kept("first_component_share", vectors_by_layer=vectors):
                got = by_hand(ASSIGNMENT, first_component_share, vectors)
            got = expect_floats("first_component_share", got, len(vectors))
            with _hinted(got, case.mistakes):
                assert_close(
                    "the first-component share by layer", got, case.expected_share, atol=1e-9,
                    against="the expected value (largest eigenvalue of the covariance over "
                    "their sum)",
                )  # fmt: skip
    _expect_refused("first_component_share", first_component_share, part_c_share_bad_inputs())
    print("Part C, visible test: passed.")


# -- Part D: sense_separation and best_layer -----------------------------------------------------


def part_d_cases() -> list[Case]:
    """sense_separation's and best_layer's cases: vectors_by_layer, senses; the expected
    accuracy by layer (leave-one-out centroids) and the expected best layer."""
    return [
        Case(
            "L=3, N=6, D=2, senses river and money",
            vectors_by_layer=np.array(
                [
                    [[1.04, 0.24], [0.87, 0.06], [0.9, 0.05], [0.89, 0.32], [0.88, 0.14],
                     [0.92, 0.13]],
                    [[-0.3, -0.2], [0.5, -0.9], [-0.5, 0.4], [-0.7, 0.8], [0.6, -0.2],
                     [0.8, -0.1]],
                    [[1.0, 0.1], [0.9, 0.3], [1.0, -0.2], [0.1, 1.0], [-0.2, 1.0], [0.3, 0.8]],
                ]
            ),
            senses=["river", "river", "river", "money", "money", "money"],
            expected_accuracy=[0.5, 0.1666666667, 1.0],
            expected_best_layer=2,
        ),
    ]  # fmt: skip


def part_d_bad_inputs() -> list[Case]:
    """Input that sense_separation must refuse with ValueError: vectors_by_layer, senses."""
    (good,) = part_d_cases()
    return [
        Case(f"senses {senses}", vectors_by_layer=good.vectors_by_layer, senses=senses)
        for senses in (good.senses[:5], ["river"] * 6, ["river"] * 5 + ["money"])
    ]


def check_part_d(sense_separation: Callable[..., Any], best_layer: Callable[..., Any]) -> None:
    """Part D's visible test (sense_separation, best_layer)."""
    __tracebackhide__ = True
    for case in part_d_cases():
        vectors, senses = case.vectors_by_layer, case.senses
        with case.named("sense_separation"):
            with inputs_kept("sense_separation", vectors_by_layer=vectors, senses=senses):
                accuracy = by_hand(ASSIGNMENT, sense_separation, vectors, senses)
            accuracy = expect_floats("sense_separation", accuracy, len(vectors))
            assert_close(
                "the accuracy by layer", accuracy, case.expected_accuracy, atol=1e-9,
                against="the expected value (leave-one-out centroids)",
            )  # fmt: skip
    _expect_refused("sense_separation", sense_separation, part_d_bad_inputs())
    # best_layer last: a best_layer that calls sense_separation then calls it after all the
    # calls above, in the same order for every student
    for case in part_d_cases():
        vectors, senses = case.vectors_by_layer, case.senses
        with case.named("best_layer"):
            with inputs_kept("best_layer", vectors_by_layer=vectors, senses=senses):
                chosen = by_hand(ASSIGNMENT, best_layer, vectors, senses)
            if not isinstance(chosen, int):
                raise CheckFailed(f"best_layer should return an int, got {type(chosen).__name__}")
            if chosen != case.expected_best_layer:
                raise CheckFailed(
                    f"best_layer chose layer {chosen}, expected layer {case.expected_best_layer}"
                )
    print("Part D, visible test: passed.")
