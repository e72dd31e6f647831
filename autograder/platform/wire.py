"""The grader's side of the kernel protocol: send arguments, distrust every byte that comes back.

Test cells run in the grader process. In their namespace each name that the solution cells
define is a :class:`Remote`: calling it sends the arguments (plain data: numbers, strings,
lists, tuples, dicts, NumPy arrays and torch tensors as dtype + shape + bytes) to the kernel,
which runs the student's function and answers with plain data too. Nothing from the kernel is
unpickled or evaluated: :func:`decode` accepts JSON of a fixed shape, numeric dtypes only, and
sizes that add up. Exceptions come back as a type name and a message; builtin exception types
are re-raised as such (a check may expect ``ValueError``), anything else as
:class:`StudentError`. In-place changes to the arguments and results that *are* (or view) an
argument are mirrored onto the grader's objects, so the checks' "inputs unchanged" and "new
arrays" assertions keep their meaning.
"""

from __future__ import annotations

import ast
import base64
import builtins
import json
import math
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from autograder.platform.sandbox import MAX_PAYLOAD_CHARS, SandboxKernel

MIMETYPE = "application/x-call-bridge+json"


def _without_docstrings(source: str) -> str:
    """``source`` re-written from its syntax tree: no docstring, no comment.

    The kernel keeps the code it was sent (and the docstrings of what it defines); what it keeps
    of the agent says nothing about grading.
    """
    tree = ast.parse(source)
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(body, list)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


AGENT_SOURCE = _without_docstrings((Path(__file__).parent / "kernel_runtime.py").read_text())
MAX_DEPTH = 60
MAX_ELEMENTS = 50_000_000


class StudentError(Exception):
    """An exception raised by student code in the kernel, of a type the grader does not mirror."""


class ProtocolError(StudentError):
    """The kernel answered something that is not a well-formed reply."""


class KernelTimeout(TimeoutError):
    """A call into the kernel ran past its deadline (the kernel was restarted)."""


class KernelDied(RuntimeError):
    """The kernel died during a call (it was restarted)."""


# -- encoding arguments (the grader's own, trusted objects) -----------------------------------


def encode(value: Any, depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise TypeError("argument nested too deeply to send to the student's function")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__t__": "float", "v": repr(value)}
    if isinstance(value, complex):
        return {"__t__": "complex", "re": value.real, "im": value.imag}
    if isinstance(value, bytes):
        return {"__t__": "bytes", "v": base64.b64encode(value).decode()}
    if isinstance(value, list):
        return [encode(item, depth + 1) for item in value]
    if isinstance(value, tuple):
        return {"__t__": "tuple", "v": [encode(item, depth + 1) for item in value]}
    if isinstance(value, dict):
        return {
            "__t__": "dict",
            "v": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()],
        }
    if isinstance(value, Remote):
        if value._target.get("kind") != "handle" or value._target.get("attrs"):
            raise TypeError("only objects returned by the student's code can be passed back")
        return {"__t__": "handle", "id": value._target["id"]}
    torch = _torch()
    extra: dict[str, Any] = {}
    kind = "nd"
    if torch is not None and isinstance(value, torch.Tensor):
        kind, extra = "tensor", {"grad": bool(value.requires_grad)}
        value = value.detach().cpu().numpy()
    elif isinstance(value, np.generic):
        extra = {"scalar": True}
        value = np.asarray(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufc":
        return {
            "__t__": kind,
            "dtype": value.dtype.str,
            "shape": list(value.shape),
            "data": base64.b64encode(np.ascontiguousarray(value).tobytes()).decode(),
            "c": bool(value.flags.c_contiguous) or value.ndim == 0,
            **extra,
        }
    raise TypeError(f"cannot send a {type(value).__name__} to the student's function")


def _torch():
    import sys

    return sys.modules.get("torch")


# -- decoding replies (hostile) ----------------------------------------------------------------


def _walk(roots: dict[str, Any], path: Any) -> Any:
    if not isinstance(path, list) or not path or path[0] not in roots:
        raise ProtocolError("bad reference path")
    node = roots[path[0]]
    for step in path[1:]:
        if isinstance(step, list):
            step = tuple(step)
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError) as error:
            raise ProtocolError("bad reference path") from error
    return node


