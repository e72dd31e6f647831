"""Figures of Unit 7: a fill-mask explorer, the feature-extraction table, and anisotropy by layer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # imported for type hints only
    from matplotlib.figure import Figure

    from course.data.wordpiece import WordPiece
    from course.models.bert import BertForPreTraining

__all__ = ["plot_fill_mask", "interact_fill_mask", "plot_feature_choice", "plot_anisotropy"]

FILL_MASK_EXAMPLE = "and god said , let there be [MASK] ."


def plot_fill_mask(
    model: BertForPreTraining,
    wordpiece: WordPiece,
    text: str = FILL_MASK_EXAMPLE,
    k: int = 8,
) -> Figure:
    """The ``k`` most probable tokens for each [MASK] of ``text``, one bar chart per mask."""
    import matplotlib.pyplot as plt

    from course.models.bert import fill_mask

    if not 1 <= k <= len(wordpiece):
        raise ValueError(f"k: expected 1..{len(wordpiece)}, got {k}")
    predictions = fill_mask(model, wordpiece, text, k)
    fig, axes = plt.subplots(
        1, len(predictions), figsize=(3.6 * len(predictions) + 0.6, 0.32 * k + 1.4),
        squeeze=False, constrained_layout=True,
    )  # fmt: skip
    for m, (ax, top) in enumerate(zip(axes[0], predictions, strict=True), start=1):
        tokens, probs = [t for t, _ in top][::-1], [p for _, p in top][::-1]
        bars = ax.barh(tokens, probs, color="C0")
        ax.bar_label(bars, labels=[f"{p:.3f}" for p in probs], fontsize=8, padding=2)
        ax.set_xlim(0, min(1.0, 1.3 * max(probs)))
        ax.set_xlabel("probability")
        ax.set_title(f"[MASK] {m}" if len(predictions) > 1 else "[MASK]", fontsize=10)
    fig.suptitle(text, fontsize=10)
    return fig


def interact_fill_mask(model: BertForPreTraining, wordpiece: WordPiece) -> Any:
    """A text box and a k slider around :func:`plot_fill_mask` (what ``interact`` returns)."""
    import ipywidgets as widgets

    def show(text: str, k: int) -> None:
        # Returns None on purpose: the inline backend shows the new figure once.
        if "[MASK]" not in text:
            print("Put [MASK] where a token is hidden.")
            return
        plot_fill_mask(model, wordpiece, text, k)

    return widgets.interact(
        show,
        text=widgets.Text(value=FILL_MASK_EXAMPLE, continuous_update=False),
        k=widgets.IntSlider(value=8, min=3, max=15, continuous_update=False),
    )


def plot_feature_choice(
    ours: Mapping[str, float],
    paper: Mapping[str, float],
    *,
    baseline: float,
    baseline_name: str,
    ours_label: str = "ours: probe accuracy",
    paper_label: str = "BERT-base paper: CoNLL-2003 dev F1",
) -> Figure:
    """Our accuracy for each feature choice beside the paper's figure for the same choice."""
    import matplotlib.pyplot as plt

    names = list(ours)
    if set(names) != set(paper):
        raise ValueError(
            f"ours and paper: expected the same choices, got {names} and {list(paper)}"
        )
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.4), constrained_layout=True)
    for ax, values, label, lo in (
        (left, [ours[n] for n in names], ours_label, 0.0),
        (right, [paper[n] for n in names], paper_label, 90.0),
    ):
        bars = ax.bar(names, values, color=["0.6"] + ["C0"] * (len(names) - 1))
        ax.bar_label(
            bars, labels=[f"{v:.3f}" if v <= 1 else f"{v:.1f}" for v in values], fontsize=8
        )
        ax.set_title(label, fontsize=10)
        ax.set_ylim(lo, max(values) * 1.04 if lo == 0 else 97)
        ax.tick_params(axis="x", labelrotation=25, labelsize=8)
    left.axhline(baseline, color="k", ls="--", lw=1, label=baseline_name)
    left.legend(loc="lower right", fontsize=8)
    return fig


def plot_anisotropy(
    values: Mapping[str, Sequence[float]], *, title: str = "anisotropy by layer"
) -> Figure:
    """Mean cosine of random token pairs, layer by layer, one line per model."""
    import matplotlib.pyplot as plt

    if not values:
        raise ValueError("values: expected at least one model")
    fig, ax = plt.subplots(figsize=(5.5, 3.2), constrained_layout=True)
    for name, v in values.items():
        v = np.asarray(v, dtype=float)
        ax.plot(range(len(v)), v, marker="o", label=name)
    ax.axhline(0, color="k", lw=0.6)
    ax.set_xlabel("layer (0 = embeddings)")
    ax.set_ylabel("mean cosine, random token pairs")
    ax.set_ylim(-0.1, 1)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return fig
