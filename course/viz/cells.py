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
