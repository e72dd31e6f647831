"""The visible tests of Assignment 1 (an RNN over a padded batch, BPTT, clipping).

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

__all__ = ["check_part_a", "check_part_b", "check_part_c"]

ASSIGNMENT = "a1_rnn_bptt"


def check_part_a(rnn_forward: Callable[..., Any], classification_loss: Callable[..., Any]) -> None:
    """Part A: the forward pass over a padded batch and the mean cross-entropy.

    The weights are fixed by hand (no randomness), and the expected numbers were computed once
    with an independent implementation. The second sequence has one real step and the third
    two; their padding holds large numbers that must not leak into the result.
    """
    __tracebackhide__ = True
    xs_a = np.array(
        [
            [[1.0, -1.0], [0.5, 2.0], [-1.5, 0.0]],
            [[0.3, 0.7], [50.0, -50.0], [50.0, 50.0]],
            [[-1.0, 0.5], [2.0, -0.5], [-50.0, 50.0]],
        ]
    )  # (B=3, T=3, D=2)
    lengths_a = np.array([3, 1, 2])
    h0_a = np.array([[0.1, -0.2, 0.3], [0.0, 0.0, 0.0], [-0.4, 0.2, 0.1]])  # (B=3, H=3)
    params_a = {
        "W": np.linspace(-0.5, 0.5, 9).reshape(3, 3),
        "U": np.linspace(-1.0, 1.0, 6).reshape(3, 2),
        "b": np.array([0.0, 0.1, -0.1]),
        "V": np.linspace(-1.0, 1.0, 12).reshape(4, 3),  # K=4
        "c": np.array([0.0, 0.5, -0.5, 0.2]),
    }
    labels_a = np.array([2, 0, 3])

    with inputs_kept("rnn_forward", xs=xs_a, lengths=lengths_a, h0=h0_a, params=params_a):
        hs_a, probs_a = by_hand(ASSIGNMENT, rnn_forward, xs_a, lengths_a, h0_a, params_a)
    assert_close(
        "hs",
        hs_a,
        [
            [
                [-0.4218990053, -0.2682711820, -0.3799489623],
                [-0.8600304355, 0.3844267603, 0.9472134470],
                [0.9136289087, 0.5552263829, -0.5350833088],
            ],
            [
                [-0.6169093029, 0.1780808681, 0.6527067060],
                [-0.6169093029, 0.1780808681, 0.6527067060],  # padding: the state stays
                [-0.6169093029, 0.1780808681, 0.6527067060],
            ],
            [
                [0.6640367703, 0.4321195876, -0.1732351578],
                [-0.9732659928, -0.4657733120, 0.6865691563],
                [-0.9732659928, -0.4657733120, 0.6865691563],
            ],
        ],
        against="the expected value",
    )
    assert_close(
        "probs",
        probs_a,
        [
            [0.0904742481, 0.2482398538, 0.1519764544, 0.5093094436],
            [0.1868504528, 0.3461836637, 0.1431123991, 0.3238534843],
            [0.3680348503, 0.4025178214, 0.0982289629, 0.1312183654],
        ],
        against="the expected value",
    )
    assert_close("sum of each row of probs", probs_a.sum(axis=1), np.ones(3), atol=1e-9)
    with inputs_kept("classification_loss", probs=probs_a):
        loss_a = by_hand(ASSIGNMENT, classification_loss, probs_a, labels_a)
    assert_close(
        "classification_loss",
        loss_a,
        1.8641229357,
        against="the expected value",
    )
    print("Part A, visible test: passed.")


def check_part_b(rnn_backward: Callable[..., Any]) -> None:
    """Part B: every gradient of rnn_backward against autograd's.

    The reference builds the same computation in PyTorch, one sequence at a time over its real
    steps only, and lets autograd differentiate it. The sequences have lengths 2, 5 and 3, and
    their padding holds large numbers.
    """
    __tracebackhide__ = True
    import torch

    rng_b = np.random.default_rng(2024)
    B_b, T_b, D_b, H_b, K_b = 3, 5, 3, 4, 3
    lengths_b = np.array([2, 5, 3])
    xs_b = rng_b.normal(size=(B_b, T_b, D_b))
    xs_b[np.arange(T_b) >= lengths_b[:, None]] = 25.0  # the padding: must change nothing
    labels_b = rng_b.integers(0, K_b, size=B_b)
    h0_b = 0.5 * rng_b.normal(size=(B_b, H_b))
    shapes_b = {"W": (H_b, H_b), "U": (H_b, D_b), "b": (H_b,), "V": (K_b, H_b), "c": (K_b,)}
    params_b = {name: 0.7 * rng_b.normal(size=shape) for name, shape in shapes_b.items()}

    with inputs_kept(
        "rnn_backward", xs=xs_b, lengths=lengths_b, labels=labels_b, h0=h0_b, params=params_b
    ) as before_b:
        grads_b = by_hand(ASSIGNMENT, rnn_backward, xs_b, lengths_b, labels_b, h0_b, params_b)

    # The reference, from the inputs as they were: the forward pass written with torch tensors,
    # differentiated by autograd.
    leaves_b = {
        name: torch.tensor(value, requires_grad=True)
        for name, value in {**before_b["params"], "h0": before_b["h0"]}.items()
    }
    loss_b = torch.zeros((), dtype=torch.float64)
    for row_b in range(B_b):
        state_b = leaves_b["h0"][row_b]
        steps_b = before_b["lengths"][row_b]
        for x_t in torch.from_numpy(before_b["xs"][row_b, :steps_b]):  # the real steps only
            state_b = torch.tanh(leaves_b["W"] @ state_b + leaves_b["U"] @ x_t + leaves_b["b"])
        logits_b = leaves_b["V"] @ state_b + leaves_b["c"]
        loss_b = loss_b - torch.log_softmax(logits_b, dim=0)[before_b["labels"][row_b]] / B_b
    loss_b.backward()

    for name in ["V", "c", "W", "U", "b", "h0"]:
        if name not in grads_b:
            raise CheckFailed(f"rnn_backward must return a gradient for {name!r}")
        assert_close(f"d{name}", grads_b[name], leaves_b[name].grad, atol=1e-8, against="autograd")
    print("Part B, visible test: passed.")


def check_part_c(clip_by_global_norm: Callable[..., Any]) -> None:
    """Part C: clipping by the global norm, above and below the threshold."""
    __tracebackhide__ = True
    grads_c = {"W": np.array([[3.0, 0.0], [0.0, 4.0]]), "b": np.array([12.0])}  # global norm 13
    with inputs_kept("clip_by_global_norm", grads=grads_c):
        clipped_c, norm_c = by_hand(ASSIGNMENT, clip_by_global_norm, grads_c, max_norm=6.5)
    assert_close("total_norm", norm_c, 13.0, atol=1e-9, against="the expected value")
    assert_close(
        "clipped['W']", clipped_c["W"], [[1.5, 0.0], [0.0, 2.0]], against="the expected value"
    )
    assert_close("clipped['b']", clipped_c["b"], [6.0], against="the expected value")
    assert_close(
        "grads['W'] after the call",
        grads_c["W"],
        [[3.0, 0.0], [0.0, 4.0]],
        against="its value before the call",
    )

    small_c = {"U": np.array([[0.3, -0.4]])}  # global norm 0.5: nothing to clip
    kept_c, norm_small_c = by_hand(ASSIGNMENT, clip_by_global_norm, small_c, max_norm=1.0)
    assert_close("total_norm", norm_small_c, 0.5, atol=1e-9, against="the expected value")
    assert_close(
        "clipped['U']", kept_c["U"], [[0.3, -0.4]], atol=1e-12, against="the unchanged gradient"
    )
    print("Part C, visible test: passed.")
