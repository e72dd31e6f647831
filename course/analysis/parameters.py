"""Counting a Transformer's parameters with formulas (Unit 6; Unit 8 reuses the block counts).

With width d, feed-forward width d_ff and a vocabulary of |𝒱| tokens:

    attention (W^Q, W^K, W^V, W^O and their biases)   4 d² + 4 d
    feed-forward (W_1, b_1, W_2, b_2)                 2 d d_ff + d_ff + d
    LayerNorm (γ, β)                                  2 d
    encoder layer = attention + feed-forward + 2 LayerNorms
    decoder layer = 2 attentions + feed-forward + 3 LayerNorms
    embeddings                                        |𝒱| d per table

The original base model shares one table between the source embedding, the target embedding
and the output layer (the paper's "shared" vocabulary of about 37,000 byte-pair tokens), and,
like ``torch.nn.Transformer``, ends each stack with a LayerNorm.

BERT (Unit 7) is the encoder alone, with |𝒱| + max_len + 2 embedding vectors (tokens,
positions, two segments) and a LayerNorm on their sum, L encoder layers, and a pooler
(d² + d). Its pretraining heads add the MLM transform (d² + d, LayerNorm 2d, output bias |𝒱|;
the output matrix is the token table, tied) and NSP (2d + 2). See :func:`count_bert`.

GPT (Unit 8) is a stack of L decoder blocks without cross-attention: each block is one
attention, one feed-forward network and 2 LayerNorms, i.e. 12 d² + 13 d parameters when
d_ff = 4d. Add (|𝒱| + max_len) d for the token and position tables and 2d for GPT-2's final
LayerNorm (GPT-1 has none); the output layer is the token table (tied), so it adds nothing.
See :func:`count_gpt`. Compute, with N parameters (Kaplan et al. 2020): a forward pass costs
about 2N floating-point operations per token (one multiply and one add per weight), a
training step about 6N (the backward pass costs twice the forward). Attention over a context
of T adds 4·L·T·d per token, small next to 2N ≈ 24·L·d² while T is well below 6d (see
:func:`forward_flops` for the exact count of our model's matrix products).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from course.models.gpt import GPTConfig

__all__ = [
    "TransformerCount",
    "attention_parameters",
    "feed_forward_parameters",
    "count_transformer",
    "BertCount",
    "count_bert",
    "GPTCount",
    "count_gpt",
    "forward_flops",
    "training_flops",
    "generation_flops",
    "kv_cache_size",
]


def attention_parameters(d: int) -> int:
    """4 d² + 4 d: the query, key, value and output projections with biases."""
    return 4 * d * d + 4 * d


def feed_forward_parameters(d: int, d_ff: int) -> int:
    """2 d d_ff + d_ff + d: two linear layers with biases."""
    return 2 * d * d_ff + d_ff + d


@dataclass(frozen=True)
class TransformerCount:
    """Parameter counts by part; ``total`` adds them up."""

    embeddings: int
    encoder_attention: int
    decoder_attention: int
    feed_forward: int
    layer_norms: int

    @property
    def total(self) -> int:
        return (
            self.embeddings + self.encoder_attention + self.decoder_attention
            + self.feed_forward + self.layer_norms
        )  # fmt: skip

    @property
    def without_embeddings(self) -> int:
        return self.total - self.embeddings


def count_transformer(
    d: int,
    d_ff: int,
    encoder_layers: int,
    decoder_layers: int,
    vocab_size: int = 0,
    embedding_tables: int = 1,
) -> TransformerCount:
    """The parameters of an encoder–decoder Transformer, part by part.

    ``embedding_tables`` counts the |𝒱| × d tables (1 when source, target and output share one,
    3 when none is shared); ``vocab_size=0`` counts the Transformer body alone, as
    ``torch.nn.Transformer`` has it. The decoder's attention counts self- and cross-attention.
    """
    if min(d, d_ff) < 1 or min(encoder_layers, decoder_layers, vocab_size, embedding_tables) < 0:
        raise ValueError(
            f"sizes must be positive and counts non-negative, got d={d}, d_ff={d_ff}, "
            f"layers={encoder_layers}+{decoder_layers}, vocab_size={vocab_size}, "
            f"embedding_tables={embedding_tables}"
        )
    norms = (2 * encoder_layers + 3 * decoder_layers + 2) * 2 * d  # + one after each stack
    return TransformerCount(
        embeddings=embedding_tables * vocab_size * d,
        encoder_attention=encoder_layers * attention_parameters(d),
        decoder_attention=decoder_layers * 2 * attention_parameters(d),
        feed_forward=(encoder_layers + decoder_layers) * feed_forward_parameters(d, d_ff),
        layer_norms=norms,
    )


@dataclass(frozen=True)
class BertCount:
    """BERT's parameters by part; ``encoder`` is the model BERT-base's "110M" counts."""

    embeddings: int  # (|𝒱| + max_len + segments) d + LayerNorm 2d
    layers: int  # L × (attention + feed-forward + 2 LayerNorms)
    pooler: int  # d² + d
    mlm_head: int  # d² + d + 2d + |𝒱| (the decoder matrix is tied to the token table)
    nsp_head: int  # 2d + 2

    @property
    def encoder(self) -> int:
        """Embeddings, layers and pooler: ``BertModel``."""
        return self.embeddings + self.layers + self.pooler

    @property
    def total(self) -> int:
        """With both pretraining heads: ``BertForPreTraining``."""
        return self.encoder + self.mlm_head + self.nsp_head


def count_bert(
    d: int, d_ff: int, layers: int, vocab_size: int, max_len: int = 512, segments: int = 2
) -> BertCount:
    """The parameters of a BERT, part by part (BERT-base: d 768, d_ff 3072, 12 layers)."""
    if min(d, d_ff, layers, vocab_size, max_len, segments) < 1:
        raise ValueError(
            f"sizes must be positive, got d={d}, d_ff={d_ff}, layers={layers}, "
            f"vocab_size={vocab_size}, max_len={max_len}, segments={segments}"
        )
    layer = attention_parameters(d) + feed_forward_parameters(d, d_ff) + 2 * 2 * d
    return BertCount(
        embeddings=(vocab_size + max_len + segments) * d + 2 * d,
        layers=layers * layer,
        pooler=d * d + d,
        mlm_head=d * d + d + 2 * d + vocab_size,
        nsp_head=2 * d + 2,
    )


@dataclass(frozen=True)
class GPTCount:
    """A GPT's parameters by part (the output layer is tied to the token table)."""

    token_embeddings: int  # |𝒱| d
    position_embeddings: int  # max_len d
    layers: int  # L × (attention + feed-forward + 2 LayerNorms)
    final_norm: int  # 2d (GPT-2, GPT-3), 0 (GPT-1)

    @property
    def total(self) -> int:
        return self.token_embeddings + self.position_embeddings + self.layers + self.final_norm

    @property
    def non_embedding(self) -> int:
        """Without the two tables: the N of Kaplan et al.'s scaling laws."""
        return self.layers + self.final_norm


