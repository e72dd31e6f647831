"""Traps for library routines that would do a student's work, shared by the hidden checks.

Each assignment's hidden module names the torch routines that would do its work (autograd,
``torch.nn`` layers, ``clip_grad_norm_``...) and exposes ``shortcut_targets()``, built with
:func:`collect_targets`; every public callable of the ``course`` package except
``course.checks`` is added to every list. While a student's function runs under
:func:`no_shortcuts`, each target is replaced by a trap that raises :class:`ShortcutUsed`. The
TA grading command sets the same traps in the student's kernel, through ``shortcut_targets()``.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from unittest import mock

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


def _course_modules() -> list[Any]:
    """The ``course`` submodules whose callables are off limits (all but ``course.checks``)."""
    import course

    modules = []
    found = pkgutil.walk_packages(course.__path__, prefix="course.")
    for info in sorted(found, key=lambda module: module.name):
        parts = info.name.split(".")
        if any(part.startswith("_") for part in parts) or info.name == "course.checks":
            continue
        try:
            modules.append(importlib.import_module(info.name))
        except Exception:  # noqa: BLE001 - a helper that does not import cannot be called either
            continue
    return modules


def collect_targets(library: Iterable[tuple[str, Iterable[str]]]) -> list[Target]:
    """(owner, attribute, label) for each named library routine that exists, then for every
    public callable of the ``course`` package outside ``course.checks``.

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
    for module in _course_modules():
        for attribute, value in sorted(vars(module).items()):
            origin = getattr(value, "__module__", None) or ""
            if (
                not attribute.startswith("_")
                and callable(value)
                and origin.startswith("course.")
                and not origin.startswith("course.checks")
            ):
                targets.append((module, attribute, f"{module.__name__}.{attribute}"))
    return targets


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
    with contextlib.ExitStack() as stack:
        for owner, attribute, label in targets:
            original = getattr(owner, attribute)
            trap = make_trap(label)
            stack.enter_context(mock.patch.object(owner, attribute, trap))
            if isinstance(namespace, dict):
                for key, value in list(namespace.items()):
                    if value is original:
                        namespace[key] = trap
                        stack.callback(namespace.__setitem__, key, value)
        yield calls


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


def describe(value: Any) -> str:
    """A short description of a returned value, for messages: type and shape or length."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"{type(value).__name__} of shape {tuple(shape)}"
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__} of length {len(value)}"
    return type(value).__name__
