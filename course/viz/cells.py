"""Showing what one LSTM cell does, character by character (Lecture 2).

- :func:`cell_activation_html`: a text coloured by one cell's activation (HTML);
- :func:`interact_cell_activations`: a thin ``interact`` wrapper with a cell and a snippet menu.

The cells are found by ``course.analysis.interpret``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

__all__ = ["cell_activation_html", "interact_cell_activations"]


def _luminance(rgb: tuple[int, int, int]) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0 for black, 1 for white)."""
    linear = [c / 255 / 12.92 if c <= 10 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(first: tuple[int, int, int], second: tuple[int, int, int]) -> float:
    """WCAG 2 contrast ratio of two sRGB colours, from 1 (the same) to 21 (black on white)."""
    light, dark = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


BLACK, WHITE = (0, 0, 0), (255, 255, 255)


def activation_colours(value: float) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """(background, text) for a value in [-1, 1]: red for positive, blue for negative, white
    for 0, and black or white text, whichever contrasts more (at least 4.5:1 everywhere)."""
    value = float(np.clip(value, -1.0, 1.0))
    strength = int(round(255 * (1 - abs(value))))
    background = (255, strength, strength) if value > 0 else (strength, strength, 255)
    text = max((BLACK, WHITE), key=lambda colour: contrast_ratio(background, colour))
    return background, text


def cell_activation_html(text: str, values: Sequence[float], *, title: str = "") -> str:
    """HTML that shows ``text`` in a monospace block, each character coloured by its value.

    values: (N,) numbers in [-1, 1], one per character (e.g. tanh(c_t) of one LSTM cell);
    red for positive, blue for negative, white for 0, with black or white text, whichever
    reads better on the colour. Newlines are kept.
    """
    from html import escape

    values = np.asarray(values, dtype=float)
    if values.shape != (len(text),):
        raise ValueError(
            f"values: expected shape ({len(text)},), one per character, got {values.shape}"
        )
    spans = []
    for ch, value in zip(text, values, strict=True):
        background, ink = activation_colours(value)
        style = f"background:rgb({','.join(map(str, background))})"
        if ink != BLACK:
            style += f";color:rgb({','.join(map(str, ink))})"
        if ch == "\n":
            spans.append(f'<span style="{style}"> </span>\n')
        else:
            spans.append(f'<span style="{style}">{escape(ch)}</span>')
    heading = f"<div><b>{escape(title)}</b></div>" if title else ""
    return (
        f'{heading}<pre style="font-family:monospace;line-height:1.25;color:#000">'
        + "".join(spans)
        + "</pre>"
    )


def interact_cell_activations(
    render: Callable[[int, str], Any],
    cells: Sequence[int] | Sequence[tuple[str, int]],
    snippets: Mapping[str, str],
) -> Any:
    """A cell menu and a snippet menu around ``render(cell, snippet_text)`` (JupyterLab).

    ``cells`` lists cell indices, or (label, cell) pairs such as ``("inside string (cell 74)",
    74)`` so that the menu names what each cell is for; a cell listed twice appears once.
    ``render`` returns something displayable (e.g. ``IPython.display.HTML``); it is shown
    for the selected cell index and snippet. Returns what ``ipywidgets.interact`` returns.
    """
    import ipywidgets as widgets
    from IPython.display import display

    options: dict[int, str] = {}
    for entry in cells:
        label, cell = entry if isinstance(entry, tuple) else (f"cell {entry}", entry)
        options.setdefault(int(cell), label)
    if not options:
        raise ValueError("cells: expected at least one cell to choose from")

    def show(cell: int, snippet: str) -> None:
        display(render(cell, snippets[snippet]))

    choices = [(label, cell) for cell, label in options.items()]
    return widgets.interact(
        show,
        cell=widgets.Dropdown(options=choices, value=choices[0][1], description="cell"),
        snippet=widgets.Dropdown(options=list(snippets), description="snippet"),
    )
