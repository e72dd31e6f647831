"""The TA grading command against an attack suite, honest submissions, bad input and re-runs.

One batch (``python -m autograder grade a1_rnn_bptt <folder> --workers 2 --timeout 30``) grades
every submission of tests/grading/attacks; each has an expected autograded score and status. Then the
same folder is graded again: nothing is judged twice and nothing changes. The batch runs as
root (the sandbox's root mode) with every attack, and as an ordinary user (its rootless mode,
in user namespaces) with the attacks whose outcome rests on the sandbox, which is built
differently in the two modes: escapes, what the kernel can read and see, memory, processes,
files and disk, the reply cap, and an honest submission. The rest (tampering, forged scores,
bad input, the deadline) is decided by the grader outside the sandbox, the same in both.
"""

from __future__ import annotations

import base64
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.fingerprint import grading_fingerprint
from autograder.platform.course_folder import prepare_course
from autograder.platform.grade import command_line
from autograder.platform.sandbox import BASE_UID, N_SLOTS
from tests.grading import unprivileged
from tests.grading.attacks import cases, write_cases
from tools.build import BUILD
from tools.notebooks import REPO

pytestmark = pytest.mark.sandbox  # the grading command, its sandbox and its kernels

ASSIGNMENT = "a1_rnn_bptt"
SCREENSHOTS = BUILD / "screenshots" / "grading"


MODES = ["root", "rootless"]
# Limits with room for a loaded machine (the suite runs beside other jobs): a memory bomb's cell
# took 15 s and a whole memory-bomb submission 56 s with the tests at nice 10 beside three busy
# processes on 2 cores, where they take about 1 s and 10 s on a quiet machine.
TIMEOUT = 30  # seconds per cell and per graded call
# seconds per submission: every case ends well within but cells_over_the_deadline (five cells
# of 20 s), whose name sorts first, so the grader (in name order) starts it first, beside the rest
DEADLINE = 90


def _run(folder: Path, out: Path, tmpdir: Path, mode: str) -> subprocess.CompletedProcess:
    """Grade ``folder`` into ``out``; the kernels' folders go under ``tmpdir`` (this batch's).
    Rootless: as an ordinary user (:mod:`unprivileged`), whose home is next to ``tmpdir``."""
    options = ("--workers", "2", "--timeout", str(TIMEOUT), "--deadline", str(DEADLINE))
    options += ("--kernel-memory-mb", "1024", "--max-reply-mb", "8", "--quiet")
    argv = command_line(ASSIGNMENT, folder, out, *options)
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    if mode == "rootless":
        argv = unprivileged.command(argv)
        env = unprivileged.environment(tmpdir.parent / "home", tmpdir)
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=900, env=env)


def _rows(out: Path) -> dict[str, dict]:
    with (out / "grades.csv").open(newline="") as handle:
        return {row["student"]: row for row in csv.DictReader(handle)}


def _folders(mode: str, tmp_path_factory) -> dict[str, Path]:
    """This batch's folders; an ordinary user's own, outside pytest's (closed) folder, if rootless."""
    if mode == "root":
        return {
            name: tmp_path_factory.mktemp(name) for name in ("grading", "submissions", "kernels")
        }
    base = unprivileged.own_folder("ta-")
    found = {name: base / name for name in ("grading", "submissions", "kernels", "home")}
    for folder in found.values():
        folder.mkdir()
    return found


