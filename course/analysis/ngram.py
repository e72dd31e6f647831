"""Word n-gram language models with interpolated Kneser–Ney smoothing: the baseline a neural
word-level language model has to beat (Unit 3 on).

For order n, with a discount d (0 < d < 1) and N₁₊(·) the number of distinct words seen in a
slot, the highest order uses counts and every lower order uses continuation counts
(how many distinct words precede the n-gram):

    P(w | u) = max(c(u w) - d, 0) / c(u ·)  +  d · N₁₊(u ·) / c(u ·) · P(w | u')

where u' is u without its first word; at the bottom, P(w) = N₁₊(· w) / N₁₊(· ·) mixed with
the uniform distribution over the vocabulary so that no word gets probability 0. A context
never seen backs off entirely to the lower order.

Counting is vectorised: each n-gram of word ids becomes one int64 key, counted with
``numpy.unique``, and looked up with ``numpy.searchsorted``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

__all__ = ["KneserNey", "perplexity_both_ways"]


class KneserNey:
    """An interpolated Kneser–Ney n-gram model over sentences of word ids.

    sentences: sequences of ids in [0, vocab_size), each starting with the sentence-start id
    (<s>), which is context only and never predicted, and ending with the sentence-end id.
    Contexts that reach before the sentence see more copies of its first id.
    """

    def __init__(
        self,
        sentences: Sequence[Sequence[int]],
        vocab_size: int,
        order: int = 3,
        discount: float = 0.75,
    ) -> None:
        if order < 1:
            raise ValueError(f"order: expected 1 or more, got {order}")
        if not 0 < discount < 1:
            raise ValueError(f"discount: expected a number in (0, 1), got {discount}")
        if vocab_size < 1 or float(vocab_size) ** order >= 2.0**62:
            raise ValueError(f"vocab_size {vocab_size} with order {order}: keys overflow int64")
        self.order, self.discount, self.V = order, discount, vocab_size
        grams = [self._grams(sentences, k) for k in range(1, order + 1)]
        if not len(grams[0]):
            raise ValueError("sentences: expected at least one predicted token to count")
        # One table per order k = 1..n: sorted keys, their counts (plain counts at the top
        # order, continuation counts below), and per context its total and its number of types.
        self.tables = []
        for k in range(1, order + 1):
            if k == order:
                keys, counts = np.unique(grams[k - 1], return_counts=True)
            else:  # N₁₊(· g): distinct words seen before the k-gram g
                keys, counts = np.unique(np.unique(grams[k]) % vocab_size**k, return_counts=True)
            contexts, index = np.unique(keys // vocab_size, return_inverse=True)
            totals = np.bincount(index, weights=counts)  # c(u ·), or its continuation version
            types = np.bincount(index).astype(np.float64)  # N₁₊(u ·)
            self.tables.append((keys, counts.astype(np.float64), contexts, totals, types))

    def _grams(self, sentences: Sequence[Sequence[int]], k: int) -> np.ndarray:
        """Keys of the k-grams that end at every predicted token (each sentence's 2nd on)."""
        pad = self.order - 1
        lengths = np.fromiter((len(s) for s in sentences), dtype=np.int64, count=len(sentences))
        if not len(lengths) or lengths.min() < 1:
            raise ValueError("sentences: expected non-empty sequences of ids")
        flat = np.fromiter(itertools.chain.from_iterable(sentences), dtype=np.int64)
        if flat.min() < 0 or flat.max() >= self.V:
            row = int(np.repeat(np.arange(len(lengths)), lengths)[(flat < 0) | (flat >= self.V)][0])
            raise ValueError(f"sentence {row}: ids must lie in [0, {self.V})")
        # One flat stream: each sentence preceded by `pad` copies of its first id.
        starts = np.cumsum(lengths) - lengths  # where each sentence starts in `flat`
        padded = lengths + pad
        stream = np.repeat(flat[starts], padded)  # the padding everywhere, then the words
        offset = np.arange(len(stream)) - np.repeat(np.cumsum(padded) - padded, padded)
        stream[offset >= pad] = flat
        predicted = np.flatnonzero(offset >= pad + 1)  # every word after each sentence's first
        keys = np.zeros(len(predicted), dtype=np.int64)
        for i in range(k):  # the word i places before the predicted one, weighted by V**i
            keys += stream[predicted - i] * self.V**i
        return keys

    def _prob(self, keys: np.ndarray, k: int) -> np.ndarray:
        """P(w | the k - 1 words before it) for keys of k-grams."""
        if k == 0:
            return np.full(len(keys), 1.0 / self.V)
        gram_keys, counts, contexts, totals, types = self.tables[k - 1]
        lower = self._prob(keys % self.V ** (k - 1), k - 1)
        c = _lookup(gram_keys, counts, keys)
        context = keys // self.V
        total = _lookup(contexts, totals, context)
        n_types = _lookup(contexts, types, context)
        seen = total > 0
        total = np.where(seen, total, 1.0)
        d = self.discount
        p = np.maximum(c - d, 0.0) / total + d * n_types / total * lower
        return np.where(seen, p, lower)

    def log_probs(self, sentences: Sequence[Sequence[int]]) -> np.ndarray:
        """Natural-log probability of every predicted token (all but each sentence's first)."""
        return np.log(self._prob(self._grams(sentences, self.order), self.order))

    def perplexity(self, sentences: Sequence[Sequence[int]]) -> float:
        """exp of the mean negative log-likelihood per predicted token."""
        return math.exp(-float(self.log_probs(sentences).mean()))


def _lookup(keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
    """values[keys == query] where the key exists, else 0."""
    if not len(keys):
        return np.zeros(len(query))
    at = np.minimum(np.searchsorted(keys, query), len(keys) - 1)
    return np.where(keys[at] == query, values[at], 0.0)


def perplexity_both_ways(
    train: Sequence[Sequence[int]], test: Sequence[Sequence[int]], vocab_size: int, order: int
) -> dict[str, float]:
    """Held-out perplexity of a forward and a backward :class:`KneserNey` model of ``order``:
    the backward one counts and reads every sentence reversed, as a biLM's backward reader does.
    Sentences of ids, each with <s> first and </s> last (reversed, </s> is the context)."""
    forward = KneserNey(train, vocab_size, order).perplexity(test)
    backward = KneserNey([s[::-1] for s in train], vocab_size, order).perplexity(
        [s[::-1] for s in test]
    )
    return {"forward": forward, "backward": backward}
