"""Recording and replaying the lectures' training runs and evaluations, for the course's own
build and test suite; a student never meets it.

The build executes each lecture with a recorder installed in its kernel: ``course.train.fit``
saves what each run ends with (weights, history, random state) under a key made of everything
the run starts from (weights, the model's other attributes, random state, first batch, loss
function, settings), and each evaluation in :data:`REMEMBERED` saves what it returns under a
key made of its code, its arguments and the random state. The students' JupyterLab in the
suite runs the same lectures with a replayer installed: a run whose key was recorded, and
whose first batch gives exactly the recorded first loss, is not trained again; it takes the
recorded end state, consumes the same batches and shows the same bar and line. Any other run
is trained, and any other call computed. So the suite trains each lecture's models once.

Nothing of this is in ``course/``: :func:`install` wraps ``course.train.fit`` and the
evaluations where they are defined (and wherever a loaded module took them by name), and
:func:`write_startup` writes the IPython startup file that installs it in a kernel. The file
loads this module by its path, so it works in a student's installation, which has no
``tools`` package.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib
import inspect
import itertools
import os
import sys
import types
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm.auto import tqdm

# In a folder of recorded runs: the thread counts ({variable: count}) of the kernels that
# recorded them. A kernel that replays them takes the same counts, so that what it computes
# before a run, and so the run's key, comes out the same.
THREADS_FILE = "threads.json"
STARTUP_NAME = "00-course-fit-replay.py"  # in IPython's profile_default/startup

# The evaluations that follow a lecture's runs (held-out figures, features for probes): each
# computes from what it is given and nothing else, and returns tensors, numbers, strings, and
# lists, tuples and dicts of them.
REMEMBERED = (
    "course.analysis.bert:heldout_pretraining_figures",
    "course.analysis.bert:marked_word_states",
    "course.analysis.bert:word_task_accuracy",
    "course.analysis.elmo:heldout_perplexity",
    "course.analysis.elmo:marked_word_features",
    "course.analysis.generation:generation_seconds",
    "course.analysis.lm:windowed_bits_per_char",
)


class _NoKey(Exception):
    """A run starts from something this module cannot fingerprint: it is not recorded."""


def _digest(value: Any, h: Any, depth: int = 0) -> None:
    """Feed ``value`` into the hash ``h``: tensors and arrays by their bytes, containers by
    their items, functions by their code, closure and defaults; anything else raises _NoKey."""
    if depth > 12:
        raise _NoKey("nested too deeply")
    h.update(type(value).__qualname__.encode())
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        h.update(repr(value).encode())
    elif isinstance(value, torch.Tensor):
        t = value.detach()
        if t.device.type != "cpu":
            raise _NoKey("a tensor off the CPU")
        h.update(f"{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.contiguous().view(-1).view(torch.uint8).numpy().tobytes())
    elif type(value).__module__ == "numpy" and hasattr(value, "tobytes"):
        h.update(f"{value.dtype}{getattr(value, 'shape', ())}".encode() + value.tobytes())
    elif isinstance(value, (list, tuple)):
        h.update(str(len(value)).encode())
        for item in value:
            _digest(item, h, depth + 1)
    elif isinstance(value, Mapping):
        for name, item in sorted(value.items(), key=lambda kv: repr(kv[0])):
            _digest(name, h, depth + 1)
            _digest(item, h, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _digest(f.name, h, depth + 1)
            _digest(getattr(value, f.name), h, depth + 1)
    elif isinstance(value, nn.Module):
        h.update(repr(value).encode())
        _digest(dict(value.state_dict()), h, depth + 1)
        for name, module in value.named_modules():  # plain attributes (a probe's layer, say)
            for attribute, item in sorted(vars(module).items()):
                if attribute.startswith("_") or attribute == "training":
                    continue
                h.update(f"{name}.{attribute}".encode())
                try:
                    _digest(item, h, depth + 1)
                except _NoKey:
                    h.update(type(item).__qualname__.encode())  # checked on replay: see _replay
    elif isinstance(value, types.MethodType):
        _digest(value.__func__, h, depth + 1)
        _digest(value.__self__, h, depth + 1)
    elif isinstance(value, types.FunctionType):
        _digest_code(value.__code__, h)
        _digest([c.cell_contents for c in value.__closure__ or ()], h, depth + 1)
        _digest(value.__defaults__, h, depth + 1)
        _digest(value.__kwdefaults__, h, depth + 1)
    else:
        raise _NoKey(f"cannot fingerprint a {type(value).__qualname__}")


def _digest_code(code: types.CodeType, h: Any) -> None:
    name = getattr(code, "co_qualname", code.co_name)
    h.update(name.encode() + code.co_code + repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _digest_code(const, h)
        else:
            h.update(repr(const).encode())


def _run_key(model: nn.Module, loss_fn: Any, first_batch: Any, settings: dict) -> str | None:
    """What a run starts from, as a hex digest; None if some part cannot be fingerprinted."""
    if isinstance(settings["optimizer"], torch.optim.Optimizer):
        return None  # its state lives outside the model
    schedule, steps = settings["lr_schedule"], settings["steps"]
    plain = tuple(settings[k] for k in ("steps", "budget_seconds", "optimizer", "lr",
                                        "clip_norm", "desc", "progress"))  # fmt: skip
    h = hashlib.sha256(torch.__version__.encode())
    try:
        _digest(model, h)
        _digest(loss_fn, h)
        _digest(first_batch, h)
        _digest(plain, h)
        _digest(None if schedule is None else [schedule(s) for s in range(steps)], h)
        _digest(torch.get_rng_state(), h)
    except _NoKey:
        return None
    return h.hexdigest()


def _recording(folder: Path, name: str) -> Path | None:
    """The recording ``name`` in ``folder`` or in a folder of its own in it (the build keeps
    one per lecture); None if there is none."""
    path = folder / name
    return path if path.is_file() else next(folder.glob(f"*/{name}"), None)


def _save_atomically(value: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.name}.{os.getpid()}.part")
    torch.save(value, partial)
    os.replace(partial, path)


class _Counted:
    """An iterator that counts what it hands out: the batches a run took."""

    def __init__(self, stream: Iterator) -> None:
        self.stream, self.taken = stream, 0

    def __iter__(self) -> _Counted:
        return self

    def __next__(self) -> Any:
        item = next(self.stream)
        self.taken += 1
        return item


@dataclasses.dataclass(frozen=True)
class Runs:
    """Where runs are recorded (``record``) and replayed from (``replay``); either may be None."""

    record: Path | None = None
    replay: Path | None = None

    def fit(self, fit: Callable[..., Any]) -> Callable[..., Any]:
        """``course.train.fit`` that records and replays its runs."""
        signature = inspect.signature(fit)

        @functools.wraps(fit)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            settings = dict(bound.arguments)
            model, loss_fn = settings.pop("model"), settings.pop("loss_fn")
            stream = iter(settings.pop("batches"))
            if not settings["steps"]:
                return fit(model, loss_fn, stream, **settings)
            try:
                first = next(stream)
            except StopIteration:
                return fit(model, loss_fn, iter(()), **settings)
            stream = itertools.chain([first], stream)
            key = _run_key(model, loss_fn, first, settings)
            if key is not None and self.replay is not None:
                replayed = _replay(self.replay, key, model, loss_fn, first, stream)
                if replayed is not None:
                    _show_replayed(replayed, settings)
                    return replayed
            counted = _Counted(stream)
            history = fit(model, loss_fn, counted, **settings)
            if key is not None and self.record is not None:
                _record(self.record, key, model, history, counted.taken)
            return history

        return wrapper

    def remember(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function`` with its results recorded and replayed: a call's key is the code of the
        function, its arguments and the random state; replayed, it returns the recorded result
        and leaves the random state as the recorded call left it. For arguments that cannot be
        fingerprinted it is ``function`` itself."""
        inner = inspect.unwrap(function)  # the code itself, under torch.no_grad's wrapper

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            h = hashlib.sha256(torch.__version__.encode())
            try:
                for part in (inner, list(args), kwargs, torch.get_rng_state()):
                    _digest(part, h)
            except _NoKey:
                return function(*args, **kwargs)
            name = f"call-{h.hexdigest()}.pt"
            found = _recording(self.replay, name) if self.replay is not None else None
            if found is not None:
                saved = torch.load(found, map_location="cpu", weights_only=True)
                torch.set_rng_state(saved["rng"])
                return saved["result"]
            computed = function(*args, **kwargs)
            if self.record is not None:
                saved = {"result": computed, "rng": torch.get_rng_state()}
                _save_atomically(saved, self.record / name)
            return computed

        return wrapper


