"""Small sequence models that a student can read in one sitting.

Notation (Lecture 1): for inputs x_t and hidden states h_t,

    h_t = tanh(W h_{t-1} + U x_t + b)        W: recurrent (H, H), U: input (H, E), b: (H,)
    logits_t = V h_t + c                     V: output (K, H), c: (K,)

``torch.nn.RNN`` stores W as ``weight_hh_l0``, U as ``weight_ih_l0`` and splits b into
``bias_ih_l0 + bias_hh_l0``.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from course.checks import expect_dtype, expect_shape

__all__ = ["CharRNN", "spectral_radius", "rescale_spectral_radius_"]


class CharRNN(nn.Module):
    """A character-level language model: input -> ``nn.RNN`` -> linear readout.

    vocab_size: K, the number of character ids.
    hidden_size: H.
    embedding_dim: E. ``None`` feeds one-hot vectors (E = K), so that ``weight_ih_l0`` is
        exactly the input matrix U of the lecture; an integer uses a learned ``nn.Embedding``.
    num_layers: stacked RNN layers (the output of layer l is the input of layer l + 1).
    nonlinearity: "tanh" or "relu" (what ``nn.RNN`` supports).
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        *,
        embedding_dim: int | None = None,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
    ) -> None:
        super().__init__()
        if vocab_size < 1 or hidden_size < 1 or num_layers < 1:
            raise ValueError(
                "vocab_size, hidden_size and num_layers must be >= 1, got "
                f"{vocab_size}, {hidden_size} and {num_layers}"
            )
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nonlinearity: expected 'tanh' or 'relu', got {nonlinearity!r}")
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.embedding = None if embedding_dim is None else nn.Embedding(vocab_size, embedding_dim)
        input_size = vocab_size if embedding_dim is None else embedding_dim
        self.rnn = nn.RNN(
            input_size,
            hidden_size,
            num_layers=num_layers,
            nonlinearity=nonlinearity,
            batch_first=True,
        )
        self.readout = nn.Linear(hidden_size, vocab_size)  # V and c

    def init_hidden(self, batch_size: int) -> torch.Tensor:
        """Zeros of shape (num_layers, B, H), the default h_0."""
        weight = self.readout.weight
        return torch.zeros(
            self.num_layers, batch_size, self.hidden_size, dtype=weight.dtype, device=weight.device
        )

    def forward(
        self, ids: torch.Tensor, h0: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """ids: (B, T) integers in [0, K); h0: (num_layers, B, H) or None for zeros.

        Returns logits (B, T, K) for the next character at every step, and h_T
        (num_layers, B, H) to carry into the next chunk.
        """
        dims = expect_shape(ids, ("B", "T"), "ids")
        expect_dtype(ids, "iu", "ids")
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= self.vocab_size):
            raise ValueError(
                f"ids: expected values in [0, {self.vocab_size}), "
                f"got min {int(ids.min())} and max {int(ids.max())}"
            )
        if h0 is not None:
            expect_shape(h0, (self.num_layers, dims["B"], self.hidden_size), "h0")
            expect_dtype(h0, "f", "h0")
        ids = ids.long()
        if self.embedding is None:
            x = F.one_hot(ids, self.vocab_size).to(self.readout.weight.dtype)  # (B, T, K)
        else:
            x = self.embedding(ids)  # (B, T, E)
        hs, h_last = self.rnn(x, h0)  # (B, T, H), (num_layers, B, H)
        logits = self.readout(hs)  # (B, T, H) -> (B, T, K)
        return logits, h_last


def spectral_radius(matrix: torch.Tensor) -> float:
    """The largest absolute eigenvalue of a square matrix (H, H)."""
    expect_shape(matrix, ("H", "H"), "matrix")
    return float(torch.linalg.eigvals(matrix.detach().double()).abs().max())


@torch.no_grad()
def rescale_spectral_radius_(matrix: torch.Tensor, radius: float) -> torch.Tensor:
    """Scale a square matrix (H, H) in place so that its spectral radius becomes ``radius``."""
    if radius < 0:
        raise ValueError(f"radius: expected a non-negative number, got {radius}")
    current = spectral_radius(matrix)
    if current == 0.0:
        raise ValueError("matrix: its spectral radius is 0 (nilpotent), so it cannot be rescaled")
    matrix.mul_(radius / current)
    return matrix
