"""Small recurrent models that a student can read in one sitting (Units 1 and 2).

Notation (the course's notation page): for inputs x_t of size D and hidden states h_t of size H,

    h_t = tanh(W h_{t-1} + U x_t + b)        W: recurrent (H, H), U: input (H, D), b: (H,)
    o_t = V h_t + c                          V: output (K, H), c: (K,); K = |𝒱| for a language model

``torch.nn.RNN`` stores W as ``weight_hh_l0``, U as ``weight_ih_l0`` and splits b into
``bias_ih_l0 + bias_hh_l0``.

Lecture 2 adds gated cells. ``torch.nn.LSTM`` stacks the four gate blocks of its weights in the
order (i, f, g, o): input gate, forget gate, candidate (c̃_t in the lecture; PyTorch calls it
g) and output gate, so ``weight_ih_l0[H:2H]`` (U_f) and ``bias_ih_l0[H:2H]`` belong to the
forget gate.

Every model checks its inputs with the same guards, ``course.checks.expect_ids`` and
``expect_state``, so a wrong dtype or shape gets the same message from each.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from course.checks import expect_ids, expect_shape, expect_state

__all__ = [
    "CharRNN",
    "CharLSTM",
    "SequenceTagger",
    "set_forget_bias_",
    "spectral_radius",
    "rescale_spectral_radius_",
]


class _CharModel(nn.Module):
    """What the character-level models share: their sizes, their input and their guards.

    The input is one-hot (D = K, so that ``weight_ih_l0`` is exactly the input matrix U of
    the lecture) when ``embedding_dim`` is None, else a learned ``nn.Embedding`` (D =
    ``embedding_dim``). Subclasses add the recurrent layer and the readout (in that order).
    """

    def __init__(
        self, vocab_size: int, hidden_size: int, embedding_dim: int | None, num_layers: int
    ) -> None:
        super().__init__()
        if vocab_size < 1 or hidden_size < 1 or num_layers < 1:
            raise ValueError(
                "vocab_size, hidden_size and num_layers must be >= 1, got "
                f"{vocab_size}, {hidden_size} and {num_layers}"
            )
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.embedding = None if embedding_dim is None else nn.Embedding(vocab_size, embedding_dim)
        self.input_size = vocab_size if embedding_dim is None else embedding_dim  # D

    def _zeros(self, batch_size: int) -> torch.Tensor:
        """Zeros of shape (num_layers, B, H) in the model's dtype and device."""
        weight = self.readout.weight
        return torch.zeros(
            self.num_layers, batch_size, self.hidden_size, dtype=weight.dtype, device=weight.device
        )

    def _inputs(self, ids: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Check ids (B, T); return the input vectors x (B, T, D) and B."""
        batch_size = expect_ids(ids, self.vocab_size)["B"]
        ids = ids.long()
        if self.embedding is None:
            return F.one_hot(ids, self.vocab_size).to(self.readout.weight.dtype), batch_size
        return self.embedding(ids), batch_size

    def _check_state(self, value: torch.Tensor, name: str, batch_size: int) -> None:
        expect_state(
            value, (self.num_layers, batch_size, self.hidden_size), name, like=self.readout.weight
        )


class CharRNN(_CharModel):
    """A character-level language model: input -> ``nn.RNN`` -> linear readout.

    vocab_size: K = |𝒱|, the number of character ids.
    hidden_size: H.
    embedding_dim: D. ``None`` feeds one-hot vectors (D = K), so that ``weight_ih_l0`` is
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
        super().__init__(vocab_size, hidden_size, embedding_dim, num_layers)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"nonlinearity: expected 'tanh' or 'relu', got {nonlinearity!r}")
        self.rnn = nn.RNN(
            self.input_size,
            hidden_size,
            num_layers=num_layers,
            nonlinearity=nonlinearity,
            batch_first=True,
        )
        self.readout = nn.Linear(hidden_size, vocab_size)  # V and c

    def init_hidden(self, batch_size: int) -> torch.Tensor:
        """Zeros of shape (num_layers, B, H), the default h_0."""
        return self._zeros(batch_size)

    def forward(
        self, ids: torch.Tensor, state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """ids: (B, T) integers in [0, K); state: h_0 (num_layers, B, H), or None for zeros.

        Returns logits (B, T, K) for the next character at every step, and h_T
        (num_layers, B, H) to carry into the next chunk.
        """
        x, batch_size = self._inputs(ids)  # (B, T, D)
        if state is not None:
            self._check_state(state, "h_0", batch_size)
        hs, h_last = self.rnn(x, state)  # (B, T, H), (num_layers, B, H)
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


@torch.no_grad()
def set_forget_bias_(lstm: nn.LSTM | nn.LSTMCell, value: float) -> None:
    """Set the forget-gate bias of every layer of ``lstm`` to ``value``, in place.

    PyTorch adds two bias vectors (``bias_ih`` and ``bias_hh``); the forget block (rows H..2H,
    gate order i, f, g, o) of the first is set to ``value`` and that of the second to 0, so the
    total forget bias is exactly ``value``.
    """
    H = lstm.hidden_size
    for name, bias in lstm.named_parameters():
        if name.startswith("bias_ih"):
            bias[H : 2 * H] = value
        elif name.startswith("bias_hh"):
            bias[H : 2 * H] = 0.0


class CharLSTM(_CharModel):
    """A character-level language model: input -> ``nn.LSTM`` -> linear readout.

    Same interface as :class:`CharRNN`, but the state is a pair (h, c) of tensors of shape
    (num_layers, B, H): hidden state and cell state. ``forget_bias`` sets the forget-gate
    bias at initialisation (``None`` keeps PyTorch's random default; 1.0 is the usual choice).
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        *,
        embedding_dim: int | None = None,
        num_layers: int = 1,
        forget_bias: float | None = 1.0,
    ) -> None:
        super().__init__(vocab_size, hidden_size, embedding_dim, num_layers)
        self.lstm = nn.LSTM(self.input_size, hidden_size, num_layers=num_layers, batch_first=True)
        if forget_bias is not None:
            set_forget_bias_(self.lstm, forget_bias)
        self.readout = nn.Linear(hidden_size, vocab_size)  # V and c

    def init_hidden(self, batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Zeros (h_0, c_0), each of shape (num_layers, B, H)."""
        return self._zeros(batch_size), self._zeros(batch_size)

    def forward(
        self, ids: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """ids: (B, T) integers in [0, K); state: (h_0, c_0), each (num_layers, B, H), or None.

        Returns logits (B, T, K) and the final state (h_T, c_T) to carry into the next chunk.
        """
        x, batch_size = self._inputs(ids)  # (B, T, D)
        if state is not None:
            if not isinstance(state, (tuple, list)) or len(state) != 2:
                raise TypeError("state: expected a pair (h_0, c_0) or None")
            for name, value in zip(("h_0", "c_0"), state, strict=True):
                self._check_state(value, name, batch_size)
            state = (state[0], state[1])
        hs, (h_last, c_last) = self.lstm(x, state)  # (B, T, H), 2 x (num_layers, B, H)
        return self.readout(hs), (h_last, c_last)  # (B, T, H) -> (B, T, K)


class SequenceTagger(nn.Module):
    """Embedding -> one recurrent layer -> linear readout: class logits at every step.

    cell: "rnn" (tanh), "lstm" or "gru". ``embedding_dim`` is D, ``hidden_size`` H,
    ``num_classes`` K.
    ``forget_bias`` (LSTM only) sets the forget-gate bias at initialisation; ``None`` keeps
    PyTorch's random default.
    """

    CELLS = {"rnn": nn.RNN, "lstm": nn.LSTM, "gru": nn.GRU}

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        num_classes: int,
        *,
        cell: str = "lstm",
        embedding_dim: int = 16,
        forget_bias: float | None = 1.0,
    ) -> None:
        super().__init__()
        if cell not in self.CELLS:
            raise ValueError(f"cell: expected one of {sorted(self.CELLS)}, got {cell!r}")
        self.cell = cell
        self.vocab_size = vocab_size
        self.embedding = nn.Embedding(vocab_size, embedding_dim)
        self.rnn = self.CELLS[cell](embedding_dim, hidden_size, batch_first=True)
        if cell == "lstm" and forget_bias is not None:
            set_forget_bias_(self.rnn, forget_bias)
        self.readout = nn.Linear(hidden_size, num_classes)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """ids: (B, T) integers in [0, vocab_size). Returns logits (B, T, K), one row per step."""
        expect_ids(ids, self.vocab_size)
        hs, _ = self.rnn(self.embedding(ids.long()))  # (B, T, D) -> (B, T, H)
        return self.readout(hs)  # (B, T, H) -> (B, T, K)
