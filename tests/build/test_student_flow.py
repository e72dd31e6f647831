"""The student's flow, in a real browser: the bundle installed as its README says, JupyterLab
on 127.0.0.1, Debian's Chromium driven by Playwright.

The notebooks are shared between JupyterLab sessions (:data:`LABS`, ``$COURSE_STUDENT_LABS``,
2 unless set; 1 is the fall-back), each a group of tests (``xdist_group``) that pytest-xdist
runs in a worker of its own, with its own JupyterLab and Chromium on the one installation,
made once for the whole test run. Without xdist, one JupyterLab serves every test.

For each lecture: Run All (its training runs replaying what the build recorded, so each model
is trained once in the whole run), no cell errors, no raw MyST markup in the rendered text, numbered equations typeset, every widget control live
(moving it redraws its figure). For each assignment: the reference answers typed into the
solution cells, Run All, every test cell passes; for the first assignment, nbgrader's Validate
button reports failure as released and success when answered.
No instructor panel (Formgrader, Course List, Create Assignment) anywhere. A failing check
shows its message first and briefly. Nothing is fetched from the internet. Outside JupyterLab,
in the same installation: ``python -m course doctor`` finds nothing to fix, ``python -m course
handin`` writes an answered assignment's one file, and the TA's command grades that file.

Screenshots go to ``build/screenshots/student/``; the install time and size, and the time of
each step, to ``build/student_flow.json``.
"""

from __future__ import annotations

import csv
import fcntl
import itertools
import json
import os
import re
import shutil
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest

from autograder import nbgrader_format as nbg
from autograder.platform.grade import command_line
from tools.browser import launch, offline_context
from tools.build import BUILD, DIST, FITS, TIMINGS, grades_path
from tools.notebooks import REPO
from tools.student_lab import (
    BUNDLE_ZIP,
    NOT_INHERITED,
    Installation,
    filled_in_answers,
    install_bundle,
    installed_version,
    readme_pip_steps,
    running_lab,
    unpack_bundle,
)
from tools.submissions import honest_submission

pytestmark = [pytest.mark.browser, pytest.mark.build]  # JupyterLab in Chromium, on dist/

SCREENSHOTS = BUILD / "screenshots" / "student"
REPORT = BUILD / "student_flow.json"
LECTURES = sorted(p.name for p in (DIST / "lectures").glob("*.ipynb"))
ASSIGNMENTS = [f"{a}/{s.stem}.ipynb" for a in nbg.assignment_ids() for s in nbg.source_files(a)]
LABS = max(1, int(os.environ.get("COURSE_STUDENT_LABS", "2")))
RUN_TIMEOUT = 900  # seconds for Run All of one notebook (lectures train for ~20-40 s each)
# Between two cells of Run All the kernel is idle for a moment; idle this long with cells
# still unrun, Run All has stopped (a cell raised).
STOPPED_SECONDS = 20
TEACHER_PANELS = ("Formgrader", "Course List", "Create Assignment", "Assignment List", "Nbgrader")
# MyST markup that JupyterLab would show raw: a role ({eq}, {cite:p}... rendered without its
# backticks), a target line, or an equation label left after display math.
RAW_MYST = re.compile(
    r"(?<![\\\w^_}])\{[a-z][\w:+-]*\}(?=[^\s{])"
    r"|^\s*\([\w:.-]+\)=\s*$"
    r"|\((?:eq|fig|sec|tab)-[\w:.-]+\)",
    re.M,
)
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden)"  # the notebook in the open tab
# JupyterLab saves a named workspace's layout on the server and reopens it on the next visit:
# a tab that a failed test left with a notebook open would come back in every new tab. Each
# new tab gets a workspace of its own, which starts empty, at the launcher.
_WORKSPACES = (f"student{n}" for n in itertools.count())


@contextmanager
def _locked(path: Path):
    """Hold an exclusive lock on ``path`` (made if absent): one test process at a time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield handle
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _record(**values) -> None:
    with _locked(REPORT) as handle:  # the labs of other workers record into it too
        handle.seek(0)
        text = handle.read()
        data = json.loads(text) if text.strip() else {}
        data.update(values)
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(data, indent=2, sort_keys=True) + "\n")


# -- which lab runs which notebook ------------------------------------------------------------


def _groups() -> dict[str, int]:
    """{notebook: lab} for every lecture and assignment: longest first, each notebook goes to
    the lab with the least expected work so far. A lecture's test is expected to take 30 s
    more than 1.1 times its execution in the build (``build/timings.json``): Run All, then its
    widgets and its math; an assignment's about 30 s (measured, serial, 2 cores). Every xdist
    worker computes the same split."""
    timings = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
    expected = {
        f"lectures/{n}": 30.0 + 1.1 * timings.get(f"lectures/{Path(n).stem}", 40.0)
        for n in LECTURES
    }
    expected |= {f"assignments/{a}": 30.0 for a in ASSIGNMENTS}
    load = [0.0] * LABS
    load[0] += 45.0  # lab 0 also checks the panels, a failing check and the attention views
    groups = {}
    for notebook in sorted(expected, key=lambda n: (-expected[n], n)):
        lab = min(range(LABS), key=lambda i: (load[i], i))
        groups[notebook] = lab
        load[lab] += expected[notebook]
    return groups


GROUPS = _groups()


def _in_lab(index: int) -> pytest.MarkDecorator:
    return pytest.mark.xdist_group(f"student_lab{index}")


def _notebook_params(kind: str, names: list[str]) -> list:
    return [pytest.param(name, marks=_in_lab(GROUPS[f"{kind}/{name}"])) for name in names]


# -- fixtures -------------------------------------------------------------------------------


def _run_folder(tmp_path_factory) -> Path:
    """A folder of this test run that every xdist worker sees (each has its own basetemp
    below it); without xdist, the basetemp itself."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="module")
