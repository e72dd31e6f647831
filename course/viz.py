"""Measurements and plots for the lectures, each a plain function with defaults.

The static book and CI call a plotting function once with its defaults; in JupyterLab a
thin ``interact_*`` wrapper drives the same function with sliders. Plotting functions
return the matplotlib Figure and never close it. matplotlib and ipywidgets are imported
inside the functions, so importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

if TYPE_CHECKING:  # imported for type hints only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "NONLINEARITIES",
    "gradient_norms_by_distance",
    "plot_gradient_norms",
    "interact_gradient_norms",
    "plot_training_histories",
    "CELL_TYPES",
    "cell_gradient_norms_by_distance",
    "plot_cell_gradient_norms",
    "cell_activation_html",
    "interact_cell_activations",
]

NONLINEARITIES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "tanh": torch.tanh,
    "relu": torch.relu,
    "sigmoid": torch.sigmoid,
    "identity": lambda a: a,
}


def _check_nonlinearity(nonlinearity: str) -> Callable[[torch.Tensor], torch.Tensor]:
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
    of standard deviation about ``input_scale``. The loss is L_T = c . h_T with a random unit
    vector c. Autograd gives dL_T/dh_t for every t.

    Returns an array of shape (T,) whose entry k is ||dL_T/dh_{T-k}||, for distances
    k = 0 .. T-1 (entry 0 is ||c|| = 1).
    """
    phi = _check_nonlinearity(nonlinearity)
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
    c = torch.randn(H, generator=g, dtype=torch.float64)
    c = c / c.norm()  # (H,)

    h = torch.zeros(H, dtype=torch.float64, requires_grad=True)  # h_0
    hs = []
    for t in range(seq_len):
        h = phi(W @ h + U @ xs[t])  # (H,)
        hs.append(h)
    loss = c @ hs[-1]  # L_T, a scalar
    grads = torch.autograd.grad(loss, hs, allow_unused=True)  # dL_T/dh_t for t = 1..T
    norms = [0.0 if g is None else float(g.norm()) for g in grads]
    return np.array(norms[::-1])  # index k: distance T - t


def plot_gradient_norms(
    spectral_radius: float = 1.0,
    seq_len: int = 50,
    nonlinearity: str = "tanh",
    compare: Sequence[float] = (0.5, 0.9, 1.1, 1.5, 2.0),
    *,
    hidden_size: int = 32,
    seed: int = 0,
    ax: Axes | None = None,
) -> Figure:
    """Plot ||dL_T/dh_t|| against the distance T - t, log scale, for one RNN and references.

    The curve for ``spectral_radius`` is drawn thick, with the straight line rho^k
    (dashed) that a linear RNN would follow; each radius in ``compare`` adds a thin curve.
    Draws on ``ax`` when given, else on a new figure; returns the figure.
    """
    import matplotlib.pyplot as plt

    _check_nonlinearity(nonlinearity)
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
    else:
        fig = ax.figure
    distance = np.arange(seq_len)
    others = sorted(r for r in compare if r != spectral_radius)
    colors = plt.cm.viridis(np.linspace(0.0, 0.9, len(others)))  # (n, 4) RGBA
    measured = []
    for radius, color in zip(others, colors, strict=True):
        norms = gradient_norms_by_distance(radius, seq_len, nonlinearity, hidden_size, seed)
        ax.plot(distance, norms, color=color, lw=1.2, label=f"ρ = {radius:g}")
        measured.append(norms)
    norms = gradient_norms_by_distance(spectral_radius, seq_len, nonlinearity, hidden_size, seed)
    ax.plot(distance, norms, color="crimson", lw=2.5, label=f"ρ = {spectral_radius:g} (selected)")
    measured.append(norms)
    with np.errstate(over="ignore"):
        reference = float(spectral_radius) ** distance.astype(float)
    ax.plot(distance, reference, color="crimson", ls="--", lw=1, label=f"{spectral_radius:g}$^k$")
    ax.set_yscale("log", nonpositive="mask")
    values = np.concatenate(measured)
    values = values[(values > 0) & np.isfinite(values)]
    if values.size:  # frame the measured curves; the rho^k guide may leave the frame
        ax.set_ylim(values.min() / 10, values.max() * 10)
    ax.set_xlabel("distance k = T - t (steps back from the loss)")
    ax.set_ylabel(r"$\|\partial L_T / \partial h_t\|$")
    ax.set_title(f"Gradient reaching $h_t$, {nonlinearity} RNN, H = {hidden_size}")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return fig


def interact_gradient_norms() -> Any:
    """Sliders for the spectral radius and T and a nonlinearity menu around
    :func:`plot_gradient_norms` (works in JupyterLab; returns what ``ipywidgets.interact`` does).
    """
    import ipywidgets as widgets

    def show(spectral_radius: float, seq_len: int, nonlinearity: str) -> None:
        # Returns None on purpose: the inline backend shows the new figure once.
        plot_gradient_norms(spectral_radius, seq_len, nonlinearity)

    return widgets.interact(
        show,
        spectral_radius=widgets.FloatSlider(
            value=1.0, min=0.1, max=3.0, step=0.05, description="ρ", continuous_update=False
        ),
        seq_len=widgets.IntSlider(
            value=50, min=5, max=200, step=5, description="T", continuous_update=False
        ),
        nonlinearity=widgets.Dropdown(
            options=list(NONLINEARITIES), value="tanh", description="nonlinearity"
        ),
    )


