"""Hidden checks of Assignment 1: an RNN classifier over padded batches, BPTT by hand, clipping.

The hidden test cells of ``a1_rnn_bptt`` call, at autograde time::

    check_rnn_forward(rnn_forward, classification_loss)
    check_rnn_backward(rnn_backward)
    check_clip_by_global_norm(clip_by_global_norm)

Each check runs the student's functions on inputs that the visible tests do not use (other
shapes and seeds, B = 1, T = 1, every length 1, one sequence of full length, lengths in no
order, garbage in the padding, non-zero h0, scores near 1000, non-contiguous arrays, gradients
below the threshold...) and compares them with references computed here with torch, one
sequence at a time over its real steps, never with the student's code. A failure raises
AssertionError that names the case, the quantity that is off and by how much, e.g.
``[rnn_backward, B=1, T=1, D=2, H=3, K=4, non-zero h0] dW differs from autograd by 3.1e-02
at [1, 0] (...)``.

While a student's function runs, the routines that would do its work (autograd,
``Tensor.backward``, ``torch.nn.RNN``, ``clip_grad_norm_`` and every public callable of the
``course`` package except ``course.checks``) are replaced by traps; see :func:`no_shortcuts`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from autograder.hidden import shortcuts
from autograder.hidden.shortcuts import ShortcutUsed
from autograder.hidden.shortcuts import expect_value_error as _expect_value_error
from course.checks import assert_close
from course.checks import snapshot_inputs as _snapshot
from course.checks.cases import Case
from course.checks.cases import describe as _describe
from course.checks.cases import expect_scalar as _expect_scalar
from course.checks.cases import expect_unchanged as _expect_unchanged
from course.checks.cases import strided as _strided
from course.checks.cases import unpack as _unpack
from course.checks.rules import RULES

__all__ = [
    "ShortcutUsed",
    "no_shortcuts",
    "shortcut_targets",
    "check_rnn_forward",
    "check_rnn_backward",
    "check_clip_by_global_norm",
]

PARAMETER_NAMES = ("W", "U", "b", "V", "c")
# Read-out first: when several gradients are wrong, the first message points at the earliest
# stage of the backward pass that went wrong.
GRADIENT_ORDER = ("V", "c", "W", "U", "b", "h0")

FORWARD_DUTY = "be written by hand with NumPy"
BACKWARD_DUTY = "compute gradients by hand"
CLIP_DUTY = "compute the global norm and the scaling by hand"


# --------------------------------------------------------------------------------------------
# Traps
# --------------------------------------------------------------------------------------------

TRAPS = shortcuts.Traps(RULES["a1_rnn_bptt"].library)
shortcut_targets, no_shortcuts, _call_by_hand = TRAPS.methods()


# --------------------------------------------------------------------------------------------
# Test cases and references
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Recipe:
    """How to draw one hidden case of Parts A and B: :meth:`case` builds it afresh."""

    label: str
    seed: int
    T: int
    D: int
    H: int
    K: int
    lengths: tuple[int, ...]  # one per sequence: B = len(lengths)
    recurrent_scale: float = 0.8  # W is this times a Gaussian matrix / sqrt(H)
    read_out_scale: float = 1.0
    h0_scale: float = 0.5
    score_offset: float = 0.0  # added to every entry of c
    padding_scale: float = 30.0  # padded inputs are this times Gaussian noise: garbage
    strided: bool = False
    int_dtype: type = np.int64  # of lengths and labels

    def case(self) -> Case:
        """The case with the inputs xs, lengths, labels, h0 and params, new arrays each call."""
        B = len(self.lengths)
        rng = np.random.default_rng(self.seed)
        xs = rng.normal(size=(B, self.T, self.D))
        lengths = np.array(self.lengths, dtype=self.int_dtype)
        padding = np.arange(self.T) >= lengths[:, None]  # (B, T)
        xs[padding] = self.padding_scale * rng.normal(size=(int(padding.sum()), self.D))
        h0 = self.h0_scale * rng.normal(size=(B, self.H))
        params = {
            "W": self.recurrent_scale * rng.normal(size=(self.H, self.H)) / np.sqrt(self.H),
            "U": 0.7 * rng.normal(size=(self.H, self.D)),
            "b": 0.2 * rng.normal(size=self.H),
            "V": self.read_out_scale * rng.normal(size=(self.K, self.H)),
            "c": rng.normal(size=self.K) + self.score_offset,
        }
        labels = rng.integers(0, self.K, size=B).astype(self.int_dtype)
        if self.strided:
            xs, h0 = _strided(xs), _strided(h0)
            params = {name: _strided(value) for name, value in params.items()}
        return Case(self.label, xs=xs, lengths=lengths, labels=labels, h0=h0, params=params)


@dataclass(frozen=True)
class _Reference:
    hs: np.ndarray
    probs: np.ndarray
    loss: float
    grads: dict[str, np.ndarray]


def _reference(
    xs: np.ndarray,
    lengths: np.ndarray,
    labels: np.ndarray,
    h0: np.ndarray,
    params: dict[str, np.ndarray],
) -> _Reference:
    """Forward pass, mean loss and gradients with torch autograd in float64, one sequence at a
    time over its real steps only (the padding never enters the graph)."""
    leaves = {
        name: torch.tensor(np.array(value, dtype=np.float64), requires_grad=True)
        for name, value in {**params, "h0": h0}.items()
    }
    inputs = torch.tensor(np.array(xs, dtype=np.float64))
    n_rows, n_steps = inputs.shape[:2]
    all_states, all_log_probs = [], []
    for row in range(n_rows):
        state, states = leaves["h0"][row], []
        for step in range(n_steps):
            if step < int(lengths[row]):
                state = torch.tanh(
                    leaves["W"] @ state + leaves["U"] @ inputs[row, step] + leaves["b"]
                )
            states.append(state)  # at padding: the state after the last real step
        all_states.append(torch.stack(states))  # (T, H)
        all_log_probs.append(torch.log_softmax(leaves["V"] @ state + leaves["c"], dim=0))
    log_probs = torch.stack(all_log_probs)  # (B, K)
    ids = torch.as_tensor(np.asarray(labels, dtype=np.int64))
    loss = torch.nn.functional.nll_loss(log_probs, ids, reduction="mean")
    gradients = torch.autograd.grad(loss, [leaves[name] for name in GRADIENT_ORDER])
    return _Reference(
        hs=torch.stack(all_states).detach().numpy(),
        probs=log_probs.detach().exp().numpy(),
        loss=float(loss.detach()),
        grads={name: grad.numpy() for name, grad in zip(GRADIENT_ORDER, gradients, strict=True)},
    )


def _reference_clip(
    grads: Mapping[str, np.ndarray], max_norm: float
) -> tuple[dict[str, np.ndarray], float]:
    """What ``torch.nn.utils.clip_grad_norm_`` makes of copies of ``grads``."""
    holders = []
    for value in grads.values():
        holder = torch.zeros(np.shape(value), dtype=torch.float64, requires_grad=True)
        holder.grad = torch.tensor(np.array(value, dtype=np.float64))
        holders.append(holder)
    total = torch.nn.utils.clip_grad_norm_(holders, max_norm)
    clipped = {key: holder.grad.numpy() for key, holder in zip(grads, holders, strict=True)}
    return clipped, float(total)


# --------------------------------------------------------------------------------------------
# Small assertions with messages that teach
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Part A: rnn_forward and classification_loss
# --------------------------------------------------------------------------------------------

FORWARD_RECIPES = (
    _Recipe("B=1, T=1, D=3, H=4, K=5, non-zero h0", seed=11, T=1, D=3, H=4, K=5, lengths=(1,)),
    _Recipe(
        "B=4, T=6, D=2, H=5, K=3, lengths (6, 2, 4, 1) in no order, non-contiguous arrays",
        seed=12,
        T=6,
        D=2,
        H=5,
        K=3,
        lengths=(6, 2, 4, 1),
        strided=True,
    ),
    _Recipe(
        "B=3, T=4, D=3, H=3, K=4, every length 1 (the rest is padding)",
        seed=13,
        T=4,
        D=3,
        H=3,
        K=4,
        lengths=(1, 1, 1),
    ),
    _Recipe(
        "B=2, T=3, D=4, H=3, K=6, scores near 1000 (a naive softmax overflows)",
        seed=14,
        T=3,
        D=4,
        H=3,
        K=6,
        lengths=(3, 2),
        read_out_scale=10.0,
        score_offset=1000.0,
    ),
    _Recipe(
        "B=5, T=12, D=1, H=6, K=2, one sequence of full length, zero h0, strong recurrence, "
        "int32 lengths and labels",
        seed=15,
        T=12,
        D=1,
        H=6,
        K=2,
        lengths=(3, 12, 1, 5, 2),
        recurrent_scale=2.0,
        h0_scale=0.0,
        int_dtype=np.int32,
    ),
)


def forward_cases() -> list[Case]:
    """Every hidden case of Part A, drawn afresh (a function that writes into its inputs
    spoils no later check)."""
    return [recipe.case() for recipe in FORWARD_RECIPES]


def check_rnn_forward(
    rnn_forward: Callable[..., Any], classification_loss: Callable[..., Any]
) -> None:
    """Hidden test of Part A: hidden states, probabilities and mean loss on new cases.

    ``classification_loss`` gets the reference probabilities, so that a mistake in
    ``rnn_forward`` is not counted twice.
    """
    cases = forward_cases()
    for case in cases:
        expected = _reference(**case.inputs)
        inputs = {name: case.inputs[name] for name in ("xs", "lengths", "h0", "params")}
        before = _snapshot(inputs)
        with case.named("rnn_forward"):
            result = _call_by_hand(rnn_forward, FORWARD_DUTY, *inputs.values())
            hs, probs = _unpack(result, "rnn_forward", ("hs", "probs"))
            _expect_unchanged("rnn_forward", inputs, before)
            assert_close("hs", hs, expected.hs, atol=1e-9, rtol=1e-7, against="the reference")
            assert_close(
                "probs", probs, expected.probs, atol=1e-9, rtol=1e-7, against="the reference"
            )

        probs_in = expected.probs.copy()
        before = _snapshot({"probs": probs_in})
        B = len(case.lengths)
        with case.named("classification_loss"):
            loss = _call_by_hand(classification_loss, FORWARD_DUTY, probs_in, case.labels)
            value = _expect_scalar("classification_loss", loss)
            _expect_unchanged("classification_loss", {"probs": probs_in}, before)
            summed = expected.loss * B
            if B > 1 and abs(value - summed) < 1e-9 * max(1.0, summed):
                raise AssertionError(
                    f"classification_loss returned {value:.6g}, the sum over the {B} "
                    f"sequences; the loss is their mean, {expected.loss:.6g}"
                )
            assert_close(
                "classification_loss",
                value,
                expected.loss,
                atol=1e-8,
                rtol=1e-9,
                against="the reference",
            )
    print(f"check_rnn_forward: all {len(cases)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part B: rnn_backward
# --------------------------------------------------------------------------------------------

BACKWARD_RECIPES = (
    _Recipe("B=1, T=1, D=2, H=3, K=4, non-zero h0", seed=21, T=1, D=2, H=3, K=4, lengths=(1,)),
    _Recipe(
        "B=3, T=5, D=3, H=4, K=2, every length 1 (the rest is padding)",
        seed=22,
        T=5,
        D=3,
        H=4,
        K=2,
        lengths=(1, 1, 1),
    ),
    _Recipe(
        "B=4, T=9, D=3, H=5, K=4, lengths (2, 9, 5, 3) in no order, non-contiguous arrays",
        seed=23,
        T=9,
        D=3,
        H=5,
        K=4,
        lengths=(2, 9, 5, 3),
        strided=True,
    ),
    _Recipe(
        "B=2, T=4, D=2, H=3, K=3, no padding at all",
        seed=24,
        T=4,
        D=2,
        H=3,
        K=3,
        lengths=(4, 4),
    ),
    _Recipe(
        "B=2, T=5, D=2, H=4, K=3, scores near 1000 (a naive softmax overflows)",
        seed=25,
        T=5,
        D=2,
        H=4,
        K=3,
        lengths=(5, 3),
        read_out_scale=3.0,
        score_offset=1000.0,
    ),
    _Recipe(
        "B=3, T=25, D=2, H=3, K=2, long sequences, strong recurrence, int32 lengths and labels",
        seed=26,
        T=25,
        D=2,
        H=3,
        K=2,
        lengths=(17, 25, 8),
        recurrent_scale=2.0,
        int_dtype=np.int32,
    ),
)


def backward_cases() -> list[Case]:
    """Every hidden case of Part B, drawn afresh."""
    return [recipe.case() for recipe in BACKWARD_RECIPES]


def check_rnn_backward(rnn_backward: Callable[..., Any]) -> None:
    """Hidden test of Part B: every gradient against autograd on new cases, no autograd inside."""
    cases = backward_cases()
    for case in cases:
        expected = _reference(**case.inputs)
        before = _snapshot(case.inputs)  # xs, lengths, labels, h0, params
        with case.named("rnn_backward"):
            grads = _call_by_hand(
                rnn_backward,
                BACKWARD_DUTY,
                case.xs,
                case.lengths,
                case.labels,
                case.h0,
                case.params,
            )
            _expect_unchanged("rnn_backward", case.inputs, before)
            if not isinstance(grads, Mapping):
                raise AssertionError(
                    f"rnn_backward should return a dict of gradients, got {_describe(grads)}"
                )
            missing = [name for name in GRADIENT_ORDER if name not in grads]
            if missing:
                raise AssertionError(
                    f"rnn_backward returned no gradient for {', '.join(map(repr, missing))}; "
                    "expected the keys 'W', 'U', 'b', 'V', 'c' and 'h0'"
                )
            for name in GRADIENT_ORDER:
                assert_close(
                    f"d{name}",
                    grads[name],
                    expected.grads[name],
                    atol=1e-8,
                    rtol=1e-6,
                    against="autograd",
                )
    print(f"check_rnn_backward: all {len(cases)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part C: clip_by_global_norm
# --------------------------------------------------------------------------------------------


def _scaled_to(
    norms: Mapping[str, tuple[tuple[int, ...], float]], seed: int
) -> dict[str, np.ndarray]:
    """Random arrays of the given shapes, each rescaled to the given Euclidean norm."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for key, (shape, norm) in norms.items():
        raw = rng.normal(size=shape)
        arrays[key] = raw * (norm / np.linalg.norm(raw)) if norm else np.zeros(shape)
    return arrays


