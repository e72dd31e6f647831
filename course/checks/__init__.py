"""Checks that teach: shape and dtype guards for helpers, and comparisons for visible tests.

Every failure names the quantity, what was expected and what was given, so a student
reads "dW differs from autograd by 3.1e-02 at [1, 4]" instead of a bare AssertionError.

The errors are ordinary AssertionError, ValueError and TypeError (subclasses of them, so
``except``/``pytest.raises`` work as usual). In IPython and Jupyter they display briefly: the
message first, then the line of the cell that ran the check, instead of a long traceback
through this package.

Each assignment's visible tests live in a module of this package (``course.checks.a1_rnn_bptt``
...): a visible test cell calls one check with the student's functions. The check runs them
under the rule of the part's hidden tests (:mod:`course.checks.rules`): no course helper and
none of the library routines that would do the work. It reads its cases from a table
(``part_a_cases()`` ...: each a :class:`course.checks.cases.Case` holding the function's
inputs, named as its parameters, and the values expected of it, ``expected_<quantity>``), made
afresh at each call so that a function that writes into its inputs cannot change the next
case; a failure starts with the function and the case, ``[rnn_forward, three sequences ...] hs
differs from the expected value by ...``. Then come the calls on bad input that the function
must refuse with ValueError (``part_a_bad_inputs()`` or ``part_a_bad_cases()`` ..., run by
:func:`course.checks.rules.expect_refused`). Every check sets ``__tracebackhide__``: when a
student's own code raises, IPython shows the cell's call and the student's frames, not the
check's.
"""

from __future__ import annotations

import contextlib
import copy
import linecache
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any

import numpy as np

__all__ = [
    "as_numpy",
    "expect_shape",
    "expect_dtype",
    "expect_ids",
    "expect_state",
    "assert_close",
    "expect_value_error",
    "inputs_kept",
    "snapshot_inputs",
    "changed_input",
    "CheckFailed",
    "ShapeMismatch",
    "TypeMismatch",
]

_COURSE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # course/
_RED, _BOLD, _DIM, _RESET = "\x1b[31m", "\x1b[1m", "\x1b[2m", "\x1b[0m"


class _BriefError(Exception):
    """Mixin: IPython shows the message and the caller's line, not the whole traceback.

    IPython (and so JupyterLab's kernel) calls ``_render_traceback_`` to get the lines of an
    error's traceback; plain Python and pytest ignore it and show the usual traceback.
    """

    def _render_traceback_(self) -> list[str]:
        kind = next(c.__name__ for c in type(self).__mro__ if c.__module__ == "builtins")
        lines = [f"{_RED}{_BOLD}{kind}{_RESET}{_BOLD}: {self}{_RESET}"]
        lines += [f"{_DIM}{where}{_RESET}" for where in _caller_lines(self.__traceback__)]
        return lines


class CheckFailed(_BriefError, AssertionError):
    """A value differs from what was expected (an AssertionError, displayed briefly)."""


class ShapeMismatch(_BriefError, ValueError):
    """An array has the wrong shape or number of dimensions (a ValueError, displayed briefly)."""


class TypeMismatch(_BriefError, TypeError):
    """A value is not an array, or not of the expected dtype (a TypeError, displayed briefly)."""


