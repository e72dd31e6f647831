"""tools.spread: the table of how much each recorded figure moves between configurations."""

from __future__ import annotations

import json

import pytest

from tools import spread


def _run(config: str, value: float, baseline: float, higher: bool = True) -> dict:
    return {
        "lecture": "06_x",
        "config": config,
        "seconds": 1.0,
        "metrics": [
            {
                "name": "exact match",
                "value": value,
                "baseline": baseline,
                "higher_is_better": higher,
                "margin": 0.01,
            }
        ],
    }


def test_the_table_gives_each_figures_spread_and_its_lead_over_the_baseline():
    table = spread.spread_table(
        [_run("native", 0.997, 0.998), _run("avx2", 0.999, 0.990), _run("sse", 0.995, 0.996)]
    )
    (row,) = table
    assert row["values"] == {"native": 0.997, "avx2": 0.999, "sse": 0.995}
    assert row["value_spread"] == pytest.approx(0.004)
    assert row["baseline_spread"] == pytest.approx(0.008)
    assert row["lead_min"] == pytest.approx(-0.001) and row["lead_max"] == pytest.approx(0.009)
    markdown = spread.format_markdown(table, ["native", "avx2", "sse"])
    assert "| 06_x | exact match | 0.997 / 0.998 | 0.999 / 0.99 | 0.995 / 0.996 |" in markdown
    assert markdown.rstrip().endswith("| -0.001 – 0.009 | 0.01 |")


def test_a_lower_is_better_lead_counts_the_baseline_minus_the_value():
    (row,) = spread.spread_table([_run("native", 1.8, 2.0, False), _run("sse", 1.9, 2.0, False)])
    assert row["lead_min"] == pytest.approx(0.1) and row["lead_max"] == pytest.approx(0.2)


def test_figures_from_a_build_stand_for_a_configuration(tmp_path, monkeypatch):
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    (metrics / "01_rnn_bptt.json").write_text(
        json.dumps({"notebook": "01_rnn_bptt", "metrics": _run("x", 2.6, 4.6, False)["metrics"]})
    )
    out = tmp_path / "spread.json"
    assert (
        spread.main(
            ["01_rnn_bptt", "--configs", "", "--add", f"native={metrics}", "--out", str(out)]
        )
        == 0
    )
    saved = json.loads(out.read_text())
    assert [r["config"] for r in saved["runs"]] == ["native"]
    assert saved["table"][0]["values"] == {"native": 2.6}
    assert out.with_suffix(".md").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--configs", "turbo"], "unknown configurations ['turbo']"),
        (["--add", "native"], "--add takes CONFIG=DIR"),
        (["no_such_lecture"], "no lecture matches ['no_such_lecture']"),
    ],
)
def test_bad_arguments_are_named(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit):
        spread.main([*argv, "--out", str(tmp_path / "s.json")])
    assert message in capsys.readouterr().err
