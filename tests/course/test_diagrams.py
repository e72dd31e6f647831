"""Tests for course.viz.diagrams: each diagram is a Figure with the lesson's symbols, renders to
PNG, and has no two labels on top of each other and nothing outside the figure."""

from __future__ import annotations

import io
from itertools import combinations

import matplotlib

matplotlib.use("Agg")  # headless; must come before pyplot is imported

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.spines import Spine  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from course.viz import diagrams  # noqa: E402

# Each diagram and the labels (exact strings, as written in mathtext) its lecture needs.
REQUIRED = {
    "rnn_unrolled_diagram": [
        "$x_{1}$", "$h_0$", "$h_{1}$", "$p_{1}$", "$U$", "$W$", "$V$",
        r"$V^\top\delta^o_{1}$", r"$W^\top\delta^a_{2}$",
    ],
    "lstm_cell_diagram": [
        "$c_{t-1}$", "$c_t$", "$h_{t-1}$", "$h_t$", "$x_t$", r"$\odot$", "$+$",
        "forget gate\n" r"$f_t = \sigma(\cdot)$", "input gate\n" r"$i_t = \sigma(\cdot)$",
        "output gate\n" r"$o_t = \sigma(\cdot)$", "candidate\n" r"$\tilde c_t = \tanh(\cdot)$",
    ],
    "gru_cell_diagram": [
        "$h_{t-1}$", "$h_t$", "$x_t$", "$[h_{t-1}; x_t]$", r"$\odot$", "$+$", "$1-$", "$z_t$",
        "update gate\n" r"$z_t = \sigma(\cdot)$", "reset gate\n" r"$r_t = \sigma(\cdot)$",
        r"$W_h h_{t-1} + b_{hh}$", r"$r_t \odot (W_h h_{t-1} + b_{hh})$",
        "candidate\n" r"$\tilde h_t = \tanh(U_h x_t + \cdot + b_h)$",
        r"$h_t = (1 - z_t) \odot \tilde h_t + z_t \odot h_{t-1}$",
    ],
    "stacked_bilstm_diagram": [
        "$x_{t}$", "$x_{t+1}$", r"$\overrightarrow{h}{}^{1}_{t}$", r"$\overleftarrow{h}{}^{1}_{t}$",
        r"$\overrightarrow{h}{}^{2}_{t}$", r"$\overleftarrow{h}{}^{2}_{t}$",
        r"$[\overrightarrow{h}{}^{1}_{t};\ \overleftarrow{h}{}^{1}_{t}]$",
        r"$[\overrightarrow{h}{}^{2}_{t};\ \overleftarrow{h}{}^{2}_{t}]$", "layer 1", "layer 2",
        "layer 1 output,\nconcatenated: $2H$",
        "thick arrows: both\ndirections of layer 2\nread all $2H$ numbers",
    ],
    "bilm_diagram": [
        "$t_{k}$", "$x_{k}$", r"$\overrightarrow{h}_{k,1}$", r"$\overleftarrow{h}_{k,1}$",
        r"$\overrightarrow{h}_{k,2}$", r"$\overleftarrow{h}_{k,2}$", "$h_{k,0} = [x_k; x_k]$",
        "$s_0$", "$s_1$", "$s_2$", r"$\gamma \sum_j s_j h_{k,j}$",
    ],
    "seq2seq_diagram": [
        "$x_{1}$", "$x_{4}$", "$s_{1}$", "$s_{4}$", "$h_{1}$", "$h_{3}$", "$h_0 = s_m$",
        r"$\langle s\rangle$", "$y_{1}$", "$y_{3}$", "the decoder's only\nview of the source",
        r"$s_k = \mathrm{GRU}_{\mathrm{enc}}(E_x[x_k], s_{k-1})$",
        r"$h_t = \mathrm{GRU}_{\mathrm{dec}}(E_y[y_{t-1}], h_{t-1})$",
        r"$p(y_t \mid y_{<t}, x) = \mathrm{softmax}(W_o \tanh(W_c h_t + b_c) + b_o)$",
    ],
    "seq2seq_attention_diagram": [
        "$x_{1}$", "$s_{1}$", "$s_{4}$", "$h_t$", "$h_0 = s_m$", "$a_{t,1}$", "$a_{t,4}$",
        r"$c_t = \sum_k a_{t,k}\, s_k$", r"$e_{t,k} = \mathrm{score}(h_t, s_k)$", r"$\tilde h_t$",
    ],
    "attention_scores_diagram": [
        r"Bahdanau et al.: $h_{t-1} \to a_t \to c_t \to h_t$",
        r"Luong et al.: $h_t \to a_t \to c_t \to \tilde h_t$",
        "additive score\n" r"$e_{t,k} = v_a^\top \tanh(W_a h_{t-1} + U_a s_k)$" "\n"
        r"$c_t = \sum_k a_{t,k}\, s_k$",
        "dot, general or concat score\n" r"$e_{t,k} = \mathrm{score}(h_t, s_k)$" "\n"
        r"$c_t = \sum_k a_{t,k}\, s_k$",
        r"$h_t = \mathrm{RNN}([E_y[y_{t-1}] ; c_t],\, h_{t-1})$",
        r"$h_t = \mathrm{RNN}(E_y[y_{t-1}],\, h_{t-1})$",
        r"$\tilde h_t = \tanh(W_c [c_t ; h_t] + b_c)$", "query $h_{t-1}$", "query $h_t$",
        r"output layer on $y_{t-1}$, $h_t$, $c_t$", r"$s_1, \dots, s_m$",
    ],
    "beam_search_diagram": [
        r"$\langle s\rangle$", "step 1: $y_1$", "step 3: $y_3$", "yes  \u22120.7", "ok  \u22121.3",
        "</s>  \u22121.5", "\u22120.4", "pruned", "kept: the $k = 2$ best candidates of the step",
        "the best output: ok ok </s>",
    ],
    "self_attention_diagram": [
        "$X$", r"$Q = XW^{Q\top}$", r"$K = XW^{K\top}$", r"$V = XW^{V\top}$",
        r"$s_{ij} = q_i \cdot k_j / \sqrt{d_k}$", r"$a_{ij} = \mathrm{softmax}_j(s_{ij} + M_{ij})$",
        r"$z_i = \sum_j a_{ij} v_j$",
    ],
    "multi_head_diagram": [
        "$X$", r"$\mathrm{head}_1$", r"$\mathrm{head}_h$", r"$Q_1,\ K_1,\ V_1$",
        r"$[\mathrm{head}_1; \dots; \mathrm{head}_h]\, W^{O\top}$", r"$\mathrm{MultiHead}(X)$",
    ],
    "transformer_diagram": [
        "multi-head self-attention", "masked self-attention", "cross-attention", "add & norm",
        r"feed-forward $\mathrm{FFN}$", "memory $M$", "encoder\n" r"$\times N$",
        "decoder\n" r"$\times N$",
    ],
    "bert_input_diagram": [
        r"token $E_{\mathrm{tok}}[w_t]$", r"segment $E_{\mathrm{seg}}[s_t]$",
        r"position $E_{\mathrm{pos}}[t]$", r"$e_t = \mathrm{LN}(\mathrm{sum})$", "[CLS]", "[SEP]",
        "A", "B", "$+$", "$e_{0}$",
    ],
    "bert_pretraining_diagram": [
        "[CLS]", "[MASK]", "[SEP]", r"input $\tilde w_t$", r"last layer $h^{(L)}_t$",
        "embeddings $e_t$, then $L$ encoder layers:\nevery position reads every position",
        "pooler\n" r"$\tanh(W_p h^{(L)}_{\mathrm{[CLS]}} + b_p)$",
        r"$W_{\mathrm{nsp}}\,\mathrm{pooled} + b_{\mathrm{nsp}}$", "NSP: IsNext or NotNext",
        "transform\n" r"$\mathrm{LN}(\mathrm{GELU}(W_m h^{(L)}_t + b_m))$",
        r"$\cdot\, E_{\mathrm{tok}}^\top + b_{\mathrm{dec}}$",
        r"tied: the input's own $E_{\mathrm{tok}}$", r"MLM: softmax over $\mathcal{V}$, target be",
        "loss = MLM cross-entropy at the selected positions + NSP cross-entropy",
    ],
    "bert_finetuning_diagram": [
        "(a) one sentence: a class from [CLS]", "(b) a sentence pair: a class from [CLS]",
        "(c) a span: start and end scores per token",
        "(d) this lecture: the part of speech of a marked word", "BERT, fine-tuned",
        r"$\mathrm{softmax}(W\,\mathrm{pooled} + b)$",
        r"start $w_s^\top h^{(L)}_t$" "\n" r"end $w_e^\top h^{(L)}_t$",
        r"$\mathrm{softmax}(W h^{(L)}_t + b)$", "walk", "##ed", "part of speech: verb",
    ],
    "gpt_stack_diagram": [
        r"tokens $w_1, \dots, w_T$", r"token $E_{\mathrm{tok}}[w_t]$",
        r"position $E_{\mathrm{pos}}[t]$", r"$h^{(0)}_t$", r"$\mathrm{LN}_1$", r"$\mathrm{LN}_2$",
        "masked multi-head self-attention\n" r"(causal: position $t$ reads $1, \dots, t$)",
        r"feed-forward $\mathrm{FFN}$ (GELU)", "$+$", "$a$", "$h'$", "block\n" r"$\times L$",
        r"$a = h + \mathrm{MultiHead}(\mathrm{LN}_1(h);\ \mathrm{causal})$",
        r"$h' = a + \mathrm{FFN}(\mathrm{LN}_2(a))$", r"final $\mathrm{LN}_f$", r"$h^{(L)}_t$",
        r"output layer $\cdot\, E_{\mathrm{tok}}^\top$, no bias",
        r"$p(w_{t+1} \mid w_{\leq t}) = \mathrm{softmax}(\mathrm{LN}_f(h^{(L)}_t)\, E_{\mathrm{tok}}^\top)$",
        "tied: the same\n" r"matrix $E_{\mathrm{tok}}$",
    ],
    "causal_mask_diagram": ["0", r"$-\infty$", "query $i$", "key position $j$ (what is read)"],
    "decoding_tree_diagram": [
        "The", "0.5 × 0.4 = 0.200", "0.4 × 0.7 = 0.280",
        "greedy: the best next token at each step",
    ],
    "kv_cache_diagram": [
        "$k_{1}$", "$k_{t-1}$", "$k_{t}$", "$v_{1}$", "$v_{t-1}$", "$v_{t}$",
        r"keys $K^{(l)}_{1..t}$", r"values $V^{(l)}_{1..t}$",
        r"cache of layer $l$, stored at steps $1..t-1$", "computed at step $t$ only",
        r"$q^{(l)}_t = W^Q z_t$", r"$k^{(l)}_t = W^K z_t$", r"$v^{(l)}_t = W^V z_t$",
        r"$z_t = \mathrm{LN}_1(h_t)$", "append", "query", r"$o^{(l)}_t$",
        r"$o^{(l)}_t = \mathrm{softmax}(q^{(l)}_t K^{(l)\top}_{1..t} / \sqrt{d_k})\, V^{(l)}_{1..t}$",
        r"each of the $L$ layers keeps its own $K^{(l)}$, $V^{(l)}$",
    ],
}  # fmt: skip


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def texts(fig: Figure) -> list[Text]:
    """The visible, non-empty text artists of ``fig``."""
    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def overlapping_labels(fig: Figure, tolerance: float = 0.5) -> list[tuple[str, str]]:
    """Pairs of labels whose drawn extents overlap by more than ``tolerance`` pixels."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts(fig)]
    pairs = []
    for (a, box_a), (b, box_b) in combinations(boxes, 2):
        dx = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
        dy = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
        if dx > tolerance and dy > tolerance:
            pairs.append((a, b))
    return pairs


def drawn_outside(fig: Figure, tolerance: float = 1.0) -> list[str]:
    """The texts, patches and lines of ``fig`` that reach past its edges."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    outside = []
    for ax in fig.axes:
        for artist in ax.get_children():
            if not artist.get_visible() or artist is ax.patch:
                continue
            if isinstance(artist, Spine) and not ax.axison:
                continue  # the axes' frame, not drawn when its axis is off
            if isinstance(artist, Text) and not artist.get_text().strip():
                continue
            if not isinstance(artist, Text | Patch | Line2D):
                continue
            box = artist.get_window_extent(renderer)
            if (
                box.x0 < page.x0 - tolerance
                or box.y0 < page.y0 - tolerance
                or box.x1 > page.x1 + tolerance
                or box.y1 > page.y1 + tolerance
            ):
                outside.append(f"{type(artist).__name__} {getattr(artist, 'get_text', str)()!r}")
    return outside


