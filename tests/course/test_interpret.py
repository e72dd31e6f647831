"""Tests for course.analysis.interpret (code features, LSTM states, best cells) and the cell widget."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from course.analysis.interpret import (
    FEATURES,
    CellMatch,
    best_cells,
    code_features,
    correlations,
    lstm_states,
)
from course.checks import assert_close
from course.models.recurrent import CharLSTM
from course.viz.cells import (
    BLACK,
    WHITE,
    activation_colours,
    cell_activation_html,
    contrast_ratio,
    interact_cell_activations,
)


def _row(values):
    return "".join(str(int(v)) for v in values)


def test_code_features_on_a_small_program():
    text = "f(a, \"x(#\")  # c(\n  y = '''q\nr''' + [1]\n"
    v = code_features(text)
    assert set(v) == set(FEATURES) and all(a.shape == (len(text),) for a in v.values())
    line1 = text.index("\n")
    assert _row(v["inside string"][:line1]) == "00000111100000000000"[:line1]
    assert _row(v["inside comment"][:line1]) == "0" * 13 + "1" * (line1 - 13)
    assert _row(v["bracket depth"][:line1]) == "01111111110000000000"[:line1]
    start = text.index("'''")
    end = text.index("'''", start + 3)
    assert np.all(v["inside string"][start:end] == 1)
    assert np.all(v["inside string"][end : end + 3] == 0)
    assert v["indentation"][line1 + 3] == 2 and v["indentation"][line1 + 1] == 1
    assert v["position in line"][line1] == 0 and v["position in line"][line1 + 1] == 1
    assert v["bracket depth"][-3] == 1 and v["bracket depth"][-1] == 0


def test_escaped_quotes_do_not_close_a_string():
    v = code_features('s = "a\\"b" + c')
    assert _row(v["inside string"]) == "00001111100000"


def test_lstm_states_match_nn_lstm():
    torch.manual_seed(0)
    for embedding_dim in (None, 3):
        model = CharLSTM(7, 5, embedding_dim=embedding_dim).double()
        ids = torch.randint(0, 7, (12,))
        hs, cs = lstm_states(model, ids)
        _, (h_last, c_last) = model(ids[None])
        assert hs.shape == cs.shape == (12, 5)
        assert_close("h_T", hs[-1], h_last[0, 0], atol=1e-12)
        assert_close("c_T", cs[-1], c_last[0, 0], atol=1e-12)
        first_half, _ = lstm_states(model, ids[:6])
        assert_close("prefix", first_half, hs[:6], atol=1e-12)


def test_correlations_and_best_cells():
    rng = np.random.default_rng(0)
    labels = rng.random(500) < 0.3
    acts = rng.normal(size=(500, 4))
    acts[:, 2] = -labels.astype(float) + 0.1 * rng.normal(size=500)
    acts[:, 0] = 1.0  # constant
    r = correlations(acts, labels)
    assert r.shape == (4,) and r[0] == 0.0 and r[2] < -0.9
    assert_close("r", r[1], np.corrcoef(acts[:, 1], labels)[0, 1], atol=1e-12)
    found = best_cells(acts, {"quote": labels})
    assert isinstance(found["quote"], CellMatch)
    assert found["quote"].cell == 2 and found["quote"].r == pytest.approx(r[2])
    with pytest.raises(ValueError):
        correlations(acts, labels[:10])


def test_cell_activation_html_colours_every_character():
    html = cell_activation_html("a<b\nc", [1.0, -1.0, 0.0, 0.5, 2.0], title="cell 3")
    assert html.count("<span") == 5 and "&lt;" in html and "cell 3" in html
    assert "rgb(255,0,0)" in html and "rgb(0,0,255)" in html and "rgb(255,255,255)" in html
    with pytest.raises(ValueError, match="one per character"):
        cell_activation_html("abc", [0.0])


def test_cell_activation_text_reads_on_every_colour():
    # WCAG AA for normal text: 4.5:1. Black on pure blue is 2.4:1, so strong negative values
    # get white text; every value of the ramp gets at least 4.5:1.
    assert contrast_ratio(BLACK, WHITE) == pytest.approx(21.0)
    assert contrast_ratio((0, 0, 255), BLACK) == pytest.approx(2.44, abs=0.01)
    ratios = []
    for value in np.linspace(-1.0, 1.0, 401):
        background, text = activation_colours(value)
        ratios.append(contrast_ratio(background, text))
    assert min(ratios) >= 4.5, min(ratios)
    assert activation_colours(-1.0) == ((0, 0, 255), WHITE)
    assert activation_colours(0.0) == ((255, 255, 255), BLACK)
    html = cell_activation_html("ab", [-1.0, 1.0])
    assert "background:rgb(0,0,255);color:rgb(255,255,255)" in html


def test_interact_cell_activations_renders_the_selected_cell(monkeypatch):
    import ipywidgets

    calls = []

    def fake_interact(function, **widgets):
        function(widgets["cell"].value, widgets["snippet"].value)
        return widgets

    monkeypatch.setattr(ipywidgets, "interact", fake_interact)
    shown = interact_cell_activations(
        lambda cell, text: calls.append((cell, text)), [4, 7], {"one": "x = 1", "two": "y"}
    )
    assert calls == [(4, "x = 1")]
    assert [tuple(option) for option in shown["cell"].options] == [("cell 4", 4), ("cell 7", 7)]


def test_interact_cell_activations_names_cells_once(monkeypatch):
    """(label, cell) pairs label the menu; a cell listed twice (best for two features) once."""
    import ipywidgets

    monkeypatch.setattr(ipywidgets, "interact", lambda function, **widgets: widgets)
    choices = [("inside string (cell 3)", 3), ("inside comment (cell 3)", 3), ("depth (cell 9)", 9)]
    shown = interact_cell_activations(lambda cell, text: None, choices, {"one": "x"})
    assert [tuple(option) for option in shown["cell"].options] == [
        ("inside string (cell 3)", 3),
        ("depth (cell 9)", 9),
    ]
    with pytest.raises(ValueError, match="at least one cell"):
        interact_cell_activations(lambda cell, text: None, [], {"one": "x"})
