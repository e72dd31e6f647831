"""Training runs that survive an interruption, for ``tools.make_checkpoints``.

A checkpoint recipe trains for an hour or more on one CPU thread. :func:`resumable_fit` runs
``course.train.fit`` in short stretches on one optimiser, and every ``save_every`` steps writes
the run's whole state to a file: the weights, the optimiser's moments, torch's random state
(dropout draws from it), the history so far and the number of batches drawn. Run again with the
same recipe and code, it loads that file, draws and drops the batches already used (every
stream of the recipes is seeded by itself) and goes on from there; the weights it ends with are
the ones an uninterrupted run gives, bit for bit on the CPU (``tests/build/test_resumable.py``).
A recipe or code that changed since the file was written starts afresh, and says so.

The files go to the user's cache folder (:func:`default_state_dir`), outside the work tree, so
that they survive a fresh checkout; ``--state-dir`` names another. A finished run's file is
removed once its checkpoint is written.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import os
import statistics
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from course.train import LossFn, TrainingHistory, fit

REPO = Path(__file__).resolve().parent.parent
# The code a checkpoint's training depends on: a change to any of it starts a saved run afresh.
CODE = ("course/train.py", "course/models", "course/data", "tools/resumable.py")
STRETCH = 25  # steps per call of fit: the progress bar moves this often


def default_state_dir() -> Path:
    """Where runs are saved unless told otherwise: ``$COURSE_RUNS_DIR``, else the user's cache
    folder (``~/.cache/seqcourse/checkpoint-runs`` on Linux)."""
    if os.environ.get("COURSE_RUNS_DIR"):
        return Path(os.environ["COURSE_RUNS_DIR"])
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("seqcourse")) / "checkpoint-runs"


def code_digest(paths: Iterable[str] = CODE, extra: Iterable[Callable] = ()) -> str:
    """A SHA-256 of the course's training code (``paths``, under the repository) and of the
    source of each function in ``extra`` (a recipe's own function)."""
    digest = hashlib.sha256()
    for name in paths:
        path = REPO / name
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for file in files:
            digest.update(str(file.relative_to(REPO)).encode())
            digest.update(file.read_bytes())
    for function in extra:
        digest.update(inspect.getsource(function).encode())
    return digest.hexdigest()


def run_key(name: str, recipe: Any, code: str) -> str:
    """What identifies a run: the checkpoint's name, its recipe (JSON) and the code's digest."""
    text = json.dumps({"name": name, "recipe": recipe, "code": code}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class RunFile:
    """Where one recipe's run is saved, and when."""

    path: Path
    key: str  # run_key(...): a file with another key is from another recipe or code
    save_every: int = 500  # steps

    def load(self) -> dict | None:
        """The saved state, if this file holds this run; None otherwise (saying why)."""
        if not self.path.is_file():
            return None
        try:
            state = torch.load(self.path, map_location="cpu", weights_only=False)
        except Exception as error:  # a file cut short by a kill: start again
            print(f"[runs] {self.path} cannot be read ({error}); starting afresh", flush=True)
            return None
        if state.get("key") != self.key:
            print(
                f"[runs] {self.path} holds a run of another recipe or code (saved at step "
                f"{state.get('done', '?')}); starting afresh",
                flush=True,
            )
            return None
        return state

    def save(self, state: dict) -> None:
        """Write ``state`` whole or not at all (a kill mid-write leaves the last one)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        torch.save({**state, "key": self.key}, partial)
        os.replace(partial, self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def _merge(history: TrainingHistory, part: TrainingHistory) -> None:
    history.losses += part.losses
    history.grad_norms += part.grad_norms
    for name, values in part.logs.items():
        history.logs.setdefault(name, []).extend(values)
    history.steps += part.steps
    history.seconds += part.seconds
    history.stopped_by = part.stopped_by


def resumable_fit(
    model: torch.nn.Module,
    loss_fn: LossFn,
    make_batches: Callable[[], Iterator],
    *,
    steps: int,
    lr: float,
    clip_norm: float | None,
    lr_schedule: Callable[[int], float] | None,
    run: RunFile | None,
    desc: str = "training",
    on_save: Callable[[int], None] | None = None,
) -> TrainingHistory:
    """``course.train.fit(model, loss_fn, make_batches(), steps=..., lr=..., ...)`` with Adam,
    saved to ``run`` every ``run.save_every`` steps and continued from there if ``run`` holds
    this run already. ``run=None``: nothing saved or loaded. ``on_save(steps_done)`` is called
    after each save (a test stops a run there). One progress bar for the whole run, with the
    loss and the time left."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    history = TrainingHistory()
    state = run.load() if run is not None else None
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"])
        history = TrainingHistory(**state["history"])
        print(f"[runs] {desc}: resuming at step {history.steps:,} of {steps:,}", flush=True)
    stream = make_batches()
    for _ in itertools.islice(stream, history.steps):  # the batches already used
        pass
    schedule = lr_schedule or (lambda step: 1.0)
    bar = tqdm(total=steps, initial=history.steps, desc=desc, unit="step")
    start = time.perf_counter()
    try:
        while history.steps < steps:
            done = history.steps
            stretch = min(STRETCH, steps - done)
            if run is not None:
                stretch = min(stretch, run.save_every - done % run.save_every)
            part = fit(
                model,
                loss_fn,
                stream,
                steps=stretch,
                optimizer=optimizer,
                clip_norm=clip_norm,
                lr_schedule=lambda step, done=done: schedule(done + step),
                progress=False,
            )
            _merge(history, part)
            bar.update(part.steps)
            bar.set_postfix(loss=f"{statistics.fmean(part.losses[-stretch:]):.3f}")
            if part.stopped_by != "steps":
                break
            if run is not None and (history.steps % run.save_every == 0 or history.steps == steps):
                run.save(
                    {
                        "done": history.steps,
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "rng": torch.get_rng_state(),
                        "history": asdict(history),
                    }
                )
                if on_save is not None:
                    on_save(history.steps)
    finally:
        bar.close()
    print(
        f"{desc}: {history.summary()} ({time.perf_counter() - start:.0f} s in this command)",
        flush=True,
    )
    return history
