"""A synthetic long-range task: recall the first token after L distractors, while busy.

A sequence is ``key, d_1, ..., d_L, query``. The key and the distractors are drawn from the
same ``num_keys`` symbols; the query is one extra symbol. The model answers at every step:

- at each distractor d_j it must name the token just before it (a short-term job that keeps
  it reading its input, so it cannot simply freeze its state after the key);
- at the query it must name the key, seen L + 1 steps earlier (the long-term job).

Guessing the key is right with probability 1 / ``num_keys``; doing better means carrying the
key across L busy steps, so recall accuracy against L measures how far back a model remembers::

    ids, targets = recall_batch(64, distance=20)        # (64, 22), (64, 22)
    history = train_recall(model, max_distance=40, steps=1000)
    accuracy = recall_accuracy(model, distance=80)     # beyond the training range
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from course.train import TrainingHistory, fit

__all__ = [
    "RecallTask",
    "recall_batch",
    "recall_batches",
    "recall_loss",
    "train_recall",
    "recall_accuracy",
]

IGNORE = -100  # target id that cross_entropy skips (the first step has nothing to echo)


@dataclass(frozen=True)
class RecallTask:
    """Keys and distractors are ids 0..num_keys-1; the query is id num_keys."""

    num_keys: int = 8

    @property
    def vocab_size(self) -> int:
        return self.num_keys + 1

    @property
    def query_id(self) -> int:
        return self.num_keys

    @property
    def chance(self) -> float:
        return 1.0 / self.num_keys


def recall_batch(
    batch_size: int,
    distance: int,
    *,
    task: RecallTask = RecallTask(),
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of sequences with ``distance`` = L distractors.

    Returns ids (B, L + 2) and targets (B, L + 2): IGNORE at step 0, the previous token at
    steps 1..L, the key at the last step (the query).
    """
    if batch_size < 1 or distance < 0:
        raise ValueError(f"expected batch_size >= 1, distance >= 0; got {batch_size}, {distance}")
    tokens = torch.randint(0, task.num_keys, (batch_size, distance + 1), generator=generator)
    query = torch.full((batch_size, 1), task.query_id)  # (B, 1)
    ids = torch.cat([tokens, query], dim=1)  # (B, L + 2): key, distractors, query
    first = torch.full((batch_size, 1), IGNORE)
    targets = torch.cat([first, tokens[:, :-1], tokens[:, :1]], dim=1)  # (B, L + 2)
    return ids, targets


def recall_batches(
    batch_size: int,
    *,
    max_distance: int,
    min_distance: int = 1,
    task: RecallTask = RecallTask(),
    seed: int = 0,
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """An endless stream of :func:`recall_batch` batches at mixed distances.

    Each batch draws one L from [min_distance, max_distance] log-uniformly (L + 1 is uniform
    on a log scale: short runs teach what to store, long ones how long to keep it), then a
    batch (ids, targets) at that L, all from one generator seeded with ``seed``.
    """
    if not 0 <= min_distance <= max_distance:
        raise ValueError(
            f"need 0 <= min_distance <= max_distance, got {min_distance}, {max_distance}"
        )
    if batch_size < 1:
        raise ValueError(f"batch_size: expected >= 1, got {batch_size}")
    generator = torch.Generator().manual_seed(seed)
    ratio = (max_distance + 1) / (min_distance + 1)

    def stream() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        while True:
            u = float(torch.rand((), generator=generator))
            distance = min(int((min_distance + 1) * ratio**u) - 1, max_distance)
            yield recall_batch(batch_size, distance, task=task, generator=generator)

    return stream()


def recall_loss(
    model: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]
) -> tuple[torch.Tensor, dict[str, float]]:
    """The echo cross-entropy (mean over the distractor steps) plus the recall cross-entropy.

    batch: ids (B, L + 2) and targets (B, L + 2). Returns the sum, to minimise, and
    ``{"recall": recall part}`` (nats) for the training history's logs.
    """
    ids, targets = batch
    logits = model(ids)  # (B, T, K)
    echo = F.cross_entropy(logits[:, :-1].flatten(0, 1), targets[:, :-1].flatten())
    recall = F.cross_entropy(logits[:, -1], targets[:, -1])
    return echo + recall, {"recall": recall.item()}


def train_recall(
    model: nn.Module,
    *,
    max_distance: int,
    min_distance: int = 1,
    steps: int = 1000,
    batch_size: int = 64,
    lr: float = 1e-2,
    clip_norm: float = 1.0,
    budget_seconds: float | None = None,
    task: RecallTask = RecallTask(),
    seed: int = 0,
    progress: bool = True,
) -> TrainingHistory:
    """Train ``model`` (ids (B, T) -> logits (B, T, num_keys)) with Adam on the recall task.

    Batches come from :func:`recall_batches` and the loss is :func:`recall_loss`;
    ``history.losses`` holds the whole loss and ``history.logs["recall"]`` its recall part
    (nats). Stops after ``steps`` steps or ``budget_seconds`` (see :func:`course.train.fit`).
    """
    batches = recall_batches(
        batch_size, max_distance=max_distance, min_distance=min_distance, task=task, seed=seed
    )
    return fit(
        model,
        recall_loss,
        batches,
        steps=steps,
        budget_seconds=budget_seconds,
        lr=lr,
        clip_norm=clip_norm,
        progress=progress,
    )


@torch.no_grad()
def recall_accuracy(
    model: nn.Module,
    distance: int,
    *,
    samples: int = 1000,
    task: RecallTask = RecallTask(),
    seed: int = 1234,
) -> float:
    """The fraction of ``samples`` fresh sequences at ``distance`` whose key the model names."""
    generator = torch.Generator().manual_seed(seed)
    ids, targets = recall_batch(samples, distance, task=task, generator=generator)
    was_training = model.training
    model.eval()
    guesses = model(ids)[:, -1].argmax(dim=1)  # (samples,)
    model.train(was_training)
    return float((guesses == targets[:, -1]).double().mean())
