"""Measuring and using a biLM (Unit 3): held-out perplexity per direction, ELMo's scalar mix,
features of marked words, probing classifiers, and the similarity of a word across contexts."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch
from torch import nn
from torch.nn import functional as F

from course.checks import ShapeMismatch, expect_shape
from course.data.english import Example
from course.data.words import WordVocab, sentence_tokens
from course.models import model_device
from course.models.bilm import BiLM
from course.train import fit

__all__ = [
    "encode_sentences",
    "heldout_perplexity",
    "ScalarMix",
    "marked_word_features",
    "Probe",
    "train_probe",
    "probe_accuracy",
    "mean_pairwise_cosine",
]


def encode_sentences(
    sentences: Sequence[Sequence[str]], vocab: WordVocab
) -> tuple[torch.Tensor, torch.Tensor]:
    """Padded word ids (B, T) and lengths (B,) of token lists."""
    if not sentences:
        raise ValueError("sentences: expected at least one sentence")
    lengths = torch.tensor([len(s) for s in sentences], dtype=torch.long)
    if int(lengths.min()) < 1:
        raise ValueError("sentences: every sentence needs at least one token")
    words = torch.zeros(len(sentences), int(lengths.max()), dtype=torch.long)
    for b, sentence in enumerate(sentences):
        words[b, : len(sentence)] = torch.tensor(vocab.ids(sentence))
    return words, lengths


@torch.no_grad()
def heldout_perplexity(
    model: BiLM, vocab: WordVocab, sentences: Sequence[Sequence[str]], batch_size: int = 16
) -> dict[str, float]:
    """Perplexity of the forward and the backward LM on whole sentences (with <s> and </s>).

    The forward LM predicts every token after <s>, </s> included; the backward LM every token
    before </s>, <s> included; so both score the same number of tokens per sentence, as an
    n-gram model reading each way does. Sentences are sorted by length for batching.

    The figures do not depend on ``batch_size`` (padding is never scored). It is 16 by default
    because 64 sentences make softmax inputs of tens of MB, which the C allocator maps afresh
    for every batch: on the checkpoint's held-out split, one thread, 64 took 24-27 s (10-12 s
    of it in the system, faulting pages in) and 16 took 16 s, with the same perplexities.
    """
    was_training = model.training
    model.eval()
    device = model_device(model)
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    nats = {"forward": 0.0, "backward": 0.0}
    count = 0
    for start in range(0, len(order), batch_size):
        batch = [sentences[i] for i in order[start : start + batch_size]]
        words, lengths = encode_sentences(batch, vocab)
        _, logs = model.lm_loss(words.to(device), lengths.to(device))
        n = int((lengths - 1).sum())
        nats["forward"] += logs["forward"] * n
        nats["backward"] += logs["backward"] * n
        count += n
    model.train(was_training)
    return {direction: math.exp(total / count) for direction, total in nats.items()}


# ----------------------------------------------------------------------------------------------
# ELMo's task-specific mix of layers


class ScalarMix(nn.Module):
    """ELMo_k = γ Σ_j s_j h_{k,j} with s = softmax(w); w (L+1,) and γ are learned per task.

    w starts at zeros (an equal mix) and γ at 1.
    """

    def __init__(self, num_layers: int) -> None:
        super().__init__()
        if num_layers < 1:
            raise ValueError(f"num_layers: expected 1 or more layers to mix, got {num_layers}")
        self.w = nn.Parameter(torch.zeros(num_layers))
        self.gamma = nn.Parameter(torch.ones(()))

    def weights(self) -> torch.Tensor:
        """s = softmax(w), (L+1,)."""
        return torch.softmax(self.w, dim=0)

    def forward(self, layers: torch.Tensor) -> torch.Tensor:
        """layers: (L+1, ..., F) -> (..., F)."""
        if layers.dim() < 2 or layers.shape[0] != len(self.w):
            raise ShapeMismatch(
                f"layers: expected ({len(self.w)}, ..., F), one slice per layer, "
                f"got shape {tuple(layers.shape)}"
            )
        s = self.weights().reshape(-1, *([1] * (layers.dim() - 1)))  # (L+1, 1, ..., 1)
        return self.gamma * (s * layers).sum(dim=0)


# ----------------------------------------------------------------------------------------------
# Features of a marked word, probing classifiers, similarity across contexts


@torch.no_grad()
def marked_word_features(
    model: BiLM, vocab: WordVocab, examples: Sequence[Example], batch_size: int = 256
) -> torch.Tensor:
    """Every layer's representation of each example's marked word: (L+1, N, 2D).

    Each sentence is read whole, between <s> and </s>, lower-cased, as the biLM was trained.
    """
    was_training = model.training
    model.eval()
    device = model_device(model)
    out = []
    for start in range(0, len(examples), batch_size):
        batch = examples[start : start + batch_size]
        words, lengths = encode_sentences([sentence_tokens(e.tokens) for e in batch], vocab)
        layers = model.layers(words.to(device), lengths.to(device))  # (L+1, B, T, 2D)
        target = torch.tensor([e.target + 1 for e in batch], device=device)  # +1: the <s>
        out.append(layers[:, torch.arange(len(batch), device=device), target])  # (L+1, B, 2D)
    model.train(was_training)
    if not out:
        raise ValueError("examples: expected at least one example")
    return torch.cat(out, dim=1)


class Probe(nn.Module):
    """A linear classifier on one layer (``layer=j``) or on ELMo's learned mix (``layer=None``).

    Features are standardised per layer with the training set's mean and standard deviation,
    so that the mix weights s_j compare layers, not the scales of their activations.
    """

    def __init__(self, features: torch.Tensor, n_classes: int, layer: int | None) -> None:
        super().__init__()
        if features.dim() != 3:
            raise ShapeMismatch(f"features: expected (L+1, N, F), got {tuple(features.shape)}")
        self.layer = layer
        self.register_buffer("mean", features.mean(dim=1, keepdim=True))  # (L+1, 1, F)
        self.register_buffer("std", features.std(dim=1, keepdim=True) + 1e-6)
        self.mix = ScalarMix(features.shape[0]) if layer is None else None
        self.classifier = nn.Linear(features.shape[2], n_classes)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """features (L+1, N, F) -> logits (N, n_classes)."""
        z = (features - self.mean) / self.std  # (L+1, N, F)
        x = self.mix(z) if self.mix is not None else z[self.layer]  # (N, F)
        return self.classifier(x)


def train_probe(
    features: torch.Tensor,
    labels: torch.Tensor,
    n_classes: int,
    layer: int | None,
    *,
    steps: int = 150,
    lr: float = 0.05,
    weight_decay: float = 1e-2,
    mix_decay: float = 1e-2,
    seed: int = 0,
) -> Probe:
    """Fit a :class:`Probe` with full-batch Adam through ``course.train.fit``.

    ``weight_decay`` is an L2 penalty on the weights the features meet (γ·A for the mix, A for
    one layer); ``mix_decay`` is ELMo's λ‖w‖² on the mix's layer weights, which pulls them towards
    an equal average. The defaults (150 steps, lr 0.05, 0.01 and 0.01) were chosen on the tasks'
    ``val`` split for Lecture 3; its figures are measured on ``test``.
    """
    expect_shape(labels, (features.shape[1],), "labels")
    torch.manual_seed(seed)
    probe = Probe(features, n_classes, layer)

    def loss_fn(model: Probe, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, y = batch
        # L2 on the weights the features actually meet: γ·A for the mix (γ alone is a free
        # scale that would otherwise undo the penalty), A for one layer.
        scale = model.mix.gamma.square() if model.mix is not None else 1.0
        penalty = weight_decay * scale * model.classifier.weight.square().sum()
        if model.mix is not None:  # ELMo's λ‖w‖²: pulls the mix towards an equal average
            penalty = penalty + mix_decay * model.mix.w.square().sum()
        return F.cross_entropy(model(x), y) + penalty

    fit(
        probe,
        loss_fn,
        itertools.repeat((features, labels)),
        steps=steps,
        lr=lr,
        clip_norm=None,
        progress=False,
    )
    probe.eval()
    return probe


@torch.no_grad()
def probe_accuracy(probe: Probe, features: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of examples whose label gets the highest logit."""
    return float((probe(features).argmax(dim=1) == labels).float().mean())


def mean_pairwise_cosine(vectors: torch.Tensor) -> float:
    """Mean cosine similarity over all pairs of distinct rows of ``vectors`` (N, F), N >= 2."""
    expect_shape(vectors, ("N", "F"), "vectors")
    if len(vectors) < 2:
        raise ValueError(f"vectors: need at least 2 rows to compare, got {len(vectors)}")
    unit = F.normalize(vectors.double(), dim=1)
    sims = unit @ unit.T  # (N, N)
    n = len(vectors)
    return float((sims.sum() - sims.diagonal().sum()) / (n * (n - 1)))
