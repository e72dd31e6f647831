"""A synthetic in-context learning task: look a key up in pairs shown earlier in the sequence.

Each sequence draws a **fresh random mapping** from ``num_keys`` keys (the letters ``a``,
``b``, ...) to ``num_values`` values (the digits ``0``, ``1``, ...), then writes ``num_pairs``
pairs ``k_1 v_1 k_2 v_2 ...`` with keys drawn at random (with replacement), each followed by
its value under that sequence's mapping. A model reads the sequence left to right and, at
every key, predicts the value that follows:

- a key shown before in the same sequence is a **query**: its value is written earlier in the
  context, so a model that finds the earlier pair and copies its value gets it right;
- a key seen for the first time has no answer in the context: nothing beats chance,
  1 / ``num_values``, because the mapping is new in every sequence.

No fact about a key holds across sequences, so no weight can store the answer: what training
can teach is the *procedure* of looking it up (a previous-token head and an induction head).
Sequences are text, e.g. ``"c7a2f9c7..."``, read by a character vocabulary::

    task = KeyValueTask(num_keys=4, num_values=10, num_pairs=12)
    ids, targets = key_value_batch(64, task)   # (64, 24), (64, 24): targets at key positions
    lag = pair_lags(ids, task)                 # (64, 12): pairs back to the key's last showing
"""

from __future__ import annotations

import string
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from course.checks import expect_ids
from course.data.chars import CharVocab

__all__ = [
    "IGNORE",
    "KeyValueTask",
    "key_value_batch",
    "key_value_batches",
    "pair_lags",
    "key_value_lines",
    "read_key_value_lines",
]

IGNORE = -100  # the target id that cross_entropy skips (the positions with nothing to predict)


@dataclass(frozen=True)
class KeyValueTask:
    """Keys are the first ``num_keys`` lower-case letters, values the first ``num_values``
    digits; a sequence holds ``num_pairs`` key-value pairs (2 ``num_pairs`` characters)."""

    num_keys: int = 4
    num_values: int = 10
    num_pairs: int = 12

    def __post_init__(self) -> None:
        if not 1 <= self.num_keys <= 26:
            raise ValueError(f"num_keys: expected 1 to 26 (the letters a-z), got {self.num_keys}")
        if not 2 <= self.num_values <= 10:
            raise ValueError(
                f"num_values: expected 2 to 10 (the digits 0-9), got {self.num_values}"
            )
        if self.num_pairs < 1:
            raise ValueError(f"num_pairs: expected at least 1, got {self.num_pairs}")

    @property
    def keys(self) -> str:
        return string.ascii_lowercase[: self.num_keys]

    @property
    def values(self) -> str:
        return string.digits[: self.num_values]

    @property
    def vocab(self) -> CharVocab:
        """The characters of the keys and values (id 0 is CharVocab's unknown character)."""
        return CharVocab.from_text(self.keys + self.values)

    @property
    def seq_len(self) -> int:
        return 2 * self.num_pairs

    @property
    def chance(self) -> float:
        """Accuracy of a blind guess: 1 / num_values."""
        return 1.0 / self.num_values


def key_value_batch(
    batch_size: int,
    task: KeyValueTask = KeyValueTask(),
    *,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` sequences, each with its own random mapping of keys to values.

    Returns ids (B, 2n) in ``task.vocab`` (keys at even positions, each followed by its value)
    and targets (B, 2n): at a key's position the id of its value (the next token, which a
    GPT's logits at that position score), IGNORE at the values' positions (the next key is
    random). Train with ``GPT.loss`` on (ids, targets).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size: expected at least 1, got {batch_size}")
    n, vocab = task.num_pairs, task.vocab
    mapping = torch.randint(task.num_values, (batch_size, task.num_keys), generator=generator)
    keys = torch.randint(task.num_keys, (batch_size, n), generator=generator)  # (B, n)
    values = mapping.gather(1, keys)  # (B, n): each key's value under its sequence's mapping
    key_ids = vocab.encode(task.keys)[keys]  # (B, n)
    value_ids = vocab.encode(task.values)[values]  # (B, n)
    ids = torch.stack([key_ids, value_ids], dim=2).flatten(1)  # (B, n, 2) -> (B, 2n)
    targets = torch.full_like(ids, IGNORE)
    targets[:, 0::2] = value_ids  # the logits at a key predict the value after it
    return ids, targets


def key_value_batches(
    batch_size: int, task: KeyValueTask = KeyValueTask(), *, seed: int = 0
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Endless fresh batches of :func:`key_value_batch`, reproducible from ``seed``."""
    if batch_size < 1:
        raise ValueError(f"batch_size: expected at least 1, got {batch_size}")
    generator = torch.Generator().manual_seed(seed)
    while True:
        yield key_value_batch(batch_size, task, generator=generator)


def pair_lags(ids: torch.Tensor, task: KeyValueTask = KeyValueTask()) -> torch.Tensor:
    """How many pairs back each pair's key was last shown in its sequence: (B, 2n) -> (B, n).

    0 for a key's first showing (its value is nowhere in the context), 1 when the pair just
    before had the same key, and so on. A function of the sequence alone.
    """
    dims = expect_ids(ids, len(task.vocab), "ids")
    if ids.dim() != 2 or dims["T"] % 2:
        raise ValueError(f"ids: expected (B, 2 * num_pairs) key-value ids, got {tuple(ids.shape)}")
    keys = ids[:, 0::2]  # (B, n)
    n = keys.shape[1]
    same = keys[:, :, None] == keys[:, None, :]  # (B, n, n): pair i's key is pair j's key
    earlier = torch.ones(n, n, dtype=torch.bool).tril(diagonal=-1)  # j < i
    index = torch.arange(n)
    last = torch.where(same & earlier, index, -1).amax(dim=2)  # (B, n): last earlier j, or -1
    return torch.where(last >= 0, index - last, 0)


def key_value_lines(ids: torch.Tensor, task: KeyValueTask = KeyValueTask()) -> str:
    """Sequences (B, 2n) as text, one per line (how a checkpoint stores its held-out set)."""
    expect_ids(ids, len(task.vocab), "ids")
    return "\n".join(task.vocab.decode(row) for row in ids)


def read_key_value_lines(text: str, task: KeyValueTask = KeyValueTask()) -> torch.Tensor:
    """The sequences of :func:`key_value_lines` back as ids (B, 2n), after checking that each
    line is ``num_pairs`` pairs of a key and a value, and that no key has two values in it."""
    lines = text.splitlines()
    if not lines:
        raise ValueError("text: expected at least one line of key-value pairs")
    keys, values = set(task.keys), set(task.values)
    for number, line in enumerate(lines, 1):
        if len(line) != task.seq_len:
            raise ValueError(f"line {number}: expected {task.seq_len} characters, got {len(line)}")
        if not (set(line[0::2]) <= keys and set(line[1::2]) <= values):
            raise ValueError(
                f"line {number}: expected keys from {task.keys!r} at even positions and values "
                f"from {task.values!r} at odd ones, got {line!r}"
            )
        if len(set(zip(line[0::2], line[1::2], strict=True))) != len(set(line[0::2])):
            raise ValueError(f"line {number}: a key has two values in {line!r}")
    return torch.stack([task.vocab.encode(line) for line in lines])
