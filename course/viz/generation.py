"""Figures of Unit 8: what temperature, top-k and top-p leave of a next-token distribution,
generation time with and without a KV cache, XLNet's permutation masks, and in-context
learning's accuracy on the key-value task.

Each explorer is a pure figure function with defaults plus a thin ``interact`` wrapper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from course.analysis.in_context import InContextAccuracy
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
    "plot_model_samples",
    "interact_model_samples",
    "plot_generation_seconds",
    "plot_permutation_masks",
    "plot_in_context_accuracy",
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
        temperature=widgets.FloatSlider(
            min=0.1, max=3.0, step=0.1, value=1.0, continuous_update=False
        ),
        top_k=widgets.IntSlider(
            min=0,
            max=len(EXAMPLE_TOKENS),
            value=0,
            description="top-k (0 off)",
            continuous_update=False,
        ),
        top_p=widgets.FloatSlider(
            min=0.05, max=1.0, step=0.05, value=1.0, description="top-p", continuous_update=False
        ),
    )


def _shown(token: str) -> str:
    """A token as a tick label: visible spaces and line breaks."""
    return token.replace(" ", "␣").replace("\n", "⏎") or "∅"


def plot_model_samples(
    model: Any,
    vocab: Any,
    prompt: str = "And God said, ",
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    num_samples: int = 3,
    length: int = 60,
    shown: int = 15,
    seed: int = 0,
) -> Figure:
    """A language model's next-token distribution after ``prompt``, before (grey) and after
    (blue) the filters, for its ``shown`` most probable tokens, and ``num_samples``
    continuations of ``length`` tokens drawn with those filters (generator seeded with ``seed``).

    ``model`` is a ``course.models.gpt.GPT`` (ids (B, T) -> logits (B, T, |𝒱|), and
    ``generate``); ``vocab`` encodes the prompt to ids (N,) and decodes ids back to text.
    """
    import matplotlib.pyplot as plt

    if num_samples < 1 or length < 1 or shown < 1:
        raise ValueError(
            f"num_samples, length and shown: expected >= 1, got {num_samples}, {length}, {shown}"
        )
    ids = vocab.encode(prompt)[None]  # (1, P)
    if ids.shape[1] < 1:
        raise ValueError("prompt: expected at least one token")
    was_training = model.training
    model.eval()
    with torch.no_grad():
        z = model(ids)[0, -1].double()  # (|𝒱|,): scores of the next token
    model.train(was_training)
    filtered = filter_logits(z, temperature=temperature, top_k=top_k, top_p=top_p)
    before, after = z.softmax(-1), filtered.softmax(-1)  # (|𝒱|,) each
    top = before.argsort(descending=True)[:shown]  # the most probable tokens under the model
    generator = torch.Generator().manual_seed(seed)
    drawn = model.generate(
        ids.expand(num_samples, -1),
        length,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        generator=generator,
    )  # (num_samples, P + length)
    fig, (bars, text) = plt.subplots(
        2, 1, figsize=(7.2, 4.6), gridspec_kw={"height_ratios": [3, 2]}, constrained_layout=True
    )
    x = np.arange(len(top))
    bars.bar(x - 0.2, before[top].numpy(), width=0.4, color="0.7", label="model")
    bars.bar(x + 0.2, after[top].numpy(), width=0.4, color="tab:blue", label="sampled from")
    bars.set_xticks(x, [_shown(vocab.decode([int(i)])) for i in top], fontsize=9)
    bars.set_ylabel("probability")
    kept = int((filtered > float("-inf")).sum())
    settings = f"τ = {temperature:g}, top-k = {top_k or 'off'}, top-p = {top_p or 'off'}"
    bars.set_title(f"next token after {prompt!r} ({settings}: {kept} of {len(z)} kept)", fontsize=9)
    bars.legend(fontsize=8)
    text.axis("off")
    for row, sample in enumerate(drawn):
        continuation = vocab.decode(sample[ids.shape[1] :]).replace("\n", " ")
        text.text(0, 1 - row / num_samples, f"{row + 1}. …{continuation}", va="top", fontsize=8,
                  family="monospace", transform=text.transAxes)  # fmt: skip
    return fig


def interact_model_samples(model: Any, vocab: Any, prompt: str = "And God said, ") -> Any:
    """Temperature, top-k and top-p sliders around :func:`plot_model_samples`."""
    import ipywidgets as widgets

    def show(temperature: float, top_k: int, top_p: float) -> None:
        # Returns None on purpose: the inline backend shows the new figure once.
        plot_model_samples(
            model,
            vocab,
            prompt,
            temperature=temperature,
            top_k=top_k or None,
            top_p=None if top_p >= 1 else top_p,
        )

    return widgets.interact(
        show,
        temperature=widgets.FloatSlider(
            min=0.1, max=2.0, step=0.1, value=1.0, continuous_update=False
        ),
        top_k=widgets.IntSlider(
            min=0, max=40, value=0, description="top-k (0 off)", continuous_update=False
        ),
        top_p=widgets.FloatSlider(
            min=0.05, max=1.0, step=0.05, value=1.0, description="top-p", continuous_update=False
        ),
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


def plot_in_context_accuracy(
    results: Mapping[str, InContextAccuracy],
    *,
    context_free: float,
    min_count: int = 30,
    ax: Axes | None = None,
) -> Figure:
    """Accuracy at a key against the pairs since it was last shown (0: a new key), one line per
    model (from ``course.analysis.in_context.in_context_accuracy``), with the baselines: chance,
    the ``context_free`` guess, and a value drawn from those shown (the first result's keys).
    Lags with fewer than ``min_count`` keys are left out."""
    if not results:
        raise ValueError("results: expected at least one model's InContextAccuracy")
    fig, ax = figure_and_axes(ax, (6.4, 3.6))
    for label, result in results.items():
        rows = result.by_lag(min_count)
        line = ax.plot([r[0] for r in rows], [r[1] for r in rows], "o-", label=label)[0]
        ax.plot([0], [result.first_accuracy], "o", color=line.get_color())
    first = next(iter(results.values()))
    rows = first.by_lag(min_count)
    ax.plot([r[0] for r in rows], [r[3] for r in rows], "s--", color="grey", ms=3,
            label="a value drawn from those shown")  # fmt: skip
    ax.axhline(context_free, color="grey", ls="-.", lw=1, label="context-free best guess")
    ax.axhline(first.chance, color="black", ls=":", lw=1,
               label=f"chance (1/{round(1 / first.chance)})")  # fmt: skip
    last = max((r[0] for r in rows), default=1)
    ax.set_xticks(range(last + 1), ["new"] + [str(lag) for lag in range(1, last + 1)])
    ax.set_xlabel("pairs since the key was last shown (new: never shown in this sequence)")
    ax.set_ylabel("accuracy of the value")
    ax.set_ylim(0, 1.02)
    ax.set_title("a key shown before is answered from the context", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
