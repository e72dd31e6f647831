"""Figures of Unit 6: the decoder's masks, gradients through a deep stack, and the heads of a
trained encoder–decoder.

Each explorer is a pure figure function with defaults plus a thin ``interact`` wrapper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from course.analysis.transformer import NORM_PLACEMENTS, gradient_norms_by_depth
from course.models.attention import causal_mask
from course.viz._figure import figure_and_axes

if TYPE_CHECKING:  # imported for type hints only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "HeadMaps",
    "PARTS",
    "plot_decoder_masks",
    "plot_depth_gradients",
    "interact_depth_gradients",
    "plot_head",
    "interact_heads",
]

PARTS = ("encoder", "decoder", "cross")
_NORM_LABEL = {"post": "post-norm", "pre": "pre-norm", "none": "no LayerNorm"}


def plot_decoder_masks(
    lengths: Sequence[int] = (5, 3), tokens: Sequence[str] | None = None
) -> Figure:
    """For each target in a padded batch: the causal mask, the padding mask and their AND.

    Row b is the b-th target (``lengths[b]`` real tokens, padded to the longest); white cells
    may be attended to (query i in rows, key j in columns).
    """
    import matplotlib.pyplot as plt

    if not lengths or min(lengths) < 1:
        raise ValueError(f"lengths: expected at least one length of at least 1, got {lengths}")
    T = max(lengths)
    causal = causal_mask(T)  # (T, T)
    real = torch.arange(T)[None, :] < torch.tensor(list(lengths))[:, None]  # (B, T)
    labels = list(tokens) if tokens is not None else [f"y{t}" for t in range(T)]
    if len(labels) != T:
        raise ValueError(f"tokens: expected {T} labels, got {len(labels)}")
    fig, axes = plt.subplots(
        len(lengths), 3, figsize=(8.4, 2.6 * len(lengths)), squeeze=False, constrained_layout=True
    )
    for b, row in enumerate(axes):
        padding = real[b][None, :].expand(T, T)  # key j is real, for every query i
        panels = {
            "causal: j ≤ i": causal,
            f"padding: key j real (length {lengths[b]})": padding,
            "combined: causal AND padding": causal & padding,
        }
        for ax, (title, mask) in zip(row, panels.items(), strict=True):
            ax.imshow(mask.numpy(), cmap="Greys_r", vmin=0, vmax=1)
            ax.set_xticks(range(T), labels, fontsize=7)
            ax.set_yticks(range(T), labels, fontsize=7)
            ax.set_title(f"target {b + 1}, {title}", fontsize=8)
            ax.set_xlabel("key j", fontsize=8)
            ax.set_ylabel("query i", fontsize=8)
    return fig


def plot_depth_gradients(
    depth: int = 24, residual: bool = True, norm: str = "pre", d: int = 64, ax: Axes | None = None
) -> Figure:
    """‖∂L/∂x_l‖ at every layer of a fresh stack (log scale): the chosen stack, and the same
    stack with the residual connections switched the other way, dashed."""
    fig, ax = figure_and_axes(ax, (6.4, 3.4))
    for has_residual, style in ((residual, "-"), (not residual, "--")):
        norms = gradient_norms_by_depth(depth, residual=has_residual, norm=norm, d=d)
        label = f"{'with' if has_residual else 'without'} residuals, {_NORM_LABEL[norm]}"
        ax.semilogy(np.arange(depth + 1), norms, style, marker=".", label=label)
    ax.set_xlabel("layer l (0 = bottom, furthest from the loss)")
    ax.set_ylabel("‖∂L/∂x_l‖")
    ax.set_title(f"gradient through {depth} feed-forward layers of width {d}", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def interact_depth_gradients() -> Any:
    """Depth, residual and LayerNorm-placement controls around :func:`plot_depth_gradients`."""
    import ipywidgets as widgets

    def show(depth: int, residual: bool, norm: str) -> None:
        # Returns None on purpose: the inline backend shows the new figure once.
        plot_depth_gradients(depth, residual, norm)

    return widgets.interact(
        show,
        depth=widgets.IntSlider(min=2, max=64, step=2, value=24, continuous_update=False),
        residual=widgets.Checkbox(value=True, description="residual"),
        norm=widgets.Dropdown(options=list(NORM_PLACEMENTS), value="pre"),
    )


@dataclass(frozen=True)
class HeadMaps:
    """Every attention weight of one example: ``maps[part][layer]`` is (heads, queries, keys)
    for part "encoder" (source × source), "decoder" (target × target) or "cross" (target ×
    source)."""

    source: Sequence[str]
    target: Sequence[str]
    maps: Mapping[str, Sequence[np.ndarray]]

    def tokens(self, part: str) -> tuple[Sequence[str], Sequence[str]]:
        """(query tokens, key tokens) of a part."""
        if part == "encoder":
            return self.source, self.source
        if part == "decoder":
            return self.target, self.target
        return self.target, self.source


def plot_head(
    example: HeadMaps, part: str = "cross", layer: int = 0, head: int = 0, ax: Axes | None = None
) -> Figure:
    """One head's weights as a heatmap: queries in rows, keys in columns."""
    if part not in PARTS:
        raise ValueError(f"part: expected one of {PARTS}, got {part!r}")
    layers = example.maps[part]
    if not 0 <= layer < len(layers):
        raise ValueError(f"layer: expected 0..{len(layers) - 1}, got {layer}")
    weights = np.asarray(layers[layer])
    if not 0 <= head < weights.shape[0]:
        raise ValueError(f"head: expected 0..{weights.shape[0] - 1}, got {head}")
    queries, keys = example.tokens(part)
    if weights.shape[1:] != (len(queries), len(keys)):
        raise ValueError(
            f"{part} layer {layer}: expected weights of shape (heads, {len(queries)}, "
            f"{len(keys)}), got {weights.shape}"
        )
    fig, ax = figure_and_axes(ax, (0.42 * len(keys) + 2.6, 0.32 * len(queries) + 1.6))
    image = ax.imshow(weights[head], vmin=0, vmax=1, cmap="Blues", aspect="auto")
    ax.set_xticks(range(len(keys)), keys, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(queries)), queries, fontsize=8)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    ax.set_title(f"{part} attention, layer {layer + 1}, head {head + 1}", fontsize=10)
    fig.colorbar(image, ax=ax, shrink=0.8)
    return fig


def interact_heads(examples: Sequence[HeadMaps]) -> Any:
    """Example, part, layer and head controls around :func:`plot_head`."""
    import ipywidgets as widgets

    if not examples:
        raise ValueError("examples: expected at least one example")
    first = examples[0].maps
    num_layers = min(len(first[part]) for part in PARTS)
    num_heads = int(np.asarray(first["cross"][0]).shape[0])

    def show(example: int, part: str, layer: int, head: int) -> None:
        # Returns None on purpose: the inline backend shows the new figure once.
        plot_head(examples[example], part, layer, head)

    return widgets.interact(
        show,
        example=widgets.IntSlider(min=0, max=len(examples) - 1, value=0, continuous_update=False),
        part=widgets.Dropdown(options=list(PARTS), value="cross"),
        layer=widgets.IntSlider(min=0, max=num_layers - 1, value=0, continuous_update=False),
        head=widgets.IntSlider(min=0, max=num_heads - 1, value=0, continuous_update=False),
    )
