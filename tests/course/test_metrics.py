"""Unit tests of course.metrics: what record prints, returns and saves, and load_all."""

from __future__ import annotations

import json
import math
import re

import pytest

from course.metrics import METRICS_ENV, Recorded, load_all, record
from tests.messages import raises


@pytest.fixture
def no_metrics_dir(monkeypatch):
    monkeypatch.delenv(METRICS_ENV, raising=False)


def test_the_environment_variable_is_course_metrics_dir():
    assert METRICS_ENV == "COURSE_METRICS_DIR"


def test_record_prints_one_line_and_returns_the_entry(no_metrics_dir, capsys):
    entry = record(
        "01_rnn_bptt", "char-RNN", 2, unit="bits/char", baseline=4.6, baseline_name="unigram"
    )
    assert (
        capsys.readouterr().out == "[01_rnn_bptt] char-RNN: 2 bits/char (baseline unigram: 4.6)\n"
    )
    assert entry == {
        "name": "char-RNN",
        "value": 2.0,
        "unit": "bits/char",
        "baseline": 4.6,
        "baseline_name": "unigram",
        "higher_is_better": False,
        "margin": 0.0,
        "claim": "beats",
        "passes": True,
    }
    assert isinstance(entry["value"], float)


def test_a_cell_ending_in_record_shows_the_printed_line_only(no_metrics_dir, capsys):
    from IPython.core.formatters import DisplayFormatter

    entry = record("01_rnn_bptt", "char-RNN", 2.0)
    assert isinstance(entry, Recorded) and isinstance(entry, dict)
    assert DisplayFormatter().format(entry) == ({}, {})  # Jupyter shows no dict after the line
    assert DisplayFormatter().format(dict(entry))[0]["text/plain"].startswith("{'name'")
    assert capsys.readouterr().out == "[01_rnn_bptt] char-RNN: 2\n"


def test_record_without_unit_or_baseline(no_metrics_dir, capsys):
    entry = record("02_lstm", "accuracy", 0.123456)
    assert capsys.readouterr().out == "[02_lstm] accuracy: 0.1235\n"
    assert entry["baseline"] is None and entry["passes"] is True


def test_record_names_an_unnamed_baseline(no_metrics_dir, capsys):
    record("n", "loss", 1.0, baseline=2.0)
    # (one or two spaces before the parenthesis: the unit between them is empty)
    assert re.fullmatch(r"\[n\] loss: 1 +\(baseline baseline: 2\)\n", capsys.readouterr().out)


@pytest.mark.parametrize(
    ("value", "baseline", "higher_is_better", "passes"),
    [
        (2.0, 3.0, False, True),
        (3.0, 2.0, False, False),
        (2.0, 2.0, False, False),  # a tie does not beat the baseline
        (0.9, 0.5, True, True),
        (0.5, 0.9, True, False),
        (0.5, 0.5, True, False),
    ],
)
def test_record_passes_only_when_the_value_beats_the_baseline(
    no_metrics_dir, value, baseline, higher_is_better, passes
):
    entry = record("n", "m", value, baseline=baseline, higher_is_better=higher_is_better)
    assert entry["passes"] is passes


@pytest.mark.parametrize(
    ("value", "baseline", "higher_is_better", "margin", "passes"),
    [
        (0.95, 0.90, True, 0.02, True),  # a lead of 0.05 over a spread of 0.02
        (0.91, 0.90, True, 0.02, False),  # a lead of 0.01: inside the spread, not a win
        (0.75, 0.5, True, 0.25, False),  # exactly the margin is not more than it
        (1.80, 2.00, False, 0.1, True),
        (1.95, 2.00, False, 0.1, False),
    ],
)
def test_record_counts_a_win_only_beyond_the_margin(
    no_metrics_dir, capsys, value, baseline, higher_is_better, margin, passes
):
    entry = record(
        "n", "m", value, baseline=baseline, higher_is_better=higher_is_better, margin=margin
    )
    assert entry["passes"] is passes and entry["margin"] == margin
    assert f"a win needs a lead over {margin:.3g})" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("value", "baseline", "higher_is_better", "passes"),
    [
        (0.997, 0.998, True, True),  # worse by 0.001, inside a spread of 0.01: a tie
        (0.999, 0.998, True, True),  # better is a tie too
        (0.980, 0.998, True, False),  # worse by 0.018: outside the spread
        (2.01, 2.00, False, True),
        (2.05, 2.00, False, False),
    ],
)
def test_a_matching_claim_passes_within_the_margin_either_way(
    no_metrics_dir, capsys, value, baseline, higher_is_better, passes
):
    entry = record(
        "n", "m", value, baseline=baseline, higher_is_better=higher_is_better, margin=0.01,
        claim="matches",
    )  # fmt: skip
    assert entry["passes"] is passes and entry["claim"] == "matches"
    assert "a tie within 0.01)" in capsys.readouterr().out


