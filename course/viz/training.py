"""Figures of training runs: loss and gradient-norm curves, and language-model learning curves.

Each figure is a plain function that takes :class:`course.train.TrainingHistory` objects and
returns the matplotlib Figure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import cycle
from typing import TYPE_CHECKING, Any

import numpy as np

from course.viz._figure import figure_and_axes, running_mean

if TYPE_CHECKING:  # imported for type hints only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_training_histories", "plot_bits_per_char"]


def plot_training_histories(
    histories: Mapping[str, Any],
    *,
    smooth: int = 1,
    axes: Sequence[Axes] | None = None,
    loss_unit: str = "nats/char",
) -> Figure:
    """Two panels, loss and gradient norm (log scale) per step, one line per named run.

    ``histories`` maps a label to an object with ``losses`` and ``grad_norms`` lists (a
    :class:`course.train.TrainingHistory`). ``smooth`` > 1 plots a running mean over that
    many steps. ``loss_unit`` names what the loss is averaged over (a word model's loss is
    nats per word). Non-finite values end a line. Returns the figure.
    """
    import matplotlib.pyplot as plt

    if smooth < 1:
        raise ValueError(f"smooth: expected a window of at least 1 step, got {smooth}")
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    else:
        fig = axes[0].figure
    loss_ax, norm_ax = axes
    for label, history in histories.items():
        for ax, values in ((loss_ax, history.losses), (norm_ax, history.grad_norms)):
            ax.plot(*running_mean(values, smooth), label=label)
    loss_ax.set_ylabel(f"training loss ({loss_unit})")
    norm_ax.set_ylabel("gradient norm before clipping")
    norm_ax.set_yscale("log", nonpositive="mask")
    for ax in axes:
        ax.set_xlabel("step")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_bits_per_char(
    histories: Mapping[str, Any],
    held_out: Mapping[str, float],
    baselines: Mapping[str, float] | None = None,
    *,
    x: str = "step",
    window: int = 25,
    ylim: tuple[float, float] | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Learning curves of language models in bits per character, with held-out levels.

    ``histories`` maps a model's label to its :class:`course.train.TrainingHistory` (losses in
    nats per character): each is drawn as a running mean over ``window`` training batches,
    against the step (``x="step"``) or the training time (``x="seconds"``, steps spread evenly
    over the run's seconds). ``held_out`` maps the same labels to held-out bits per character,
    drawn as a dash-dotted line of the model's colour; ``baselines`` (e.g. {"unigram": 4.6})
    adds grey reference lines. Returns the figure.
    """
    if x not in ("step", "seconds"):
        raise ValueError(f"x: expected 'step' or 'seconds', got {x!r}")
    unknown = sorted(set(held_out) - set(histories))
    if unknown:
        raise ValueError(f"held_out: labels {unknown} have no training history")
    fig, ax = figure_and_axes(ax, (7.0, 3.6))
    for label, history in histories.items():
        steps, nats = running_mean(history.losses, window)
        if x == "seconds":
            steps = steps * history.seconds / max(len(history.losses) - 1, 1)
        line = ax.plot(steps, nats / np.log(2), label=f"{label}, training batches")[0]
        if label in held_out:
            ax.axhline(
                held_out[label], color=line.get_color(), ls="-.", lw=1, label=f"{label}, held-out"
            )
    for (name, value), style in zip((baselines or {}).items(), cycle((":", "--")), strict=False):
        ax.axhline(value, color="grey", ls=style, label=f"{name}, held-out")
    ax.set_xlabel("training time (s)" if x == "seconds" else "step")
    ax.set_ylabel("bits per character")
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.legend(fontsize=7)
    return fig