def installation(tmp_path_factory) -> Installation:
    """The bundle unpacked and installed as its README says, once for the test run: the first
    worker installs it, the others wait for it and use it (a venv cannot be moved)."""
    shared = _run_folder(tmp_path_factory) / "student"
    done = shared / "installation.json"
    with _locked(shared / "install.lock"):
        if done.exists():
            found = json.loads(done.read_text())
            return Installation(
                Path(found["bundle"]), Path(found["venv"]), found["seconds"], found["megabytes"]
            )
        assert BUNDLE_ZIP.exists(), f"{BUNDLE_ZIP} is missing; run `make` first"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        for old in SCREENSHOTS.glob("*.png"):  # before any lab takes one
            old.unlink()
        bundle = unpack_bundle(BUNDLE_ZIP, shared / "course")
        installed = install_bundle(bundle, shared / "venv")
        line = readme_pip_steps(bundle)[-1]  # the README's Linux install line
        _record(
            install_seconds=round(installed.seconds, 1),
            install_megabytes=round(installed.megabytes),
            install_command="python3.11 -m venv .venv && .venv/bin/python -m pip install "
            + "--upgrade pip && .venv/bin/python -m pip install "
            + " ".join(line[2:])
            + " (the README's Linux recipe, from this machine's wheels: without its "
            + " ".join(line[:2])
            + ", and with --no-compile)",
        )
        done.write_text(
            json.dumps(
                {
                    "bundle": str(installed.bundle),
                    "venv": str(installed.venv),
                    "seconds": installed.seconds,
                    "megabytes": installed.megabytes,
                }
            )
        )
        return installed


@pytest.fixture(scope="module")
def lab(installation, tmp_path_factory):
    # The lectures' training runs replay what the build recorded (course.train's docstring):
    # the build has trained those models and checked their figures; here every cell still runs.
    with running_lab(installation, tmp_path_factory.mktemp("home"), replay=FITS) as lab:
        yield lab


@pytest.fixture(scope="module")
def context(lab):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright, timeout_ms=60_000)
        context = offline_context(
            browser, lambda url: url.startswith(lab.url), viewport=(1400, 1000), timeout_ms=60_000
        )
        yield context
        context.close()
        browser.close()


# -- helpers ----------------------------------------------------------------------------------
# Waiting loops call page.wait_for_timeout, never time.sleep: Playwright's sync API serves the
# context's routes (every request of the page) only while a Playwright call is running.


def _shot(page, name: str, element=None) -> Path:
    path = SCREENSHOTS / f"{name}.png"
    (element or page).screenshot(path=str(path))
    return path


def _kernel_states(lab) -> list[str]:
    status, body = lab.get("/api/kernels")
    assert status == 200, body
    return [kernel["execution_state"] for kernel in json.loads(body)]


def _wait_idle(page, lab, timeout: float = 120, settle: float = 1.0) -> None:
    """Wait until every kernel has been idle for ``settle`` seconds."""
    deadline = time.monotonic() + timeout
    idle_since = None
    while time.monotonic() < deadline:
        states = _kernel_states(lab)
        if states and all(s == "idle" for s in states):
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since >= settle:
                return
        else:
            idle_since = None
        page.wait_for_timeout(250)
    raise AssertionError(
        f"the kernels did not become idle in {timeout:.0f} s: {_kernel_states(lab)}"
    )


def _lab_tab(context, lab):
    """The lab's one JupyterLab tab, where the notebooks are opened one after another, as a
    student keeps one tab open (loading JupyterLab costs about 5 s of the browser's CPU). A tab
    that a failed test left with a dialog or a notebook open is closed, and a new one loaded."""
    for page in context.pages:
        if getattr(page, "lab_tab", False) and not page.is_closed():
            if page.locator(".jp-Dialog, .jp-NotebookPanel").count() == 0:
                page.errors.clear()
                return page
            page.close()
    page = context.new_page()
    page.lab_tab, page.errors = True, []
    page.on("pageerror", lambda error: page.errors.append(str(error)))
    page.goto(lab.page(workspace=next(_WORKSPACES)))
    page.locator(".jp-LauncherCard").first.wait_for()
    return page


def _open_notebook(context, lab, path: str):
    """Open ``path`` in the lab's tab from File > Open from Path; wait for its kernel."""
    page = _lab_tab(context, lab)
    _menu(page, "File", "Open from Path…")
    dialog = page.locator(".jp-Dialog")
    dialog.locator("input").fill(path)
    dialog.locator(".jp-Dialog-button.jp-mod-accept").click()
    dialog.wait_for(state="detached")
    page.locator(f"{NOTEBOOK} .jp-Cell").first.wait_for()
    page.locator(f"{NOTEBOOK} .jp-NotebookPanel-toolbar").first.wait_for()
    _wait_for_kernel(page, lab, path)
    return page


