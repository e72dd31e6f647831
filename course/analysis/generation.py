"""Measuring generated text (Unit 8): diversity, repetition, the model's own likelihood, speed.

For token sequences s (lists of ids or of words), with G_n(s) the list of the n-grams of s
(len(s) − n + 1 of them, repeats included):

    distinct-n      = |∪_s set(G_n(s))| / Σ_s |G_n(s)|                      (Li et al. 2016)
    repetition-n    = 1 − Σ_s |set(G_n(s))| / Σ_s |G_n(s)|       (seq-rep-n, Welleck et al. 2019)
    log-likelihood  = Σ_t log p(y_t | prompt, y_<t)        under the model that generated y
    known words     = |{w ∈ W : w ∈ 𝒲}| / |W|    W: the words of the texts, 𝒲: a vocabulary

distinct-n pools the n-grams of all sequences (a sampler that writes the same text every time
scores low); repetition-n counts, within each sequence, the n-grams that repeat one seen
earlier in it (a loop scores high), pooled over sequences. Greedy and beam search tend to high
likelihood, low distinct-n and high repetition; sampling at a higher temperature, the reverse.
The share of known words asks of a character model's text only whether it spells words: a
word is a run of letters, lower-cased, and a text's last word is left out (a continuation cut
at a length may end inside one); grammar and sense are not measured.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Hashable, Sequence

import torch
from torch import nn

from course.checks import expect_dtype, expect_shape
from course.decoding import greedy_search
from course.models import model_device

__all__ = [
    "ngrams",
    "distinct_n",
    "repetition_rate",
    "continuation_log_likelihood",
    "generation_seconds",
    "words_of",
    "known_word_share",
]


def ngrams(sequence: Sequence[Hashable], n: int) -> list[tuple[Hashable, ...]]:
    """The n-grams of ``sequence`` in order, repeats included: len(sequence) − n + 1 of them."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n: expected an integer >= 1, got {n!r}")
    items = list(sequence)
    return [tuple(items[i : i + n]) for i in range(len(items) - n + 1)]


def _all_ngrams(sequences: Sequence[Sequence[Hashable]], n: int) -> list[list[tuple]]:
    if isinstance(sequences, (str, torch.Tensor)) or not isinstance(sequences, Sequence):
        raise TypeError(
            "sequences: expected a list of sequences (lists of tokens), "
            f"got {type(sequences).__name__}"
        )
    grams = [ngrams(s, n) for s in sequences]
    if not any(grams):
        raise ValueError(f"sequences: no sequence has {n} tokens, so there is no {n}-gram")
    return grams


def distinct_n(sequences: Sequence[Sequence[Hashable]], n: int) -> float:
    """Distinct n-grams over all n-grams, pooled over the sequences: in (0, 1]."""
    grams = _all_ngrams(sequences, n)
    return len({g for gs in grams for g in gs}) / sum(len(gs) for gs in grams)


def repetition_rate(sequences: Sequence[Sequence[Hashable]], n: int = 4) -> float:
    """The share of n-grams that repeat an earlier n-gram of the same sequence: in [0, 1)."""
    grams = _all_ngrams(sequences, n)
    return 1.0 - sum(len(set(gs)) for gs in grams) / sum(len(gs) for gs in grams)


_WORD = re.compile(r"[^\W\d_]+")  # a run of letters (Unicode's), no digits or underscores


def words_of(text: str) -> list[str]:
    """The words of ``text`` in order: its runs of letters, lower-cased."""
    if not isinstance(text, str):
        raise TypeError(f"text: expected a str, got {type(text).__name__}")
    return _WORD.findall(text.lower())


def known_word_share(texts: Sequence[str], vocabulary: set[str]) -> float:
    """The share of the words of ``texts`` (each text's last word left out) that are in
    ``vocabulary``: in [0, 1]. ``vocabulary`` is a set of lower-case words, such as
    ``set(words_of(training_text))``."""
    if isinstance(texts, str):
        raise TypeError("texts: expected a list of texts, got one str")
    words = [w for text in texts for w in words_of(text)[:-1]]
    if not words:
        raise ValueError("texts: no words to score (each text's last word is left out)")
    return sum(w in vocabulary for w in words) / len(words)


