"""Figures of Unit 5: attention weights, the softmax's temperature, positional encodings.

Both explorers are pure figure functions with defaults plus a thin ``interact`` wrapper. The
attention explorer needs no data: each word gets a fixed random vector (seeded by the word), and
each head fixed random projections, so any sentence typed in works offline.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from course.data.translation import stable_hash
from course.models.attention import alibi_bias, alibi_slopes, rope, sinusoidal_encoding
from course.viz._figure import figure_and_axes

if TYPE_CHECKING:  # imported for type hints only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "word_vectors",
    "head_weights",
    "plot_attention",
    "attention_explorer",
    "interact_attention",
    "plot_positions",
    "interact_positions",
]

POSITION_KINDS = ("sinusoidal", "alibi", "rope")


def word_vectors(words: Sequence[str], d: int) -> torch.Tensor:
    """(n, d): one fixed random vector per word, the same in every run (seeded by the word)."""
    rows = []
    for word in words:
        generator = torch.Generator().manual_seed(stable_hash(word) % 2**63)
        rows.append(torch.randn(d, generator=generator))
    return torch.stack(rows)


def head_weights(
    words: Sequence[str], head: int, *, scaled: bool = True, d_k: int = 64
) -> torch.Tensor:
    """(n, n) self-attention weights of one untrained head over :func:`word_vectors`.

    The head's W^Q and W^K have N(0, 1/d_k) entries (seeded by ``head``), so queries and keys
    have entries of variance about 1, as the scaling argument assumes.
    """
    x = word_vectors(words, d_k)  # (n, d_k)
    generator = torch.Generator().manual_seed(1000 + head)
    W_q = torch.randn(d_k, d_k, generator=generator) / math.sqrt(d_k)
    W_k = torch.randn(d_k, d_k, generator=generator) / math.sqrt(d_k)
    scores = (x @ W_q.T) @ (x @ W_k.T).T  # (n, n)
    if scaled:
        scores = scores / math.sqrt(d_k)
    return scores.softmax(-1)


def plot_attention(
    weights: Any,
    queries: Sequence[str],
    keys: Sequence[str],
    *,
    title: str = "",
    ax: Axes | None = None,
) -> Figure:
    """An (n, m) weight matrix as a heatmap, rows labelled by queries, columns by keys."""
    w = np.asarray(weights, dtype=float)
    if w.shape != (len(queries), len(keys)):
        raise ValueError(f"weights: expected shape ({len(queries)}, {len(keys)}), got {w.shape}")
    fig, ax = figure_and_axes(ax, (0.45 * len(keys) + 2.5, 0.4 * len(queries) + 1.4))
    image = ax.imshow(w, vmin=0, vmax=1, cmap="Blues")
    ax.set_xticks(range(len(keys)), keys, rotation=45, ha="right", fontsize=8)
    ax.set_yticks(range(len(queries)), queries, fontsize=8)
    ax.set_xlabel("key j")
    ax.set_ylabel("query i")
    if title:
        ax.set_title(title, fontsize=10)
    fig.colorbar(image, ax=ax, shrink=0.8)
    return fig


def attention_explorer(
    sentence: str = "the animal did not cross the street because it was too tired",
    head: int = 0,
    scaled: bool = True,
    d_k: int = 64,
    num_heads: int = 4,
) -> Figure:
    """Self-attention weights of one head (fixed random projections) on a typed sentence, with
    or without the 1/√d_k scaling. Unscaled scores grow like √d_k, and the softmax saturates."""
    words = sentence.split()
    if not words:
        raise ValueError("sentence: expected at least one word")
    if not 0 <= head < num_heads:
        raise ValueError(f"head: expected 0..{num_heads - 1}, got {head}")
    weights = head_weights(words, head, scaled=scaled, d_k=d_k)
    entropy = float(-(weights * weights.clamp_min(1e-12).log()).sum(-1).mean())
    label = "scaled by 1/√d_k" if scaled else "not scaled"
    return plot_attention(
        weights.numpy(), words, words,
        title=f"head {head}, {label}: mean entropy {entropy:.2f} nats (uniform: {math.log(len(words)):.2f})",
    )  # fmt: skip


def interact_attention(**defaults: Any) -> Any:
    """Sentence, head and scaling controls around :func:`attention_explorer`."""
    import ipywidgets as widgets

    def show(sentence: str, head: int, scaled: bool) -> None:
        # Returns None on purpose: the inline backend shows the new figure once.
        attention_explorer(sentence, head, scaled, **defaults)

    return widgets.interact(
        show,
        sentence=widgets.Text(value="the animal did not cross the street because it was too tired"),
        head=widgets.IntSlider(
            min=0, max=defaults.get("num_heads", 4) - 1, value=0, continuous_update=False
        ),
        scaled=widgets.Checkbox(value=True),
    )


def plot_positions(kind: str = "sinusoidal", n: int = 64, d: int = 64, head: int = 0) -> Figure:
    """What a positional scheme adds, for positions 0..n-1.

    sinusoidal: the encoding (position × dimension) and p_i·p_j; alibi: the bias −m_r·|i − j| of
    head ``head`` (of 8); rope: the score of one fixed query and key against their offset.
    """
    import matplotlib.pyplot as plt

    if kind not in POSITION_KINDS:
        raise ValueError(f"kind: expected one of {POSITION_KINDS}, got {kind!r}")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), constrained_layout=True)
    if kind == "sinusoidal":
        p = sinusoidal_encoding(n, d).numpy()
        image = left.imshow(p.T, aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1)
        left.set_xlabel("position i")
        left.set_ylabel("dimension")
        left.set_title("sinusoidal encoding p_i", fontsize=10)
        fig.colorbar(image, ax=left)
        image = right.imshow(p @ p.T, cmap="viridis")
        right.set_title("p_i · p_j: constant along each diagonal", fontsize=10)
        right.set_xlabel("position j")
        right.set_ylabel("position i")
        fig.colorbar(image, ax=right)
    elif kind == "alibi":
        if not 0 <= head < 8:
            raise ValueError(f"head: expected 0..7, got {head}")
        slopes = alibi_slopes(8)
        bias = alibi_bias(n, slopes)[head].numpy()
        image = left.imshow(bias, cmap="magma")
        left.set_title(
            f"ALiBi bias of head {head + 1}: slope {float(slopes[head]):.4f}", fontsize=10
        )
        left.set_xlabel("key j")
        left.set_ylabel("query i")
        fig.colorbar(image, ax=left)
        for r in range(8):
            right.plot(np.arange(n), alibi_bias(1, slopes, n)[r, 0].numpy(), label=f"head {r + 1}")
        right.set_xlabel("distance |i − j|")
        right.set_ylabel("bias")
        right.legend(fontsize=7, ncol=2)
    else:
        generator = torch.Generator().manual_seed(0)
        q, k = torch.randn(1, d, generator=generator), torch.randn(1, d, generator=generator)
        offsets = np.arange(-(n - 1), n)
        base = n - 1
        scores = [
            float(rope(q, torch.tensor([base + int(o)])) @ rope(k, torch.tensor([base])).T)
            for o in offsets
        ]
        left.plot(offsets, scores)
        left.set_xlabel("offset i − j")
        left.set_ylabel("rope(q, i) · rope(k, j)")
        left.set_title("RoPE: the score depends on the offset only", fontsize=10)
        shifted = [
            float(
                rope(q, torch.tensor([base + 17 + int(o)])) @ rope(k, torch.tensor([base + 17])).T
            )
            for o in offsets
        ]
        right.plot(offsets, np.abs(np.array(scores) - np.array(shifted)))
        right.set_xlabel("offset i − j")
        right.set_ylabel("|difference| after moving both by 17")
        right.set_title("the same offsets, 17 positions later", fontsize=10)
    return fig


def interact_positions() -> Any:
    """Kind, length and width controls around :func:`plot_positions`.

    Every control redraws the figure whatever the kind (ALiBi's right panel shows all eight
    heads, so there is no head control that would do nothing for the other kinds).
    """
    import ipywidgets as widgets

    def show(kind: str, n: int, d: int) -> None:
        # Returns None on purpose: the inline backend shows the new figure once.
        plot_positions(kind, n, d)

    return widgets.interact(
        show,
        kind=widgets.Dropdown(options=list(POSITION_KINDS), value="sinusoidal"),
        n=widgets.IntSlider(min=8, max=256, step=8, value=64, continuous_update=False),
        d=widgets.IntSlider(min=8, max=256, step=8, value=64, continuous_update=False),
    )