def _close_notebook(page) -> None:
    """Close the notebook's tab (saved, or its changes dropped), leaving the lab's tab open
    at its launcher for the next test."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.locator(".lm-TabBar-tab.jp-mod-current .lm-TabBar-tabCloseIcon").first.click()
    discard = page.locator(".jp-Dialog .jp-Dialog-button", has_text=re.compile("^Discard$"))
    if page.locator(NOTEBOOK).count():
        try:
            discard.wait_for(timeout=2_000)  # only for a notebook with unsaved changes
            discard.click()
        except PlaywrightTimeout:
            pass
    page.locator(".jp-NotebookPanel").first.wait_for(state="detached")


def _wait_for_kernel(page, lab, path: str, timeout: float = 300) -> None:
    """Wait until the notebook at ``path`` has a kernel that is idle (started and ready)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, body = lab.get("/api/sessions")
        sessions = json.loads(body) if status == 200 else []
        mine = [s for s in sessions if path in (s.get("path"), s.get("notebook", {}).get("path"))]
        if any((s.get("kernel") or {}).get("execution_state") == "idle" for s in mine):
            _wait_idle(page, lab)
            return
        page.wait_for_timeout(500)
    raise AssertionError(f"no kernel became ready for {path} in {timeout:.0f} s: {body}")


def _menu(page, menu: str, item: str) -> None:
    """Click a main-menu entry, as a student does (``Run`` -> ``Run All Cells``)."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(f"^{menu}$")).click()
    label = re.compile(f"^{re.escape(item)}$")
    page.locator(".lm-Menu .lm-Menu-itemLabel", has_text=label).click()


def _code_cell_prompts(page) -> list[tuple[str, str]]:
    """(prompt, source) of every code cell of the open notebook, in order."""
    return page.evaluate(
        """sel => Array.from(document.querySelectorAll(sel + ' .jp-CodeCell')).map(
            c => [(c.querySelector('.jp-InputPrompt') || {}).textContent || '',
                  (c.querySelector('.cm-content') || {}).textContent || ''])""",
        NOTEBOOK,
    )


def _shown_error(page) -> str:
    """The end of the first error output shown in the notebook ("" if none)."""
    return page.evaluate(
        """sel => { const e = Array.from(document.querySelectorAll(sel + ' .jp-OutputArea-output'))
            .find(o => o.getAttribute('data-mime-type') === 'application/vnd.jupyter.stderr'
                       && /Error/.test(o.textContent));
          return e ? e.textContent.trim().slice(-600) : ''; }""",
        NOTEBOOK,
    )


def _run_all(page, lab, path: str) -> float:
    """Run All from the Run menu; wait until every code cell has run. A cell that raises
    stops Run All, leaving the cells after it unrun with the kernel idle: after
    STOPPED_SECONDS of that, fail with the error the notebook shows."""
    started = time.perf_counter()
    _menu(page, "Run", "Run All Cells")
    deadline = time.monotonic() + RUN_TIMEOUT
    idle_since = None
    while True:
        prompts = _code_cell_prompts(page)
        pending = [
            p for p, source in prompts if source.strip() and not re.fullmatch(r"\s*\[\d+\]:\s*", p)
        ]
        idle = all(s == "idle" for s in _kernel_states(lab))
        if prompts and not pending and idle:
            break
        idle_since = (idle_since or time.monotonic()) if idle else None
        assert idle_since is None or time.monotonic() - idle_since < STOPPED_SECONDS, (
            f"{path}: Run All stopped, {len(pending)} code cell(s) not run, the kernel idle; "
            f"the notebook shows: {_shown_error(page) or 'no error'}"
        )
        assert time.monotonic() < deadline, f"{path}: Run All did not finish: {pending[:3]}"
        page.wait_for_timeout(1000)
    _wait_idle(page, lab)
    return time.perf_counter() - started


def _save(page, lab, path: str) -> nbformat.NotebookNode:
    """Save from the File menu; return the notebook as JupyterLab wrote it to disk."""
    file = lab.root / path
    before = file.stat().st_mtime_ns
    _menu(page, "File", "Save Notebook")
    deadline = time.monotonic() + 60
    while file.stat().st_mtime_ns == before:
        assert time.monotonic() < deadline, f"{path} was not saved"
        page.wait_for_timeout(200)
    page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty").wait_for(state="detached")
    while True:  # the new mtime can be seen while the server is still writing the file
        try:
            return nbformat.read(file, as_version=4)
        except nbformat.reader.NotJSONError:
            assert time.monotonic() < deadline, f"{path} was saved as invalid JSON"
            page.wait_for_timeout(200)


def _errors(notebook: nbformat.NotebookNode) -> list[str]:
    return [
        f"cell {index}: {output.ename}: {output.evalue}"
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code"
        for output in cell.outputs
        if output.output_type == "error"
    ]


def _rendered_markdown(page) -> list[str]:
    return page.evaluate(
        """sel => Array.from(document.querySelectorAll(
            sel + ' .jp-MarkdownCell .jp-RenderedMarkdown')).map(e => e.textContent)""",
        NOTEBOOK,
    )


def _teacher_panels_shown(page) -> list[str]:
    """Instructor entries in the menu bar, the side bars, the menus and the command palette."""
    found = []
    labels = page.evaluate(
        """() => Array.from(document.querySelectorAll(
            '.lm-MenuBar-item, .lm-TabBar-tab, .jp-SideBar .lm-TabBar-tab, .lm-Menu-item'
        )).map(e => (e.textContent || '') + ' ' + (e.getAttribute('title') || ''))"""
    )
    for label in labels:
        found += [panel for panel in TEACHER_PANELS if panel.lower() in label.lower()]
    return found


# -- the install ------------------------------------------------------------------------------


@_in_lab(0)
def test_the_bundle_installs_only_what_students_need(installation):
    torch = installed_version(installation, "torch")
    assert torch and torch.startswith("2.13.0"), f"the bundle installed torch {torch}"
    for needed in ("jupyterlab", "nbgrader", "ipywidgets", "matplotlib", "bertviz", "course"):
        assert installed_version(installation, needed), f"{needed} is not installed"
    for tool in ("jupyter-book", "sphinx", "pytest", "playwright", "ruff", "jupytext"):
        assert installed_version(installation, tool) is None, f"the bundle installed {tool}"
    settings = installation.venv / "etc" / "jupyter" / "labconfig" / "page_config.json"
    assert settings.is_file(), "the bundle's JupyterLab settings were not installed"
    # the install leaves the student's course folder as it was unpacked
    left = [p.name for p in installation.bundle.glob("*") if p.name == "build" or ".egg" in p.name]
    assert not left, f"the install left {left} in the course folder"


# A test cell run before the first cell, in a kernel of the installed environment started as
# Jupyter's server starts one for the notebook (its path in JPY_SESSION_NAME), on Unix sockets
# in the test's folder (tools.student_lab.kernel_socket_options says why not TCP).
BEFORE_THE_FIRST_CELL = """
import sys
from jupyter_client import KernelManager
manager = KernelManager(kernel_name="python3", transport="ipc", ip="kernel")
manager.start_kernel(env={"JPY_SESSION_NAME": sys.argv[1]})
client = manager.client()
client.start_channels()
try:
    client.wait_for_ready(timeout=120)
    reply = client.execute_interactive("np.zeros(1)", timeout=60, output_hook=lambda m: None)
    print(reply["content"]["traceback"][0])
