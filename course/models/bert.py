"""A tiny BERT (Unit 7): the Transformer encoder with BERT's inputs and its two pretraining heads.

Inputs (token ids w_t, segment s_t ∈ {0, 1}, position t), following Devlin et al. (2019):

    e_t = LayerNorm(E_tok[w_t] + E_seg[s_t] + E_pos[t]),   then dropout         (BERT-1)
    h^(0) = e,  h^(l) = EncoderLayer_l(h^(l-1)),  l = 1..L                       (BERT-2)

Each layer is Unit 6's post-norm :class:`~course.models.transformer.EncoderLayer` with a GELU
feed-forward network and LayerNorm ε = 1e-12. Heads:

    pooled = tanh(W_p h^(L)_[CLS] + b_p)                                          (BERT-3)
    NSP logits = W_nsp pooled + b_nsp                        (2: IsNext, NotNext)
    MLM logits_t = LayerNorm(GELU(W_m h^(L)_t + b_m)) E_tokᵀ + b_dec              (BERT-4)

The MLM decoder reuses the token embedding table E_tok (tied weights) plus its own bias.
``hidden_states`` returns h^(0), ..., h^(L) for feature extraction (Lecture 7's layer table).

:func:`save_for_transformers` writes a folder that ``transformers``' ``BertForPreTraining``
and ``BertForMaskedLM`` load with ``from_pretrained(folder, local_files_only=True)``: the
same numbers come out (the tests compare the logits).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from course.checks import expect_ids, expect_shape
from course.data.bert_inputs import IGNORE_INDEX, MASK_ID, NUM_SPECIAL, frame_pair
from course.data.wordpiece import SPECIAL_TOKENS, WordPiece
from course.models.transformer import EncoderLayer

__all__ = [
    "BertConfig",
    "BERT_BASE",
    "BERT_LARGE",
    "BertOutput",
    "BertEmbeddings",
    "BertModel",
    "BertForPreTraining",
    "transformers_state_dict",
    "save_for_transformers",
    "fill_mask",
    "evaluate_pretraining",
]


@dataclass(frozen=True)
class BertConfig:
    """Sizes of a BERT. The defaults are a tiny model that pretrains on a CPU."""

    vocab_size: int = 4000  # |𝒱|
    d_model: int = 128  # hidden size H in the BERT paper
    num_layers: int = 2  # L
    num_heads: int = 2  # A in the BERT paper
    d_ff: int = 512  # 4 d_model, as in BERT
    max_len: int = 128  # number of learned positions
    type_vocab_size: int = 2  # segments A and B
    dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    init_std: float = 0.02  # weights ~ N(0, 0.02²), as BERT

    def __post_init__(self) -> None:
        if self.d_model % self.num_heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by num_heads ({self.num_heads})"
            )
        if min(self.vocab_size, self.d_model, self.num_layers, self.d_ff, self.max_len) < 1:
            raise ValueError(f"sizes must be positive: {self}")

    def to_transformers(self) -> Any:
        """The equivalent ``transformers.BertConfig`` (built by hand: nothing is downloaded)."""
        from transformers import BertConfig as HFBertConfig

        return HFBertConfig(
            vocab_size=self.vocab_size,
            hidden_size=self.d_model,
            num_hidden_layers=self.num_layers,
            num_attention_heads=self.num_heads,
            intermediate_size=self.d_ff,
            hidden_act="gelu",  # the exact (erf) GELU, F.gelu's default
            hidden_dropout_prob=self.dropout,
            attention_probs_dropout_prob=0.0,  # EncoderLayer has no dropout on attention weights
            max_position_embeddings=self.max_len,
            type_vocab_size=self.type_vocab_size,
            initializer_range=self.init_std,
            layer_norm_eps=self.layer_norm_eps,
            pad_token_id=0,
            tie_word_embeddings=True,
        )


# The two sizes of the paper (uncased vocabulary of 30,522 WordPiece tokens, 512 positions).
BERT_BASE = BertConfig(30522, 768, 12, 12, 3072, 512)
BERT_LARGE = BertConfig(30522, 1024, 24, 16, 4096, 512)


class BertOutput(NamedTuple):
    """What a BERT forward pass returns (the heads' logits are None for the encoder alone)."""

    last_hidden_state: torch.Tensor  # (B, T, d_model): h^(L)
    pooled: torch.Tensor  # (B, d_model): tanh(W_p h^(L)_[CLS] + b_p)
    hidden_states: tuple[torch.Tensor, ...]  # L + 1 tensors (B, T, d_model): h^(0) .. h^(L)
    mlm_logits: torch.Tensor | None = None  # (B, T, |𝒱|)
    nsp_logits: torch.Tensor | None = None  # (B, 2)


class BertEmbeddings(nn.Module):
    """Rule (BERT-1): token + segment + learned position embeddings, LayerNorm, dropout."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.token = nn.Embedding(config.vocab_size, config.d_model, padding_idx=0)
        self.segment = nn.Embedding(config.type_vocab_size, config.d_model)
        self.position = nn.Embedding(config.max_len, config.d_model)
        self.norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        T = input_ids.shape[1]
        if T > self.config.max_len:
            raise ValueError(f"sequences up to max_len={self.config.max_len}, got {T}")
        positions = torch.arange(T, device=input_ids.device)
        e = self.token(input_ids) + self.segment(token_type_ids) + self.position(positions)
        return self.dropout(self.norm(e))  # (B, T, d_model)


class BertModel(nn.Module):
    """Rules (BERT-1) to (BERT-3): the encoder and the pooler, with every layer's states."""

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.layers = nn.ModuleList(
            EncoderLayer(
                config.d_model,
                config.num_heads,
                config.d_ff,
                config.dropout,
                norm_first=False,
                activation="gelu",
                layer_norm_eps=config.layer_norm_eps,
            )
            for _ in range(config.num_layers)
        )
        self.pooler = nn.Linear(config.d_model, config.d_model)

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
    ) -> BertOutput:
        """input_ids, token_type_ids, attention_mask: (B, T) integers (mask 1 real, 0 padding)."""
        dims = expect_ids(input_ids, self.config.vocab_size, "input_ids")
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        expect_ids(token_type_ids, self.config.type_vocab_size, "token_type_ids", ("B", "T"))
        expect_shape(token_type_ids, (dims["B"], dims["T"]), "token_type_ids")
        mask = None
        if attention_mask is not None:
            expect_shape(attention_mask, (dims["B"], dims["T"]), "attention_mask")
            if not bool(attention_mask[:, 0].all()):
                raise ValueError("attention_mask: the first position ([CLS]) must be real (1)")
            mask = attention_mask.bool()[:, None, None, :]  # (B, 1, 1, T): keys that are real
        h = self.embeddings(input_ids, token_type_ids)  # (B, T, d_model)
        states = [h]
        for layer in self.layers:
            h = layer(h, mask)
            states.append(h)
        pooled = torch.tanh(self.pooler(h[:, 0]))  # (B, d_model), from [CLS]
        return BertOutput(h, pooled, tuple(states))


