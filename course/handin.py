"""``python -m course handin a1 --student ID``: check an assignment and write the one file to
hand in.

From the course folder (the one with ``assignments/``), it

1. finds the assignment's notebook (``a1`` is enough) and reads it: a file that is not a
   notebook is refused with the reason;
2. checks that it is that assignment's notebook (the release writes the assignment's name and
   its graded cells into the notebook's metadata, ``metadata.course``) and says which graded
   cells were deleted or edited and which parts are still unanswered;
3. runs it top to bottom in a fresh kernel, as Validate does, and lists each visible test that
   fails with its one-line message (``--no-run`` skips this);
4. writes ``handin/<assignment>/<ID>.ipynb``: the notebook without its outputs (the graders run
   it again; a small file is safe to upload). That is the file to hand in; the TA's grading
   command reads the student's id from its name.

Only a missing or unreadable notebook, another assignment's notebook, or a bad id stop it; a
failing test or an unanswered part is reported and the file is still written, since partial
work may be handed in.
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: nbformat takes seconds to import, and the graders'
    import nbformat  # traps import every module of the course package in each check process

# An id the TA's grading command keeps as it is: letters and digits of any script, and
# `_ . @ -` inside, at most 64 characters (autograder.platform.inputs.student_id).
_ID = re.compile(r"(?:[^\W_]|[@-])(?:[\w.@-]{0,62}(?:[^\W_]|[@-]))?")
UNANSWERED = ("raise NotImplementedError()", "YOUR ANSWER HERE")


class HandinError(RuntimeError):
    """Nothing was written; the message says why and what to do."""


@dataclass
class Report:
    notebook: Path
    assignment: str
    missing: list[str] = field(default_factory=list)  # graded cells deleted
    edited: list[str] = field(default_factory=list)  # read-only cells whose source changed
    unanswered: list[str] = field(default_factory=list)  # answer cells still as released
    failing: list[tuple[str, str]] = field(default_factory=list)  # (test cell, message)
    ran: bool = False
    written: Path | None = None

    def lines(self) -> list[str]:
        out = [f"checked {self.notebook}"]
        if self.missing:
            out.append(
                f"  deleted graded cells: {', '.join(self.missing)}. The graders put them back, "
                "but your notebook no longer shows these tests: copy them from a fresh copy "
                "of the assignment"
            )
        if self.edited:
            out.append(
                f"  edited read-only cells: {', '.join(self.edited)}. The graders use the "
                "original cells, not your edits"
            )
        if self.unanswered:
            out.append(f"  not answered yet: {', '.join(self.unanswered)}")
        if self.ran:
            if self.failing:
                out.append(f"  {len(self.failing)} visible test(s) fail:")
                out += [f"    {cell}: {message}" for cell, message in self.failing]
            else:
                out.append("  ran top to bottom in a fresh kernel: every visible test passes")
        else:
            out.append("  not run (--no-run): press Validate in JupyterLab before handing in")
        if self.written:
            out.append(f"hand in this file: {self.written}")
        return out


def check_student_id(student: str) -> str:
    if not _ID.fullmatch(student):
        raise HandinError(
            f"--student {student!r}: use your course id as the TA gave it: letters and digits, "
            "and `_ . @ -` inside, at most 64 characters (for example `jdoe7` or "
            "`jane.doe@uni.example`)"
        )
    return student


def find_notebook(assignment: str, course_folder: Path) -> tuple[str, Path]:
    """``(assignment id, its notebook)`` for ``a1``, ``a1_rnn_bptt`` or a notebook's path."""
    given = Path(assignment)
    if given.suffix == ".ipynb":
        if not given.is_file():
            raise HandinError(f"{given} does not exist")
        return given.stem, given
    folder = course_folder / "assignments"
    if not folder.is_dir():
        raise HandinError(
            f"no assignments/ folder in {course_folder.resolve()}: run this from the course "
            "folder (the one with lectures/ and assignments/)"
        )
    known = sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    matches = [name for name in known if name == assignment or name.split("_")[0] == assignment]
    if len(matches) != 1:
        raise HandinError(
            f"no assignment {assignment!r} here; the assignments are: {', '.join(known)}"
        )
    name = matches[0]
    notebook = folder / name / f"{name}.ipynb"
    if not notebook.is_file():
        raise HandinError(f"{notebook} is missing: unpack a fresh copy of the course bundle")
    return name, notebook


def read_notebook(path: Path) -> nbformat.NotebookNode:
    import nbformat

    try:
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
    except (OSError, UnicodeDecodeError) as error:
        raise HandinError(f"{path} cannot be read: {error}") from error
    except Exception as error:  # nbformat's reader and validator raise several kinds
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise HandinError(
            f"{path} is not a valid notebook ({first[:200]}); JupyterLab's File > Revert "
            "Notebook to Checkpoint may recover your last saved version"
        ) from error
    return notebook


