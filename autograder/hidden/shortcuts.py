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

Every hidden case is a :class:`Case`: a label and its inputs by name, built as
``Case("one row, τ = 1", logits=..., temperature=1.0)`` and read as ``case.logits``; every
list of hidden cases (``temperature_cases()``, ``SCORE_CASES``...) holds Cases. Inside
``with case.named("temperature_probs"):`` a failure reads ``[temperature_probs, one row, τ = 1]
...`` (``case.named(function, *details)`` adds details after the label); :func:`case` prefixes
a message with any description, such as a call that labels its own case.

:func:`snapshot` and :func:`expect_unchanged` catch a function that writes into its inputs;
:func:`expect_value_error` checks that bad input is refused with a ValueError (and, optionally,
a message that says what is wrong).
"""

from __future__ import annotations

import contextlib
import numbers
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

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


class Case:
    """One hidden case: the label that failure messages name it by, and its inputs by name.

    ``Case(label, **inputs)``; ``case.label`` and ``case.<input>`` read them back (an unknown
    name raises AttributeError listing the inputs), ``case.inputs`` is the read-only mapping.
    :meth:`named` is the :func:`case` context of one checked function on this case.
    """

    __slots__ = ("label", "inputs")
    label: str
    inputs: Mapping[str, Any]

    def __init__(self, label: str, /, **inputs: Any) -> None:
        object.__setattr__(self, "label", label)
        object.__setattr__(self, "inputs", types.MappingProxyType(inputs))

    def __getattr__(self, name: str) -> Any:  # only names that are not label or inputs
        inputs = object.__getattribute__(self, "inputs")
        if name in inputs:
            return inputs[name]
        label = object.__getattribute__(self, "label")
        raise AttributeError(f"case {label!r} has no input {name!r}; it has {', '.join(inputs)}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a Case is read-only; build another to set {name!r}")

    def __repr__(self) -> str:
        return f"Case({self.label!r}, {', '.join(self.inputs)})"

    def named(self, function: str, *details: str) -> contextlib.AbstractContextManager[None]:
        """:func:`case` for ``function`` on this case: a failure inside the block reads
        ``[function, label, *details] message``."""
        return case(", ".join((function, self.label, *details)))


@contextlib.contextmanager
def case(description: str) -> Iterator[None]:
    """Prefix the message of any AssertionError raised inside the block with the case."""
    try:
        yield
    except AssertionError as error:
        message = f"[{description}] {error}"
        try:
            prefixed = type(error)(message)
        except Exception:  # noqa: BLE001
            prefixed = AssertionError(message)
        raise prefixed.with_traceback(error.__traceback__) from None


def strided(array: np.ndarray) -> np.ndarray:
    """The same values, as a view that is not contiguous in memory."""
    wide = np.zeros((*np.shape(array), 2), dtype=np.asarray(array).dtype)
    wide[..., 0] = array
    return wide[..., 0]


def unpack(result: Any, function_name: str, names: tuple[str, ...]) -> tuple[Any, ...]:
    """``result`` as a tuple of ``len(names)`` values, or AssertionError saying what it was."""
    if not isinstance(result, (tuple, list)) or len(result) != len(names):
        raise AssertionError(
            f"{function_name} should return a tuple ({', '.join(names)}), got {describe(result)}"
        )
    return tuple(result)


def expect_array(name: str, value: Any, shape: tuple[int, ...], dtype: Any = None) -> np.ndarray:
    """``value`` if it is a NumPy array of ``shape`` (and of ``dtype``, when given), or
    AssertionError saying what it was."""
    shape = tuple(shape)
    if not isinstance(value, np.ndarray) or value.shape != shape:
        raise AssertionError(
            f"{name} should be a NumPy array of shape {shape}, got {describe(value)}"
        )
    if dtype is not None and value.dtype != dtype:
        raise AssertionError(f"{name} should be {np.dtype(dtype)}, got dtype {value.dtype}")
    return value


def expect_scalar(name: str, value: Any) -> float:
    """``value`` as a float if it is a single number (a 0-d array too), or AssertionError."""
    if isinstance(value, (str, bytes)) or value is None or np.ndim(value) != 0:
        raise AssertionError(f"{name} should be a single number, got {describe(value)}")
    return float(value)


def expect_floats(name: str, value: Any, count: int) -> list[float]:
    """``value`` as a list of ``count`` floats, or AssertionError saying what it was."""
    if not isinstance(value, list) or len(value) != count:
        raise AssertionError(
            f"{name} should return a list of {count} floats, got {describe(value)}"
        )
    for index, item in enumerate(value):
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, (numbers.Real, np.floating)):
            raise AssertionError(
                f"{name} should return a list of floats; item {index} is {describe(item)}"
            )
    return [float(item) for item in value]


def describe(value: Any) -> str:
    """A short description of a returned value, for messages: type and shape or length."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"{type(value).__name__} of shape {tuple(shape)}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__} of length {len(value)}"
    return type(value).__name__


# -- inputs a student's function must leave alone --------------------------------------------------


def snapshot(values: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of each input, to compare with after a call (``course.checks.snapshot_inputs``,
    the visible checks' own: a dict's entries are also kept by identity, so replacing an array
    in the caller's dict is caught as well as writing into it)."""
    return checks.snapshot_inputs(values)


def expect_unchanged(
    function_name: str, values: Mapping[str, Any], before: Mapping[str, Any]
) -> None:
    """Fail naming the first input in ``values`` that differs from ``before`` (made by
    :func:`snapshot` before the call), with the visible checks' sentence
    (``course.checks.changed_input``)."""
    change = checks.changed_input(function_name, values, before)
    if change:
        raise checks.CheckFailed(change)