def test_every_diagram_is_tested():
    assert sorted(REQUIRED) == sorted(diagrams.__all__)


@pytest.fixture(params=sorted(REQUIRED))
def diagram(request):
    return request.param, getattr(diagrams, request.param)()


def test_a_diagram_is_a_figure_with_its_labels(diagram):
    name, fig = diagram
    assert isinstance(fig, Figure)
    shown = {t.get_text() for t in texts(fig)}
    missing = [label for label in REQUIRED[name] if label not in shown]
    assert not missing, f"{name}: labels missing: {missing}; it shows {sorted(shown)}"


def test_a_diagram_renders_to_png(diagram):
    name, fig = diagram
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=60)
    assert buffer.getvalue()[:8] == b"\x89PNG\r\n\x1a\n", f"{name}: not a PNG"


def test_no_two_labels_of_a_diagram_overlap(diagram):
    name, fig = diagram
    pairs = overlapping_labels(fig)
    assert not pairs, f"{name}: labels drawn on top of each other: {pairs}"


def test_nothing_is_drawn_outside_a_diagram(diagram):
    name, fig = diagram
    outside = drawn_outside(fig)
    assert not outside, f"{name}: drawn past the figure's edges: {outside}"


def test_the_checks_see_overlapping_labels_and_a_label_outside():
    fig, ax = diagrams._canvas(3.0, 2.0)
    diagrams._label(ax, 1.0, 1.0, "$h_t$")
    diagrams._label(ax, 1.05, 1.0, "$h_t$")  # on top of the first
    diagrams._label(ax, 2.95, 1.0, "a long label that runs off the page")
    assert ("$h_t$", "$h_t$") in overlapping_labels(fig)
    assert any("runs off" in entry for entry in drawn_outside(fig))