def count_gpt(config: GPTConfig) -> GPTCount:
    """The parameters of ``course.models.gpt.GPT(config)``, part by part, by formula."""
    d, d_ff, L = config.d_model, config.d_ff, config.num_layers
    if min(d, d_ff, L, config.vocab_size, config.max_len) < 1:
        raise ValueError(f"sizes must be positive, got {config}")
    block = attention_parameters(d) + feed_forward_parameters(d, d_ff) + 2 * 2 * d
    return GPTCount(
        token_embeddings=config.vocab_size * d,
        position_embeddings=config.max_len * d,
        layers=L * block,
        final_norm=2 * d if config.norm_first else 0,
    )


def forward_flops(config: GPTConfig, seq_len: int) -> int:
    """Floating-point operations of the matrix products of one forward pass over ``seq_len``
    tokens (one sequence, every position computed): 2 per multiply–add.

    Per layer: the four d × d projections 2·4·T·d², the feed-forward network 2·2·T·d·d_ff, the
    scores Q Kᵀ and the weighted sum A V 2·2·T²·d; then the output layer 2·T·d·|𝒱|. (Softmax,
    LayerNorm, GELU and additions are left out: they are O(T d), not O(T d²).)
    """
    if seq_len < 1:
        raise ValueError(f"seq_len: expected >= 1, got {seq_len}")
    T, d, d_ff = seq_len, config.d_model, config.d_ff
    per_layer = 2 * 4 * T * d * d + 2 * 2 * T * d * d_ff + 2 * 2 * T * T * d
    return config.num_layers * per_layer + 2 * T * d * config.vocab_size


def training_flops(num_parameters: int, tokens: float) -> float:
    """≈ 6 N D: forward (2N per token) and backward (4N per token) over D training tokens."""
    if num_parameters < 1 or tokens < 0:
        raise ValueError(f"expected N >= 1 and D >= 0, got {num_parameters}, {tokens}")
    return 6.0 * num_parameters * tokens


def generation_flops(num_parameters: int, tokens: float) -> float:
    """≈ 2 N per generated token (a forward pass with a KV cache): 2 N × tokens."""
    if num_parameters < 1 or tokens < 0:
        raise ValueError(f"expected N >= 1 and tokens >= 0, got {num_parameters}, {tokens}")
    return 2.0 * num_parameters * tokens


def kv_cache_size(config: GPTConfig, seq_len: int, batch_size: int = 1) -> int:
    """Numbers held by a KV cache of ``seq_len`` positions: 2 (K and V) · L · B · T · d.

    Multiply by the bytes per number (2 in float16) for memory: GPT-3 keeps 2 · 96 · 12,288
    numbers per token, about 4.7 MB in float16, so a full 2,048-token context takes 9.7 GB.
    """
    if seq_len < 0 or batch_size < 1:
        raise ValueError(f"expected seq_len >= 0 and batch_size >= 1, got {seq_len}, {batch_size}")
    return 2 * config.num_layers * batch_size * seq_len * config.d_model
