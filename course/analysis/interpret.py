"""Looking inside a character-level LSTM trained on Python code.

- :func:`code_features`: for every character of a piece of Python source, simple facts that a
  reader tracks without thinking (inside a string? a comment? how deep in brackets? which
  column?), computed by a small hand-written scanner.
- :func:`lstm_states`: the hidden states h_t and cell states c_t of a :class:`CharLSTM` at
  every character.
- :func:`best_cells`: for each feature, the cell whose activation correlates best with it.

Usage (Lecture 2)::

    hs, cs = lstm_states(model, vocab.encode(text))       # (N, H), (N, H)
    found = best_cells(torch.tanh(cs).numpy(), code_features(text))
    found["inside string"]                                 # CellMatch(cell=17, r=0.83, ...)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional as F

from course.checks import expect_dtype, expect_shape

__all__ = ["FEATURES", "code_features", "lstm_states", "CellMatch", "correlations", "best_cells"]

FEATURES = (
    "inside string",
    "inside comment",
    "bracket depth",
    "indentation",
    "position in line",
)
_OPEN, _CLOSE = "([{", ")]}"


def code_features(text: str) -> dict[str, np.ndarray]:
    """Per-character features of Python source, each of shape (N,), N = len(text).

    Each value describes the state *after* reading the character (what an LSTM has seen when
    its state at that character is read out):

    - "inside string": 1.0 inside a '...', "...", '''...''' or \"\"\"...\"\"\" literal,
      including its opening quote, 0.0 from the closing quote on (escapes are honoured);
    - "inside comment": 1.0 from a ``#`` outside strings to the end of its line;
    - "bracket depth": open ( [ { minus closed ones, outside strings and comments (>= 0);
    - "indentation": spaces read so far at the start of the current line (stops growing at
      its first other character);
    - "position in line": characters since the last newline (0 at the newline itself).

    The scanner is simple (no f-string nesting), which is good enough for correlations.
    """
    values = {name: np.zeros(len(text)) for name in FEATURES}
    quote = ""  # the delimiter of the open string: "", one quote or three
    in_comment = escaped = False
    depth = column = indent = skip = 0
    leading = True  # still in the leading spaces of the line
    for i, ch in enumerate(text):
        if ch == "\n":
            in_comment, column, indent, leading = False, 0, 0, True
            if len(quote) == 1:  # an unterminated one-line string ends with its line
                quote = ""
        else:
            column += 1
            leading = leading and ch == " "
            indent += leading
        if skip:  # the 2nd and 3rd character of a triple quote
            skip -= 1
        elif quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif text.startswith(quote, i):
                skip, quote = len(quote) - 1, ""
        elif not in_comment and ch != "\n":
            if ch == "#":
                in_comment = True
            elif ch in "'\"":
                quote = ch * 3 if text.startswith(ch * 3, i) else ch
                skip = len(quote) - 1
            elif ch in _OPEN:
                depth += 1
            elif ch in _CLOSE:
                depth = max(depth - 1, 0)
        values["inside string"][i] = bool(quote)
        values["inside comment"][i] = in_comment
        values["bracket depth"][i] = depth
        values["indentation"][i] = indent
        values["position in line"][i] = column
    return values


@torch.no_grad()
def lstm_states(model: torch.nn.Module, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Hidden and cell states of the first LSTM layer of ``model`` at every character.

    model: a :class:`course.models.recurrent.CharLSTM` (one-hot input); ids: (N,) integers. Starts from
    zero state. Returns hs (N, H) and cs (N, H), where row t is the state after reading
    ids[t]. Computed one step at a time with the gate equations of Lecture 2 (PyTorch's
    gate order i, f, g, o), because ``nn.LSTM`` returns the cell state of the last step only.
    """
    expect_shape(ids, ("N",), "ids")
    expect_dtype(ids, "iu", "ids")
    lstm = model.lstm
    ids = ids.to(lstm.weight_ih_l0.device)
    if model.embedding is not None:
        x = model.embedding(ids.long())  # (N, D)
    else:
        x = F.one_hot(ids.long(), model.vocab_size).to(lstm.weight_ih_l0.dtype)  # (N, K)
    drive = x @ lstm.weight_ih_l0.T + lstm.bias_ih_l0 + lstm.bias_hh_l0  # (N, 4H), all steps
    H = lstm.hidden_size
    like = {"dtype": drive.dtype, "device": drive.device}  # the model's
    h = torch.zeros(H, **like)
    c = torch.zeros(H, **like)
    hs = torch.empty(len(ids), H, **like)
    cs = torch.empty(len(ids), H, **like)
    for t in range(len(ids)):
        z = drive[t] + lstm.weight_hh_l0 @ h  # (4H,)
        i, f, g, o = z.split(H)  # g: the candidate c̃_t, in PyTorch's name
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        hs[t], cs[t] = h, c
    return hs, cs


@dataclass(frozen=True)
class CellMatch:
    """The best cell for one feature: its index, its Pearson r, and r of every cell (H,)."""

    cell: int
    r: float
    all_r: np.ndarray


def correlations(activations: np.ndarray, feature: np.ndarray) -> np.ndarray:
    """Pearson correlation of each column of ``activations`` (N, H) with ``feature`` (N,).

    Returns (H,). A constant column (or a constant feature) has correlation 0.
    """
    a = np.asarray(activations, dtype=np.float64)
    y = np.asarray(feature, dtype=np.float64)
    if a.ndim != 2 or y.shape != (a.shape[0],):
        raise ValueError(f"expected activations (N, H) and feature (N,), got {a.shape}, {y.shape}")
    a = a - a.mean(axis=0)
    y = y - y.mean()
    scale = np.sqrt((a**2).sum(axis=0) * (y**2).sum())  # (H,)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (a * y[:, None]).sum(axis=0) / scale
    return np.where(scale > 0, r, 0.0)


def best_cells(activations: np.ndarray, features: Mapping[str, np.ndarray]) -> dict[str, CellMatch]:
    """For each feature, the cell with the largest |Pearson r| (activations (N, H))."""
    found = {}
    for name, feature in features.items():
        r = correlations(activations, feature)
        cell = int(np.argmax(np.abs(r)))
        found[name] = CellMatch(cell=cell, r=float(r[cell]), all_r=r)
    return found
