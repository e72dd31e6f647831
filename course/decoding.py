"""Decoding a sequence model: greedy search and beam search, over any step function.

A step function advances N hypotheses by one token::

    step(tokens: LongTensor (N,), state) -> (log_probs (N, V), new state)

``tokens`` are the last tokens of the N hypotheses; ``state`` is a tensor, or a dict, list or
tuple of tensors, each with N rows (a recurrent state, the encoder's outputs, a KV cache...).
Beam search reorders and copies hypotheses by indexing every tensor of the state along its
first axis, so the state must hold nothing else per hypothesis. Units 4, 6 and 8 decode with
these functions.

Beam search semantics:

- a hypothesis's score is the sum of the log-probabilities of its generated tokens, eos
  included;
- each step extends every live hypothesis by every token and ranks the candidates by score;
  among the best ``beam_size`` candidates, those ending in eos are finished, and the next live
  beams are the best ``beam_size`` candidates that do not end in eos;
- an example stops when no live hypothesis can still beat its best finished one, or after
  ``max_len`` generated tokens (its live hypotheses then join the finished ones as they are).
  A live hypothesis's log-probability can only fall, so with alpha >= 0 the best score it can
  still reach is its log-probability divided by ``max_len ** alpha``; the search stops when the
  best finished score is at least that for every live one. (The simpler rule "stop when
  ``beam_size`` hypotheses have finished", which Assignment 4 asks for, can stop before the
  best hypothesis finishes: when a model is sure of one output, the other beams are unlikely
  prefixes that end early and fill the quota. Lecture 6 met that case.)
- the answer is the finished hypothesis with the highest score / length ** alpha (length
  counts generated tokens, eos included; alpha = 0: no length normalisation). Ties go to the
  one found first.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["Hypothesis", "greedy_search", "beam_search", "map_state"]

State = Any
StepFn = Callable[[torch.Tensor, State], tuple[torch.Tensor, State]]


@dataclass(frozen=True)
class Hypothesis:
    """A decoded sequence: its tokens (no bos; eos kept if produced), log-probability, score."""

    tokens: list[int]
    log_prob: float
    score: float
    finished: bool


def map_state(state: State, fn: Callable[[torch.Tensor], torch.Tensor]) -> State:
    """Apply ``fn`` to every tensor of a (nested) dict, list or tuple state."""
    if isinstance(state, torch.Tensor):
        return fn(state)
    if isinstance(state, dict):
        return {key: map_state(value, fn) for key, value in state.items()}
    if isinstance(state, (list, tuple)):
        return type(state)(map_state(value, fn) for value in state)
    raise TypeError(f"a decoding state holds tensors, dicts, lists or tuples, not {type(state)}")


def _check_log_probs(log_probs: torch.Tensor, rows: int) -> None:
    if log_probs.dim() != 2 or log_probs.shape[0] != rows:
        raise ValueError(
            f"the step function must return log-probabilities of shape ({rows}, V), "
            f"got {tuple(log_probs.shape)}"
        )


@torch.no_grad()
def greedy_search(
    step: StepFn, state: State, *, batch_size: int, bos: int, eos: int, max_len: int
) -> list[Hypothesis]:
    """Take the most probable token at every step: y_t = argmax_y p(y | y_<t, x).

    Stops for an example at its first eos or after ``max_len`` generated tokens.
    """
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    tokens = torch.full((batch_size,), bos, dtype=torch.long)
    log_prob = torch.zeros(batch_size, dtype=torch.float64)
    done = torch.zeros(batch_size, dtype=torch.bool)
    out = []
    for _ in range(max_len):
        log_probs, state = step(tokens, state)
        _check_log_probs(log_probs, batch_size)
        best, tokens = log_probs.max(-1)
        log_prob += torch.where(done, 0.0, best.double())
        out.append(torch.where(done, eos, tokens))
        done |= tokens == eos
        if bool(done.all()):
            break
    sequences = torch.stack(out, 1).tolist()
    hypotheses = []
    for b, seq in enumerate(sequences):
        ended = eos in seq
        seq = seq[: seq.index(eos) + 1] if ended else seq
        lp = float(log_prob[b])
        hypotheses.append(Hypothesis(seq, lp, lp, ended))
    return hypotheses


@torch.no_grad()
def beam_search(
    step: StepFn,
    state: State,
    *,
    batch_size: int,
    bos: int,
    eos: int,
    beam_size: int,
    max_len: int,
    alpha: float = 1.0,
) -> list[Hypothesis]:
    """Keep the ``beam_size`` best partial hypotheses per example (semantics: module docstring).

    Examples are searched together: row b * beam_size + j of the step function's batch is beam
    j of example b. Returns the best hypothesis of each example, its score being
    log-probability / length ** alpha.
    """
    if beam_size < 1 or max_len < 1:
        raise ValueError(f"beam_size and max_len must be >= 1, got {beam_size}, {max_len}")
    if not alpha >= 0:
        raise ValueError(f"alpha: expected a length-normalisation power >= 0, got {alpha}")
    B, k = batch_size, beam_size
    state = map_state(state, lambda x: x.repeat_interleave(k, 0))  # (B*k, ...)
    tokens = torch.full((B, k, 0), bos, dtype=torch.long)  # generated so far, per beam
    last = torch.full((B * k,), bos, dtype=torch.long)
    scores = torch.full((B, k), float("-inf"), dtype=torch.float64)
    scores[:, 0] = 0.0  # one live hypothesis at the start: the others are copies of it
    finished: list[list[Hypothesis]] = [[] for _ in range(B)]
    done = torch.zeros(B, dtype=torch.bool)

    def finish(b: int, seq: list[int], log_prob: float, ended: bool) -> None:
        score = log_prob / len(seq) ** alpha
        finished[b].append(Hypothesis(seq, log_prob, score, ended))

    for _ in range(max_len):
        log_probs, state = step(last, state)
        _check_log_probs(log_probs, B * k)
        V = log_probs.shape[-1]
        candidates = scores[:, :, None] + log_probs.double().view(B, k, V)  # (B, k, V)
        top, index = candidates.view(B, k * V).topk(min(2 * k, k * V), dim=-1)  # (B, 2k)
        beam, token = index // V, index % V
        is_eos = token == eos
        for b in range(B):  # eos among the best k candidates: a finished hypothesis
            if done[b]:
                continue
            for r in range(k):
                if is_eos[b, r] and top[b, r] > float("-inf"):
                    finish(b, tokens[b, beam[b, r]].tolist() + [eos], float(top[b, r]), True)
        # The next live beams: the best k candidates that do not end in eos.
        rank = torch.arange(top.shape[1]).expand_as(top) + is_eos * top.shape[1]
        keep = rank.argsort(dim=-1)[:, :k]  # (B, k)
        beam, token = beam.gather(1, keep), token.gather(1, keep)
        scores = top.gather(1, keep).masked_fill(is_eos.gather(1, keep), float("-inf"))
        # The best score a live beam can still reach: its log-probability can only fall, and
        # dividing by the longest allowed length is the most favourable normalisation.
        reachable = scores.max(-1).values / max_len**alpha  # (B,)
        for b in range(B):
            if finished[b] and not done[b]:
                done[b] = max(h.score for h in finished[b]) >= float(reachable[b])
        tokens = torch.cat(
            [tokens.gather(1, beam[:, :, None].expand_as(tokens)), token[..., None]], 2
        )
        rows = (torch.arange(B)[:, None] * k + beam).flatten()
        state = map_state(state, lambda x, rows=rows: x.index_select(0, rows))
        last = token.flatten()
        if bool(done.all()):
            break
    for b in range(B):
        if not done[b]:  # max_len reached: the live hypotheses count as they are
            for j in range(k):
                if scores[b, j] > float("-inf"):
                    finish(b, tokens[b, j].tolist(), float(scores[b, j]), False)
    return [max(hyps, key=lambda h: h.score) for hyps in finished]
