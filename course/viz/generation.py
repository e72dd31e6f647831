"""Figures of Unit 8: what temperature, top-k and top-p leave of a next-token distribution,
generation time with and without a KV cache, and XLNet's permutation masks.

Each explorer is a pure figure function with defaults plus a thin ``interact`` wrapper.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from course.analysis.permutation_lm import permutation_masks
from course.decoding import filter_logits
from course.viz._figure import figure_and_axes

if TYPE_CHECKING:  # imported for type hints only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "EXAMPLE_TOKENS",
    "example_logits",
    "plot_sampling_filters",
    "interact_sampling_filters",
    "plot_generation_seconds",
    "plot_permutation_masks",
]

EXAMPLE_TOKENS = ("mat", "floor", "sofa", "bed", "rug", "chair", "table", "roof", "moon", "idea")


def example_logits() -> torch.Tensor:
    """(10,) logits of a made-up next token after "The cat sat on the": a few likely
    completions and a long tail, z_i = 2.5 − 1.2 · ln(i + 1) − 0.15 i (Zipf-like)."""
    i = torch.arange(len(EXAMPLE_TOKENS), dtype=torch.float64)
    return 2.5 - 1.2 * torch.log(i + 1) - 0.15 * i


def plot_sampling_filters(
    logits: torch.Tensor | None = None,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    tokens: Sequence[str] | None = None,
    ax: Axes | None = None,
) -> Figure:
    """The model's distribution softmax(z) (grey) and the one sampling draws from after the
    filters (blue): softmax(filter(z)), with temperature, then top-k, then top-p."""
    z = example_logits() if logits is None else logits.detach().double()
    if z.dim() != 1:
        raise ValueError(f"logits: expected one distribution (V,), got {tuple(z.shape)}")
    if tokens is not None:
        labels = list(tokens)
    elif logits is None:
        labels = list(EXAMPLE_TOKENS)
    else:
        labels = [str(i) for i in range(len(z))]
    if len(labels) != len(z):
        raise ValueError(f"tokens: expected {len(z)} labels, got {len(labels)}")
    before = z.softmax(-1).numpy()
    filtered = filter_logits(z, temperature=temperature, top_k=top_k, top_p=top_p)
    after = filtered.softmax(-1).numpy()
    kept = int((filtered > float("-inf")).sum())
    fig, ax = figure_and_axes(ax, (7.2, 3.2))
    x = np.arange(len(z))
    ax.bar(x - 0.2, before, width=0.4, color="0.7", label="model: softmax(z)")
    ax.bar(x + 0.2, after, width=0.4, color="tab:blue", label="sampled from")
    ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("probability")
    ax.set_ylim(0, 1)
    settings = f"τ = {temperature:g}, top-k = {top_k or 'off'}, top-p = {top_p or 'off'}"
    ax.set_title(f"{settings}: {kept} of {len(z)} tokens kept", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def interact_sampling_filters() -> Any:
    """Temperature, top-k and top-p sliders around :func:`plot_sampling_filters`."""
    import ipywidgets as widgets

    def show(temperature: float, top_k: int, top_p: float) -> None:
        # Returns None on purpose: the inline backend shows the new figure once.
        plot_sampling_filters(
            temperature=temperature, top_k=top_k or None, top_p=None if top_p >= 1 else top_p
        )

    return widgets.interact(
        show,
        temperature=widgets.FloatSlider(min=0.1, max=3.0, step=0.1, value=1.0),
        top_k=widgets.IntSlider(
            min=0, max=len(EXAMPLE_TOKENS), value=0, description="top-k (0 off)"
        ),
        top_p=widgets.FloatSlider(min=0.05, max=1.0, step=0.05, value=1.0, description="top-p"),
    )


def plot_generation_seconds(
    cached: Sequence[tuple[int, float]],
    uncached: Sequence[tuple[int, float]],
    ax: Axes | None = None,
) -> Figure:
    """Seconds against generated tokens, with and without a KV cache (from
    ``course.analysis.generation.generation_seconds``)."""
    if not cached or not uncached:
        raise ValueError("cached and uncached: expected at least one (tokens, seconds) pair each")
    fig, ax = figure_and_axes(ax, (5.6, 3.4))
    for pairs, label, marker in ((cached, "KV cache", "o"), (uncached, "no cache", "s")):
        n, seconds = zip(*sorted(pairs), strict=True)
        ax.plot(n, seconds, marker=marker, label=label)
    ax.set_xlabel("generated tokens n")
    ax.set_ylabel("seconds")
    ax.set_title("without a cache, step t re-reads all t positions", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_permutation_masks(order: Sequence[int] = (2, 0, 3, 1)) -> Figure:
    """XLNet's content-stream and query-stream masks for a factorisation order (white: may
    attend; query position i in rows, key position j in columns)."""
    import matplotlib.pyplot as plt

    content, query = permutation_masks(order)
    T = len(content)
    fig, axes = plt.subplots(1, 2, figsize=(6.4, 3.2), constrained_layout=True)
    panels = {"content stream: sees z_≤t": content, "query stream: sees z_<t": query}
    for ax, (title, mask) in zip(axes, panels.items(), strict=True):
        ax.imshow(mask.numpy(), cmap="Greys_r", vmin=0, vmax=1)
        ax.set_xticks(range(T), [f"x{j}" for j in range(T)], fontsize=8)
        ax.set_yticks(range(T), [f"x{i}" for i in range(T)], fontsize=8)
        ax.set_xlabel("key position j", fontsize=8)
        ax.set_ylabel("query position i", fontsize=8)
        ax.set_title(title, fontsize=9)
    fig.suptitle(f"factorisation order z = {tuple(int(i) for i in order)}", fontsize=10)
    return fig