def test_record_rejects_an_unknown_claim(no_metrics_dir):
    with raises(ValueError, "claim", "'matches'", "'wins'"):
        record("n", "acc", 0.9, baseline=0.5, claim="wins")


@pytest.mark.parametrize("margin", [-0.1, math.nan, math.inf])
def test_record_rejects_a_negative_or_non_finite_margin(no_metrics_dir, margin):
    with pytest.raises(ValueError) as raised:
        record("n", "acc", 0.9, baseline=0.5, margin=margin)
    assert str(raised.value) == f"acc: expected a finite margin of at least 0, got {margin}"


@pytest.mark.parametrize("notebook", ["", "01 rnn", "../escape", "a/b", "name!"])
def test_record_rejects_notebook_names_that_are_not_file_safe(no_metrics_dir, notebook):
    message = f"notebook: expected a file-name-safe id such as '01_rnn_bptt', got {notebook!r}"
    with pytest.raises(ValueError) as raised:
        record(notebook, "m", 1.0)
    assert str(raised.value) == message


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_record_rejects_a_non_finite_value(no_metrics_dir, value):
    with pytest.raises(ValueError) as raised:
        record("n", "char-RNN", value)
    assert str(raised.value) == f"char-RNN: expected a finite value, got {float(value)}"


def test_record_rejects_a_non_finite_baseline(no_metrics_dir):
    with pytest.raises(ValueError) as raised:
        record("n", "char-RNN", 1.0, baseline=math.inf)
    assert str(raised.value) == "char-RNN: expected a finite baseline, got inf"


def test_record_writes_nothing_without_the_environment_variable(
    no_metrics_dir, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    record("n", "m", 1.0)
    assert list(tmp_path.iterdir()) == []


def test_record_saves_and_merges_figures_by_name(tmp_path, monkeypatch, capsys):
    folder = tmp_path / "metrics" / "nested"  # created on demand
    monkeypatch.setenv(METRICS_ENV, str(folder))
    first = record(
        "01_rnn_bptt", "char-RNN", 2.5, unit="bits/char", baseline=4.6, baseline_name="unigram"
    )
    second = record("01_rnn_bptt", "bigram", 3.5, unit="bits/char")
    path = folder / "01_rnn_bptt.json"
    assert json.loads(path.read_text()) == {"notebook": "01_rnn_bptt", "metrics": [first, second]}
    assert path.read_text().endswith("}\n")

    # The same name again replaces the old figure (and moves it to the end).
    updated = record(
        "01_rnn_bptt", "char-RNN", 2.0, unit="bits/char", baseline=4.6, baseline_name="unigram"
    )
    assert json.loads(path.read_text())["metrics"] == [second, updated]
    # Another notebook gets its own file.
    record("02_lstm", "char-LSTM", 1.9)
    assert sorted(p.name for p in folder.iterdir()) == ["01_rnn_bptt.json", "02_lstm.json"]
    assert capsys.readouterr().out.count("\n") == 4


def test_load_all_reads_every_json_file_sorted_by_notebook(tmp_path, monkeypatch, no_metrics_dir):
    monkeypatch.setenv(METRICS_ENV, str(tmp_path))
    record("02_lstm", "char-LSTM", 1.9)
    record("01_rnn_bptt", "char-RNN", 2.5)
    (tmp_path / "notes.txt").write_text("not a metrics file")
    loaded = load_all(tmp_path)
    assert [entry["notebook"] for entry in loaded] == ["01_rnn_bptt", "02_lstm"]
    assert loaded[0]["metrics"][0]["value"] == 2.5
    assert load_all(str(tmp_path)) == loaded


def test_load_all_of_an_empty_directory_is_empty(tmp_path):
    assert load_all(tmp_path) == []


def test_load_all_names_a_missing_directory(tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(FileNotFoundError) as raised:
        load_all(missing)
    assert (
        str(raised.value)
        == f"no metrics directory at {missing} (run the build or the benchmark first)"
    )
