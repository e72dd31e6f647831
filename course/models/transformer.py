"""The Transformer encoder–decoder (Unit 6), built from Unit 5's multi-head attention.

Post-norm, as in the paper (``norm_first=False``), each sublayer is wrapped as
LayerNorm(x + Sublayer(x)); pre-norm (``norm_first=True``) as x + Sublayer(LayerNorm(x)):

    encoder layer:  x ← Norm(x + SelfAttention(x; source padding))
                    x ← Norm(x + FFN(x))                  FFN(x) = W_2 ReLU(W_1 x + b_1) + b_2
    decoder layer:  y ← Norm(y + SelfAttention(y; causal and target padding))
                    y ← Norm(y + CrossAttention(queries y, keys and values = memory))
                    y ← Norm(y + FFN(y))

Like ``torch.nn.Transformer``, the encoder and the decoder each end with one more LayerNorm,
and dropout follows each sublayer. ``copy_to_torch`` writes these weights into an
``nn.Transformer`` (its attention stores W^Q, W^K, W^V stacked in ``in_proj_weight``), which is
how Lecture 6 proves the two equal. ``Seq2SeqTransformer`` adds embeddings scaled by
√d_model, sinusoidal positions and an output layer, and decodes through
:mod:`course.decoding`.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from course.checks import expect_ids
from course.models.attention import (
    MultiHeadAttention,
    causal_mask,
    padding_mask,
    sinusoidal_encoding,
)

__all__ = [
    "FeedForward",
    "EncoderLayer",
    "DecoderLayer",
    "Transformer",
    "Seq2SeqTransformer",
    "copy_to_torch",
    "fuse_attention",
]


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """GELU's tanh approximation (GPT-2's "gelu_new"): ½x(1 + tanh(√(2/π)(x + 0.044715x³)))."""
    return F.gelu(x, approximate="tanh")


ACTIVATIONS = {  # GELU exact: x Φ(x), with erf (BERT's); its tanh approximation is GPT-2's
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": gelu_tanh,
}


class FeedForward(nn.Module):
    """FFN(x) = W_2 ReLU(W_1 x + b_1) + b_2, applied at every position alike.

    ``activation="gelu"`` uses GELU(x) = x Φ(x) (Φ the standard normal CDF) in place of ReLU,
    as BERT does; ``"gelu_tanh"`` its tanh approximation, as GPT-1 and GPT-2 do.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float, activation: str = "relu") -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"activation: expected one of {sorted(ACTIVATIONS)}, got {activation!r}"
            )
        self.linear1, self.linear2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x))))


class EncoderLayer(nn.Module):
    """Self-attention and a feed-forward network, each with a residual and a LayerNorm.

    ``activation`` ("relu", "gelu" or "gelu_tanh") is the FFN's; ``layer_norm_eps`` is ε of both
    LayerNorms (torch's 1e-5 by default; BERT uses 1e-12).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
        activation: str = "relu",
        layer_norm_eps: float = 1e-5,
    ) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff, dropout, activation)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)
        self.norm_first = norm_first
        self.fused_attention = False  # set by fuse_attention()

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, n, d_model); mask broadcastable to (B, h, n, n), True where allowed."""

        def attend(z: torch.Tensor) -> torch.Tensor:
            weights = not (self.fused_attention and self.training)  # see fuse_attention()
            return self.dropout1(self.self_attn(z, mask=mask, need_weights=weights)[0])

        if self.norm_first:
            x = x + attend(self.norm1(x))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + attend(x))
        return self.norm2(x + self.dropout2(self.ffn(x)))


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention to the memory, and a feed-forward network."""

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        norm_first: bool = False,
    ) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(d_model, num_heads)
        self.cross_attn = MultiHeadAttention(d_model, num_heads)
        self.ffn = FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))
        self.dropout1, self.dropout2, self.dropout3 = (nn.Dropout(dropout) for _ in range(3))
        self.norm_first = norm_first
        self.fused_attention = False  # set by fuse_attention()

    def forward(
        self,
        y: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """y (B, T, d_model) queries; memory (B, m, d_model) the encoder's output."""
        weights = not (self.fused_attention and self.training)  # see fuse_attention()

        def self_attend(z: torch.Tensor) -> torch.Tensor:
            return self.dropout1(self.self_attn(z, mask=self_mask, need_weights=weights)[0])

        def cross_attend(z: torch.Tensor) -> torch.Tensor:
            return self.dropout2(
                self.cross_attn(z, memory, mask=memory_mask, need_weights=weights)[0]
            )

        if self.norm_first:
            y = y + self_attend(self.norm1(y))
            y = y + cross_attend(self.norm2(y))
            return y + self.dropout3(self.ffn(self.norm3(y)))
        y = self.norm1(y + self_attend(y))
        y = self.norm2(y + cross_attend(y))
        return self.norm3(y + self.dropout3(self.ffn(y)))