finally:
    client.stop_channels()
    manager.shutdown_kernel(now=True)
"""


@_in_lab(0)
def test_a_name_from_the_first_cell_used_before_it_ran_says_to_run_it(installation, tmp_path):
    notebook = installation.bundle / "assignments" / "a1_rnn_bptt" / "a1_rnn_bptt.ipynb"
    assert notebook.is_file(), notebook
    ran = _bundle_python(installation, "-c", BEFORE_THE_FIRST_CELL, str(notebook), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr[-3000:]
    first_line = re.sub(r"\x1b\[[0-9;]*m", "", ran.stdout.strip())
    assert first_line == "NameError: name 'np' is not defined: run the first cell (imports) first"


# -- the doctor and the hand-in, outside JupyterLab ---------------------------------------------


def _bundle_python(installation, *args: str, cwd: Path, timeout: float = 600):
    return subprocess.run(
        [str(installation.bin / "python"), *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout,
        env={k: v for k, v in os.environ.items() if k not in NOT_INHERITED},
    )  # fmt: skip


@pytest.mark.sandbox  # the TA's grading command, in its sandbox
def test_doctor_then_handin_then_the_ta_grades_the_handed_in_file(installation, tmp_path):
    """In the installed bundle: ``course doctor`` finds nothing to fix; ``course handin``
    checks an answered Assignment 1 and writes the one file; the TA command grades that file."""
    doctor = _bundle_python(installation, "-m", "course", "doctor", cwd=installation.bundle)
    assert doctor.returncode == 0 and "FAIL" not in doctor.stdout, doctor.stdout + doctor.stderr
    assert doctor.stdout.rstrip().endswith("course doctor: ready"), doctor.stdout
    assert "Validate: nbgrader's extensions, with the student settings" in doctor.stdout

    assignment = "a1_rnn_bptt"
    folder = tmp_path / "course"  # a copy: the labs' tests type into the bundle's own notebooks
    shutil.copytree(installation.bundle / "assignments" / assignment,
                    folder / "assignments" / assignment)  # fmt: skip
    notebook = folder / "assignments" / assignment / f"{assignment}.ipynb"
    source = nbg.read_source(nbg.source_files(assignment)[0])
    nbformat.write(honest_submission(source, nbformat.read(notebook, as_version=4)), notebook)
    handed = _bundle_python(installation, "-m", "course", "handin", "a1", "--student", "jdoe7",
                            cwd=folder)  # fmt: skip
    out = handed.stdout
    assert handed.returncode == 0, out + handed.stderr
    assert "every visible test passes" in out and "not answered" not in out, out
    assert out.rstrip().endswith(f"hand in this file: handin/{assignment}/jdoe7.ipynb"), out

    graded = tmp_path / "graded"
    command = command_line(assignment, folder / "handin" / assignment, graded, "--workers", "1")
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900)
    # exit 1: graded, and only the written answer waits for a human
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    with (graded / "grades.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["student"] for row in rows] == ["jdoe7"], rows
    max_score = json.loads(grades_path(BUILD, assignment).read_text())["autograded_max"]
    assert float(rows[0]["total"]) == max_score, rows[0]
    assert rows[0]["status"] == "needs manual grading", rows[0]  # the written answer waits


# -- no instructor tools ----------------------------------------------------------------------


@_in_lab(0)
def test_no_teacher_panel_is_shown(context, lab):
    page = context.new_page()
    page.goto(lab.page(workspace=next(_WORKSPACES)))
    page.locator(".jp-LauncherCard").first.wait_for()
    assert not _teacher_panels_shown(page)
    for menu in ("File", "Edit", "View", "Run", "Kernel", "Tabs", "Settings", "Help"):
        page.locator(".lm-MenuBar-item", has_text=re.compile(f"^{menu}$")).click()
        page.locator(".lm-Menu").first.wait_for()
        assert not _teacher_panels_shown(page), (
            f"the {menu} menu offers {_teacher_panels_shown(page)}"
        )
        page.keyboard.press("Escape")
    page.keyboard.press("Control+Shift+c")  # the command palette lists every command
    palette = page.locator(".jp-mod-left .lm-CommandPalette, .lm-CommandPalette").first
    palette.wait_for()
    for word in ("grader", "assignment", "course"):
        page.locator(".lm-CommandPalette-input").fill(word)
        commands = page.locator(".lm-CommandPalette-item").all_text_contents()
        teacher = [c for c in commands if any(p.lower() in c.lower() for p in TEACHER_PANELS)]
        assert not teacher, f"the command palette offers {teacher}"
    _shot(page, "00_launcher_and_palette")
    page.close()
    # and on the server: the instructor handlers are not there
    for url in ("/formgrader", "/formgraders", "/assignments"):
        status, _ = lab.get(url)
        assert status == 404, f"{url} answers {status}: an instructor extension is enabled"


# -- lectures ---------------------------------------------------------------------------------


def _slider_drag(page, control) -> None:
    """Drag a slider's handle to three quarters of its track."""
    track = control.locator(".noUi-target").first
    handle = control.locator(".noUi-handle").first
    box, knob = track.bounding_box(), handle.bounding_box()
    target_x = box["x"] + 0.75 * box["width"]
    if abs(target_x - (knob["x"] + knob["width"] / 2)) < 10:
        target_x = box["x"] + 0.25 * box["width"]
    page.mouse.move(knob["x"] + knob["width"] / 2, knob["y"] + knob["height"] / 2)
    page.mouse.down()
    page.mouse.move(target_x, knob["y"] + knob["height"] / 2, steps=8)
    page.mouse.up()