def _cell_name(filename: str) -> str | None:
    """``Cell In[3]`` for code typed in IPython/Jupyter, None for an ordinary file."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    names = getattr(getattr(shell, "compile", None), "_filename_map", None) or {}
    if filename in names:
        return f"Cell In[{names[filename]}]"
    return "this cell" if filename.startswith("<ipython-input") else None


def _caller_lines(traceback: TracebackType | None) -> list[str]:
    """One line per frame outside this package and outside IPython: where the check was run.

    The traceback starts in IPython's own machinery; the frames of the user's cell (and of
    any function of theirs on the way) come next, then this package's frames, which are left
    out.
    """
    lines = []
    while traceback is not None:
        code = traceback.tb_frame.f_code
        filename, lineno = code.co_filename, traceback.tb_lineno
        traceback = traceback.tb_next
        if os.path.dirname(os.path.abspath(filename)).startswith(_COURSE_DIR):
            break  # the check itself: nothing the student needs to read
        cell = _cell_name(filename)
        if cell is None and (
            "IPython" in filename.split(os.sep) or "ipykernel" in filename.split(os.sep)
        ):
            continue
        source = linecache.getline(filename, lineno).strip()
        place = (
            f"{cell}, line {lineno}" if cell else f"{filename}, line {lineno}, in {code.co_name}"
        )
        lines.append(f"  at {place}: {source}" if source else f"  at {place}")
    return lines


def as_numpy(value: Any, name: str) -> np.ndarray:
    """Return ``value`` as a NumPy array (torch tensors are detached and copied to the CPU).

    Raises TypeError naming ``name`` when ``value`` is not array-like (None, a string, a dict...).
    """
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        return value.detach().cpu().numpy()
    if value is None or isinstance(value, (str, bytes, dict)):
        raise TypeMismatch(f"{name}: expected an array or tensor, got {type(value).__name__}")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise TypeMismatch(
            f"{name}: expected an array or tensor, got {type(value).__name__}"
        ) from error
    if array.dtype == object:
        raise TypeMismatch(f"{name}: expected a numeric array, got a ragged or object array")
    return array


def _format_shape(shape: Sequence[int | str | None]) -> str:
    return (
        "("
        + ", ".join("*" if s is None else str(s) for s in shape)
        + ("," if len(shape) == 1 else "")
        + ")"
    )


def expect_shape(value: Any, shape: Sequence[int | str | None], name: str) -> dict[str, int]:
    """Check that ``value`` has ``shape``; return the sizes bound to named dimensions.

    ``shape`` mixes integers (must match), ``None`` (any size) and strings (named sizes that
    must agree wherever the same name appears). Example::

        dims = expect_shape(x, ("T", "D"), "x")   # -> {"T": 5, "D": 3}

    Raises ValueError with the expected and the given shape.
    """
    given = (
        tuple(as_numpy(value, name).shape) if not hasattr(value, "shape") else tuple(value.shape)
    )
    if len(given) != len(shape):
        raise ShapeMismatch(
            f"{name}: expected {len(shape)} dimensions {_format_shape(shape)}, "
            f"got {len(given)} dimensions {_format_shape(given)}"
        )
    bound: dict[str, int] = {}
    for axis, (want, got) in enumerate(zip(shape, given, strict=True)):
        if want is None:
            continue
        if isinstance(want, str):
            if want in bound and bound[want] != got:
                raise ShapeMismatch(
                    f"{name}: dimension {axis} ({want}) should be {bound[want]} to match the earlier "
                    f"{want}, got {got}; expected shape {_format_shape(shape)}, got {_format_shape(given)}"
                )
            bound[want] = got
        elif want != got:
            raise ShapeMismatch(
                f"{name}: expected shape {_format_shape(shape)}, got {_format_shape(given)} "
                f"(dimension {axis} should be {want}, not {got})"
            )
    return bound


def expect_dtype(value: Any, kinds: str, name: str) -> None:
    """Check the dtype kind of an array or tensor: ``kinds`` is a string of NumPy kind codes.

    "f" is floating point, "i"/"u" integers, "b" booleans. Raises TypeError naming both.
    """
    names = {"f": "floating point", "i": "signed integer", "u": "unsigned integer", "b": "boolean"}
    array_dtype = as_numpy(value, name).dtype
    if array_dtype.kind not in kinds:
        wanted = " or ".join(names.get(k, k) for k in kinds)
        raise TypeMismatch(f"{name}: expected a {wanted} array, got dtype {array_dtype}")


def expect_ids(
    ids: Any, vocab_size: int, name: str = "ids", shape: Sequence[int | str | None] = ("B", "T")
) -> dict[str, int]:
    """The guard every course model applies to its input: ids (B, T), integers in [0, vocab_size).

    Returns {"B": batch size, "T": length}. Raises ValueError for a wrong shape or an id out of
    range, TypeError for a non-integer dtype. ``shape`` changes the expected shape (e.g. the
    spellings (B, T, C) of a character-level token layer).
    """
    dims = expect_shape(ids, shape, name)
    expect_dtype(ids, "iu", name)
    array = as_numpy(ids, name)
    if array.size and (int(array.min()) < 0 or int(array.max()) >= vocab_size):
        raise ValueError(
            f"{name}: expected values in [0, {vocab_size}), "
            f"got min {int(array.min())} and max {int(array.max())}"
        )
    return dims


def expect_state(value: Any, shape: Sequence[int | str | None], name: str, *, like: Any) -> None:
    """The guard for a recurrent state a caller passes in: ``shape``, floating point, and the
    same dtype as ``like`` (the model's weights), so that it does not fail deep inside torch.

    Raises ValueError for a wrong shape, TypeError for a wrong dtype.
    """
    expect_shape(value, shape, name)
    expect_dtype(value, "f", name)
    if value.dtype != like.dtype:
        raise TypeMismatch(f"{name}: expected dtype {like.dtype} (the model's), got {value.dtype}")


def assert_close(
    name: str,
    got: Any,
    expected: Any,
    *,
    atol: float = 1e-6,
    rtol: float = 0.0,
    against: str = "the reference",
) -> None:
    """Assert that ``got`` matches ``expected`` elementwise, with a message that says where.

    The message gives the quantity's name, the largest difference, its index and both values,
    e.g. ``dW differs from autograd by 3.1e-02 at [1, 4] (got 0.512, expected 0.481)``.
    """
    got_array = as_numpy(got, name)
    expected_array = as_numpy(expected, f"expected {name}")
    if got_array.shape != expected_array.shape:
        raise CheckFailed(
            f"{name} has shape {_format_shape(got_array.shape)}, but {against} has shape "
            f"{_format_shape(expected_array.shape)}"
        )
    if got_array.size == 0:
        return
    got_f = got_array.astype(np.float64)
    expected_f = expected_array.astype(np.float64)
    if not np.all(np.isfinite(expected_f)):
        raise ValueError(
            f"expected {name} contains non-finite values: the reference itself is broken"
        )
    if not np.all(np.isfinite(got_f)):
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(got_f))[0])
        raise CheckFailed(
            f"{name} contains {got_f[index]} at {list(index)}; expected finite values"
        )
    difference = np.abs(got_f - expected_f)
    excess = difference - (atol + rtol * np.abs(expected_f))
    worst = np.unravel_index(int(np.argmax(excess)), excess.shape)
    if excess[worst] > 0:
        where = f" at {[int(i) for i in worst]}" if got_f.ndim else ""
        raise CheckFailed(
            f"{name} differs from {against} by {difference[worst]:.1e}{where} "
            f"(got {got_f[worst]:.6g}, expected {expected_f[worst]:.6g}; tolerance {atol:g})"
        )


def _briefly(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def expect_value_error(
    cases: Mapping[str, Callable[[], Any]],
    *,
    says: tuple[str, str] | None = None,
    passing: tuple[type[BaseException], ...] = (),
    prefix: str = "bad input: ",
) -> None:
    """Each case is a call on bad input that must raise ValueError; the first that does not is
    named, with what it did instead, e.g. ``bad input: temperature_probs(logits, 0.0) should
    raise ValueError, but returned array([[0.5, ...``.

    says: ``(pattern, what)``: the error's message must also match the regular expression
        ``pattern`` (case-insensitive), which checks ``what`` (e.g. "name row 2").
    passing: exceptions that are not this check's to judge, raised on unchanged (the hidden
        checks' trapped shortcuts).
    prefix: what each message starts with (the hidden checks start with the call itself).
    """
    for name, call in cases.items():
        try:
            result = call()
        except ValueError as error:
            if says is not None and not re.search(says[0], str(error), flags=re.IGNORECASE):
                raise CheckFailed(
                    f"{prefix}{name} raised ValueError({str(error)!r}), which does not {says[1]}"
                ) from None
            continue
        except passing:
            raise
        except Exception as error:  # the wrong kind: say which, keep the original as the cause
            raise CheckFailed(
                f"{prefix}{name} should raise ValueError, but raised "
                f"{type(error).__name__}: {_briefly(str(error), 200)}"
            ) from error
        raise CheckFailed(
            f"{prefix}{name} should raise ValueError, but returned {_briefly(result)}"
        )


def _first_change(before: Any, after: Any, where: str) -> str | None:
    """Where ``after`` differs from ``before`` (dicts, lists, tuples, arrays, tensors, scalars,
    strings, None), and how, or None."""
    if isinstance(before, dict):
        if not isinstance(after, dict) or set(before) != set(after):
            return f"{where} had keys {sorted(map(str, before))}, now {sorted(map(str, after))}"
        for key in before:
            found = _first_change(before[key], after[key], f"{where}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(before, (list, tuple)) and not isinstance(before, np.ndarray):
        if not isinstance(after, (list, tuple)) or len(before) != len(after):
            return f"{where} had {len(before)} items, now {len(after)}"
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            found = _first_change(old, new, f"{where}[{index}]")
            if found:
                return found
        return None
    if before is None or isinstance(before, (str, bytes)):  # not arrays: compared as they are
        if type(after) is not type(before) or after != before:
            return f"{where} was {before!r}, now {after!r}"
        return None
    old, new = np.asarray(as_numpy(before, where)), np.asarray(as_numpy(after, where))
    if old.shape != new.shape:
        return f"{where} had shape {_format_shape(old.shape)}, now {_format_shape(new.shape)}"
    same = (old == new) | ((old != old) & (new != new)) if old.dtype.kind in "fc" else old == new
    if np.all(same):
        return None
    index = tuple(int(i) for i in np.argwhere(~np.asarray(same))[0])
    at = f" at {list(index)}" if index else ""
    return f"{where}{at} was {old[index].item()!r}, now {new[index].item()!r}"


def snapshot_inputs(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """What :func:`changed_input` compares with after a call: a deep copy of each input and, for
    a dict, the object each of its keys held (so that replacing an array in the caller's dict is
    caught as well as writing into one)."""
    return {
        name: (copy.deepcopy(value), dict(value) if isinstance(value, Mapping) else None)
        for name, value in inputs.items()
    }


def changed_input(
    function: str, inputs: Mapping[str, Any], before: Mapping[str, Any]
) -> str | None:
    """The sentence that says how ``function`` changed the first of ``inputs`` that is not as
    :func:`snapshot_inputs` saw it (``before``), or None if it left them all as they were."""
    for name, value in inputs.items():
        saved, held = before[name]
        if held is not None and isinstance(value, Mapping) and set(value) == set(held):
            replaced = [key for key in held if value[key] is not held[key]]
            if replaced:
                return (
                    f"{function} replaced {name}[{replaced[0]!r}] in its input dict. It must leave "
                    "its arguments as they were (the caller still uses them): build a new dict"
                )
        change = _first_change(saved, value, name)
        if change:
            return (
                f"{function} changed its input in place: {change}. It must leave its arguments"
                " as they were (the caller still uses them): work on a copy"
            )
    return None


@contextlib.contextmanager
def inputs_kept(function: str, **inputs: Any) -> Iterator[dict[str, Any]]:
    """Check that a call leaves its arguments as they were; yield copies taken before it.

    A visible test calls the student's function inside the block and builds its reference from
    the copies, so a function that rewrites its inputs fails with a message that says so::

        with inputs_kept("rnn_backward", xs=xs, params=params) as before:
            grads = rnn_backward(xs, lengths, labels, h0, params)
        reference = autograd_gradients(before["xs"], before["params"])

    (The hidden checks use the same two steps, :func:`snapshot_inputs` and
    :func:`changed_input`.)
    """
    before = snapshot_inputs(inputs)
    yield {name: copy.deepcopy(saved) for name, (saved, _) in before.items()}
    change = changed_input(function, inputs, before)
    if change:
        raise CheckFailed(change)
