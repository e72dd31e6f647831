"""Decoding a sequence model: greedy search, beam search and sampling, over any step function.

A step function advances N hypotheses by one token::

    step(tokens: LongTensor (N,), state) -> (log_probs (N, V), new state)

``tokens`` are the last tokens of the N hypotheses; ``state`` is a tensor, or a dict, list or
tuple of tensors, each with N rows (a recurrent state, the encoder's outputs, a KV cache...).
Beam search reorders and copies hypotheses by indexing every tensor of the state along its
first axis, so the state must hold nothing else per hypothesis. Units 4, 6 and 8 decode with
these functions.

A recurrent model with the course's interface, ``model(ids (B, T), state) -> (logits (B, T,
V), new state)`` (``course.models.recurrent``), becomes a step function with
:func:`recurrent_step`.

Devices: the model and its state may live on any device. Greedy and beam search keep their
bookkeeping (scores in float64, finished hypotheses) on the CPU, so they pick the same tokens on
every device, and send the chosen tokens to the state's device (:func:`state_device`).
Sampling stays on the prompt's device, and draws where its ``generator`` lives.

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

Sampling (Unit 8) draws y_t ~ softmax(filtered scores) at each step. The filters, applied in
this order as ``transformers``' ``generate`` applies its logits warpers, are:

- temperature τ: z_i / τ (τ < 1 sharpens the distribution, τ > 1 flattens it);
- top-k: keep token i when fewer than k tokens score strictly higher than it;
- top-p (nucleus): with π = softmax(z), keep token i when the tokens strictly more probable
  than it have total probability below p: the most probable tokens up to and including the
  one that brings the total to p or beyond.

Removed tokens get the score −∞ (probability 0). Both filters depend on the values alone,
never on token order: every token tied with the k-th best is kept, as in ``transformers``'
``TopKLogitsWarper``, and every token tied in probability with the one that crosses p is kept.
There the course differs from ``TopPLogitsWarper``, which sorts the tokens and keeps the
tied ones the sort happens to put first: the course's nucleus can then be larger. Elsewhere
(no tie at the crossing) the two keep the same tokens, except where a partial sum equals p
to the last bit, since they round their sums in different orders (transformers compares the
ascending sums with 1 − p); the tests compare them on random logits. ``min_tokens_to_keep`` keeps, in both filters, every token that fewer than that many
tokens beat. ``top_p=1`` keeps every token (``generate`` then skips the warper as well).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

__all__ = [
    "Hypothesis",
    "greedy_search",
    "beam_search",
    "map_state",
    "state_device",
    "temperature_scale",
    "top_k_filter",
    "top_p_filter",
    "filter_logits",
    "sample",
    "recurrent_step",
]

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


def _tensors(state: State) -> Iterator[torch.Tensor]:
    if isinstance(state, torch.Tensor):
        yield state
    elif isinstance(state, (dict, list, tuple)):
        for value in state.values() if isinstance(state, dict) else state:
            yield from _tensors(value)


def state_device(state: State) -> torch.device:
    """The device of the first tensor of a decoding state (the model's), or the CPU if none."""
    return next((tensor.device for tensor in _tensors(state)), torch.device("cpu"))


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
    device = state_device(state)  # the model's; the search itself runs on the CPU
    tokens = torch.full((batch_size,), bos, dtype=torch.long)
    log_prob = torch.zeros(batch_size, dtype=torch.float64)
    done = torch.zeros(batch_size, dtype=torch.bool)
    out = []
    for _ in range(max_len):
        log_probs, state = step(tokens.to(device), state)
        _check_log_probs(log_probs, batch_size)
        best, tokens = log_probs.cpu().max(-1)
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
    device = state_device(state)  # the model's; the search itself runs on the CPU
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
        log_probs, state = step(last.to(device), state)
        _check_log_probs(log_probs, B * k)
        V = log_probs.shape[-1]
        candidates = scores[:, :, None] + log_probs.cpu().double().view(B, k, V)  # (B, k, V)
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
        state = map_state(state, lambda x, rows=rows: x.index_select(0, rows.to(x.device)))
        last = token.flatten()
        if bool(done.all()):
            break
    for b in range(B):
        if not done[b]:  # max_len reached: the live hypotheses count as they are
            for j in range(k):
                if scores[b, j] > float("-inf"):
                    finish(b, tokens[b, j].tolist(), float(scores[b, j]), False)
    return [max(hyps, key=lambda h: h.score) for hyps in finished]


# ----------------------------------------------------------------------------------------------
# Sampling (Unit 8)


def _check_scores(logits: torch.Tensor) -> None:
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        kind = logits.dtype if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise TypeError(f"logits: expected a floating-point tensor (..., V), got {kind}")
    if logits.dim() < 1 or logits.shape[-1] < 1:
        raise ValueError(f"logits: expected shape (..., V) with V >= 1, got {tuple(logits.shape)}")
    if bool(torch.isnan(logits).any()):
        raise ValueError("logits: contain NaN")


def _check_count(value: int, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name}: expected an integer >= 1, got {value!r}")


def temperature_scale(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """z / τ: then softmax(z / τ)_i = exp(z_i / τ) / Σ_j exp(z_j / τ).

    logits (..., V). τ must be a finite number > 0: τ → 0 tends to greedy decoding (use
    :func:`greedy_search`), τ = 1 leaves the model's distribution as it is, τ → ∞ tends to the
    uniform distribution.
    """
    _check_scores(logits)
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)):
        raise ValueError(f"temperature: expected a number > 0, got {temperature!r}")
    if not (0 < temperature < math.inf):
        raise ValueError(
            f"temperature: expected a finite number > 0, got {temperature} "
            "(for the limit τ → 0, decode with greedy_search)"
        )
    return logits / temperature


