"""What every assignment's hidden checks share: traps for shortcuts, cases, input snapshots.

Each assignment's hidden module names the torch routines that would do its work (autograd,
``torch.nn`` layers, ``clip_grad_norm_``...) in one :class:`Traps` and exposes its methods
as ``shortcut_targets``, ``no_shortcuts`` and ``_call_by_hand``::

    TRAPS = shortcuts.Traps((("torch.nn", ("RNN",)), ...))
    shortcut_targets, no_shortcuts, _call_by_hand = TRAPS.methods()

Every public callable of the ``course`` package (every module and subpackage, recursively)
except ``course.checks`` is added to every list. While a student's function runs under
``no_shortcuts``, each target is replaced by a trap that raises :class:`ShortcutUsed`. The
TA grading command sets the same traps in the student's kernel, through ``shortcut_targets()``.

:func:`snapshot` and :func:`expect_unchanged` catch a function that writes into its inputs;
:func:`case` names the hidden case in a failure message; :func:`expect_value_error` checks that
bad input is refused with a ValueError (and, optionally, a message that says what is wrong).
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np

Target = tuple[Any, str, str]  # (owner, attribute, label)


class ShortcutUsed(AssertionError):
    """A checked function called a library routine that does its work for it."""


def _resolve(dotted: str) -> Any:
    """Import ``dotted`` as a module, or as an attribute of its parent module (torch.Tensor)."""
    try:
        return importlib.import_module(dotted)
    except ImportError:
        parent, _, attribute = dotted.rpartition(".")
        return getattr(importlib.import_module(parent), attribute)


def _allowed(module_name: str) -> bool:
    """True for ``course.checks`` (and anything below it) and for private modules."""
    parts = module_name.split(".")
    return parts[:2] == ["course", "checks"] or any(part.startswith("_") for part in parts)


def _course_modules() -> list[Any]:
    """``course`` and every module and subpackage below it, recursively, except the allowed
    ones (``course.checks``, private modules): their callables are off limits."""
    import course

    modules = [course]
    found = pkgutil.walk_packages(course.__path__, prefix="course.", onerror=lambda name: None)
    for name in sorted(info.name for info in found):
        if _allowed(name):
            continue
        try:
            modules.append(importlib.import_module(name))
        except Exception:  # noqa: BLE001 - a helper that does not import cannot be called either
            continue
    return modules


def collect_targets(library: Iterable[tuple[str, Iterable[str]]]) -> list[Target]:
    """(owner, attribute, label) for each named library routine that exists, then for every
    public callable of the ``course`` package outside ``course.checks``. Each (owner,
    attribute) is listed once, with its first label: a ``course`` routine named in ``library``
    is found again by the walk over the package.

    ``library`` pairs a dotted owner (a module, or a class such as ``torch.Tensor``) with the
    attribute names to trap. A leading underscore is dropped from labels, so messages name the
    public routine.
    """
    targets = []
    for owner_name, attributes in library:
        try:
            owner = _resolve(owner_name)
        except (ImportError, AttributeError):
            continue
        for attribute in attributes:
            if hasattr(owner, attribute):
                targets.append((owner, attribute, f"{owner_name}.{attribute.lstrip('_')}"))
    targets += _course_targets()
    seen: set[tuple[int, str]] = set()
    unique = []
    for owner, attribute, label in targets:
        if (id(owner), attribute) not in seen:
            seen.add((id(owner), attribute))
            unique.append((owner, attribute, label))
    return unique


_COURSE_TARGETS: dict[tuple, list[Target]] = {}


def _course_targets() -> list[Target]:
    """Every public callable of the ``course`` package outside ``course.checks``.

    Walking the package and scanning its modules costs milliseconds, and a hidden check traps
    hundreds of calls: the list is made again only when the package's path or the set of loaded
    modules changed (a module imported since is then covered too).
    """
    import course

    key = (tuple(course.__path__), len(sys.modules))
    if key not in _COURSE_TARGETS:
        found = []
        for module in _course_modules():
            for attribute, value in sorted(vars(module).items()):
                origin = getattr(value, "__module__", None) or ""
                if (
                    not attribute.startswith("_")
                    and callable(value)
                    and origin.split(".")[0] == "course"
                    and not _allowed(origin)
                ):
                    found.append((module, attribute, f"{module.__name__}.{attribute}"))
        _COURSE_TARGETS.clear()
        _COURSE_TARGETS[(tuple(course.__path__), len(sys.modules))] = found  # after the walk
        key = (tuple(course.__path__), len(sys.modules))
    return list(_COURSE_TARGETS[key])


def function_name(function: Any) -> str:
    return getattr(function, "__name__", None) or type(function).__name__


@contextlib.contextmanager
def no_shortcuts(
    function: Callable[..., Any], duty: str, targets: list[Target]
) -> Iterator[list[str]]:
    """Replace every target by a trap inside the ``with`` block; yield the list of trapped calls.

    Both the owners' attributes (``torch.autograd.grad``) and the names in ``function``'s
    globals bound to a target (``from torch.autograd import grad`` in a notebook) are replaced.
    A trap records its label and raises ShortcutUsed("<name> must <duty>; it called <label>").
    Everything is restored on exit, even after an error.
    """
    name = function_name(function)
    calls: list[str] = []

    def make_trap(label: str) -> Callable[..., Any]:
        def trap(*args: Any, **kwargs: Any) -> Any:
            calls.append(label)
            raise ShortcutUsed(f"{name} must {duty}; it called {label}")

        trap.__name__ = f"trapped_{label.rpartition('.')[2]}"
        return trap

    namespace = getattr(function, "__globals__", None)
    bound: dict[int, list[str]] = {}  # id of a value in the function's globals -> its names
    if isinstance(namespace, dict):
        for key, value in namespace.items():
            bound.setdefault(id(value), []).append(key)
    with contextlib.ExitStack() as stack:
        for owner, attribute, label in targets:
            original = getattr(owner, attribute)
            trap = make_trap(label)
            stack.callback(_restore, owner, attribute, vars(owner).get(attribute, _ABSENT))
            setattr(owner, attribute, trap)
            for key in bound.get(id(original), ()):
                if namespace[key] is original:
                    namespace[key] = trap
                    stack.callback(namespace.__setitem__, key, original)
        yield calls


_ABSENT = object()


def _restore(owner: Any, attribute: str, own: Any) -> None:
    """Put back ``owner.attribute`` as it was: its own value, or, if it had none (a method a
    class inherits), no attribute of its own, so the inherited one shows again. (What
    ``mock.patch.object`` does, without its cost per target: hundreds of targets per call.)"""
    if own is _ABSENT:
        with contextlib.suppress(AttributeError):
            delattr(owner, attribute)
    else:
        setattr(owner, attribute, own)


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
    """``run()`` (a student's function called by hand) must raise ValueError.

    ``call`` describes the bad input for the failure message. With ``says = (pattern, what)``
    the error's message must match the regular expression ``pattern`` (case-insensitive),
    which checks ``what`` (e.g. "name row 2"). A trapped shortcut is reported as such.
    """
    try:
        run()
    except ValueError as error:
        if says is not None and not re.search(says[0], str(error), flags=re.IGNORECASE):
            raise AssertionError(
                f"{call} raised ValueError({str(error)!r}), which does not {says[1]}"
            ) from None
        return
    except ShortcutUsed:
        raise
    except Exception as error:
        raise AssertionError(
            f"{call} should raise ValueError, but raised {type(error).__name__}: {error}"
        ) from error
    raise AssertionError(f"{call} should raise ValueError, but it returned a value")


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
    """A copy of each input (an array, or a dict of arrays), to compare with after a call.

    A dict's entry keeps its original object too, so replacing an array in the caller's dict
    is caught as well as writing into it.
    """

    def copy_of(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {key: (item, np.array(item, copy=True)) for key, item in value.items()}
        return np.array(value, copy=True)

    return {label: copy_of(value) for label, value in values.items()}


def _expect_same(function_name: str, label: str, value: Any, before: Any) -> None:
    if isinstance(before, dict):
        if set(value) != set(before):
            raise AssertionError(
                f"{function_name} changed the keys of its input {label} from {sorted(before)} "
                f"to {sorted(value)}; it must leave its inputs unchanged"
            )
        for key, (original_object, original_values) in before.items():
            if value[key] is not original_object:
                raise AssertionError(
                    f"{function_name} replaced {label}[{key!r}] in its input dict; it must leave "
                    "its inputs unchanged (build a new dict instead)"
                )
            _expect_same(function_name, f"{label}[{key!r}]", value[key], original_values)
        return
    if not np.array_equal(value, before):
        try:
            change = float(np.max(np.abs(np.asarray(value, dtype=np.float64) - before)))
            detail = f" (largest change {change:.1e})"
        except (TypeError, ValueError):  # reshaped or retyped in place: no elementwise change
            detail = ""
        raise AssertionError(
            f"{function_name} modified its input {label} in place{detail}; "
            "it must leave its inputs unchanged (compute new arrays instead)"
        )


def expect_unchanged(
    function_name: str, values: Mapping[str, Any], before: Mapping[str, Any]
) -> None:
    """Raise AssertionError naming the first input in ``values`` that differs from ``before``
    (made by :func:`snapshot` before the call)."""
    for label, value in values.items():
        _expect_same(function_name, label, value, before[label])