def test_the_outside_check_sees_a_box_past_the_edge():
    fig, ax = diagrams._canvas(3.0, 2.0)
    diagrams._box(ax, 2.9, 1.0, "", w=1.0)
    assert any("FancyBboxPatch" in entry for entry in drawn_outside(fig))


@pytest.mark.parametrize(
    "call",
    [
        lambda: diagrams.rnn_unrolled_diagram(steps=1),
        lambda: diagrams.seq2seq_attention_diagram(source_length=1),
        lambda: diagrams.seq2seq_diagram(source_length=1),
        lambda: diagrams.seq2seq_diagram(target_length=1),
        lambda: diagrams.multi_head_diagram(heads=1),
        lambda: diagrams.bert_input_diagram(["[CLS]", "no", "separator"]),
        lambda: diagrams.bert_pretraining_diagram(["[CLS]", "no", "mask", "[SEP]"], []),
        lambda: diagrams.bert_pretraining_diagram(["[CLS]", "a", "b", "[MASK]"], ["c", "d"]),
        lambda: diagrams.bert_pretraining_diagram(["[CLS]", "[MASK]", "[SEP]"], ["a"]),
        lambda: diagrams.causal_mask_diagram(["alone"]),
    ],
)
def test_diagrams_refuse_sizes_they_cannot_draw(call):
    with pytest.raises(ValueError, match="expected"):
        call()


