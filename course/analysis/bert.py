"""Using a pretrained BERT (Unit 7): features of a marked word, the layer combinations of the
BERT paper's feature-extraction table, and a classifier for fine-tuning.

Features. For a sentence given as words, BERT reads ``[CLS] pieces [SEP]`` and a word's vector
is the one at its first piece (``course.data.bert_inputs.frame_words``).
:func:`marked_word_states` returns every layer's vector of each example's marked word,
h^(0) (the embeddings) to h^(L), and :func:`combine_layers` turns them into one feature
vector per word in one of the ways of Devlin et al. (2019), Table 7:

    "first"             h^(0)                       the embedding layer
    "last"              h^(L)                       the last hidden layer
    "sum_all"           h^(1) + ... + h^(L)         every hidden layer
    "second_to_last"    h^(L-1)
    "sum_last_four"     h^(L-3) + ... + h^(L)
    "concat_last_four"  [h^(L-3); ...; h^(L)]       4 d features

(With L = 4 hidden layers, "sum_all" and "sum_last_four" are the same vectors.)

Fine-tuning. :class:`WordClassifier` puts one linear layer on a BERT's last-layer vector of the
marked word; ``course.train.fit`` trains it whole (fine-tuning a pretrained BERT, or training
the same network from random weights), with batches from :func:`word_task_batches`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from course.checks import expect_shape
from course.data.bert_inputs import NspPair, frame_words, pad_batch, pretraining_batch
from course.data.english import Example
from course.data.wordpiece import WordPiece
from course.models import model_device
from course.models.bert import (
    BertConfig,
    BertForPreTraining,
    BertModel,
    evaluate_pretraining,
    fill_mask,
)
from course.train import TrainingHistory, fit, linear_warmup_decay

__all__ = [
    "read_nsp_pairs",
    "attention_weights",
    "heldout_batches",
    "heldout_pretraining_figures",
    "LAYER_COMBINATIONS",
    "marked_word_states",
    "combine_layers",
    "WordClassifier",
    "word_task_batch",
    "word_task_batches",
    "word_task_accuracy",
    "train_word_classifier",
    "FILL_MASK_CHECKS",
    "fill_mask_hits",
]

LAYER_COMBINATIONS: tuple[str, ...] = (
    "first",
    "last",
    "sum_all",
    "second_to_last",
    "sum_last_four",
    "concat_last_four",
)


def read_nsp_pairs(text: str) -> list[NspPair]:
    """NSP pairs written one per line as ``label<TAB>sentence A<TAB>sentence B`` (the form of
    the ``bert_english`` checkpoint's held-out text)."""
    pairs = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split("\t")
        if len(fields) != 3 or fields[0] not in ("0", "1"):
            raise ValueError(f"line {number}: expected 'label<TAB>A<TAB>B' with label 0 or 1")
        pairs.append(NspPair(fields[1], fields[2], int(fields[0]), -1))
    return pairs


def heldout_batches(
    wordpiece: WordPiece, pairs: Sequence[NspPair], batch_size: int, seed: int, max_len: int
) -> list[dict[str, torch.Tensor]]:
    """The pairs in order, in batches, masked by ``pretraining_batch`` with one generator
    seeded by ``seed``: the same masks every time (for held-out MLM and NSP figures)."""
    generator = torch.Generator().manual_seed(seed)
    return [
        pretraining_batch(wordpiece, pairs[i : i + batch_size], generator, max_len)
        for i in range(0, len(pairs), batch_size)
    ]


def heldout_pretraining_figures(
    model: BertForPreTraining, batches: list[dict[str, torch.Tensor]]
) -> dict[str, float]:
    """``course.models.bert.evaluate_pretraining`` on the batches of :func:`heldout_batches`:
    held-out MLM and NSP figures. A function of its own, so that the suite's harness records
    and replays it with this module's other evaluations (``tools/fit_replay.py``)."""
    return evaluate_pretraining(model, batches)


@torch.no_grad()
def attention_weights(
    bert: BertModel,
    input_ids: torch.Tensor,
    token_type_ids: torch.Tensor | None = None,
    attention_mask: torch.Tensor | None = None,
) -> list[torch.Tensor]:
    """Every layer's self-attention weights in one eval-mode pass: (B, heads, T, T) per layer,
    bottom layer first (read with forward hooks on each layer's ``self_attn``)."""
    weights: list[torch.Tensor] = []
    hooks = [
        layer.self_attn.register_forward_hook(lambda _m, _i, out: weights.append(out[1].clone()))
        for layer in bert.layers
    ]
    was_training = bert.training
    try:
        bert.eval()(input_ids, token_type_ids, attention_mask)
    finally:
        bert.train(was_training)
        for hook in hooks:
            hook.remove()
    return weights


def word_task_batch(
    wordpiece: WordPiece,
    examples: Sequence[Example],
    labels: Sequence[str] | None = None,
    max_len: int = 64,
) -> dict[str, torch.Tensor]:
    """Frame and pad the examples' sentences: ``input_ids``, ``token_type_ids``,
    ``attention_mask`` (B, T), ``positions`` (B,), the position of each marked word's first
    piece, and, if ``labels`` (the task's label names) is given, ``labels`` (B,)."""
    if not examples:
        raise ValueError("examples: expected at least one example")
    framed, positions = [], []
    for example in examples:
        ids, starts = frame_words(wordpiece, example.tokens, max_len)
        if starts[example.target] < 0:
            raise ValueError(
                f"the marked word {example.tokens[example.target]!r} of {' '.join(example.tokens)!r} "
                f"has no piece within max_len={max_len}"
            )
        framed.append((ids, [0] * len(ids)))
        positions.append(starts[example.target])
    batch = pad_batch(framed)
    batch["positions"] = torch.tensor(positions)
    if labels is not None:
        batch["labels"] = torch.tensor([labels.index(e.label) for e in examples])
    return batch


def _by_length(examples: Sequence[Example], batch_size: int) -> list[list[int]]:
    """Indices of ``examples`` in batches of similar sentence length (less padding)."""
    order = sorted(range(len(examples)), key=lambda i: len(examples[i].tokens))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


@torch.no_grad()
def marked_word_states(
    model: BertForPreTraining | BertModel,
    wordpiece: WordPiece,
    examples: Sequence[Example],
    batch_size: int = 256,
) -> torch.Tensor:
    """Every layer's vector of each example's marked word: (L+1, N, d), h^(0) first, in the
    order of ``examples`` (computed in batches of similar length)."""
    if not examples:
        raise ValueError("examples: expected at least one example")
    bert = model.bert if isinstance(model, BertForPreTraining) else model
    was_training = bert.training
    bert.eval()
    device = model_device(bert)
    out = torch.empty(bert.config.num_layers + 1, len(examples), bert.config.d_model, device=device)
    for chosen in _by_length(examples, batch_size):
        batch = word_task_batch(wordpiece, [examples[i] for i in chosen], None, bert.config.max_len)
        batch = {key: value.to(device) for key, value in batch.items()}
        states = bert(batch["input_ids"], None, batch["attention_mask"]).hidden_states
        rows = torch.arange(len(chosen), device=device)
        out[:, chosen] = torch.stack([h[rows, batch["positions"]] for h in states])  # (L+1, B, d)
    bert.train(was_training)
    return out


def combine_layers(states: torch.Tensor, how: str) -> torch.Tensor:
    """One of the BERT paper's feature choices from ``states`` (L+1, N, d) -> (N, F)."""
    expect_shape(states, ("L+1", "N", "d"), "states")
    if how not in LAYER_COMBINATIONS:
        raise ValueError(f"how: expected one of {LAYER_COMBINATIONS}, got {how!r}")
    hidden = states[1:]  # (L, N, d): the encoder layers' outputs
    if how in ("sum_last_four", "concat_last_four") and len(hidden) < 4:
        raise ValueError(f"{how}: needs at least 4 hidden layers, got {len(hidden)}")
    if how == "second_to_last" and len(hidden) < 2:
        raise ValueError(f"{how}: needs at least 2 hidden layers, got {len(hidden)}")
    if how == "first":
        return states[0]
    if how == "last":
        return hidden[-1]
    if how == "sum_all":
        return hidden.sum(0)
    if how == "second_to_last":
        return hidden[-2]
    if how == "sum_last_four":
        return hidden[-4:].sum(0)
    return torch.cat(list(hidden[-4:]), dim=-1)  # (N, 4d)


class WordClassifier(nn.Module):
    """A BERT and a linear layer on its last-layer vector of the marked word."""

    def __init__(self, bert: BertModel, num_labels: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.bert = bert
        self.dropout = nn.Dropout(dropout)
        self.head = nn.Linear(bert.config.d_model, num_labels)

    def forward(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """-> logits (B, num_labels)."""
        h = self.bert(batch["input_ids"], None, batch["attention_mask"]).last_hidden_state
        word = h[torch.arange(len(h), device=h.device), batch["positions"]]  # (B, d)
        return self.head(self.dropout(word))

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return F.cross_entropy(self(batch), batch["labels"])


def word_task_batches(
    wordpiece: WordPiece,
    examples: Sequence[Example],
    labels: Sequence[str],
    batch_size: int = 32,
    seed: int = 0,
    max_len: int = 64,
) -> Iterator[dict[str, torch.Tensor]]:
    """Endless shuffled training batches of a word task (reshuffled each epoch, seeded)."""
    if not 1 <= batch_size <= len(examples):
        raise ValueError(f"batch_size: expected 1..{len(examples)}, got {batch_size}")
    order, rng = list(range(len(examples))), random.Random(seed)
    while True:
        rng.shuffle(order)
        for start in range(0, len(order) - batch_size + 1, batch_size):
            chosen = [examples[i] for i in order[start : start + batch_size]]
            yield word_task_batch(wordpiece, chosen, labels, max_len)


@torch.no_grad()
def word_task_accuracy(
    model: WordClassifier,
    wordpiece: WordPiece,
    examples: Sequence[Example],
    labels: Sequence[str],
    batch_size: int = 256,
) -> float:
    """Fraction of ``examples`` whose label gets the highest logit (eval mode)."""
    if not examples:
        raise ValueError("examples: expected at least one example")
    was_training = model.training
    model.eval()
    device = model_device(model)
    right = 0
    for chosen in _by_length(examples, batch_size):
        batch = word_task_batch(
            wordpiece, [examples[i] for i in chosen], labels, model.bert.config.max_len
        )
        batch = {key: value.to(device) for key, value in batch.items()}
        right += int((model(batch).argmax(-1) == batch["labels"]).sum())
    model.train(was_training)
    return right / len(examples)


def train_word_classifier(
    config: BertConfig,
    start: Mapping[str, torch.Tensor] | None,
    wordpiece: WordPiece,
    examples: Sequence[Example],
    labels: Sequence[str],
    *,
    seed: int = 0,
    steps: int = 100,
    lr: float = 1e-3,
    batch_size: int = 32,
    desc: str = "word task",
    progress: bool = True,
) -> tuple[WordClassifier, TrainingHistory]:
    """Lecture 7's transfer recipe: a BERT of ``config`` with the weights ``start`` (a BERT's
    ``state_dict``: fine-tuning) or random ones (``None``: from scratch), a linear layer on the
    marked word, all trained together on ``examples`` for ``steps`` steps of Adam, learning rate
    ``lr`` with a warm-up of a tenth and linear decay. ``seed`` draws the random weights (the
    head's too) and the order of the batches. Returns the classifier and its history."""
    torch.manual_seed(seed)
    bert = BertForPreTraining(config).bert
    if start is not None:
        bert.load_state_dict(start)
    classifier = WordClassifier(bert, len(labels))
    batches = word_task_batches(wordpiece, examples, labels, batch_size, seed, config.max_len)
    history = fit(
        classifier,
        lambda m, batch: m.loss(batch),
        batches,
        steps=steps,
        lr=lr,
        lr_schedule=linear_warmup_decay(max(1, steps // 10), steps),
        desc=desc,
        progress=progress,
    )
    return classifier, history


# Sentences of the kinds the course's BERT read (lower-cased, punctuation apart, as its
# WordPiece splits text), each with the word hidden behind its [MASK]: four in the style of the
# Bible translation, four of Python's documentation. Lecture 7 shows them; the checkpoint's
# metadata records how many have their word among the top 5.
FILL_MASK_CHECKS: tuple[tuple[str, str], ...] = (
    ("and god said , let there be [MASK] .", "light"),
    ("in the beginning god created the heavens and the [MASK] .", "earth"),
    ("the sons of israel went out of the land of [MASK] .", "egypt"),
    ("he said to them , you are the [MASK] of the world .", "light"),
    ("to open a file for reading , call the [MASK] function .", "open"),
    ("the return value is a [MASK] of strings .", "list"),
    ("this function returns true if the object is an [MASK] of the class .", "instance"),
    ("if the argument is omitted , the default value is [MASK] .", "none"),
)


@torch.no_grad()
def fill_mask_hits(
    model: BertForPreTraining,
    wordpiece: WordPiece,
    checks: Sequence[tuple[str, str]] = FILL_MASK_CHECKS,
    k: int = 5,
) -> list[tuple[str, str, list[str], bool]]:
    """For each (sentence with one [MASK], hidden word): the sentence, the word, the model's
    ``k`` most probable tokens and whether the word is among them."""
    rows = []
    for text, word in checks:
        if word not in wordpiece.token_to_id:
            raise ValueError(f"{word!r} is not one token of this vocabulary ({text!r})")
        top = [token for token, _ in fill_mask(model, wordpiece, text, k)[0]]
        rows.append((text, word, top, word in top))
    return rows
