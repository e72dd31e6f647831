"""Lecture 6's Transformer against Lecture 4's GRU on sorting digits (``course.data.sorting``),
with one recipe for both, and how far the comparison moves between seeds.

    model, history = train_sorter("Transformer (2+2 layers)", SortTask(), seed=0)
    figures = sorting_seeds()        # exact match of both models from seeds 0, 1, 2 (minutes)

The recipe was chosen by a sweep of the peak learning rate for each model (300 steps of 64
sources of 5-30 words, linear warm-up over 50 steps then linear decay, seed 0, held-out exact
match on 1,000 sources, one CPU thread):

    GRU + additive attention   3e-3 0.254   5e-3 0.506   1e-2 0.719   3e-2 0.679
                               (a constant rate: 3e-3 0.486, 1e-2 0.415)
    Transformer (2+2 layers)   3e-3 0.970   1e-2 0.983   2e-2 0.982

so both train at 1e-2 with the same schedule, batches and steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import torch
from torch import nn

from course.analysis.seq2seq import exact_match, translate
from course.data.sorting import SortTask
from course.models.seq2seq import Seq2Seq
from course.models.transformer import Seq2SeqTransformer
from course.train import TrainingHistory, fit, linear_warmup_decay

__all__ = ["SORT_RECIPE", "SORTERS", "train_sorter", "sorting_seeds"]

SORT_RECIPE = {"steps": 300, "warmup": 50, "lr": 1e-2, "batch_size": 64, "test_sources": 1000}

# The two models of the comparison, as Lectures 4 and 6 build them: (source, target vocab sizes)
SORTERS: dict[str, Callable[[int, int], nn.Module]] = {
    "GRU + additive attention": lambda src, tgt: Seq2Seq(src, tgt, hidden=64, attention="additive"),
    "Transformer (2+2 layers)": lambda src, tgt: Seq2SeqTransformer(
        src, tgt, d_model=64, num_heads=4, num_layers=2, d_ff=128, norm_first=True
    ),
}


def train_sorter(
    name: str, task: SortTask, seed: int = 0, *, steps: int | None = None, progress: bool = True
) -> tuple[nn.Module, TrainingHistory]:
    """Train ``SORTERS[name]`` with ``SORT_RECIPE`` (``steps`` to shorten it in a test): initial
    weights from ``torch.manual_seed(seed)``, the batches from ``task.batches(64, seed=seed)``."""
    steps = steps or SORT_RECIPE["steps"]
    schedule = None  # a one-step run (a test's) has no schedule; a short one a shorter warm-up
    if steps > 1:
        schedule = linear_warmup_decay(min(SORT_RECIPE["warmup"], steps - 1), steps)
    torch.manual_seed(seed)
    model = SORTERS[name](len(task.source_vocab), len(task.target_vocab))
    history = fit(
        model,
        lambda m, b: m.loss(b),
        task.batches(SORT_RECIPE["batch_size"], seed=seed),
        steps=steps,
        lr=SORT_RECIPE["lr"],
        lr_schedule=schedule,
        desc=f"{name}, sorting",
        progress=progress,
    )
    return model, history


def sorting_seeds(
    seeds: Iterable[int] = (0, 1, 2), *, steps: int | None = None, test_sources: int | None = None
) -> dict[str, list[float]]:
    """Train both models once per seed and print each run's held-out exact match, and each
    model's spread (max - min): how far a figure of this recipe moves between runs. About a
    minute a seed on one CPU thread."""
    task = SortTask()
    pairs = task.sample(test_sources or SORT_RECIPE["test_sources"], "test", seed=0)
    figures: dict[str, list[float]] = {}
    for name in SORTERS:
        for seed in seeds:
            model, history = train_sorter(name, task, seed, steps=steps, progress=False)
            figure = float(np.mean(exact_match(task, pairs, translate(model, task, pairs))))
            figures.setdefault(name, []).append(figure)
            print(f"{name}, seed {seed}: exact match {figure:.3f} ({history.seconds:.0f} s)")
    for name, values in figures.items():
        print(
            f"{name}: {min(values):.3f} to {max(values):.3f}, spread {max(values) - min(values):.3f}"
        )
    return figures