@pytest.mark.parametrize("steps", [2, 6])
def test_the_unrolled_rnn_has_one_column_per_step(steps):
    fig = diagrams.rnn_unrolled_diagram(steps=steps)
    shown = {t.get_text() for t in texts(fig)}
    assert f"$h_{{{steps}}}$" in shown and f"$h_{{{steps + 1}}}$" not in shown
    assert not overlapping_labels(fig) and not drawn_outside(fig)


@pytest.mark.parametrize(("m", "n"), [(2, 2), (6, 5)])
def test_the_plain_encoder_decoder_has_one_column_per_word(m, n):
    fig = diagrams.seq2seq_diagram(source_length=m, target_length=n)
    shown = {t.get_text() for t in texts(fig)}
    assert f"$s_{{{m}}}$" in shown and f"$s_{{{m + 1}}}$" not in shown
    assert f"$y_{{{n}}}$" in shown and f"$h_{{{n + 1}}}$" not in shown
    assert not overlapping_labels(fig) and not drawn_outside(fig)


def test_the_plain_encoder_decoder_draws_no_attention():
    """Without attention nothing but h_0 = s_m links the encoder to the decoder: no purple."""
    from matplotlib.colors import to_hex

    fig = diagrams.seq2seq_diagram()
    colours = {to_hex(p.get_edgecolor()) for p in fig.axes[0].patches}
    assert diagrams.ATTENTION not in colours
    assert not any("a_{t" in t.get_text() for t in texts(fig))