def _choose_other_option(control) -> str:
    select = control.locator("select").first
    options = select.locator("option").all_text_contents()
    current = select.evaluate("s => s.options[s.selectedIndex].textContent")
    others = [o for o in options if o != current]
    assert others, f"the menu offers only {options}"
    select.select_option(label=others[-1])
    return others[-1]


def _output_state(output) -> str:
    return output.inner_html()


def _check_widgets(page, lab, name: str) -> int:
    """Move every control of every interact widget; each must redraw its output."""
    interacts = page.locator(f"{NOTEBOOK} .widget-interact")
    count = interacts.count()
    moved = 0  # the caller ran every cell and waited for the kernel; each move below waits again
    for i in range(count):
        interact = interacts.nth(i)
        interact.scroll_into_view_if_needed()
        output = interact.locator(".widget-output").first
        controls = interact.locator(".widget-hslider, .widget-dropdown")
        assert controls.count() >= 1, f"{name}: widget {i} has no control"
        for j in range(controls.count()):
            control = controls.nth(j)
            label = (control.locator(".widget-label").first.text_content() or f"{j}").strip()
            before_html = _output_state(output)
            assert "<img" in before_html or len(before_html) > 200, (
                f"{name}: widget {i} shows no figure before {label!r} is moved"
            )
            before_png = output.screenshot()
            if j == 0:
                _shot(page, f"{name}-widget{i}-before", interact)
            if "widget-hslider" in (control.get_attribute("class") or ""):
                readout = control.locator(".widget-readout").first
                old_value = readout.text_content()
                _slider_drag(page, control)
                assert readout.text_content() != old_value, (
                    f"{name}: the {label} slider did not move (still {old_value})"
                )
            else:
                _choose_other_option(control)
            deadline = time.monotonic() + 120
            while (
                _output_state(output) == before_html
                or "<img" not in _output_state(output)
                and len(_output_state(output)) < 200
            ):
                assert time.monotonic() < deadline, f"{name}: moving {label!r} changed nothing"
                page.wait_for_timeout(500)
            _wait_idle(page, lab)
            after_png = output.screenshot()
            assert after_png != before_png, f"{name}: moving {label!r} left the figure as it was"
            assert "Traceback" not in output.text_content(), f"{name}: moving {label!r} raised"
            _shot(page, f"{name}-widget{i}-after-{j}", interact)
            moved += 1
    return moved


# The line course.train.fit prints at the end of each run, e.g. "1,500 steps in 9.4 s".
FIT_LINE = re.compile(
    r"^(?:[\d,]+ steps in [\d.]+ s|stopped at the .* budget after [\d,]+ steps|diverged: .*"
    r"|used up the batches after .*)$",
    re.M,
)


def _fit_lines(notebook) -> list[str]:
    text = "".join(
        output.get("text", "")
        for cell in notebook.cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream"
    )
    return FIT_LINE.findall(text)