def fuse_attention(model: nn.Module, on: bool = True) -> nn.Module:
    """While ``model`` trains, its encoder and decoder layers attend through PyTorch's fused
    kernel (:func:`course.models.attention.fused_attention`): the same heads up to rounding,
    without the weights that training never reads, and cheaper (a step of Lecture 8's GPT on
    windows of 256 characters about 40% less on one CPU thread). The checkpoint recipes use it;
    the lectures do not, so that their numbers stay the ones the hand-written attention gives
    (a chaotic run, such as Lecture 6's deep post-norm stack, can end elsewhere after a
    different rounding). In eval mode the layers always use :func:`attention`. Returns ``model``.
    """
    for module in model.modules():
        if isinstance(module, (EncoderLayer, DecoderLayer)):
            module.fused_attention = on
    return model


class Transformer(nn.Module):
    """N encoder layers and N decoder layers, each stack followed by a LayerNorm."""

    def __init__(
        self,
        d_model: int = 512,
        num_heads: int = 8,
        num_encoder_layers: int = 6,
        num_decoder_layers: int = 6,
        d_ff: int = 2048,
        dropout: float = 0.1,
        norm_first: bool = False,
    ) -> None:
        super().__init__()
        self.d_model, self.num_heads = d_model, num_heads
        self.encoder_layers = nn.ModuleList(
            EncoderLayer(d_model, num_heads, d_ff, dropout, norm_first)
            for _ in range(num_encoder_layers)
        )
        self.decoder_layers = nn.ModuleList(
            DecoderLayer(d_model, num_heads, d_ff, dropout, norm_first)
            for _ in range(num_decoder_layers)
        )
        self.encoder_norm, self.decoder_norm = nn.LayerNorm(d_model), nn.LayerNorm(d_model)

    def encode(self, x: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        for layer in self.encoder_layers:
            x = layer(x, src_mask)
        return self.encoder_norm(x)

    def decode(
        self,
        y: torch.Tensor,
        memory: torch.Tensor,
        tgt_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        for layer in self.decoder_layers:
            y = layer(y, memory, tgt_mask, memory_mask)
        return self.decoder_norm(y)

    def forward(
        self,
        src: torch.Tensor,
        tgt: torch.Tensor,
        src_mask: torch.Tensor | None = None,
        tgt_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """src (B, m, d_model), tgt (B, T, d_model) vectors -> (B, T, d_model).

        src_mask: which source keys are real, (B, 1, 1, m); tgt_mask: which target keys each
        target query may see, broadcastable to (B, 1, T, T) (causal and padding together).
        """
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)


def _copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    theirs.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
    theirs.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
    theirs.out_proj.weight.copy_(ours.W_o.weight)
    theirs.out_proj.bias.copy_(ours.W_o.bias)


@torch.no_grad()
def copy_to_torch(ours: Transformer, theirs: nn.Transformer) -> nn.Transformer:
    """Write every weight of ``ours`` into ``theirs`` (same sizes, ``batch_first=True``)."""
    if len(ours.encoder_layers) != len(theirs.encoder.layers) or len(ours.decoder_layers) != len(
        theirs.decoder.layers
    ):
        raise ValueError("the two Transformers have different numbers of layers")
    for a, b in zip(ours.encoder_layers, theirs.encoder.layers, strict=True):
        _copy_attention(a.self_attn, b.self_attn)
        for src, dst in [(a.ffn.linear1, b.linear1), (a.ffn.linear2, b.linear2),
                         (a.norm1, b.norm1), (a.norm2, b.norm2)]:  # fmt: skip
            dst.load_state_dict(src.state_dict())
    for a, b in zip(ours.decoder_layers, theirs.decoder.layers, strict=True):
        _copy_attention(a.self_attn, b.self_attn)
        _copy_attention(a.cross_attn, b.multihead_attn)
        for src, dst in [(a.ffn.linear1, b.linear1), (a.ffn.linear2, b.linear2),
                         (a.norm1, b.norm1), (a.norm2, b.norm2), (a.norm3, b.norm3)]:  # fmt: skip
            dst.load_state_dict(src.state_dict())
    theirs.encoder.norm.load_state_dict(ours.encoder_norm.state_dict())
    theirs.decoder.norm.load_state_dict(ours.decoder_norm.state_dict())
    return theirs


class Seq2SeqTransformer(nn.Module):
    """Token embeddings (initialised N(0, 1/d_model), scaled by √d_model) plus sinusoidal
    positions, a Transformer, and an output layer; the same training and decoding interface
    as ``course.models.seq2seq``."""

    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        d_model: int = 64,
        num_heads: int = 4,
        num_layers: int = 2,
        d_ff: int = 128,
        dropout: float = 0.0,
        norm_first: bool = False,
        max_len: int = 64,
    ) -> None:
        super().__init__()
        self.src_vocab, self.tgt_vocab, self.d_model, self.max_len = (
            src_vocab, tgt_vocab, d_model, max_len,
        )  # fmt: skip
        self.src_embed = nn.Embedding(src_vocab, d_model, padding_idx=0)
        self.tgt_embed = nn.Embedding(tgt_vocab, d_model, padding_idx=0)
        for table in (self.src_embed, self.tgt_embed):
            # Entries of size about 1/√d_model, so that the √d_model scale in `embed` gives
            # vectors of length about √d_model, like the positions' (torch's default N(0, 1)
            # would make the positions 8 times too small to see at d_model = 64).
            nn.init.normal_(table.weight, std=d_model**-0.5)
            table.weight.data[0] = 0.0
        self.register_buffer("positions", sinusoidal_encoding(max_len, d_model), persistent=False)
        self.transformer = Transformer(
            d_model, num_heads, num_layers, num_layers, d_ff, dropout, norm_first
        )
        self.out = nn.Linear(d_model, tgt_vocab)

    def embed(self, embedding: nn.Embedding, ids: torch.Tensor) -> torch.Tensor:
        n = ids.shape[1]
        if n > self.max_len:
            raise ValueError(f"sequences up to max_len={self.max_len}, got {n}")
        return embedding(ids) * math.sqrt(self.d_model) + self.positions[:n]

    def encode(self, src: torch.Tensor, src_len: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(memory (B, m, d_model), source key mask (B, 1, 1, m))."""
        expect_ids(src, self.src_vocab, "src")
        mask = padding_mask(src_len, src.shape[1])
        return self.transformer.encode(self.embed(self.src_embed, src), mask), mask

    def forward(
        self, src: torch.Tensor, src_len: torch.Tensor, tgt_in: torch.Tensor
    ) -> torch.Tensor:
        """Teacher forcing: logits (B, T, V) for the next token at every target position."""
        expect_ids(tgt_in, self.tgt_vocab, "tgt_in")
        memory, src_mask = self.encode(src, src_len)
        T = tgt_in.shape[1]
        tgt_mask = causal_mask(T, tgt_in.device) & (tgt_in != 0)[:, None, None, :]  # (B, 1, T, T)
        y = self.transformer.decode(self.embed(self.tgt_embed, tgt_in), memory, tgt_mask, src_mask)
        return self.out(y)

    def loss(self, batch: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        src, src_len, tgt = batch
        logits = self(src, src_len, tgt[:, :-1])
        return F.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten(), ignore_index=0)

    def start(self, src: torch.Tensor, src_len: torch.Tensor) -> dict[str, torch.Tensor]:
        """The decoding state before the first step, for :mod:`course.decoding`."""
        memory, mask = self.encode(src, src_len)
        return {
            "memory": memory,
            "mask": mask,
            "prefix": torch.zeros(len(src), 0, dtype=torch.long, device=src.device),
        }

    def decode_step(
        self, y_prev: torch.Tensor, state: dict[str, torch.Tensor]
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Re-run the decoder on the whole prefix (no cache) and return the last position's
        log-probabilities."""
        prefix = torch.cat([state["prefix"], y_prev[:, None]], 1)  # (N, t)
        T = prefix.shape[1]
        y = self.transformer.decode(
            self.embed(self.tgt_embed, prefix),
            state["memory"],
            causal_mask(T, prefix.device),
            state["mask"],
        )
        return self.out(y[:, -1]).log_softmax(-1), {**state, "prefix": prefix}