def test_the_gru_keeps_the_old_state_with_z_as_the_lecture_writes():
    """Lecture 2 writes h_t = (1 - z_t) ⊙ h~_t + z_t ⊙ h_{t-1}: the diagram's 1 - z_t scales the
    candidate, so z_t itself scales the old state, and the reset gate acts after W_h."""
    shown = {t.get_text() for t in texts(diagrams.gru_cell_diagram())}
    assert r"$h_t = (1 - z_t) \odot \tilde h_t + z_t \odot h_{t-1}$" in shown
    assert r"$r_t \odot (W_h h_{t-1} + b_{hh})$" in shown


def test_bahdanau_scores_with_the_previous_state_and_luong_with_the_new_one():
    shown = "\n".join(t.get_text() for t in texts(diagrams.attention_scores_diagram()))
    assert r"\tanh(W_a h_{t-1} + U_a s_k)" in shown and r"\mathrm{score}(h_t, s_k)" in shown
    assert r"[E_y[y_{t-1}] ; c_t]" in shown  # Bahdanau: the context is an input of the step
    assert r"\tanh(W_c [c_t ; h_t] + b_c)" in shown  # Luong: it joins after the step


@pytest.mark.parametrize(
    "tokens",
    [
        ("[CLS]", "a", "b", "[MASK]", "[SEP]"),
        ("[CLS]", "a", "b", "[MASK]", "c", "d", "[MASK]", "e", "f", "[MASK]", "[SEP]"),
    ],
)
def test_the_pretraining_diagram_has_one_mlm_head_per_mask(tokens):
    targets = [f"w{i}" for i in range(tokens.count("[MASK]"))]
    fig = diagrams.bert_pretraining_diagram(tokens, targets)
    shown = [t.get_text() for t in texts(fig)]
    for target in targets:
        assert f"MLM: softmax over $\\mathcal{{V}}$, target {target}" in shown
    assert sum(text.startswith("transform") for text in shown) == len(targets)
    assert sum(text.startswith("pooler") for text in shown) == 1  # NSP: from [CLS] alone
    assert not overlapping_labels(fig) and not drawn_outside(fig)


def wiring(fig: Figure) -> list[tuple[str | None, str | None]]:
    """(from, to) for every arrow of ``fig``: the box (rounded box or circle) that each of its
    two ends touches, named by the text at the box's centre, or None (an elbow's rail, a
    label). What a diagram says feeds what, read back from what it drew."""
    from matplotlib.patches import Circle, FancyArrowPatch, FancyBboxPatch

    ax = fig.axes[0]
    centres = {}
    for t in texts(fig):
        x, y = t.get_position()
        centres[round(x, 6), round(y, 6)] = t.get_text()
    boxes = []
    for patch in ax.patches:
        if isinstance(patch, FancyBboxPatch):
            box, pad = patch.get_bbox(), patch.get_boxstyle().pad
            x0, y0, x1, y1 = box.x0 - pad, box.y0 - pad, box.x1 + pad, box.y1 + pad
        elif isinstance(patch, Circle):
            (x, y), r = patch.center, patch.radius
            x0, y0, x1, y1 = x - r, y - r, x + r, y + r
        else:
            continue
        name = centres.get((round((x0 + x1) / 2, 6), round((y0 + y1) / 2, 6)))
        if name is not None:
            boxes.append((name, x0, y0, x1, y1))

    def touched(point: tuple[float, float], tolerance: float = 0.03) -> str | None:
        x, y = point
        for name, x0, y0, x1, y1 in boxes:
            if x0 - tolerance <= x <= x1 + tolerance and y0 - tolerance <= y <= y1 + tolerance:
                return name
        return None

    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    return [(touched(a._posA_posB[0]), touched(a._posA_posB[1])) for a in arrows]


def reachable(edges: list[tuple[str | None, str | None]], start: str) -> set[str]:
    """The boxes that a path of arrows leads to from ``start``."""
    seen, todo = set(), [start]
    while todo:
        here = todo.pop()
        for a, b in edges:
            if a == here and b is not None and b not in seen:
                seen.add(b)
                todo.append(b)
    return seen


