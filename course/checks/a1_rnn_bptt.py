"""The visible tests of Assignment 1 (an RNN over a padded batch, BPTT, clipping).

Part B's gradients come from autograd, run on the inputs as they were before the call.

Written as every module of visible tests is (the package's docstring, :mod:`course.checks`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from course.checks import CheckFailed, assert_close, inputs_kept
from course.checks.cases import Case, unpack
from course.checks.rules import by_hand

__all__ = ["check_part_a", "check_part_b", "check_part_c"]

ASSIGNMENT = "a1_rnn_bptt"
EXPECTED = "the expected value"
# Read-out first: when several gradients are wrong, the first message points at the earliest
# stage of the backward pass that went wrong.
GRADIENT_ORDER = ("V", "c", "W", "U", "b", "h0")


def part_a_cases() -> list[Case]:
    """Part A's case: weights fixed by hand (no randomness); the expected numbers were
    computed once with an independent implementation. The second sequence has one real step
    and the third two; their padding holds large numbers that must not leak into the result."""
    return [
        Case(
            "three sequences of lengths 3, 1 and 2, padding holding ±50",
            xs=np.array(
                [
                    [[1.0, -1.0], [0.5, 2.0], [-1.5, 0.0]],
                    [[0.3, 0.7], [50.0, -50.0], [50.0, 50.0]],
                    [[-1.0, 0.5], [2.0, -0.5], [-50.0, 50.0]],
                ]
            ),  # (B=3, T=3, D=2)
            lengths=np.array([3, 1, 2]),
            h0=np.array([[0.1, -0.2, 0.3], [0.0, 0.0, 0.0], [-0.4, 0.2, 0.1]]),  # (B=3, H=3)
            params={
                "W": np.linspace(-0.5, 0.5, 9).reshape(3, 3),
                "U": np.linspace(-1.0, 1.0, 6).reshape(3, 2),
                "b": np.array([0.0, 0.1, -0.1]),
                "V": np.linspace(-1.0, 1.0, 12).reshape(4, 3),  # K=4
                "c": np.array([0.0, 0.5, -0.5, 0.2]),
            },
            labels=np.array([2, 0, 3]),
            expected_hs=[
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
            expected_probs=[
                [0.0904742481, 0.2482398538, 0.1519764544, 0.5093094436],
                [0.1868504528, 0.3461836637, 0.1431123991, 0.3238534843],
                [0.3680348503, 0.4025178214, 0.0982289629, 0.1312183654],
            ],
            expected_loss=1.8641229357,
        )
    ]


def check_part_a(rnn_forward: Callable[..., Any], classification_loss: Callable[..., Any]) -> None:
    """Part A: the forward pass over a padded batch and the mean cross-entropy."""
    __tracebackhide__ = True
    for case in part_a_cases():
        xs, lengths, h0, params = case.xs, case.lengths, case.h0, case.params
        with case.named("rnn_forward"):
            with inputs_kept("rnn_forward", xs=xs, lengths=lengths, h0=h0, params=params):
                returned = by_hand(ASSIGNMENT, rnn_forward, xs, lengths, h0, params)
            hs, probs = unpack(returned, "rnn_forward", ("hs", "probs"))
            assert_close("hs", hs, case.expected_hs, against=EXPECTED)
            assert_close("probs", probs, case.expected_probs, against=EXPECTED)
            assert_close(
                "sum of each row of probs", probs.sum(axis=1), np.ones(len(probs)), atol=1e-9
            )
        with case.named("classification_loss"):
            with inputs_kept("classification_loss", probs=probs):
                loss = by_hand(ASSIGNMENT, classification_loss, probs, case.labels)
            assert_close("classification_loss", loss, case.expected_loss, against=EXPECTED)
    print("Part A, visible test: passed.")


def part_b_cases() -> list[Case]:
    """Part B's case, drawn from a seeded generator: its expected gradients are autograd's."""
    rng = np.random.default_rng(2024)
    B, T, D, H, K = 3, 5, 3, 4, 3
    lengths = np.array([2, 5, 3])
    xs = rng.normal(size=(B, T, D))
    xs[np.arange(T) >= lengths[:, None]] = 25.0  # the padding: must change nothing
    labels = rng.integers(0, K, size=B)
    h0 = 0.5 * rng.normal(size=(B, H))
    shapes = {"W": (H, H), "U": (H, D), "b": (H,), "V": (K, H), "c": (K,)}
    params = {name: 0.7 * rng.normal(size=shape) for name, shape in shapes.items()}
    return [
        Case(
            "three sequences of lengths 2, 5 and 3, padding holding 25",
            xs=xs,
            lengths=lengths,
            labels=labels,
            h0=h0,
            params=params,
        )
    ]


def _autograd_gradients(
    xs: np.ndarray, lengths: np.ndarray, labels: np.ndarray, h0: np.ndarray, params: dict
) -> dict[str, np.ndarray]:
    """The reference of Part B: the forward pass written with torch tensors, one sequence at a
    time over its real steps only, and the gradients of the mean loss by autograd."""
    import torch

    leaves = {
        name: torch.tensor(value, requires_grad=True)
        for name, value in {**params, "h0": h0}.items()
    }
    loss = torch.zeros((), dtype=torch.float64)
    for row in range(len(lengths)):
        state = leaves["h0"][row]
        for x_t in torch.from_numpy(xs[row, : lengths[row]]):  # the real steps only
            state = torch.tanh(leaves["W"] @ state + leaves["U"] @ x_t + leaves["b"])
        logits = leaves["V"] @ state + leaves["c"]
        loss = loss - torch.log_softmax(logits, dim=0)[labels[row]] / len(lengths)
    loss.backward()
    return {name: leaf.grad.numpy() for name, leaf in leaves.items()}


def check_part_b(rnn_backward: Callable[..., Any]) -> None:
    """Part B: every gradient of rnn_backward against autograd's."""
    __tracebackhide__ = True
    for case in part_b_cases():
        with case.named("rnn_backward"):
            with inputs_kept("rnn_backward", **case.inputs) as before:
                grads = by_hand(
                    ASSIGNMENT, rnn_backward, case.xs, case.lengths, case.labels, case.h0,
                    case.params,
                )  # fmt: skip
            expected = _autograd_gradients(**before)  # from the inputs as they were
            for name in GRADIENT_ORDER:
                if name not in grads:
                    raise CheckFailed(f"rnn_backward must return a gradient for {name!r}")
                assert_close(f"d{name}", grads[name], expected[name], atol=1e-8, against="autograd")
    print("Part B, visible test: passed.")


