"""The course's one training loop, and the language-model trainer built on it.

- :func:`fit`: any model, any loss, any stream of batches. Gradient clipping by global norm,
  a progress bar, a wall-clock budget, and a stop at the first non-finite loss. Every unit
  trains through it::

      history = fit(model, loss_fn, batches, steps=1000, budget_seconds=20, lr=3e-3)

  ``loss_fn(model, batch)`` returns the scalar loss to minimise, or a pair (loss, logs) whose
  ``logs`` maps names to extra numbers to record at each step (e.g. one part of the loss).
  ``batches`` is any iterable of batches (an endless generator, a list, a DataLoader).
- :class:`TrainingHistory`: what a run did: losses, gradient norms, extra logs, steps,
  seconds, and why it stopped, with :meth:`TrainingHistory.summary` as one line of text.
- :func:`train_language_model`: next-character prediction on random windows of a stream of
  ids (Units 1 and 2), a thin user of :func:`fit`.

Held-out bits per character, n-gram baselines and sampling are in ``course.analysis.lm``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import torch
from torch import nn
from torch.nn import functional as F
from tqdm.auto import tqdm

from course.checks import expect_dtype, expect_shape
from course.data.chars import random_windows

__all__ = [
    "TrainingHistory",
    "fit",
    "linear_warmup_decay",
    "next_token_loss",
    "train_language_model",
    "transformer_schedule",
]

StopReason = Literal["steps", "budget", "diverged", "data"]
LossOutput = torch.Tensor | tuple[torch.Tensor, Mapping[str, Any]]  # the loss, or (loss, logs)
LossFn = Callable[[nn.Module, Any], LossOutput]


@dataclass
class TrainingHistory:
    """What a training run did.

    losses: the loss of each step's batch (the number that was minimised).
    grad_norms: the global gradient norm of each step (all parameters together), measured
        before clipping.
    logs: extra numbers that the loss function reported, one list per name, one value per step.
    steps: number of optimiser steps taken.
    seconds: wall-clock time of the loop.
    stopped_by: "steps" (all done), "budget" (out of time), "diverged" (non-finite loss; that
        loss is the last entry of ``losses`` and no step was taken with it) or "data" (the
        batches ran out).
    budget_seconds: the wall-clock budget the run had (None: no budget).
    """

    losses: list[float] = field(default_factory=list)
    grad_norms: list[float] = field(default_factory=list)
    logs: dict[str, list[float]] = field(default_factory=dict)
    steps: int = 0
    seconds: float = 0.0
    stopped_by: StopReason = "steps"
    budget_seconds: float | None = None

    def summary(self) -> str:
        """One line that says how the run ended, e.g. "stopped at the 20 s budget after 3,357 steps"."""
        if self.stopped_by == "budget":
            return f"stopped at the {self.budget_seconds:g} s budget after {self.steps:,} steps"
        if self.stopped_by == "diverged":
            last = self.losses[-1] if self.losses else float("nan")
            return (
                f"diverged: the loss became {last} at step {self.steps + 1:,}, so training "
                f"stopped after {self.steps:,} steps ({self.seconds:.1f} s)"
            )
        if self.stopped_by == "data":
            return f"used up the batches after {self.steps:,} steps in {self.seconds:.1f} s"
        return f"{self.steps:,} steps in {self.seconds:.1f} s"


def _make_optimizer(
    model: nn.Module, optimizer: str | torch.optim.Optimizer, lr: float
) -> torch.optim.Optimizer:
    if isinstance(optimizer, torch.optim.Optimizer):
        return optimizer
    if optimizer == "adam":
        return torch.optim.Adam(model.parameters(), lr=lr)
    if optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr)
    raise ValueError(
        f"optimizer: expected 'adam' or 'sgd' (or a torch.optim.Optimizer), got {optimizer!r}"
    )


def _end_bar(bar: Any) -> None:
    """Make a bar that stopped early on purpose end full, then close it.

    tqdm's notebook bar turns red when it closes before reaching its total, which reads as a
    crash; a run that stopped on purpose is not one. Setting the total to the steps done (and,
    for the notebook bar, the widget's maximum too) makes it end complete.
    """
    if bar.total is not None and bar.n < bar.total:
        bar.total = bar.n
        container = getattr(bar, "container", None)  # tqdm.notebook's ipywidgets box
        if container is not None:
            container.children[1].max = bar.n
        bar.refresh()
    bar.close()


def fit(
    model: nn.Module,
    loss_fn: LossFn,
    batches: Iterable[Any],
    *,
    steps: int,
    budget_seconds: float | None = None,
    optimizer: Literal["adam", "sgd"] | torch.optim.Optimizer = "adam",
    lr: float = 1e-3,
    clip_norm: float | None = 1.0,
    lr_schedule: Callable[[int], float] | None = None,
    progress: bool = True,
    desc: str = "training",
) -> TrainingHistory:
    """Train ``model`` for up to ``steps`` optimiser steps; return a :class:`TrainingHistory`.

    Each step takes the next batch of ``batches``, computes ``loss_fn(model, batch)``, and,
    if the loss is finite, backpropagates, measures the global gradient norm, clips it to
    ``clip_norm`` (``None``: no clipping) and takes an optimiser step. The loop stops after
    ``steps`` steps, when ``budget_seconds`` have passed (checked before each step), at the
    first non-finite loss, or when ``batches`` runs out.

    optimizer: "adam" or "sgd" with learning rate ``lr``, or a ready
        ``torch.optim.Optimizer`` over the model's parameters (then ``lr`` is not used).
    lr_schedule: optional ``step -> factor``; the learning rate of step s is its initial value
        times ``lr_schedule(s)`` (e.g. a warm-up), through ``torch.optim.lr_scheduler.LambdaLR``.
    progress: show a progress bar (``tqdm.auto``: a widget in Jupyter, text elsewhere) and
        print one line at the end, e.g. "stopped at the 20 s budget after 3,357 steps". A run
        that stops early ends with a full bar, not a red one.
    """
    if steps < 0:
        raise ValueError(f"steps: expected a non-negative number, got {steps}")
    if budget_seconds is not None and not budget_seconds >= 0:
        raise ValueError(
            f"budget_seconds: expected a non-negative number or None, got {budget_seconds}"
        )
    if clip_norm is not None and not clip_norm > 0:
        raise ValueError(f"clip_norm: expected a positive number or None, got {clip_norm}")
    opt = _make_optimizer(model, optimizer, lr)
    scheduler = None if lr_schedule is None else torch.optim.lr_scheduler.LambdaLR(opt, lr_schedule)

    stream = iter(batches)
    history = TrainingHistory(budget_seconds=budget_seconds)
    model.train()
    start = time.perf_counter()
    bar = tqdm(total=steps, disable=not progress, desc=desc, unit="step")
    try:
        for step in range(steps):
            if budget_seconds is not None and time.perf_counter() - start > budget_seconds:
                history.stopped_by = "budget"
                break
            try:
                batch = next(stream)
            except StopIteration:
                history.stopped_by = "data"
                break
            out = loss_fn(model, batch)
            loss, logs = out if isinstance(out, tuple) else (out, {})
            loss_value = loss.item()
            history.losses.append(loss_value)
            for name, value in logs.items():
                value = value.detach() if isinstance(value, torch.Tensor) else value
                history.logs.setdefault(name, []).append(float(value))
            if not math.isfinite(loss_value):
                history.stopped_by = "diverged"
                break
            opt.zero_grad(set_to_none=True)
            loss.backward()
            params = [p for p in model.parameters() if p.grad is not None]
            norm = nn.utils.get_total_norm([p.grad for p in params])  # before clipping
            if clip_norm is not None:
                nn.utils.clip_grads_with_norm_(params, clip_norm, norm)
            opt.step()
            if scheduler is not None:
                scheduler.step()
            history.grad_norms.append(norm.item())
            history.steps = step + 1
            bar.update(1)
            if step % 25 == 0:
                bar.set_postfix(loss=f"{loss_value:.3f}")
    except BaseException:
        bar.close()  # an error or an interrupt keeps tqdm's red bar: that one is a failure
        raise
    history.seconds = time.perf_counter() - start
    _end_bar(bar)
    if progress:
        print(history.summary())
    return history


def linear_warmup_decay(warmup: int, steps: int) -> Callable[[int], float]:
    """A learning-rate factor for :func:`fit`: 0 → 1 over ``warmup`` steps, then 1 → 0 linearly
    at step ``steps`` (the factor of step s, counted from 0, is min((s+1)/warmup, (steps-s)/
    (steps-warmup)))."""
    if not 0 < warmup < steps:
        raise ValueError(f"expected 0 < warmup < steps, got warmup={warmup}, steps={steps}")

    def factor(step: int) -> float:
        return max(0.0, min((step + 1) / warmup, (steps - step) / (steps - warmup)))

    return factor


def transformer_schedule(
    d_model: int, warmup: int, *, scale: float = 1.0, warm_up: bool = True
) -> Callable[[int], float]:
    """The schedule of Vaswani et al. (2017) as a factor for :func:`fit` with ``lr=1``:

        lr(s) = scale · d_model^(-1/2) · min(s^(-1/2), s · warmup^(-3/2)),  s = step + 1,

    rising linearly for ``warmup`` steps, then decaying like 1/√s. ``warm_up=False`` keeps the
    same peak and decay but starts at the peak: lr(s) = scale · d_model^(-1/2) · max(s,
    warmup)^(-1/2), the same schedule with its warm-up removed.
    """
    if d_model < 1 or warmup < 1 or not scale > 0:
        raise ValueError(
            f"expected d_model, warmup >= 1 and scale > 0, got {d_model}, {warmup}, {scale}"
        )

    def factor(step: int) -> float:
        s = step + 1
        if warm_up:
            return scale * d_model**-0.5 * min(s**-0.5, s * warmup**-1.5)
        return scale * d_model**-0.5 * max(s, warmup) ** -0.5

    return factor


def next_token_loss(model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
    """Mean cross-entropy (nats) of predicting y from x: batch = (x (B, T), y (B, T)) ids.

    ``model(x)`` returns (logits (B, T, K), state), as the course's language models do.
    """
    x, y = batch
    logits, _ = model(x)  # (B, T, K)
    return F.cross_entropy(logits.flatten(0, 1), y.flatten())  # mean over B*T


def train_language_model(
    model: nn.Module,
    train_ids: torch.Tensor,
    *,
    steps: int = 1000,
    batch_size: int = 32,
    seq_len: int = 64,
    lr: float = 3e-3,
    clip_norm: float | None = 1.0,
    budget_seconds: float | None = None,
    seed: int = 0,
    optimizer: Literal["adam", "sgd"] = "adam",
    progress: bool = True,
) -> TrainingHistory:
    """Train ``model`` (ids (B, T) -> logits (B, T, K), state) on next-character prediction.

    train_ids: (N,) integer tensor. Each step draws ``batch_size`` random windows of
    ``seq_len`` characters (from a generator seeded with ``seed``) and starts from a zero
    hidden state. ``clip_norm=None`` turns clipping off. The loop (:func:`fit`) stops after
    ``steps`` steps, when ``budget_seconds`` have passed, or at the first non-finite loss.
    ``history.losses`` are in nats per character.
    """
    expect_shape(train_ids, ("N",), "train_ids")
    expect_dtype(train_ids, "iu", "train_ids")
    return fit(
        model,
        next_token_loss,
        random_windows(train_ids, batch_size, seq_len, seed=seed),
        steps=steps,
        budget_seconds=budget_seconds,
        optimizer=optimizer,
        lr=lr,
        clip_norm=clip_norm,
        progress=progress,
    )
