"""An RNN encoder–decoder with optional attention (Unit 4), readable top to bottom.

Notation (the course's notation page; seeds 000 and 002):

    s_1..s_m = GRU_enc(E_x[x_1..x_m])                   encoder states, size H
    h_0 = s_m                                            the decoder starts from the last state
    h_t = GRU_dec(E_y[y_{t-1}], h_{t-1})                 decoder state
    e_{t,k} = score(h_t, s_k)                            one score per source position
    a_{t,k} = softmax_k(e_{t,k}) over real positions     padding gets weight exactly 0
    c_t = Σ_k a_{t,k} s_k                                context vector
    h̃_t = tanh(W_c [c_t; h_t] + b_c)                     attentional state (Luong et al., 2015)
    p(y_t | y_<t, x) = softmax(W_o h̃_t + b_o)

Without attention the decoder sees the source only through h_0 = s_m (the bottleneck), and
h̃_t = tanh(W_c h_t + b_c). The scoring functions (:data:`SCORES`):

    dot         h_tᵀ s_k
    scaled_dot  h_tᵀ s_k / √H
    bilinear    h_tᵀ W_a s_k                   ("general")
    additive    w_2ᵀ tanh(W_1 [h_t; s_k])      ("MLP", "concat")
    cosine      h_tᵀ s_k / (‖h_t‖ ‖s_k‖)
    location    (W_l h_t)_k                    one score per position, whatever is there

Read as queries, keys and values: the query is h_t, the keys are the s_k as the score sees them
(W_aᵀ h_t · s_k = h_t · W_a s_k: bilinear is dot attention with projected keys), and the values
are the s_k that the context vector averages.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from course.checks import expect_ids, expect_shape

__all__ = ["SCORES", "Attention", "Seq2Seq", "masked_softmax", "lengths_mask"]

SCORES = ("dot", "scaled_dot", "bilinear", "additive", "cosine", "location")


# A twin of course.models.bilm.lengths_mask, and course.models.attention.padding_mask without its
# head and query axes: each model file reads alone. tests/course/test_masks.py holds them equal.
def lengths_mask(lengths: torch.Tensor, m: int) -> torch.Tensor:
    """(B, m) bool: True at the real positions k < lengths[b]."""
    return torch.arange(m, device=lengths.device)[None, :] < lengths[:, None]


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis where ``mask`` is True; exactly 0 where it is False.

    Scores at padding become -inf before the softmax, so exp(-inf) = 0 and the real positions
    share all the weight. Every row needs at least one real position.
    """
    if not bool(mask.any(-1).all()):
        raise ValueError("every row needs at least one real position (a length of 0?)")
    return scores.masked_fill(~mask, float("-inf")).softmax(-1)


