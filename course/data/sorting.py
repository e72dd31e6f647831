"""A generated task that no left-to-right reading solves step by step: sort the digits.

    "three one four one five nine two six"  ->  "11234569"

A source is 5 to 30 digit words, each drawn uniformly; the target is the same digits in
ascending order. Each output character depends on the whole input at once (how many smaller
digits there are, anywhere), not on a source position that moves along with the output, which
is what sets Lecture 6's Transformer apart from Lecture 4's recurrent encoder–decoder. About
one source in ten (by a hash of its digits) is held out of training ("test").
"""

from __future__ import annotations

import random

from course.data.dates import ONES
from course.data.translation import Pair, WordsToCharacters, stable_hash

__all__ = ["SortTask"]

HELDOUT_SHARE = 10


class SortTask(WordsToCharacters):
    """Digit words -> the digits sorted; splits "train" and "test" (held-out sources).

    shortest, longest: the range of source lengths, in words (each length equally likely).
    """

    name = "sort-digits"

    def __init__(self, shortest: int = 5, longest: int = 30) -> None:
        if not 1 <= shortest <= longest:
            raise ValueError(f"expected 1 <= shortest <= longest, got {shortest}, {longest}")
        self.shortest, self.longest = shortest, longest
        super().__init__(ONES, "0123456789")

    def _pair(self, rng: random.Random, split: str) -> Pair:
        while True:
            n = rng.randint(self.shortest, self.longest)
            digits = "".join(str(rng.randrange(10)) for _ in range(n))
            if (stable_hash(digits) % HELDOUT_SHARE == 0) == (split == "test"):
                return [ONES[int(d)] for d in digits], "".join(sorted(digits))
