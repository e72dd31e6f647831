"""Plumbing the figure functions share: a figure to draw on, and running means."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # imported for type hints only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


def figure_and_axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Figure, Axes]:
    """``ax`` and its figure when an axes is given, else a new figure of ``figsize`` and its axes."""
    if ax is not None:
        return ax.figure, ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=figsize)


def running_mean(values: Sequence[float], window: int) -> tuple[np.ndarray, np.ndarray]:
    """Running mean of ``values`` (N,) over ``window`` steps: (x, y), y[i] = mean ending at x[i].

    x are the step indices window - 1 .. N - 1. With fewer than ``window`` values (or a window
    of 1) the values come back unchanged, with x = 0 .. N - 1.
    """
    if window < 1:
        raise ValueError(f"window: expected at least 1 step, got {window}")
    y = np.asarray(values, dtype=float)
    if window == 1 or len(y) < window:
        return np.arange(len(y)), y
    return np.arange(window - 1, len(y)), np.convolve(y, np.ones(window) / window, mode="valid")