def top_k_filter(logits: torch.Tensor, k: int, min_tokens_to_keep: int = 1) -> torch.Tensor:
    """Keep the k best tokens (and every token tied with the k-th); the others get −∞.

        z̃_i = z_i   if |{j : z_j > z_i}| < k,   else −∞

    logits (..., V) -> (..., V). ``k`` is raised to ``min_tokens_to_keep``; k >= V keeps all.
    """
    _check_scores(logits)
    _check_count(k, "k")
    _check_count(min_tokens_to_keep, "min_tokens_to_keep")
    k = min(max(k, min_tokens_to_keep), logits.shape[-1])
    kth = logits.topk(k, dim=-1).values[..., -1:]  # (..., 1): the k-th best score
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float, min_tokens_to_keep: int = 1) -> torch.Tensor:
    """Nucleus filter: keep the most probable tokens whose total probability first reaches p.

        π = softmax(z),   z̃_i = z_i   if Σ_{j : π_j > π_i} π_j < p,   else −∞

    The token that crosses p is kept; so is every token tied with it (see the module
    docstring). Tokens that fewer than ``min_tokens_to_keep`` tokens beat are kept too.
    logits (..., V) -> (..., V); 0 < p <= 1, and p = 1 keeps every token.
    """
    _check_scores(logits)
    _check_count(min_tokens_to_keep, "min_tokens_to_keep")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= 1:
        raise ValueError(f"p: expected a probability in (0, 1], got {p!r}")
    if p == 1:
        return logits.clone()
    probs = logits.softmax(-1)  # (..., V)
    desc, order = probs.sort(dim=-1, descending=True)  # (..., V)
    total = desc.cumsum(-1)  # (..., V)
    before = torch.cat([torch.zeros_like(total[..., :1]), total[..., :-1]], -1)  # sorted before
    # Tied tokens share the mass before the first of them: the mass strictly above them.
    first = torch.searchsorted(-desc.contiguous(), -desc.contiguous(), side="left")
    above = before.gather(-1, first)  # (..., V) in sorted order
    keep_sorted = (above < p) | (first < min_tokens_to_keep)
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    return logits.masked_fill(~keep, float("-inf"))


