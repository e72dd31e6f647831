"""A tiny causal Transformer whose only varying part is how it knows positions (Unit 5).

    x_0 = E[tokens] (+ p_i for "sinusoidal" and "learned")
    x ← x + MultiHead(LayerNorm(x))      causal mask; ALiBi bias or RoPE inside, if chosen
    x ← x + FFN(LayerNorm(x))            FFN(x) = W_2 ReLU(W_1 x + b_1) + b_2, width 4d
    logits = W_out LayerNorm(x)

``positions`` is one of :data:`ENCODINGS`; "none" gives the model no position information
except what the causal mask implies. Lecture 5 trains one per encoding on short sequences and
tests them on longer ones.
"""

from __future__ import annotations

import torch
from torch import nn

from course.checks import expect_ids
from course.models.attention import (
    LearnedPositions,
    MultiHeadAttention,
    alibi_bias,
    alibi_slopes,
    causal_mask,
    sinusoidal_encoding,
)

__all__ = ["ENCODINGS", "TinyCausalTransformer"]

ENCODINGS = ("none", "sinusoidal", "learned", "alibi", "rope")


class TinyCausalTransformer(nn.Module):
    """vocab_size tokens, width d, ``num_layers`` pre-norm blocks of ``num_heads`` heads.

    max_len: the longest sequence the learned table covers (its rows past the training length
    are never trained).
    """

    def __init__(
        self,
        vocab_size: int,
        d: int = 32,
        num_heads: int = 2,
        num_layers: int = 1,
        positions: str = "sinusoidal",
        max_len: int = 256,
    ) -> None:
        super().__init__()
        if positions not in ENCODINGS:
            raise ValueError(f"unknown positions {positions!r}; choose one of {ENCODINGS}")
        self.vocab_size, self.positions, self.max_len = vocab_size, positions, max_len
        self.embed = nn.Embedding(vocab_size, d)
        self.learned = LearnedPositions(max_len, d) if positions == "learned" else None
        self.attn_norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(num_layers))
        self.attns = nn.ModuleList(
            MultiHeadAttention(d, num_heads, rope=positions == "rope") for _ in range(num_layers)
        )
        self.ffn_norms = nn.ModuleList(nn.LayerNorm(d) for _ in range(num_layers))
        self.ffns = nn.ModuleList(
            nn.Sequential(nn.Linear(d, 4 * d), nn.ReLU(), nn.Linear(4 * d, d))
            for _ in range(num_layers)
        )
        self.out_norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, vocab_size)
        self.register_buffer("slopes", alibi_slopes(num_heads), persistent=False)

    def forward(
        self, tokens: torch.Tensor, *, return_weights: bool = False
    ) -> torch.Tensor | tuple[torch.Tensor, list[torch.Tensor]]:
        """tokens (B, n) -> logits (B, n, vocab_size); with ``return_weights``, also each
        layer's attention weights, (B, num_heads, n, n) per layer (row i: query i's weights)."""
        expect_ids(tokens, self.vocab_size, "tokens")
        n = tokens.shape[1]
        if n > self.max_len:
            raise ValueError(f"sequences up to max_len={self.max_len}, got {n}")
        x = self.embed(tokens)  # (B, n, d)
        if self.positions == "sinusoidal":
            x = x + sinusoidal_encoding(n, x.shape[-1], device=x.device)
        elif self.positions == "learned":
            x = x + self.learned(n)
        mask = causal_mask(n, device=tokens.device)
        bias = alibi_bias(n, self.slopes) if self.positions == "alibi" else None
        weights = []
        for attn_norm, attn, ffn_norm, ffn in zip(
            self.attn_norms, self.attns, self.ffn_norms, self.ffns, strict=True
        ):
            mixed, layer_weights = attn(attn_norm(x), mask=mask, bias=bias)
            weights.append(layer_weights)
            x = x + mixed
            x = x + ffn(ffn_norm(x))
        logits = self.out(self.out_norm(x))
        return (logits, weights) if return_weights else logits
