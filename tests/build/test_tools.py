"""The build tools give clear errors for bad input and lose nothing."""

from __future__ import annotations

import base64
import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from PIL import Image

from autograder import nbgrader_format as nbg
from tests.messages import raises
from tools import build
from tools.metrics_table import figures_page, format_table
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
    with raises(NotebookBuildError, "two cells", "'part_a'"):
        read_source(source)


def test_read_source_names_a_missing_file(tmp_path):
    with raises(NotebookBuildError, "missing.py", "no such"):
        read_source(tmp_path / "missing.py")


def test_execute_names_the_failing_cell(tmp_path):
    source = tmp_path / "broken.py"
    source.write_text("# %%\nx = 1\n\n# %%\nraise ValueError('shape mismatch in cell two')\n")
    with raises(NotebookBuildError, "broken.py", "cell-001", "shape mismatch"):
        execute(read_source(source), name="broken.py", cwd=tmp_path)


def test_execute_stops_an_infinite_loop(tmp_path):
    source = tmp_path / "loop.py"
    source.write_text("# %%\nwhile True:\n    pass\n")
    with raises(NotebookBuildError, "loop.py", "longer", "2 s"):
        execute(read_source(source), name="loop.py", cwd=tmp_path, timeout_per_cell=2)


def test_execute_returns_outputs_and_time(tmp_path):
    source = tmp_path / "ok.py"
    source.write_text("# %%\nprint(6 * 7)\n")
    result = execute(read_source(source), name="ok.py", cwd=tmp_path)
    assert result.notebook.cells[0].outputs[0]["text"] == "42\n"
    assert 0 < result.seconds < 60


@pytest.mark.skipif(os.name == "nt", reason="ZeroMQ has no IPC transport on Windows")
def test_kernels_talk_over_private_sockets_not_tcp_ports(tmp_path):
    # Two units starting kernels at once over TCP can pick the same "free" port; one then
    # dies with "Address already in use" (seen in CI). Unix sockets cannot collide.
    source = tmp_path / "transport.py"
    source.write_text(
        "# %%\nimport json\nfrom ipykernel.connect import get_connection_info\n"
        "info = json.loads(get_connection_info())\nprint(info['transport'], info['ip'])\n"
    )
    result = execute(read_source(source), name="transport.py", cwd=tmp_path)
    transport, address = result.notebook.cells[0].outputs[0]["text"].split()
    assert transport == "ipc"
    assert not Path(address).parent.exists(), "the socket directory is removed afterwards"


def test_a_kernel_that_never_starts_is_retried_then_named(tmp_path, monkeypatch):
    from tools import notebooks

    attempts = []

    def dies(self, **kwargs):
        attempts.append(1)
        raise RuntimeError("Kernel died before replying to kernel_info")

    monkeypatch.setattr(notebooks.NotebookClient, "execute", dies)
    source = tmp_path / "ok.py"
    source.write_text("# %%\nprint(1)\n")
    with raises(NotebookBuildError, "ok.py", "did not start", "3 attempts"):
        execute(read_source(source), name="ok.py", cwd=tmp_path)
    assert len(attempts) == notebooks.KERNEL_START_ATTEMPTS == 3


class SlowChannel:
    """A channel whose message is ready only from the third poll on, whatever the timeout."""

    def __init__(self):
        self.timeouts = []

    async def get_msg(self, timeout=None):
        from queue import Empty

        self.timeouts.append(timeout)
        if len(self.timeouts) < 3:
            raise Empty
        return {"msg_type": "execute_reply"}


def test_replies_are_read_in_short_polls_until_the_deadline():
    import asyncio
    from queue import Empty

    from tools.notebooks import poll_in_short_steps

    channel = SlowChannel()
    poll_in_short_steps(channel, step=0.01)
    # A 300 s timeout is now three polls of 0.01 s, not one wait of 300 s.
    assert asyncio.run(channel.get_msg(timeout=300)) == {"msg_type": "execute_reply"}
    assert channel.timeouts == [0.01, 0.01, 0.01]
    never = SlowChannel()  # its message never comes within the deadline

    async def always_empty(timeout=None):
        never.timeouts.append(timeout)
        await asyncio.sleep(timeout)
        raise Empty

    never.get_msg = always_empty
    poll_in_short_steps(never, step=0.01)
    with pytest.raises(Empty):
        asyncio.run(never.get_msg(timeout=0.05))
    assert 3 <= len(never.timeouts) <= 8 and max(never.timeouts) <= 0.01


