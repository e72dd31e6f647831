"""What the tests of the hidden checks (``test_aN_hidden_checks.py``) share.

Each of those files writes its assignment's functions again, independently, with one switch
per plausible bug, and asserts that the hidden checks and the visible tests reject each bug.
Here, once: the reference namespace and the visible test cells of an assignment
(:func:`run_visible`), and the assertions on a rejection:

- :class:`Failure` and :func:`expect_failure`: which case failed and what quantity the
  message names, as short key phrases, not whole sentences, so that a hint reworded in
  ``autograder/hidden`` or in a visible test cell changes no test here;
- :func:`expect_shortcut`: a trapped routine, named with the student's function;
- :func:`expect_traps`: the routines an assignment must trap are trapped, each once;
- :func:`row_id`: readable ids for the tables of bugs (``stable=False-probs contains nan``);
- :func:`visible_mistake_tests` and :func:`shortcut_tests`: the two tests that every file
  writes as a table, made from the table;
- :func:`expect_new_tables`: the case tables of a visible check are built afresh at each call
  (:func:`arrays_in` finds the arrays of a case's input);
- :func:`expect_bad_cases_refused`: a visible check's calls on bad input make the reference
  raise ValueError;
- :func:`heads_attention`: the attention of each head, with bug switches, which the independent
  implementations of Assignment 5 (multi-head attention) and 6 (an encoder layer) share.
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import types
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import pytest

from autograder.hidden.shortcuts import ShortcutUsed
from tests.grading.solution_loader import Solution, as_student, load_solution, run_cell


@functools.cache
def solution(assignment: str) -> Solution:
    return load_solution(assignment)


@functools.cache
def reference_namespace(assignment: str) -> dict[str, Any]:
    """The names the reference solution's code cells define (run once per assignment)."""
    with contextlib.redirect_stdout(io.StringIO()):  # the exploration cells print
        return solution(assignment).namespace()


def run_visible(assignment: str, grade_id: str, **functions: Any) -> None:
    """Run the visible test cell ``grade_id`` with ``functions`` in place of the reference's."""
    cell = solution(assignment).test_cells[grade_id]
    run_cell(cell.visible_source, {**reference_namespace(assignment), **functions}, grade_id)


# -- how a rejection must read ----------------------------------------------------------------


class Failure:
    """Where a check must fail and what its message must name.

    ``case``: a regular expression found in the case label, the ``[...]`` that ``Case.named``
    (``course.checks.cases.case``) puts before the message of a hidden or visible case; None
    where the message has no label (a visible test not written as cases, or bad input that a
    check tries outside its cases).
    ``says``: regular expressions, each found in the message after the label: the quantity
    and what is wrong with it (``dW differs``, ``probs contains nan``, ``should raise
    ValueError``), or the detail that identifies the bug (a position, the tokens returned).
    """

    def __init__(self, case: str | None, *says: str):
        assert says, "name at least the quantity"
        self.case = case
        self.says = says

    def __repr__(self) -> str:
        return f"Failure({', '.join(map(repr, (self.case, *self.says)))})"

    def mismatch(self, message: str) -> str | None:
        """What ``message`` fails to say, or None if it says all of it."""
        label, rest = case_label(message)
        if self.case is None and label is not None:
            return f"the failure should come outside the hidden cases, not in [{label}]"
        if self.case is not None and (label is None or not re.search(self.case, label)):
            return f"the failure should be in the case {self.case!r}, not in {label!r}"
        missing = [phrase for phrase in self.says if not re.search(phrase, rest)]
        return f"the message should say {missing}" if missing else None


def case_label(message: str) -> tuple[str | None, str]:
    """(the case label without its brackets, the rest of the message); (None, message) if the
    message does not start with a label. A label may hold brackets of its own."""
    if not message.startswith("["):
        return None, message
    depth = 0
    for index, char in enumerate(message):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth == 0:
            return message[1:index], message[index + 1 :].lstrip()
    return None, message


def expect_failure(run: Callable[[], Any], failure: Failure) -> str:
    """``run()`` must raise AssertionError as ``failure`` says; return the message."""
    with pytest.raises(AssertionError) as caught:
        run()
    message = str(caught.value)
    wrong = failure.mismatch(message)
    assert wrong is None, f"{wrong}; the message was:\n{message}"
    return message


def expect_shortcut(run: Callable[[], Any], name: str, called: str) -> None:
    """``run()`` must raise ShortcutUsed: the student's function ``name`` called the trapped
    routine ``called`` (a regular expression, e.g. with ``\\(and caught the error\\)``)."""
    with pytest.raises(ShortcutUsed, match=f"{re.escape(name)} must .*; it called {called}"):
        run()


def expect_traps(hidden: types.ModuleType, required: Iterable[str]) -> None:
    """The assignment's hidden module traps every routine in ``required``, each target once."""
    targets = hidden.shortcut_targets()
    labels = [label for _, _, label in targets]
    assert set(required) <= set(labels), sorted(set(required) - set(labels))
    pairs = [(id(owner), attribute) for owner, attribute, _ in targets]
    assert len(pairs) == len(set(pairs)), "a target is listed twice"