def _array(node: dict) -> np.ndarray:
    dtype_text, shape, data = node.get("dtype"), node.get("shape"), node.get("data")
    if not (isinstance(dtype_text, str) and isinstance(shape, list) and isinstance(data, str)):
        raise ProtocolError("malformed array")
    try:
        dtype = np.dtype(dtype_text)
    except TypeError as error:
        raise ProtocolError("bad dtype") from error
    if dtype.kind not in "biufc" or dtype.itemsize > 32 or len(dtype_text) > 8:
        raise ProtocolError("only numeric arrays are accepted")
    if len(shape) > 32 or not all(type(s) is int and 0 <= s <= MAX_ELEMENTS for s in shape):
        raise ProtocolError("bad shape")
    count = math.prod(shape)
    raw = base64.b64decode(data, validate=True)
    if count > MAX_ELEMENTS or len(raw) != count * dtype.itemsize:
        raise ProtocolError("array size does not match its shape")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).copy()


def decode(node: Any, session: Session, roots: dict[str, Any], depth: int = 0) -> Any:
    if depth > MAX_DEPTH:
        raise ProtocolError("reply nested too deeply")
    if node is None or type(node) in (bool, int, float, str):
        return node
    if type(node) is list:
        return [decode(item, session, roots, depth + 1) for item in node]
    if type(node) is not dict:
        raise ProtocolError("unexpected value in reply")
    kind = node.get("__t__")
    if kind == "float":
        text = node.get("v")
        if text not in ("nan", "inf", "-inf"):
            raise ProtocolError("bad float")
        return float(text)
    if kind == "complex":
        re_, im_ = node.get("re"), node.get("im")
        if type(re_) not in (int, float) or type(im_) not in (int, float):
            raise ProtocolError("bad complex")
        return complex(re_, im_)
    if kind == "bytes":
        if type(node.get("v")) is not str:
            raise ProtocolError("bad bytes")
        return base64.b64decode(node["v"], validate=True)
    if kind == "tuple":
        if type(node.get("v")) is not list:
            raise ProtocolError("bad tuple")
        return tuple(decode(item, session, roots, depth + 1) for item in node["v"])
    if kind == "dict":
        items = node.get("v")
        if type(items) is not list:
            raise ProtocolError("bad dict")
        result = {}
        for pair in items:
            if type(pair) is not list or len(pair) != 2:
                raise ProtocolError("bad dict item")
            key = decode(pair[0], session, {}, depth + 1)
            if isinstance(key, list):
                key = tuple(key)
            try:
                hash(key)
            except TypeError as error:
                raise ProtocolError("unhashable dict key") from error
            result[key] = decode(pair[1], session, roots, depth + 1)
        return result
    if kind == "ref":
        return _walk(roots, node.get("path"))
    if kind in ("nd", "tensor"):
        array = _array(node)
        if kind == "tensor":
            torch = _torch()
            if torch is None:
                import torch
            return torch.from_numpy(array)
        if node.get("scalar") is True:
            if array.ndim != 0:
                raise ProtocolError("bad scalar")
            return array[()]
        if "view" in node:  # the student's array shares memory with an argument
            base = _walk(roots, node["view"])
            if isinstance(base, np.ndarray) and base.size == array.size:
                view = base.reshape(array.shape) if base.shape != array.shape else base[...]
                if np.may_share_memory(view, base) and np.array_equal(view, array, equal_nan=True):
                    return view
        return array
    if kind == "handle":
        handle = node.get("id")
        if type(handle) is not int:
            raise ProtocolError("bad handle")
        name = node.get("type") if type(node.get("type")) is str else "object"
        return Remote(session, {"kind": "handle", "id": handle}, name[:100])
    raise ProtocolError("unknown value kind in reply")


