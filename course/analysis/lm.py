"""Measuring a character-level language model: held-out bits per character, baselines, samples.

- :func:`bits_per_char`: the held-out cross-entropy of a model, in bits per character.
- :func:`windowed_bits_per_char`: the same for a model with a fixed context (a GPT).
- :func:`ngram_bits_per_char`: the unigram and bigram baselines with add-k smoothing.
- :func:`sample`: text generated one character at a time.

All cross-entropies are averages over predicted characters: a model that predicts character
t + 1 from characters 1..t. Bits are nats divided by ln 2. A model here maps ids (B, T) and an
optional state to (logits (B, T, K), state), as ``course.models.recurrent`` models do; K is the
vocabulary size |𝒱| (``vocab_size`` in the code).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from course.checks import expect_dtype, expect_shape
from course.data.chars import CharVocab
from course.models import model_device

__all__ = [
    "bits_per_char",
    "windowed_bits_per_char",
    "ngram_log_probs",
    "ngram_bits_per_char",
    "sample",
]

LN2 = math.log(2.0)


@torch.no_grad()
def bits_per_char(
    model: nn.Module, ids: torch.Tensor, *, batch_size: int = 16, seq_len: int = 256
) -> float:
    """Average cross-entropy, in bits, of predicting ``ids[t + 1]`` from ``ids[: t + 1]``.

    ids: (N,) integer tensor. The stream is cut into ``batch_size`` contiguous pieces that
    are read in parallel, ``seq_len`` characters at a time, carrying the hidden state from
    chunk to chunk (so every prediction sees its piece's whole past). The last
    (N - 1) mod batch_size characters are not scored. The ids go to the model's device.
    """
    expect_shape(ids, ("N",), "ids")
    expect_dtype(ids, "iu", "ids")
    if len(ids) < 2:
        raise ValueError(f"ids: need at least 2 ids to score one prediction, got {len(ids)}")
    streams = min(batch_size, len(ids) - 1)
    length = (len(ids) - 1) // streams
    ids = ids.to(model_device(model))
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

        unigram:  p(b)     = (count(b) + k) / (N + k |𝒱|)
        bigram:   p(b | a) = (count(a b) + k) / (count(a .) + k |𝒱|)

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
    val_ids = val_ids.long()
    log_p = ngram_log_probs(train_ids, vocab_size, n=n, k=k)
    if n == 1:
        nats = -log_p[val_ids[1:]]  # (N_val - 1,)
    else:
        nats = -log_p[val_ids[:-1], val_ids[1:]]  # (N_val - 1,)
    return float(nats.mean()) / LN2


def ngram_log_probs(
    train_ids: torch.Tensor, vocab_size: int, *, n: int = 1, k: float = 1.0
) -> torch.Tensor:
    """The add-k smoothed model of :func:`ngram_bits_per_char`, counted on ``train_ids`` (N,):
    log p(b) (vocab_size,) for n=1, log p(b | a) (vocab_size, vocab_size), row a, for n=2;
    float64. Its rows are the scores a step function gives to ``course.decoding.sample``."""
    if n not in (1, 2):
        raise ValueError(f"n: expected 1 (unigram) or 2 (bigram), got {n}")
    if not k > 0:
        raise ValueError(f"k: expected a positive smoothing constant, got {k}")
    train_ids, K = train_ids.long(), vocab_size  # K = |𝒱|
    if n == 1:
        counts = torch.bincount(train_ids, minlength=K).double()  # (K,)
        return torch.log((counts + k) / (counts.sum() + k * K))  # (K,)
    pairs = train_ids[:-1] * K + train_ids[1:]  # (N - 1,) index of (a, b)
    counts = torch.bincount(pairs, minlength=K * K).double().view(K, K)  # (K, K)
    return torch.log((counts + k) / (counts.sum(dim=1, keepdim=True) + k * K))  # (K, K)


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
    generator = torch.Generator().manual_seed(seed)  # on the CPU: the same text on every device
    device = model_device(model)
    was_training = model.training
    model.eval()
    logits, state = model(vocab.encode(prompt)[None, :].to(device))  # (1, P, K)
    out: list[int] = []
    for _ in range(length):
        last = logits[0, -1].cpu() / temperature  # (K,)
        last[CharVocab.UNK_ID] = -math.inf
        next_id = torch.multinomial(F.softmax(last, dim=-1), 1, generator=generator)  # (1,)
        out.append(int(next_id))
        logits, state = model(next_id[None, :].to(device), state)  # (1, 1, K)
    model.train(was_training)
    return prompt + vocab.decode(out)


@torch.no_grad()
def windowed_bits_per_char(
    model: nn.Module, ids: torch.Tensor, *, window: int, batch_size: int = 16
) -> float:
    """Average cross-entropy, in bits, of predicting ``ids[t + 1]`` within windows of a stream.

    For models with a fixed context and no state to carry (a GPT: ids (B, T) -> logits
    (B, T, K), T <= its max_len); a recurrent model (ids -> (logits, state)) is scored the
    same way, starting from a zero state in every window, so both see the same context. The stream ids (N,) is cut into consecutive windows of
    ``window`` + 1 ids that overlap by one; inside a window, prediction t sees the t + 1 ids
    before it, so the average context is about window / 2 characters, shorter than the whole
    past that :func:`bits_per_char` gives a recurrent model. The last incomplete window is
    not scored. The windows go to the model's device.
    """
    expect_shape(ids, ("N",), "ids")
    expect_dtype(ids, "iu", "ids")
    if window < 1 or batch_size < 1:
        raise ValueError(f"window and batch_size: expected >= 1, got {window}, {batch_size}")
    count = (len(ids) - 1) // window
    if count < 1:
        raise ValueError(f"ids: need at least window + 1 = {window + 1} ids, got {len(ids)}")
    ids = ids.to(model_device(model))
    starts = torch.arange(count, device=ids.device) * window  # (W,)
    offsets = torch.arange(window + 1, device=ids.device)
    windows = ids[starts[:, None] + offsets[None, :]].long()  # (W, window + 1)
    was_training = model.training
    model.eval()
    total_nats = 0.0
    for b in range(0, count, batch_size):
        chunk = windows[b : b + batch_size]  # (B, window + 1)
        logits = model(chunk[:, :-1])  # (B, window, K)
        if isinstance(logits, tuple):  # a recurrent model: (logits, final state)
            logits = logits[0]
        total_nats += float(
            F.cross_entropy(logits.flatten(0, 1), chunk[:, 1:].flatten(), reduction="sum")
        )
    model.train(was_training)
    return total_nats / (count * window) / LN2
