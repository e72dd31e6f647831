"""Measuring an encoder–decoder on a translation task (Unit 4): exact match, by length and by
position, with greedy or beam decoding, and where free-running errors start and spread.

    outputs = translate(model, task, pairs, beam_size=4)       # Hypothesis per pair
    correct = exact_match(task, pairs, outputs)                  # [True, False, ...]
    by_length = accuracy_by(pairs, correct, key=lambda p: len(p[0]))
    report = exposure_bias(model, task, pairs)                  # teacher-forced vs free-running
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import torch

from course.data.translation import Pair, WordsToCharacters
from course.decoding import Hypothesis, beam_search, greedy_search
from course.models import model_device
from course.models.seq2seq import Seq2Seq

__all__ = [
    "translate",
    "exact_match",
    "accuracy_by",
    "attention_weights",
    "exposure_bias",
]


@torch.no_grad()
def translate(
    model: Seq2Seq,
    task: WordsToCharacters,
    pairs: Sequence[Pair],
    *,
    beam_size: int = 1,
    alpha: float = 1.0,
    max_len: int | None = None,
    batch_size: int = 500,
) -> list[Hypothesis]:
    """Decode every source: greedy (``beam_size=1``) or beam search, in batches.

    ``max_len`` defaults to the longest target in ``pairs`` plus one for </s>, plus 4 spare.
    The sources are batched on the model's device.
    """
    was_training = model.training
    model.eval()
    if max_len is None:
        max_len = max((len(iso) for _, iso in pairs), default=0) + 5
    device = model_device(model)
    out: list[Hypothesis] = []
    for i in range(0, len(pairs), batch_size):
        chunk = list(pairs[i : i + batch_size])
        src, src_len, _ = task.batch(chunk)
        state = model.start(src.to(device), src_len.to(device))
        common = dict(batch_size=len(chunk), bos=task.bos_id, eos=task.eos_id, max_len=max_len)
        if beam_size == 1:
            out += greedy_search(model.decode_step, state, **common)
        else:
            out += beam_search(model.decode_step, state, beam_size=beam_size, alpha=alpha, **common)
    model.train(was_training)
    return out


def exact_match(
    task: WordsToCharacters, pairs: Sequence[Pair], outputs: Sequence[Hypothesis]
) -> list[bool]:
    """Whether each output spells its target exactly."""
    if len(pairs) != len(outputs):
        raise ValueError(f"{len(pairs)} pairs but {len(outputs)} outputs")
    return [task.decode_target(h.tokens) == iso for (_, iso), h in zip(pairs, outputs, strict=True)]


def accuracy_by(
    pairs: Sequence[Pair], correct: Sequence[bool], key: Callable[[Pair], Any]
) -> dict[Any, tuple[float, int]]:
    """{key: (share correct, count)} in key order, e.g. ``key=lambda p: len(p[0])``."""
    groups: dict[Any, list[bool]] = defaultdict(list)
    for pair, ok in zip(pairs, correct, strict=True):
        groups[key(pair)].append(bool(ok))
    return {k: (sum(v) / len(v), len(v)) for k, v in sorted(groups.items())}


@torch.no_grad()
def attention_weights(
    model: Seq2Seq, task: WordsToCharacters, pair: Pair, output: Hypothesis
) -> torch.Tensor:
    """a_{t,k} (T, m) of the model reading ``pair``'s source while it writes ``output``.

    The weights of free-running decoding are those of teacher forcing on the model's own
    output, so they are recomputed that way.
    """
    if model.attention is None:
        raise ValueError("this model has no attention")
    if not output.tokens:
        raise ValueError("the output is empty: no step to show")
    src, src_len, _ = task.batch([pair])
    tgt_in = torch.tensor([[task.bos_id, *output.tokens[:-1]]])
    device = model_device(model)
    _, weights = model.eval()(src.to(device), src_len.to(device), tgt_in.to(device))
    return weights[0]


@torch.no_grad()
def exposure_bias(model: Seq2Seq, task: WordsToCharacters, pairs: Sequence[Pair]) -> dict[str, Any]:
    """Per output position t: accuracy with teacher forcing, accuracy free-running, where the
    first error falls, and the error rate after an earlier error against after none.

    Returns lists indexed by t = 0..T-1 (T target characters, </s> included):
    ``teacher_forced``, ``free_running``, ``first_error`` (count of sequences whose first wrong
    character is at t), ``error_after_error`` and ``error_after_clean`` (None where no
    sequence is in that condition).
    """
    device = model_device(model)
    src, src_len, tgt = (t.to(device) for t in task.batch(list(pairs)))
    model.eval()
    logits, _ = model(src, src_len, tgt[:, :-1])
    gold = tgt[:, 1:]  # (B, T)
    real = gold != task.pad_id
    teacher_ok = (logits.argmax(-1) == gold) & real
    free = translate(model, task, pairs, max_len=gold.shape[1])
    pred = torch.full_like(gold, -1)
    for row, h in enumerate(free):
        pred[row, : len(h.tokens)] = torch.tensor(h.tokens, device=device)
    free_ok = (pred == gold) & real
    wrong = ~free_ok & real
    earlier = torch.cumsum(wrong.int(), 1) - wrong.int() > 0  # an error before t
    T = gold.shape[1]

    def rate(mask: torch.Tensor) -> list[float | None]:
        return [
            float(wrong[:, t][mask[:, t]].float().mean()) if bool(mask[:, t].any()) else None
            for t in range(T)
        ]

    first = torch.where(wrong.any(1), wrong.int().argmax(1), -1)
    return {
        "teacher_forced": (teacher_ok.sum(0) / real.sum(0)).tolist(),
        "free_running": (free_ok.sum(0) / real.sum(0)).tolist(),
        "first_error": [int((first == t).sum()) for t in range(T)],
        "error_after_error": rate(earlier & real),
        "error_after_clean": rate(~earlier & real),
    }