def clip_cases() -> list[Case]:
    """Every hidden clipping case, with the inputs grads and max_norm."""
    six = {"W": (4, 4), "U": (4, 3), "b": (4,), "V": (2, 4), "c": (2,), "h0": (4,)}
    below = _scaled_to({"W": ((2, 5), 0.6), "kernel": ((2, 3, 4), 0.6)}, seed=33)
    return [
        Case(
            "six gradients of norm 2 each (global norm 4.9), max_norm=3",
            grads=_scaled_to({key: (shape, 2.0) for key, shape in six.items()}, seed=31),
            max_norm=3.0,
        ),
        Case(
            "an exploding gradient next to a tiny one, max_norm=5",
            grads=_scaled_to({"W": ((3, 3), 2.5e3), "b": ((3,), 1e-3)}, seed=32),
            max_norm=5.0,
        ),
        Case(
            "global norm 0.85, below max_norm=1 (an int): nothing to clip",
            grads=below,
            max_norm=1,
        ),
        Case(
            "all-zero gradients, max_norm=0.5",
            grads={"W": np.zeros((3, 3)), "b": np.zeros(3)},
            max_norm=0.5,
        ),
        Case(
            "non-contiguous and 3-D gradients, max_norm=0.25",
            grads={
                key: _strided(value)
                for key, value in _scaled_to(
                    {"A": ((2, 2, 3), 0.3), "z": ((5,), 0.4)}, seed=34
                ).items()
            },
            max_norm=0.25,
        ),
    ]


