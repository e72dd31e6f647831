"""Attention views that draw offline: bertviz's head view and model view (Vig, 2019).

For Units 6 and 7. bertviz draws its views with d3 and loads require.js, d3 and jQuery from
cdnjs, so without a network a view stays blank. These functions call bertviz (its HTML and
JavaScript, unchanged) and replace the three downloads with copies that ship in
``course/viz/js/`` (sources and licences in its README), written into the view itself::

    from course.viz.attention_views import head_view, model_view

    head_view(weights, tokens)      # weights: one (B, heads, T, T) array or tensor per layer
    model_view(weights, tokens)     # every layer and head at once, as thumbnails
    head_view(                      # an encoder-decoder Transformer (Unit 6)
        encoder_attention=enc,      # per layer (B, heads, S, S)
        decoder_attention=dec,      # per layer (B, heads, T, T)
        cross_attention=cross,      # per layer (B, heads, T, S): decoder queries, encoder keys
        encoder_tokens=source,
        decoder_tokens=target,
    )

Each function returns an ``IPython.display.HTML``; as the last expression of a cell it is
drawn. Every view is self-contained: it requests nothing from any network or server, needs no
other cell, and works whatever order the cells run in, in JupyterLab and on the website. The
cost is size: each view carries the three libraries (about 410 KB) plus its weights (about 7
bytes per number, rounded to 4 decimals); in a notebook, whose JSON escapes the scripts, two
views of 2 layers x 4 heads x 10 tokens take 0.95 MB.

In JupyterLab a view draws when its cell runs. JupyterLab runs the scripts of an HTML output
only when it trusts the output: what a cell produces in the current session is trusted, and so
is a notebook the student saved. A notebook opened as shipped (an executed lecture of the
course) is not trusted: each view shows an empty layer menu and, in place of the picture, the
line "This attention view is drawn by JavaScript, which has not run. In JupyterLab, run this
cell (or trust the notebook: command palette, Trust Notebook)." Running the cell draws it, as
does trusting the notebook. Where the scripts run (trusted outputs, the website) the view's
script removes that line before anyone sees it.
"""

from __future__ import annotations

import functools
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from course.checks import ShapeMismatch, TypeMismatch, as_numpy

if TYPE_CHECKING:  # imported for type hints only
    from IPython.display import HTML

__all__ = ["head_view", "model_view"]

JS = Path(__file__).resolve().parent / "js"
CDNJS = "https://cdnjs.cloudflare.com/ajax/libs/"
# What bertviz 1.4 loads from cdnjs, and the file in JS that replaces it.
REQUIRE_JS = ("require.js/2.3.6/require.min.js", "require-2.3.6.js")
MODULES = {  # require.js module name: (cdnjs path, file)
    "d3": ("d3/5.7.0/d3.min", "d3-5.7.0.min.js"),
    "jquery": ("jquery/2.0.0/jquery.min", "jquery-2.1.0.min.js"),
}
DECIMALS = 4  # weights are drawn as opacities: 1e-4 is far below what the eye sees
# shown where the view's scripts do not run (an untrusted notebook in JupyterLab)
HINT = (
    "This attention view is drawn by JavaScript, which has not run. In JupyterLab, run this "
    "cell (or trust the notebook: command palette, Trust Notebook)."
)

Attention = Sequence[Any]  # one (B, heads, rows, cols) torch tensor or NumPy array per layer

# Registers each library with require.js under the name bertviz asks for. d3 5.7 calls
# define(deps, factory) without a name, which require.js accepts only from a file it fetched
# itself; here the library runs inline, so it is handed a define that adds the name. jQuery
# names itself, and is then taken off the page's globals ($, jQuery), which bertviz never uses.
_REGISTER = """\
var named = function (name) {
  var register = function () {
    var args = Array.prototype.slice.call(arguments);
    if (typeof args[0] === "string") { args.shift(); }
    window.define.apply(window, [name].concat(args));
  };
  register.amd = window.define.amd;
  return register;
};"""
_RELEASE_JQUERY = (
    "if (window.jQuery && window.jQuery.noConflict) { window.jQuery.noConflict(true); }"
)


