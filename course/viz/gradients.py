"""Figures of gradient flow: how far back a gradient reaches (Lectures 1 and 2).

Each figure is a plain function with defaults that returns the matplotlib Figure (drawing on a
given ``ax`` when one is passed); a widget is a thin ``interact`` wrapper around one of them.
The numbers come from ``course.analysis.gradients``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from course.analysis.gradients import (
    NONLINEARITIES,
    cell_gradient_norms_by_distance,
    get_nonlinearity,
    gradient_norms_by_distance,
)
from course.viz._figure import figure_and_axes

if TYPE_CHECKING:  # imported for type hints only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "plot_bptt_terms",
    "plot_truncation",
    "plot_jacobian_norms",
    "plot_gradient_norms",
    "interact_gradient_norms",
    "plot_cell_gradient_norms",
]


def plot_bptt_terms(parts: Sequence[tuple[int, float, float]], *, ax: Axes | None = None) -> Figure:
    """Bars of the two terms of dL/dh_t at each step t: the local one and the carried one.

    parts: (t, ||V^T delta^o_t||, ||W^T delta^a_{t+1}||) for each step, as Lecture 1's
    ``bptt_gradients`` returns them. Returns the figure.
    """
    fig, ax = figure_and_axes(ax, (7.0, 3.0))
    steps = np.array([t for t, _, _ in parts])
    local = [value for _, value, _ in parts]
    carried = [value for _, _, value in parts]
    ax.bar(steps - 0.2, local, width=0.4, label=r"local $V^\top\delta^o_t$")
    ax.bar(steps + 0.2, carried, width=0.4, label=r"carried $W^\top\delta^a_{t+1}$")
    ax.set_xticks(steps)
    ax.set_xlabel("step t")
    ax.set_ylabel("norm")
    ax.set_title(r"The two terms of $\partial L / \partial h_t$")
    ax.legend()
    return fig


def plot_truncation(
    errors: Mapping[str, Sequence[float]],
    chunks: Sequence[int],
    influence: Sequence[float],
    *,
    chunk: int = 32,
) -> Figure:
    """Two panels on truncated BPTT (Lecture 1, Section 3).

    Left: for each labelled model, the relative error ||g_k - g|| / ||g|| of the truncated
    gradient against the chunk length k (``chunks``). Right: ``influence`` (N,), how much the
    logits at each step change when the first character is replaced, log scale, with grey lines
    at the borders of ``chunk``-step chunks. Returns the figure.
    """
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.6))
    for label, values in errors.items():
        left.plot(chunks, values, "o-", label=label)
    left.set_xscale("log", base=2)
    left.set_xlabel("chunk length k")
    left.set_ylabel(r"$\|g_k - g\| / \|g\|$ for $\partial L/\partial W$")
    left.set_title("Truncated vs full BPTT gradient")
    left.legend(fontsize=8)
    right.semilogy(np.asarray(influence, dtype=float))
    for border in range(chunk, len(influence), chunk):
        right.axvline(border, color="grey", lw=0.5, alpha=0.5)
    right.set_xlabel("step t")
    right.set_ylabel(r"$\|o_t - o'_t\|$ (change in logits)")
    right.set_title(f"Effect of changing character 1 (grey: {chunk}-step chunk borders)")
    fig.tight_layout()
    return fig


def plot_jacobian_norms(
    rho: float,
    linear_norms: Sequence[float],
    product_norms: Sequence[float],
    *,
    ax: Axes | None = None,
) -> Figure:
    """||W^k||_2 and ||prod_j diag(1 - h_j^2) W||_2 against k = 1, 2, ..., with rho^k (log scale).

    linear_norms, product_norms: (n,) the largest singular values of the products of k factors
    for k = 1..n, for a W of spectral radius ``rho``. Returns the figure.
    """
    fig, ax = figure_and_axes(ax, (6.0, 3.8))
    k = np.arange(1, len(linear_norms) + 1)
    ax.semilogy(k, linear_norms, label=r"$\|W^k\|_2$ (linear RNN)")
    ax.semilogy(k, product_norms, label=r"$\|\prod \mathrm{diag}(1-h_j^2)W\|_2$ (tanh RNN)")
    ax.semilogy(k, float(rho) ** k, "k--", lw=1, label=r"$\rho^k$")
    ax.set_title(f"Gaussian W rescaled to ρ = {rho:g}")
    ax.set_xlabel("number of factors k")
    ax.legend(fontsize=8)
    return fig


def plot_gradient_norms(
    spectral_radius: float = 1.0,
    seq_len: int = 50,
    nonlinearity: str = "tanh",
    compare: Sequence[float] = (0.5, 0.9, 1.1, 1.5, 2.0),
    *,
    hidden_size: int = 32,
    seed: int = 0,
    ax: Axes | None = None,
) -> Figure:
    """Plot ||dL_T/dh_t|| against the distance T - t, log scale, for one RNN and references.

    The curve for ``spectral_radius`` is drawn thick, with the straight line rho^k
    (dashed) that a linear RNN would follow; each radius in ``compare`` adds a thin curve.
    Draws on ``ax`` when given, else on a new figure; returns the figure.
    """
    import matplotlib.pyplot as plt

    get_nonlinearity(nonlinearity)  # a clear error before anything is drawn
    fig, ax = figure_and_axes(ax, (6.4, 4.0))
    distance = np.arange(seq_len)
    others = sorted(r for r in compare if r != spectral_radius)
    colors = plt.cm.viridis(np.linspace(0.0, 0.9, len(others)))  # (n, 4) RGBA
    measured = []
    for radius, color in zip(others, colors, strict=True):
        norms = gradient_norms_by_distance(radius, seq_len, nonlinearity, hidden_size, seed)
        ax.plot(distance, norms, color=color, lw=1.2, label=f"ρ = {radius:g}")
        measured.append(norms)
    norms = gradient_norms_by_distance(spectral_radius, seq_len, nonlinearity, hidden_size, seed)
    ax.plot(distance, norms, color="crimson", lw=2.5, label=f"ρ = {spectral_radius:g} (selected)")
    measured.append(norms)
    with np.errstate(over="ignore"):
        reference = float(spectral_radius) ** distance.astype(float)
    ax.plot(distance, reference, color="crimson", ls="--", lw=1, label=f"{spectral_radius:g}$^k$")
    ax.set_yscale("log", nonpositive="mask")
    values = np.concatenate(measured)
    values = values[(values > 0) & np.isfinite(values)]
    if values.size:  # frame the measured curves; the rho^k guide may leave the frame
        ax.set_ylim(values.min() / 10, values.max() * 10)
    ax.set_xlabel("distance k = T - t (steps back from the loss)")
    ax.set_ylabel(r"$\|\partial L_T / \partial h_t\|$")
    ax.set_title(f"Gradient reaching $h_t$, {nonlinearity} RNN, H = {hidden_size}")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return fig


def interact_gradient_norms() -> Any:
    """Sliders for the spectral radius and T and a nonlinearity menu around
    :func:`plot_gradient_norms` (works in JupyterLab; returns what ``ipywidgets.interact`` does).
    """
    import ipywidgets as widgets

    def show(spectral_radius: float, seq_len: int, nonlinearity: str) -> None:
        # Returns None on purpose: the inline backend shows the new figure once.
        plot_gradient_norms(spectral_radius, seq_len, nonlinearity)

    return widgets.interact(
        show,
        spectral_radius=widgets.FloatSlider(
            value=1.0, min=0.1, max=3.0, step=0.05, description="ρ", continuous_update=False
        ),
        seq_len=widgets.IntSlider(
            value=50, min=5, max=200, step=5, description="T", continuous_update=False
        ),
        nonlinearity=widgets.Dropdown(
            options=list(NONLINEARITIES), value="tanh", description="nonlinearity"
        ),
    )


def plot_cell_gradient_norms(
    curves: Mapping[str, Mapping[str, Any]] | None = None,
    seq_len: int = 60,
    *,
    ax: Axes | None = None,
) -> Figure:
    """Plot :func:`cell_gradient_norms_by_distance` for several cells on one log-scale axis.

    ``curves`` maps a label to the keyword arguments of one measurement, e.g.
    ``{"LSTM, forget bias 1": {"cell": "lstm", "forget_bias": 1.0}}``; the default compares the
    RNN, the LSTM (forget bias 0 and 1) and the GRU. Returns the figure.
    """
    if curves is None:
        curves = {
            "RNN (tanh)": {"cell": "rnn"},
            "LSTM, forget bias 0": {"cell": "lstm", "forget_bias": 0.0},
            "LSTM, forget bias 1": {"cell": "lstm", "forget_bias": 1.0},
            "GRU": {"cell": "gru"},
        }
    fig, ax = figure_and_axes(ax, (6.4, 4.0))
    for label, kwargs in curves.items():
        norms = cell_gradient_norms_by_distance(seq_len=seq_len, **kwargs)
        ax.plot(np.arange(seq_len), norms, lw=1.8, label=label)
    ax.set_yscale("log", nonpositive="mask")
    ax.set_xlabel("distance k = T - t (steps back from the loss)")
    ax.set_ylabel(r"$\|\partial L_T / \partial h_t\|$")
    ax.set_title("Gradient reaching step t, freshly initialised cells")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return fig