def row_id(value: Any) -> str | None:
    """The id of a table row's value: a dict as ``name=value`` (a bug switch) or ``name`` (a
    function put in the student's place), a Failure by what it says first; anything else as
    pytest names it. Ids hold no object addresses, so they are the same in every run."""
    if isinstance(value, dict):
        return (
            ",".join(
                f"{name}={item}" if isinstance(item, (bool, int, float, str, tuple)) else name
                for name, item in value.items()
            )
            or "none"
        )
    if isinstance(value, Failure):
        return value.says[0]
    return None


# -- tests made from a table -------------------------------------------------------------------


def visible_mistake_tests(assignment: str, rows: list[tuple[str, dict, Failure]]) -> Callable:
    """The test that each visible test cell names the mistake: for each row (grade_id,
    functions, failure), the cell run with ``functions`` in place of the reference's fails as
    ``failure`` says. Assign it to a ``test_`` name in the assignment's test file."""

    @pytest.mark.parametrize(("grade_id", "functions", "failure"), rows, ids=row_id)
    def test(grade_id: str, functions: dict, failure: Failure) -> None:
        with np.errstate(all="ignore"):
            expect_failure(lambda: run_visible(assignment, grade_id, **functions), failure)

    return test


def shortcut_tests(rows: list[tuple[Callable, Callable, str, str]]) -> Callable:
    """The test that each check rejects a shortcut: for each row (check, implementation, name,
    called), ``check`` given ``implementation`` as the student's function ``name`` raises
    ShortcutUsed for calling ``called``. Assign it to a ``test_`` name."""

    @pytest.mark.parametrize(("check", "implementation", "name", "called"), rows)
    def test(check: Callable, implementation: Callable, name: str, called: str) -> None:
        with np.errstate(all="ignore"):
            expect_shortcut(lambda: check(as_student(implementation, name)), name, called)

    return test


# -- the case tables of the visible checks ------------------------------------------------------


def arrays_in(value: Any) -> list[np.ndarray]:
    """The NumPy arrays in ``value`` (a case's input), through dicts, lists and tuples."""
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [array for item in value for array in arrays_in(item)]
    return []


def expect_new_tables(*tables: Callable[[], list[Any]]) -> None:
    """Each function builds its table of Cases afresh at every call, with the same values and
    no array shared with another call's (a student's function that writes into its inputs
    cannot spoil the next check), and the labels of a table are distinct."""
    for table in tables:
        first, second = table(), table()
        labels = [case.label for case in first]
        assert labels and len(set(labels)) == len(labels), (table.__name__, labels)
        assert [case.label for case in second] == labels, table.__name__
        for one, two in zip(first, second, strict=True):
            assert list(one.inputs) == list(two.inputs), one.label
            for name in one.inputs:
                old, new = arrays_in(one.inputs[name]), arrays_in(two.inputs[name])
                assert len(old) == len(new), (one.label, name)
                for a, b in zip(old, new, strict=True):
                    assert not np.shares_memory(a, b), f"{one.label}: {name} is shared"
                    np.testing.assert_array_equal(a, b, err_msg=f"{one.label}: {name}")


def expect_bad_cases_refused(
    tables: Iterable[Callable[[], list[Any]]], functions: dict[str, Callable[..., Any]]
) -> None:
    """Every call of the tables of bad inputs (Cases with ``function`` and ``args``, labelled
    with the call as it reads) makes the reference of that function raise ValueError."""
    for table in tables:
        for bad in table():
            assert bad.label.startswith(f"{bad.function}("), bad.label
            with pytest.raises(ValueError):
                functions[bad.function](*bad.args)


# -- a piece that two assignments' independent implementations share ---------------------------


def heads_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    h: int,
    mask: Any = None,
    *,
    scale_by_d_model: bool = False,
    wrong_split: bool = False,
    torch_mask_convention: bool = False,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Scaled dot-product attention of each of ``h`` heads, one loop turn per head.

    q, k, v: (..., n, d) projections; head r reads columns r d_k .. (r + 1) d_k - 1, d_k = d / h.
    mask: True = may attend, broadcast to (..., n, m). Returns (outputs, weights), one
    (..., n, d_k) and one (..., n, m) array per head. The switches: divide by sqrt(d) instead
    of sqrt(d_k); split by a reshape that does not move the head axis; read the mask the other
    way round (torch's True = blocked).
    """
    d = q.shape[-1]
    d_k = d // h
    outs, weights = [], []
    for r in range(h):
        if wrong_split:  # reshape (n, d) to (h, n, d_k) without moving the head axis
            n = q.shape[-2]

            def cut(a, r=r, n=n):
                return a.reshape(*a.shape[:-2], h, n, d_k)[..., r, :, :]
        else:

            def cut(a, r=r):
                return a[..., r * d_k : (r + 1) * d_k]

        s = cut(q) @ np.swapaxes(cut(k), -1, -2) / np.sqrt(d if scale_by_d_model else d_k)
        if mask is not None:
            keep = np.asarray(mask, dtype=bool)
            s = np.where(~keep if torch_mask_convention else keep, s, -np.inf)
        a = np.exp(s - s.max(-1, keepdims=True))
        a = a / a.sum(-1, keepdims=True)
        outs.append(a @ cut(v))
        weights.append(a)
    return outs, weights