@pytest.mark.parametrize("lecture", _notebook_params("lectures", LECTURES))
def test_lecture_runs_cleanly_in_jupyterlab(context, lab, lecture):
    path = f"lectures/{lecture}"
    name = Path(lecture).stem
    page = _open_notebook(context, lab, path)
    assert not _teacher_panels_shown(page)
    _shot(page, f"{name}-opened")
    seconds = _run_all(page, lab, path)
    saved = _save(page, lab, path)
    assert not _errors(saved), f"{lecture}: {_errors(saved)}"
    # each training run replayed the build's (its printed time is the recorded one)
    built = nbformat.read(BUILD / "lectures" / lecture, as_version=4)
    assert _fit_lines(saved) == _fit_lines(built), f"{lecture}: a training run was not replayed"
    visible_errors = page.locator(
        ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']",
        has_text="Traceback",
    )
    assert visible_errors.count() == 0, f"{lecture} shows a traceback"

    # the text reads cleanly: no raw MyST, equations numbered and typeset
    texts = _rendered_markdown(page)
    markdown = [c for c in saved.cells if c.cell_type == "markdown"]
    assert len(texts) == len(markdown), (len(texts), len(markdown))
    raw = [m.group(0) for text in texts for m in RAW_MYST.finditer(text)]
    assert not raw, f"{lecture} shows raw MyST markup: {raw[:5]}"
    tags = sum(c.source.count("\\tag{") for c in markdown)
    for cell in page.locator(f"{NOTEBOOK} .jp-MarkdownCell").all():
        cell.scroll_into_view_if_needed()
    page.wait_for_function(  # MathJax typesets a tagged equation with a column of labels
        "([sel, n]) => document.querySelectorAll(sel + ' mjx-labels mjx-mtd').length >= n",
        arg=[NOTEBOOK, tags],
        timeout=60_000,
    )
    numbers = page.evaluate(
        """sel => Array.from(document.querySelectorAll(
            sel + ' mjx-assistive-mml mlabeledtr > mtd:first-child')).map(e => e.textContent)""",
        NOTEBOOK,
    )
    assert numbers == [f"({n})" for n in range(1, tags + 1)], numbers
    unrendered = [t for t in texts if "$$" in t]
    assert not unrendered, f"{lecture}: display math left as TeX: {unrendered[0][:200]}"
    equation = page.locator(f"{NOTEBOOK} mjx-container[display='true']").first
    if tags:
        equation.scroll_into_view_if_needed()
        _shot(page, f"{name}-equations")

    # each diagram the lecture draws (course.viz.diagrams) is shown, as an image that loaded
    diagrams = page.locator(f"{NOTEBOOK} .jp-CodeCell", has_text="_diagram(")
    shown = 0
    for i in range(diagrams.count()):
        cell = diagrams.nth(i)
        cell.scroll_into_view_if_needed()
        image = cell.locator(".jp-OutputArea-output img")
        if not image.count():
            continue
        assert image.first.evaluate("e => e.complete && e.naturalWidth > 0"), (
            f"{lecture}: diagram {i} is not drawn"
        )
        _shot(page, f"{name}-diagram{shown}", image.first)
        shown += 1
    assert shown >= 1, f"{lecture} shows no diagram"

    moved = _check_widgets(page, lab, name)
    assert moved >= 1 or "interact" not in json.dumps([c.source for c in saved.cells]), (
        f"{lecture} creates widgets, but none was found live in JupyterLab"
    )
    references = page.locator(f"{NOTEBOOK} .jp-MarkdownCell", has_text="References").last
    if references.count():
        references.scroll_into_view_if_needed()
        _shot(page, f"{name}-references")
    assert not page.errors, f"{lecture}: JavaScript errors {page.errors}"
    _record(**{f"run_all_seconds/{name}": round(seconds, 1), f"widget_controls/{name}": moved})
    _close_notebook(page)
    lab.shut_down_kernels()


# -- assignments ------------------------------------------------------------------------------


def _type_into_cell(page, cell, cell_type: str, text: str) -> None:
    """Replace a cell's text the way a student does: click into it, select all, type."""
    cell.scroll_into_view_if_needed()
    if cell_type == "markdown":
        cell.locator(".jp-RenderedMarkdown, .jp-MarkdownOutput").first.dblclick()
    editor = cell.locator(".cm-content").first
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    page.keyboard.insert_text(text)


# Every dialog nbgrader's Validate opens has one of these classes: its result (the tests passed
# or failed), or an error (Validate could not run: its kernel did not start, the server failed).
VALIDATE_DIALOG = ".jp-Dialog.nbgrader-SuccessDialog, .jp-Dialog.nbgrader-ErrorDialog"
VALIDATE_RESULT = ".validation-success, .validation-failed"


def _validate_dialog(page, name: str) -> tuple[str, bool]:
    """Click Validate and wait for its dialog; (its text, whether it gives the tests' result
    rather than an error); the dialog is closed after its screenshot."""
    button = page.locator(f"{NOTEBOOK} .jp-NotebookPanel-toolbar .validate-button").first
    assert button.count(), "the notebook toolbar has no Validate button"
    button.click()
    dialog = page.locator(VALIDATE_DIALOG).first
    dialog.wait_for(timeout=300_000)
    text = dialog.text_content()
    result = dialog.locator(VALIDATE_RESULT).count() > 0
    _shot(page, f"{name}-validate")
    dialog.locator(".jp-Dialog-button").last.click()
    return text, result


def _validate(page, name: str) -> str:
    """The text of Validate's result; a test failure at once, with its text, when Validate
    could not run the tests."""
    text, result = _validate_dialog(page, name)
    if not result:
        pytest.fail(f"Validate could not run the tests of {name}: {text}")
    return text