def test_the_wiring_check_reads_arrows_between_boxes():
    fig, ax = diagrams._canvas(4.0, 2.0)
    a, b = diagrams._box(ax, 1.0, 1.0, "a"), diagrams._box(ax, 3.0, 1.0, "b")
    diagrams._arrow(ax, a.right, b.left)
    diagrams._arrow(ax, (2.0, 0.2), b.bottom)  # from no box
    assert wiring(fig) == [("a", "b"), (None, "b")]


def test_stacked_bilstm_feeds_both_directions_of_layer_2_with_the_concatenation():
    """torch.nn.LSTM(bidirectional=True, num_layers=2): layer 2's input at t is
    [h→^1_t; h←^1_t], in both directions; the biLM of ELMo keeps its directions apart."""
    import torch

    def name(arrow: str, layer: int, t: str = "t") -> str:
        return rf"$\over{arrow}arrow{{h}}{{}}^{{{layer}}}_{{{t}}}$"

    concat = r"$[\overrightarrow{h}{}^{1}_{t};\ \overleftarrow{h}{}^{1}_{t}]$"
    edges = wiring(diagrams.stacked_bilstm_diagram())
    for arrow in ("right", "left"):
        assert (name(arrow, 1), concat) in edges
        assert (concat, name(arrow, 2)) in edges
    assert name("right", 2) in reachable(edges, name("left", 1))
    assert name("left", 2) in reachable(edges, name("right", 1))
    # what the diagram claims of torch: layer 2 of each direction reads 2H numbers
    H = 3
    lstm = torch.nn.LSTM(5, H, num_layers=2, bidirectional=True)
    assert lstm.weight_ih_l1.shape[1] == lstm.weight_ih_l1_reverse.shape[1] == 2 * H

    bilm = wiring(diagrams.bilm_diagram())
    forward_2, backward_2 = r"$\overrightarrow{h}_{k,2}$", r"$\overleftarrow{h}_{k,2}$"
    assert forward_2 not in reachable(bilm, r"$\overleftarrow{h}_{k,1}$")
    assert backward_2 not in reachable(bilm, r"$\overrightarrow{h}_{k,1}$")
    assert forward_2 in reachable(bilm, r"$\overrightarrow{h}_{k,1}$")


def test_the_bilm_diagram_draws_the_wiring_of_course_models_bilm():
    """course.models.bilm.BiLM: layer 2 of each direction is its own nn.LSTM of input size D,
    reading its own direction's layer 1 only (not 2D, as a bidirectional nn.LSTM's would)."""
    from course.models.bilm import BiLM

    model = BiLM(vocab_size=10, dim=4, num_layers=2)
    for lstms in (model.forward_lstms, model.backward_lstms):
        assert not lstms[1].bidirectional and lstms[1].input_size == model.dim


def test_the_beam_diagram_keeps_what_course_decoding_keeps():
    """The diagram's table run through course.decoding.beam_search (k = 2, alpha = 0): the
    prefixes that it extends at steps 2 and 3 are the ones the diagram keeps, and its output
    is the one drawn in orange; greedy search, which the lecture says starts with yes, ends
    worse."""
    import math

    import torch

    from course.decoding import beam_search, greedy_search

    table, words, bos = diagrams._BEAM_LOG_PROBS, ["</s>", "yes", "ok"], 3
    for row in table.values():
        assert sorted(row) == sorted(words)
        assert abs(sum(math.exp(lp) for lp in row.values()) - 1) < 0.01
    steps = diagrams._beam_steps(table, 2)
    assert len(steps) == 3 and all(sum(c.kept for c in step) == 2 for step in steps)
    extended = []

    def step(tokens, prefixes):
        prefixes = torch.cat([prefixes, tokens[:, None]], 1)  # <s> first
        rows = [tuple(words[i] for i in row[1:]) for row in prefixes.tolist()]
        extended.append({row for row in rows})
        log_probs = [[table.get(row, {}).get(w, -math.inf) for w in words] for row in rows]
        return torch.tensor(log_probs, dtype=torch.float64), prefixes

    start = torch.zeros(1, 0, dtype=torch.long)
    found = beam_search(step, start, batch_size=1, bos=bos, eos=0, beam_size=2, max_len=3, alpha=0)
    assert extended[1:] == [{c.words for c in s if c.kept} for s in steps[:2]]
    best = max((c for c in steps[-1] if c.kept), key=lambda c: c.total)
    assert tuple(words[i] for i in found[0].tokens) == best.words == ("ok", "ok", "</s>")
    assert math.isclose(found[0].log_prob, best.total)
    greedy = greedy_search(step, start, batch_size=1, bos=bos, eos=0, max_len=3)[0]
    assert [words[i] for i in greedy.tokens][0] == "yes" and greedy.log_prob < best.total

    fig = diagrams.beam_search_diagram()
    shown = {t.get_text() for t in texts(fig)}
    for s in steps:
        for c in s:
            assert f"{c.words[-1]}  {c.total:.1f}".replace("-", "\u2212") in shown
    from matplotlib.colors import to_hex
    from matplotlib.patches import FancyBboxPatch

    orange = [p for p in fig.axes[0].patches
              if isinstance(p, FancyBboxPatch) and to_hex(p.get_edgecolor()) == diagrams.BEAM]  # fmt: skip
    assert len(orange) == len(best.words)