# -- the libraries, inline ------------------------------------------------------------------


def _read(name: str) -> str:
    text = (JS / name).read_text(encoding="utf-8")
    if re.search(r"</script|<!--", text, re.I):  # would end the <script> element early
        raise RuntimeError(f"{JS / name} contains '</script' or '<!--'; it cannot be inlined")
    return text


@functools.cache
def _libraries() -> str:
    """Two <script> elements: require.js, then d3 and jQuery registered as modules."""
    body = [_REGISTER]
    for name, (_, file) in MODULES.items():
        body.append(f"(function (define) {{\n{_read(file)}\n}}).call(window, named({name!r}));")
    body.append(_RELEASE_JQUERY)
    inner = "\n".join(body)
    return (
        f"<script>/* {REQUIRE_JS[1]}: see course/viz/js/README.md */\n"
        f"{_read(REQUIRE_JS[1])}\n</script>\n"
        f"<script>/* d3 and jQuery for bertviz: see course/viz/js/README.md */\n"
        f"(function () {{\n{inner}\n}})();\n</script>\n"
    )


_UNNAMED_MENU = re.compile(r"(\w+): <select\b(?![^>]*\baria-label=)")


def _offline(html: str) -> str:
    """bertviz's HTML with its cdnjs downloads replaced by the shipped libraries, inline, and
    each menu named for screen readers by the word before it ("Layer: <select ...>")."""
    html = _UNNAMED_MENU.sub(lambda m: f'{m[1]}: <select aria-label="{m[1]}"', html)
    tag = f'<script src="{CDNJS}{REQUIRE_JS[0]}"></script>'
    if html.count(tag) != 1:
        raise RuntimeError(
            f"bertviz's view no longer loads {CDNJS}{REQUIRE_JS[0]} once: "
            "update course/viz/attention_views.py (REQUIRE_JS) and course/viz/js/"
        )
    html = html.replace(tag, _libraries())
    for name, (path, _) in MODULES.items():
        url = f"'{CDNJS}{path}'"
        if url not in html:
            raise RuntimeError(
                f"bertviz's view no longer loads {name} from {CDNJS}{path}: "
                "update course/viz/attention_views.py (MODULES) and course/viz/js/"
            )
        # never fetched (the module is defined above); if it were, it would say why
        html = html.replace(
            url, f"'data:text/javascript,throw Error(\"{name} was not defined inline\")'"
        )
    left = sorted(set(re.findall(re.escape(CDNJS) + r"[\w./@-]*", html)))
    if left:
        raise RuntimeError(f"bertviz's view loads {left}, which course/viz/js/ does not hold")
    return html


# -- checking what the course's models give ----------------------------------------------------


def _tokens(tokens: Any, name: str) -> list[str]:
    if isinstance(tokens, str):
        raise TypeMismatch(
            f"{name}: expected a list of strings, one per position, got one string "
            f"{tokens[:40]!r} (split it into tokens first)"
        )
    if not isinstance(tokens, Sequence) or not all(isinstance(t, str) for t in tokens):
        raise TypeMismatch(f"{name}: expected a list of strings, one per position")
    if not tokens:
        raise ValueError(f"{name}: expected at least one token, got none")
    unsafe = [t for t in tokens if re.search(r"</script|<!--", t, re.I)]
    if unsafe:  # bertviz writes the tokens into a <script> element, which they would break
        raise ValueError(f"{name}: {unsafe[0]!r} cannot be shown ('</script' and '<!--' cannot)")
    return list(tokens)


