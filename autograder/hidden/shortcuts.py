"""What every assignment's hidden checks share: traps for shortcuts, cases, input snapshots.

Each assignment's hidden module names the torch routines that would do its work (autograd,
``torch.nn`` layers, ``clip_grad_norm_``...) in one :class:`Traps` and exposes its methods
as ``shortcut_targets``, ``no_shortcuts`` and ``_call_by_hand``::

    TRAPS = shortcuts.Traps((("torch.nn", ("RNN",)), ...))
    shortcut_targets, no_shortcuts, _call_by_hand = TRAPS.methods()

Every public callable of the ``course`` package (every module and subpackage, recursively)
except ``course.checks`` is added to every list. The lists, the walk over ``course`` and the
traps themselves live in ``course.checks.rules``, which the visible tests use to apply the
same rule: the two cannot drift apart. While a student's function runs under
``no_shortcuts``, each target is replaced by a trap that raises :class:`ShortcutUsed`. The
TA grading command sets the same traps in the student's kernel, through ``shortcut_targets()``.

The cases, the checks of returned values and of inputs left unchanged are the kit in
``course.checks.cases`` that the visible checks use too; :func:`expect_value_error` and
:func:`value_error_checker` add the traps to ``course.checks.expect_value_error``, and
:func:`valid_caller` turns a ValueError on valid input into a failed case.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any

from course import checks
from course.checks.rules import Target, collect_targets, trapped


class ShortcutUsed(AssertionError):
    """A checked function called a library routine that does its work for it."""


def function_name(function: Any) -> str:
    return getattr(function, "__name__", None) or type(function).__name__


def no_shortcuts(
    function: Callable[..., Any], duty: str, targets: list[Target]
) -> contextlib.AbstractContextManager[list[str]]:
    """Replace every target by a trap inside the ``with`` block; yield the list of trapped calls.

    Both the owners' attributes (``torch.autograd.grad``) and the names in ``function``'s
    globals bound to a target (``from torch.autograd import grad`` in a notebook) are replaced.
    A trap records its label and raises ShortcutUsed("<name> must <duty>; it called <label>").
    Everything is restored on exit, even after an error (:func:`course.checks.rules.trapped`).
    """
    name = function_name(function)
    return trapped(
        function, targets, lambda label: ShortcutUsed(f"{name} must {duty}; it called {label}")
    )


def call_by_hand(function: Callable[..., Any], duty: str, targets: list[Target], *args: Any) -> Any:
    """Call ``function(*args)`` with every target trapped, even if the function hides the trap."""
    name = function_name(function)
    with no_shortcuts(function, duty, targets) as calls:
        try:
            result = function(*args)
        except ShortcutUsed:
            raise
        except Exception as error:
            if calls:
                raise ShortcutUsed(f"{name} must {duty}; it called {calls[0]}") from error
            raise
    if calls:
        raise ShortcutUsed(f"{name} must {duty}; it called {calls[0]} (and caught the error)")
    return result


class Traps:
    """The traps of one assignment: its own torch routines, plus every course callable.

    ``library`` pairs a dotted owner with attribute names, as for :func:`collect_targets`.
    The list of targets is built at each call, so a module imported since is covered too.
    """

    def __init__(self, library: Iterable[tuple[str, Iterable[str]]]):
        self.library = tuple((owner, tuple(attributes)) for owner, attributes in library)

    def targets(self) -> list[Target]:
        """Every (owner, attribute, label) that :meth:`no_shortcuts` replaces by a trap."""
        return collect_targets(self.library)

    def no_shortcuts(
        self, function: Callable[..., Any], duty: str
    ) -> contextlib.AbstractContextManager[list[str]]:
        """Inside the ``with`` block every shortcut is a trap (see :func:`no_shortcuts`)."""
        return no_shortcuts(function, duty, self.targets())

    def call_by_hand(self, function: Callable[..., Any], duty: str, *args: Any) -> Any:
        """``function(*args)`` with every shortcut trapped, even if the function hides the trap."""
        return call_by_hand(function, duty, self.targets(), *args)

    def methods(self) -> tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]:
        """(targets, no_shortcuts, call_by_hand), to bind as an assignment module's names."""
        return self.targets, self.no_shortcuts, self.call_by_hand


def expect_value_error(
    run: Callable[[], Any], call: str, *, says: tuple[str, str] | None = None
) -> None:
    """``run()`` (a student's function called by hand) must raise ValueError:
    ``course.checks.expect_value_error`` for one call described by ``call``, its message
    starting with the call, a trapped shortcut reported as such."""
    checks.expect_value_error({call: run}, says=says, passing=(ShortcutUsed,), prefix="")


def value_error_checker(
    call_by_hand: Callable[..., Any],
) -> Callable[..., None]:
    """``check(function, duty, call, *args, says=None)``: :func:`expect_value_error` for
    ``call_by_hand(function, duty, *args)``, bound to an assignment's traps."""

    def check(
        function: Callable[..., Any],
        duty: str,
        call: str,
        *args: Any,
        says: tuple[str, str] | None = None,
    ) -> None:
        expect_value_error(lambda: call_by_hand(function, duty, *args), call, says=says)

    return check


def valid_caller(call_by_hand: Callable[..., Any]) -> Callable[..., Any]:
    """``call(function, duty, *args)``: ``call_by_hand(function, duty, *args)`` for input that
    is valid, so a ValueError fails the case (named by the surrounding :func:`case`) instead of
    escaping as an error of the test cell."""

    def call(function: Callable[..., Any], duty: str, *args: Any) -> Any:
        try:
            return call_by_hand(function, duty, *args)
        except ShortcutUsed:
            raise
        except ValueError as error:
            name = function_name(function)
            raise AssertionError(
                f"{name} raised ValueError({str(error)!r}) for valid input"
            ) from error

    return call
