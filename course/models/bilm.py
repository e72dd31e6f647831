"""A small ELMo-style bidirectional language model (Unit 3), readable top to bottom.

Notation (the course's notation page; ELMo's paper uses k for the position and j for the layer):

    x_k = E[t_k]                                         the token layer: a word embedding, size D
    h_{k,j}^→ = LSTM_j^→(h_{k,j-1}^→, h_{k-1,j}^→)        forward layer j = 1..L, reads left to right
    h_{k,j}^← = LSTM_j^←(h_{k,j-1}^←, h_{k+1,j}^←)        backward layer j, reads right to left
    p(t_{k+1} | t_1..t_k) = softmax(V h_{k,L}^→ + c)      forward LM
    p(t_{k-1} | t_k..t_N) = softmax(V h_{k,L}^← + c)      backward LM, the same V and c

The two directions share the token layer and the softmax (V, c), and have their own LSTMs, as
in ELMo (Peters et al., 2018). ELMo's token layer reads the characters of each word with a
convolutional network; ours is a plain word embedding (a type embedding, one vector per word of
the vocabulary), which trains much faster on a CPU. The representations a downstream task mixes are

    h_{k,0} = [x_k ; x_k],   h_{k,j} = [h_{k,j}^→ ; h_{k,j}^←]  (j = 1..L),   each of size 2D.

Padded batches: the backward LSTM of a sentence must start at its last real token, not at the
padding after it, so the backward reader reverses each sequence within its own length
(:func:`reverse_padded`) and the LSTMs read packed sequences (``pack_padded_sequence``).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from course.checks import expect_ids, expect_shape

__all__ = ["BiLM", "reverse_padded", "lengths_mask"]


def lengths_mask(lengths: torch.Tensor, T: int) -> torch.Tensor:
    """(B, T) bool: True at the real positions t < lengths[b] (on lengths' device)."""
    return torch.arange(T, device=lengths.device)[None, :] < lengths[:, None]


def reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Reverse each sequence of a padded batch within its own length; padding stays in place.

    x: (B, T, ...); lengths: (B,). Row b becomes x[b, n-1], ..., x[b, 0], padding (n = lengths[b]).
    Applying it twice gives x back.
    """
    B, T = x.shape[:2]
    t = torch.arange(T, device=x.device)[None, :]  # (1, T)
    n = lengths.to(x.device)[:, None]  # (B, 1): the index for x.gather must be on x's device
    index = torch.where(t < n, n - 1 - t, t)  # (B, T): reversed inside, identity on the padding
    index = index.reshape(B, T, *([1] * (x.dim() - 2))).expand_as(x)
    return x.gather(1, index)


class BiLM(nn.Module):
    """Forward and backward LSTM language models on a shared token layer and a shared softmax.

    vocab_size: |𝒱|, the words of the token layer and of the softmax (id 0 is padding);
    dim: D, the size of x_k and of every LSTM state; num_layers: L.
    """

    def __init__(self, vocab_size: int, dim: int = 128, num_layers: int = 2) -> None:
        super().__init__()
        if min(vocab_size, dim, num_layers) < 1:
            raise ValueError(
                "vocab_size, dim and num_layers must be >= 1, got "
                f"{vocab_size}, {dim}, {num_layers}"
            )
        self.vocab_size, self.dim, self.num_layers = vocab_size, dim, num_layers
        self.token_layer = nn.Embedding(vocab_size, dim, padding_idx=0)
        self.forward_lstms = nn.ModuleList(
            nn.LSTM(dim, dim, batch_first=True) for _ in range(num_layers)
        )
        self.backward_lstms = nn.ModuleList(
            nn.LSTM(dim, dim, batch_first=True) for _ in range(num_layers)
        )
        self.softmax = nn.Linear(dim, vocab_size)  # V and c, shared by both directions

    def _check(self, words: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        expect_ids(words, self.vocab_size, "words")
        B, T = words.shape
        if lengths is None:
            return torch.full((B,), T, dtype=torch.long, device=words.device)
        lengths = torch.as_tensor(lengths, dtype=torch.long, device=words.device)
        expect_shape(lengths, (B,), "lengths")
        if len(lengths) and (lengths.min() < 1 or lengths.max() > T):
            raise ValueError(
                f"lengths: expected values in 1..{T} (the padded length), got {lengths.tolist()}"
            )
        return lengths

    @staticmethod
    def _run(lstm: nn.LSTM, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """One LSTM layer over a padded batch, reading only the real positions. (B, T, D)."""
        if bool((lengths == x.shape[1]).all()):
            return lstm(x)[0]
        # Packing reads the lengths on the CPU, whatever the device of x.
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        return pad_packed_sequence(lstm(packed)[0], batch_first=True, total_length=x.shape[1])[0]

    def directions(
        self, words: torch.Tensor, lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
        """x (B, T, D), the forward layers and the backward layers (L tensors (B, T, D) each).

        Backward states are returned in the sentence's own order: ``backward[j][b, k]`` has read
        tokens N-1 down to k. Padded positions hold zeros.
        """
        lengths = self._check(words, lengths)
        x = self.token_layer(words)  # (B, T, D)
        forward, backward = [], []
        h = x
        for lstm in self.forward_lstms:
            h = self._run(lstm, h, lengths)  # (B, T, D)
            forward.append(h)
        h = reverse_padded(x, lengths)  # each sentence read from its last real token
        for lstm in self.backward_lstms:
            h = self._run(lstm, h, lengths)
            backward.append(reverse_padded(h, lengths))
        return x, forward, backward

    def layers(self, words: torch.Tensor, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """All L+1 representations, (L+1, B, T, 2D): [x; x], then [h^→_j; h^←_j] for j = 1..L."""
        x, forward, backward = self.directions(words, lengths)
        mask = lengths_mask(self._check(words, lengths), words.shape[1])[..., None]  # (B, T, 1)
        stacked = [torch.cat([x, x], dim=-1) * mask]
        stacked += [torch.cat([f, b], dim=-1) for f, b in zip(forward, backward, strict=True)]
        return torch.stack(stacked)

    def lm_logits(
        self, words: torch.Tensor, lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits (B, T, |𝒱|) of the forward LM (next token) and of the backward LM (previous)."""
        _, forward, backward = self.directions(words, lengths)
        return self.softmax(forward[-1]), self.softmax(backward[-1])

    def lm_loss(
        self, words: torch.Tensor, lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, dict[str, float]]:
        """Mean cross-entropy of both directions (nats per token), and each one in ``logs``.

        words: (B, T) word ids (padded, with ``lengths``, or all full length). The forward LM
        at position k predicts words[:, k+1], the backward LM predicts words[:, k-1]. Targets
        that are padding (id 0), or <s> for the forward LM and </s> for the backward LM (a
        sentence boundary always follows the other one), are not scored.
        """
        forward_logits, backward_logits = self.lm_logits(words, lengths)
        lengths = self._check(words, lengths)
        real = lengths_mask(lengths, words.shape[1])
        target_f = words[:, 1:].masked_fill(~real[:, 1:] | (words[:, 1:] == 2), -100)
        target_b = words[:, :-1].masked_fill(~real[:, :-1] | (words[:, :-1] == 3), -100)
        loss_f = F.cross_entropy(forward_logits[:, :-1].flatten(0, 1), target_f.flatten())
        loss_b = F.cross_entropy(backward_logits[:, 1:].flatten(0, 1), target_b.flatten())
        loss = (loss_f + loss_b) / 2
        return loss, {"forward": loss_f.item(), "backward": loss_b.item()}
