"""tests/messages.py's ``raises``: the error's type, then each phrase somewhere in its message, in
any order; a missing phrase fails the test and shows the message, and so does no error at all."""

from __future__ import annotations

import pytest

from tests.messages import raises

MESSAGE = "hs: expected 2 dimensions (T, D), got 1 dimensions (5,)"


def _fail(error: BaseException | None = None) -> None:
    raise error or ValueError(MESSAGE)


def test_the_phrases_may_come_in_any_order_and_the_error_is_given_back():
    with raises(ValueError, r"\(5,\)", "2 dimensions", "hs") as info:
        _fail()
    assert info.type is ValueError
    assert str(info.value) == MESSAGE


def test_a_missing_phrase_fails_listing_it_and_showing_the_message():
    with pytest.raises(AssertionError) as failure:
        with raises(ValueError, "hs", "3 dimensions", r"\(4,\)"):
            _fail()
    said = str(failure.value)
    assert "'3 dimensions'" in said and r"'\\(4,\\)'" in said
    assert "'hs'" not in said  # the phrase the message does say is not listed
    assert said.endswith(MESSAGE)


def test_the_phrases_are_regular_expressions_searched_in_the_message_and_its_notes():
    error = ValueError(MESSAGE)
    error.add_note("see lecture 3")
    with raises(ValueError, r"got \d dimensions", "lecture 3"):
        _fail(error)
    with pytest.raises(AssertionError, match="lecture 4"):
        with raises(ValueError, "lecture 4"):
            _fail(error)


def test_no_error_fails_and_so_does_another_type():
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        with raises(ValueError, "hs"):
            pass
    with pytest.raises(TypeError, match="hs"):  # not caught: a TypeError is not a ValueError
        with raises(ValueError, "hs"):
            _fail(TypeError(MESSAGE))


def test_a_check_must_name_at_least_one_phrase():
    with pytest.raises(TypeError, match="at least one phrase"):
        with raises(ValueError):
            _fail()
