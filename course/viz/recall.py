"""Figures of the long-range recall task (Lecture 2, Section 4)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from course.viz._figure import running_mean

if TYPE_CHECKING:  # imported for type hints only
    from matplotlib.figure import Figure

__all__ = ["plot_recall"]


def plot_recall(
    accuracies: Mapping[str, Sequence[float]],
    histories: Mapping[str, Any],
    distances: Sequence[int],
    *,
    train_max: int,
    num_keys: int,
    window: int = 50,
) -> Figure:
    """Two panels: recall accuracy against the distance L, and the recall loss during training.

    accuracies: for each labelled model, its accuracy at each of ``distances``. histories: the
    same labels' :class:`course.train.TrainingHistory`, whose ``logs["recall"]`` holds the
    recall part of the loss (nats), drawn as a running mean over ``window`` steps. The shaded
    band marks the distances 1..``train_max`` seen in training; grey lines mark chance,
    1 / ``num_keys``, and its loss, ln ``num_keys``. Returns the figure.
    """
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
    for label, values in accuracies.items():
        left.plot(distances, values, "o-", label=label)
    left.axhline(1 / num_keys, color="grey", ls=":", label=f"chance (1/{num_keys})")
    left.axvspan(1, train_max, color="grey", alpha=0.1, label="lengths seen in training")
    left.set_xscale("log", base=2)
    left.set_xlabel("number of distractors L")
    left.set_ylabel("recall accuracy (fresh sequences)")
    left.set_ylim(0, 1.05)
    left.legend(fontsize=8)
    for label, history in histories.items():
        right.plot(*running_mean(history.logs["recall"], window), label=label)
    right.axhline(np.log(num_keys), color="grey", ls=":", label=f"guessing, ln {num_keys}")
    right.set_xlabel("step")
    right.set_ylabel("recall loss (nats, running mean)")
    right.legend(fontsize=8)
    fig.tight_layout()
    return fig