@pytest.mark.parametrize("assignment", _notebook_params("assignments", ASSIGNMENTS))
def test_assignment_with_the_reference_answers_passes_its_tests(context, lab, assignment):
    name = Path(assignment).stem
    reference = BUILD / "solutions" / assignment
    answers = filled_in_answers(reference)
    path = f"assignments/{assignment}"
    released = nbformat.read(lab.root / path, as_version=4)
    page = _open_notebook(context, lab, path)
    assert not _teacher_panels_shown(page)
    _shot(page, f"{name}-opened")
    # Validate runs the notebook's visible tests again, in a kernel of its own (about 20 s in
    # the loaded suite). It is clicked in the first assignment only, as released (it fails)
    # and answered (it succeeds): in every other, Run All below runs the same tests in the
    # same installation, and the build autogrades every assignment's blank and reference
    # notebooks with nbgrader (tests/grading/test_grading.py).
    validates = assignment == ASSIGNMENTS[0]
    if validates:
        untouched = _validate(page, f"{name}-untouched")
        assert "Success!" not in untouched and "failed" in untouched.lower(), untouched
    cells = page.locator(f"{NOTEBOOK} .jp-Notebook .jp-Cell")
    page.wait_for_function(  # JupyterLab adds a long notebook's cells to the page in batches
        "([sel, n]) => document.querySelectorAll(sel).length >= n",
        arg=[f"{NOTEBOOK} .jp-Notebook .jp-Cell", len(released.cells)],
        timeout=60_000,
    )
    assert cells.count() == len(released.cells)
    typed = {}
    for index, cell in enumerate(released.cells):
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell_type, text = answers[grade_id]
            _type_into_cell(page, cells.nth(index), cell_type, text)
            typed[index] = text
    assert set(typed.values()) == {text for _, text in answers.values()}, (
        "a solution cell is missing"
    )
    seconds = _run_all(page, lab, path)
    saved = _save(page, lab, path)
    for index, text in typed.items():
        assert saved.cells[index].source == text, (
            f"{assignment}: cell {index} was not typed as given"
        )
    assert not _errors(saved), f"{assignment}: {_errors(saved)}"
    tests = [
        c
        for c in saved.cells
        if c.get("metadata", {}).get("nbgrader", {}).get("grade") and c.cell_type == "code"
    ]
    assert tests and all(c.execution_count for c in tests), f"{assignment}: a test cell did not run"
    page.locator(
        f"{NOTEBOOK} .jp-CodeCell", has_text="visible test"
    ).first.scroll_into_view_if_needed()
    _shot(page, f"{name}-tests-pass")
    if validates:
        result = _validate(page, name)
        assert "Success! Your notebook passes all the tests." in result, result
    assert not page.errors, f"{assignment}: JavaScript errors {page.errors}"
    _record(**{f"run_all_seconds/{name}": round(seconds, 1)})
    _close_notebook(page)
    lab.shut_down_kernels()


# -- a failing check --------------------------------------------------------------------------


@_in_lab(0)
def test_a_failing_check_shows_its_message_first_and_briefly(context, lab):
    path = "scratch-failing-check.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.cells = [
        nbformat.v4.new_code_cell(
            "from course.checks import assert_close\n\n"
            "assert_close(\n    'hs',\n    [[0.0, 0.5]],\n    [[0.0, 0.59]],\n"
            "    against='the expected value',\n)"
        )
    ]
    nbformat.write(notebook, lab.root / path)
    try:
        page = _open_notebook(context, lab, path)
        _run_all(page, lab, path)
        error = page.locator(
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
        ).first
        error.wait_for()
        lines = [line for line in error.inner_text().splitlines() if line.strip()]
        _shot(page, "failing-check", page.locator(f"{NOTEBOOK} .jp-Cell").first)
        assert lines[0].startswith(
            "AssertionError: hs differs from the expected value by 9.0e-02 at [0, 1]"
        ), lines
        assert len(lines) <= 3 and "checks/" not in error.inner_text(), lines
        _close_notebook(page)
    finally:
        lab.shut_down_kernels()
        (lab.root / path).unlink()


# -- a Validate that cannot start its kernel -------------------------------------------------


@_in_lab(0)
def test_a_validate_whose_kernel_cannot_start_says_why(context, lab):
    # Validate reads its settings at each click: for this click its kernel's sockets go in a
    # folder that does not exist, so the kernel dies as it starts, as one did that found its
    # port taken. The student gets a dialog with the reason, well within the start-up timeout.
    config = lab.log.parent / "config" / "nbgrader_config.py"
    kept = config.read_text()
    path = "scratch-validate-error.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    test = nbformat.v4.new_code_cell("assert 1 + 1 == 2")
    test.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": "sum",
        "points": 1,
        "solution": False,
        "locked": True,
        "schema_version": 3,
    }
    notebook.cells = [test]
    nbformat.write(notebook, lab.root / path)
    try:
        page = _open_notebook(context, lab, path)
        missing = lab.runtime / "no-such-folder" / "validate"
        config.write_text(kept + f"c.KernelManager.ip = {str(missing)!r}\n")
        start = time.monotonic()
        text, result = _validate_dialog(page, "validate-error")
        seconds = time.monotonic() - start
        assert not result, text
        assert "error running the validate command" in text, text
        assert "Kernel died before replying to kernel_info" in text, text
        assert seconds < 60, f"the dialog came after {seconds:.0f} s"
        _close_notebook(page)
    finally:
        config.write_text(kept)
        lab.shut_down_kernels()
        (lab.root / path).unlink()


