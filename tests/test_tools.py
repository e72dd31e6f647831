"""The build tools give clear errors for bad input and lose nothing."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from autograder import nbgrader_format as nbg
from tools import build
from tools.metrics_table import format_table
from tools.notebooks import NotebookBuildError, execute, read_source, write_notebook
from tools.submissions import _replay_code, defined_functions

HEADER = "# %% [markdown]\n# A title\n\n"


def test_read_source_gives_stable_ids(tmp_path):
    source = tmp_path / "n.py"
    source.write_text(HEADER + "# %%\nx = 1\n\n# %%\ny = 2\n")
    first, second = read_source(source), read_source(source)
    assert [c.id for c in first.cells] == ["cell-000", "cell-001", "cell-002"]
    write_notebook(first, tmp_path / "a.ipynb")
    write_notebook(second, tmp_path / "b.ipynb")
    assert (tmp_path / "a.ipynb").read_bytes() == (tmp_path / "b.ipynb").read_bytes()


def test_read_source_uses_grade_ids_and_rejects_duplicates(tmp_path):
    source = tmp_path / "n.py"
    meta = 'nbgrader={"grade": true, "grade_id": "part_a", "locked": true, "points": 1, "schema_version": 3, "solution": false, "task": false}'
    source.write_text(f"# %% {meta}\nassert 1\n")
    assert read_source(source).cells[0].id == "part_a"
    source.write_text(f"# %% {meta}\nassert 1\n\n# %% {meta}\nassert 2\n")
    with pytest.raises(NotebookBuildError, match="two cells share the id 'part_a'"):
        read_source(source)


def test_read_source_names_a_missing_file(tmp_path):
    with pytest.raises(NotebookBuildError, match="missing.py: no such notebook source"):
        read_source(tmp_path / "missing.py")


def test_execute_names_the_failing_cell(tmp_path):
    source = tmp_path / "broken.py"
    source.write_text("# %%\nx = 1\n\n# %%\nraise ValueError('shape mismatch in cell two')\n")
    with pytest.raises(
        NotebookBuildError, match=r"broken.py: cell #1 \(cell-001\) failed:(.|\n)*shape mismatch"
    ):
        execute(read_source(source), name="broken.py", cwd=tmp_path)


def test_execute_stops_an_infinite_loop(tmp_path):
    source = tmp_path / "loop.py"
    source.write_text("# %%\nwhile True:\n    pass\n")
    with pytest.raises(NotebookBuildError, match="loop.py: a cell ran longer than 2 s"):
        execute(read_source(source), name="loop.py", cwd=tmp_path, timeout_per_cell=2)


def test_execute_returns_outputs_and_time(tmp_path):
    source = tmp_path / "ok.py"
    source.write_text("# %%\nprint(6 * 7)\n")
    result = execute(read_source(source), name="ok.py", cwd=tmp_path)
    assert result.notebook.cells[0].outputs[0]["text"] == "42\n"
    assert 0 < result.seconds < 60


def test_source_files_names_the_empty_folder_and_the_unknown_assignment(tmp_path):
    (tmp_path / "a9").mkdir()
    (tmp_path / "a1").mkdir()
    (tmp_path / "a1" / "a1.py").write_text("# %%\n")
    with pytest.raises(FileNotFoundError, match="no notebook sources"):
        nbg.source_files("a9", solutions=tmp_path)
    with pytest.raises(FileNotFoundError, match="unknown assignment 'a7'; known: a1"):
        nbg.source_files("a7", solutions=tmp_path)


def test_nbgrader_failure_carries_its_log(tmp_path):
    nbg.make_course_dir(tmp_path, [])
    with pytest.raises(nbg.NbgraderError, match="generate_assignment no_such_assignment"):
        nbg.release(tmp_path, "no_such_assignment")


def test_replayed_functions_return_and_raise_in_order():
    outcomes = {"f": [("return", 1), ("raise", ValueError("max_norm must be positive"))]}
    namespace: dict = {}
    exec(_replay_code(["f"], outcomes), namespace)
    assert namespace["f"](123) == 1
    with pytest.raises(ValueError, match="max_norm"):
        namespace["f"]()
    assert namespace["f"]("anything") == 1
    assert defined_functions(
        "import os\ndef a():\n    pass\nclass B:\n    def c(self):\n        pass\n"
    ) == ["a"]


@pytest.fixture
def lectures(tmp_path, monkeypatch) -> Path:
    """An empty lectures folder that the build reads, building into tmp_path/build."""
    folder = tmp_path / "lectures"
    folder.mkdir()
    monkeypatch.setattr(build, "LECTURES", folder)
    monkeypatch.setattr(build, "BUILD", tmp_path / "build")
    monkeypatch.setattr(build, "TIMINGS", tmp_path / "build" / "timings.json")
    return folder


def test_build_reports_a_broken_lecture_and_stops(tmp_path, lectures, capsys):
    (lectures / "99_broken.py").write_text("# %%\n1 / 0\n")
    assert build.main(["lectures"]) == 1
    assert "99_broken.py: cell #0 (cell-000) failed" in capsys.readouterr().err
    assert not (tmp_path / "build" / "lectures" / "99_broken.ipynb").exists()


def test_build_skips_an_unchanged_lecture(tmp_path, lectures, capsys):
    (lectures / "98_tiny.py").write_text("# %%\nprint('ran')\n")
    assert build.main(["lectures"]) == 0
    assert "98_tiny: executed" in capsys.readouterr().out
    assert build.main(["lectures"]) == 0
    assert "98_tiny: up to date" in capsys.readouterr().out
    assert "lectures/98_tiny" in json.loads((tmp_path / "build" / "timings.json").read_text())


def test_metrics_table_lists_times_and_figures():
    table = format_table(
        {"lectures/01_x": 12.3},
        [
            {
                "notebook": "01_x",
                "metrics": [
                    {
                        "name": "char-RNN",
                        "value": 2.5,
                        "unit": "bits/char",
                        "baseline": 4.6,
                        "baseline_name": "unigram",
                        "higher_is_better": False,
                        "passes": True,
                    }
                ],
            }
        ],
    )
    assert "| lectures/01_x | 12.3 | - |" in table
    assert "| lectures/01_x | 12.3 | 60 |" in format_table(
        {"lectures/01_x": 12.3}, [], {"lectures/01_x": 60}
    )
    assert "| 01_x | char-RNN | 2.5 bits/char | 4.6 (unigram) | yes |" in table


def test_metrics_table_escapes_pipes_in_cells():
    entry = {
        "name": "best |r|",
        "value": 0.3,
        "unit": "|r|",
        "baseline": 0.03,
        "baseline_name": "median",
        "higher_is_better": True,
        "passes": True,
    }
    row = format_table({}, [{"notebook": "02_x", "metrics": [entry]}]).splitlines()[-1]
    assert row == "| 02_x | best \\|r\\| | 0.3 \\|r\\| | 0.03 (median) | yes |"


def test_written_notebook_is_valid(tmp_path):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x = 1", id="c0")])
    write_notebook(notebook, tmp_path / "deep" / "n.ipynb")
    nbformat.validate(nbformat.read(tmp_path / "deep" / "n.ipynb", as_version=4))


def test_widget_outputs_are_dropped_but_figures_and_text_kept(tmp_path):
    source = tmp_path / "w.py"
    source.write_text(
        "# %%\nimport ipywidgets, matplotlib.pyplot as plt\nfrom tqdm.auto import tqdm\n"
        "for _ in tqdm(range(2)):\n    pass\nprint('trained')\nplt.plot([1, 2])\nplt.show()\n\n"
        "# %%\nipywidgets.interact(lambda x=1: print(x), x=(0, 3))\n"
    )
    notebook = execute(read_source(source), name="w.py", cwd=tmp_path).notebook
    outputs = [o for c in notebook.cells for o in c.outputs]
    assert not [
        o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert "widgets" not in notebook.metadata
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert any("trained" in o.get("text", "") for o in outputs)


def test_replays_from_several_cells_do_not_clobber_each_other():
    namespace: dict = {}
    exec(_replay_code(["f"], {"f": [("return", "f1")]}), namespace)
    exec(_replay_code(["g"], {"g": [("return", "g1")]}), namespace)
    exec(_replay_code(["h"], {}), namespace)
    assert (namespace["f"](), namespace["g"]()) == ("f1", "g1")
    with pytest.raises(NotImplementedError):
        namespace["h"]()