def plot_training_histories(
    histories: Mapping[str, Any], *, smooth: int = 1, axes: Sequence[Axes] | None = None
) -> Figure:
    """Two panels, loss and gradient norm (log scale) per step, one line per named run.

    ``histories`` maps a label to an object with ``losses`` and ``grad_norms`` lists (a
    :class:`course.train.TrainingHistory`). ``smooth`` > 1 plots a running mean over that
    many steps. Non-finite values end a line. Returns the figure.
    """
    import matplotlib.pyplot as plt

    if smooth < 1:
        raise ValueError(f"smooth: expected a window of at least 1 step, got {smooth}")
    if axes is None:
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    else:
        fig = axes[0].figure
    loss_ax, norm_ax = axes
    for label, history in histories.items():
        for ax, values in ((loss_ax, history.losses), (norm_ax, history.grad_norms)):
            y = np.asarray(values, dtype=float)
            if smooth > 1 and len(y) >= smooth:
                y = np.convolve(y, np.ones(smooth) / smooth, mode="valid")
            ax.plot(np.arange(len(y)) + (smooth - 1 if len(y) < len(values) else 0), y, label=label)
    loss_ax.set_ylabel("training loss (nats/char)")
    norm_ax.set_ylabel("gradient norm before clipping")
    norm_ax.set_yscale("log", nonpositive="mask")
    for ax in axes:
        ax.set_xlabel("step")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------------------------
# Lecture 2: gradient flow through gated cells, and the activation of one LSTM cell over text
# --------------------------------------------------------------------------------------------

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
    from course.models.recurrent import set_forget_bias_

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


def plot_cell_gradient_norms(
    curves: Mapping[str, Mapping[str, Any]] | None = None,
    seq_len: int = 60,
    *,
    ax: Axes | None = None,
) -> Figure:
    """Plot :func:`cell_gradient_norms_by_distance` for several cells on one log-scale axis.

    ``curves`` maps a label to the keyword arguments of one measurement, e.g.
    ``{"LSTM, forget bias 1": {"cell": "lstm", "forget_bias": 1.0}}``; the default compares the
    RNN, the LSTM (forget bias 0 and 1) and the GRU. Returns the figure.
    """
    import matplotlib.pyplot as plt

    if curves is None:
        curves = {
            "RNN (tanh)": {"cell": "rnn"},
            "LSTM, forget bias 0": {"cell": "lstm", "forget_bias": 0.0},
            "LSTM, forget bias 1": {"cell": "lstm", "forget_bias": 1.0},
            "GRU": {"cell": "gru"},
        }
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
    else:
        fig = ax.figure
    for label, kwargs in curves.items():
        norms = cell_gradient_norms_by_distance(seq_len=seq_len, **kwargs)
        ax.plot(np.arange(seq_len), norms, lw=1.8, label=label)
    ax.set_yscale("log", nonpositive="mask")
    ax.set_xlabel("distance k = T - t (steps back from the loss)")
    ax.set_ylabel(r"$\|\partial L_T / \partial h_t\|$")
    ax.set_title("Gradient reaching step t, freshly initialised cells")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def cell_activation_html(text: str, values: Sequence[float], *, title: str = "") -> str:
    """HTML that shows ``text`` in a monospace block, each character coloured by its value.

    values: (N,) numbers in [-1, 1], one per character (e.g. tanh(c_t) of one LSTM cell);
    red for positive, blue for negative, white for 0. Newlines are kept.
    """
    from html import escape

    values = np.asarray(values, dtype=float)
    if values.shape != (len(text),):
        raise ValueError(
            f"values: expected shape ({len(text)},), one per character, got {values.shape}"
        )
    spans = []
    for ch, value in zip(text, np.clip(values, -1.0, 1.0), strict=True):
        strength = int(round(255 * (1 - abs(value))))
        color = f"255,{strength},{strength}" if value > 0 else f"{strength},{strength},255"
        shown = "\n" if ch == "\n" else escape(ch)
        if ch == "\n":
            spans.append(f'<span style="background:rgb({color})"> </span>\n')
        else:
            spans.append(f'<span style="background:rgb({color})">{shown}</span>')
    heading = f"<div><b>{escape(title)}</b></div>" if title else ""
    return (
        f'{heading}<pre style="font-family:monospace;line-height:1.25;color:#000">'
        + "".join(spans)
        + "</pre>"
    )


def interact_cell_activations(
    render: Callable[[int, str], Any], cells: Sequence[int], snippets: Mapping[str, str]
) -> Any:
    """A cell menu and a snippet menu around ``render(cell, snippet_text)`` (JupyterLab).

    ``render`` returns something displayable (e.g. ``IPython.display.HTML``); it is shown
    for the selected cell index and snippet. Returns what ``ipywidgets.interact`` returns.
    """
    import ipywidgets as widgets
    from IPython.display import display

    def show(cell: int, snippet: str) -> None:
        display(render(cell, snippets[snippet]))

    return widgets.interact(
        show,
        cell=widgets.Dropdown(options=list(cells), value=cells[0], description="cell"),
        snippet=widgets.Dropdown(options=list(snippets), description="snippet"),
    )
