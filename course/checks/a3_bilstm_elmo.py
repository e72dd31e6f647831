"""The visible tests of Assignment 3 (a stacked bidirectional GRU, ELMo's scalar mix, context measures, senses).

Each test cell of the notebook calls one check with the student's functions, which run under
the rule of the part's hidden tests (:func:`course.checks.rules.by_hand`). Every function
here sets ``__tracebackhide__``: when a student's own code raises, IPython shows the cell's
call and the student's frames, not this module's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from course.checks import CheckFailed, assert_close, inputs_kept
from course.checks.rules import by_hand

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


def check_part_a(stacked_bidirectional_gru: Callable[..., Any]) -> None:
    """Part A's visible test (stacked_bidirectional_gru)."""
    __tracebackhide__ = True
    layers_a = [
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
    xs_a = np.array(
        [
            [[1.0, 0.0, -1.0], [0.0, 1.0, 0.0], [-0.5, 0.5, 1.0]],
            [[0.2, -0.3, 0.4], [1.0, 1.0, -1.0], [9.0, -9.0, 9.0]],  # the last position is padding
        ]
    )  # (B=2, T=3, D=3)
    lengths_a = np.array([3, 2])
    with inputs_kept("stacked_bidirectional_gru", xs=xs_a, lengths=lengths_a, layers=layers_a):
        out_a = by_hand(ASSIGNMENT, stacked_bidirectional_gru, xs_a, lengths_a, layers_a)
    if not (isinstance(out_a, dict) and {"states", "h_n"} <= set(out_a)):
        raise CheckFailed(
            "stacked_bidirectional_gru should return a dict with the keys 'states', 'h_n'"
        )

    # Sequence 1 read alone (B=1, T=2, no padding) must get the same states as in the batch.
    alone_a = by_hand(ASSIGNMENT, stacked_bidirectional_gru, xs_a[1:, :2], np.array([2]), layers_a)
    for key_a, got_a, want_a in [
        ("h_n", np.asarray(out_a["h_n"])[:, 1], np.asarray(alone_a["h_n"])[:, 0]),
        ("states", np.asarray(out_a["states"])[1, :2], np.asarray(alone_a["states"])[0]),
    ]:
        try:
            assert_close(
                f"{key_a} of sequence 1 (length 2) in the padded batch",
                got_a,
                want_a,
                atol=1e-10,
                against="the same sequence read alone",
            )
        except AssertionError as error_a:
            raise CheckFailed(
                f"{error_a}. The padding at position 2 changed this sequence: in every layer the "
                "backward reader must start at its last real token (position lengths[b] - 1 = 1), "
                "never at the padding, and the forward reader must stop there."
            ) from None

    against_a = "torch.nn.GRU (bidirectional, num_layers=2, packed)"
    assert_close(
        "h_n (layer 1 forward, layer 1 backward, layer 2 forward, layer 2 backward)",
        out_a["h_n"],
        [
            [[0.7083785076, 0.5285622525], [0.5414950636, 0.3462801772]],
            [[-0.0313722276, -0.1648837708], [-0.0198415449, -0.1403671311]],
            [[-0.1030302754, 0.0068147050], [-0.1195457690, -0.0674532866]],
            [[0.0663856724, 0.1351410245], [0.2045012113, 0.3072099132]],
        ],
        atol=1e-8,
        against=against_a
        + " (layer 2 reads [forward; backward] of layer 1, the forward half first)",
    )
    assert_close(
        "states (the top layer)",
        out_a["states"],
        [
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
        atol=1e-8,
        against=against_a,
    )
    for bad_lengths_a in ([3, 0], [4, 2]):
        try:
            by_hand(ASSIGNMENT, stacked_bidirectional_gru, xs_a, np.array(bad_lengths_a), layers_a)
        except ValueError:
            continue
        raise CheckFailed(
            f"stacked_bidirectional_gru should raise ValueError for lengths {bad_lengths_a} "
            "with T = 3"
        )
    try:
        by_hand(ASSIGNMENT, stacked_bidirectional_gru, xs_a, lengths_a, [])
    except ValueError:
        pass
    else:
        raise CheckFailed("stacked_bidirectional_gru should raise ValueError for layers = []")
    print("Part A, visible test: passed.")


def check_part_b(scalar_mix: Callable[..., Any], mix_weights: Callable[..., Any]) -> None:
    """Part B's visible test (scalar_mix, mix_weights)."""
    __tracebackhide__ = True
    w_b = np.array([0.0, 1.0, 2.0])
    with inputs_kept("mix_weights", w=w_b):
        weights_b = by_hand(ASSIGNMENT, mix_weights, w_b)
    assert_close(
        "mix_weights([0, 1, 2])",
        weights_b,
        [0.0900305732, 0.2447284711, 0.6652409558],
        atol=1e-9,
        against="the expected value",
    )
    assert_close(
        "mix_weights([1000, 1001, 999])",
        by_hand(ASSIGNMENT, mix_weights, np.array([1000.0, 1001.0, 999.0])),
        [0.2447284711, 0.6652409558, 0.0900305732],
        atol=1e-9,
        against="the expected value (subtract the largest weight before exp)",
    )
    try:
        by_hand(ASSIGNMENT, mix_weights, np.zeros((2, 3)))
    except ValueError:
        pass
    else:
        raise CheckFailed("mix_weights should raise ValueError for w of shape (2, 3), not 1-D")
    layers_b = (
        np.sin(np.arange(36.0)).reshape(3, 2, 3, 2) * np.array([1.0, 2.0, 3.0])[:, None, None, None]
    )
    layers_b[:, 1, 2] = 50.0  # the padded token of sequence 1
    mask_b = np.array([[1, 1, 1], [1, 1, 0]])
    real_b = mask_b.astype(bool)
    w_mix_b = np.array([0.0, 1.0, 2.0])
    with inputs_kept("scalar_mix", layers=layers_b, w=w_mix_b):
        mixed_b = by_hand(ASSIGNMENT, scalar_mix, layers_b, w_mix_b, 0.5)
    assert_close(
        "scalar_mix(layers, w, gamma=0.5)",
        mixed_b,
        [
            [
                [-1.0349563924, 0.0086371869],
                [1.0442897765, 1.1198271615],
                [0.1658006186, -0.9406622484],
            ],
            [[-1.1822845823, -0.3369199236], [0.8182073591, 1.2210785692], [25.0, 25.0]],
        ],
        atol=1e-8,
        against="the expected value",
    )
    w_norm_b = np.array([0.0, 1.0, 2.0])
    with inputs_kept("scalar_mix", layers=layers_b, w=w_norm_b, mask=mask_b):
        normed_b = by_hand(
            ASSIGNMENT,
            scalar_mix,
            layers_b,
            w_norm_b,
            0.5,
            mask=mask_b,
            layer_norm=True,
        )
    assert_close(
        "scalar_mix(layers, w, gamma=0.5, mask, layer_norm=True) at the real tokens",
        np.asarray(normed_b)[real_b],
        [
            [-0.5687818203, 0.0121824209],
            [0.5276528556, 0.5037083435],
            [-0.0376366415, -0.5986720167],
            [-0.6635844455, -0.1726937402],
            [0.4226774486, 0.5751475956],
        ],
        atol=1e-8,
        against="the expected value (mean and variance over the real tokens only)",
    )
    for bad_b in (np.zeros(2), np.zeros((1, 3))):
        try:
            by_hand(ASSIGNMENT, scalar_mix, layers_b, bad_b, 1.0)
        except ValueError:
            continue
        raise CheckFailed(
            f"scalar_mix should raise ValueError for 3 layers and w of shape {bad_b.shape}"
        )
    print("Part B, visible test: passed.")


def check_part_c(
    centred_self_similarity: Callable[..., Any], first_component_share: Callable[..., Any]
) -> None:
    """Part C's visible test (centred_self_similarity, first_component_share)."""
    __tracebackhide__ = True
    vectors_c = np.array(
        [
            [[2.0, 1.0], [1.0, 2.0], [2.0, 2.0], [3.0, 1.0]],
            [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]],
        ]
    )  # (L=2, N=4, D=2)
    background_c = np.array(
        [[[1.0, 1.0], [2.0, 0.0], [0.0, 2.0]], [[1.0, 1.0], [0.0, 0.0], [0.5, 0.5]]]
    )  # (L=2, M=3, D=2): the layer means are (1, 1) and (0.5, 0.5)
    with inputs_kept(
        "centred_self_similarity", vectors_by_layer=vectors_c, background_by_layer=background_c
    ):
        centred_c = by_hand(ASSIGNMENT, centred_self_similarity, vectors_c, background_c)
    if not (isinstance(centred_c, list) and len(centred_c) == 2):
        raise CheckFailed(
            "centred_self_similarity should return a list of 2 floats, got "
            f"{type(centred_c).__name__}"
        )
    hint_c = ""
    if np.allclose(np.asarray(centred_c, dtype=float), [0.8814750103, -1 / 3], atol=1e-6):
        hint_c = " (your values are the raw self-similarities: subtract the layer's mean vector)"
    elif np.allclose(np.asarray(centred_c, dtype=float), [-1 / 3, -1 / 3], atol=1e-6):
        hint_c = (
            " (your values centre the word's vectors on their own mean: subtract the mean of "
            "the background vectors)"
        )
    try:
        assert_close(
            "centred_self_similarity by layer",
            centred_c,
            [0.5202200573, -0.0666666667],
            atol=1e-9,
            against="the expected value (mean cosine over pairs i != k of v_i - mean(background))",
        )
    except AssertionError as error_c:
        raise CheckFailed(f"{error_c}{hint_c}") from None
    at_mean_c = vectors_c.copy()
    at_mean_c[0, 2] = [1.0, 1.0]  # occurrence 2 of layer 0 is the layer's mean vector
    for description_c, bad_c in (
        ("N = 1 occurrence", vectors_c[:, :1]),
        ("an occurrence equal to the layer's mean (1, 1)", at_mean_c),
    ):
        try:
            by_hand(ASSIGNMENT, centred_self_similarity, bad_c, background_c)
        except ValueError:
            continue
        raise CheckFailed(f"centred_self_similarity should raise ValueError for {description_c}")

    shares_in_c = np.array(
        [
            [[1.0, 1.0], [2.0, 3.0], [3.0, 5.0], [4.0, 7.0]],  # on a line
            [[4.0, -1.0], [2.0, -1.0], [3.0, 0.0], [3.0, -2.0]],  # a cross around (3, -1)
            [[3.0, 1.0], [-1.0, 1.0], [1.0, 2.0], [1.0, 0.0]],  # a cross stretched along x
        ]
    )  # (L=3, N=4, D=2)
    with inputs_kept("first_component_share", vectors_by_layer=shares_in_c):
        shares_c = by_hand(ASSIGNMENT, first_component_share, shares_in_c)
    if not (isinstance(shares_c, list) and len(shares_c) == 3):
        raise CheckFailed(
            f"first_component_share should return a list of 3 floats, got {type(shares_c).__name__}"
        )
    hint_c = ""
    if np.allclose(np.asarray(shares_c, dtype=float), [0.9985, 0.9545, 0.7778], atol=1e-4):
        hint_c = " (your shares are those of the vectors not centred: subtract their mean first)"
    elif np.allclose(np.asarray(shares_c, dtype=float), [1.0, 0.5, 2 / 3], atol=1e-6):
        hint_c = " (the variances are the squared singular values, not the singular values)"
    try:
        assert_close(
            "first_component_share by layer",
            shares_c,
            [1.0, 0.5, 0.8],
            atol=1e-9,
            against="the expected value (largest eigenvalue of the covariance over their sum)",
        )
    except AssertionError as error_c:
        raise CheckFailed(f"{error_c}{hint_c}") from None
    try:
        by_hand(ASSIGNMENT, first_component_share, np.stack([shares_in_c[0], np.ones((4, 2))]))
    except ValueError:
        pass
    else:
        raise CheckFailed(
            "first_component_share should raise ValueError for a layer whose vectors are all equal"
        )
    print("Part C, visible test: passed.")


def check_part_d(sense_separation: Callable[..., Any], best_layer: Callable[..., Any]) -> None:
    """Part D's visible test (sense_separation, best_layer)."""
    __tracebackhide__ = True
    senses_d = ["river", "river", "river", "money", "money", "money"]
    layers_d = np.array(
        [
            [[1.04, 0.24], [0.87, 0.06], [0.9, 0.05], [0.89, 0.32], [0.88, 0.14], [0.92, 0.13]],
            [[-0.3, -0.2], [0.5, -0.9], [-0.5, 0.4], [-0.7, 0.8], [0.6, -0.2], [0.8, -0.1]],
            [[1.0, 0.1], [0.9, 0.3], [1.0, -0.2], [0.1, 1.0], [-0.2, 1.0], [0.3, 0.8]],
        ]
    )  # (L=3, N=6, D=2)
    with inputs_kept("sense_separation", vectors_by_layer=layers_d, senses=senses_d):
        accuracy_d = by_hand(ASSIGNMENT, sense_separation, layers_d, senses_d)
    if not (isinstance(accuracy_d, list) and len(accuracy_d) == 3):
        raise CheckFailed(
            f"sense_separation should return a list of 3 floats, got {type(accuracy_d).__name__}"
        )
    assert_close(
        "sense_separation accuracies by layer",
        accuracy_d,
        [0.5, 0.1666666667, 1.0],
        atol=1e-9,
        against="the expected value (leave-one-out centroids)",
    )
    for bad_senses_d in (senses_d[:5], ["river"] * 6, ["river"] * 5 + ["money"]):
        try:
            by_hand(ASSIGNMENT, sense_separation, layers_d, bad_senses_d)
        except ValueError:
            continue
        raise CheckFailed(f"sense_separation should raise ValueError for senses {bad_senses_d}")
    with inputs_kept("best_layer", vectors_by_layer=layers_d, senses=senses_d):
        chosen_d = by_hand(ASSIGNMENT, best_layer, layers_d, senses_d)
    if not (isinstance(chosen_d, int)):
        raise CheckFailed(f"best_layer should return an int, got {type(chosen_d).__name__}")
    if not (chosen_d == 2):
        raise CheckFailed(f"best_layer chose layer {chosen_d}, expected layer 2")
    print("Part D, visible test: passed.")
