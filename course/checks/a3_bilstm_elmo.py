"""The visible tests of Assignment 3 (a bidirectional GRU, ELMo's scalar mix, context similarity, senses).

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


def check_part_a(bidirectional_gru: Callable[..., Any]) -> None:
    """Part A's visible test (bidirectional_gru)."""
    __tracebackhide__ = True
    params_fwd_a = {
        "U": np.linspace(-1.0, 1.0, 6 * 3).reshape(6, 3),  # H=2, D=3
        "W": np.linspace(0.5, -0.5, 6 * 2).reshape(6, 2),
        "b_in": np.array([0.1, 0.2, -0.1, 0.0, 0.3, -0.3]),
        "b_rec": np.array([0.0, -0.2, 0.1, 0.1, 0.5, 0.5]),
    }
    params_bwd_a = {
        "U": np.linspace(0.9, -0.7, 6 * 3).reshape(6, 3),
        "W": np.linspace(-0.4, 0.6, 6 * 2).reshape(6, 2),
        "b_in": np.array([0.0, 0.1, 0.2, -0.2, 0.1, 0.0]),
        "b_rec": np.array([0.3, 0.0, -0.1, 0.2, 0.0, 0.1]),
    }
    xs_a = np.array(
        [
            [[1.0, 0.0, -1.0], [0.0, 1.0, 0.0], [-0.5, 0.5, 1.0]],
            [[0.2, -0.3, 0.4], [1.0, 1.0, -1.0], [9.0, -9.0, 9.0]],  # the last position is padding
        ]
    )  # (B=2, T=3, D=3)
    lengths_a = np.array([3, 2])
    with inputs_kept(
        "bidirectional_gru",
        xs=xs_a,
        lengths=lengths_a,
        params_fwd=params_fwd_a,
        params_bwd=params_bwd_a,
    ):
        out_a = by_hand(ASSIGNMENT, bidirectional_gru, xs_a, lengths_a, params_fwd_a, params_bwd_a)
    if not (isinstance(out_a, dict) and {"states", "final_fwd", "final_bwd"} <= set(out_a)):
        raise CheckFailed(
            "bidirectional_gru should return a dict with the keys 'states', 'final_fwd', 'final_bwd'"
        )

    # Sequence 1 read alone (B=1, T=2, no padding) must get the same states as in the batch.
    alone_a = by_hand(
        ASSIGNMENT, bidirectional_gru, xs_a[1:, :2], np.array([2]), params_fwd_a, params_bwd_a
    )
    for key_a, got_a, want_a in [
        ("final_bwd", out_a["final_bwd"][1], alone_a["final_bwd"][0]),
        ("states", out_a["states"][1, :2], alone_a["states"][0]),
        ("final_fwd", out_a["final_fwd"][1], alone_a["final_fwd"][0]),
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
                f"{error_a}. The padding at position 2 changed this sequence: the backward reader "
                "must start at its last real token (position lengths[b] - 1 = 1), never at the "
                "padding, and the forward reader must stop there."
            ) from None

    assert_close(
        "states",
        out_a["states"],
        [
            [
                [0.1483471616, -0.1638273910, -0.0313722276, -0.1648837708],
                [0.5866234670, 0.3820701040, -0.1405846761, -0.3454555028],
                [0.7083785076, 0.5285622525, -0.0963992356, -0.2310736585],
            ],
            [
                [0.3330531028, 0.1358541836, -0.0198415449, -0.1403671311],
                [0.5414950636, 0.3462801772, -0.0075906133, -0.1072341573],
                [0.0, 0.0, 0.0, 0.0],
            ],
        ],
        atol=1e-8,
        against="torch.nn.GRU (bidirectional, packed)",
    )
    assert_close(
        "final_fwd",
        out_a["final_fwd"],
        [[0.7083785076, 0.5285622525], [0.5414950636, 0.3462801772]],
        atol=1e-8,
        against="torch.nn.GRU (bidirectional, packed)",
    )
    assert_close(
        "final_bwd",
        out_a["final_bwd"],
        [[-0.0313722276, -0.1648837708], [-0.0198415449, -0.1403671311]],
        atol=1e-8,
        against="torch.nn.GRU (bidirectional, packed)",
    )
    for bad_lengths_a in ([3, 0], [4, 2]):
        try:
            by_hand(
                ASSIGNMENT,
                bidirectional_gru,
                xs_a,
                np.array(bad_lengths_a),
                params_fwd_a,
                params_bwd_a,
            )
        except ValueError:
            continue
        raise CheckFailed(
            f"bidirectional_gru should raise ValueError for lengths {bad_lengths_a} with T = 3"
        )
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
    cosine_similarity_matrix: Callable[..., Any], mean_context_similarity: Callable[..., Any]
) -> None:
    """Part C's visible test (cosine_similarity_matrix, mean_context_similarity)."""
    __tracebackhide__ = True
    vectors_c = np.array([[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 2.0], [1.0, 1.0, 1.0]])
    with inputs_kept("cosine_similarity_matrix", vectors=vectors_c):
        similarity_c = by_hand(ASSIGNMENT, cosine_similarity_matrix, vectors_c)
    assert_close(
        "cosine_similarity_matrix(vectors)",
        similarity_c,
        [
            [1.0, 0.7071067812, 0.0, 0.5773502692],
            [0.7071067812, 1.0, 0.0, 0.8164965809],
            [0.0, 0.0, 1.0, 0.5773502692],
            [0.5773502692, 0.8164965809, 0.5773502692, 1.0],
        ],
        atol=1e-9,
        against="the expected value",
    )
    try:
        by_hand(ASSIGNMENT, cosine_similarity_matrix, np.array([[1.0, 2.0], [0.0, 0.0]]))
    except ValueError:
        pass
    else:
        raise CheckFailed("cosine_similarity_matrix should raise ValueError for a zero vector")

    layers_c = np.stack([np.tile([[2.0, -1.0, 0.5]], (4, 1)), vectors_c])  # (L=2, N=4, D=3)
    with inputs_kept("mean_context_similarity", vectors_by_layer=layers_c):
        means_c = by_hand(ASSIGNMENT, mean_context_similarity, layers_c)
    if not (isinstance(means_c, list) and len(means_c) == 2):
        raise CheckFailed(
            f"mean_context_similarity should return a list of 2 floats, got {type(means_c).__name__}"
        )
    assert_close(
        "mean_context_similarity (layer 0: a type embedding, layer 1: the vectors above)",
        means_c,
        [1.0, 0.4463839834],
        atol=1e-9,
        against="the expected value (the mean over pairs of different occurrences)",
    )
    try:
        by_hand(ASSIGNMENT, mean_context_similarity, np.ones((2, 1, 3)))
    except ValueError:
        pass
    else:
        raise CheckFailed("mean_context_similarity should raise ValueError for N = 1")
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
