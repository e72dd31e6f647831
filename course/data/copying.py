"""A synthetic task where only position matters: delayed copying.

Random tokens x_1..x_n from ``vocab_size`` symbols; at each position i > delay the answer is
x_{i-delay}, the token ``delay`` steps back (IGNORE, -100, for the first ``delay`` positions,
which have no answer). Content says nothing about where to look, so a model must know relative
positions; Lecture 5 trains on short sequences and tests on longer ones::

    x, y = delayed_copy_batch(64, length=16)          # (64, 16), (64, 16)
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

__all__ = ["IGNORE", "delayed_copy_batch", "delayed_copy_batches"]

IGNORE = -100  # the target id that cross_entropy skips


def delayed_copy_batch(
    batch_size: int,
    length: int,
    vocab_size: int = 16,
    delay: int = 3,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens (B, n), targets (B, n)): targets[:, i] = tokens[:, i - delay], IGNORE before."""
    if not 0 < delay < length:
        raise ValueError(f"delay must be between 1 and length - 1 = {length - 1}, got {delay}")
    if vocab_size < 2 or batch_size < 1:
        raise ValueError(f"vocab_size >= 2 and batch_size >= 1, got {vocab_size}, {batch_size}")
    x = torch.randint(0, vocab_size, (batch_size, length), generator=generator)
    y = torch.full_like(x, IGNORE)
    y[:, delay:] = x[:, :-delay]
    return x, y


def delayed_copy_batches(
    batch_size: int, length: int, vocab_size: int = 16, delay: int = 3, seed: int = 0
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Endless fresh batches, reproducible from ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    while True:
        yield delayed_copy_batch(batch_size, length, vocab_size, delay, generator)
