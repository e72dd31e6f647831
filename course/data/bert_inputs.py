"""BERT's inputs (Unit 7): sentence pairs, masked-language-model masking, next-sentence pairs.

An input is one or two segments of WordPiece ids, framed by special tokens::

    [CLS] a_1 ... a_n [SEP] b_1 ... b_m [SEP] [PAD] ...
    token_type_ids:  0 for [CLS], segment A and its [SEP]; 1 for segment B and its [SEP]
    attention_mask:  1 for real tokens, 0 for padding

The special tokens have fixed ids, the first five of every course vocabulary
(``course.data.wordpiece.SPECIAL_TOKENS``): [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4.

Masked language model (MLM), as in BERT. Of the positions that hold an ordinary token (never
a special token, never padding), select 15%; the model must predict the original token there.
Of the selected positions

    80% → [MASK],   10% → a random ordinary token,   10% → unchanged          (MLM-1)

and ``labels`` holds the original id at selected positions and −100 (ignored by
``cross_entropy``) everywhere else. Two ways to select:

- ``"bernoulli"``: each eligible position independently with probability 0.15, as
  ``transformers``' ``DataCollatorForLanguageModeling`` does; a sequence gets 15% on average,
  but the number varies (and a short sequence may get none).
- ``"fixed"``: exactly k = ⌊0.15 n + ½⌋ (at least 1) of a sequence's n eligible positions,
  drawn uniformly without replacement, as in the original BERT data pipeline.

Next-sentence prediction (NSP): from each pair of consecutive sentences (A, B) of a document,
keep B with probability ½ (label 0, IsNext) or replace it by a random sentence of another
document (label 1, NotNext), the labels of ``transformers``' ``BertForPreTraining``.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from course.checks import expect_ids
from course.data.wordpiece import SPECIAL_TOKENS, WordPiece

__all__ = [
    "PAD_ID",
    "UNK_ID",
    "CLS_ID",
    "SEP_ID",
    "MASK_ID",
    "NUM_SPECIAL",
    "IGNORE_INDEX",
    "frame_pair",
    "frame_words",
    "pad_batch",
    "mask_tokens",
    "NspPair",
    "make_nsp_pairs",
    "pretraining_batch",
    "pretraining_batches",
]

PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID = (SPECIAL_TOKENS.index(t) for t in SPECIAL_TOKENS)
NUM_SPECIAL = len(SPECIAL_TOKENS)  # ids below this are special: never masked, never drawn
IGNORE_INDEX = -100  # the label of positions without a prediction (cross_entropy's default)


def frame_pair(
    ids_a: Sequence[int], ids_b: Sequence[int] | None = None, max_len: int = 128
) -> tuple[list[int], list[int]]:
    """[CLS] A [SEP] (B [SEP]) and its token type ids, truncated to ``max_len`` tokens.

    Truncation is "longest first": drop the last token of the longer segment (A on a tie)
    until everything fits.
    """
    specials = 2 if ids_b is None else 3
    if max_len <= specials:
        raise ValueError(
            f"max_len={max_len} leaves no room for the segments and {specials} specials"
        )
    a, b = list(ids_a), (list(ids_b) if ids_b is not None else [])
    while len(a) + len(b) + specials > max_len:
        if len(a) >= len(b):
            a.pop()
        else:
            b.pop()
    ids = [CLS_ID, *a, SEP_ID]
    types = [0] * len(ids)
    if ids_b is not None:
        ids += [*b, SEP_ID]
        types += [1] * (len(b) + 1)
    return ids, types


def frame_words(
    wordpiece: WordPiece, words: Sequence[str], max_len: int = 128
) -> tuple[list[int], list[int]]:
    """[CLS] pieces [SEP] for a sentence given as words, and where each word starts.

    Returns (ids, starts): ``starts[i]`` is the position in ``ids`` of the first piece of
    ``words[i]`` (the usual place to read a word's vector from), or −1 when the word has no
    piece or was cut off by truncation to ``max_len``. For word-level tasks such as the
    WordNet tagging tasks of ``course.data.english``.
    """
    if isinstance(words, str):
        raise TypeError("words: expected a sequence of words, got one str")
    if max_len < 3:
        raise ValueError(f"max_len={max_len} leaves no room for [CLS], a piece and [SEP]")
    ids, starts = [CLS_ID], []
    for word in words:
        pieces = wordpiece.encode(word)
        fits = bool(pieces) and len(ids) < max_len - 1
        starts.append(len(ids) if fits else -1)
        ids += pieces
    ids = ids[: max_len - 1] + [SEP_ID]
    return ids, starts


def pad_batch(
    framed: Sequence[tuple[Sequence[int], Sequence[int]]], length: int | None = None
) -> dict[str, torch.Tensor]:
    """Stack framed pairs into (B, T) tensors, padded with [PAD] to the longest (or ``length``).

    Returns ``input_ids``, ``token_type_ids`` and ``attention_mask`` (1 real, 0 padding), all
    int64 (B, T): the names and dtypes ``transformers``' BERT takes.
    """
    if not framed:
        raise ValueError("framed: expected at least one (ids, token_type_ids) pair")
    longest = max(len(ids) for ids, _ in framed)
    T = longest if length is None else length
    if T < longest:
        raise ValueError(f"length={length} is shorter than the longest input ({longest})")
    ids = torch.full((len(framed), T), PAD_ID, dtype=torch.long)
    types = torch.zeros(len(framed), T, dtype=torch.long)
    mask = torch.zeros(len(framed), T, dtype=torch.long)
    for row, (a, t) in enumerate(framed):
        if len(a) != len(t):
            raise ValueError(f"input {row}: {len(a)} ids but {len(t)} token type ids")
        ids[row, : len(a)] = torch.tensor(a, dtype=torch.long)
        types[row, : len(t)] = torch.tensor(t, dtype=torch.long)
        mask[row, : len(a)] = 1
    return {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}


def mask_tokens(
    input_ids: torch.Tensor,
    vocab_size: int,
    generator: torch.Generator,
    rate: float = 0.15,
    mode: Literal["bernoulli", "fixed"] = "bernoulli",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rule (MLM-1): return (masked input_ids (B, T), labels (B, T)), both int64.

    ``input_ids`` (B, T) int64 is not changed. Positions with an id below ``NUM_SPECIAL``
    ([PAD], [UNK], [CLS], [SEP], [MASK]) are never selected; random replacements are drawn
    uniformly from the ordinary ids ``NUM_SPECIAL .. vocab_size − 1``.
    """
    expect_ids(input_ids, vocab_size, "input_ids")
    if vocab_size <= NUM_SPECIAL:
        raise ValueError(f"vocab_size={vocab_size} has no ordinary tokens to draw")
    if not 0.0 < rate < 1.0:
        raise ValueError(f"rate: expected a probability in (0, 1), got {rate}")
    eligible = input_ids >= NUM_SPECIAL  # (B, T)
    if mode == "bernoulli":
        probability = torch.where(eligible, rate, 0.0)
        selected = torch.bernoulli(probability, generator=generator).bool()
    elif mode == "fixed":
        n = eligible.sum(1)  # (B,)
        k = torch.where(n > 0, torch.floor(rate * n + 0.5).clamp(min=1), 0)  # (B,)
        keys = torch.rand(input_ids.shape, generator=generator)
        keys = keys.masked_fill(~eligible, 2.0)  # ineligible positions sort last
        rank = keys.argsort(1).argsort(1)  # (B, T): 0 for the smallest key of the row
        selected = rank < k[:, None]
    else:
        raise ValueError(f"mode: expected 'bernoulli' or 'fixed', got {mode!r}")
    labels = torch.where(selected, input_ids, IGNORE_INDEX)
    u = torch.rand(input_ids.shape, generator=generator)
    random_ids = torch.randint(NUM_SPECIAL, vocab_size, input_ids.shape, generator=generator)
    masked = input_ids.clone()
    masked[selected & (u < 0.8)] = MASK_ID
    to_random = selected & (u >= 0.8) & (u < 0.9)
    masked[to_random] = random_ids[to_random]
    return masked, labels


@dataclass(frozen=True)
class NspPair:
    """Two sentences and the NSP label: 0 when ``b`` follows ``a`` (IsNext), 1 otherwise."""

    a: str
    b: str
    label: int
    document: int  # index of a's document


def make_nsp_pairs(
    documents: Sequence[Sequence[str]], seed: int = 0, p_next: float = 0.5
) -> list[NspPair]:
    """One pair per consecutive sentence pair of every document, in order.

    ``documents`` lists each document's sentences. With probability ``p_next`` the pair is
    kept (IsNext); otherwise B is a sentence drawn uniformly from a different document.
    """
    if isinstance(documents, str) or any(isinstance(d, str) for d in documents):
        raise TypeError("documents: expected a list of documents, each a list of sentences")
    if sum(1 for d in documents if d) < 2:
        raise ValueError("documents: NotNext pairs need at least two non-empty documents")
    if not 0.0 <= p_next <= 1.0:
        raise ValueError(f"p_next: expected a probability, got {p_next}")
    rng = random.Random(seed)
    others = [i for i, d in enumerate(documents) if d]
    pairs = []
    for i, sentences in enumerate(documents):
        for a, b in zip(sentences[:-1], sentences[1:], strict=True):
            if rng.random() < p_next:
                pairs.append(NspPair(a, b, 0, i))
                continue
            j = i
            while j == i:
                j = rng.choice(others)
            pairs.append(NspPair(a, rng.choice(documents[j]), 1, i))
    return pairs


def pretraining_batch(
    wordpiece: WordPiece,
    pairs: Sequence[NspPair],
    generator: torch.Generator,
    max_len: int = 64,
    mode: Literal["bernoulli", "fixed"] = "bernoulli",
) -> dict[str, torch.Tensor]:
    """Tokenise, frame, pad and mask NSP pairs: the five tensors of ``BertForPreTraining``.

    ``input_ids``, ``token_type_ids``, ``attention_mask``, ``labels`` (B, T) and
    ``next_sentence_label`` (B,), all int64.
    """
    if wordpiece.vocab[:NUM_SPECIAL] != list(SPECIAL_TOKENS):
        raise ValueError(f"wordpiece: its first tokens must be {SPECIAL_TOKENS}")
    framed = [frame_pair(wordpiece.encode(p.a), wordpiece.encode(p.b), max_len) for p in pairs]
    batch = pad_batch(framed)
    batch["input_ids"], batch["labels"] = mask_tokens(
        batch["input_ids"], len(wordpiece), generator, mode=mode
    )
    batch["next_sentence_label"] = torch.tensor([p.label for p in pairs], dtype=torch.long)
    return batch


def pretraining_batches(
    wordpiece: WordPiece,
    pairs: Sequence[NspPair],
    batch_size: int,
    seed: int = 0,
    max_len: int = 64,
    mode: Literal["bernoulli", "fixed"] = "bernoulli",
) -> Iterator[dict[str, torch.Tensor]]:
    """Endless pretraining batches for ``course.train.fit``: the pairs in a shuffled order,
    reshuffled each epoch, masked afresh every time a pair comes round (seeded: the same
    ``seed`` gives the same batches)."""
    if not 1 <= batch_size <= len(pairs):
        raise ValueError(
            f"batch_size: expected 1..{len(pairs)} (the number of pairs), got {batch_size}"
        )
    order, rng = list(range(len(pairs))), random.Random(seed)
    generator = torch.Generator().manual_seed(seed)
    while True:
        rng.shuffle(order)
        for start in range(0, len(order) - batch_size + 1, batch_size):
            chosen = [pairs[i] for i in order[start : start + batch_size]]
            yield pretraining_batch(wordpiece, chosen, generator, max_len, mode)