def check_clip_by_global_norm(clip_by_global_norm: Callable[..., Any]) -> None:
    """Hidden test of Part C: global (not per-tensor) scaling, new arrays, inputs untouched."""
    cases = clip_cases()
    for case in cases:
        grads, max_norm = case.grads, case.max_norm
        expected, expected_total = _reference_clip(grads, max_norm)
        nothing_to_clip = expected_total <= max_norm
        before = _snapshot({"grads": grads})
        with case.named("clip_by_global_norm"):
            result = _call_by_hand(clip_by_global_norm, CLIP_DUTY, grads, max_norm)
            _expect_unchanged("clip_by_global_norm", {"grads": grads}, before)
            clipped, total = _unpack(result, "clip_by_global_norm", ("clipped", "total_norm"))
            if not isinstance(clipped, Mapping):
                raise AssertionError(
                    f"clip_by_global_norm should return a dict as clipped, got {_describe(clipped)}"
                )
            if clipped is grads:
                raise AssertionError(
                    "clip_by_global_norm returned its input dict as clipped; return a new dict"
                )
            if set(clipped) != set(grads):
                raise AssertionError(
                    f"clipped has the keys {sorted(clipped)}, but grads has {sorted(grads)}"
                )
            assert_close(
                "total_norm",
                _expect_scalar("total_norm", total),
                expected_total,
                atol=1e-9,
                rtol=1e-9,
                against="the norm before clipping",
            )
            for key, value in grads.items():
                assert_close(
                    f"clipped[{key!r}]",
                    clipped[key],
                    expected[key],
                    atol=1e-12 if nothing_to_clip else 1e-6,
                    rtol=1e-6,
                    against="the unchanged gradient" if nothing_to_clip else "clip_grad_norm_",
                )
                returned = clipped[key]
                if returned is value or (
                    isinstance(returned, np.ndarray) and np.may_share_memory(returned, value)
                ):
                    raise AssertionError(
                        f"clipped[{key!r}] is (a view of) the input array grads[{key!r}]; return "
                        "new arrays, also when nothing needs clipping"
                    )

    for bad in (0, 0.0, -1.0):
        grads = _scaled_to({"W": ((2, 2), 1.0)}, seed=35)
        _expect_value_error(
            lambda grads=grads, bad=bad: _call_by_hand(clip_by_global_norm, CLIP_DUTY, grads, bad),
            f"clip_by_global_norm(grads, max_norm={bad!r}) (the threshold must be positive)",
        )
    print(f"check_clip_by_global_norm: all {len(cases) + 3} hidden cases passed.")