# -- attention views (bertviz, offline) --------------------------------------------------------

VIEW_TOKENS = ["zebra", "quartz", "violin", "oyster"]
VIEW_SOURCE = ["les", "chats", "dorment"]
VIEWS_SETUP = f"""\
import torch
from course.viz.attention_views import head_view, model_view

g = torch.Generator().manual_seed(0)
tokens = {VIEW_TOKENS!r}
weights = list(torch.randn(2, 1, 3, 4, 4, generator=g).softmax(-1))  # 2 layers of (1, 3, 4, 4)
source = {VIEW_SOURCE!r}
cross = list(torch.randn(2, 1, 3, 4, 3, generator=g).softmax(-1))"""
VIEW_CELLS = [
    "head_view(weights, tokens)",
    "model_view(weights, tokens)",
    "head_view(cross_attention=cross, encoder_tokens=source, decoder_tokens=tokens)",
]
VIEWS_DRAWN = """sel => Array.from(document.querySelectorAll(sel + ' [id^=bertviz-]')).map(v => ({
    texts: Array.from(v.querySelectorAll('svg text')).map(t => t.textContent),
    thumbnails: v.querySelectorAll('.attn_background').length}))"""


def _views_notebook() -> nbformat.NotebookNode:
    """The setup cell and three view cells; the first view's output made beforehand, as in a
    notebook executed by the course build and opened as shipped (not trusted)."""
    from course.viz.attention_views import head_view

    namespace: dict = {}
    exec(VIEWS_SETUP, namespace)  # the same weights the kernel will make
    shipped = head_view(namespace["weights"], VIEW_TOKENS)
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    output = nbformat.v4.new_output(
        "execute_result",
        data={"text/html": shipped.data, "text/plain": repr(shipped)},
        execution_count=2,
    )
    notebook.cells = [nbformat.v4.new_code_cell(VIEWS_SETUP)]
    notebook.cells += [nbformat.v4.new_code_cell(source) for source in VIEW_CELLS]
    notebook.cells[1].outputs, notebook.cells[1].execution_count = [output], 2
    return notebook


def _views_drawn(page, count: int) -> list[dict]:
    page.wait_for_function(
        """([sel, n]) => { const views = document.querySelectorAll(sel + ' [id^=bertviz-]');
            return views.length == n && Array.from(views).every(v => v.querySelector('svg text')); }""",
        arg=[NOTEBOOK, count],
        timeout=60_000,
    )
    return page.evaluate(VIEWS_DRAWN, NOTEBOOK)


@_in_lab(0)
def test_attention_views_draw_offline_in_jupyterlab(context, lab):
    """bertviz's views through course.viz.attention_views, in the student's JupyterLab with the
    network closed: as shipped (untrusted) the view says how to see it; running the cells draws
    the head view, the model view and an encoder-decoder view; saved, they draw on reopening."""
    from course.viz.attention_views import HINT

    path = "scratch-attention-views.ipynb"
    nbformat.write(_views_notebook(), lab.root / path)
    blocked_before = len(context.blocked)
    try:
        page = _open_notebook(context, lab, path)
        output = page.locator(f"{NOTEBOOK} .jp-OutputArea-output").first
        output.wait_for()
        assert HINT.split(".")[0] in output.inner_text(), output.inner_text()[:300]
        assert output.locator("svg").count() == 0, "an untrusted output ran its scripts"
        _shot(page, "attention-views-untrusted")

        _run_all(page, lab, path)
        head, model, cross = _views_drawn(page, 3)
        assert head["texts"] == VIEW_TOKENS + VIEW_TOKENS, head
        assert model["thumbnails"] == 2 * 3 and {"Heads", "Layers"} <= set(model["texts"]), model
        assert cross["texts"] == VIEW_TOKENS + VIEW_SOURCE, cross  # decoder queries, encoder keys
        assert HINT.split(".")[0] not in page.locator(NOTEBOOK).inner_text()
        page.locator(f"{NOTEBOOK} [id^=bertviz-]").nth(1).scroll_into_view_if_needed()
        _shot(page, "attention-views-run")
        saved = _save(page, lab, path)
        assert not _errors(saved), _errors(saved)
        assert not page.errors, f"JavaScript errors {page.errors}"
        _close_notebook(page)
        lab.shut_down_kernels()

        page = _open_notebook(context, lab, path)  # saved by the student: trusted
        assert [v["texts"] for v in _views_drawn(page, 3)] == [
            v["texts"] for v in (head, model, cross)
        ]
        assert not page.errors, f"JavaScript errors {page.errors}"
        _close_notebook(page)
    finally:
        lab.shut_down_kernels()
        (lab.root / path).unlink()
    assert len(context.blocked) == blocked_before, context.blocked[blocked_before:]


# Last in each lab's group: its Chromium asked for nothing outside its JupyterLab.
@pytest.mark.parametrize("index", [pytest.param(i, marks=_in_lab(i)) for i in range(LABS)])
def test_nothing_was_fetched_from_the_internet(context, index):
    assert not context.blocked, f"JupyterLab tried to load {sorted(set(context.blocked))[:5]}"
