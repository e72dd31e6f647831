"""Figures of Unit 3: a word's similarity across contexts layer by layer, and ELMo's layer choice.

``results`` for the layer-choice figure maps a task name to what Lecture 3 measures::

    {"pos": {"accuracy": {"token layer": 0.81, "layer 1": 0.86, "layer 2": 0.84, "mix": 0.87},
             "weights": [0.2, 0.5, 0.3],          # the learned s_j of the mix
             "baseline": 0.44, "baseline_name": "majority class"}, ...}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # imported for type hints only
    from matplotlib.figure import Figure

__all__ = ["plot_similarity_by_layer", "plot_layer_choice", "interact_layer_choice"]

_RESULT_KEYS = ("accuracy", "weights", "baseline", "baseline_name")


def plot_similarity_by_layer(
    similarities: Sequence[Any],
    labels: Sequence[str],
    layer_names: Sequence[str],
    *,
    title: str = "",
    vmin: float = -1.0,
    vmax: float = 1.0,
    cmap: str = "RdBu_r",
    label: str = "cosine similarity",
) -> Figure:
    """One heatmap of cosine similarities (N, N) per layer, sharing one colour scale.

    The scale runs from ``vmin`` to ``vmax`` (by default the whole range of a cosine, [-1, 1]);
    ``label`` names it on the colour bar, so a narrower scale can say what it spans.
    """
    import matplotlib.pyplot as plt

    if len(similarities) != len(layer_names) or not similarities:
        raise ValueError(
            f"similarities and layer_names: one matrix per layer name, got {len(similarities)} "
            f"matrices and {len(layer_names)} names"
        )
    mats = [np.asarray(s, dtype=float) for s in similarities]
    for name, m in zip(layer_names, mats, strict=True):
        if m.shape != (len(labels), len(labels)):
            raise ValueError(
                f"{name}: expected a ({len(labels)}, {len(labels)}) matrix, one row per label, "
                f"got {m.shape}"
            )
    fig, axes = plt.subplots(
        1, len(mats), figsize=(3.2 * len(mats) + 1.5, 3.6), squeeze=False, constrained_layout=True
    )
    for ax, name, m in zip(axes[0], layer_names, mats, strict=True):
        image = ax.imshow(m, vmin=vmin, vmax=vmax, cmap=cmap)
        ax.set_title(name, fontsize=10)
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=7)
        ax.set_yticks(range(len(labels)), labels if ax is axes[0][0] else [], fontsize=7)
    fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8, label=label)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def plot_layer_choice(results: Mapping[str, Mapping[str, Any]], task: str | None = None) -> Figure:
    """Held-out accuracy of each choice of representation for one task, beside the mix weights.

    Left: a bar per choice (token layer, each biLSTM layer, the learned mix) and the baseline
    as a dashed line. Right: the learned weights s_j of the mix, one bar per layer.
    """
    import matplotlib.pyplot as plt

    if not results:
        raise ValueError("results: expected at least one task")
    task = next(iter(results)) if task is None else task
    if task not in results:
        raise KeyError(f"task: expected one of {sorted(results)}, got {task!r}")
    result = results[task]
    missing = [k for k in _RESULT_KEYS if k not in result]
    if missing:
        raise ValueError(f"results[{task!r}]: missing {missing} (expected keys {_RESULT_KEYS})")
    names, accuracy = list(result["accuracy"]), list(result["accuracy"].values())
    weights = np.asarray(result["weights"], dtype=float)
    fig, (left, right) = plt.subplots(
        1, 2, figsize=(10, 3.4), gridspec_kw={"width_ratios": [3, 2]}, constrained_layout=True
    )
    bars = left.bar(names, accuracy, color=["0.6"] + ["C0"] * (len(names) - 2) + ["C3"])
    left.bar_label(bars, labels=[f"{a:.3f}" for a in accuracy], fontsize=8)
    left.axhline(result["baseline"], color="k", ls="--", lw=1, label=result["baseline_name"])
    left.set_ylim(0, 1)
    left.set_ylabel("held-out accuracy")
    left.set_title(f"{task}: which representation?", fontsize=10)
    left.legend(loc="lower right", fontsize=8)
    layer_bars = right.bar([f"s_{j}" for j in range(len(weights))], weights, color="C3")
    right.bar_label(layer_bars, labels=[f"{w:.2f}" for w in weights], fontsize=8)
    right.axhline(1 / len(weights), color="k", ls=":", lw=1, label="equal mix")
    right.set_ylim(0, 1)
    right.set_title("learned weights s = softmax(w)", fontsize=10)
    right.legend(loc="upper right", fontsize=8)
    return fig


def interact_layer_choice(results: Mapping[str, Mapping[str, Any]]) -> Any:
    """A task menu around :func:`plot_layer_choice` (returns what ``ipywidgets.interact`` does)."""
    import ipywidgets as widgets

    def show(task: str) -> None:
        # Returns None on purpose: the inline backend shows the new figure once.
        plot_layer_choice(results, task)

    return widgets.interact(
        show, task=widgets.Dropdown(options=list(results), value=next(iter(results)))
    )
