"""A generated translation task with reordering: dates written in words to ISO dates.

    "monday thirteenth of july nineteen fourteen"  ->  "1914-07-13"

The source is a sequence of words in one of several surface forms (templates); the target is
the ten characters of the ISO date. Day and month come before the year in every form, and the
ISO date puts the year first, so a model has to reorder. The templates differ in word order and
length, so sources run from 4 to 15 words.

Held-out data comes two ways, both decided by a hash of the date or by the template's name, not
by a random draw, so splits never change:

- held-out *dates* (the "test" split): about one date in ten, never seen in training in any form;
- held-out *surface forms* (the "forms" split): held-out dates in two templates never seen in
  training (``HELDOUT_TEMPLATES``).

    task = DateTask()
    pairs = task.sample(1000, split="test", seed=0)       # [(source words, "YYYY-MM-DD"), ...]
    src, src_len, tgt = task.batch(pairs)                 # padded id tensors
"""

from __future__ import annotations

import datetime
import random

from course.data.translation import Pair, WordsToCharacters, stable_hash

__all__ = [
    "TEMPLATES",
    "HELDOUT_TEMPLATES",
    "FIRST_DAY",
    "LAST_DAY",
    "DateTask",
    "date_in_words",
    "year_in_words",
    "day_in_words",
    "number_words",
]

FIRST_DAY = datetime.date(1700, 1, 1)
LAST_DAY = datetime.date(2099, 12, 31)

ONES = "zero one two three four five six seven eight nine".split()
TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()
ORDINAL_ONES = "_ first second third fourth fifth sixth seventh eighth ninth".split()
ORDINAL_TEENS = (
    "tenth eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth"
    " nineteenth"
).split()
ORDINAL_TENS = {2: "twentieth", 3: "thirtieth"}
MONTHS = (
    "january february march april may june july august september october november december"
).split()
WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()

# {w} weekday, {d} day as an ordinal, {m} month, {y} year. Words are separated by spaces;
# "," is a word too.
TEMPLATES = {
    "d m y": "{d} {m} {y}",
    "w d m y": "{w} {d} {m} {y}",
    "d of m y": "{d} of {m} {y}",
    "the d of m y": "the {d} of {m} {y}",
    "m d , y": "{m} {d} , {y}",
    "w , m d , y": "{w} , {m} {d} , {y}",
    "w the d of m in the year y": "{w} the {d} of {m} in the year {y}",
    "on the d day of m in the year y": "on the {d} day of {m} in the year {y}",
    "w d of m y": "{w} {d} of {m} {y}",
    "m the d y": "{m} the {d} {y}",
}
HELDOUT_TEMPLATES = ("w d of m y", "m the d y")
HELDOUT_DATE_SHARE = 10  # one date in this many is held out


def number_words(n: int) -> list[str]:
    """0..99 as words: "seven", "fourteen", "twenty one"."""
    if n < 10:
        return [ONES[n]]
    if n < 20:
        return [TEENS[n - 10]]
    tens, ones = divmod(n, 10)
    return [TENS[tens]] + ([ONES[ones]] if ones else [])


def day_in_words(day: int) -> list[str]:
    """1..31 as an ordinal: "first", "thirteenth", "twenty first", "thirtieth"."""
    if not 1 <= day <= 31:
        raise ValueError(f"a day of the month is 1 to 31, got {day}")
    if day < 10:
        return [ORDINAL_ONES[day]]
    if day < 20:
        return [ORDINAL_TEENS[day - 10]]
    tens, ones = divmod(day, 10)
    return [ORDINAL_TENS[tens]] if ones == 0 else [TENS[tens], ORDINAL_ONES[ones]]


def year_in_words(year: int, style: int = 0) -> list[str]:
    """A year as it is read aloud; ``style`` picks among the readings a year has.

    1914 "nineteen fourteen", 1905 "nineteen oh five", 1800 "eighteen hundred", 2000 "two
    thousand", 2007 "two thousand seven" or "two thousand and seven", 2019 "twenty nineteen" or
    "two thousand nineteen". ``style`` is taken modulo the number of readings.
    """
    if not FIRST_DAY.year <= year <= LAST_DAY.year:
        raise ValueError(f"years run from {FIRST_DAY.year} to {LAST_DAY.year}, got {year}")
    century, rest = divmod(year, 100)
    if century >= 20:
        readings = [["two", "thousand"] + number_words(rest) if rest else ["two", "thousand"]]
        if 0 < rest:
            readings.append(["two", "thousand", "and"] + number_words(rest))
        if rest >= 10:
            readings.append(["twenty"] + number_words(rest))
    elif rest == 0:
        readings = [number_words(century) + ["hundred"]]
    elif rest < 10:
        readings = [number_words(century) + ["oh", ONES[rest]]]
    else:
        readings = [number_words(century) + number_words(rest)]
    return readings[style % len(readings)]


def date_in_words(date: datetime.date, template: str, year_style: int = 0) -> list[str]:
    """The words of ``date`` in the surface form named ``template`` (a key of TEMPLATES)."""
    if template not in TEMPLATES:
        raise KeyError(f"unknown template {template!r}; the templates are {sorted(TEMPLATES)}")
    fields = {
        "w": WEEKDAYS[date.weekday()],
        "d": " ".join(day_in_words(date.day)),
        "m": MONTHS[date.month - 1],
        "y": " ".join(year_in_words(date.year, year_style)),
    }
    return TEMPLATES[template].format(**fields).split()


def _is_heldout_date(date: datetime.date) -> bool:
    return stable_hash(date.isoformat()) % HELDOUT_DATE_SHARE == 0


class DateTask(WordsToCharacters):
    """Dates in words -> ISO dates; splits "train", "test" (held-out dates) and "forms"
    (held-out dates in held-out surface forms)."""

    name = "dates"
    splits = ("train", "test", "forms")

    def __init__(self) -> None:
        words = set()
        for day in range(1, 32):
            words.update(day_in_words(day))
        for year in range(FIRST_DAY.year, LAST_DAY.year + 1):
            for style in range(3):
                words.update(year_in_words(year, style))
        for template in TEMPLATES.values():
            words.update(w for w in template.split() if not w.startswith("{"))
        words.update(MONTHS + WEEKDAYS)
        super().__init__(sorted(words), "0123456789-")

    def templates(self, split: str) -> list[str]:
        """Templates of a split: "train" and "test" share the seen forms; "forms" holds out."""
        if split == "forms":
            return list(HELDOUT_TEMPLATES)
        if split in ("train", "test"):
            return [t for t in TEMPLATES if t not in HELDOUT_TEMPLATES]
        raise ValueError(f"split is one of {self.splits}, got {split!r}")

    def _pair(self, rng: random.Random, split: str) -> Pair:
        span = (LAST_DAY - FIRST_DAY).days
        date = FIRST_DAY + datetime.timedelta(days=rng.randint(0, span))
        while _is_heldout_date(date) != (split != "train"):
            date = FIRST_DAY + datetime.timedelta(days=rng.randint(0, span))
        words = date_in_words(date, rng.choice(self.templates(split)), rng.randrange(3))
        return words, date.isoformat()
