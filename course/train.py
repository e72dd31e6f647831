"""Training and evaluating character-level language models on a CPU.

- :func:`train_language_model`: random windows, Adam (or SGD), global-norm gradient clipping,
  a tqdm progress bar and a wall-clock budget that stops early.
- :func:`bits_per_char`: the held-out cross-entropy of a model, in bits per character.
- :func:`ngram_bits_per_char`: the unigram and bigram baselines with add-k smoothing.
- :func:`sample`: text generated one character at a time.

All cross-entropies are averages over predicted characters: a model that predicts character
t + 1 from characters 1..t. Bits are nats divided by ln 2.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import nn
from torch.nn import functional as F

from course.checks import expect_dtype, expect_shape
from course.data.code import CharVocab, batch_windows

__all__ = [
    "TrainingHistory",
    "train_language_model",
    "bits_per_char",
    "ngram_bits_per_char",
    "sample",
]

LN2 = math.log(2.0)


@dataclass
class TrainingHistory:
    """What a training run did.

    losses: training cross-entropy (nats per character) of each step's batch.
    grad_norms: the global gradient norm of each step, measured before clipping.
    steps: number of optimiser steps taken.
    seconds: wall-clock time of the loop.
    stopped_by: "steps" (all done), "budget" (out of time) or "diverged" (non-finite loss).
    """

    losses: list[float] = field(default_factory=list)
    grad_norms: list[float] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0
    stopped_by: str = "steps"


def train_language_model(
    model: nn.Module,
    train_ids: torch.Tensor,
    *,
    steps: int = 1000,
    batch_size: int = 32,
    seq_len: int = 64,
    lr: float = 3e-3,
    clip_norm: float | None = 1.0,
    budget_seconds: float | None = None,
    seed: int = 0,
    optimizer: Literal["adam", "sgd"] = "adam",
    progress: bool = True,
) -> TrainingHistory:
    """Train ``model`` (ids (B, T) -> logits (B, T, K), state) on next-character prediction.

    train_ids: (N,) integer tensor. Each step draws ``batch_size`` random windows of
    ``seq_len`` characters (from a generator seeded with ``seed``) and starts from a zero
    hidden state. ``clip_norm=None`` turns clipping off. The loop stops after ``steps``
    steps, when ``budget_seconds`` have passed, or at the first non-finite loss.
    """
    expect_shape(train_ids, ("N",), "train_ids")
    expect_dtype(train_ids, "iu", "train_ids")
    if steps < 0:
        raise ValueError(f"steps: expected a non-negative number, got {steps}")
    if clip_norm is not None and clip_norm <= 0:
        raise ValueError(f"clip_norm: expected a positive number or None, got {clip_norm}")
    if optimizer == "adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    elif optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=lr)
    else:
        raise ValueError(f"optimizer: expected 'adam' or 'sgd', got {optimizer!r}")

    from tqdm.auto import tqdm

    generator = torch.Generator().manual_seed(seed)
    history = TrainingHistory()
    model.train()
    start = time.perf_counter()
    bar = tqdm(total=steps, disable=not progress, desc="training", unit="step")
    try:
        for step in range(steps):
            if budget_seconds is not None and time.perf_counter() - start > budget_seconds:
                history.stopped_by = "budget"
                break
            x, y = batch_windows(train_ids, batch_size, seq_len, generator)  # (B, T), (B, T)
            logits, _ = model(x)  # (B, T, K)
            loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())  # mean over B*T
            loss_value = loss.item()
            if not math.isfinite(loss_value):
                history.losses.append(loss_value)
                history.stopped_by = "diverged"
                break
            opt.zero_grad(set_to_none=True)
            loss.backward()
            params = [p for p in model.parameters() if p.grad is not None]
            norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params]))
            if clip_norm is not None:
                nn.utils.clip_grad_norm_(params, clip_norm)
            opt.step()
            history.losses.append(loss_value)
            history.grad_norms.append(norm.item())
            history.steps = step + 1
            bar.update(1)
            if step % 25 == 0:
                bar.set_postfix(loss=f"{loss_value:.3f}")
    finally:
        bar.close()
    history.seconds = time.perf_counter() - start
    return history


@torch.no_grad()
def bits_per_char(
    model: nn.Module, ids: torch.Tensor, *, batch_size: int = 16, seq_len: int = 256
) -> float:
    """Average cross-entropy, in bits, of predicting ``ids[t + 1]`` from ``ids[: t + 1]``.

    ids: (N,) integer tensor. The stream is cut into ``batch_size`` contiguous pieces that
    are read in parallel, ``seq_len`` characters at a time, carrying the hidden state from
    chunk to chunk (so every prediction sees its piece's whole past). The last
    (N - 1) mod batch_size characters are not scored.
    """
    expect_shape(ids, ("N",), "ids")
    expect_dtype(ids, "iu", "ids")
    if len(ids) < 2:
        raise ValueError(f"ids: need at least 2 ids to score one prediction, got {len(ids)}")
    streams = min(batch_size, len(ids) - 1)
    length = (len(ids) - 1) // streams
    x = ids[: streams * length].long().view(streams, length)  # (S, L)
    y = ids[1 : streams * length + 1].long().view(streams, length)  # (S, L)
    was_training = model.training
    model.eval()
    total_nats, state = 0.0, None
    for t0 in range(0, length, seq_len):
        logits, state = model(x[:, t0 : t0 + seq_len], state)  # (S, T, K)
        total_nats += float(
            F.cross_entropy(
                logits.flatten(0, 1), y[:, t0 : t0 + seq_len].flatten(), reduction="sum"
            )
        )
    model.train(was_training)
    return total_nats / (streams * length) / LN2


def ngram_bits_per_char(
    train: str | torch.Tensor,
    val: str | torch.Tensor,
    *,
    n: int = 1,
    k: float = 1.0,
    vocab_size: int | None = None,
) -> float:
    """Held-out bits per character of an add-k smoothed unigram (n=1) or bigram (n=2) model.

    Counts come from ``train`` only; the score is the average of -log2 p over the
    characters ``val[1:]`` (the ones a language model predicts), with

        unigram:  p(b)     = (count(b) + k) / (N + k V)
        bigram:   p(b | a) = (count(a b) + k) / (count(a .) + k V)

    ``train`` and ``val`` are both strings (a ``CharVocab`` is built from ``train``; unseen
    characters of ``val`` share its unknown id) or both (N,) integer tensors of ids in
    [0, vocab_size) (``vocab_size`` defaults to the largest id + 1).
    """
    if n not in (1, 2):
        raise ValueError(f"n: expected 1 (unigram) or 2 (bigram), got {n}")
    if not k > 0:
        raise ValueError(f"k: expected a positive smoothing constant, got {k}")
    if isinstance(train, str) != isinstance(val, str):
        raise TypeError("train and val: expected two strings or two id tensors, not a mix")
    if isinstance(train, str):
        vocab = CharVocab.from_text(train)
        train_ids, val_ids = vocab.encode(train), vocab.encode(val)
        vocab_size = len(vocab)
    else:
        train_ids, val_ids = train, val
        for name, t in (("train", train_ids), ("val", val_ids)):
            expect_shape(t, (None,), name)
            expect_dtype(t, "iu", name)
        largest = int(max(train_ids.max(), val_ids.max())) if len(train_ids) else 0
        if vocab_size is None:
            vocab_size = largest + 1
        elif largest >= vocab_size:
            raise ValueError(f"vocab_size: got {vocab_size}, but the ids go up to {largest}")
    if len(train_ids) < n:
        raise ValueError(f"train: need at least {n} characters, got {len(train_ids)}")
    if len(val_ids) < 2:
        raise ValueError(f"val: need at least 2 characters to score one, got {len(val_ids)}")
    train_ids, val_ids = train_ids.long(), val_ids.long()
    V = vocab_size
    if n == 1:
        counts = torch.bincount(train_ids, minlength=V).double()  # (V,)
        log_p = torch.log((counts + k) / (counts.sum() + k * V))  # (V,)
        nats = -log_p[val_ids[1:]]  # (N_val - 1,)
    else:
        pairs = train_ids[:-1] * V + train_ids[1:]  # (N - 1,) index of (a, b)
        counts = torch.bincount(pairs, minlength=V * V).double().view(V, V)  # (V, V)
        log_p = torch.log((counts + k) / (counts.sum(dim=1, keepdim=True) + k * V))  # (V, V)
        nats = -log_p[val_ids[:-1], val_ids[1:]]  # (N_val - 1,)
    return float(nats.mean()) / LN2


@torch.no_grad()
def sample(
    model: nn.Module,
    vocab: CharVocab,
    prompt: str,
    length: int = 200,
    *,
    temperature: float = 1.0,
    seed: int = 0,
) -> str:
    """Return ``prompt`` followed by ``length`` characters drawn one at a time from the model.

    Logits are divided by ``temperature`` (lower is more conservative) before the softmax;
    the unknown id is never drawn.
    """
    if not prompt:
        raise ValueError("prompt: expected at least one character to start from")
    if not temperature > 0:
        raise ValueError(f"temperature: expected a positive number, got {temperature}")
    if length < 0:
        raise ValueError(f"length: expected a non-negative number, got {length}")
    generator = torch.Generator().manual_seed(seed)
    was_training = model.training
    model.eval()
    logits, state = model(vocab.encode(prompt)[None, :])  # (1, P, K)
    out: list[int] = []
    for _ in range(length):
        last = logits[0, -1] / temperature  # (K,)
        last[CharVocab.UNK_ID] = -math.inf
        next_id = torch.multinomial(F.softmax(last, dim=-1), 1, generator=generator)  # (1,)
        out.append(int(next_id))
        logits, state = model(next_id[None, :], state)  # (1, 1, K)
    model.train(was_training)
    return prompt + vocab.decode(out)
