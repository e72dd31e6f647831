"""``make bench`` writes its tables into the website's measurements page, between two markers,
and leaves the hand-written rest of the page as it is."""

from __future__ import annotations

import os
import re

import pytest

from tools.bench import (
    BEGIN,
    COMMAND,
    END,
    PAGE,
    bench_block,
    over_budget,
    rewrite_page,
)
from tools.metrics_table import describe_machine

METRIC = {
    "name": "char-RNN, held-out",
    "value": 2.5,
    "unit": "bits/char",
    "baseline": 4.6,
    "baseline_name": "unigram",
    "higher_is_better": False,
    "margin": 0.1,
    "passes": True,
}
HEAD = "# Measurements\n\nWritten by hand: the spread between processors.\n\n"
TAIL = "\n\n## Grading\n\n| method | wall time |\n| --- | ---: |\n| plain | 142 s |\n"


def _block(**changes) -> str:
    arguments = {
        "timings": {"lectures/01_x": 41.25, "solutions/a1_x/a1_x": 5.8},
        "metrics": [{"notebook": "01_x", "metrics": [METRIC]}],
        "budgets": {"lectures/01_x": 60.0},
        "machine": "a test processor, 2 logical CPUs",
        "seconds": 362.4,
    }
    return bench_block(**{**arguments, **changes})


def test_the_block_names_the_machine_the_run_and_the_command_of_every_row():
    block = _block()
    assert block.startswith("Machine: a test processor, 2 logical CPUs. 2 notebooks, ")
    assert "one after another: 6 min 2 s in all." in block
    rows = [line for line in block.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows == [
        "| notebook | seconds | budget | command |",
        f"| lectures/01_x | 41.2 | 60 | {COMMAND} |",
        f"| solutions/a1_x/a1_x | 5.8 | - | {COMMAND} |",
        "| notebook | model | figure | baseline | beats baseline | command |",
        f"| 01_x | char-RNN, held-out | 2.5 bits/char | 4.6 (unigram) | yes (by > 0.1) | {COMMAND} |",
    ]
    assert "OVER BUDGET" not in block


def test_a_notebook_over_its_budget_is_named_and_no_figures_leave_no_figures_table():
    block = _block(timings={"lectures/01_x": 61.0}, metrics=[])
    assert over_budget({"lectures/01_x": 61.0}, {"lectures/01_x": 60.0}) == [
        "lectures/01_x took 61.0 s, budget 60 s"
    ]
    assert "OVER BUDGET: lectures/01_x took 61.0 s, budget 60 s" in block
    assert "beats baseline" not in block


def test_the_page_keeps_its_markers_and_hand_text_and_gets_the_new_tables():
    old = f"{HEAD}{BEGIN}\n\n| notebook | seconds |\n| stale | 99.9 |\n\n{END}{TAIL}"
    new = rewrite_page(old, _block())
    assert new.startswith(f"{HEAD}{BEGIN}\n\n") and new.endswith(f"\n\n{END}{TAIL}")
    assert "stale" not in new and "99.9" not in new
    assert f"| lectures/01_x | 41.2 | 60 | {COMMAND} |" in new
    assert rewrite_page(new, _block()) == new  # a second run with the same result: the same page
    again = rewrite_page(new, _block(timings={"lectures/01_x": 40.0}))
    assert "41.2" not in again and "| lectures/01_x | 40.0 | 60 |" in again


@pytest.mark.parametrize(
    "text",
    [
        HEAD + TAIL,  # no markers
        f"{HEAD}{END}\n{BEGIN}{TAIL}",  # in the wrong order
        f"{HEAD}{BEGIN}\n{END}\n{BEGIN}\n{END}{TAIL}",  # twice
    ],
    ids=["missing", "reversed", "twice"],
)
def test_a_page_without_one_pair_of_markers_is_refused(text):
    with pytest.raises(ValueError, match="must hold"):
        rewrite_page(text, _block())


def test_the_sites_measurements_page_takes_the_tables_and_keeps_the_rest():
    text = PAGE.read_text()
    new = rewrite_page(text, _block())
    head, tail = text.split(BEGIN)[0], text.split(END)[1]
    assert new.startswith(head + BEGIN) and new.endswith(END + tail)
    assert "## " in head + tail, "the hand-written sections are outside the markers"


def _tables(text: str) -> list[list[list[str]]]:
    """Each Markdown table of ``text`` as rows of cells (the rule under the header left out)."""
    tables, rows = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            if not all(set(cell.strip()) <= set("-: ") for cell in cells):
                rows.append([cell.strip() for cell in cells])
        elif rows:
            tables, rows = [*tables, rows], []
    return tables


def test_every_row_of_the_measurements_page_names_its_command():
    tables = _tables(PAGE.read_text())
    assert len(tables) >= 6, tables
    for header, *rows in tables:
        assert header[-1] in ("command", "machine and command"), header
        assert rows, header
        for row in rows:
            assert len(row) == len(header) and "`" in row[-1], row


def test_the_machine_is_described_by_its_cpus_and_load():
    words = describe_machine(0.25, 1.5)
    assert f"{os.cpu_count()} logical CPUs" in words and "CPU kernels" in words
    assert words.endswith("1-minute load average 0.25 at the start, 1.50 at the end")