def _mirror(after: Any, session: Session, roots: dict[str, Any]) -> None:
    """Apply the kernel's report of in-place changes to the grader's argument objects."""
    if type(after) is not list:
        raise ProtocolError("bad mutation report")
    for entry in after:
        if type(entry) is not dict:
            raise ProtocolError("bad mutation report")
        path = entry.get("path")
        if type(path) is not list or len(path) < 2:
            continue  # the argument list itself: the student cannot rebind the caller's names
        target = _walk(roots, path)
        if "array" in entry:
            new = _array(entry["array"])
            torch = _torch()
            if isinstance(target, np.ndarray):
                if target.shape == new.shape and not np.array_equal(target, new, equal_nan=True):
                    if target.flags.writeable:
                        target[...] = new.astype(target.dtype, copy=False)
            elif torch is not None and isinstance(target, torch.Tensor):
                if tuple(target.shape) == new.shape:
                    with torch.no_grad():
                        target.copy_(torch.from_numpy(new).to(target.dtype))
        elif "keys" in entry and isinstance(target, dict):
            keys = entry["keys"]
            if type(keys) is not list:
                raise ProtocolError("bad mutation report")
            kept = set()
            for item in keys:
                if type(item) is not list or len(item) != 3:
                    raise ProtocolError("bad mutation report")
                key = decode(item[0], session, {})
                key = tuple(key) if isinstance(key, list) else key
                kept.add(key)
                if item[1] is not True:
                    target[key] = decode(item[2], session, {})
            for key in [k for k in target if k not in kept]:
                del target[key]
        elif "items" in entry and isinstance(target, list):
            items = entry["items"]
            if type(items) is not list:
                raise ProtocolError("bad mutation report")
            rebuilt = []
            for index, item in enumerate(items):
                if type(item) is not list or len(item) != 2:
                    raise ProtocolError("bad mutation report")
                if item[0] is True and index < len(target):
                    rebuilt.append(target[index])
                else:
                    rebuilt.append(decode(item[1], session, {}))
            target[:] = rebuilt


_MIRRORED = {
    name
    for name in dir(builtins)
    if isinstance(getattr(builtins, name), type)
    and issubclass(getattr(builtins, name), Exception)
    and not issubclass(getattr(builtins, name), (Warning, OSError, UnicodeError))
    # raised inside a check's generator or map(), these would end it early instead of failing
    and not issubclass(getattr(builtins, name), (StopIteration, StopAsyncIteration))
}


def _raise_student_error(name: Any, message: Any) -> None:
    name = name if type(name) is str else "Exception"
    message = message if type(message) is str else ""
    if name in _MIRRORED:
        try:
            error = getattr(builtins, name)(message)
        except Exception:  # noqa: BLE001 - a constructor with another signature
            error = None
        if error is not None:
            raise error
    raise StudentError(f"{name}: {message}" if message else name)


# -- the session and the remote objects ---------------------------------------------------------


def _dotted(owner: Any) -> str:
    """The name the kernel imports ``owner`` by: a module's, or a class's module and name."""
    if isinstance(owner, type):
        return f"{owner.__module__}.{owner.__qualname__}"
    return getattr(owner, "__name__", "")