class Attention(nn.Module):
    """score(h_t, s_k) for one of :data:`SCORES`, then weights and the context vector.

    hidden: H, the size of h_t and s_k; attn_dim: A, the additive score's hidden size;
    max_len: the longest source the location score can address (its W_l has one row per
    position).
    """

    def __init__(self, kind: str, hidden: int, attn_dim: int = 64, max_len: int = 32) -> None:
        super().__init__()
        if kind not in SCORES:
            raise ValueError(f"unknown score {kind!r}; choose one of {SCORES}")
        self.kind, self.hidden, self.max_len = kind, hidden, max_len
        if self.kind == "bilinear":
            self.W_a = nn.Linear(hidden, hidden, bias=False)
        elif self.kind == "additive":
            self.W_1 = nn.Linear(2 * hidden, attn_dim, bias=False)
            self.w_2 = nn.Linear(attn_dim, 1, bias=False)
        elif self.kind == "location":
            self.W_l = nn.Linear(hidden, max_len)

    def scores(self, h: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
        """e_{t,k}: h (B, H) decoder states, S (B, m, H) encoder states -> (B, m)."""
        m = S.shape[1]
        if self.kind == "dot":
            return torch.einsum("bh,bmh->bm", h, S)
        if self.kind == "scaled_dot":
            return torch.einsum("bh,bmh->bm", h, S) / math.sqrt(self.hidden)
        if self.kind == "bilinear":
            return torch.einsum("bh,bmh->bm", h, self.W_a(S))  # keys W_a s_k
        if self.kind == "additive":
            pairs = torch.cat([h[:, None, :].expand(-1, m, -1), S], dim=-1)  # (B, m, 2H)
            return self.w_2(torch.tanh(self.W_1(pairs))).squeeze(-1)
        if self.kind == "cosine":
            return torch.einsum("bh,bmh->bm", F.normalize(h, dim=-1), F.normalize(S, dim=-1))
        if m > self.max_len:  # location
            raise ValueError(f"the location score addresses {self.max_len} positions, got {m}")
        return self.W_l(h)[:, :m]

    def forward(
        self, h: torch.Tensor, S: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(context c_t (B, H), weights a_t (B, m)); ``mask`` (B, m) marks real positions."""
        a = masked_softmax(self.scores(h, S), mask)  # (B, m)
        c = torch.einsum("bm,bmh->bh", a, S)  # (B, H)
        return c, a


class Seq2Seq(nn.Module):
    """GRU encoder, GRU decoder, and attention of one kind (``attention=None``: none).

    src_vocab, tgt_vocab: vocabulary sizes (id 0 is padding in both); hidden: H (also the
    embedding size).
    """

    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        hidden: int = 64,
        attention: str | None = "additive",
        max_len: int = 32,
    ) -> None:
        super().__init__()
        if min(src_vocab, tgt_vocab, hidden) < 1:
            raise ValueError(f"sizes must be >= 1, got {src_vocab}, {tgt_vocab}, {hidden}")
        self.src_vocab, self.tgt_vocab, self.hidden = src_vocab, tgt_vocab, hidden
        self.src_embed = nn.Embedding(src_vocab, hidden, padding_idx=0)
        self.tgt_embed = nn.Embedding(tgt_vocab, hidden, padding_idx=0)
        self.encoder = nn.GRU(hidden, hidden, batch_first=True)
        self.decoder = nn.GRUCell(hidden, hidden)
        self.attention = (
            None if attention is None else Attention(attention, hidden, hidden, max_len)
        )
        self.W_c = nn.Linear(2 * hidden if attention else hidden, hidden)
        self.W_o = nn.Linear(hidden, tgt_vocab)

    def encode(
        self, src: torch.Tensor, src_len: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(S (B, m, H), h_0 = s_m (B, H), mask (B, m)). Padding never enters the states."""
        expect_ids(src, self.src_vocab, "src")
        B, m = src.shape
        expect_shape(src_len, (B,), "src_len")
        if bool((src_len < 1).any()) or bool((src_len > m).any()):
            raise ValueError(f"src_len must be within 1..{m}, got {src_len.tolist()}")
        packed = pack_padded_sequence(
            self.src_embed(src), src_len.cpu(), batch_first=True, enforce_sorted=False
        )
        out, last = self.encoder(packed)
        S, _ = pad_packed_sequence(out, batch_first=True, total_length=m)  # (B, m, H)
        return S, last[0], lengths_mask(src_len, m)

    def step(
        self, y_prev: torch.Tensor, h: torch.Tensor, S: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """One decoder step: (logits (B, V), h_t (B, H), weights a_t (B, m) or None)."""
        h = self.decoder(self.tgt_embed(y_prev), h)  # h_t = GRU(E_y[y_{t-1}], h_{t-1})
        if self.attention is None:
            return self.W_o(torch.tanh(self.W_c(h))), h, None
        c, a = self.attention(h, S, mask)
        h_tilde = torch.tanh(self.W_c(torch.cat([c, h], dim=-1)))  # (B, H)
        return self.W_o(h_tilde), h, a

    def forward(
        self, src: torch.Tensor, src_len: torch.Tensor, tgt_in: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Teacher forcing: the decoder reads the true previous tokens ``tgt_in`` (B, T).

        Returns (logits (B, T, V), weights (B, T, m) or None).
        """
        expect_ids(tgt_in, self.tgt_vocab, "tgt_in")
        S, h, mask = self.encode(src, src_len)
        logits, weights = [], []
        for t in range(tgt_in.shape[1]):
            out, h, a = self.step(tgt_in[:, t], h, S, mask)
            logits.append(out)
            weights.append(a)
        stacked = torch.stack(weights, 1) if self.attention is not None else None
        return torch.stack(logits, 1), stacked

    def loss(self, batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """Mean cross-entropy of the next target token under teacher forcing."""
        src, src_len, tgt = batch
        logits, _ = self(src, src_len, tgt[:, :-1])
        return F.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten(), ignore_index=0)

    def start(self, src: torch.Tensor, src_len: torch.Tensor) -> dict[str, torch.Tensor]:
        """The decoding state before the first step, for :mod:`course.decoding`."""
        S, h, mask = self.encode(src, src_len)
        return {"h": h, "S": S, "mask": mask}

    def decode_step(
        self, y_prev: torch.Tensor, state: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The step function of :mod:`course.decoding`: (log-probabilities (N, V), new state)."""
        logits, h, _ = self.step(y_prev, state["h"], state["S"], state["mask"])
        return logits.log_softmax(-1), {**state, "h": h}