def _layers(
    attention: Any, name: str, *, rows: int, cols: int, example: int, tokens: str
) -> list[torch.Tensor]:
    """Check one (B, heads, rows, cols) array per layer; return example ``example`` of each as
    a (1, heads, rows, cols) float64 tensor rounded to DECIMALS, as bertviz takes it."""
    expected = f"(B, heads, {rows}, {cols})"
    if hasattr(attention, "shape"):
        raise TypeMismatch(
            f"{name}: expected a list with one array per layer, each {expected}, got a single "
            f"array of shape {tuple(attention.shape)} (one layer: [{name}]; a stack with "
            f"layers first: list({name}))"
        )
    if not isinstance(attention, (list, tuple)) or not attention:
        raise TypeMismatch(
            f"{name}: expected a non-empty list with one array per layer, each {expected}, "
            f"got {type(attention).__name__}"
        )
    layers = []
    for index, weights in enumerate(attention):
        where = f"{name}[{index}] (layer {index})"
        array = as_numpy(weights, where)
        if array.dtype.kind not in "fiu":
            raise TypeMismatch(f"{where}: expected real numbers, got dtype {array.dtype}")
        if array.ndim != 4 or array.shape[2:] != (rows, cols):
            raise ShapeMismatch(
                f"{where}: expected shape {expected} for {tokens}, got {tuple(array.shape)}"
            )
        heads = layers[0].shape[1] if layers else array.shape[1]
        if array.shape[1] != heads or heads == 0:
            raise ShapeMismatch(
                f"{where}: has {array.shape[1]} heads, layer 0 has {heads}; "
                f"expected shape (B, {heads}, {rows}, {cols})"
            )
        if not -array.shape[0] <= example < array.shape[0]:
            raise ValueError(
                f"{where}: example {example} is out of range for a batch of {array.shape[0]}"
            )
        chosen = torch.as_tensor(array[example][None], dtype=torch.float64)  # (1, h, rows, cols)
        if not torch.isfinite(chosen).all():
            raise ValueError(f"{where}: example {example} has NaN or infinite weights")
        if chosen.min() < -1e-6 or chosen.max() > 1 + 1e-6:
            raise ValueError(
                f"{where}: attention weights lie in [0, 1], got values from "
                f"{chosen.min().item():.3g} to {chosen.max().item():.3g}"
            )
        layers.append(torch.round(chosen.clamp(0, 1), decimals=DECIMALS))  # (1, h, rows, cols)
    return layers


def _same_depth(stacks: dict[str, list[torch.Tensor]]) -> tuple[int, int]:
    """(layers, heads) shared by every attention given, or an error naming the odd one."""
    (first, reference), *others = stacks.items()
    depth, heads = len(reference), reference[0].shape[1]
    for name, layers in others:
        if len(layers) != depth or layers[0].shape[1] != heads:
            raise ShapeMismatch(
                f"{name}: {len(layers)} layers of {layers[0].shape[1]} heads, but {first} has "
                f"{depth} layers of {heads} heads; the view shows them with one layer menu"
            )
    return depth, heads


def _indices(values: Sequence[int] | None, count: int, name: str, what: str) -> list[int] | None:
    if values is None:
        return None
    values = list(values)
    bad = [v for v in values if not isinstance(v, int) or not 0 <= v < count]
    if not values or bad:
        raise ValueError(
            f"{name}: expected {what} indices in [0, {count}), got {values}"
            + (f" ({bad} out of range)" if bad else "")
        )
    return values


