"""Characters as ids, and windows of a stream of ids: what every character-level model reads.

vocab = CharVocab.from_text(train_text)
train_ids = vocab.encode(train_text)              # (N,) int64
x, y = batch_windows(train_ids, batch_size=32, seq_len=64, generator=g)  # (B, T), (B, T)
batches = random_windows(train_ids, batch_size=32, seq_len=64, seed=0)  # endless, seeded
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import torch

from course.checks import expect_dtype, expect_shape

__all__ = ["CharVocab", "batch_windows", "random_windows"]


@dataclass(frozen=True)
class CharVocab:
    """A character vocabulary. Id 0 is reserved for characters not seen when it was built.

    ``encode`` maps an unseen character to ``UNK_ID`` (or raises KeyError with ``strict=True``)
    and ``decode`` prints ``UNK_ID`` as ``UNK_CHAR`` ("\ufffd"). The other ids follow the
    sorted order of the characters, so the same text always gives the same vocabulary.
    """

    chars: tuple[str, ...]

    UNK_ID = 0
    UNK_CHAR = "\ufffd"

    def __post_init__(self) -> None:
        if len(set(self.chars)) != len(self.chars) or any(len(c) != 1 for c in self.chars):
            raise ValueError("chars: expected distinct single characters")
        object.__setattr__(self, "_index", {c: i + 1 for i, c in enumerate(self.chars)})

    @classmethod
    def from_text(cls, text: str) -> CharVocab:
        """Build the vocabulary of the distinct characters in ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"text: expected a str, got {type(text).__name__}")
        if not text:
            raise ValueError("text: cannot build a vocabulary from an empty string")
        return cls(tuple(sorted(set(text))))

    def __len__(self) -> int:
        """Number of ids, the unknown id included (the V of the logits' last dimension)."""
        return len(self.chars) + 1

    def encode(self, text: str, *, strict: bool = False) -> torch.Tensor:
        """Map a string of length N to a LongTensor of shape (N,)."""
        if not isinstance(text, str):
            raise TypeError(f"text: expected a str, got {type(text).__name__}")
        index: dict[str, int] = self._index  # type: ignore[attr-defined]
        if strict:
            unknown = sorted(set(text) - index.keys())
            if unknown:
                raise KeyError(f"characters not in the vocabulary: {''.join(unknown)!r}")
        return torch.tensor([index.get(c, self.UNK_ID) for c in text], dtype=torch.long)

    def decode(self, ids: torch.Tensor | Sequence[int] | Iterable[int]) -> str:
        """Map ids of shape (N,) back to a string of length N."""
        if isinstance(ids, torch.Tensor):
            expect_shape(ids, (None,), "ids")
            expect_dtype(ids, "iu", "ids")
            ids = ids.tolist()
        out = []
        for i in ids:
            if not 0 <= int(i) < len(self):
                raise ValueError(f"ids: id {int(i)} is outside the vocabulary [0, {len(self)})")
            out.append(self.UNK_CHAR if i == self.UNK_ID else self.chars[int(i) - 1])
        return "".join(out)


def _check_windows(ids: torch.Tensor, batch_size: int, seq_len: int) -> None:
    """Raise a clear error unless ``batch_size`` windows of ``seq_len`` + 1 ids fit in ids (N,)."""
    expect_shape(ids, ("N",), "ids")
    expect_dtype(ids, "iu", "ids")
    if batch_size < 1 or seq_len < 1:
        raise ValueError(f"batch_size and seq_len must be >= 1, got {batch_size} and {seq_len}")
    if len(ids) < seq_len + 1:
        raise ValueError(
            f"ids: need at least seq_len + 1 = {seq_len + 1} ids to cut one window, got {len(ids)}"
        )


def batch_windows(
    ids: torch.Tensor,
    batch_size: int,
    seq_len: int,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Cut ``batch_size`` random windows from a stream of ids, for next-character prediction.

    ids: (N,) integer tensor. Returns inputs x (B, T) and targets y (B, T) with
    ``y[b, t] == ids[start_b + t + 1]``, i.e. y is x shifted left by one character.
    """
    _check_windows(ids, batch_size, seq_len)
    starts = torch.randint(0, len(ids) - seq_len, (batch_size,), generator=generator)  # (B,)
    offsets = torch.arange(seq_len + 1)  # (T+1,)
    windows = ids[starts[:, None] + offsets[None, :]]  # (B, T+1)
    return windows[:, :-1].long(), windows[:, 1:].long()


def random_windows(
    ids: torch.Tensor, batch_size: int, seq_len: int, *, seed: int = 0
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """An endless stream of :func:`batch_windows` batches, x (B, T) and y (B, T).

    The windows come from one generator seeded with ``seed``, so the stream is the same on
    every run. The arguments are checked at once, not at the first batch.
    """
    _check_windows(ids, batch_size, seq_len)
    generator = torch.Generator().manual_seed(seed)

    def stream() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        while True:
            yield batch_windows(ids, batch_size, seq_len, generator)

    return stream()
