"""Cases and the checks of what a function returned: the kit that the visible and the hidden
checks share.

Each case is a :class:`Case`: a label and its inputs by name, built as
``Case("one row, τ = 1", logits=..., temperature=1.0)`` and read as ``case.logits``. Inside
``with case.named("temperature_probs"):`` a failure reads ``[temperature_probs, one row, τ = 1]
...`` (``case.named(function, *details)`` adds details after the label); :func:`case` prefixes
a message with any description, such as a call that labels its own case.

:func:`unpack`, :func:`expect_array`, :func:`expect_scalar` and :func:`expect_floats` say what
a function returned when it is not what the task asks for (a :class:`course.checks.CheckFailed`,
which a notebook shows briefly); :func:`strided` makes an input that is not contiguous in
memory; :func:`expect_unchanged` fails when a call wrote into its inputs.
The hidden checks (``autograder/hidden``) import this kit and add their traps for shortcuts.
"""

from __future__ import annotations

import contextlib
import numbers
import types
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from course.checks import CheckFailed, changed_input

__all__ = [
    "Case",
    "case",
    "strided",
    "unpack",
    "expect_tuple",
    "expect_array",
    "expect_scalar",
    "expect_floats",
    "describe",
    "expect_unchanged",
]


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
    """``result`` as a tuple of ``len(names)`` values, or CheckFailed saying what it was."""
    if not isinstance(result, (tuple, list)) or len(result) != len(names):
        raise CheckFailed(
            f"{function_name} should return a tuple ({', '.join(names)}), got {describe(result)}"
        )
    return tuple(result)


def expect_tuple(result: Any, function_name: str, names: tuple[str, ...]) -> tuple[Any, ...]:
    """:func:`unpack` where the task asks for a tuple: a list of the right length fails too."""
    __tracebackhide__ = True
    if not isinstance(result, tuple):
        raise CheckFailed(
            f"{function_name} should return a tuple ({', '.join(names)}), got {describe(result)}"
        )
    return unpack(result, function_name, names)


def expect_array(name: str, value: Any, shape: tuple[int, ...], dtype: Any = None) -> np.ndarray:
    """``value`` if it is a NumPy array of ``shape`` (and of ``dtype``, when given), or
    CheckFailed saying what it was."""
    shape = tuple(shape)
    if not isinstance(value, np.ndarray) or value.shape != shape:
        raise CheckFailed(f"{name} should be a NumPy array of shape {shape}, got {describe(value)}")
    if dtype is not None and value.dtype != dtype:
        raise CheckFailed(f"{name} should be {np.dtype(dtype)}, got dtype {value.dtype}")
    return value


def expect_scalar(name: str, value: Any) -> float:
    """``value`` as a float if it is a single number (a 0-d array too), or CheckFailed."""
    if isinstance(value, (str, bytes)) or value is None or np.ndim(value) != 0:
        raise CheckFailed(f"{name} should be a single number, got {describe(value)}")
    return float(value)


def expect_floats(name: str, value: Any, count: int) -> list[float]:
    """``value`` as a list of ``count`` floats, or CheckFailed saying what it was."""
    if not isinstance(value, list) or len(value) != count:
        raise CheckFailed(f"{name} should return a list of {count} floats, got {describe(value)}")
    for index, item in enumerate(value):
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, (numbers.Real, np.floating)):
            raise CheckFailed(
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


def expect_unchanged(
    function_name: str, values: Mapping[str, Any], before: Mapping[str, Any]
) -> None:
    """Fail naming the first input in ``values`` that differs from ``before`` (made by
    :func:`course.checks.snapshot_inputs` before the call), with the sentence of
    :func:`course.checks.changed_input`: the step that :func:`course.checks.inputs_kept` takes
    after its block, for a check that calls the function several times in one loop."""
    change = changed_input(function_name, values, before)
    if change:
        raise CheckFailed(change)