def _arguments(
    attention: Attention | None,
    tokens: Sequence[str] | None,
    sentence_b_start: int | None,
    encoder_attention: Attention | None,
    decoder_attention: Attention | None,
    cross_attention: Attention | None,
    encoder_tokens: Sequence[str] | None,
    decoder_tokens: Sequence[str] | None,
    example: int,
) -> tuple[dict[str, Any], int, int]:
    """bertviz's keyword arguments, checked, and the number of layers and heads."""
    pair = (encoder_attention, decoder_attention, cross_attention)
    if attention is not None:
        if any(a is not None for a in (*pair, encoder_tokens, decoder_tokens)):
            raise ValueError(
                "give either attention and tokens (self-attention) or the encoder-decoder "
                "arguments (encoder_attention, decoder_attention, cross_attention, "
                "encoder_tokens, decoder_tokens), not both"
            )
        if tokens is None:
            raise ValueError("attention: tokens are required, one per position")
        words = _tokens(tokens, "tokens")
        n = len(words)
        layers = _layers(
            attention, "attention", rows=n, cols=n, example=example, tokens=f"{n} tokens"
        )
        if sentence_b_start is not None and not (
            isinstance(sentence_b_start, int) and 0 < sentence_b_start < n
        ):
            raise ValueError(
                f"sentence_b_start: expected the position of sentence B's first token, in "
                f"[1, {n}), got {sentence_b_start}"
            )
        depth, heads = _same_depth({"attention": layers})
        arguments = {"attention": layers, "tokens": words, "sentence_b_start": sentence_b_start}
        return arguments, depth, heads
    if all(a is None for a in pair):
        raise ValueError(
            "no attention given: pass attention and tokens, or encoder_attention, "
            "decoder_attention and/or cross_attention with encoder_tokens and decoder_tokens"
        )
    if tokens is not None or sentence_b_start is not None:
        raise ValueError("tokens and sentence_b_start go with attention (self-attention) only")
    arguments: dict[str, Any] = {}
    stacks: dict[str, list[torch.Tensor]] = {}
    source = _tokens(encoder_tokens, "encoder_tokens") if encoder_tokens is not None else None
    target = _tokens(decoder_tokens, "decoder_tokens") if decoder_tokens is not None else None
    for name, value, needs in (
        ("encoder_attention", encoder_attention, ("encoder_tokens",)),
        ("decoder_attention", decoder_attention, ("decoder_tokens",)),
        ("cross_attention", cross_attention, ("decoder_tokens", "encoder_tokens")),
    ):
        if value is None:
            continue
        given = {"encoder_tokens": source, "decoder_tokens": target}
        missing = [k for k in needs if given[k] is None]
        if missing:
            raise ValueError(f"{name}: {' and '.join(missing)} required")
        rows, cols = (len(given[needs[0]]), len(given[needs[-1]]))
        what = " and ".join(f"{len(given[k])} {k}" for k in dict.fromkeys(needs))
        stacks[name] = _layers(value, name, rows=rows, cols=cols, example=example, tokens=what)
    arguments.update(stacks, encoder_tokens=source, decoder_tokens=target)
    depth, heads = _same_depth(stacks)
    return arguments, depth, heads


def _bertviz() -> Any:
    try:
        import bertviz
    except ImportError as error:  # pragma: no cover - bertviz is in the course environment
        raise ImportError(
            "the attention views need bertviz, which the course environment installs "
            "(pip install -r requirements-student.txt)"
        ) from error
    return bertviz


def _html(markup: str, label: str) -> HTML:
    """The view, offline, after a line that says how to see it where its scripts do not run
    (an untrusted notebook in JupyterLab); the view's own script removes the line. The view
    scrolls sideways where it is wider than the page (the model view is 970 pixels wide), with
    the keyboard too: it is in the tab order, a region named ``label``, which tells it from the
    other views of a page (a screen reader lists the regions by name)."""
    from IPython.display import HTML

    hint = f"course-hint-{uuid.uuid4().hex}"
    remove = f'var e = document.getElementById("{hint}"); if (e) {{ e.remove(); }}'
    return HTML(
        f'<div class="course-attention-view" style="overflow-x: auto" tabindex="0" '
        f'role="region" aria-label="{label}">\n'
        f'<p id="{hint}">{HINT}</p>\n{_offline(markup)}'
        f"<script>(function () {{ {remove} }})();</script>\n</div>\n"
    )


# -- the views --------------------------------------------------------------------------------