def _batch(mode: str, tmp_path_factory):
    """Grade this mode's attacks twice; yield what the tests look at."""
    folders = _folders(mode, tmp_path_factory)
    out = folders["grading"]
    course = prepare_course(out, ASSIGNMENT)
    source = nbformat.read(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    release = nbformat.read(course / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    secrets = [
        str(REPO / "autograder" / "hidden" / f"{ASSIGNMENT}.py"),
        str(REPO / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.py"),
        str(course / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"),
        str(course / "gradebook.db"),
        "/etc/shadow",
    ]
    found = [c for c in cases(source, release, secrets) if c.name in EXPECTED[mode]]
    folder, tmpdir = folders["submissions"], folders["kernels"]
    write_cases(found, folder)
    if mode == "rootless":
        unprivileged.give(out.parent)
    first = _run(folder, out, tmpdir, mode)
    rows = _rows(out)
    csv_text = (out / "grades.csv").read_text()
    second = _run(folder, out, tmpdir, mode)
    yield {
        "mode": mode,
        "out": out,
        "course": course,
        "cases": {c.name: c for c in found},
        "first": first,
        "rows": rows,
        "csv": csv_text,
        "second": second,
        "folder": folder,
        "tmpdir": tmpdir,
    }
    if mode == "rootless":
        shutil.rmtree(out.parent, ignore_errors=True)


# One fixture per mode, without parameters: each batch is graded once for the module, whatever
# order the tests run in (a parametrized module fixture is rebuilt when the order interleaves).
# The tests of each batch are one xdist group: pytest-xdist runs them in one worker, which
# grades that batch once; the two batches are graded side by side in two workers.
IN_ROOT_GROUP = pytest.mark.xdist_group("ta_root")
IN_ROOTLESS_GROUP = pytest.mark.xdist_group("ta_rootless")
GROUP = {"root": IN_ROOT_GROUP, "rootless": IN_ROOTLESS_GROUP}


@pytest.fixture(scope="module")
def root_batch(tmp_path_factory):
    yield from _batch("root", tmp_path_factory)


@pytest.fixture(scope="module")
def rootless_batch(tmp_path_factory):
    yield from _batch("rootless", tmp_path_factory)


@pytest.fixture(params=[pytest.param(mode, marks=GROUP[mode]) for mode in MODES])
def batch(request):
    """The batch of each mode, for the tests that hold in both."""
    return request.getfixturevalue(f"{request.param}_batch")


# Input that is not a student's file: links (out of the folder, to the instructor's source, to
# /dev/zero), a named pipe, and names a lossy id would merge. Decided before any kernel starts.
INPUT = [
    "link_to_shadow",
    "link_to_instructor_source",
    "link_to_dev_zero",
    "named_pipe",
    "z_uni_学生",
    "z_uni_老师",
]
ALL = [
    "honest_correct",
    "honest_blank",
    "hardcoded_cheat",
    "infinite_loop",
    "memory_bomb",
    "memory_bomb_growing",
    "fork_bomb",
    "cells_over_the_deadline",
    "memory_bomb_processes",
    "many_files",
    "fill_the_disk",
    "os_exit",
    "sys_exit",
    "os_exit_in_graded_function",
    "deleted_test_cells",
    "edited_test_cells",
    "changed_points",
    "duplicated_ids",
    "monkeypatched_comparisons",
    "fake_passed_output",
    "patched_exit_and_display",
    "read_and_write_secrets",
    "import_hidden_checks",
    "hostile_markdown",
    "hostile_outputs",
    "oversized_outputs",
    "probe_grading_world",
    "escape_the_sandbox",
    "forged_replies",
    "oversized_reply",
    "invalid_json",
    "empty_file",
    "not_a_notebook",
    "deeply_nested_json",
    "nbformat_v3",
    "wrong_assignment",
    "wrong_kernel_name",
    "r_kernel",
    *INPUT,
]
ROOTLESS = [
    *INPUT,
    "honest_correct",
    "memory_bomb",
    "memory_bomb_processes",
    "fork_bomb",
    "many_files",
    "fill_the_disk",
    "oversized_reply",
    "read_and_write_secrets",
    "escape_the_sandbox",
    "probe_grading_world",
]
EXPECTED = {"root": ALL, "rootless": ROOTLESS}


def test_every_attack_is_in_the_batch(batch):
    state = json.loads((batch["out"] / "state.json").read_text())
    assert state["sandbox"] == batch["mode"], batch["first"].stderr[-3000:]
    assert sorted(batch["cases"]) == sorted(EXPECTED[batch["mode"]])
    assert sorted(batch["rows"]) == sorted(EXPECTED[batch["mode"]]), batch["first"].stderr[-3000:]


# Without a memory cgroup (rootless), memory is capped per process only: the four processes
# of memory_bomb_processes all run, and the summary and state.json say how memory was capped.
ROOTLESS_STATUS = {"memory_bomb_processes": "needs manual grading"}


@pytest.mark.parametrize(
    "mode, name", [pytest.param(m, n, marks=GROUP[m]) for m in MODES for n in EXPECTED[m]]
)
def test_score_and_status(request, mode, name):
    batch = request.getfixturevalue(f"{mode}_batch")
    case, row = batch["cases"][name], batch["rows"][name]
    status = ROOTLESS_STATUS.get(name, case.status) if batch["mode"] == "rootless" else case.status
    assert row["status"] == status, row
    if case.score is None:
        assert row["total"] == "", row  # ungradable: no score at all, never a silent 0
        assert row["message"], row
    else:
        manual = float(row["tbptt_vs_ngram"] or 0)
        assert float(row["total"]) - manual == case.score, row


@IN_ROOT_GROUP
def test_honest_scores_are_exact_per_part(root_batch):
    batch = root_batch  # the same in either mode: root's batch only
    correct, blank = batch["rows"]["honest_correct"], batch["rows"]["honest_blank"]
    parts = [
        "test_forward_visible",
        "test_forward_hidden",
        "test_backward_visible",
        "test_backward_hidden",
        "test_clip_visible",
        "test_clip_hidden",
    ]
    assert [float(correct[p]) for p in parts] == [1, 3, 2, 4, 1, 2]
    assert [float(blank[p]) for p in parts] == [0] * 6
    cheat = batch["rows"]["hardcoded_cheat"]
    assert [float(cheat[p]) for p in parts] == [1, 0, 2, 0, 1, 0]


def test_exit_code_says_a_human_must_look(batch):
    assert batch["first"].returncode == 2, batch["first"].stderr[-3000:]


def test_rerun_judges_nothing_and_changes_nothing(batch):
    assert batch["second"].returncode == batch["first"].returncode
    assert (batch["out"] / "grades.csv").read_text() == batch["csv"]
    state = json.loads((batch["out"] / "state.json").read_text())
    assert state["timing"]["judged"] == 0
    # a change to anything that can change a grade would judge everything again
    fingerprint = grading_fingerprint(ASSIGNMENT)
    assert state["fingerprint"].startswith(fingerprint)
    assert (batch["course"] / ".source-fingerprint").read_text() == fingerprint
    with Gradebook(f"sqlite:///{batch['course'] / 'gradebook.db'}") as gradebook:
        students = {s.id for s in gradebook.students}
        submissions = gradebook.assignment_submissions(ASSIGNMENT)
        assert students == set(EXPECTED[batch["mode"]])
        gradable = {n for n, c in batch["cases"].items() if c.score is not None}
        assert sorted(s.student.id for s in submissions) == sorted(gradable)


def test_the_similar_solutions_are_compared_after_grading(batch):
    """similarity.json and the report's section, for every graded submission; the rerun's
    copy is the same (nothing was judged again, and the comparison reads files only)."""
    data = json.loads((batch["out"] / "similarity.json").read_text())
    assert data["parts"] == ["rnn_forward", "classification_loss", "rnn_backward",
                             "clip_by_global_norm"]  # fmt: skip
    students = set(batch["rows"])
    assert {p["a"] for p in data["pairs"]} | {p["b"] for p in data["pairs"]} <= students
    assert all(p["score"] >= data["threshold"] for p in data["pairs"])
    assert data["compared"] > 0
    assert {s["owner"] for s in data["skipped"]} <= students
    report = (batch["out"] / "report.html").read_text()
    assert '<h2 id="similarity">' in report and "similar solutions" not in batch["second"].stderr


def _outputs(batch, student: str) -> str:
    judged = batch["course"] / "judged" / student / ASSIGNMENT / f"{ASSIGNMENT}.json"
    return json.dumps(json.loads(judged.read_text()))


def test_secrets_are_out_of_reach_and_the_gradebook_unwritable(batch):
    text = _outputs(batch, "read_and_write_secrets")
    assert "READ" not in text.replace("BLOCKED", "") and "WROTE" not in text, text
    assert text.count("BLOCKED ") == 5 and "BLOCKED-WRITE" in text
    assert "ENV []" in text, "the kernel's environment tells it that it is being graded"


@IN_ROOT_GROUP
def test_the_deadline_stops_a_submission_and_says_so(root_batch):
    batch = root_batch  # the same in either mode: root's batch only
    assert min(batch["cases"]) == "cells_over_the_deadline"  # judged first: see DEADLINE
    message = batch["rows"]["cells_over_the_deadline"]["message"]
    assert "stopped at the submission's deadline" in message, message
    assert f"longer than {DEADLINE} s in all" in message, message


def test_the_kernel_writes_only_its_own_capped_tmpfs(batch):
    text = _outputs(batch, "many_files")
    assert "BLOCKED /home/student/.local/share/jupyter/runtime Read-only file system" in text
    assert "WROTE /tmp" in text and "WROTE ." in text, text
    assert "No space left on device" in text, text
    assert "No space left on device" in _outputs(batch, "fill_the_disk")


def test_memory_is_capped_per_kernel_as_root_and_per_process_rootless(batch):
    state = json.loads((batch["out"] / "state.json").read_text())
    exits = re.search(r"EXITS \[([^\]]*)\]", _outputs(batch, "memory_bomb_processes"))
    statuses = [int(e) for e in exits.group(1).split(", ")]
    if batch["mode"] == "root":
        assert state["memory"].startswith("1024 MB per kernel (cgroup v"), state["memory"]
        assert 9 in statuses, statuses  # SIGKILL from the OOM killer, for the cgroup
        assert "1024 MB together" in batch["rows"]["memory_bomb_processes"]["message"]
    else:
        assert "per process only" in state["memory"], state["memory"]
        assert statuses == [0] * 4, statuses


def test_no_way_out_of_the_sandbox(batch):
    text = _outputs(batch, "escape_the_sandbox")
    assert "ESCAPED" not in text and text.count("BLOCKED ") == 8, text
    # no capability of any kind (the bounding set is kept in rootless mode: it grants nothing)
    caps = re.search(r"CAPS \[([^\]]*)\]", text).group(1).replace("'", "").split(", ")
    assert caps[:3] == ["0000000000000000"] * 3 and caps[4] == "0000000000000000", caps


def _world(batch) -> dict:
    judged = batch["course"] / "judged" / "probe_grading_world" / ASSIGNMENT / f"{ASSIGNMENT}.json"
    cells = json.loads(judged.read_text())["cells"].values()
    text = "".join(o.get("text", "") for outputs in cells for o in outputs)
    found = re.search(r"WORLD (\S+)", text)
    assert found, text[-2000:]
    return json.loads(zlib.decompress(base64.b64decode(found.group(1))))


def test_nothing_in_the_kernel_world_says_grading(batch):
    world = _world(batch)
    assert world["cwd"] == world["environ"]["PWD"] == "/home/student/work"
    assert world["files"] == [f"{ASSIGNMENT}.ipynb"]
    assert world["hostname"] == "jupyter" and world["user"] == world["pw_name"] == "student"
    assert world["argv"][1:2] == ["-f"] and world["argv"][2].startswith(
        "/home/student/.local/share/jupyter/runtime/kernel-"
    )
    assert "__call_bridge__" in world["builtins"]  # the probe ran after the tests
    text = json.dumps(world)
    # where the TA installed the course is theirs to name; everything else is the sandbox's
    installs = {REPO, Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).parent}
    for path in sorted({str(p) for i in installs for p in (i, i.resolve())}, key=len)[::-1]:
        text = text.replace(path, "<install>")
    for word in ("autograder", "grade", "nbgrader", "grading"):
        assert word not in text.lower(), (word, text[max(0, text.lower().find(word) - 300) :][:600])


def test_the_sandbox_drops_a_reply_over_the_cap_undecoded(monkeypatch, tmp_path):
    from autograder.platform import sandbox, wire

    monkeypatch.setattr(sandbox, "MAX_PAYLOAD_CHARS", 1000)
    kernel = sandbox.SandboxKernel(tmp_path, sandbox.Limits(cell_timeout=20))
    try:
        code = (
            "from IPython.display import publish_display_data\n"
            f"publish_display_data({{{wire.MIMETYPE!r}: 'x' * 1001}})\n"
            f"publish_display_data({{{wire.MIMETYPE!r}: 'y' * 1000}})\n"
        )
        outcome = kernel.run_hidden(code, 20, wire.MIMETYPE)
        assert not _gone(tmp_path, seconds=0)  # the check sees a running kernel
    finally:
        kernel.close()
    assert outcome.status == "ok" and outcome.oversized == 1 and outcome.payloads == ["y" * 1000]
    assert _gone(tmp_path), "the kernel outlived close()"


def test_the_grader_refuses_a_message_over_the_reply_cap_unread(tmp_path):
    from autograder.platform import sandbox, wire

    kernel = sandbox.SandboxKernel(tmp_path, sandbox.Limits(cell_timeout=20, reply_mb=1))
    try:
        code = (
            "from IPython.display import publish_display_data\n"
            f"publish_display_data({{{wire.MIMETYPE!r}: 'x' * 2**21}})\n"
        )
        refused = kernel.run_hidden(code, 20, wire.MIMETYPE)
        printed = kernel.run_cell("print('x' * 2**21)")
        after = kernel.run_hidden(  # in a fresh kernel: the connection is not trusted again
            "from IPython.display import publish_display_data\n"
            f"publish_display_data({{{wire.MIMETYPE!r}: 'small'}})",
            20,
            wire.MIMETYPE,
        )
        restarts = kernel.restarts
    finally:
        kernel.close()
    assert refused.status == "ok" and refused.refused >= 1 and refused.payloads == []
    assert printed.refused >= 1 and "over 1 MB was dropped" in printed.outputs[-1]["text"]
    assert after.refused == 0 and after.payloads == ["small"] and restarts == 2


BUSY_PROCESSES = """import os, time
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        end = time.monotonic() + 3
        while time.monotonic() < end:
            pass
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
used = os.times()
print(round(used.children_user + used.children_system, 2))
"""


def test_a_kernels_processes_share_the_cores_it_is_given(tmp_path):
    """Four processes busy for 3 s in a kernel given a quarter of a core use about 0.75 s of
    processor time together (uncapped, on two idle cores, they would use 6 s, and beside three
    busy processes about 3 s); the cap is the kernel's own cgroup's."""
    from autograder.platform import sandbox

    found = sandbox.cpu_cgroups()
    assert not isinstance(found, str), found
    kernel = sandbox.SandboxKernel(tmp_path, sandbox.Limits(cell_timeout=30, kernel_cpus=0.25))
    try:
        cgroup = kernel.cpu_cgroup or kernel.cgroup
        if found[1] == 1:
            quota = (cgroup.path / "cpu.cfs_quota_us").read_text().split()
            period = (cgroup.path / "cpu.cfs_period_us").read_text().split()
        else:
            quota, period = (cgroup.path / "cpu.max").read_text().split()[:1], ["100000"]
        assert int(quota[0]) / int(period[0]) == 0.25
        outcome = kernel.run_cell(BUSY_PROCESSES)
    finally:
        kernel.close()
    assert outcome.status == "ok", outcome
    used = float(outcome.outputs[-1]["text"])
    assert 0.2 < used < 1.5, f"four busy processes used {used} s of processor time in 3 s"
    assert "1 core(s) per kernel" in sandbox.cpu_cap(sandbox.Limits())


def _gone(under: Path, seconds: float = 15.0, mode: str = "root") -> bool:
    """True once no sandbox process has its folders under ``under`` (a killed pid namespace
    takes a moment). Only kernels of this test count: other grading runs on the machine
    have their folders elsewhere, and a kernel's mount table names the host folder it got
    (by its path within its file system: the last two names of ``under`` are looked for).
    Rootless kernels run as the ordinary user who graded."""
    uids = {BASE_UID + i for i in range(N_SLOTS)} if mode == "root" else {unprivileged.UID}
    deadline = time.monotonic() + seconds
    while True:
        left = []
        for proc in Path("/proc").iterdir():
            try:
                if not proc.name.isdigit():
                    continue
                status = (proc / "status").read_text()
                uid = int(status.split("\nUid:", 1)[1].split()[0])
                if (
                    uid in uids
                    and f"/{under.parent.name}/{under.name}/" in (proc / "mountinfo").read_text()
                ):
                    left.append(proc.name)
            except OSError:
                continue  # it ended while we looked
        if not left:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)


def test_no_sandbox_process_survives(batch):
    assert _gone(batch["tmpdir"], mode=batch["mode"])


@IN_ROOT_GROUP
def test_feedback_shows_failures_but_no_hidden_test(root_batch):
    batch = root_batch  # the same in either mode: root's batch only
    feedback = batch["course"] / "feedback" / "honest_blank" / ASSIGNMENT / f"{ASSIGNMENT}.html"
    html = feedback.read_text()
    assert "NotImplementedError" in html
    for secret in (
        "BEGIN HIDDEN",
        "autograder.hidden",
        "check_rnn_backward(",
        "_call_by_hand",
        "no_shortcuts",
        "_reference",
    ):
        assert secret not in html, secret
    for path in (batch["course"] / "feedback").rglob("*.html"):
        if "import_hidden_checks" in path.parts:
            continue  # that student wrote the import into their own cell
        assert "autograder.hidden" not in path.read_text(), path


@IN_ROOT_GROUP
def test_a_failing_hidden_test_explains_itself_in_the_feedback(root_batch):
    batch = root_batch  # the same in either mode: root's batch only
    html = (
        batch["course"] / "feedback" / "hardcoded_cheat" / ASSIGNMENT / f"{ASSIGNMENT}.html"
    ).read_text()
    assert "hidden" in html and "differs from" in html or "should return" in html


def test_bad_arguments_exit_3(tmp_path):
    result = subprocess.run(
        command_line("no_such_assignment", tmp_path, tmp_path / "out"),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )
    assert result.returncode == 3 and "unknown assignment" in result.stderr


# -- what a TA and a student open: formgrader's pages and the feedback files, in Chromium ------

HOSTILE = ["hostile_markdown", "hostile_outputs", "honest_correct"]


def _audit(page, expect_math: bool = True) -> dict:
    from tools.formgrader import AUDIT_JS, MATHJAX_JS

    math = page.evaluate(MATHJAX_JS) if expect_math else None
    page.wait_for_timeout(500)  # a handler that fires late (onerror of a failed load) has run
    return {"math": math, **page.evaluate(AUDIT_JS, "#notebook-container")}


@pytest.mark.browser
@IN_ROOT_GROUP
def test_no_student_markup_runs_in_formgrader_or_feedback(root_batch, tmp_path):
    batch = root_batch  # the same in either mode: root's batch only
    from playwright.sync_api import sync_playwright

    from tools.browser import launch, offline_context
    from tools.formgrader import manual_grading_url, running_formgrader

    course = batch["course"]
    feedback = {s: course / "feedback" / s / ASSIGNMENT / f"{ASSIGNMENT}.html" for s in HOSTILE}
    with running_formgrader(course, tmp_path / "home") as lab, sync_playwright() as playwright:
        browser = launch(playwright)
        own = {path.as_uri() for path in feedback.values()} | {
            (batch["out"] / "report.html").as_uri()
        }
        context = offline_context(
            browser,
            lambda url: (url.startswith(lab.url + "/") and "/pwned/" not in url) or url in own,
            viewport=(1200, 900),
            timeout_ms=60_000,
        )
        dialogs: list[str] = []
        page = context.new_page()
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(f"{lab.url}/formgrader?token={lab.token}")  # logs in: the TA's session
        seen = {}
        for student in HOSTILE:
            page.goto(manual_grading_url(lab, course, ASSIGNMENT, ASSIGNMENT, student))
            seen[f"formgrader {student}"] = _audit(page)
            if student == "hostile_markdown":
                assert page.get_by_text("My answer, with math that must still render").count() == 2
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                page.get_by_text("My answer, with math").first.scroll_into_view_if_needed()
                page.screenshot(path=SCREENSHOTS / "formgrader_hostile_markdown.png")
        for student, path in feedback.items():
            page.goto(path.as_uri())
            seen[f"feedback {student}"] = _audit(page)
        report = _read_report(page, batch["out"] / "report.html")
        browser.close()
    _check_report(report, batch["rows"])
    for where, found in seen.items():
        assert found["ran"] == [] and found["live"] == [], (where, found)
        assert found["math"]["rendered"] >= 20 and found["math"]["errors"] == 0, (where, found)
    assert dialogs == []
    assert context.blocked == [], context.blocked  # nothing left the page's own server


REPORT_JS = """
() => ({
  scripts: document.scripts.length,
  ran: window.__pwned || [],
  look: [...document.querySelectorAll('#look + table tr')].slice(1).map(
    tr => [...tr.cells].map(td => td.textContent)),
  parts: Object.fromEntries([...document.querySelectorAll('#parts + table tr')].slice(1).map(
    tr => [tr.cells[0].textContent, [...tr.cells].slice(2).map(td => td.textContent)])),
  bins: [...document.querySelectorAll('#scores + table tr')].slice(1).map(
    tr => Number(tr.cells[1].textContent)),
})
"""


def _read_report(page, path: Path) -> dict:
    page.goto(path.as_uri())
    page.wait_for_timeout(500)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "report.png", full_page=True)
    return page.evaluate(REPORT_JS)


def _check_report(report: dict, rows: dict[str, dict]) -> None:
    """The report says what the CSV says, and nothing in it runs."""
    assert report["scripts"] == 0 and report["ran"] == []
    look = {r["student"]: r["status"] for r in rows.values()}
    look = {s: v for s, v in look.items() if v not in ("graded", "needs manual grading")}
    assert {cells[0]: cells[1] for cells in report["look"]} == look
    assert sum(report["bins"]) == sum(1 for r in rows.values() if r["total"] != "")
    scored = [r for r in rows.values() if r["total"] != ""]
    full = sum(1 for r in scored if float(r["test_forward_visible"]) == 1)
    assert report["parts"]["test_forward_visible"][0].startswith(f"{full} / {len(scored)}")
    assert "by hand" in report["parts"]["tbptt_vs_ngram"][0]
    forward_hidden = report["parts"]["test_forward_hidden"][2]
    assert "hardcoded_cheat" in forward_hidden and "honest_blank" in forward_hidden
    clip = report["parts"]["test_clip_visible"][2]
    assert "<img src=x onerror=" in clip and "hostile_markdown" in clip  # shown as text


@pytest.mark.browser
@IN_ROOT_GROUP
def test_the_audit_sees_student_script_when_nothing_sanitises(root_batch, tmp_path):
    """The control: nbconvert's stock exporter on the same graded notebook runs the payloads."""
    batch = root_batch  # the same in either mode: root's batch only
    from nbconvert import HTMLExporter

    from tools.browser import local_page

    graded = (
        batch["course"] / "autograded" / "hostile_markdown" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    )
    html, _ = HTMLExporter(template_name="classic").from_filename(str(graded))
    page_file = tmp_path / "stock.html"
    page_file.write_text(html)
    with local_page(page_file, viewport=(1200, 900)) as page:
        page.wait_for_timeout(1500)  # the payloads run, then its meta refresh leaves the page
    blocked = page.context.blocked
    ran = {url.rsplit("/", 1)[-1] for url in blocked if url.startswith("file:///pwned/")}
    for what in ("img-onerror", "script", "svg-onload", "srcdoc", "iframe", "ontoggle"):
        assert f"answer-{what}" in ran and f"free-{what}" in ran, (what, sorted(ran))
    assert "http://evil.example/free-md-image.png" in blocked, blocked


# -- recording: nbgrader's step runs beside the judging, and its failures are reported ---------


@IN_ROOT_GROUP
def test_recording_starts_before_the_judging_ends(root_batch):
    """The first submission is in the gradebook before the last one was judged."""
    batch = root_batch  # the same in either mode: root's batch only
    course = batch["course"]
    graded = [p.stat().st_mtime for p in (course / "autograded").glob(f"*/{ASSIGNMENT}")]
    judged = [p.stat().st_mtime for p in (course / "judged").glob(f"*/{ASSIGNMENT}/*.json")]
    assert len(graded) >= 20 and min(graded) < max(judged), (min(graded), max(judged))


@IN_ROOT_GROUP
def test_the_recorder_reports_what_nbgrader_could_not_record(root_batch, tmp_path):
    batch = root_batch  # the same in either mode: root's batch only
    from autograder.platform.recorder import Recorder

    course = _recording_course(batch, tmp_path / "course", ("honest_correct", "honest_blank"))
    shutil.copytree(batch["course"] / "submitted" / "honest_blank", course / "submitted" / "ghost")
    shutil.copytree(batch["course"] / "autograded" / "honest_blank", course / "autograded" / "gone")
    recorder = Recorder(course, ASSIGNMENT)
    recorder.record("honest_correct", gradable=True)
    recorder.record("ghost", gradable=True)  # its judged outputs are missing
    recorder.record("gone", gradable=False)  # now an invalid notebook: its old results go
    recorder.record("honest_blank", gradable=False, keep=True)  # a grader error: kept
    results = {s: (r["recorded"], r["log"]) for s, r in recorder.finish().items()}
    assert results["honest_correct"] == (True, "")
    assert results["ghost"][0] is False and "no judged results" in results["ghost"][1]
    assert results["gone"] == (True, "")
    assert not (course / "autograded" / "gone" / ASSIGNMENT).exists()
    assert results["honest_blank"] == (False, "")
    assert (course / "submitted" / "honest_blank").is_dir()
    feedback = course / "feedback" / "honest_correct" / ASSIGNMENT / f"{ASSIGNMENT}.html"
    assert feedback.is_file()
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission(ASSIGNMENT, "honest_correct").score == 13


def _recording_course(batch: dict, target: Path, students: tuple[str, ...]) -> Path:
    """A copy of the batch's course with the judged results of ``students``, none recorded."""
    for name in ("source", "release", "nbgrader_config.py", "gradebook.db"):
        copy = shutil.copytree if (batch["course"] / name).is_dir() else shutil.copy
        copy(batch["course"] / name, target / name)
    for student in students:
        for folder in ("submitted", "judged"):
            shutil.copytree(batch["course"] / folder / student, target / folder / student)
    return target


@IN_ROOT_GROUP
def test_a_submission_that_records_past_its_deadline_is_a_status_not_a_stall(root_batch, tmp_path):
    from autograder.platform.recorder import TIMED_OUT, Recorder

    course = _recording_course(root_batch, tmp_path / "course", ("honest_correct",))
    recorder = Recorder(course, ASSIGNMENT, seconds=0.05)  # nbgrader needs seconds for it
    recorder.record("honest_correct", gradable=True)
    result = recorder.finish()["honest_correct"]
    assert result["recorded"] is False and result["status"] == TIMED_OUT, result
    assert "longer than 0.05 s" in result["log"]
    assert not (course / "autograded" / "honest_correct" / ASSIGNMENT).exists()
    assert not (course / "feedback" / "honest_correct" / ASSIGNMENT).exists()


@IN_ROOT_GROUP
def test_a_dead_recorder_loses_no_recorded_row_and_names_the_rest(root_batch, tmp_path):
    from autograder.platform.recorder import RESULTS, Recorder

    students = ("honest_correct", "honest_blank")
    course = _recording_course(root_batch, tmp_path / "course", students)
    recorder = Recorder(course, ASSIGNMENT)
    recorder.record("honest_correct", gradable=True)
    for _ in range(600):  # until the first one is recorded (seconds), then the recorder dies
        if (course / RESULTS).exists() and (course / RESULTS).read_text().strip():
            break
        time.sleep(0.1)
    recorder._process.kill()
    recorder._process.join()
    recorder.record("honest_blank", gradable=True)  # no BrokenPipeError: noted, not raised
    results = recorder.finish()
    assert results["honest_correct"]["recorded"] is True, results
    assert results["honest_blank"]["recorded"] is False
    assert "recording process stopped" in results["honest_blank"]["log"]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission(ASSIGNMENT, "honest_correct").score == 13


@IN_ROOT_GROUP
def test_outputs_are_kept_to_the_caps_and_the_record_says_so(root_batch):
    from autograder.platform.sandbox import MAX_IMAGE_CHARS, MAX_OUTPUT_CHARS

    judged = root_batch["course"] / "judged" / "oversized_outputs" / ASSIGNMENT
    cells = json.loads((judged / f"{ASSIGNMENT}.json").read_text())["cells"]
    outputs = [output for kept in cells.values() for output in kept]
    text = sum(
        len(o.get("text", "")) + len(o.get("data", {}).get("text/plain", "")) for o in outputs
    )
    images = sum(len(o.get("data", {}).get("image/png", "")) for o in outputs)
    assert images <= MAX_IMAGE_CHARS and text <= 2 * MAX_OUTPUT_CHARS + 1000, (images, text)
    assert any("trimmed" in o.get("text", "") for o in outputs)
    row = root_batch["rows"]["oversized_outputs"]
    assert "outputs trimmed" in row["message"], row
    feedback = root_batch["course"] / "feedback" / "oversized_outputs" / ASSIGNMENT
    assert sum(p.stat().st_size for p in feedback.iterdir()) < 6_000_000  # MathJax is 2.3 MB
