"""What the generated translation tasks of Unit 4 share: words in, characters out.

A task subclasses :class:`WordsToCharacters`, sets ``source_vocab`` and ``target_vocab``
(both starting with ``<pad>``, ``<s>``, ``</s>``, ids 0, 1, 2) and writes ``_pair(rng,
split)``, one (source words, target string) pair. Sampling, encoding and batching are here::

    pairs = task.sample(1000, split="test", seed=0)   # [(["nineteen", ...], "1914-07-13"), ...]
    src, src_len, tgt = task.batch(pairs)              # padded id tensors
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Sequence

import torch

__all__ = ["PAD", "BOS", "EOS", "SPECIALS", "Pair", "WordsToCharacters", "stable_hash"]

PAD, BOS, EOS = "<pad>", "<s>", "</s>"
SPECIALS = (PAD, BOS, EOS)  # ids 0, 1, 2 in both vocabularies
Pair = tuple[list[str], str]


def stable_hash(text: str) -> int:
    """A hash that is the same in every run and on every machine (Python's ``hash`` is not)."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


class WordsToCharacters:
    """Vocabularies, sampling, encoding and batching of a words -> characters task."""

    name = "task"
    splits: tuple[str, ...] = ("train", "test")
    pad_id, bos_id, eos_id = 0, 1, 2

    def __init__(self, source_words: Sequence[str], target_chars: Sequence[str]) -> None:
        self.source_vocab = [*SPECIALS, *source_words]
        self.target_vocab = [*SPECIALS, *target_chars]
        self._src_ids = {w: i for i, w in enumerate(self.source_vocab)}
        self._tgt_ids = {c: i for i, c in enumerate(self.target_vocab)}

    def _pair(self, rng: random.Random, split: str) -> Pair:
        raise NotImplementedError

    def sample(self, n: int, split: str = "train", seed: int = 0) -> list[Pair]:
        """``n`` (source words, target) pairs of a split, the same for the same ``seed``."""
        if split not in self.splits:
            raise ValueError(f"split is one of {self.splits}, got {split!r}")
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        rng = random.Random(f"{self.name}-{split}-{seed}")
        return [self._pair(rng, split) for _ in range(n)]

    def encode_source(self, words: Sequence[str]) -> list[int]:
        unknown = [w for w in words if w not in self._src_ids]
        if unknown:
            raise KeyError(f"words outside the source vocabulary: {unknown}")
        return [self._src_ids[w] for w in words]

    def encode_target(self, text: str) -> list[int]:
        """``[<s>, the characters of text, </s>]``."""
        unknown = [c for c in text if c not in self._tgt_ids]
        if unknown:
            raise KeyError(f"characters outside the target vocabulary: {unknown}")
        return [self.bos_id, *(self._tgt_ids[c] for c in text), self.eos_id]

    def decode_target(self, ids: Sequence[int]) -> str:
        """Characters up to the first </s>, specials dropped."""
        out = []
        for i in ids:
            if i == self.eos_id:
                break
            if i >= len(SPECIALS):
                out.append(self.target_vocab[i])
        return "".join(out)

    def batch(self, pairs: Sequence[Pair]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Padded ``(source ids (B, m), source lengths (B,), target ids (B, T))``."""
        if not pairs:
            raise ValueError("cannot batch an empty list of pairs")
        sources = [self.encode_source(words) for words, _ in pairs]
        targets = [self.encode_target(text) for _, text in pairs]
        lengths = torch.tensor([len(s) for s in sources])
        src = torch.full((len(pairs), int(lengths.max())), self.pad_id, dtype=torch.long)
        tgt = torch.full((len(pairs), max(map(len, targets))), self.pad_id, dtype=torch.long)
        for row, (ids, target) in enumerate(zip(sources, targets, strict=True)):
            src[row, : len(ids)] = torch.tensor(ids)
            tgt[row, : len(target)] = torch.tensor(target)
        return src, lengths, tgt

    def batches(
        self, batch_size: int = 64, seed: int = 0
    ) -> Iterator[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
        """Endless fresh training batches (a new draw each time)."""
        step = 0
        while True:
            yield self.batch(self.sample(batch_size, "train", seed=seed * 1_000_003 + step))
            step += 1
