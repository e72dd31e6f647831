"""The grader's agent inside the student's kernel: call a student function, send back plain data.

This file's *text* is executed in the sandboxed kernel after the student's cells (it is never
imported there: the kernel cannot see the repository). Everything it does can be undone or
faked by student code, and that is fine: all it can report is what the student's function
returned, which the grader then compares, in its own process, with values the kernel never
sees. It depends on the standard library and NumPy; torch only if it is already imported.

Protocol: the grader runs ``__call_bridge__.call("<json request>")``; the agent publishes one
display_data of mimetype ``application/x-call-bridge+json`` holding the reply (see ``wire.py``).
"""

import base64 as _b64
import builtins as _builtins
import importlib as _importlib
import json as _json
import sys as _sys

MIMETYPE = "application/x-call-bridge+json"
MAX_REPLY_BYTES = 64 * 1024 * 1024


class _ShortcutCalled(AssertionError):
    pass


class _Agent:
    def __init__(self, namespace):
        self.namespace = namespace
        self.handles = {}

    # -- decoding the grader's arguments (trusted data) --------------------------------------

    def decode(self, node, path, registry):
        if isinstance(node, list):
            value = [self.decode(item, path + [i], registry) for i, item in enumerate(node)]
            registry.append((path, value, list(value)))
            return value
        if not isinstance(node, dict):
            return node
        kind = node["__t__"]
        if kind == "float":
            return float(node["v"])
        if kind == "tuple":
            return tuple(
                self.decode(item, path + [i], registry) for i, item in enumerate(node["v"])
            )
        if kind == "dict":
            value = {}
            for key, item in node["v"]:
                key = self.decode(key, path + ["key"], [])
                value[key] = self.decode(item, path + [key], registry)
            registry.append((path, value, dict(value)))
            return value
        if kind in ("nd", "tensor"):
            import numpy as np

            flat = np.frombuffer(_b64.b64decode(node["data"]), dtype=np.dtype(node["dtype"]))
            array = flat.reshape(node["shape"]).copy()
            if not node.get("c", True):  # the grader's array was not contiguous: nor is this one
                wide = np.zeros(array.shape + (2,), dtype=array.dtype)
                wide[..., 0] = array
                array = wide[..., 0]
            if kind == "tensor":
                import torch

                array = torch.from_numpy(np.ascontiguousarray(array))
                if node.get("grad"):
                    array.requires_grad_(True)
            elif node.get("scalar"):
                return array[()]
            registry.append((path, array, None))
            return array
        if kind == "handle":
            return self.handles[node["id"]]
        if kind == "bytes":
            return _b64.b64decode(node["v"])
        if kind == "complex":
            return complex(node["re"], node["im"])
        raise TypeError(f"unknown argument kind {kind!r}")

    # -- encoding results (what the grader will distrust) ------------------------------------

    def encode(self, value, registry, depth=0):
        if depth > 50:
            raise ValueError("the result is nested too deeply")
        for path, original, _ in registry:
            if value is original:
                return {"__t__": "ref", "path": path}
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            return value if abs(value) < 2**63 else float(value)
        if isinstance(value, float):
            return value if value == value and abs(value) != float("inf") else self._float(value)
        if isinstance(value, complex):
            return {"__t__": "complex", "re": value.real, "im": value.imag}
        if isinstance(value, bytes):
            return {"__t__": "bytes", "v": _b64.b64encode(value).decode()}
        if isinstance(value, (list, tuple)):
            items = [self.encode(item, registry, depth + 1) for item in value]
            return items if isinstance(value, list) else {"__t__": "tuple", "v": items}
        if isinstance(value, dict):
            return {
                "__t__": "dict",
                "v": [
                    [self.encode(k, [], depth + 1), self.encode(v, registry, depth + 1)]
                    for k, v in value.items()
                ],
            }
        array = self._as_array(value)
        if array is not None:
            node = array
            for path, original, _ in registry:
                if self._shares(value, original):
                    node = dict(array, view=path)
                    break
            return node
        handle = len(self.handles) + 1
        self.handles[handle] = value
        return {"__t__": "handle", "id": handle, "type": type(value).__name__[:100]}

    @staticmethod
    def _float(value):
        return {"__t__": "float", "v": repr(value)}

    @staticmethod
    def _shares(value, original):
        np = _sys.modules.get("numpy")
        if np is None or not isinstance(value, np.ndarray) or not isinstance(original, np.ndarray):
            return False
        return bool(np.may_share_memory(value, original))

    @staticmethod
    def _as_array(value):
        np = _sys.modules.get("numpy")
        torch = _sys.modules.get("torch")
        kind, extra = "nd", {}
        if torch is not None and isinstance(value, torch.Tensor):
            kind = "tensor"
            extra = {"grad": bool(value.requires_grad)}
            value = value.detach().cpu().numpy()
        elif np is not None and isinstance(value, np.generic):
            extra = {"scalar": True}
            value = np.asarray(value)
        if np is None or not isinstance(value, np.ndarray):
            return None
        if value.dtype.kind not in "biufc":
            return None
        contiguous = bool(value.flags.c_contiguous)
        data = _b64.b64encode(np.ascontiguousarray(value).tobytes()).decode()
        return dict(
            {"__t__": kind, "dtype": value.dtype.str, "shape": list(value.shape)},
            data=data,
            c=contiguous,
            **extra,
        )

    # -- mutations of the arguments ----------------------------------------------------------

    def after(self, registry):
        """For each argument container/array: its content now, and which children were replaced."""
        report = []
        for path, value, children in registry:
            entry = {"path": path}
            array = self._as_array(value)
            if array is not None:
                entry["array"] = array
            elif isinstance(value, dict):
                entry["keys"] = [
                    [
                        self.encode(k, []),
                        k in children and value[k] is children[k],
                        None if k in children and value[k] is children[k] else self.encode(v, []),
                    ]
                    for k, v in value.items()
                ]
            elif isinstance(value, list):
                entry["items"] = [
                    [
                        i < len(children) and item is children[i],
                        None
                        if i < len(children) and item is children[i]
                        else self.encode(item, []),
                    ]
                    for i, item in enumerate(value)
                ]
            report.append(entry)
        return report

    # -- traps --------------------------------------------------------------------------------

    def _resolve(self, dotted):
        try:
            return _importlib.import_module(dotted)
        except ImportError:
            parent, _, attribute = dotted.rpartition(".")
            return getattr(_importlib.import_module(parent), attribute)

    def preload(self, owners):
        # The owners of every trap the checks may set, imported once when the bridge is
        # installed (the whole course package, torch...): the grader's work, timed as the
        # kernel's start-up, not as the first graded call of the student's function.
        for dotted in owners:
            try:
                self._resolve(dotted)
            except Exception:
                continue

    def _install_traps(self, traps, function, calls):
        # Every owner is imported before any trap is set: a module first imported while traps
        # are in place would bind a trap by ``from ... import`` (course.models.transformer's
        # MultiHeadAttention, say), and no undo would ever restore it.
        found = []
        for owner_name, attribute, label in traps:
            try:
                owner = self._resolve(owner_name)
                found.append((owner, attribute, label, getattr(owner, attribute)))
            except Exception:
                continue
        undo = []
        namespace = getattr(function, "__globals__", None)
        namespaces = [self.namespace] + ([namespace] if isinstance(namespace, dict) else [])
        for owner, attribute, label, original in found:

            def trap(*args, _label=label, **kwargs):
                calls.append(_label)
                raise _ShortcutCalled(f"it called {_label}")

            setattr(owner, attribute, trap)
            undo.append((setattr, owner, attribute, original))
            for space in namespaces:
                for key, value in list(space.items()):
                    if value is original:
                        space[key] = trap
                        undo.append((space.__setitem__, key, value))
        return undo

    # -- the entry point ----------------------------------------------------------------------

    def call(self, request_text):
        request = _json.loads(request_text)
        try:
            reply = self._call(request)
        except BaseException as error:  # noqa: BLE001 - everything goes back to the grader
            reply = {"nonce": request["nonce"], "agent_error": repr(error)[:2000]}
        text = _json.dumps(reply)
        if len(text) > MAX_REPLY_BYTES:
            text = _json.dumps({"nonce": request["nonce"], "agent_error": "reply too large"})
        from IPython.display import publish_display_data

        publish_display_data({MIMETYPE: text})

    def _call(self, request):
        target = request["target"]
        if target["kind"] == "names":  # several top-level names at once: value, or missing
            values = {}
            for name in target["names"]:
                if name in self.namespace:
                    values[name] = self.encode(self.namespace[name], [])
            return {
                "nonce": request["nonce"],
                "value": {"__t__": "dict", "v": [[k, v] for k, v in values.items()]},
            }
        if target["kind"] == "name":
            name = target["name"]
            if name not in self.namespace:
                return {"nonce": request["nonce"], "missing": True}
            function = self.namespace[name]
        else:
            function = self.handles[target["id"]]
        for attribute in target.get("attrs", []):
            function = getattr(function, attribute)
        if request.get("op") == "get":
            return {"nonce": request["nonce"], "value": self.encode(function, [])}
        registry = []
        args = self.decode(request["args"], ["args"], registry)
        kwargs = self.decode(request["kwargs"], ["kwargs"], registry)
        calls = []
        reply = {"nonce": request["nonce"]}
        undo = self._install_traps(request.get("traps", []), function, calls)
        try:
            result = function(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - SystemExit and KeyboardInterrupt included
            reply["raised"] = [type(error).__name__[:200], str(error)[:2000]]
        else:
            reply["value"] = self.encode(result, registry)
        finally:
            for step in reversed(undo):
                step[0](*step[1:])
        reply["after"] = self.after(registry)
        reply["shortcuts"] = calls[:10]
        return reply


__call_bridge__ = _Agent(get_ipython().user_ns)  # noqa: F821 - defined inside IPython
_builtins.__call_bridge__ = __call_bridge__