def test_source_files_names_the_empty_folder_and_the_unknown_assignment(tmp_path):
    (tmp_path / "a9").mkdir()
    (tmp_path / "a1").mkdir()
    (tmp_path / "a1" / "a1.py").write_text("# %%\n")
    with pytest.raises(FileNotFoundError, match="no notebook sources"):
        nbg.source_files("a9", solutions=tmp_path)
    with raises(FileNotFoundError, "unknown", "'a7'", "a1"):
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


RENDEZVOUS = """# %%
import pathlib, time
folder = pathlib.Path({folder!r})
(folder / {mine!r}).touch()
deadline = time.monotonic() + 120
while not (folder / {other!r}).exists():
    assert time.monotonic() < deadline, "the other notebook never ran at the same time"
    time.sleep(0.05)
print("met")
"""


def test_build_runs_lectures_at_the_same_time_and_names_each_failure(
    tmp_path, lectures, monkeypatch, capsys
):
    # Two lectures that can only finish if they run at the same time (each waits for the
    # other's file), and a broken one: the good ones are built, the broken one is named.
    for mine, other in (("01_a", "02_b"), ("02_b", "01_a")):
        (lectures / f"{mine}.py").write_text(
            RENDEZVOUS.format(folder=str(tmp_path), mine=mine, other=other)
        )
    (lectures / "03_broken.py").write_text("# %%\nx = 1\n\n# %%\nraise KeyError('no such unit')\n")
    monkeypatch.setenv(build.JOBS_VARIABLE, "3")
    assert build.main(["lectures"]) == 1
    captured = capsys.readouterr()
    assert "3 unit(s), 3 at a time" in captured.out
    assert "1 of 3 unit(s) failed" in captured.err
    assert "lecture 03_broken: 03_broken.py: cell #1 (cell-001) failed" in captured.err
    assert "no such unit" in captured.err
    for name in ("01_a", "02_b"):
        notebook = nbformat.read(tmp_path / "build" / "lectures" / f"{name}.ipynb", as_version=4)
        assert notebook.cells[0].outputs[0]["text"] == "met\n"
    assert not (tmp_path / "build" / "lectures" / "03_broken.ipynb").exists()
    timings = json.loads((tmp_path / "build" / "timings.json").read_text())
    assert sorted(timings) == ["lectures/01_a", "lectures/02_b"]
    # fixed, the broken lecture alone runs again
    (lectures / "03_broken.py").write_text("# %%\nprint('fixed')\n")
    assert build.main(["lectures"]) == 0
    out = capsys.readouterr().out
    assert "01_a: up to date" in out and "02_b: up to date" in out
    assert "lecture 03_broken: executed in" in out


@pytest.mark.parametrize(("value", "jobs"), [("", None), ("1", 1), (" 4 ", 4)])
def test_build_jobs_follow_the_environment(monkeypatch, value, jobs):
    monkeypatch.setenv(build.JOBS_VARIABLE, value)
    assert build.build_jobs() == (jobs or os.cpu_count() or 1)


@pytest.mark.parametrize(
    ("cores", "jobs", "outside", "threads"),
    [(2, "", "", "1"), (2, "1", "", "2"), (3, "2", "", "1"), (16, "4", "", "4"), (8, "", "3", "3")],
)
def test_the_units_side_by_side_share_out_the_cores(monkeypatch, cores, jobs, outside, threads):
    monkeypatch.setattr(build.os, "cpu_count", lambda: cores)
    monkeypatch.setenv(build.JOBS_VARIABLE, jobs)
    if outside:
        monkeypatch.setenv("OMP_NUM_THREADS", outside)  # set outside: the build keeps it
    else:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert build.kernel_threads() == dict.fromkeys(build.THREAD_VARIABLES, threads)


