"""The course on a real JupyterHub, end to end: ``deploy/jupyterhub/setup.sh`` installs it
(under folders and groups of the test's own), the hub runs on 127.0.0.1 as root with three Linux
accounts made for the test (a grader, two students), everyone logs in through the hub's login
page in Chromium, and an assignment goes from release to feedback:

the grader releases Assignment 1 in Formgrader; each student fetches it in the Assignment List,
answers (one fully, one in part), validates and submits; the grader collects in Formgrader; the
TAs' grading command grades ``submitted/`` and releases the feedback; each student fetches it in
the Assignment List and gets the score the command gave, and Formgrader shows the same scores.

Everything it made (accounts with their homes, groups, folders, processes) is removed after,
also when a step fails. Screenshots of each step are kept in the test's folder."""

from __future__ import annotations

import csv
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from autograder import nbgrader_format as fmt
from autograder.platform.grade import command_line
from course.doctor import CPU_INDEX
from tools.browser import launch
from tools.notebooks import REPO
from tools.submissions import honest_submission

ASSIGNMENT = "a1_rnn_bptt"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
SETUP = REPO / "deploy" / "jupyterhub" / "setup.sh"
BUNDLE = REPO / "dist" / "sequence-models"
TAG = f"sqt{os.getpid()}"  # this run's accounts, groups and folders: sqt<pid>...
GRADER, STUDENTS = f"{TAG}ta", (f"{TAG}s1", f"{TAG}s2")
PYTHON = "/usr/bin/python3"  # runnable by the test's accounts (pyenv's, in /root, is not)

pytestmark = [pytest.mark.hub, pytest.mark.browser, pytest.mark.build]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _password(user: str) -> str:
    return f"pw-{user}-{TAG}"