class BertForPreTraining(nn.Module):
    """BERT with its two pretraining heads: rule (BERT-4) for MLM, and NSP from the pooler."""

    def __init__(self, config: BertConfig | dict[str, Any]) -> None:
        super().__init__()
        # A dict is the form a checkpoint's JSON metadata stores (``asdict(config)``).
        config = BertConfig(**config) if isinstance(config, dict) else config
        self.config = config
        self.bert = BertModel(config)
        self.mlm_dense = nn.Linear(config.d_model, config.d_model)
        self.mlm_norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.mlm_bias = nn.Parameter(torch.zeros(config.vocab_size))  # b_dec; weight is E_tok
        self.nsp = nn.Linear(config.d_model, 2)
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        """BERT's initialisation: N(0, 0.02²) weights, zero biases, LayerNorm γ = 1, β = 0."""
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=self.config.init_std)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            with torch.no_grad():
                module.weight[module.padding_idx].zero_()

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
    ) -> BertOutput:
        out = self.bert(input_ids, token_type_ids, attention_mask)
        mlm = self.mlm_head(out.last_hidden_state)  # (B, T, |𝒱|)
        return out._replace(mlm_logits=mlm, nsp_logits=self.nsp(out.pooled))

    def mlm_head(self, h: torch.Tensor) -> torch.Tensor:
        """Rule (BERT-4) on vectors h (..., d_model) -> logits (..., |𝒱|)."""
        z = self.mlm_norm(F.gelu(self.mlm_dense(h)))  # (..., d_model)
        return z @ self.bert.embeddings.token.weight.T + self.mlm_bias  # (..., |𝒱|)

    def loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, dict[str, float]]:
        """MLM cross-entropy on the selected positions (labels ≠ −100) plus NSP cross-entropy.

        ``batch`` is what ``course.data.bert_inputs.pretraining_batch`` returns. Returns
        (loss, logs) as ``course.train.fit`` takes them. The MLM head runs on the selected
        positions only (about 15% of them): the same loss as on all logits, for less work.
        """
        out = self.bert(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
        selected = batch["labels"] != IGNORE_INDEX  # (B, T)
        logits = self.mlm_head(out.last_hidden_state[selected])  # (n, |𝒱|)
        mlm = F.cross_entropy(logits, batch["labels"][selected])
        nsp = F.cross_entropy(self.nsp(out.pooled), batch["next_sentence_label"])
        return mlm + nsp, {"mlm": mlm.item(), "nsp": nsp.item()}


# ----------------------------------------------------------------------------------------------
# Using a pretrained model


@torch.no_grad()
def fill_mask(
    model: BertForPreTraining, wordpiece: WordPiece, text: str, k: int = 5
) -> list[list[tuple[str, float]]]:
    """The ``k`` most probable tokens, with their probabilities, for each [MASK] in ``text``.

    ``text`` is ordinary text with the literal string "[MASK]" where a token is hidden, e.g.
    "In the beginning God [MASK] the heavens." Special tokens are never proposed.
    """
    if wordpiece.vocab[:NUM_SPECIAL] != list(SPECIAL_TOKENS):
        raise ValueError(f"wordpiece: its first tokens must be {SPECIAL_TOKENS}")
    if len(wordpiece) != model.config.vocab_size:
        raise ValueError(
            f"wordpiece has {len(wordpiece)} tokens but the model {model.config.vocab_size}"
        )
    parts = text.split("[MASK]")
    if len(parts) < 2:
        raise ValueError(f"text: expected at least one [MASK], got {text!r}")
    ids: list[int] = []
    for i, part in enumerate(parts):
        ids += ([MASK_ID] if i else []) + wordpiece.encode(part)
    framed, _ = frame_pair(ids, max_len=model.config.max_len)
    if framed.count(MASK_ID) != len(parts) - 1:
        raise ValueError(f"text: too long for max_len={model.config.max_len}")
    framed_ids = torch.tensor(framed, device=model.mlm_bias.device)  # (T,), on the model's device
    was_training = model.training
    logits = model.eval()(framed_ids[None]).mlm_logits[0]  # (T, |𝒱|)
    model.train(was_training)
    logits[:, :NUM_SPECIAL] = float("-inf")
    probs = logits[framed_ids == MASK_ID].softmax(-1)  # (masks, |𝒱|)
    top = probs.topk(k, dim=-1)
    return [
        [(wordpiece.vocab[int(i)], float(p)) for p, i in zip(ps, ix, strict=True)]
        for ps, ix in zip(top.values, top.indices, strict=True)
    ]


@torch.no_grad()
def evaluate_pretraining(
    model: BertForPreTraining, batches: list[dict[str, torch.Tensor]]
) -> dict[str, float]:
    """MLM and NSP figures on held-out batches (from ``pretraining_batch``), in eval mode.

    Returns ``mlm_accuracy`` (top-1 on the selected positions), ``mlm_loss`` (mean
    cross-entropy in nats per selected token), ``nsp_accuracy`` and the counts they rest on.
    The batches are moved to the model's device.
    """
    if not batches:
        raise ValueError("batches: expected at least one batch")
    was_training = model.training
    model.eval()
    right = total = nsp_right = pairs = 0
    loss_sum = 0.0
    for batch in batches:
        batch = {key: value.to(model.mlm_bias.device) for key, value in batch.items()}
        out = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
        selected = batch["labels"] != IGNORE_INDEX  # (B, T)
        logits, labels = out.mlm_logits[selected], batch["labels"][selected]  # (n, |𝒱|), (n,)
        right += int((logits.argmax(-1) == labels).sum())
        loss_sum += float(F.cross_entropy(logits, labels, reduction="sum"))
        total += len(labels)
        nsp_right += int((out.nsp_logits.argmax(-1) == batch["next_sentence_label"]).sum())
        pairs += len(batch["next_sentence_label"])
    model.train(was_training)
    if total == 0:
        raise ValueError("batches: no position is selected for MLM (all labels are -100)")
    return {
        "mlm_accuracy": right / total,
        "mlm_loss": loss_sum / total,
        "nsp_accuracy": nsp_right / pairs,
        "mlm_tokens": float(total),
        "nsp_pairs": float(pairs),
    }


# ----------------------------------------------------------------------------------------------
# Interoperability with `transformers`


def transformers_state_dict(model: BertForPreTraining) -> dict[str, torch.Tensor]:
    """Our weights under the names of ``transformers``' ``BertForPreTraining`` (copies)."""
    emb, out = model.bert.embeddings, {}
    names = {
        "bert.embeddings.word_embeddings": emb.token,
        "bert.embeddings.token_type_embeddings": emb.segment,
        "bert.embeddings.position_embeddings": emb.position,
        "bert.embeddings.LayerNorm": emb.norm,
        "bert.pooler.dense": model.bert.pooler,
        "cls.predictions.transform.dense": model.mlm_dense,
        "cls.predictions.transform.LayerNorm": model.mlm_norm,
        "cls.seq_relationship": model.nsp,
    }
    for i, layer in enumerate(model.bert.layers):
        p = f"bert.encoder.layer.{i}."
        attn = layer.self_attn
        names |= {
            p + "attention.self.query": attn.W_q,
            p + "attention.self.key": attn.W_k,
            p + "attention.self.value": attn.W_v,
            p + "attention.output.dense": attn.W_o,
            p + "attention.output.LayerNorm": layer.norm1,
            p + "intermediate.dense": layer.ffn.linear1,
            p + "output.dense": layer.ffn.linear2,
            p + "output.LayerNorm": layer.norm2,
        }
    for prefix, module in names.items():
        for key, tensor in module.state_dict().items():
            out[f"{prefix}.{key}"] = tensor.detach().clone().contiguous()
    out["cls.predictions.bias"] = model.mlm_bias.detach().clone()
    out["cls.predictions.decoder.weight"] = emb.token.weight.detach().clone()  # tied
    out["cls.predictions.decoder.bias"] = model.mlm_bias.detach().clone()
    return out


ARCHITECTURES = ("BertForPreTraining", "BertForMaskedLM")


def save_for_transformers(
    model: BertForPreTraining, folder: str | Path, architecture: str = "BertForPreTraining"
) -> Path:
    """Write ``config.json`` and ``model.safetensors`` for ``from_pretrained(folder)``.

    ``architecture="BertForMaskedLM"`` leaves out the pooler and the NSP head, which that
    class does not have, so that it loads with no unexpected weights. Also writes
    ``course_bert.json`` with our own config, so the folder says what made it.
    """
    from safetensors.torch import save_file

    if not isinstance(model, BertForPreTraining):
        raise TypeError(f"model: expected a BertForPreTraining, got {type(model).__name__}")
    if architecture not in ARCHITECTURES:
        raise ValueError(f"architecture: expected one of {ARCHITECTURES}, got {architecture!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = model.config.to_transformers()
    config.architectures = [architecture]
    config.save_pretrained(folder)
    weights = transformers_state_dict(model)
    if architecture == "BertForMaskedLM":
        weights = {
            k: v for k, v in weights.items() if not k.startswith(("bert.pooler.", "cls.seq_"))
        }
    save_file(weights, folder / "model.safetensors", {"format": "pt"})
    (folder / "course_bert.json").write_text(json.dumps(asdict(model.config), indent=2) + "\n")
    return folder
