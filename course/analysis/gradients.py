"""How far gradients reach back in time: measurements that return numbers (Lectures 1 and 2).

- :func:`gradient_norms_by_distance`: ||dL_T/dh_t|| against the distance T - t in a random RNN
  whose recurrent matrix W has a chosen spectral radius.
- :func:`cell_gradient_norms_by_distance`: the same for freshly initialised RNN, LSTM and GRU
  cells, with a chosen forget-gate bias.

The figures that show them are in ``course.viz.gradients``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from course.models.recurrent import set_forget_bias_

__all__ = [
    "NONLINEARITIES",
    "get_nonlinearity",
    "gradient_norms_by_distance",
    "CELL_TYPES",
    "cell_gradient_norms_by_distance",
]

NONLINEARITIES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "tanh": torch.tanh,
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "identity": lambda a: a,
}


def get_nonlinearity(nonlinearity: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The function named ``nonlinearity`` (a key of NONLINEARITIES); ValueError otherwise."""
    if nonlinearity not in NONLINEARITIES:
        options = ", ".join(repr(name) for name in NONLINEARITIES)
        raise ValueError(f"nonlinearity: expected one of {options}, got {nonlinearity!r}")
    return NONLINEARITIES[nonlinearity]


def gradient_norms_by_distance(
    spectral_radius: float = 1.0,
    seq_len: int = 50,
    nonlinearity: str = "tanh",
    hidden_size: int = 32,
    seed: int = 0,
    input_scale: float = 0.3,
) -> np.ndarray:
    """Norm of the gradient of a last-step loss with respect to each earlier hidden state.

    A random RNN h_t = phi(W h_{t-1} + U x_t), h_0 = 0, runs for T = ``seq_len`` steps in
    float64, with W = ``spectral_radius`` * Q for a random orthogonal Q (so every eigenvalue
    and every singular value of W has modulus ``spectral_radius``), x_t standard normal and
    U normal with variance ``input_scale``**2 / (input size), so each unit receives an input
    of standard deviation about ``input_scale``. The loss is L_T = u . h_T with a random unit
    vector u. Autograd gives dL_T/dh_t for every t.

    Returns an array of shape (T,) whose entry k is ||dL_T/dh_{T-k}||, for distances
    k = 0 .. T-1 (entry 0 is ||u|| = 1).
    """
    phi = get_nonlinearity(nonlinearity)
    if seq_len < 1 or hidden_size < 1:
        raise ValueError(f"seq_len and hidden_size must be >= 1, got {seq_len} and {hidden_size}")
    if not spectral_radius >= 0:
        raise ValueError(f"spectral_radius: expected a non-negative number, got {spectral_radius}")
    H, D = hidden_size, 4
    g = torch.Generator().manual_seed(seed)
    Q, _ = torch.linalg.qr(torch.randn(H, H, generator=g, dtype=torch.float64))  # (H, H)
    W = spectral_radius * Q  # (H, H)
    U = input_scale * torch.randn(H, D, generator=g, dtype=torch.float64) / D**0.5  # (H, D)
    xs = torch.randn(seq_len, D, generator=g, dtype=torch.float64)  # (T, D)
    u = torch.randn(H, generator=g, dtype=torch.float64)
    u = u / u.norm()  # (H,)

    h = torch.zeros(H, dtype=torch.float64, requires_grad=True)  # h_0
    hs = []
    for t in range(seq_len):
        h = phi(W @ h + U @ xs[t])  # (H,)
        hs.append(h)
    loss = u @ hs[-1]  # L_T, a scalar
    grads = torch.autograd.grad(loss, hs, allow_unused=True)  # dL_T/dh_t for t = 1..T
    norms = [0.0 if g is None else float(g.norm()) for g in grads]
    return np.array(norms[::-1])  # index k: distance T - t


CELL_TYPES = ("rnn", "lstm", "gru")


def cell_gradient_norms_by_distance(
    cell: str = "lstm",
    seq_len: int = 60,
    *,
    hidden_size: int = 32,
    forget_bias: float | None = None,
    wrt: str = "h",
    seed: int = 0,
) -> np.ndarray:
    """||dL_T/dh_t|| (or ||dL_T/dc_t|| with ``wrt="c"``, LSTM only) against the distance T - t.

    A freshly initialised ``torch.nn.RNNCell`` (tanh), ``LSTMCell`` or ``GRUCell`` with
    PyTorch's default initialisation (seeded by ``seed``) runs for T = ``seq_len`` steps in
    float64 on standard normal inputs of size 8, from a zero state. ``forget_bias`` (LSTM only)
    overrides the forget-gate bias. The loss is L_T = u . h_T for a random unit vector u, as in
    :func:`gradient_norms_by_distance`. Returns an array (T,) whose entry k is the norm at
    distance k.
    """
    if cell not in CELL_TYPES:
        raise ValueError(f"cell: expected one of {CELL_TYPES}, got {cell!r}")
    if wrt not in ("h", "c") or (wrt == "c" and cell != "lstm"):
        raise ValueError(f"wrt: expected 'h', or 'c' for an LSTM; got {wrt!r} for {cell!r}")
    if seq_len < 1 or hidden_size < 1:
        raise ValueError(f"seq_len and hidden_size must be >= 1, got {seq_len} and {hidden_size}")
    torch.manual_seed(seed)
    layer_type = {"rnn": torch.nn.RNNCell, "lstm": torch.nn.LSTMCell, "gru": torch.nn.GRUCell}
    layer = layer_type[cell](8, hidden_size, dtype=torch.float64)
    if forget_bias is not None:
        if cell != "lstm":
            raise ValueError("forget_bias: only an LSTM has a forget gate")
        set_forget_bias_(layer, forget_bias)
    g = torch.Generator().manual_seed(seed + 1)
    xs = torch.randn(seq_len, 1, 8, generator=g, dtype=torch.float64)  # (T, 1, 8)
    u = torch.randn(hidden_size, generator=g, dtype=torch.float64)
    u = u / u.norm()
    h = torch.zeros(1, hidden_size, dtype=torch.float64)
    c = torch.zeros_like(h)
    tracked = []
    for x in xs:
        if cell == "lstm":
            h, c = layer(x, (h, c))  # (1, H), (1, H)
        else:
            h = layer(x, h)  # (1, H)
        tracked.append(c if wrt == "c" else h)
    loss = h[0] @ u
    grads = torch.autograd.grad(loss, tracked, allow_unused=True)
    norms = [0.0 if grad is None else float(grad.norm()) for grad in grads]
    return np.array(norms[::-1])