def test_a_lectures_kernel_gets_its_threads_and_the_replaying_lab_the_same(
    tmp_path, lectures, monkeypatch
):
    from tools import student_lab
    from tools.fit_replay import THREADS_FILE

    monkeypatch.setattr(build.os, "cpu_count", lambda: 3)
    monkeypatch.setenv(build.JOBS_VARIABLE, "1")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    names = ", ".join(repr(v) for v in build.THREAD_VARIABLES)
    (lectures / "97_threads.py").write_text(
        f"# %%\nimport os\nprint([os.environ.get(v) for v in ({names})])\n"
    )
    assert build.main(["lectures"]) == 0
    notebook = nbformat.read(tmp_path / "build" / "lectures" / "97_threads.ipynb", as_version=4)
    assert notebook.cells[0].outputs[0].text.strip() == "['3', '3', '3']"
    fits = tmp_path / "build" / "fits"
    recorded = json.loads((fits / THREADS_FILE).read_text())
    assert recorded == dict.fromkeys(build.THREAD_VARIABLES, "3")

    monkeypatch.setenv("OMP_NUM_THREADS", "7")  # the test processes' own share: not the lab's
    venv = Path(sys.executable).parent.parent
    installation = student_lab.Installation(tmp_path, venv, 0.0, 0.0)
    env = student_lab.lab_environment(installation, tmp_path / "home", replay=fits)
    assert {v: env[v] for v in build.THREAD_VARIABLES} == recorded


@pytest.mark.parametrize("value", ["0", "-2", "two", "1.5"])
def test_build_jobs_reject_a_bad_value(monkeypatch, value):
    monkeypatch.setenv(build.JOBS_VARIABLE, value)
    with raises(build.BuildFailed, "COURSE_BUILD_JOBS", "whole number", re.escape(value)):
        build.build_jobs()


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
                        "margin": 0.05,
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
    assert "| 01_x | char-RNN | 2.5 bits/char | 4.6 (unigram) | yes (by > 0.05) |" in table


def test_figures_page_lists_each_figure_with_its_claim_and_whether_it_holds():
    def figure(name, value, baseline, **kw):
        return {"name": name, "value": value, "unit": "acc", "baseline": baseline,
                "baseline_name": "GRU", "higher_is_better": True, **kw}  # fmt: skip

    page = figures_page(
        [
            {
                "notebook": "06_x",
                "metrics": [
                    figure("sorting", 0.988, 0.718, margin=0.106, passes=True),
                    figure("dates", 0.997, 0.998, margin=0.01, claim="matches", passes=True),
                    figure("copies", 0.5, 0.7, margin=0.0, passes=False),
                ],
            },
        ],  # fmt: skip
        "a test machine",
    )
    assert "The 3 figures" in page and "a test machine" in page
    rows = page.splitlines()[-3:]
    assert rows[0] == (
        "| 6 | sorting | 0.988 acc | 0.718 (GRU) | beats it (higher is better) by more than"
        " 0.106 | yes |"
    )
    assert "| matches it within 0.01 | yes |" in rows[1]
    assert rows[2].endswith("| beats it (higher is better) | **no** |")


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
    figures = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(figures) == 1, outputs
    assert any("trained" in o.get("text", "") for o in outputs)
    # the figure has twice the pixels of the size it is shown at, recorded with it (retina)
    png = Image.open(io.BytesIO(base64.b64decode(figures[0]["data"]["image/png"])))
    shown = figures[0]["metadata"]["image/png"]
    assert (png.width // 2, png.height // 2) == (shown["width"], shown["height"]), png.size


def test_replays_from_several_cells_do_not_clobber_each_other():
    namespace: dict = {}
    exec(_replay_code(["f"], {"f": [("return", "f1")]}), namespace)
    exec(_replay_code(["g"], {"g": [("return", "g1")]}), namespace)
    exec(_replay_code(["h"], {}), namespace)
    assert (namespace["f"](), namespace["g"]()) == ("f1", "g1")
    with pytest.raises(NotImplementedError):
        namespace["h"]()


def test_the_student_flow_installs_with_the_readmes_linux_recipe(tmp_path):
    from tools.student_lab import StudentLabError, readme_pip_steps

    (tmp_path / "README.md").write_text(build.STUDENT_README.read_text())
    assert readme_pip_steps(tmp_path) == [
        ["--upgrade", "pip"],
        ["--extra-index-url", build.CPU_INDEX, "-r", "requirements-student.txt", "."],
    ]
    (tmp_path / "README.md").write_text(
        build.STUDENT_README.read_text().replace(f"--extra-index-url {build.CPU_INDEX} ", "")
    )
    with raises(StudentLabError, "does not use", "download.pytorch.org/whl/cpu"):
        readme_pip_steps(tmp_path)
    (tmp_path / "README.md").write_text(
        build.STUDENT_README.read_text().replace(" -m pip install --upgrade pip\n", " -V\n")
    )
    with raises(StudentLabError, "README.md", "update pip"):
        readme_pip_steps(tmp_path)


def test_the_students_environment_file_names_the_cpu_index():
    text = build._student_environment()
    assert (
        f"      - --extra-index-url {build.CPU_INDEX}\n      - -r requirements-student.txt" in text
    )
    assert "requirements-dev" not in text


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, ended but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


KILLED_BUILD = """
import sys
from pathlib import Path
from tools import build
folder = Path(sys.argv[1])
build.LECTURES, build.BUILD = folder / "lectures", folder / "build"
build.TIMINGS = build.BUILD / "timings.json"
sys.exit(build.main(["lectures"]))
"""


def _kill_once_started(
    driver: subprocess.Popen, pid_file: Path, what: str, *, start: float, end: float
) -> None:
    """Wait (``start`` s at most) until ``what`` under ``driver``'s worker writes its pid to
    ``pid_file``; kill ``driver`` as a build is killed outright; then its workers and ``what``
    must end within ``end`` s."""
    try:
        deadline = time.monotonic() + start
        while not pid_file.exists():
            assert driver.poll() is None, f"the build ended before {what} started"
            assert time.monotonic() < deadline, f"{what} never started"
            time.sleep(0.1)
        pid = int(pid_file.read_text())
        workers = _children(driver.pid)
        assert workers and _alive(pid)
    finally:
        driver.kill()
        driver.wait()
    deadline = time.monotonic() + end
    while any(map(_alive, [*workers, pid])):
        assert time.monotonic() < deadline, (
            f"still running after the build was killed: workers {workers}, {what} {pid}"
        )
        time.sleep(0.1)


# A build worker (exit_with_parent) running an nbgrader command; "nbgrader" here is a stand-in
# on PYTHONPATH that writes its pid and waits, as a long autograde does.
WORKER_IN_NBGRADER = """
import sys
from pathlib import Path
from autograder import nbgrader_format as nbg
from tools import build
build.exit_with_parent(int(sys.argv[1]), every=0.2)
nbg.nbgrader(Path(sys.argv[2]), "autograde", "a1")
"""
DRIVER = """
import subprocess, sys, time
subprocess.Popen([sys.executable, "-c", sys.argv[1], str(__import__("os").getpid()), sys.argv[2]])
time.sleep(600)
"""


def test_a_killed_build_ends_the_nbgrader_command_its_worker_runs(tmp_path):
    fake = tmp_path / "fake" / "nbgrader"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "__main__.py").write_text(
        "import os, pathlib, time\n"
        f"pathlib.Path({str(tmp_path / 'nbgrader.pid')!r}).write_text(str(os.getpid()))\n"
        "time.sleep(600)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(build.REPO), str(tmp_path / "fake")])}
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, WORKER_IN_NBGRADER, str(tmp_path)], cwd=build.REPO, env=env
    )
    _kill_once_started(driver, tmp_path / "nbgrader.pid", "nbgrader", start=60, end=30)