def _record(folder: Path, key: str, model: nn.Module, history: Any, consumed: int) -> None:
    state = {name: t.detach().clone() for name, t in model.state_dict().items()}
    saved = {
        "state": state,
        "history": dataclasses.asdict(history),
        "rng": torch.get_rng_state(),
        "consumed": consumed,
    }
    _save_atomically(saved, folder / f"{key}.pt")


def _replay(
    folder: Path, key: str, model: nn.Module, loss_fn: Any, first: Any, stream: Iterator
) -> Any:
    """The recorded run of ``key`` applied to ``model``; None (train it) if there is none, or
    if the loss of the first batch is not exactly the recorded run's first loss."""
    from course.train import TrainingHistory

    path = _recording(folder, f"{key}.pt")
    if path is None:
        return None
    saved = torch.load(path, map_location="cpu", weights_only=True)
    model.train()
    random_state = torch.get_rng_state()
    out = loss_fn(model, first)  # with gradients on, as in training (kernels can differ without)
    torch.set_rng_state(random_state)
    first_loss = (out[0] if isinstance(out, tuple) else out).item()
    if saved["history"]["losses"][:1] != [first_loss]:
        return None
    for _ in range(saved["consumed"]):  # the batches the recorded run took, for what comes after
        next(stream)
    model.load_state_dict(saved["state"])
    model.train()
    torch.set_rng_state(saved["rng"])
    return TrainingHistory(**saved["history"])