def test_the_gpt_diagram_draws_the_model_that_course_models_gpt_builds():
    """Pre-norm blocks (LN before each sublayer, the residual added after it), a final
    LayerNorm, and an output layer without bias that is the token table: as GPT's code does."""
    from torch import nn

    from course.models.gpt import GPT, GPTConfig

    model = GPT(GPTConfig())
    assert model.config.norm_first and isinstance(model.final_norm, nn.LayerNorm)
    assert model.lm_head.weight is model.token.weight and model.lm_head.bias is None
    assert model.config.activation.startswith("gelu")

    fig = diagrams.gpt_stack_diagram()
    edges = wiring(fig)
    attention = "masked multi-head self-attention\n" r"(causal: position $t$ reads $1, \dots, t$)"
    ffn = r"feed-forward $\mathrm{FFN}$ (GELU)"
    for edge in [
        (r"token $E_{\mathrm{tok}}[w_t]$", "$+$"),
        (r"position $E_{\mathrm{pos}}[t]$", "$+$"),
        (r"$\mathrm{LN}_1$", attention),
        (attention, "$+$"),
        (r"$\mathrm{LN}_2$", ffn),
        (ffn, "$+$"),
        (r"final $\mathrm{LN}_f$", r"output layer $\cdot\, E_{\mathrm{tok}}^\top$, no bias"),
    ]:
        assert edge in edges, f"no arrow {edge}"
    # each residual add reads its sublayer and, by a path around it, the sublayer's input
    assert edges.count((attention, "$+$")) == edges.count((ffn, "$+$")) == 1
    assert edges.count((None, "$+$")) == 2
    # from the bottom up: LN_1, attention, LN_2, FFN, LN_f, the output layer
    height = {t.get_text(): t.get_position()[1] for t in texts(fig)}
    order = [r"$\mathrm{LN}_1$", attention, r"$\mathrm{LN}_2$", ffn, r"final $\mathrm{LN}_f$",
             r"output layer $\cdot\, E_{\mathrm{tok}}^\top$, no bias"]  # fmt: skip
    assert [height[name] for name in order] == sorted(height[name] for name in order)
    # the tie: a path from the token table to the output layer
    assert (None, r"output layer $\cdot\, E_{\mathrm{tok}}^\top$, no bias") in edges


def test_the_kv_cache_diagram_computes_only_position_t_and_attends_over_all_t_keys():
    edges = wiring(diagrams.kv_cache_diagram())
    attention = r"$o^{(l)}_t = \mathrm{softmax}(q^{(l)}_t K^{(l)\top}_{1..t} / \sqrt{d_k})\, V^{(l)}_{1..t}$"
    cached = ["1", "2", "t-1"]
    for j in [*cached, "t"]:  # every key and every value, the cached ones and the new one
        assert (f"$k_{{{j}}}$", attention) in edges and (f"$v_{{{j}}}$", attention) in edges
    assert (r"$q^{(l)}_t = W^Q z_t$", attention) in edges
    assert (r"$k^{(l)}_t = W^K z_t$", "$k_{t}$") in edges  # append
    assert (r"$v^{(l)}_t = W^V z_t$", "$v_{t}$") in edges
    # nothing is computed again for the cached positions: no arrow ends at their keys or values
    for j in cached:
        assert not [e for e in edges if e[1] in (f"$k_{{{j}}}$", f"$v_{{{j}}}$")]
    # the three projections of position t are the only ones
    shown = {t.get_text() for t in texts(diagrams.kv_cache_diagram())}
    assert not [s for s in shown if "q_{1" in s or "q^{(l)}_{1" in s]