@torch.no_grad()
def continuation_log_likelihood(
    model: Callable[[torch.Tensor], torch.Tensor],
    prompt: torch.Tensor,
    continuation: torch.Tensor,
) -> torch.Tensor:
    """Σ_t log p(y_t | prompt, y_<t) for each row, in nats: (B,).

    ``model`` maps ids (B, T) to next-token logits (B, T, |𝒱|), as ``course.models.gpt.GPT``
    does; prompt (B, P) with P >= 1, continuation (B, n) ids. Every continuation token is
    scored (cut a sequence at its eos first). A module is run in eval mode.
    """
    dims = expect_shape(prompt, ("B", "P"), "prompt")
    expect_shape(continuation, (dims["B"], "n"), "continuation")
    expect_dtype(prompt, "iu", "prompt")
    expect_dtype(continuation, "iu", "continuation")
    if dims["P"] < 1:
        raise ValueError("prompt: expected at least one token to condition on")
    was_training = isinstance(model, nn.Module) and model.training
    if isinstance(model, nn.Module):
        model.eval()
    ids = torch.cat([prompt, continuation], dim=1).long()  # (B, P + n)
    logits = model(ids[:, :-1])  # (B, P + n − 1, |𝒱|): position t predicts t + 1
    if isinstance(model, nn.Module):
        model.train(was_training)
    log_probs = logits[:, dims["P"] - 1 :].log_softmax(-1)  # (B, n, |𝒱|)
    chosen = log_probs.gather(-1, continuation.long()[..., None])[..., 0]  # (B, n)
    return chosen.sum(-1)


@torch.no_grad()
def generation_seconds(
    model: nn.Module,
    lengths: Sequence[int],
    *,
    use_cache: bool,
    prompt_length: int = 1,
    batch_size: int = 1,
    seed: int = 0,
    repeats: int = 1,
) -> list[tuple[int, float]]:
    """Wall-clock seconds to generate each number of tokens in ``lengths`` (greedy, feeding
    the random prompt included): the least of ``repeats`` runs, the one least disturbed by
    other work on the machine.

    ``model`` is a ``course.models.gpt.GPT``; ``use_cache`` picks its KV-cache path or the
    re-run of the whole prefix at every step. Without a cache, step t costs about t times
    the work of one position, so the total grows like n²; with a cache, like n (until the
    attention over t cached keys dominates). Returns [(n, seconds), ...] in the given order.
    """
    if not lengths or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in lengths):
        raise ValueError(f"lengths: expected numbers of tokens >= 1, got {lengths!r}")
    if prompt_length < 1 or batch_size < 1 or repeats < 1:
        raise ValueError(
            f"prompt_length, batch_size and repeats: expected >= 1, got {prompt_length}, "
            f"{batch_size}, {repeats}"
        )
    longest = prompt_length + max(lengths) - 1
    if longest > model.config.max_len:
        raise ValueError(
            f"a prompt of {prompt_length} and {max(lengths)} new tokens need {longest} "
            f"positions; the model has max_len={model.config.max_len}"
        )
    g = torch.Generator().manual_seed(seed)
    row = torch.randint(model.config.vocab_size, (1, prompt_length), generator=g)
    row = row.to(model_device(model))  # drawn on the CPU, the same on every device
    prompt = row.expand(batch_size, prompt_length)  # (B, P): the same prompt in every row
    was_training = model.training
    model.eval()
    times = []
    for n in lengths:
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            state = model.start(batch_size, use_cache)
            for t in range(prompt_length - 1):
                _, state = model.decode_step(prompt[:, t], state)
            greedy_search(model.decode_step, state, batch_size=batch_size,
                          bos=int(prompt[0, -1]), eos=-1, max_len=n)  # fmt: skip
            runs.append(time.perf_counter() - start)
        times.append((n, min(runs)))
    model.train(was_training)
    return times
