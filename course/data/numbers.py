"""A generated translation task whose information grows with its length: numbers in words to
digits.

    "four hundred and ninety eight thousand and fifty five"  ->  "498055"

Numbers run from 1 to 999,999, with a number of digits drawn uniformly from 1 to 6, so short
and long sources are equally common; sources run from 1 to 11 words. Unlike the dates, output
and input go in the same order; what grows with the source's length is how much the encoder
must pass on, which is what shows the bottleneck of an encoder–decoder without attention.
About one number in ten (by a hash of the number) is held out of training ("test").
"""

from __future__ import annotations

import random

from course.data.dates import ONES, TEENS, TENS, number_words
from course.data.translation import Pair, WordsToCharacters, stable_hash

__all__ = ["NumberTask", "in_words", "LARGEST"]

LARGEST = 999_999
HELDOUT_SHARE = 10


def _below_thousand(n: int) -> list[str]:
    hundreds, rest = divmod(n, 100)
    words = [ONES[hundreds], "hundred"] if hundreds else []
    if rest:
        words += (["and"] if hundreds else []) + number_words(rest)
    return words


def in_words(n: int) -> list[str]:
    """1..999,999 in British English words: 498055 -> "four hundred and ninety eight thousand
    and fifty five"."""
    if not isinstance(n, int) or not 1 <= n <= LARGEST:
        raise ValueError(f"numbers run from 1 to {LARGEST:,}, got {n!r}")
    thousands, rest = divmod(n, 1000)
    words = _below_thousand(thousands) + ["thousand"] if thousands else []
    if rest:
        words += (["and"] if thousands and rest < 100 else []) + _below_thousand(rest)
    return words


class NumberTask(WordsToCharacters):
    """Numbers in words -> digits; splits "train" and "test" (held-out numbers)."""

    name = "numbers"

    def __init__(self) -> None:
        words = {*ONES[1:], *TEENS, *TENS[2:], "hundred", "thousand", "and"}
        super().__init__(sorted(words), "0123456789")

    def _pair(self, rng: random.Random, split: str) -> Pair:
        while True:
            digits = rng.randint(1, 6)
            n = rng.randint(10 ** (digits - 1), 10**digits - 1)
            if (stable_hash(str(n)) % HELDOUT_SHARE == 0) == (split == "test"):
                return in_words(n), str(n)
