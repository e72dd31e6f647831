"""Architecture diagrams, drawn with matplotlib, one pure function per diagram (Units 1 to 8).

- :func:`rnn_unrolled_diagram`: an RNN unrolled in time, with BPTT's backward arrows (Lecture 1);
- :func:`lstm_cell_diagram`, :func:`gru_cell_diagram`: the LSTM cell, its gates and the cell
  state, and the GRU cell, its update and reset gates (Lecture 2);
- :func:`stacked_bilstm_diagram`, :func:`bilm_diagram`: a 2-layer bidirectional LSTM as
  ``torch.nn.LSTM`` stacks it, and the bidirectional language model and ELMo's mix (Lecture 3);
- :func:`seq2seq_diagram`, :func:`seq2seq_attention_diagram`, :func:`attention_scores_diagram`:
  an encoder–decoder without attention, with attention, and Bahdanau's attention beside
  Luong's; :func:`beam_search_diagram`: beam search, k = 2, over three steps (Lecture 4);
- :func:`self_attention_diagram`, :func:`multi_head_diagram`: queries, keys, values and heads
  (Lecture 5);
- :func:`transformer_diagram`: the encoder and decoder blocks (Lecture 6);
- :func:`bert_input_diagram`, :func:`bert_pretraining_diagram`, :func:`bert_finetuning_diagram`:
  BERT's input, three embeddings summed; its two pretraining heads; its fine-tuning set-ups
  (Lecture 7);
- :func:`gpt_stack_diagram`, :func:`causal_mask_diagram`, :func:`decoding_tree_diagram`,
  :func:`kv_cache_diagram`: the decoder-only stack, the causal mask, greedy against beam search
  on a small tree, and one step of generation with a KV cache (Lecture 8).

Every function returns a new Figure and never closes it. The symbols are those of the course's
notation page. Lengths are in inches: each figure has one axes that fills it, with data units
of one inch, so that a box of width 1 is one inch wide whatever the figure's size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported for type hints only
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "rnn_unrolled_diagram",
    "lstm_cell_diagram",
    "gru_cell_diagram",
    "stacked_bilstm_diagram",
    "bilm_diagram",
    "seq2seq_diagram",
    "seq2seq_attention_diagram",
    "attention_scores_diagram",
    "beam_search_diagram",
    "self_attention_diagram",
    "multi_head_diagram",
    "transformer_diagram",
    "bert_input_diagram",
    "bert_pretraining_diagram",
    "bert_finetuning_diagram",
    "gpt_stack_diagram",
    "causal_mask_diagram",
    "decoding_tree_diagram",
    "kv_cache_diagram",
]

FONT = 11  # text inside boxes
SMALL = 10  # labels on arrows, legends, row names
INK = "#333333"  # box edges and the forward computation's arrows
GRADIENT = "#c0392b"  # the backward pass
ATTENTION = "#7b3fa0"  # attention weights and queries
GREEDY = "#1f77b4"
BEAM = "#e67e22"
FADED = "#999999"  # what a search drops, what a mask hides
FILL = {
    "input": "#eeeeee",
    "state": "#d6e6f5",
    "output": "#dcefd6",
    "gate": "#fde3c8",
    "attention": "#eadcf3",
    "norm": "#fff3bf",
    "segment A": "#fde3c8",
    "segment B": "#dcefd6",
    "masked": "#ffffff",
}


@dataclass(frozen=True)
class _Box:
    """A drawn box: its centre (x, y) and its size (w, h), in inches."""

    x: float
    y: float
    w: float
    h: float

    @property
    def top(self) -> tuple[float, float]:
        return self.x, self.y + self.h / 2

    @property
    def bottom(self) -> tuple[float, float]:
        return self.x, self.y - self.h / 2

    @property
    def left(self) -> tuple[float, float]:
        return self.x - self.w / 2, self.y

    @property
    def right(self) -> tuple[float, float]:
        return self.x + self.w / 2, self.y


def _canvas(width: float, height: float) -> tuple[Figure, Axes]:
    """A figure of width x height inches whose one axes fills it, one data unit per inch."""
    import matplotlib.pyplot as plt

    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig, ax


def _box(
    ax: Axes,
    x: float,
    y: float,
    text: str,
    kind: str = "state",
    w: float = 0.9,
    h: float = 0.5,
    fontsize: float = FONT,
    edge: str = INK,
    lw: float = 1.0,
) -> _Box:
    """A rounded box centred on (x, y), filled by ``kind``, with ``text`` in its middle."""
    from matplotlib.patches import FancyBboxPatch

    pad = min(0.08, w / 4, h / 4)
    ax.add_patch(
        FancyBboxPatch(
            (x - w / 2 + pad, y - h / 2 + pad),
            w - 2 * pad,
            h - 2 * pad,
            boxstyle=f"round,pad={pad}",
            facecolor=FILL[kind],
            edgecolor=edge,
            linewidth=lw,
        )
    )
    if text:
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, color="black")
    return _Box(x, y, w, h)


def _node(ax: Axes, x: float, y: float, symbol: str, r: float = 0.17) -> _Box:
    """A small circle with an operator in it (⊙, +)."""
    from matplotlib.patches import Circle

    ax.add_patch(Circle((x, y), r, facecolor="white", edgecolor=INK, linewidth=1.0))
    ax.text(x, y, symbol, ha="center", va="center", fontsize=FONT)
    return _Box(x, y, 2 * r, 2 * r)


def _arrow(
    ax: Axes,
    start: tuple[float, float],
    end: tuple[float, float],
    colour: str = INK,
    dashed: bool = False,
    rad: float = 0.0,
    lw: float = 1.3,
) -> None:
    """An arrow from ``start`` to ``end``, straight or bent by ``rad`` (matplotlib's arc3)."""
    from matplotlib.patches import FancyArrowPatch

    ax.add_patch(
        FancyArrowPatch(
            start,
            end,
            arrowstyle="-|>",
            mutation_scale=11,
            connectionstyle=f"arc3,rad={rad}",
            color=colour,
            linewidth=lw,
            linestyle=(0, (4, 3)) if dashed else "-",
            shrinkA=0,
            shrinkB=0,
        )
    )


def _path(
    ax: Axes,
    points: Sequence[tuple[float, float]],
    colour: str = INK,
    lw: float = 1.3,
    dashed: bool = False,
) -> None:
    """A polyline through ``points`` with an arrow head on its last segment (for elbows)."""
    xs, ys = zip(*points[:-1], strict=True)
    style = (0, (4, 3)) if dashed else "-"
    ax.plot(xs, ys, color=colour, linewidth=lw, linestyle=style, solid_capstyle="butt")
    _arrow(ax, points[-2], points[-1], colour=colour, lw=lw, dashed=dashed)


def _label(
    ax: Axes,
    x: float,
    y: float,
    text: str,
    colour: str = "black",
    ha: str = "center",
    fontsize: float = SMALL,
) -> None:
    ax.text(x, y, text, ha=ha, va="center", fontsize=fontsize, color=colour)


def _edge_label(
    ax: Axes,
    start: tuple[float, float],
    end: tuple[float, float],
    text: str,
    colour: str,
    at: float = 0.5,
    offset: float = 0.2,
) -> None:
    """``text`` beside the line from ``start`` to ``end``, ``at`` of the way along, on its
    upper side, ``offset`` inches from the line."""
    import math

    dx, dy = end[0] - start[0], end[1] - start[1]
    length = math.hypot(dx, dy)
    nx, ny = -dy / length, dx / length
    if ny < 0:
        nx, ny = -nx, -ny
    x, y = start[0] + at * dx + offset * nx, start[1] + at * dy + offset * ny
    _label(ax, x, y, text, colour)


def _legend(ax: Axes, x: float, y: float, entries: Sequence[tuple[str, str, bool]]) -> None:
    """One line per (text, colour, dashed) entry from (x, y) down: a short arrow, then text."""
    for row, (text, colour, dashed) in enumerate(entries):
        yy = y - 0.32 * row
        _arrow(ax, (x, yy), (x + 0.45, yy), colour=colour, dashed=dashed)
        _label(ax, x + 0.55, yy, text, colour=colour, ha="left")


def rnn_unrolled_diagram(steps: int = 4) -> Figure:
    """An RNN unrolled over ``steps`` steps: x_t -> h_t -> p_t, with h_{t-1} -> h_t.

    The same U, W and V label every step. Red dashed arrows are BPTT's two terms of dL/dh_t:
    V^T delta^o_t from the step's own loss, and W^T delta^a_{t+1} carried back from step t + 1.
    """
    if steps < 2:
        raise ValueError(f"steps: expected at least 2 to show the recurrence, got {steps}")
    gap = 2.0
    width, height = 1.3 + gap * steps + 0.4, 5.3
    fig, ax = _canvas(width, height)
    y_x, y_h, y_p, y_loss = 0.55, 2.15, 3.55, 4.35
    h0 = _box(ax, 0.8, y_h, "$h_0$")
    previous = h0
    for t in range(1, steps + 1):
        cx = 0.8 + gap * t
        x = _box(ax, cx, y_x, f"$x_{{{t}}}$", kind="input")
        h = _box(ax, cx, y_h, f"$h_{{{t}}}$")
        p = _box(ax, cx, y_p, f"$p_{{{t}}}$", kind="output")
        _label(ax, cx, y_loss, f"$L_{{{t}}}$")
        _arrow(ax, p.top, (cx, y_loss - 0.17))
        _arrow(ax, x.top, h.bottom)
        _label(ax, cx - 0.16, (y_x + y_h) / 2, "$U$", ha="right")
        _arrow(ax, (cx - 0.12, h.top[1]), (cx - 0.12, p.bottom[1]))
        _label(ax, cx - 0.24, (y_h + y_p) / 2, "$V$", ha="right")
        # forward: h_{t-1} -> h_t, just above the middle; backward: h_t -> h_{t-1}, just below
        _arrow(ax, (previous.right[0], y_h + 0.09), (h.left[0], y_h + 0.09))
        _label(ax, (previous.right[0] + h.left[0]) / 2, y_h + 0.3, "$W$")
        _arrow(ax, (cx + 0.12, p.bottom[1]), (cx + 0.12, h.top[1]), colour=GRADIENT, dashed=True)
        _label(ax, cx + 0.22, (y_h + y_p) / 2, rf"$V^\top\delta^o_{{{t}}}$", GRADIENT, ha="left")
        _arrow(
            ax,
            (h.left[0], y_h - 0.11),
            (previous.right[0], y_h - 0.11),
            colour=GRADIENT,
            dashed=True,
        )
        _label(
            ax,
            (previous.right[0] + h.left[0]) / 2,
            y_h - 0.36,
            rf"$W^\top\delta^a_{{{t}}}$",
            GRADIENT,
        )
        previous = h
    _legend(
        ax,
        0.35,
        height - 0.3,
        [
            ("forward: the same $U$, $W$, $V$ at every step", INK, False),
            (r"backward: the two terms of $\partial L / \partial h_t$", GRADIENT, True),
        ],
    )
    return fig


def lstm_cell_diagram() -> Figure:
    """One LSTM step: the gates f_t, i_t, o_t and the candidate, the cell state c_{t-1} -> c_t
    along the top, and h_t = o_t ⊙ tanh(c_t) out on the right.

    The four boxes read the same stacked input [h_{t-1}; x_t] (one matrix [W_g U_g] each).
    """
    fig, ax = _canvas(9.6, 5.6)
    y_cell, y_gate, y_bus = 4.45, 2.45, 1.05
    gates = [  # centre x, label, name
        (2.1, r"$f_t = \sigma(\cdot)$", "forget gate"),
        (3.65, r"$i_t = \sigma(\cdot)$", "input gate"),
        (5.2, r"$\tilde c_t = \tanh(\cdot)$", "candidate"),
        (6.75, r"$o_t = \sigma(\cdot)$", "output gate"),
    ]
    boxes = []
    for gx, text, name in gates:
        kind = "state" if name == "candidate" else "gate"
        boxes.append(_box(ax, gx, y_gate, f"{name}\n{text}", kind=kind, w=1.4, h=0.8))
        _arrow(ax, (gx, y_bus), (gx, y_gate - 0.4))
    f, i, c_tilde, o = boxes
    # the input bus: h_{t-1} from the left, x_t from below
    _label(ax, 0.45, y_bus, "$h_{t-1}$")
    ax.plot([0.8, o.x], [y_bus, y_bus], color=INK, linewidth=1.3)
    _label(ax, 1.2, 0.25, "$x_t$")
    _arrow(ax, (1.2, 0.42), (1.2, y_bus))
    _label(ax, 4.45, y_bus - 0.3, "$[h_{t-1}; x_t]$")
    # the cell state along the top
    _label(ax, 0.45, y_cell, "$c_{t-1}$")
    forget = _node(ax, f.x, y_cell, r"$\odot$")
    add = _node(ax, 4.45, y_cell, "$+$")
    _arrow(ax, (0.8, y_cell), forget.left)
    _arrow(ax, forget.right, add.left)
    _arrow(ax, add.right, (8.75, y_cell))
    _label(ax, 9.1, y_cell, "$c_t$")
    _label(ax, 5.6, y_cell + 0.45, r"cell state: $c_t = f_t \odot c_{t-1} + i_t \odot \tilde c_t$")
    _arrow(ax, f.top, forget.bottom)
    write = _node(ax, add.x, 3.55, r"$\odot$")
    _arrow(ax, (i.x + 0.25, i.top[1]), (write.x - 0.12, write.y - 0.12))
    _arrow(ax, (c_tilde.x - 0.25, c_tilde.top[1]), (write.x + 0.12, write.y - 0.12))
    _arrow(ax, write.top, add.bottom)
    # the read-out: h_t = o_t ⊙ tanh(c_t)
    squash = _box(ax, 8.0, 3.7, r"$\tanh$", kind="state", w=0.7, h=0.4)
    _arrow(ax, (8.0, y_cell), squash.top)
    read = _node(ax, 8.0, 2.45, r"$\odot$")
    _arrow(ax, squash.bottom, read.top)
    _arrow(ax, o.right, read.left)
    _arrow(ax, read.bottom, (8.0, 1.35))
    _label(ax, 8.0, 1.15, "$h_t$")
    _label(ax, 8.0, 0.75, r"$h_t = o_t \odot \tanh(c_t)$")
    return fig


def gru_cell_diagram() -> Figure:
    """One GRU step, PyTorch's convention as in Lecture 2: the update gate z_t and the reset
    gate r_t read [h_{t-1}; x_t]; the candidate h~_t = tanh(U_h x_t + r_t ⊙ (W_h h_{t-1} +
    b_hh) + b_h), the reset applied after the matrix; and along the top the interpolation
    h_t = (1 - z_t) ⊙ h~_t + z_t ⊙ h_{t-1}: z_t keeps the old state, 1 - z_t lets in the new.

    The one crossing is unavoidable: h_{t-1} reaches W_h past z_t's path to the state line.
    """
    fig, ax = _canvas(10.4, 5.7)
    y_top, y_z, y_w, y_gate, y_bus, y_x = 4.9, 4.25, 3.55, 2.35, 1.05, 0.45
    # the state line along the top: h_{t-1}, kept in proportion z_t, plus the new content
    _label(ax, 0.45, y_top, "$h_{t-1}$")
    keep = _node(ax, 7.0, y_top, r"$\odot$")
    add = _node(ax, 8.3, y_top, "$+$")
    _arrow(ax, (0.8, y_top), keep.left)
    _arrow(ax, keep.right, add.left)
    _arrow(ax, add.right, (9.55, y_top))
    _label(ax, 9.9, y_top, "$h_t$")
    _label(ax, 5.3, y_top + 0.45, r"$h_t = (1 - z_t) \odot \tilde h_t + z_t \odot h_{t-1}$")
    # the gates read the stacked input [h_{t-1}; x_t], as in the LSTM
    ax.plot([1.1, 1.1, 3.95], [y_top, y_bus, y_bus], color=INK, linewidth=1.3)
    _label(ax, 0.45, y_x, "$x_t$")
    ax.plot([0.8, 8.3], [y_x, y_x], color=INK, linewidth=1.3)
    _arrow(ax, (1.5, y_x), (1.5, y_bus))
    _label(ax, 2.75, (y_bus + y_x) / 2, "$[h_{t-1}; x_t]$")
    update = _box(
        ax, 2.3, y_gate, "update gate\n" r"$z_t = \sigma(\cdot)$", kind="gate", w=1.4, h=0.8
    )
    reset = _box(
        ax, 3.95, y_gate, "reset gate\n" r"$r_t = \sigma(\cdot)$", kind="gate", w=1.4, h=0.8
    )
    for gate in (update, reset):
        _arrow(ax, (gate.x, y_bus), gate.bottom)
    # the candidate: the reset gate scales W_h h_{t-1} + b_hh, after the matrix
    recurrent = _box(ax, 5.75, y_w, r"$W_h h_{t-1} + b_{hh}$", kind="state", w=1.5, h=0.5)
    _arrow(ax, (recurrent.x, y_top), recurrent.top)
    scale = _node(ax, recurrent.x, y_gate, r"$\odot$")
    _arrow(ax, recurrent.bottom, scale.top)
    _arrow(ax, reset.right, scale.left)
    _label(ax, 5.75, 1.75, r"$r_t \odot (W_h h_{t-1} + b_{hh})$", fontsize=SMALL - 1)
    candidate = _box(
        ax, 8.3, y_gate, "candidate\n" r"$\tilde h_t = \tanh(U_h x_t + \cdot + b_h)$", w=2.5, h=0.8
    )
    _arrow(ax, scale.right, candidate.left)
    _arrow(ax, (candidate.x, y_x), candidate.bottom)
    # the interpolation: z_t keeps the old state, 1 - z_t takes the candidate
    _path(ax, [update.top, (update.x, y_z), (keep.x, y_z), keep.bottom])
    complement = _node(ax, keep.x, y_w, "$1-$", r=0.2)
    _arrow(ax, (keep.x, y_z), complement.top)
    mix = _node(ax, add.x, y_w, r"$\odot$")
    _arrow(ax, complement.right, mix.left)
    _arrow(ax, candidate.top, mix.bottom)
    _arrow(ax, mix.top, add.bottom)
    _label(ax, 4.5, y_z + 0.2, "$z_t$")
    return fig


def stacked_bilstm_diagram() -> Figure:
    """A 2-layer bidirectional LSTM over positions t-1, t, t+1, wired as
    ``torch.nn.LSTM(bidirectional=True, num_layers=2)`` wires it (Lecture 3's notation).

    Layer 1: a forward LSTM reads x_t left to right and a backward LSTM right to left. At each
    position their states are concatenated, [h→^1_t; h←^1_t] (2H numbers), and that
    concatenation is the input of BOTH directions of layer 2, whose states are concatenated in
    turn. (The biLM of :func:`bilm_diagram` is wired otherwise: there each direction's layer 2
    reads only its own direction's layer 1.)
    """
    fig, ax = _canvas(10.9, 7.0)
    columns = {-1: 2.7, 0: 5.4, 1: 8.1}  # position t-1, t, t+1
    names = {-1: "t-1", 0: "t", 1: "t+1"}
    y_x, y_cat1, y_cat2 = 0.6, 3.45, 6.2
    rows = {1: (1.75, 2.4), 2: (4.5, 5.15)}  # layer: (forward y, backward y)
    _label(ax, 0.1, y_x, "input", ha="left")
    for layer, (y_f, y_b) in rows.items():
        _label(ax, 0.1, (y_f + y_b) / 2, f"layer {layer}", ha="left")
    for y, layer in ((y_cat1, 1), (y_cat2, 2)):
        _label(ax, 0.1, y, f"layer {layer} output,\nconcatenated: $2H$", ha="left")
    boxes: dict[tuple[int, int, str], _Box] = {}
    for offset, cx in columns.items():
        t = names[offset]
        below = _box(ax, cx, y_x, f"$x_{{{t}}}$", kind="input", w=0.8)
        for layer, (y_f, y_b) in rows.items():
            fwd = _box(
                ax, cx - 0.5, y_f, rf"$\overrightarrow{{h}}{{}}^{{{layer}}}_{{{t}}}$", w=0.85
            )
            bwd = _box(ax, cx + 0.5, y_b, rf"$\overleftarrow{{h}}{{}}^{{{layer}}}_{{{t}}}$", w=0.85)
            # both directions read the whole box below: x_t, or [h→; h←] of the layer below
            lw = 1.3 if layer == 1 else 2.2
            _arrow(ax, (cx - 0.25, below.top[1]), (fwd.x + 0.05, fwd.bottom[1]), lw=lw)
            _arrow(ax, (cx + 0.25, below.top[1]), (bwd.x - 0.05, bwd.bottom[1]), lw=lw)
            y_cat = y_cat1 if layer == 1 else y_cat2
            text = (
                rf"$[\overrightarrow{{h}}{{}}^{{{layer}}}_{{{t}}};\ "
                rf"\overleftarrow{{h}}{{}}^{{{layer}}}_{{{t}}}]$"
            )
            cat = _box(ax, cx, y_cat, text, kind="output", w=2.1, h=0.55)
            _arrow(ax, fwd.top, (fwd.x, cat.bottom[1]))
            _arrow(ax, bwd.top, (bwd.x, cat.bottom[1]))
            boxes[offset, layer, "f"], boxes[offset, layer, "b"] = fwd, bwd
            below = cat
    for layer in rows:
        for offset in (-1, 0):
            _arrow(ax, boxes[offset, layer, "f"].right, boxes[offset + 1, layer, "f"].left)
            _arrow(ax, boxes[offset + 1, layer, "b"].left, boxes[offset, layer, "b"].right)
    _label(
        ax,
        columns[0],
        6.75,
        "forward LSTMs read left to right, backward LSTMs right to left",
    )
    _label(
        ax,
        columns[1] + 1.2,
        (y_cat1 + rows[2][0]) / 2,
        "thick arrows: both\ndirections of layer 2\nread all $2H$ numbers",
        ha="left",
        fontsize=SMALL - 1,
    )
    return fig


def bilm_diagram() -> Figure:
    """A 2-layer bidirectional LSTM language model over three tokens, and ELMo's mix.

    Left: the token layer x_k, then per layer a forward LSTM (reads left to right) and a
    backward LSTM (right to left), each with its own stack. Right: for the shaded token k, the
    three representations h_{k,j} (forward and backward states concatenated) mixed with the
    weights s_j and the scale gamma.
    """
    from matplotlib.patches import FancyBboxPatch

    fig, ax = _canvas(12.0, 5.6)
    columns = {-1: 2.0, 0: 4.0, 1: 6.0}  # token k-1, k, k+1
    names = {-1: "k-1", 0: "k", 1: "k+1"}
    y_token, y_x = 0.35, 1.15
    rows = {1: (2.2, 2.85), 2: (3.95, 4.6)}  # layer: (forward y, backward y)
    ax.add_patch(
        FancyBboxPatch(
            (columns[0] - 0.95, 0.1),
            1.9,
            4.9,
            boxstyle="round,pad=0.05",
            facecolor="#f6f6f6",
            edgecolor="none",
        )
    )
    _label(ax, 0.1, y_x, "token layer", ha="left")
    for layer, (y_f, y_b) in rows.items():
        _label(ax, 0.1, (y_f + y_b) / 2, f"layer {layer}", ha="left")
    boxes: dict[tuple[int, int, str], _Box] = {}
    for offset, cx in columns.items():
        k = names[offset]
        _label(ax, cx, y_token, f"$t_{{{k}}}$")
        x = _box(ax, cx, y_x, f"$x_{{{k}}}$", kind="input", w=0.8)
        _arrow(ax, (cx, y_token + 0.17), x.bottom)
        below = {"f": x, "b": x}
        for layer, (y_f, y_b) in rows.items():
            fwd = _box(ax, cx - 0.45, y_f, rf"$\overrightarrow{{h}}_{{{k},{layer}}}$", w=0.85)
            bwd = _box(ax, cx + 0.45, y_b, rf"$\overleftarrow{{h}}_{{{k},{layer}}}$", w=0.85)
            if layer == 1:
                _arrow(ax, (cx - 0.2, x.top[1]), (fwd.x + 0.05, fwd.bottom[1]))
                _arrow(ax, (cx + 0.2, x.top[1]), (bwd.x - 0.05, bwd.bottom[1]))
            else:
                _arrow(ax, below["f"].top, fwd.bottom)
                _arrow(ax, below["b"].top, bwd.bottom)
            below = {"f": fwd, "b": bwd}
            boxes[offset, layer, "f"], boxes[offset, layer, "b"] = fwd, bwd
    for layer in rows:
        for offset in (-1, 0):
            _arrow(ax, boxes[offset, layer, "f"].right, boxes[offset + 1, layer, "f"].left)
            _arrow(ax, boxes[offset + 1, layer, "b"].left, boxes[offset, layer, "b"].right)
    _label(ax, columns[0], 5.3, "forward LSTMs read left to right, backward LSTMs right to left")
    # ELMo's mix for token k
    reps = [
        (y_x, "$h_{k,0} = [x_k; x_k]$"),
        (sum(rows[1]) / 2, r"$h_{k,1} = [\overrightarrow{h}_{k,1}; \overleftarrow{h}_{k,1}]$"),
        (sum(rows[2]) / 2, r"$h_{k,2} = [\overrightarrow{h}_{k,2}; \overleftarrow{h}_{k,2}]$"),
    ]
    mix = _box(ax, 11.0, 2.9, r"$\gamma \sum_j s_j h_{k,j}$", kind="output", w=1.6, h=0.6)
    _label(ax, mix.x, mix.y + 0.6, r"ELMo$_k$")
    for j, (y, text) in enumerate(reps):
        rep = _box(ax, 8.25, y, text, kind="state", w=2.4, h=0.5)
        _arrow(ax, rep.right, mix.left, colour=ATTENTION)
        _label(ax, 9.75, y + (mix.y - y) * 0.3 + 0.2, f"$s_{j}$", ATTENTION)
    _label(ax, 8.25, 5.3, "for the shaded token $k$, layers $j = 0, 1, 2$")
    return fig


def _encoder_row(ax: Axes, m: int, gap: float, y_in: float, y_state: float) -> list[_Box]:
    """The encoder of Lecture 4's diagrams: words x_1..x_m under states s_1..s_m, each state
    reading its word and the one before it, from x = 1 in steps of ``gap``."""
    states: list[_Box] = []
    for k in range(1, m + 1):
        cx = 1.0 + gap * (k - 1)
        s = _box(ax, cx, y_state, f"$s_{{{k}}}$", w=0.8)
        _label(ax, cx, y_in, f"$x_{{{k}}}$")
        _arrow(ax, (cx, y_in + 0.17), s.bottom)
        if states:
            _arrow(ax, states[-1].right, s.left)
        states.append(s)
    right = 1.0 + gap * (m - 1)
    _label(ax, (1.0 + right) / 2, 0.95, f"encoder, $m = {m}$", fontsize=SMALL - 1)
    return states


def seq2seq_diagram(source_length: int = 4, target_length: int = 3) -> Figure:
    """The encoder–decoder without attention: a GRU encoder over x_1..x_m (states s_k), and a
    GRU decoder that starts from h_0 = s_m and reads y_{t-1} to predict y_t.

    The thick arrow h_0 = s_m is the decoder's only view of the source (the bottleneck): no
    other arrow leaves the encoder. Each output is softmax(W_o tanh(W_c h_t + b_c) + b_o).
    """
    m, n = source_length, target_length
    if m < 2:
        raise ValueError(f"source_length: expected at least 2 source words, got {m}")
    if n < 2:
        raise ValueError(f"target_length: expected at least 2 output steps, got {n}")
    gap, dec_gap = 1.3, 1.5
    right = 1.0 + gap * (m - 1)
    first = right + 2.3
    width, height = max(first + dec_gap * (n - 1) + 0.9, 10.0), 4.35
    fig, ax = _canvas(width, height)
    y_in, y_state, y_out = 0.4, 1.6, 2.85
    states = _encoder_row(ax, m, gap, y_in, y_state)
    _label(ax, (1.0 + right) / 2, 2.3, r"$s_k = \mathrm{GRU}_{\mathrm{enc}}(E_x[x_k], s_{k-1})$")
    previous = None
    for t in range(1, n + 1):
        cx = first + dec_gap * (t - 1)
        h = _box(ax, cx, y_state, f"$h_{{{t}}}$", w=0.8)
        token = r"$\langle s\rangle$" if t == 1 else f"$y_{{{t - 1}}}$"
        _label(ax, cx, y_in, token)
        _arrow(ax, (cx, y_in + 0.17), h.bottom)
        out = _box(ax, cx, y_out, f"$y_{{{t}}}$", kind="output", w=0.8)
        _arrow(ax, h.top, out.bottom)
        if previous is not None:
            _arrow(ax, previous.right, h.left)
        previous = h
    # the bottleneck: the encoder's last state is all that the decoder gets
    _arrow(ax, states[-1].right, (first - 0.4, y_state), lw=2.6)
    _label(ax, (right + first) / 2, y_state + 0.27, "$h_0 = s_m$")
    _label(ax, (right + first) / 2, y_state - 0.5, "the decoder's only\nview of the source",
           fontsize=SMALL - 1)  # fmt: skip
    _label(ax, first + dec_gap * (n - 1) / 2, 0.95, "decoder", fontsize=SMALL - 1)
    _label(
        ax,
        width - 0.15,
        3.55,
        r"$h_t = \mathrm{GRU}_{\mathrm{dec}}(E_y[y_{t-1}], h_{t-1})$",
        ha="right",
    )
    _label(
        ax,
        width - 0.15,
        4.0,
        r"$p(y_t \mid y_{<t}, x) = \mathrm{softmax}(W_o \tanh(W_c h_t + b_c) + b_o)$",
        ha="right",
    )
    return fig


def seq2seq_attention_diagram(source_length: int = 4) -> Figure:
    """An encoder over x_1..x_m (states s_k) and a decoder step h_t that attends to every s_k.

    Purple arrows carry the weights a_{t,k} (a softmax over the scores e_{t,k} = score(h_t,
    s_k)) into the context c_t = sum_k a_{t,k} s_k; c_t and h_t make the attentional state.
    """
    m = source_length
    if m < 2:
        raise ValueError(f"source_length: expected at least 2 source words, got {m}")
    gap = 1.3
    right = 1.0 + gap * (m - 1)
    width, height = right + 7.0, 5.7
    fig, ax = _canvas(width, height)
    y_in, y_state = 0.4, 1.6
    states = _encoder_row(ax, m, gap, y_in, y_state)
    first = _box(ax, right + 1.7, y_state, "$h_1$", w=0.8)
    _arrow(ax, states[-1].right, first.left)
    _label(ax, (states[-1].right[0] + first.left[0]) / 2, y_state + 0.25, "$h_0 = s_m$")
    _label(ax, first.x, y_in, r"$\langle s\rangle$")
    _arrow(ax, (first.x, y_in + 0.17), first.bottom)
    _label(ax, right + 2.85, y_state, r"$\cdots$")
    h = _box(ax, right + 4.0, y_state, "$h_t$", w=0.8)
    _arrow(ax, first.right, (right + 2.55, y_state))
    _arrow(ax, (right + 3.15, y_state), h.left)
    _label(ax, h.x, y_in, "$y_{t-1}$")
    _arrow(ax, (h.x, y_in + 0.17), h.bottom)
    _label(ax, (first.x + h.x) / 2, 0.95, "decoder", fontsize=SMALL - 1)
    context = _box(ax, right + 2.4, 4.0, r"$c_t = \sum_k a_{t,k}\, s_k$", "attention", w=2.0)
    for k, s in enumerate(states, start=1):
        _arrow(ax, s.top, context.left, colour=ATTENTION, rad=-0.25)
        _label(ax, s.x - 0.3, s.top[1] + 0.3, f"$a_{{t,{k}}}$", ATTENTION)
    query_end = (context.right[0] - 0.3, context.bottom[1])
    _arrow(ax, (h.x - 0.2, h.top[1]), query_end, ATTENTION, dashed=True)
    _label(ax, h.x - 0.75, 2.75, r"$e_{t,k} = \mathrm{score}(h_t, s_k)$", ATTENTION, ha="right")
    attentional = _box(ax, h.x, 4.0, r"$\tilde h_t$", kind="output", w=0.8)
    _arrow(ax, context.right, attentional.left)
    _arrow(ax, (h.x + 0.1, h.top[1]), (h.x + 0.1, attentional.bottom[1]))
    _label(ax, h.x + 0.5, 4.0, r"$= \tanh(W_c [c_t; h_t] + b_c)$", ha="left")
    _arrow(ax, attentional.top, (h.x, 5.05))
    _label(ax, h.x, 5.3, r"$p(y_t \mid y_{<t}, x) = \mathrm{softmax}(W_o \tilde h_t + b_o)$")
    return fig


def attention_scores_diagram() -> Figure:
    """Bahdanau's attention (left) beside Luong's (right), one decoder step each, in the
    lecture's letters: h for the decoder's states, s_k for the encoder's.

    Bahdanau et al. score the encoder states with the previous state h_{t-1} (the additive
    score), and the context c_t is an input of the recurrent step, with E_y[y_{t-1}]; their
    output layer reads y_{t-1}, h_t and c_t. Luong et al. take the step first and score with
    its result h_t (dot, general or concat); c_t joins h_t after the step in the attentional
    state h~_t, the only input of the output layer. The purple dashed arrow is the query.
    """
    from matplotlib.lines import Line2D

    fig, ax = _canvas(12.2, 6.1)
    y0, y1, y2, y3, y_p, y_title = 0.45, 1.85, 3.2, 4.45, 5.2, 5.75
    context = r"$c_t = \sum_k a_{t,k}\, s_k$"

    # Bahdanau et al.: h_{t-1} -> a_t -> c_t -> h_t
    x = 2.75
    _label(ax, x, y_title, r"Bahdanau et al.: $h_{t-1} \to a_t \to c_t \to h_t$", fontsize=FONT)
    previous = _box(ax, 1.1, y0, "$h_{t-1}$", w=0.9)
    states = _box(ax, 4.1, y0, r"$s_1, \dots, s_m$", w=1.3)
    attend = _box(
        ax, x, y1,
        "additive score\n" r"$e_{t,k} = v_a^\top \tanh(W_a h_{t-1} + U_a s_k)$" "\n" + context,
        kind="attention", w=3.7, h=1.0,
    )  # fmt: skip
    _arrow(ax, previous.top, (previous.x, attend.bottom[1]), ATTENTION, dashed=True)
    _label(ax, previous.x + 0.15, 1.05, "query $h_{t-1}$", ATTENTION, ha="left", fontsize=SMALL - 1)
    _arrow(ax, states.top, (states.x, attend.bottom[1]), ATTENTION)
    step = _box(ax, x, y2, r"$h_t = \mathrm{RNN}([E_y[y_{t-1}] ; c_t],\, h_{t-1})$", w=3.7, h=0.55)
    _arrow(ax, attend.top, step.bottom)
    _label(ax, x + 0.15, (attend.top[1] + step.bottom[1]) / 2, "$c_t$", ha="left")
    _path(ax, [previous.left, (0.4, y0), (0.4, y2), step.left])
    _label(ax, 5.15, y2, "$y_{t-1}$")
    _arrow(ax, (4.95, y2), step.right)
    output = _box(ax, x, y3, r"output layer on $y_{t-1}$, $h_t$, $c_t$", kind="output", w=3.7)
    _arrow(ax, step.top, output.bottom)
    _path(ax, [attend.right, (5.6, y1), (5.6, y3), output.right])
    _arrow(ax, output.top, (x, y_p - 0.17))
    _label(ax, x, y_p, r"$p(y_t \mid y_{<t}, x)$")

    ax.add_line(Line2D([6.1, 6.1], [0.2, 5.9], color="#bbbbbb", linewidth=1.0, linestyle=":"))

    # Luong et al.: h_t -> a_t -> c_t -> h~_t
    x0 = 6.3
    x = x0 + 2.75
    _label(ax, x, y_title, r"Luong et al.: $h_t \to a_t \to c_t \to \tilde h_t$", fontsize=FONT)
    previous = _box(ax, x0 + 1.6, y0, "$h_{t-1}$", w=0.9)
    step = _box(ax, x, y1, r"$h_t = \mathrm{RNN}(E_y[y_{t-1}],\, h_{t-1})$", w=3.0, h=0.55)
    _arrow(ax, previous.top, (previous.x, step.bottom[1]))
    _label(ax, x0 + 3.9, y0, "$y_{t-1}$")
    _arrow(ax, (x0 + 3.9, y0 + 0.17), (x0 + 3.9, step.bottom[1]))
    attend = _box(
        ax, x, y2,
        "dot, general or concat score\n" r"$e_{t,k} = \mathrm{score}(h_t, s_k)$" "\n" + context,
        kind="attention", w=2.9, h=1.0,
    )  # fmt: skip
    _arrow(ax, step.top, attend.bottom, ATTENTION, dashed=True)
    _label(ax, x + 0.15, (step.top[1] + attend.bottom[1]) / 2, "query $h_t$", ATTENTION,
           ha="left", fontsize=SMALL - 1)  # fmt: skip
    states = _box(ax, x0 + 5.1, y2, r"$s_1, \dots, s_m$", w=1.3)
    _arrow(ax, states.left, attend.right, ATTENTION)
    combine = _box(ax, x, y3, r"$\tilde h_t = \tanh(W_c [c_t ; h_t] + b_c)$", kind="output", w=3.4)
    _arrow(ax, attend.top, combine.bottom)
    _label(ax, x + 0.15, (attend.top[1] + combine.bottom[1]) / 2, "$c_t$", ha="left")
    _path(ax, [step.left, (x0 + 0.55, y1), (x0 + 0.55, y3), combine.left])
    _arrow(ax, combine.top, (x, y_p - 0.17))
    _label(ax, x, y_p, r"$p(y_t \mid y_{<t}, x) = \mathrm{softmax}(W_o \tilde h_t + b_o)$")
    return fig


# Beam search's example: log p(y_t | y_<t, x) of each next word after each prefix, natural logs
# to one decimal, made up (each row's probabilities sum to 1 within 0.01). The words are those
# of Lecture 4's search tree.
_BEAM_LOG_PROBS: dict[tuple[str, ...], dict[str, float]] = {
    (): {"yes": -0.7, "ok": -0.9, "</s>": -2.3},
    ("yes",): {"yes": -1.2, "ok": -0.7, "</s>": -1.6},
    ("ok",): {"yes": -1.4, "ok": -0.4, "</s>": -2.5},
    ("yes", "ok"): {"yes": -1.2, "ok": -1.2, "</s>": -0.9},
    ("ok", "ok"): {"yes": -2.3, "ok": -2.5, "</s>": -0.2},
}


@dataclass(frozen=True)
class _Candidate:
    """A prefix extended by one word: its words, log p of that word, the running sum, kept?"""

    words: tuple[str, ...]
    step: float
    total: float
    kept: bool


def _beam_steps(
    log_probs: dict[tuple[str, ...], dict[str, float]], width: int
) -> list[list[_Candidate]]:
    """Beam search on a table of next-word log-probabilities: at each step every kept prefix is
    extended by every word of its row, and the ``width`` candidates with the highest sums of
    log-probabilities are kept. It stops when a kept prefix has no row. One list per step."""
    live: list[tuple[tuple[str, ...], float]] = [((), 0.0)]
    steps: list[list[_Candidate]] = []
    while all(words in log_probs for words, _ in live):
        candidates = [
            (words + (word,), lp, total + lp)
            for words, total in live
            for word, lp in log_probs[words].items()
        ]
        best = sorted(range(len(candidates)), key=lambda i: -candidates[i][2])[:width]
        steps.append(
            [_Candidate(w, lp, total, i in best) for i, (w, lp, total) in enumerate(candidates)]
        )
        live = [(candidates[i][0], candidates[i][2]) for i in best]
    return steps


def _minus(value: float) -> str:
    return f"{value:.1f}".replace("-", "\N{MINUS SIGN}")


def beam_search_diagram() -> Figure:
    """Beam search with k = 2 over three steps, on a made-up table of next-word log-probabilities
    (``_BEAM_LOG_PROBS``) over Lecture 4's words yes, ok and </s>.

    At each step every kept prefix is extended by every word; each box holds the word y_t and
    the sum of log p(y_t | y_<t, x) so far, each arrow that step's log-probability. The k = 2
    best candidates of the step are kept (solid) and extended; the others are pruned (dashed,
    faded). The best output, the kept candidate of the last step with the highest sum, is
    drawn in orange: ok ok </s> (-1.5), where greedy search would have taken yes first.
    """
    import math

    k = 2
    steps = _beam_steps(_BEAM_LOG_PROBS, k)
    best = max((c for c in steps[-1] if c.kept), key=lambda c: c.total).words
    on_best = {best[:n] for n in range(len(best) + 1)}
    children: dict[tuple[str, ...], list[_Candidate]] = {}
    for step in steps:
        for c in step:
            children.setdefault(c.words[:-1], []).append(c)
    # rows: one per leaf (a pruned candidate, or one of the last step), from the top down
    leaves = sum(not children.get(c.words) for step in steps for c in step)
    gap, bottom = 0.52, 1.35  # the legend goes below the lowest row
    top = bottom + gap * (leaves - 1)
    row = 0
    y: dict[tuple[str, ...], float] = {}

    def place(words: tuple[str, ...]) -> float:
        nonlocal row
        below = children.get(words, [])
        if not below:
            y[words] = top - gap * row
            row += 1
        else:
            ys = [place(c.words) for c in below]
            y[words] = (min(ys) + max(ys)) / 2
        return y[words]

    place(())
    x0, spacing = 0.75, 2.6
    fig, ax = _canvas(x0 + spacing * len(steps) + 0.75, top + 1.75)
    _label(
        ax, 0.15, top + 1.3,
        r"in a box: the word $y_t$, then $\sum \log p(y_t \mid y_{<t}, x)$ so far;"
        "  " r"on an arrow: $\log p(y_t \mid y_{<t}, x)$ of that step",
        ha="left",
    )  # fmt: skip
    boxes = {(): _box(ax, x0, y[()], r"$\langle s\rangle$", kind="input", w=0.75, h=0.4)}
    for n, step in enumerate(steps, start=1):
        cx = x0 + spacing * n
        _label(ax, cx, top + 0.65, f"step {n}: $y_{n}$")
        for c in step:
            parent = boxes[c.words[:-1]]
            highlight = c.words in on_best
            colour = BEAM if highlight else INK if c.kept else FADED
            box = _box(
                ax, cx, y[c.words], "", kind="output" if c.kept else "masked", w=1.3, h=0.4,
                edge=colour, lw=2.2 if highlight else 1.0,
            )  # fmt: skip
            text = "black" if c.kept else FADED
            _label(ax, cx, box.y, f"{c.words[-1]}  {_minus(c.total)}", text)
            lw = 2.2 if highlight else 1.0
            _arrow(ax, parent.right, box.left, colour=colour, dashed=not c.kept, lw=lw)
            steep = abs(box.y - parent.y) / math.hypot(box.x - parent.x, box.y - parent.y)
            offset = 0.13 + 0.12 * steep  # clear of its own line, however steep
            _edge_label(ax, parent.right, box.left, _minus(c.step), colour, at=0.72, offset=offset)
            boxes[c.words] = box
    _legend(
        ax,
        0.15,
        0.65,
        [
            (f"kept: the $k = {k}$ best candidates of the step", INK, False),
            ("pruned", FADED, True),
        ],
    )
    _legend(ax, 4.6, 0.65, [(f"the best output: {' '.join(best)}", BEAM, False)])
    return fig


def self_attention_diagram() -> Figure:
    """Self-attention in matrix form: X projected to Q, K and V, the scaled scores, the softmax
    (after the mask M) and the weighted sum Z = A V. Shapes are for n positions."""
    fig, ax = _canvas(11.2, 4.6)
    x = _box(ax, 0.85, 2.3, "$X$", kind="input", w=0.9, h=0.6)
    _label(ax, 0.85, 1.75, r"$(n, d_{\mathrm{model}})$", fontsize=SMALL - 1)
    projections = {}
    for name, y, matrix in (
        ("Q", 3.7, "W^{Q\\top}"),
        ("K", 2.3, "W^{K\\top}"),
        ("V", 0.9, "W^{V\\top}"),
    ):
        box = _box(ax, 3.3, y, f"${name} = X{matrix}$", w=1.6, h=0.55)
        _label(
            ax, 3.3, y - 0.45, r"$(n, d_k)$" if name != "V" else r"$(n, d_v)$", fontsize=SMALL - 1
        )
        _arrow(ax, x.right, box.left)
        projections[name] = box
    scores = _box(
        ax, 6.0, 3.0, r"$s_{ij} = q_i \cdot k_j / \sqrt{d_k}$", kind="attention", w=2.3, h=0.6
    )
    _arrow(ax, projections["Q"].right, (scores.left[0], scores.y + 0.12))
    _arrow(ax, projections["K"].right, (scores.left[0], scores.y - 0.12))
    _label(ax, 6.0, 3.55, "scores $(n, n)$", fontsize=SMALL - 1)
    weights = _box(
        ax, 9.3, 3.0, r"$a_{ij} = \mathrm{softmax}_j(s_{ij} + M_{ij})$", "attention", w=3.2, h=0.6
    )
    _arrow(ax, scores.right, weights.left)
    _label(ax, 9.3, 3.55, "weights $A$, each row sums to 1", fontsize=SMALL - 1)
    total = _box(ax, 9.3, 0.9, r"$z_i = \sum_j a_{ij} v_j$", kind="output", w=2.2, h=0.6)
    _label(ax, 9.3, 0.35, r"$Z = AV$, $(n, d_v)$", fontsize=SMALL - 1)
    _arrow(ax, weights.bottom, total.top)
    _arrow(ax, projections["V"].right, total.left)
    return fig


def multi_head_diagram(heads: int = 3) -> Figure:
    """Multi-head attention: h heads side by side on slices of Q, K and V, their outputs
    concatenated and projected by W^O. With ``heads`` = 3 the columns are heads 1, 2 and h."""
    if heads < 2:
        raise ValueError(f"heads: expected at least 2, got {heads}")
    spacing = 2.3
    width, height = 1.4 + spacing * heads + 1.2, 5.8
    fig, ax = _canvas(width, height)
    centre = width / 2
    x = _box(ax, centre, 0.45, "$X$", kind="input", w=0.9)
    names = [str(r) for r in range(1, heads)] + ["h"]
    tops = []
    for column, r in enumerate(names):
        cx = 1.8 + spacing * column
        qkv = _box(ax, cx, 1.85, f"$Q_{r},\\ K_{r},\\ V_{r}$", w=1.8, h=0.55)
        _arrow(ax, x.top, qkv.bottom)
        head = _box(ax, cx, 3.15, rf"$\mathrm{{head}}_{r}$", kind="attention", w=1.5, h=0.55)
        _arrow(ax, qkv.top, head.bottom)
        tops.append(head)
        if column == heads - 2 and heads > 2:
            _label(ax, cx + spacing / 2, 2.5, r"$\cdots$")
    _label(
        ax,
        width - 0.15,
        0.45,
        r"$\mathrm{head}_r = \mathrm{softmax}(Q_r K_r^\top/\sqrt{d_k} + M)\, V_r$",
        ha="right",
        fontsize=SMALL - 1,
    )
    concat = _box(
        ax,
        centre,
        4.45,
        r"$[\mathrm{head}_1; \dots; \mathrm{head}_h]\, W^{O\top}$",
        kind="output",
        w=3.6,
        h=0.6,
    )
    for head in tops:
        _arrow(ax, head.top, concat.bottom)
    _arrow(ax, concat.top, (centre, 5.3))
    _label(ax, centre, 5.5, r"$\mathrm{MultiHead}(X)$")
    _label(
        ax, 0.15, 0.45, r"each head: $d_k = d_{\mathrm{model}}/h$", ha="left", fontsize=SMALL - 1
    )
    return fig


def _sublayer_stack(
    ax: Axes, x: float, y: float, sublayers: Sequence[tuple[str, str]], side: int
) -> tuple[float, list[_Box]]:
    """Sublayers from y up, each followed by "add & norm", with a residual path around it on
    the left (side = -1) or right (side = +1). Returns the y above the stack and the boxes."""
    w, gap = 2.3, 0.3
    rail = x + side * (w / 2 + 0.3)
    boxes = []
    for text, kind in sublayers:
        start = y  # where the sublayer's input branches off
        sub = _box(ax, x, y + gap + 0.25, text, kind=kind, w=w)
        norm = _box(ax, x, sub.y + 0.75, r"add & norm", kind="norm", w=w, h=0.45)
        _arrow(ax, (x, start), sub.bottom)
        _arrow(ax, sub.top, norm.bottom)
        edge = x + side * w / 2
        _path(ax, [(x, start + 0.12), (rail, start + 0.12), (rail, norm.y), (edge, norm.y)])
        boxes += [sub, norm]
        y = norm.top[1]
    return y, boxes


def transformer_diagram() -> Figure:
    """The Transformer, post-norm as in the paper: an encoder block (self-attention, add & norm,
    feed-forward, add & norm) and a decoder block (masked self-attention, cross-attention to
    the memory M, feed-forward, each with add & norm), each repeated N times."""
    from matplotlib.patches import FancyBboxPatch

    fig, ax = _canvas(9.2, 8.3)
    enc_x, dec_x = 2.3, 6.6
    for cx, text in ((enc_x, "source tokens"), (dec_x, "target tokens, shifted right")):
        _label(ax, cx, 0.3, text)
        emb = _box(ax, cx, 1.05, r"embedding $+\ p_i$", kind="input", w=2.3, h=0.45)
        _arrow(ax, (cx, 0.47), emb.bottom)
    enc_top, enc_boxes = _sublayer_stack(
        ax,
        enc_x,
        1.275,
        [("multi-head self-attention", "attention"), (r"feed-forward $\mathrm{FFN}$", "state")],
        side=-1,
    )
    dec_top, dec_boxes = _sublayer_stack(
        ax,
        dec_x,
        1.275,
        [
            ("masked self-attention", "attention"),
            ("cross-attention", "attention"),
            (r"feed-forward $\mathrm{FFN}$", "state"),
        ],
        side=1,
    )
    for cx, top, name, label_x, ha in (
        (enc_x, enc_top, "encoder", enc_x - 1.55, "right"),
        (dec_x, dec_top, "decoder", dec_x + 1.55, "left"),
    ):
        ax.add_patch(
            FancyBboxPatch(
                (cx - 1.4, 1.45),
                2.8,
                top - 1.4,
                boxstyle="round,pad=0.05",
                facecolor="none",
                edgecolor="#888888",
                linestyle=(0, (4, 3)),
            )
        )
        _label(ax, label_x, 1.75, f"{name}\n" + r"$\times N$", ha=ha)
    memory = _box(ax, enc_x, enc_top + 0.65, "memory $M$", kind="output", w=1.6, h=0.45)
    _arrow(ax, (enc_x, enc_top), memory.bottom)
    cross = dec_boxes[2]
    _path(
        ax,
        [memory.right, (4.45, memory.y), (4.45, cross.y), cross.left],
        colour=ATTENTION,
    )
    _label(ax, 3.85, memory.y + 0.35, "keys and values from $M$", ATTENTION)
    out = _box(ax, dec_x, dec_top + 0.65, r"linear, $\mathrm{softmax}$", kind="output", w=2.3)
    _arrow(ax, (dec_x, dec_top), out.bottom)
    _arrow(ax, out.top, (dec_x, out.top[1] + 0.45))
    _label(ax, dec_x, out.top[1] + 0.65, "next-token probabilities")
    _label(
        ax,
        0.15,
        8.0,
        r"add & norm: $\mathrm{LN}(x + F(x))$ around each sublayer $F$ (post-norm)",
        ha="left",
    )
    return fig


def bert_input_diagram(
    tokens: Sequence[str] = (
        "[CLS]", "let", "there", "be", "light", "[SEP]", "it", "was", "good", "[SEP]",
    ),
) -> Figure:  # fmt: skip
    """BERT's input: for each position t, E_tok[w_t] + E_seg[s_t] + E_pos[t], then LayerNorm.

    Segment A runs up to and including the first [SEP], segment B after it. Positions count
    from 0, as in the code (torch.arange).
    """
    tokens = list(tokens)
    if "[SEP]" not in tokens:
        raise ValueError("tokens: expected a [SEP] that ends segment A")
    end_a = tokens.index("[SEP]")
    spacing, left = 0.95, 2.85
    width, height = left + spacing * len(tokens) + 0.1, 4.0
    fig, ax = _canvas(width, height)
    rows = {  # y: (row name)
        "token": (0.45, r"token $E_{\mathrm{tok}}[w_t]$"),
        "segment": (1.45, r"segment $E_{\mathrm{seg}}[s_t]$"),
        "position": (2.45, r"position $E_{\mathrm{pos}}[t]$"),
    }
    for y, name in rows.values():
        _label(ax, 0.1, y, name, ha="left")
    _label(ax, 0.1, 3.65, r"$e_t = \mathrm{LN}(\mathrm{sum})$", ha="left")
    for t, token in enumerate(tokens):
        cx = left + spacing * t
        segment = "A" if t <= end_a else "B"
        _box(ax, cx, rows["token"][0], token, kind="input", w=0.85, h=0.45, fontsize=SMALL - 1)
        _box(ax, cx, rows["segment"][0], segment, kind=f"segment {segment}", w=0.85, h=0.45)
        _box(ax, cx, rows["position"][0], str(t), kind="state", w=0.85, h=0.45)
        for y in (0.95, 1.95):
            _label(ax, cx, y, "$+$", fontsize=FONT)
        _arrow(ax, (cx, 2.675), (cx, 3.425))
        _box(ax, cx, 3.65, f"$e_{{{t}}}$", kind="output", w=0.85, h=0.45)
    return fig


def bert_pretraining_diagram(
    tokens: Sequence[str] = (
        "[CLS]", "let", "there", "[MASK]", "light", "[SEP]", "it", "[MASK]", "good", "[SEP]",
    ),
    targets: Sequence[str] = ("be", "was"),
) -> Figure:  # fmt: skip
    """BERT's two pretraining heads on the encoder's last layer h^(L), as course.models.bert
    computes them.

    MLM, at each selected position t (drawn as [MASK]): LN(GELU(W_m h^(L)_t + b_m)) E_tok^T +
    b_dec, whose output matrix is the token embedding table itself (tied weights), then a
    softmax over the vocabulary and the cross-entropy with the original token (``targets``, in
    order). NSP, from [CLS] alone: pooled = tanh(W_p h^(L)_[CLS] + b_p), then
    W_nsp pooled + b_nsp for IsNext / NotNext. The loss is the sum of the two cross-entropies.
    """
    tokens = list(tokens)
    selected = [t for t, token in enumerate(tokens) if token == "[MASK]"]
    if tokens[:1] != ["[CLS]"] or not selected:
        raise ValueError("tokens: expected [CLS] first and at least one [MASK]")
    if len(targets) != len(selected):
        raise ValueError(f"targets: expected one per [MASK] ({len(selected)}), got {len(targets)}")
    gaps = [b - a for a, b in zip(selected, selected[1:], strict=False)]
    if min([selected[0], *gaps]) < 3:  # the heads are wider than a column
        raise ValueError(
            "tokens: expected each [MASK] at least 3 positions after [CLS] and another"
        )
    spacing, left = 0.95, 2.5
    x = [left + spacing * t for t in range(len(tokens))]
    # room on the right for the last token, the last head's label and the note on tied weights
    width = max(x[-1] + 0.6, x[selected[-1]] + 1.45, x[selected[0]] + 1.95)
    height = 6.45
    fig, ax = _canvas(width, height)
    y_in, y_enc, y_h, y_head, y_out, y_target = 0.45, 1.55, 2.6, 3.7, 4.85, 5.65
    _label(ax, 0.1, y_in, r"input $\tilde w_t$", ha="left")
    _label(ax, 0.1, y_h, r"last layer $h^{(L)}_t$", ha="left")
    encoder = _box(
        ax, (x[0] + x[-1]) / 2, y_enc,
        "embeddings $e_t$, then $L$ encoder layers:\nevery position reads every position",
        kind="norm", w=x[-1] - x[0] + 0.85, h=0.75,
    )  # fmt: skip
    for t, token in enumerate(tokens):
        kind = "masked" if t in selected else "input"
        _box(ax, x[t], y_in, token, kind=kind, w=0.85, h=0.45, fontsize=SMALL - 1)
        _arrow(ax, (x[t], y_in + 0.225), (x[t], encoder.bottom[1]))
        h = _box(ax, x[t], y_h, "", w=0.85, h=0.4)
        _arrow(ax, (x[t], encoder.top[1]), h.bottom)
    # NSP: the [CLS] vector through the pooler, then two logits
    pooler = _box(
        ax, x[0], y_head, "pooler\n" r"$\tanh(W_p h^{(L)}_{\mathrm{[CLS]}} + b_p)$", w=2.2, h=0.75
    )
    _arrow(ax, (x[0], y_h + 0.2), pooler.bottom)
    nsp = _box(
        ax, x[0], y_out, r"$W_{\mathrm{nsp}}\,\mathrm{pooled} + b_{\mathrm{nsp}}$", "output", w=2.2
    )
    _arrow(ax, pooler.top, nsp.bottom)
    _arrow(ax, nsp.top, (x[0], y_target - 0.17))
    _label(ax, x[0], y_target, "NSP: IsNext or NotNext")
    # MLM: at each selected position, the transform, then the tied output embedding
    for t, target in zip(selected, targets, strict=True):
        transform = _box(
            ax, x[t], y_head, "transform\n" r"$\mathrm{LN}(\mathrm{GELU}(W_m h^{(L)}_t + b_m))$",
            w=2.5, h=0.75,
        )  # fmt: skip
        _arrow(ax, (x[t], y_h + 0.2), transform.bottom)
        decoder = _box(
            ax, x[t], y_out, r"$\cdot\, E_{\mathrm{tok}}^\top + b_{\mathrm{dec}}$", "output", w=2.5
        )
        _arrow(ax, transform.top, decoder.bottom)
        _arrow(ax, decoder.top, (x[t], y_target - 0.17))
        _label(ax, x[t], y_target, f"MLM: softmax over $\\mathcal{{V}}$, target {target}")
    _label(
        ax, x[selected[0]] + 0.12, (y_head + y_out) / 2 + 0.05,
        r"tied: the input's own $E_{\mathrm{tok}}$", ha="left", fontsize=SMALL - 1,
    )  # fmt: skip
    _label(
        ax, width / 2, height - 0.35,
        "loss = MLM cross-entropy at the selected positions + NSP cross-entropy",
    )  # fmt: skip
    return fig


def _bert_task(
    ax: Axes, x0: float, y0: float, title: str, tokens: Sequence[str], marked: Sequence[int] = ()
) -> tuple[list[float], float]:
    """One fine-tuning panel's lower part, from (x0, y0): the title, the tokens (``marked``
    ones with a thick edge) and the fine-tuned BERT over them. Returns the tokens' x and the
    y of the top of BERT, where the task's head reads h^(L)_t."""
    spacing, w = 0.72, 0.66
    x = [x0 + w / 2 + spacing * t for t in range(len(tokens))]
    _label(ax, x0, y0 + 3.45, title, ha="left", fontsize=FONT)
    bert = _box(
        ax, (x[0] + x[-1]) / 2, y0 + 1.1, "BERT, fine-tuned", kind="norm", w=x[-1] - x[0] + w, h=0.5
    )
    for t, token in enumerate(tokens):
        lw = 2.2 if t in marked else 1.0
        _box(ax, x[t], y0 + 0.3, token, "input", w=w, h=0.42, fontsize=SMALL - 1, lw=lw)
        _arrow(ax, (x[t], y0 + 0.51), (x[t], bert.bottom[1]))
    return x, bert.top[1]


def bert_finetuning_diagram() -> Figure:
    """BERT fine-tuned, four set-ups: every weight, BERT's and the small head's, is trained on
    the task.

    (a) one sentence and (b) a sentence pair, classified from [CLS]: softmax(W pooled + b),
    pooled being the pretraining's pooler on h^(L)_[CLS]; (c) a span of the second segment
    (question answering): a start score w_s^T h^(L)_t and an end score w_e^T h^(L)_t at every
    token of it, each with a softmax over those tokens; (d) Lecture 7's part-of-speech task,
    a label for one marked word, softmax(W h^(L)_t + b) at its first piece (course.analysis.
    bert.WordClassifier: no pooler, the other pieces unread).
    """
    fig, ax = _canvas(11.0, 7.75)
    top, bottom = 3.95, 0.15  # the two rows of panels
    # (a) one sentence
    x, y = _bert_task(
        ax,
        0.3,
        top,
        "(a) one sentence: a class from [CLS]",
        ["[CLS]", "a", "fine", "film", "[SEP]"],
    )
    head = _box(
        ax, x[0] + 0.8, y + 0.75, r"$\mathrm{softmax}(W\,\mathrm{pooled} + b)$", "output", w=2.3
    )
    _arrow(ax, (x[0], y), (x[0], head.bottom[1]))
    _arrow(ax, head.top, (head.x, head.top[1] + 0.3))
    _label(ax, head.x, head.top[1] + 0.47, "class: positive")
    # (b) a sentence pair
    x, y = _bert_task(
        ax, 4.9, top, "(b) a sentence pair: a class from [CLS]",
        ["[CLS]", "it", "rains", "[SEP]", "it", "is", "wet", "[SEP]"],
    )  # fmt: skip
    head = _box(
        ax, x[0] + 0.8, y + 0.75, r"$\mathrm{softmax}(W\,\mathrm{pooled} + b)$", "output", w=2.3
    )
    _arrow(ax, (x[0], y), (x[0], head.bottom[1]))
    _arrow(ax, head.top, (head.x, head.top[1] + 0.3))
    _label(ax, head.x, head.top[1] + 0.47, "class: B follows from A")
    # (c) a span: start and end scores at every token of the second segment
    tokens = ["[CLS]", "who", "sat", "[SEP]", "the", "cat", "sat", "[SEP]"]
    x, y = _bert_task(ax, 0.3, bottom, "(c) a span: start and end scores per token", tokens)
    span = [4, 5, 6]  # the second segment's words
    head = _box(
        ax, x[5], y + 0.8, r"start $w_s^\top h^{(L)}_t$" "\n" r"end $w_e^\top h^{(L)}_t$", "output",
        w=x[6] - x[4] + 0.66, h=0.75,
    )  # fmt: skip
    for t in span:
        _arrow(ax, (x[t], y), (x[t], head.bottom[1]))
    _arrow(ax, head.top, (head.x, head.top[1] + 0.3))
    _label(ax, head.x, head.top[1] + 0.47, "answer: the cat (start: the, end: cat)")
    _label(ax, head.left[0] - 0.15, head.y, "each a softmax over\nthe second segment", ha="right",
           fontsize=SMALL - 1)  # fmt: skip
    # (d) this lecture: the marked word's part of speech, read at its first piece
    x, y = _bert_task(
        ax, 6.5, bottom, "(d) this lecture: the part of speech of a marked word",
        ["[CLS]", "he", "walk", "##ed", "home", "[SEP]"], marked=(2, 3),
    )  # fmt: skip
    head = _box(ax, x[2], y + 0.75, r"$\mathrm{softmax}(W h^{(L)}_t + b)$", "output", w=2.2)
    _arrow(ax, (x[2], y), (x[2], head.bottom[1]))
    _arrow(ax, head.top, (head.x, head.top[1] + 0.3))
    _label(ax, head.x, head.top[1] + 0.47, "part of speech: verb")
    _label(
        ax,
        head.right[0] + 0.1,
        head.y,
        "read at the word's\nfirst piece only",
        ha="left",
        fontsize=SMALL - 1,
    )
    return fig


def gpt_stack_diagram() -> Figure:
    """The decoder-only stack as course.models.gpt.GPT builds it (pre-norm, as GPT-2).

    From the bottom: h^(0)_t = E_tok[w_t] + E_pos[t]; then L blocks, each
    a = h + MultiHead(LN_1(h); causal) and h' = a + FFN(LN_2(a)), the residual path drawn on
    the right of each sublayer; then the final LN_f and the output layer, which is the token
    table itself (tied weights, no bias): softmax(LN_f(h^(L)_t) E_tok^T). Dropout, after the
    embedding sum and after each sublayer, acts in training only and is left out.
    """
    from matplotlib.patches import FancyBboxPatch

    fig, ax = _canvas(9.7, 10.6)
    cx, w, rail = 4.3, 3.0, 6.25  # the main column, its boxes' width, the residual paths' x
    _label(ax, cx, 0.3, r"tokens $w_1, \dots, w_T$")
    token = _box(ax, 3.0, 1.1, r"token $E_{\mathrm{tok}}[w_t]$", kind="input", w=2.2, h=0.5)
    position = _box(ax, 5.6, 1.1, r"position $E_{\mathrm{pos}}[t]$", kind="input", w=2.2, h=0.5)
    _arrow(ax, (token.x, 0.47), token.bottom)
    _arrow(ax, (position.x, 0.47), position.bottom)
    embed = _node(ax, cx, 2.0, "$+$")
    _arrow(ax, token.top, (embed.x - 0.12, embed.y - 0.12))
    _arrow(ax, position.top, (embed.x + 0.12, embed.y - 0.12))
    _label(ax, cx - 0.3, 2.0, r"$h^{(0)}_t$", ha="right")
    # one block: LN -> sublayer -> add, twice, each add also reading the sublayer's input
    y, boxes = embed.top[1], []
    block_bottom = y + 0.15
    for norm, (text, kind), out in (
        (r"$\mathrm{LN}_1$", ("masked multi-head self-attention\n"
                              r"(causal: position $t$ reads $1, \dots, t$)", "attention"), "$a$"),
        (r"$\mathrm{LN}_2$", (r"feed-forward $\mathrm{FFN}$ (GELU)", "state"), "$h'$"),
    ):  # fmt: skip
        start = y + 0.35  # where the residual path leaves the main column
        n = _box(ax, cx, start + 0.5, norm, kind="norm", w=w, h=0.42)
        sub = _box(ax, cx, n.top[1] + 0.55, text, kind=kind, w=w, h=0.7)
        add = _node(ax, cx, sub.top[1] + 0.55, "$+$")
        _arrow(ax, (cx, y), n.bottom)
        _arrow(ax, n.top, sub.bottom)
        _arrow(ax, sub.top, add.bottom)
        _path(ax, [(cx, start), (rail, start), (rail, add.y), add.right])
        _label(ax, cx - 0.3, add.y, out, ha="right")
        boxes += [n, sub, add]
        y = add.top[1]
    block_top = y + 0.1
    ax.add_patch(
        FancyBboxPatch(
            (cx - w / 2 - 0.35, block_bottom),
            rail - cx + w / 2 + 0.65,
            block_top - block_bottom,
            boxstyle="round,pad=0.05",
            facecolor="none",
            edgecolor="#888888",
            linestyle=(0, (4, 3)),
        )
    )
    _label(ax, cx - w / 2 - 0.5, (block_bottom + block_top) / 2, "block\n" r"$\times L$",
           ha="right", fontsize=FONT)  # fmt: skip
    _label(
        ax, rail + 0.5, boxes[2].y,
        r"$a = h + \mathrm{MultiHead}(\mathrm{LN}_1(h);\ \mathrm{causal})$", ha="left",
        fontsize=SMALL - 1,
    )  # fmt: skip
    _label(
        ax, rail + 0.5, boxes[5].y, r"$h' = a + \mathrm{FFN}(\mathrm{LN}_2(a))$", ha="left",
        fontsize=SMALL - 1,
    )  # fmt: skip
    final = _box(ax, cx, block_top + 0.8, r"final $\mathrm{LN}_f$", kind="norm", w=w, h=0.42)
    _arrow(ax, (cx, y), final.bottom)
    _label(ax, cx - 0.3, (block_top + final.bottom[1]) / 2, r"$h^{(L)}_t$", ha="right")
    head = _box(
        ax, cx, final.top[1] + 0.6, r"output layer $\cdot\, E_{\mathrm{tok}}^\top$, no bias",
        kind="output", w=w, h=0.5,
    )  # fmt: skip
    _arrow(ax, final.top, head.bottom)
    _arrow(ax, head.top, (cx, head.top[1] + 0.45))
    _label(
        ax, cx, head.top[1] + 0.65,
        r"$p(w_{t+1} \mid w_{\leq t}) = \mathrm{softmax}(\mathrm{LN}_f(h^{(L)}_t)\, E_{\mathrm{tok}}^\top)$",
    )  # fmt: skip
    # weight tying: the output layer is the token table itself
    tie_x = 0.45
    _path(
        ax,
        [token.left, (tie_x, token.y), (tie_x, head.y), head.left],
        colour=BEAM,
        dashed=True,
    )
    _label(
        ax, tie_x + 0.15, (head.y + final.y) / 2 - 0.1,
        "tied: the same\n" r"matrix $E_{\mathrm{tok}}$", colour=BEAM, ha="left",
    )  # fmt: skip
    return fig


def causal_mask_diagram(
    tokens: Sequence[str] = ("the", "cat", "sat", "on", "the", "mat"),
) -> Figure:
    """The causal mask M for the tokens: query i (rows) may read key j (columns) when j <= i.

    Allowed cells are shaded and hold 0; the others hold -inf, which the softmax turns into a
    weight of 0.
    """
    from matplotlib.patches import Rectangle

    n = len(tokens)
    if n < 2:
        raise ValueError(f"tokens: expected at least 2, got {n}")
    cell, left, bottom = 0.6, 1.9, 0.35
    width, height = left + cell * n + 0.4, bottom + cell * n + 1.6
    fig, ax = _canvas(width, height)
    top = bottom + cell * n
    for i in range(n):  # query i, row i from the top
        y = top - cell * (i + 1)
        _label(ax, left - 0.12, y + cell / 2, f"{i + 1} {tokens[i]}", ha="right")
        for j in range(n):
            x = left + cell * j
            allowed = j <= i
            face = FILL["state"] if allowed else FILL["masked"]
            ax.add_patch(Rectangle((x, y), cell, cell, facecolor=face, edgecolor="#999999"))
            text = "0" if allowed else r"$-\infty$"
            _label(ax, x + cell / 2, y + cell / 2, text, fontsize=SMALL - 1)
    for j in range(n):
        _label(ax, left + cell * (j + 0.5), top + 0.22, tokens[j], fontsize=SMALL - 1)
    _label(ax, left + cell * n / 2, top + 0.6, "key position $j$ (what is read)")
    _label(ax, left - 0.12, top + 0.22, "query $i$", ha="right")
    _label(
        ax, left + cell * n / 2, top + 1.05, r"mask $M_{ij}$: 0 if $j \leq i$, $-\infty$ if $j > i$"
    )
    return fig


def decoding_tree_diagram() -> Figure:
    """A two-step decoding tree with made-up next-token probabilities after "The".

    Greedy search takes the best token at each step (The cat sat, 0.5 x 0.4 = 0.20); beam
    search with k = 2 keeps the two best prefixes and finds The dog barked (0.4 x 0.7 = 0.28).
    """
    fig, ax = _canvas(9.0, 5.4)
    root = _box(ax, 0.8, 2.9, "The", kind="input", w=0.9, h=0.45)
    first = {  # word: (y, p)
        "cat": (4.3, 0.5),
        "dog": (2.45, 0.4),
        "man": (0.75, 0.1),
    }
    second = {  # (parent, word): (y, p)
        ("cat", "sat"): (4.85, 0.4),
        ("cat", "ran"): (3.95, 0.35),
        ("dog", "barked"): (2.95, 0.7),
        ("dog", "slept"): (2.05, 0.3),
    }
    greedy = {("The", "cat"), ("cat", "sat")}
    beam_kept = {"cat", "dog"}
    best = {("The", "dog"), ("dog", "barked")}

    def colour(edge: tuple[str, str]) -> str:
        return GREEDY if edge in greedy else BEAM if edge in best else "#999999"

    boxes = {}
    for word, (y, p) in first.items():
        edge = "#999999" if word not in beam_kept else INK
        box = _box(ax, 3.1, y, word, kind="state", w=0.9, h=0.45, edge=edge)
        c = colour(("The", word))
        _arrow(ax, root.right, box.left, colour=c, lw=2.2 if c != "#999999" else 1.0)
        _edge_label(ax, root.right, box.left, f"{p}", c, at=0.55)
        boxes[word] = box
    _label(ax, 3.1, 0.35, "not kept by the beam", "#999999", fontsize=SMALL - 1)
    for (parent, word), (y, p) in second.items():
        box = _box(ax, 5.5, y, word, kind="output", w=1.0, h=0.45)
        c = colour((parent, word))
        _arrow(ax, boxes[parent].right, box.left, colour=c, lw=2.2 if c != "#999999" else 1.0)
        _edge_label(ax, boxes[parent].right, box.left, f"{p}", c)
        total = first[parent][1] * p
        _label(ax, 6.15, y, f"{first[parent][1]} × {p} = {total:.3f}", c, ha="left")
    _legend(
        ax,
        4.4,
        1.2,
        [
            ("greedy: the best next token at each step", GREEDY, False),
            ("beam search, $k = 2$: the most probable text it keeps", BEAM, False),
        ],
    )
    return fig


def kv_cache_diagram() -> Figure:
    """One generation step with a KV cache, in layer l, for the new token at position t
    (Lecture 8's notation, as course.models.gpt.block_with_cache computes it).

    Stored from the steps before (shaded): the keys k_1..k_{t-1} and values v_1..v_{t-1} of
    this layer. Computed now, for position t only: q_t, k_t and v_t from z_t = LN_1(h_t), the
    block's normalised input. k_t and v_t are appended, which makes K_{1..t} and V_{1..t}; then
    q_t attends over all t keys (purple, from above) and sums the t values (from below):
    o_t = softmax(q_t K_{1..t}^T / sqrt(d_k)) V_{1..t}. Every layer keeps its own cache.
    """
    from matplotlib.patches import FancyBboxPatch

    fig, ax = _canvas(10.6, 5.6)
    y_k, y_att, y_v = 4.45, 3.2, 1.95
    slots = {"1": 2.3, "2": 3.25, "t-1": 5.15}  # the cached positions; the dots at 4.2
    x_new = 6.45  # position t, appended at the end
    for y in (y_k, y_v):  # the cache: what earlier steps stored
        ax.add_patch(
            FancyBboxPatch(
                (1.75, y - 0.4), 3.95, 0.8, boxstyle="round,pad=0.05", facecolor="#f0f0f0",
                edgecolor="#888888", linestyle=(0, (4, 3)),
            )
        )  # fmt: skip
    _label(ax, 3.7, y_k + 0.65, r"cache of layer $l$, stored at steps $1..t-1$", "#555555")
    _label(ax, x_new, y_k + 0.65, "new", BEAM)
    _label(ax, 0.1, y_k, r"keys $K^{(l)}_{1..t}$", ha="left")
    _label(ax, 0.1, y_v, r"values $V^{(l)}_{1..t}$", ha="left")
    attention = _box(
        ax, 4.3, y_att,
        r"$o^{(l)}_t = \mathrm{softmax}(q^{(l)}_t K^{(l)\top}_{1..t} / \sqrt{d_k})\, V^{(l)}_{1..t}$",
        kind="attention", w=4.9, h=0.55,
    )  # fmt: skip
    for name, x in (*slots.items(), ("t", x_new)):
        kind = "gate" if name == "t" else "state"
        key = _box(ax, x, y_k, f"$k_{{{name}}}$", kind=kind, w=0.8, h=0.45)
        value = _box(ax, x, y_v, f"$v_{{{name}}}$", kind=kind, w=0.8, h=0.45)
        _arrow(ax, key.bottom, (x, attention.top[1]), ATTENTION)
        _arrow(ax, value.top, (x, attention.bottom[1]), ATTENTION)
    for y in (y_k, y_v):
        _label(ax, 4.2, y, r"$\cdots$")
    _label(ax, 4.2, (y_k + y_att) / 2 + 0.05, r"$q_t \cdot k_j$, all $t$ keys", ATTENTION,
           fontsize=SMALL - 1)  # fmt: skip
    _label(ax, 4.2, (y_v + y_att) / 2 - 0.05, r"weights $\times\, v_j$, all $t$ values",
           ATTENTION, fontsize=SMALL - 1)  # fmt: skip
    # the output, on through W^O, the residual and the FFN of layer l
    _arrow(ax, attention.left, (1.25, y_att))
    _label(ax, 0.1, y_att, r"$o^{(l)}_t$", ha="left")
    # position t: three projections of its normalised input, computed at this step only
    x_proj, rail = 8.65, 9.95
    _label(ax, x_proj, y_k + 0.65, "computed at step $t$ only", BEAM)
    q = _box(ax, x_proj, y_att, r"$q^{(l)}_t = W^Q z_t$", kind="gate", w=1.7, h=0.45)
    k = _box(ax, x_proj, y_k, r"$k^{(l)}_t = W^K z_t$", kind="gate", w=1.7, h=0.45)
    v = _box(ax, x_proj, y_v, r"$v^{(l)}_t = W^V z_t$", kind="gate", w=1.7, h=0.45)
    z = _box(ax, x_proj, 0.7, r"$z_t = \mathrm{LN}_1(h_t)$", kind="norm", w=1.7, h=0.45)
    for box in (q, k, v):
        _path(ax, [z.right, (rail, z.y), (rail, box.y), box.right])
    _arrow(ax, q.left, attention.right, ATTENTION, dashed=True)
    _label(ax, (q.left[0] + attention.right[0]) / 2 + 0.15, y_att + 0.22, "query", ATTENTION)
    _arrow(ax, k.left, (x_new + 0.4, y_k))
    _arrow(ax, v.left, (x_new + 0.4, y_v))
    for y in (y_k, y_v):
        _label(ax, (k.left[0] + x_new + 0.4) / 2, y + 0.22, "append")
    _label(ax, x_proj - 1.1, z.y, "position $t$ only:\nthe new token", ha="right",
           fontsize=SMALL - 1)  # fmt: skip
    _label(ax, 0.1, 0.35, r"each of the $L$ layers keeps its own $K^{(l)}$, $V^{(l)}$",
           ha="left", fontsize=SMALL - 1)  # fmt: skip
    return fig