def _run(*command: str, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{command}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done


def _torch_index() -> str:
    """PyTorch's CPU index for setup.sh, or "" (pip's own settings) on a machine that cannot
    reach it, such as the course machines, where pip finds the CPU wheel on disk."""
    try:
        socket.getaddrinfo("download.pytorch.org", 443)
    except OSError:
        return ""
    return CPU_INDEX


class Hub:
    """The installed course, its hub process and its accounts (see the fixture)."""

    def __init__(self, root: Path | None, tag: str = TAG):
        self.tag = tag
        self.users = (f"{tag}ta", f"{tag}s1", f"{tag}s2")
        self.prefix = Path(f"/opt/{tag}")
        self.exchange = Path(f"/srv/{tag}/exchange")
        self.state = Path(f"/var/lib/{tag}")
        self.groups = (f"{tag}-students", f"{tag}-graders")
        self.url = f"http://127.0.0.1:{_free_port()}"
        self.env = {
            **os.environ,
            "SEQCOURSE_PREFIX": str(self.prefix),
            "SEQCOURSE_EXCHANGE": str(self.exchange),
            "SEQCOURSE_STATE": str(self.state),
            "SEQCOURSE_STUDENTS": self.groups[0],
            "SEQCOURSE_GRADERS": self.groups[1],
            "SEQCOURSE_HUB_URL": self.url,
            "SEQCOURSE_HUB_API_URL": f"http://127.0.0.1:{_free_port()}",
            "SEQCOURSE_PROXY_API_URL": f"http://127.0.0.1:{_free_port()}",
            "PYTHON": PYTHON,
            "SEQCOURSE_TORCH_INDEX": _torch_index(),
        }
        self.root = root
        self.process: subprocess.Popen | None = None
        self.timings: dict[str, float] = {}

    def install(self) -> None:
        started = time.perf_counter()
        _run("bash", str(SETUP), env=self.env, timeout=900)
        self.timings["setup.sh"] = time.perf_counter() - started
        for user, group in ((GRADER, self.groups[1]), *((s, self.groups[0]) for s in STUDENTS)):
            _run("useradd", "-m", "-K", "HOME_MODE=0700", "-G", group, user)
            _run("chpasswd", input=f"{user}:{_password(user)}\n")

    def start(self) -> None:
        log = (self.root / "hub.log").open("w")
        self.process = subprocess.Popen(
            [str(self.prefix / "env" / "bin" / "jupyterhub"), "-f",
             str(self.prefix / "etc" / "jupyterhub_config.py")],
            env=self.env, cwd=self.state, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            assert self.process.poll() is None, (self.root / "hub.log").read_text()[-3000:]
            if "JupyterHub is now running" in (self.root / "hub.log").read_text():
                return
            time.sleep(0.5)
        raise AssertionError("the hub did not start in 120 s")

    def remove(self) -> None:
        """Stop the hub with the users' servers, then remove the accounts, groups and folders.
        Each step runs even where an earlier one failed."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # the hub stops its users' servers
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        for user in self.users:
            subprocess.run(["pkill", "-KILL", "-u", user], capture_output=True)
            subprocess.run(["userdel", "-r", user], capture_output=True)
        for group in self.groups:
            subprocess.run(["groupdel", group], capture_output=True)
        for folder in (self.prefix, self.exchange.parent, self.state):
            shutil.rmtree(folder, ignore_errors=True)

    def leftovers(self) -> list[str]:
        found = []
        for user in self.users:
            if subprocess.run(["id", user], capture_output=True).returncode == 0:
                found.append(f"account {user}")
        for folder in (self.prefix, self.exchange.parent, self.state):
            if folder.exists():
                found.append(str(folder))
        if subprocess.run(["pgrep", "-f", str(self.prefix)], capture_output=True).returncode == 0:
            found.append("a process of the hub")
        return found


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    assert os.geteuid() == 0, "the hub test makes Linux accounts and runs the hub: run as root"
    assert Path(PYTHON).is_file() and shutil.which("npm"), f"needs {PYTHON} and npm (Node.js)"
    assert (BUNDLE / "course").is_dir(), "run `make` first: the hub installs the student bundle"
    for folder in Path("/opt").glob("sqt*"):  # what a killed earlier run left
        pid = folder.name[len("sqt") :]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            Hub(None, folder.name).remove()
    hub = Hub(tmp_path_factory.mktemp("hub"))
    try:
        hub.install()
        hub.start()
        yield hub
    finally:
        hub.remove()
        assert not hub.leftovers(), hub.leftovers()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = launch(playwright)
        yield chromium
        chromium.close()


def _log_in(browser, hub: Hub, user: str):
    page = browser.new_page(viewport={"width": 1300, "height": 850})
    page.set_default_timeout(180_000)
    page.goto(f"{hub.url}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", _password(user))
    page.click("#login_submit")
    page.wait_for_url(f"**/user/{user}/lab**")
    page.wait_for_selector(".jp-DirListing-content")
    return page


def _shot(page, hub: Hub, name: str) -> None:
    page.screenshot(path=str(hub.root / f"{name}.png"), full_page=True)


def _assignment_list(page):
    page.click(".lm-MenuBar-itemLabel:text-is('Nbgrader')")
    page.click(".lm-Menu-itemLabel:text-is('Assignment List')")
    page.wait_for_selector("#released_assignments_list")
    return page


def _formgrader_row(page, hub: Hub, action: str) -> None:
    """On Formgrader's Manage Assignments page (its own tab: JupyterHub forbids it in a
    frame), press ``action`` (release, collect) in the assignment's row and see it succeed."""
    page.goto(f"{hub.url}/user/{GRADER}/formgrader/manage_assignments")
    row = page.locator("tr", has_text=ASSIGNMENT).first
    row.locator(f"td.{action} a").click()
    page.wait_for_selector("#success-modal, #error-modal")
    said = page.inner_text(".modal-dialog")
    assert page.locator("#success-modal").count() == 1, said


def test_an_assignment_goes_from_release_to_feedback_on_the_hub(hub, browser):
    # the graders' course directory, made by root as the guide's grader would make it
    home = Path(f"/home/{GRADER}")
    course = home / "seqcourse"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    _run(sys.executable, "-m", "tools.hub", "course", str(course), "--assignment",
         ASSIGNMENT, "--exchange", str(hub.exchange), cwd=REPO, env=env, timeout=600)  # fmt: skip
    _run("chown", "-R", f"{GRADER}:{GRADER}", str(course))

    started = time.perf_counter()
    grader = _log_in(browser, hub, GRADER)
    hub.timings["grader's first log-in"] = time.perf_counter() - started
    _formgrader_row(grader, hub, "release")
    _shot(grader, hub, "1-grader-released")
    outbound = hub.exchange / "seqcourse" / "outbound" / ASSIGNMENT / NOTEBOOK
    assert outbound.is_file()

    source = fmt.read_source(fmt.source_files(ASSIGNMENT)[0])
    for number, student in enumerate(STUDENTS):
        page = _assignment_list(_log_in(browser, hub, student))
        _shot(page, hub, f"2-{student}-before-fetch")
        page.click("#released_assignments_list button:text-is('Fetch')")
        page.wait_for_selector("#fetched_assignments_list button:text-is('Submit')")
        fetched = Path(f"/home/{student}") / ASSIGNMENT / NOTEBOOK
        release = nbformat.read(fetched, as_version=4)
        answer = honest_submission(source, release)
        if number == 1:  # the second student answers the first half of the parts only
            parts = [i for i, c in enumerate(answer.cells) if fmt.cell_kind(c) == "solution"]
            for i in parts[len(parts) // 2 :]:
                answer.cells[i] = release.cells[i]
        nbformat.write(answer, fetched)  # as the student's own editing would
        page.click(f"#fetched_assignments_list a:text-is('{ASSIGNMENT}')")
        page.click("#fetched_assignments_list button:text-is('Validate')")
        verdict = page.inner_text(".jp-Dialog")
        assert ("passes all the tests" in verdict) == (number == 0), verdict
        page.keyboard.press("Escape")
        page.click("#fetched_assignments_list button:text-is('Submit')")
        page.wait_for_selector("#submitted_assignments_list button:text-is('Fetch Feedback')")
        _shot(page, hub, f"3-{student}-submitted")
        page.close()

    _formgrader_row(grader, hub, "collect")
    submitted = course / "submitted"
    assert sorted(p.name for p in submitted.iterdir()) == sorted(STUDENTS)
    for student in STUDENTS:
        assert (submitted / student / ASSIGNMENT / "timestamp.txt").is_file()

    out = hub.root / "grading"
    started = time.perf_counter()
    argv = command_line(ASSIGNMENT, submitted, out, "--workers", "2", "--release-feedback")
    graded = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=900)
    hub.timings["grading command"] = time.perf_counter() - started
    assert graded.returncode in (0, 1), graded.stdout + graded.stderr  # 1: written answers wait
    assert "feedback released through nbgrader's exchange: 2 of 2" in graded.stdout
    with (out / "grades.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    totals = {row["student"]: float(row["total"]) for row in rows}
    (maximum,) = {float(row["max"]) for row in rows}
    assert totals[STUDENTS[0]] > totals[STUDENTS[1]] > 0, totals

    for student in STUDENTS:
        page = _assignment_list(_log_in(browser, hub, student))
        page.click("#submitted_assignments_list button:text-is('Fetch Feedback')")
        page.wait_for_selector("#submitted_assignments_list a:text-is('(view feedback)')")
        _shot(page, hub, f"4-{student}-feedback")
        (fetched,) = (Path(f"/home/{student}") / ASSIGNMENT / "feedback").glob(
            f"*/{ASSIGNMENT}.html"
        )
        score = re.search(r"Score: ([\d.]+) / ([\d.]+)", fetched.read_text(encoding="utf-8"))
        assert score and float(score.group(1)) == pytest.approx(totals[student]), student
        page.close()

    # Formgrader's gradebook holds the command's scores (and the notebooks, for manual grading)
    grader.goto(f"{hub.url}/user/{GRADER}/formgrader/manage_students")
    for student in STUDENTS:
        row = grader.locator("tr", has_text=student).first
        row.locator(f"td.score:text-is('{totals[student]:g} / {maximum:g}')").wait_for()
    _shot(grader, hub, "5-grader-students")
    print("hub test timings:", {k: f"{v:.0f} s" for k, v in hub.timings.items()})