def head_view(
    attention: Attention | None = None,
    tokens: Sequence[str] | None = None,
    *,
    sentence_b_start: int | None = None,
    encoder_attention: Attention | None = None,
    decoder_attention: Attention | None = None,
    cross_attention: Attention | None = None,
    encoder_tokens: Sequence[str] | None = None,
    decoder_tokens: Sequence[str] | None = None,
    example: int = 0,
    layer: int = 0,
    heads: Sequence[int] | None = None,
) -> HTML:
    """bertviz's head view, self-contained: one layer at a time, each query token linked to the
    tokens it attends to (line opacity = weight), one colour per head.

    Self-attention: ``attention`` has one (B, heads, T, T) torch tensor or NumPy array per layer
    (weights[b, h, query, key]) and ``tokens`` T strings; ``sentence_b_start`` (BERT's sentence
    pairs) adds a menu of sentence A/B blocks. Encoder-decoder: ``encoder_attention`` per layer
    (B, heads, S, S), ``decoder_attention`` (B, heads, T, T) and ``cross_attention``
    (B, heads, T, S), any of them, with ``encoder_tokens`` (S) and ``decoder_tokens`` (T); a menu
    picks which is drawn. Every stack has the same number of layers and heads.

    ``example`` picks the batch element (B may be 1), ``layer`` the layer shown first and
    ``heads`` the heads shown first (default all). Wrong shapes, tokens or indices raise an
    error naming the argument and the layer.

    Returns an ``IPython.display.HTML`` that requests nothing from any network (about 410 KB
    of libraries plus the weights). In JupyterLab it draws when the cell runs. In a notebook
    opened as shipped (not trusted) JupyterLab runs no script: the view stays blank under a
    line saying so until the cell runs again (or the notebook is trusted: command palette,
    *Trust Notebook*).
    """
    arguments, depth, count = _arguments(
        attention, tokens, sentence_b_start, encoder_attention, decoder_attention,
        cross_attention, encoder_tokens, decoder_tokens, example,
    )  # fmt: skip
    if not isinstance(layer, int) or not 0 <= layer < depth:
        raise ValueError(f"layer: expected a layer index in [0, {depth}), got {layer}")
    chosen = _indices(heads, count, "heads", "head")
    view = _bertviz().head_view(**arguments, layer=layer, heads=chosen, html_action="return")
    return _html(view.data, f"attention head view, layer {layer}")


def model_view(
    attention: Attention | None = None,
    tokens: Sequence[str] | None = None,
    *,
    sentence_b_start: int | None = None,
    encoder_attention: Attention | None = None,
    decoder_attention: Attention | None = None,
    cross_attention: Attention | None = None,
    encoder_tokens: Sequence[str] | None = None,
    decoder_tokens: Sequence[str] | None = None,
    example: int = 0,
    layers: Sequence[int] | None = None,
    heads: Sequence[int] | None = None,
    display_mode: str = "light",
) -> HTML:
    """bertviz's model view, self-contained: a grid of thumbnails, one per layer (rows) and
    head (columns); clicking a thumbnail opens that head with its tokens.

    Takes the attention and tokens as :func:`head_view` does (self-attention, or any of
    encoder, decoder and cross attention). ``example`` picks the batch element, ``layers`` and
    ``heads`` the rows and columns to show (default all: fewer keep a long input responsive),
    ``display_mode`` is "light" or "dark".

    Returns an ``IPython.display.HTML`` that requests nothing from any network. In JupyterLab
    it draws when the cell runs; in a notebook opened as shipped (not trusted) it stays blank,
    under a line saying so, until the cell runs again or the notebook is trusted.
    """
    arguments, depth, count = _arguments(
        attention, tokens, sentence_b_start, encoder_attention, decoder_attention,
        cross_attention, encoder_tokens, decoder_tokens, example,
    )  # fmt: skip
    if display_mode not in ("light", "dark"):
        raise ValueError(f"display_mode: expected 'light' or 'dark', got {display_mode!r}")
    view = _bertviz().model_view(
        **arguments,
        include_layers=_indices(layers, depth, "layers", "layer"),
        include_heads=_indices(heads, count, "heads", "head"),
        display_mode=display_mode,
        html_action="return",
    )
    return _html(view.data, "attention model view")
