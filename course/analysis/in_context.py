"""In-context learning measured on the key-value task of ``course.data.key_value`` (Unit 8).

At each key of a sequence the model's guess is the value whose logit is highest (among the
value ids: which value it ranks first). Guesses are grouped by the pair's **lag**, the number of
pairs back to the key's last showing in the same sequence (0: first showing, so the value is
nowhere in the context). Three baselines:

    chance           1 / num_values
    context-free     for each key, the value that followed it most often in other sequences
                     (a table counted on training sequences): the best a model that ignores
                     the context can do, and about chance, since every mapping is fresh
    any shown value  a value drawn uniformly from the distinct values written earlier in the
                     sequence: right with probability 1 / (their number) at a repeated key.
                     It knows that the answer is somewhere in the context, not where.

Usage::

    result = in_context_accuracy(model, ids, task)   # ids (B, 2n) from key_value_batch
    result.query_accuracy, result.first_accuracy, result.by_lag()
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from course.data.key_value import KeyValueTask, pair_lags
from course.models import model_device

__all__ = [
    "InContextAccuracy",
    "value_guesses",
    "shown_value_counts",
    "in_context_accuracy",
    "context_free_accuracy",
]


@dataclass(frozen=True)
class InContextAccuracy:
    """Accuracy at the keys of a set of sequences, by lag (pairs back to the key's last showing).

    lags: the lags 1, 2, ... that occur; accuracy, counts and any_shown: per lag, the model's
    accuracy, the number of keys, and the any-shown-value baseline. first_*: the keys shown
    for the first time (lag 0). query_*: every key shown before (lag >= 1) together.
    """

    lags: tuple[int, ...]
    accuracy: tuple[float, ...]
    counts: tuple[int, ...]
    any_shown: tuple[float, ...]
    first_accuracy: float
    first_count: int
    query_accuracy: float
    query_count: int
    query_any_shown: float
    chance: float

    def by_lag(self, min_count: int = 1) -> list[tuple[int, float, int, float]]:
        """(lag, accuracy, count, any-shown baseline) for each lag with at least ``min_count``
        keys."""
        rows = zip(self.lags, self.accuracy, self.counts, self.any_shown, strict=True)
        return [row for row in rows if row[2] >= min_count]


def _values(ids: torch.Tensor, task: KeyValueTask) -> torch.Tensor:
    """The value written in each pair, as a value index 0..num_values-1: (B, 2n) -> (B, n)."""
    first = int(task.vocab.encode(task.values[0]))  # value ids are consecutive (digits sort so)
    return ids[:, 1::2] - first


@torch.no_grad()
def value_guesses(model: nn.Module, ids: torch.Tensor, task: KeyValueTask) -> torch.Tensor:
    """The model's guess of each pair's value, as a value index: ids (B, 2n) -> (B, n).

    ``model(ids)`` gives logits (B, 2n, |V|); at key position 2i they score the token after
    it, the value of pair i. The guess is the value with the highest logit.
    """
    pair_lags(ids, task)  # checks the ids' shape and range
    was_training = model.training
    model.eval()
    try:
        logits = model(ids.to(model_device(model)))[:, 0::2].cpu()  # (B, n, |V|) at the keys
    finally:
        model.train(was_training)
    value_ids = task.vocab.encode(task.values)  # (num_values,)
    return logits[..., value_ids].argmax(dim=-1)  # (B, n)


def shown_value_counts(ids: torch.Tensor, task: KeyValueTask) -> torch.Tensor:
    """How many distinct values are written before each pair: (B, 2n) -> (B, n)."""
    pair_lags(ids, task)  # checks the ids
    written = F.one_hot(_values(ids, task), task.num_values)  # (B, n, num_values)
    before = written.cumsum(dim=1) - written  # (B, n, num_values): counts in pairs j < i
    return (before > 0).sum(dim=-1)


def in_context_accuracy(
    model: nn.Module, ids: torch.Tensor, task: KeyValueTask
) -> InContextAccuracy:
    """The model's accuracy at every key of ``ids`` (B, 2n), by lag, with the any-shown-value
    baseline at the same keys (see the module docstring)."""
    lag = pair_lags(ids, task)  # (B, n)
    right = (value_guesses(model, ids, task) == _values(ids, task)).double()  # (B, n)
    any_shown = 1.0 / shown_value_counts(ids, task).clamp(min=1).double()  # (B, n)
    lags = sorted(int(v) for v in lag.unique() if v > 0)
    per_lag = [lag == v for v in lags]
    query, first = lag > 0, lag == 0

    def mean(values: torch.Tensor, where: torch.Tensor) -> float:
        return float(values[where].mean()) if bool(where.any()) else float("nan")

    return InContextAccuracy(
        lags=tuple(lags),
        accuracy=tuple(mean(right, m) for m in per_lag),
        counts=tuple(int(m.sum()) for m in per_lag),
        any_shown=tuple(mean(any_shown, m) for m in per_lag),
        first_accuracy=mean(right, first),
        first_count=int(first.sum()),
        query_accuracy=mean(right, query),
        query_count=int(query.sum()),
        query_any_shown=mean(any_shown, query),
        chance=task.chance,
    )


def context_free_accuracy(train_ids: torch.Tensor, ids: torch.Tensor, task: KeyValueTask) -> float:
    """Accuracy at the repeated keys of ``ids`` of the best guess that ignores the context:
    for each key, the value that followed it most often in ``train_ids`` (ties: the lowest)."""
    lag = pair_lags(ids, task)
    pair_lags(train_ids, task)  # checks the training ids
    first_key = int(task.vocab.encode(task.keys[0]))  # key ids are consecutive letters

    def keys(x: torch.Tensor) -> torch.Tensor:
        return x[:, 0::2] - first_key  # (B, n) key indices

    table = torch.zeros(task.num_keys, task.num_values, dtype=torch.long)
    table.index_put_(
        (keys(train_ids).flatten(), _values(train_ids, task).flatten()),
        torch.ones(train_ids.shape[0] * task.num_pairs, dtype=torch.long),
        accumulate=True,
    )
    best = table.argmax(dim=1)  # (num_keys,): the first of the most frequent values
    right = best[keys(ids)] == _values(ids, task)  # (B, n)
    return float(right[lag > 0].double().mean())
