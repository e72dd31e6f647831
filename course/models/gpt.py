"""A GPT (Unit 8): a decoder-only Transformer, readable top to bottom like nanoGPT's model.py.

Token ids w_1..w_T, learned positions, L blocks with a causal mask, a final LayerNorm and an
output layer tied to the token table (Radford et al. 2018 and 2019):

    h^(0)_t = E_tok[w_t] + E_pos[t]                                                (GPT-1)
    a = h + MultiHead(LN_1(h); causal)        position t sees positions 1..t only  (GPT-2)
    h' = a + FFN(LN_2(a)),   FFN with GELU (its tanh approximation, GPT-2's)
    logits_t = LN_f(h^(L)_t) E_tokᵀ           (|𝒱|,): the output layer is E_tok, no bias (GPT-3)
    p(w_{t+1} | w_1..w_t) = softmax(logits_t)

Each block is Unit 6's :class:`~course.models.transformer.EncoderLayer` with ``norm_first=True``
and a causal mask. That is all a "decoder-only" Transformer is: an encoder stack that may not
look ahead, with no cross-attention because there is no encoder. GPT-1 (``norm_first=False``)
puts each LayerNorm after its residual sum, as the 2017 Transformer does, and has no final
LayerNorm; GPT-2 moved them in front and added LN_f.

Generation feeds one token at a time. Re-running the whole prefix at every step repeats the
work of the steps before; the keys and values of past positions never change (a position
does not see the future), so :meth:`GPT.forward_with_cache` keeps them, per layer, in a
**KV cache** and computes only the new position's query, key and value:

    cache = ((K_1, V_1), ..., (K_L, V_L)),   K_l, V_l: (B, h, t, d_k) for the t positions so far

The cached path is written out in :func:`block_with_cache` (a twin of ``EncoderLayer.forward``
kept on purpose, so it can be read whole); the tests check that both paths give the same
logits and the same generated tokens.

:func:`save_for_transformers` writes a folder that ``transformers``' ``GPT2LMHeadModel`` loads
(GPT-2 stores its linear layers as ``Conv1D``, weight (in, out): our weights transposed), and
:func:`load_gpt2_state_dict` reads such weights back; :func:`load_openai_gpt_state_dict` reads
GPT-1's (``OpenAIGPTLMHeadModel``) into a post-norm model. The tests compare the logits.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from course.checks import expect_ids
from course.decoding import sample
from course.models.attention import attention, causal_mask
from course.models.transformer import ACTIVATIONS, EncoderLayer

__all__ = [
    "GPTConfig",
    "GPT1",
    "GPT2_SMALL",
    "GPT2_MEDIUM",
    "GPT2_LARGE",
    "GPT2_XL",
    "GPT3",
    "KVCache",
    "GPT",
    "block_with_cache",
    "to_gpt2_state_dict",
    "load_gpt2_state_dict",
    "load_openai_gpt_state_dict",
    "save_for_transformers",
]

KVCache = tuple[tuple[torch.Tensor, torch.Tensor], ...]  # per layer (K, V), each (B, h, t, d_k)


@dataclass(frozen=True)
class GPTConfig:
    """Sizes of a GPT. The defaults are a tiny model that trains on a CPU in minutes."""

    vocab_size: int = 256  # |𝒱|
    max_len: int = 128  # number of learned positions (GPT-2's n_positions, nanoGPT's block size)
    d_model: int = 64
    num_layers: int = 2  # L
    num_heads: int = 4  # h
    d_ff: int = 256  # 4 d_model, as in GPT-1/2/3
    dropout: float = 0.1  # after the embeddings and each sublayer, as GPT-1/2
    layer_norm_eps: float = 1e-5
    activation: str = "gelu_tanh"  # GPT-2's "gelu_new"
    norm_first: bool = True  # False: GPT-1's post-norm blocks, and no final LayerNorm
    init_std: float = 0.02  # weights ~ N(0, 0.02²), as GPT-2

    def __post_init__(self) -> None:
        if self.d_model % self.num_heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by num_heads ({self.num_heads})"
            )
        if min(self.vocab_size, self.max_len, self.d_model, self.num_layers, self.d_ff) < 1:
            raise ValueError(f"sizes must be positive: {self}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(
                f"activation: expected one of {sorted(ACTIVATIONS)}, got {self.activation!r}"
            )
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout: expected a probability in [0, 1), got {self.dropout}")

    def to_transformers(self) -> Any:
        """The equivalent ``transformers.GPT2Config`` (built by hand: nothing is downloaded).

        GPT-2's blocks are pre-norm, so a post-norm (GPT-1 style) config has no equivalent.
        """
        from transformers import GPT2Config

        if not self.norm_first:
            raise ValueError("GPT-2 is pre-norm: a config with norm_first=False has no GPT2Config")
        names = {"gelu_tanh": "gelu_new", "gelu": "gelu", "relu": "relu"}
        return GPT2Config(
            vocab_size=self.vocab_size,
            n_positions=self.max_len,
            n_embd=self.d_model,
            n_layer=self.num_layers,
            n_head=self.num_heads,
            n_inner=self.d_ff,
            activation_function=names[self.activation],
            resid_pdrop=self.dropout,
            embd_pdrop=self.dropout,
            attn_pdrop=0.0,  # EncoderLayer has no dropout on the attention weights
            layer_norm_epsilon=self.layer_norm_eps,
            initializer_range=self.init_std,
            tie_word_embeddings=True,
            bos_token_id=None,  # GPT2Config's default 50256 is GPT-2's <|endoftext|>: our
            eos_token_id=None,  # models have no special token of their own
        )


# Published sizes. GPT-1: 40,478 BPE tokens and 512 positions (Radford et al. 2018); GPT-2:
# 50,257 tokens and 1,024 positions (Radford et al. 2019); GPT-3 175B: 2,048 positions, the
# GPT-2 vocabulary (Brown et al. 2020, Table 2.1). Their parameter counts are in the tests.
GPT1 = GPTConfig(40478, 512, 768, 12, 12, 3072, norm_first=False)
GPT2_SMALL = GPTConfig(50257, 1024, 768, 12, 12, 3072)
GPT2_MEDIUM = GPTConfig(50257, 1024, 1024, 24, 16, 4096)
GPT2_LARGE = GPTConfig(50257, 1024, 1280, 36, 20, 5120)
GPT2_XL = GPTConfig(50257, 1024, 1600, 48, 25, 6400)
GPT3 = GPTConfig(50257, 2048, 12288, 96, 96, 49152)


def block_with_cache(
    block: EncoderLayer, x: torch.Tensor, past: tuple[torch.Tensor, torch.Tensor] | None
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """One block on new positions x (B, T, d) after t cached ones: (output, (K, V) extended).

    The same computation as ``block(x, causal mask)`` on the whole sequence, for the new
    positions only: their queries meet the past keys (B, h, t, d_k) and their own.
    """
    attn = block.self_attn
    B, T, d = x.shape

    def attend(z: torch.Tensor) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        q, k, v = attn.split(attn.W_q(z)), attn.split(attn.W_k(z)), attn.split(attn.W_v(z))
        if past is not None:  # (B, h, T, d_k) -> (B, h, t + T, d_k)
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        t = k.shape[2] - T
        mask = torch.ones(T, t + T, dtype=torch.bool, device=x.device)
        mask = mask.tril(diagonal=t)  # (T, t + T): new position i sees j <= t + i
        out, _ = attention(q, k, v, mask)  # (B, h, T, d_k)
        return block.dropout1(attn.W_o(out.transpose(1, 2).reshape(B, T, d))), (k, v)

    if block.norm_first:
        a, kv = attend(block.norm1(x))
        x = x + a
        return x + block.dropout2(block.ffn(block.norm2(x))), kv
    a, kv = attend(x)
    x = block.norm1(x + a)
    return block.norm2(x + block.dropout2(block.ffn(x))), kv


class GPT(nn.Module):
    """Rules (GPT-1) to (GPT-3): forward(ids (B, T)) -> logits (B, T, |𝒱|)."""

    def __init__(self, config: GPTConfig | dict[str, Any]) -> None:
        super().__init__()
        if isinstance(config, dict):  # as a checkpoint stores it (``asdict(config)``)
            config = GPTConfig(**config)
        self.config = c = config
        self.token = nn.Embedding(c.vocab_size, c.d_model)  # E_tok (GPT-2's wte)
        self.position = nn.Embedding(c.max_len, c.d_model)  # E_pos (wpe)
        self.dropout = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            EncoderLayer(
                c.d_model,
                c.num_heads,
                c.d_ff,
                c.dropout,
                norm_first=c.norm_first,
                activation=c.activation,
                layer_norm_eps=c.layer_norm_eps,
            )
            for _ in range(c.num_layers)
        )
        self.final_norm = (
            nn.LayerNorm(c.d_model, eps=c.layer_norm_eps) if c.norm_first else nn.Identity()
        )
        self.lm_head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.lm_head.weight = self.token.weight  # tied: the output layer is E_tok
        if not self.token.weight.is_meta:  # on the meta device there are no values to set
            self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        """GPT-2's initialisation: N(0, 0.02²) weights, zero biases; the two projections that
        write into the residual stream (W^O and W_2) get std 0.02/√(2L), so that the sum of
        2L residual branches keeps its size."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=self.config.init_std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, EncoderLayer):
            std = self.config.init_std / math.sqrt(2 * self.config.num_layers)
            nn.init.normal_(module.self_attn.W_o.weight, std=std)
            nn.init.normal_(module.ffn.linear2.weight, std=std)

    def embed(self, ids: torch.Tensor, start: int = 0) -> torch.Tensor:
        """Rule (GPT-1) for positions start .. start + T − 1: (B, T) -> (B, T, d_model)."""
        T = ids.shape[1]
        if start + T > self.config.max_len:
            raise ValueError(
                f"sequences up to max_len={self.config.max_len} positions, got {start + T}"
            )
        positions = torch.arange(start, start + T, device=ids.device)
        return self.dropout(self.token(ids) + self.position(positions))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (B, T) -> logits (B, T, |𝒱|): logits[:, t] scores the token after ids[:, t]."""
        expect_ids(ids, self.config.vocab_size, "ids")
        x = self.embed(ids)  # (B, T, d)
        mask = causal_mask(ids.shape[1], ids.device)  # (T, T): True on and below the diagonal
        for block in self.blocks:
            x = block(x, mask)  # (B, T, d)
        return self.lm_head(self.final_norm(x))  # (B, T, d) -> (B, T, |𝒱|)

    def forward_with_cache(
        self, ids: torch.Tensor, past: KVCache | None = None
    ) -> tuple[torch.Tensor, KVCache]:
        """ids (B, T) that follow the t positions cached in ``past`` -> (logits (B, T, |𝒱|),
        the cache extended to t + T positions). ``past=None`` is an empty cache (t = 0)."""
        dims = expect_ids(ids, self.config.vocab_size, "ids")
        t = self._check_cache(past, dims["B"])
        x = self.embed(ids, start=t)  # (B, T, d)
        present = []
        for i, block in enumerate(self.blocks):
            x, kv = block_with_cache(block, x, None if past is None else past[i])
            present.append(kv)
        return self.lm_head(self.final_norm(x)), tuple(present)

    def _check_cache(self, past: KVCache | None, batch_size: int) -> int:
        """The number of cached positions t, after checking every (K, V) pair's shape."""
        if past is None:
            return 0
        c = self.config
        if not isinstance(past, tuple) or len(past) != c.num_layers:
            raise ValueError(
                f"past: expected a tuple of {c.num_layers} (K, V) pairs, one per layer, "
                f"got {type(past).__name__} of length {len(past) if hasattr(past, '__len__') else '?'}"
            )
        t = past[0][0].shape[2] if past[0][0].dim() == 4 else -1
        want = (batch_size, c.num_heads, t, c.d_model // c.num_heads)
        for i, pair in enumerate(past):
            for name, tensor in zip("KV", pair, strict=True):
                if tuple(tensor.shape) != want:
                    raise ValueError(
                        f"past[{i}] {name}: expected shape (B, h, t, d_k) = {want}, "
                        f"got {tuple(tensor.shape)}"
                    )
                if tensor.dtype != self.token.weight.dtype:
                    raise TypeError(
                        f"past[{i}] {name}: expected dtype {self.token.weight.dtype} (the "
                        f"model's), got {tensor.dtype}"
                    )
        return t

    def empty_cache(self, batch_size: int) -> KVCache:
        """A cache of t = 0 positions: per layer (K, V) of shape (B, h, 0, d_k), in the model's
        dtype and on its device."""
        c = self.config
        like = {"dtype": self.token.weight.dtype, "device": self.token.weight.device}
        shape = (batch_size, c.num_heads, 0, c.d_model // c.num_heads)
        return tuple((torch.zeros(shape, **like), torch.zeros(shape, **like))
                     for _ in range(c.num_layers))  # fmt: skip

    def loss(self, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        """Mean cross-entropy (nats per token) of predicting y from x: batch = (x, y), (B, T) ids.

        Targets −100 are ignored (padding). ``course.train.fit(model, GPT.loss, batches)``
        trains with it.
        """
        x, y = batch
        logits = self(x)  # (B, T, |𝒱|)
        return F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=-100)

    # ------------------------------------------------------------------------------------------
    # Decoding: the step-function interface of course.decoding

    def start(self, batch_size: int, use_cache: bool = True) -> dict[str, Any]:
        """The decoding state before the first token: an empty KV cache, or an empty prefix."""
        if use_cache:
            return {"past": self.empty_cache(batch_size)}
        device = self.token.weight.device  # the model's
        return {"prefix": torch.zeros(batch_size, 0, dtype=torch.long, device=device)}

    def decode_step(
        self, tokens: torch.Tensor, state: dict[str, Any]
    ) -> tuple[torch.Tensor, dict[str, Any]]:
        """Feed one token per row, tokens (N,): (log-probabilities of the next token (N, |𝒱|),
        new state). With a cache, only the new position is computed; without one, the whole
        prefix is run again (the state is the prefix)."""
        if "past" in state:
            logits, past = self.forward_with_cache(tokens[:, None], state["past"])  # (N, 1, |𝒱|)
            return logits[:, -1].log_softmax(-1), {"past": past}
        prefix = torch.cat([state["prefix"], tokens[:, None]], dim=1)  # (N, t + 1)
        return self(prefix)[:, -1].log_softmax(-1), {"prefix": prefix}

    @torch.no_grad()
    def generate(
        self,
        ids: torch.Tensor,
        max_new_tokens: int,
        *,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        eos: int | None = None,
        generator: torch.Generator | None = None,
        use_cache: bool = True,
    ) -> torch.Tensor:
        """The prompt ids (B, P) followed by ``max_new_tokens`` sampled tokens: (B, P + n).

        Sampling is :func:`course.decoding.sample` (temperature, then top-k, then top-p), in
        eval mode. The prompt is fed one token at a time through :meth:`decode_step`.
        """
        dims = expect_ids(ids, self.config.vocab_size, "ids")
        if max_new_tokens > 0 and dims["T"] + max_new_tokens - 1 > self.config.max_len:
            raise ValueError(
                f"a prompt of {dims['T']} and {max_new_tokens} new tokens need "
                f"{dims['T'] + max_new_tokens - 1} positions; the model has max_len="
                f"{self.config.max_len}"
            )
        was_training = self.training
        self.eval()
        new = sample(
            self.decode_step,
            ids,
            state=self.start(dims["B"], use_cache),
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            eos=eos,
            generator=generator,
        )
        self.train(was_training)
        return torch.cat([ids, new], dim=1)


# ----------------------------------------------------------------------------------------------
# Interoperability with `transformers`: GPT-2's names and its Conv1D layout


def _layout(model: GPT) -> dict[str, tuple[list[torch.Tensor], bool]]:
    """The ``transformers`` name of each of our tensors: (our parameters, stored transposed?).

    GPT2LMHeadModel's names for a pre-norm model, OpenAIGPTLMHeadModel's (GPT-1: other table
    names, no final LayerNorm; ln_1 and ln_2 after the sums) for a post-norm one. Both store
    their linear layers as Conv1D, x W + b with W (in, out), where nn.Linear computes x Wᵀ + b
    with W (out, in): their weights are ours transposed. Their c_attn is one layer for W^Q,
    W^K and W^V, stacked along the output axis ([W^Q; W^K; W^V] in our layout, (3d, d)).
    """
    if model.config.norm_first:
        layout: dict[str, tuple[list[torch.Tensor], bool]] = {
            "transformer.wte.weight": ([model.token.weight], False),
            "transformer.wpe.weight": ([model.position.weight], False),
            "transformer.ln_f.weight": ([model.final_norm.weight], False),
            "transformer.ln_f.bias": ([model.final_norm.bias], False),
        }
    else:
        layout = {
            "transformer.tokens_embed.weight": ([model.token.weight], False),
            "transformer.positions_embed.weight": ([model.position.weight], False),
        }
    for i, block in enumerate(model.blocks):
        p, attn = f"transformer.h.{i}.", block.self_attn
        qkv = (attn.W_q, attn.W_k, attn.W_v)
        modules = {
            "ln_1": ([block.norm1], False),
            "attn.c_attn": (list(qkv), True),
            "attn.c_proj": ([attn.W_o], True),
            "ln_2": ([block.norm2], False),
            "mlp.c_fc": ([block.ffn.linear1], True),
            "mlp.c_proj": ([block.ffn.linear2], True),
        }
        for name, (parts, transposed) in modules.items():
            layout[p + name + ".weight"] = ([m.weight for m in parts], transposed)
            layout[p + name + ".bias"] = ([m.bias for m in parts], False)
    return layout


def to_gpt2_state_dict(model: GPT) -> dict[str, torch.Tensor]:
    """Our weights under the names and layout of ``transformers``' ``GPT2LMHeadModel`` (copies).

    ``lm_head.weight`` is the token table (tied), as GPT-2's checkpoints store it.
    """
    if not isinstance(model, GPT):
        raise TypeError(f"model: expected a GPT, got {type(model).__name__}")
    if not model.config.norm_first:
        raise ValueError("GPT-2 is pre-norm: a model with norm_first=False has no GPT-2 layout")
    out = {}
    for name, (parts, transposed) in _layout(model).items():
        tensor = torch.cat([p.detach() for p in parts])  # (3d, d) for c_attn's weight
        out[name] = (tensor.T if transposed else tensor).clone().contiguous()
    out["lm_head.weight"] = out["transformer.wte.weight"].clone()
    return out


def load_gpt2_state_dict(model: GPT, state: dict[str, torch.Tensor]) -> GPT:
    """Copy GPT2LMHeadModel weights (``their_model.state_dict()``) into ``model``, in place.

    Every tensor our model needs must be there with the shape this config gives it. GPT-2's
    causal-mask buffers (``attn.bias`` in some versions) and ``lm_head.weight`` (tied to the
    token table) are not read.
    """
    if not isinstance(model, GPT):
        raise TypeError(f"model: expected a GPT, got {type(model).__name__}")
    if not model.config.norm_first:
        raise ValueError("GPT-2 is pre-norm: a model with norm_first=False has no GPT-2 layout")
    return _load(model, state)


def load_openai_gpt_state_dict(model: GPT, state: dict[str, torch.Tensor]) -> GPT:
    """Copy GPT-1 weights (``transformers``' OpenAIGPTLMHeadModel) into a post-norm ``model``."""
    if not isinstance(model, GPT):
        raise TypeError(f"model: expected a GPT, got {type(model).__name__}")
    if model.config.norm_first:
        raise ValueError("GPT-1 is post-norm: expected a model with norm_first=False")
    return _load(model, state)


@torch.no_grad()
def _load(model: GPT, state: dict[str, torch.Tensor]) -> GPT:
    layout = _layout(model)
    missing = sorted(set(layout) - set(state))
    if missing:
        raise ValueError(f"state: missing {len(missing)} tensors, e.g. {missing[:3]}")
    for name, (parts, transposed) in layout.items():
        tensor = state[name].T if transposed else state[name]
        want = (sum(p.shape[0] for p in parts), *parts[0].shape[1:])  # in our layout
        if tuple(tensor.shape) != want:
            theirs = want[::-1] if transposed else want
            raise ValueError(
                f"state[{name!r}]: expected shape {theirs} for this config, "
                f"got {tuple(state[name].shape)}"
            )
        for p, piece in zip(parts, tensor.split([p.shape[0] for p in parts]), strict=True):
            p.copy_(piece)
    return model


def save_for_transformers(model: GPT, folder: str | Path) -> Path:
    """Write ``config.json`` and ``model.safetensors`` for ``GPT2LMHeadModel.from_pretrained``.

    Also writes ``course_gpt.json`` with our own config, so the folder says what made it.
    """
    from safetensors.torch import save_file

    weights = to_gpt2_state_dict(model)
    del weights["lm_head.weight"]  # tied: from_pretrained ties it to wte again
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = model.config.to_transformers()
    config.architectures = ["GPT2LMHeadModel"]
    config.save_pretrained(folder)
    save_file(weights, folder / "model.safetensors", {"format": "pt"})
    (folder / "course_gpt.json").write_text(json.dumps(asdict(model.config), indent=2) + "\n")
    return folder