class Session:
    """Calls into one sandboxed kernel, with the trap targets of the hidden checks in force."""

    def __init__(self, kernel: SandboxKernel, trap_targets: list[tuple[Any, str, str, Any]]):
        self.kernel = kernel
        self.trap_targets = trap_targets  # (owner, attribute, label, original value)
        self.installed_at = -1
        self.timeouts = 0
        self.deaths = 0
        self.refused = 0  # answers over the reply cap

    def _install(self) -> None:
        """Install the bridge and import the owners of every trap (the course package, torch,
        a library): seconds of the grader's work, given the kernel's start-up time
        (``Limits.startup_timeout``), so that no graded call of the student's function
        (``cell_timeout``) pays for it; on a loaded machine the first one would time out."""
        owners = sorted({_dotted(owner) for owner, *_ in self.trap_targets} - {""})
        code = (
            f"exec(compile({AGENT_SOURCE!r}, '<bridge>', 'exec'), "
            "{'get_ipython': get_ipython, '__name__': '__bridge__'})\n"
            f"__call_bridge__.preload({owners!r})"
        )
        timeout = max(self.kernel.limits.startup_timeout, self.kernel.limits.cell_timeout)
        outcome = self.kernel.run_hidden(code, timeout, MIMETYPE)
        if outcome.status == "timeout":  # the kernel was restarted: no bridge in it
            self.timeouts += 1
            raise KernelTimeout(f"the kernel was not ready for graded calls within {timeout:g} s")
        if outcome.status == "died":
            self.deaths += 1
            raise KernelDied("the kernel died while it was made ready for graded calls")
        self.installed_at = self.kernel.restarts

    def _traps_in_force(self) -> list[list[str]]:
        active = []
        for owner, attribute, label, original in self.trap_targets:
            if getattr(owner, attribute, original) is not original:
                active.append([_dotted(owner), attribute, label])
        return active

    def request(self, target: dict, op: str, args=(), kwargs=None, label: str = "") -> Any:
        kwargs = kwargs or {}
        if self.installed_at != self.kernel.restarts or not self.kernel.alive():
            if not self.kernel.alive():
                self.kernel.restart()
            self._install()
            if target.get("kind") == "handle":
                raise KernelDied(f"{label}: the kernel was restarted and this object is gone")
        nonce = uuid.uuid4().hex
        request = {
            "nonce": nonce,
            "target": target,
            "op": op,
            "args": [encode(a) for a in args],
            "kwargs": {"__t__": "dict", "v": [[k, encode(v)] for k, v in kwargs.items()]},
            "traps": self._traps_in_force() if op == "call" else [],
        }
        code = f"__call_bridge__.call({json.dumps(request)!r})"
        outcome = self.kernel.run_hidden(code, self.kernel.limits.cell_timeout, MIMETYPE)
        if outcome.status == "timeout":
            self.timeouts += 1
            raise KernelTimeout(
                f"{label} ran longer than {self.kernel.limits.cell_timeout:g} s and was stopped"
            )
        if outcome.status == "died":
            self.deaths += 1
            raise KernelDied(f"the kernel died while running {label}")
        if outcome.refused and outcome.status != "died":
            self.refused += 1
            raise ProtocolError(
                f"{label}: the kernel sent a message over {self.kernel.limits.reply_mb} MB,"
                " which the grader does not read"
            )
        if outcome.oversized:
            raise ProtocolError(
                f"{label}: the kernel's answer is larger than the grader reads"
                f" ({MAX_PAYLOAD_CHARS // 1_000_000} million characters)"
            )
        replies = []
        for payload in outcome.payloads:
            try:
                reply = json.loads(payload)
            except (ValueError, RecursionError):
                continue  # not an answer: a student may print anything, under any mimetype
            if type(reply) is dict and reply.get("nonce") == nonce:
                replies.append(reply)
        if len(replies) > 1:
            raise ProtocolError(f"{label}: the kernel sent more than one answer")
        if len(replies) != 1:
            if outcome.status == "error":
                _raise_student_error(outcome.ename, outcome.evalue)
            raise ProtocolError(f"{label}: no answer from the kernel")
        reply = replies[0]
        if "agent_error" in reply:
            raise StudentError(f"{label} could not be run: {str(reply['agent_error'])[:500]}")
        if reply.get("missing") is True:
            raise NameError(f"name {target.get('name')!r} is not defined")
        roots = {"args": list(args), "kwargs": kwargs}
        if op == "call":
            _mirror(reply.get("after", []), self, roots)
            shortcuts = reply.get("shortcuts", [])
            if shortcuts:
                self._spring_trap(shortcuts[0], label)
            if "raised" in reply:
                raised = reply["raised"]
                if type(raised) is not list or len(raised) != 2:
                    raise ProtocolError("bad exception report")
                _raise_student_error(*raised)
        if "value" not in reply:
            raise ProtocolError(f"{label}: the kernel's answer has no value")
        return decode(reply["value"], self, roots)

    def _spring_trap(self, label: Any, name: str) -> None:
        """The student's function called a trapped routine: let the check's own trap fire."""
        for owner, attribute, known, original in self.trap_targets:
            current = getattr(owner, attribute)
            if known == label and current is not original:  # only a trap the check has set
                current()
        raise StudentError(f"{name} called a routine it must not use")


class Remote:
    """A name of the student's namespace, or an object living in the kernel."""

    def __init__(self, session: Session, target: dict, name: str):
        self._session = session
        self._target = target
        self.__name__ = self.__qualname__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._session.request(self._target, "call", args, kwargs, label=self.__name__)

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__") or attribute.startswith("_session"):
            raise AttributeError(attribute)
        target = dict(self._target, attrs=[*self._target.get("attrs", []), attribute])
        return self._session.request(target, "get", label=f"{self.__name__}.{attribute}")

    def __bool__(self) -> bool:
        raise TypeError(f"{self.__name__} lives in the student's kernel and has no truth value")

    def __repr__(self) -> str:
        return f"<student's {self.__name__}>"


def fetch_names(session: Session, names: list[str]) -> dict[str, Any]:
    """The student's top-level ``names`` that exist: plain data as copies, others as Remote."""
    found = session.request({"kind": "names", "names": names}, "get", label="the solution names")
    if not isinstance(found, dict):
        raise ProtocolError("bad answer for the solution names")
    values = {}
    for name in names:
        if name in found:
            value = found[name]
            # a callable is re-resolved by name at each call, so it survives a kernel restart
            target = {"kind": "name", "name": name}
            values[name] = Remote(session, target, name) if isinstance(value, Remote) else value
    return values