def test_a_killed_build_leaves_no_worker_or_kernel_running(tmp_path):
    # A build killed outright runs no clean-up: its worker (and the kernel executing the
    # lecture) must notice that their build is gone and end, not run on unattended.
    (tmp_path / "lectures").mkdir()
    (tmp_path / "lectures" / "97_slow.py").write_text(
        "# %%\nimport os, pathlib, time\n"
        f"pathlib.Path({str(tmp_path / 'kernel.pid')!r}).write_text(str(os.getpid()))\n"
        "time.sleep(600)\n"
    )
    driver = subprocess.Popen(
        [sys.executable, "-c", KILLED_BUILD, str(tmp_path)],
        cwd=build.REPO,
        env={**os.environ, build.JOBS_VARIABLE: "1"},
        stdout=subprocess.DEVNULL,
    )
    _kill_once_started(driver, tmp_path / "kernel.pid", "the lecture's kernel", start=180, end=60)


def test_the_students_processes_cache_what_they_compile(tmp_path, monkeypatch):
    # The student flow installs the bundle with pip's --no-compile: its kernels must cache each
    # module they compile, even where the suite's own environment says not to.
    from tools import student_lab

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    venv = Path(sys.executable).parent.parent
    installation = student_lab.Installation(tmp_path, venv, 0.0, 0.0)
    env = student_lab.lab_environment(installation, tmp_path / "home")
    assert "PYTHONDONTWRITEBYTECODE" not in env
    (tmp_path / "lesson.py").write_text("x = 1\n")
    subprocess.run([sys.executable, "-c", "import lesson"], cwd=tmp_path, env=env, check=True)
    assert list((tmp_path / "__pycache__").glob("lesson.*.pyc"))
