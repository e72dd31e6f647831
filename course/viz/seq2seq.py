"""Figures of Unit 4: accuracy against input length, exposure bias, and attention alignments.

The alignment widget takes what Lecture 4 computes::

    alignments = {"additive": [(source words, output characters, weights (T, m)), ...], ...}
    interact_alignment(alignments)      # a menu of scoring functions, a slider over examples
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from course.viz._figure import figure_and_axes

if TYPE_CHECKING:  # imported for type hints only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_accuracy_by_length", "plot_exposure_bias", "plot_alignment", "interact_alignment"]

Alignment = tuple[Sequence[str], Sequence[str], Any]


def plot_accuracy_by_length(
    curves: Mapping[str, Mapping[int, tuple[float, int]]],
    *,
    min_count: int = 20,
    xlabel: str = "source length (words)",
    ax: Axes | None = None,
) -> Figure:
    """Exact match against input length, one line per model.

    curves: {model name: {length: (share correct, count)}} as ``accuracy_by`` returns; lengths
    with fewer than ``min_count`` examples are left out (their share is noise).
    """
    fig, ax = figure_and_axes(ax, (6.4, 3.4))
    if not curves:
        raise ValueError("curves: expected at least one model")
    for name, by_length in curves.items():
        points = [(n, acc) for n, (acc, count) in by_length.items() if count >= min_count]
        if not points:
            raise ValueError(f"{name}: no length has at least {min_count} examples")
        xs, ys = zip(*points, strict=True)
        ax.plot(xs, ys, "o-", label=name)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("exact match (held-out)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_exposure_bias(report: Mapping[str, Sequence[Any]], *, title: str = "") -> Figure:
    """Left: per-position accuracy, teacher-forced against free-running. Right: the error rate
    at a position after an earlier error, against after none (``exposure_bias``'s report)."""
    import matplotlib.pyplot as plt

    for key in ("teacher_forced", "free_running", "error_after_error", "error_after_clean"):
        if key not in report:
            raise ValueError(f"report: missing {key!r}")
    T = len(report["teacher_forced"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.3), constrained_layout=True)
    positions = np.arange(1, T + 1)
    left.plot(positions, report["teacher_forced"], "o-", label="teacher forcing (true prefix)")
    left.plot(positions, report["free_running"], "s-", label="free running (own prefix)")
    left.set_xlabel("output position t")
    left.set_ylabel("share of characters right")
    left.set_ylim(0, 1.02)
    left.legend(fontsize=8)
    for key, label, marker in (
        ("error_after_clean", "no earlier error", "o-"),
        ("error_after_error", "after an earlier error", "s-"),
    ):
        ys = [np.nan if v is None else v for v in report[key]]
        right.plot(positions, ys, marker, label=label)
    right.set_xlabel("output position t")
    right.set_ylabel("error rate at t (free running)")
    right.set_ylim(0, 1.02)
    right.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def plot_alignment(
    source: Sequence[str],
    output: Sequence[str],
    weights: Any,
    *,
    title: str = "",
    ax: Axes | None = None,
) -> Figure:
    """Attention weights a_{t,k} as a heatmap: one row per output token, one column per source
    word."""
    w = np.asarray(weights, dtype=float)
    if w.shape != (len(output), len(source)):
        raise ValueError(
            f"weights: expected shape ({len(output)}, {len(source)}) (output tokens, source "
            f"words), got {w.shape}"
        )
    fig, ax = figure_and_axes(ax, (0.42 * len(source) + 2.2, 0.3 * len(output) + 1.6))
    image = ax.imshow(w, vmin=0, vmax=1, cmap="Greys", aspect="auto")
    ax.set_xticks(range(len(source)), source, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(output)), output, fontsize=8)
    ax.set_xlabel("source word k")
    ax.set_ylabel("output t")
    if title:
        ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=ax, shrink=0.8, label="$a_{t,k}$")
    return fig


def interact_alignment(alignments: Mapping[str, Sequence[Alignment]]) -> Any:
    """A scoring-function menu and an example slider around :func:`plot_alignment`."""
    import ipywidgets as widgets

    if not alignments or not all(alignments.values()):
        raise ValueError("alignments: expected at least one scoring function with examples")
    count = min(len(v) for v in alignments.values())

    def show(score: str, example: int) -> None:
        source, output, weights = alignments[score][example]
        # Returns None on purpose: the inline backend shows the new figure once.
        plot_alignment(source, output, weights, title=f"{score}: example {example}")

    return widgets.interact(
        show,
        score=widgets.Dropdown(options=list(alignments), value=next(iter(alignments))),
        example=widgets.IntSlider(min=0, max=count - 1, value=0, continuous_update=False),
    )