def part_c_cases() -> list[Case]:
    """Part C's cases: gradients above the threshold, then below it (nothing to clip)."""
    return [
        Case(
            "gradients of global norm 13, max_norm 6.5",
            grads={"W": np.array([[3.0, 0.0], [0.0, 4.0]]), "b": np.array([12.0])},
            max_norm=6.5,
            expected_total_norm=13.0,
            expected_clipped={"W": [[1.5, 0.0], [0.0, 2.0]], "b": [6.0]},
        ),
        Case(
            "gradients of global norm 0.5, below max_norm 1",
            grads={"U": np.array([[0.3, -0.4]])},
            max_norm=1.0,
            expected_total_norm=0.5,
            expected_clipped={"U": [[0.3, -0.4]]},  # the gradients as they were
        ),
    ]


def check_part_c(clip_by_global_norm: Callable[..., Any]) -> None:
    """Part C: clipping by the global norm, above and below the threshold."""
    __tracebackhide__ = True
    for case in part_c_cases():
        below = case.expected_total_norm <= case.max_norm
        against, atol = ("the unchanged gradient", 1e-12) if below else (EXPECTED, 1e-6)
        with case.named("clip_by_global_norm"):
            with inputs_kept("clip_by_global_norm", grads=case.grads):
                returned = by_hand(
                    ASSIGNMENT, clip_by_global_norm, case.grads, max_norm=case.max_norm
                )
            clipped, total_norm = unpack(returned, "clip_by_global_norm", ("clipped", "total_norm"))
            assert_close(
                "total_norm", total_norm, case.expected_total_norm, atol=1e-9, against=EXPECTED
            )
            for key, value in case.expected_clipped.items():
                assert_close(f"clipped[{key!r}]", clipped[key], value, atol=atol, against=against)
    print("Part C, visible test: passed.")