def filter_logits(
    logits: torch.Tensor,
    *,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    min_tokens_to_keep: int = 1,
) -> torch.Tensor:
    """Temperature, then top-k, then top-p (``transformers``' order): (..., V) -> (..., V).

    ``top_k=None`` and ``top_p=None`` switch those filters off. The result's softmax is the
    distribution that :func:`sample` draws from.
    """
    filtered = temperature_scale(logits, temperature)
    if top_k is not None:
        filtered = top_k_filter(filtered, top_k, min_tokens_to_keep)
    if top_p is not None:
        filtered = top_p_filter(filtered, top_p, min_tokens_to_keep)
    return filtered


@torch.no_grad()
def sample(
    step: StepFn,
    prompt: torch.Tensor,
    *,
    state: State = None,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    min_tokens_to_keep: int = 1,
    eos: int | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Draw ``max_new_tokens`` tokens after each prompt: y_t ~ softmax(filter(z_t)).

    prompt (B, P) ids, P >= 1, fed one token at a time through ``step`` starting from
    ``state``; then each drawn token is fed back. ``step`` returns scores (B, V) (log-probabilities
    or logits: the softmax of either is the same). Returns (B, max_new_tokens) ids; a row that
    has drawn ``eos`` is filled with eos from then on, and the loop stops when every row has.
    ``generator`` makes the draws repeatable.
    """
    if not isinstance(prompt, torch.Tensor) or prompt.dim() != 2 or prompt.shape[1] < 1:
        shape = tuple(prompt.shape) if isinstance(prompt, torch.Tensor) else type(prompt).__name__
        raise ValueError(f"prompt: expected ids of shape (B, P) with P >= 1, got {shape}")
    if prompt.is_floating_point() or prompt.dtype == torch.bool:
        raise TypeError(f"prompt: expected integer ids, got {prompt.dtype}")
    if (
        isinstance(max_new_tokens, bool)
        or not isinstance(max_new_tokens, int)
        or max_new_tokens < 0
    ):
        raise ValueError(f"max_new_tokens: expected an integer >= 0, got {max_new_tokens!r}")
    B = prompt.shape[0]
    probe = torch.zeros(1, 2)  # check the filter settings before any model work
    filter_logits(probe, temperature=temperature, top_k=top_k, top_p=top_p,
                  min_tokens_to_keep=min_tokens_to_keep)  # fmt: skip
    fill = -1 if eos is None else eos
    out = torch.full((B, max_new_tokens), fill, dtype=torch.long, device=prompt.device)
    if max_new_tokens == 0:
        return out
    for t in range(prompt.shape[1]):
        scores, state = step(prompt[:, t].long(), state)
        _check_log_probs(scores, B)
    done = torch.zeros(B, dtype=torch.bool, device=prompt.device)
    for i in range(max_new_tokens):
        filtered = filter_logits(scores, temperature=temperature, top_k=top_k, top_p=top_p,
                                 min_tokens_to_keep=min_tokens_to_keep)  # fmt: skip
        probs = filtered.softmax(-1)  # (B, V)
        # Draw where the generator lives: a CPU generator gives the same tokens on every device.
        where = probs.device if generator is None else generator.device
        tokens = torch.multinomial(probs.to(where), 1, generator=generator)[:, 0]  # (B,)
        tokens = tokens.to(prompt.device)
        if eos is not None:
            tokens = torch.where(done, eos, tokens)
            done |= tokens == eos
        out[:, i] = tokens
        if i + 1 == max_new_tokens or bool(done.all()):
            break
        scores, state = step(tokens, state)
        _check_log_probs(scores, B)
    return out


def recurrent_step(model: Callable[..., tuple[torch.Tensor, State]]) -> StepFn:
    """A step function for a recurrent model that reads ``model(ids (B, T), state)`` and
    returns ``(logits (B, T, V), new state)``, as ``course.models.recurrent``'s CharRNN and
    CharLSTM do: each call feeds one token per row and gives the log-probabilities of the next
    (B, V). A ``state`` of None starts from the model's zero state."""

    def step(tokens: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        if not isinstance(tokens, torch.Tensor) or tokens.dim() != 1:
            shape = tuple(tokens.shape) if isinstance(tokens, torch.Tensor) else type(tokens)
            raise ValueError(f"tokens: expected ids of shape (B,), got {shape}")
        logits, state = model(tokens[:, None], state)  # (B, 1, V)
        return logits[:, -1].log_softmax(-1), state

    return step