def _show_replayed(history: Any, settings: dict) -> None:
    """The bar and the line that the recorded run showed: a bar that ends full at the steps
    the run took, as ``fit``'s does, and its summary."""
    if not settings["progress"]:
        return
    bar = tqdm(total=min(settings["steps"], history.steps), desc=settings["desc"], unit="step")
    bar.update(history.steps)
    if history.losses:
        bar.set_postfix(loss=f"{history.losses[-1]:.3f}")
    bar.close()
    print(history.summary())


def _targets() -> list[tuple[types.ModuleType, str, bool]]:
    """(module, name, is fit) of everything :func:`install` wraps, the modules imported."""
    found = [(importlib.import_module("course.train"), "fit", True)]
    for target in REMEMBERED:
        module, name = target.split(":")
        found.append((importlib.import_module(module), name, False))
    return found


def _everywhere(old: Any, new: Any) -> None:
    """Put ``new`` in place of ``old`` in every loaded module that holds it by name."""
    for module in list(sys.modules.values()):
        names = getattr(module, "__dict__", {})
        for name, value in list(names.items()):
            if value is old:
                setattr(module, name, new)


def install(record: Path | None = None, replay: Path | None = None) -> Callable[[], None]:
    """Record runs and evaluations into ``record`` and replay them from ``replay`` (folders, or
    None), from now on in this process; the function that puts the originals back."""
    runs = Runs(Path(record) if record else None, Path(replay) if replay else None)
    undo = []
    for module, name, is_fit in _targets():
        original = getattr(module, name)
        if hasattr(original, "replayed_by"):
            raise RuntimeError(f"{module.__name__}.{name} is recorded and replayed already")
        wrapped = runs.fit(original) if is_fit else runs.remember(original)
        wrapped.replayed_by = runs
        _everywhere(original, wrapped)
        undo.append((original, wrapped))

    def uninstall() -> None:
        for original, wrapped in undo:
            _everywhere(wrapped, original)

    return uninstall


STARTUP = '''"""Installed by the course's test harness (tools/fit_replay.py): {what}."""


def _install_fit_replay():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("course_fit_replay", {path!r})
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.install(record={record!r}, replay={replay!r})


_install_fit_replay()
del _install_fit_replay
'''


def write_startup(
    ipython_dir: Path, record: Path | None = None, replay: Path | None = None
) -> Path:
    """The IPython startup file (in ``ipython_dir``, a kernel's ``IPYTHONDIR``) that installs
    the recorder or replayer in every kernel started with it; it leaves no name behind."""
    what = " and ".join(
        f"{verb} the training runs {where} {folder}"
        for verb, where, folder in (("record", "into", record), ("replay", "from", replay))
        if folder is not None
    )
    text = STARTUP.format(
        what=what or "nothing",
        path=str(Path(__file__).resolve()),
        record=None if record is None else str(record),
        replay=None if replay is None else str(replay),
    )
    target = Path(ipython_dir) / "profile_default" / "startup" / STARTUP_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target