def _grading(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def inspect(notebook: nbformat.NotebookNode, assignment: str, path: Path) -> Report:
    """What the notebook lacks or changed, compared with its release's metadata."""
    released = notebook.metadata.get("course", {})
    if not isinstance(released, dict) or not released.get("assignment"):
        raise HandinError(
            f"{path} is not a notebook of the course's release (it has no metadata.course): "
            "hand in the assignment notebook you were given, with your answers in it; if you "
            "copied your work into a new notebook, copy it back into a fresh copy of the "
            "assignment"
        )
    if released["assignment"] != assignment:
        raise HandinError(
            f"{path} is assignment {released['assignment']}'s notebook, not {assignment}'s"
        )
    report = Report(path, assignment)
    graded = ((_grading(c), c) for c in notebook.cells)
    cells = {meta["grade_id"]: (meta, c) for meta, c in graded if meta.get("grade_id")}
    report.missing = [g for g in released.get("cells", []) if g not in cells]
    try:
        from nbgrader.utils import compute_checksum
    except ImportError:  # the course's environment has nbgrader; elsewhere, skip this check
        compute_checksum = None
    for grade_id, (meta, cell) in cells.items():
        if compute_checksum and meta.get("locked") and "checksum" in meta:
            if compute_checksum(cell) != meta["checksum"]:
                report.edited.append(grade_id)
        if meta.get("solution") and any(marker in cell.source for marker in UNANSWERED):
            report.unanswered.append(grade_id)
    return report


def _first_line(output) -> str:
    name, value = output.get("ename") or "Error", (output.get("evalue") or "").strip()
    line = f"{name}: {value.splitlines()[0]}" if value else name
    return line if len(line) <= 300 else line[:297] + "..."


def private_kernel_channels(folder: Path) -> Any:
    """A kernel's channels on Unix sockets in ``folder`` (Linux, macOS), as a traitlets Config
    for ``nbclient.NotebookClient`` or a ``KernelManager``.

    Over TCP a kernel's ports are picked free, released, and bound by the kernel a moment
    later: another process (another kernel starting) can take one in between, and the kernel
    dies as it starts ("Address already in use"). Sockets in a private folder cannot collide.
    Windows' ZeroMQ has no Unix sockets: TCP there (an empty Config). The course's build and
    tests use it too (``tools.notebooks``); ``folder`` must be short, since a socket's path is
    limited to about 100 characters."""
    from traitlets.config import Config

    if os.name == "nt":
        return Config()
    return Config({"KernelManager": {"transport": "ipc", "ip": str(folder / "kernel")}})


def run(notebook: nbformat.NotebookNode, folder: Path, timeout: int = 600) -> list[tuple[str, str]]:
    """Execute a copy of ``notebook`` in a fresh kernel in ``folder``; each failing graded
    test cell with its one-line message, in order."""
    from nbclient import NotebookClient

    executed = copy.deepcopy(notebook)
    with tempfile.TemporaryDirectory(prefix="ck") as sockets:
        NotebookClient(
            executed,
            timeout=timeout,
            kernel_name="python3",
            allow_errors=True,
            resources={"metadata": {"path": str(folder)}},
            config=private_kernel_channels(Path(sockets)),
        ).execute(stderr=subprocess.DEVNULL)  # the kernel's own log lines are not the student's
    failing = []
    for cell in executed.cells:
        meta = _grading(cell)
        if cell.cell_type != "code" or not meta.get("grade"):
            continue
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if errors:
            failing.append((meta.get("grade_id", "?"), _first_line(errors[0])))
    return failing


def without_outputs(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    clean = copy.deepcopy(notebook)
    for cell in clean.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return clean


def handin(
    assignment: str,
    student: str,
    *,
    course_folder: Path = Path("."),
    out: Path | None = None,
    execute: bool = True,
) -> Report:
    student = check_student_id(student)
    name, path = find_notebook(assignment, course_folder)
    notebook = read_notebook(path)
    report = inspect(notebook, name, path)
    if execute:
        report.failing, report.ran = run(notebook, path.parent), True
    target = (out or course_folder / "handin") / name / f"{student}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    import nbformat

    partial.write_text(nbformat.writes(without_outputs(notebook)), encoding="utf-8")
    partial.replace(target)
    report.written = target
    return report


def hub_exchange() -> str | None:
    """The exchange directory when this runs on the course's JupyterHub (deploy/jupyterhub/
    sets ``SEQCOURSE_EXCHANGE`` in every user's server), else None. A hub without nbgrader's
    exchange collects files, so ``course handin`` is the way to hand in there too."""
    exchange = os.environ.get("SEQCOURSE_EXCHANGE", "")
    if os.environ.get("JUPYTERHUB_USER") and exchange and Path(exchange).is_dir():
        return exchange
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m course handin",
        description="Check an assignment and write the file to hand in (handin/<assignment>/<id>.ipynb).",
    )
    parser.add_argument("assignment", help="a1 ... a8, an assignment's folder name, or a notebook")
    parser.add_argument("--student", required=True, help="your course id, as the TA gave it")
    parser.add_argument("--no-run", action="store_true", help="do not run the notebook first")
    parser.add_argument("--out", type=Path, help="where to write (default: handin/)")
    parser.add_argument(
        "--file",
        action="store_true",
        help="write the file even on the course's JupyterHub, where you submit in the Assignment List",
    )
    args = parser.parse_args(argv)
    exchange = hub_exchange()
    if exchange is not None and not args.file:
        print(
            "course handin: this is the course's JupyterHub, with nbgrader's exchange "
            f"({exchange}): submit there instead. In JupyterLab open Nbgrader > Assignment List, "
            "press Validate on the assignment's notebook, then Submit next to the assignment; "
            "the graders collect it from the exchange. Nothing was written (--file writes the "
            "file anyway, for a course that asks for one)"
        )
        return 0
    try:
        report = handin(args.assignment, args.student, out=args.out, execute=not args.no_run)
    except HandinError as error:
        print(f"course handin: {error}")
        return 2
    print("\n".join(report.lines()))
    return 0
