"""``raises``: a test of an error names what the message must say, not the sentence that says it.

An error's message names the quantity (an argument, a shape, a value, a position, a file) and
what is wrong with it. A test checks those, each a word or a few, in any order, so that it
still passes when the message is reworded and fails when the message stops naming them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

__all__ = ["raises"]


@contextmanager
def raises(
    expected: type[BaseException] | tuple[type[BaseException], ...], *says: str
) -> Iterator[pytest.ExceptionInfo]:
    """Like ``pytest.raises(expected)``, and then each of ``says`` (a regular expression: the
    quantity, the value or the fault, a word or a few) must be found in the message, in any
    order: what it names, not its wording. Yields pytest's ExceptionInfo.

    The message is what ``pytest.raises(match=...)`` searches: the exception's text and its
    notes, if any.
    """
    __tracebackhide__ = True
    if not says:
        raise TypeError("raises() needs at least one phrase the message must say")
    with pytest.raises(expected) as info:
        yield info
    message = "\n".join([str(info.value), *getattr(info.value, "__notes__", ())])
    missing = [phrase for phrase in says if not re.search(phrase, message)]
    if missing:
        listed = ", ".join(repr(phrase) for phrase in missing)
        raise AssertionError(
            f"the {info.typename}'s message does not say {listed}; it says:\n{message}"
        )
