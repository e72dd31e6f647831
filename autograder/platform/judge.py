"""Judge one submission: student cells in the sandbox, test cells in the grader, outcomes as data.

1. :func:`read_submission` turns the raw bytes into a notebook, or says why it cannot
   (empty file, invalid JSON, not a notebook, a kernel for another language).
2. :func:`canonicalize` rebuilds the notebook on the instructor's skeleton: graded cells are
   matched by grade id; solution cells keep the student's code under the instructor's
   metadata, every locked cell (tests, setup) comes from the release, deleted cells are
   restored, duplicated ids are resolved, and the student's own extra cells are kept. Every
   repair is noted.
3. :func:`judge_notebook` runs the non-test cells in a :class:`SandboxKernel` and then every
   test cell, visible and hidden, **from the instructor's source**, in this (trusted) process,
   where the names the solution cells define are :class:`wire.Remote` proxies. A test cell
   passes iff it raises nothing here. The kernel never sees a test, a reference value or a
   hidden input other than as arguments of a call, and nothing it prints or patches can reach
   this process's comparisons.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import importlib
import io
import json
import re
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from autograder.nbgrader_format import GRADING_KEYS, cell_kind, nbgrader_meta
from autograder.platform import wire
from autograder.platform.sandbox import OUT_OF_TIME, Limits, SandboxKernel

CELL_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

# Flags a submission can carry, the most serious first; the first one present is its status.
STATUSES = (
    "grader error",
    "invalid notebook",
    "refused link",
    "special file",
    "unreadable zip member",
    "wrong assignment",
    "kernel died",
    "timed out",
    "timed out while rendering feedback",
    "resource limit",
    "cells restored or overwritten",
    "duplicate upload",
    "wrong kernel",
    "needs manual grading",
    "graded",
)


class Unreadable(Exception):
    """The submission cannot be graded at all; the message says why, for the TA and student."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


def _text(source: Any) -> str:
    if isinstance(source, list):
        return "".join(str(line) for line in source)
    return source if isinstance(source, str) else ""


def top_level_names(code: str) -> list[str]:
    """Names a cell binds at top level (functions, classes, assignments, imports)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names += [t.id for t in targets if isinstance(t, ast.Name)]
    return names


def hidden_modules(code: str) -> list[str]:
    """The ``autograder.hidden`` modules that a test cell imports."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autograder.hidden"):
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("autograder.hidden")]
    return found


@dataclass
class NotebookSpec:
    """One notebook of an assignment: its source (with hidden tests) and its release."""

    name: str
    source: nbformat.NotebookNode
    release: nbformat.NotebookNode
    order: list[str] = field(default_factory=list)  # grade ids in notebook order
    kinds: dict[str, str] = field(default_factory=dict)
    source_cells: dict[str, Any] = field(default_factory=dict)
    release_cells: dict[str, Any] = field(default_factory=dict)
    api_names: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, source_path: Path, release_path: Path) -> NotebookSpec:
        spec = cls(
            name=source_path.stem,
            source=nbformat.read(source_path, as_version=4),
            release=nbformat.read(release_path, as_version=4),
        )
        for cell in spec.source.cells:
            grade_id = nbgrader_meta(cell).get("grade_id")
            if grade_id:
                spec.order.append(grade_id)
                spec.kinds[grade_id] = cell_kind(cell)
                spec.source_cells[grade_id] = cell
                if spec.kinds[grade_id] == "solution":
                    spec.api_names += top_level_names(cell.source)
                if spec.kinds[grade_id] == "test":
                    spec.modules += hidden_modules(cell.source)
        for cell in spec.release.cells:
            grade_id = nbgrader_meta(cell).get("grade_id")
            if grade_id:
                spec.release_cells[grade_id] = cell
        missing = set(spec.order) - set(spec.release_cells)
        if missing:
            raise ValueError(f"{release_path} lacks the cells {sorted(missing)}: release again")
        return spec


# -- 1. reading ----------------------------------------------------------------------------------


def read_submission(
    raw: bytes, spec: NotebookSpec
) -> tuple[nbformat.NotebookNode, list[tuple[str, str]]]:
    """The notebook in ``raw`` (older nbformat versions upgraded to 4, as nbgrader does) and
    notes ``(status, message)`` about it; Unreadable("invalid notebook") if no notebook can be
    read from it, for whatever reason (the message says which)."""
    if not raw.strip():
        raise Unreadable("invalid notebook", "the file is empty")
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark from a Windows editor is harmless
    except UnicodeDecodeError:
        raise Unreadable("invalid notebook", "the file is not UTF-8 text") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise Unreadable(
            "invalid notebook", f"not valid JSON ({error.msg} at line {error.lineno})"
        ) from None
    except RecursionError:
        raise Unreadable("invalid notebook", "the JSON is nested too deeply to be read") from None
    except ValueError as error:  # e.g. an integer with more digits than Python converts
        raise Unreadable("invalid notebook", f"not valid JSON ({str(error)[:200]})") from None
    cells = data.get("cells") if isinstance(data, dict) else None
    worksheets = data.get("worksheets") if isinstance(data, dict) else None  # nbformat < 4
    if not isinstance(cells, list) and not isinstance(worksheets, list):
        raise Unreadable("invalid notebook", "valid JSON, but not a notebook (no list of cells)")
    version = data.get("nbformat")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nbformat warns about what it repairs
            notebook = nbformat.reads(text, as_version=4)
    except RecursionError:
        raise Unreadable("invalid notebook", "the JSON is nested too deeply to be read") from None
    except Exception as error:  # noqa: BLE001 - nbformat raises many types for bad notebooks
        message = str(error).splitlines()[0][:300] if str(error) else type(error).__name__
        raise Unreadable("invalid notebook", f"not a readable notebook ({message})") from None
    _check_cells(notebook)
    notes: list[tuple[str, str]] = []
    if isinstance(version, int) and version < 4:
        notes.append(("", f"nbformat {version} notebook upgraded to version 4"))
    metadata = notebook.get("metadata", {}) if isinstance(notebook.get("metadata"), dict) else {}
    kernelspec = (
        metadata.get("kernelspec", {}) if isinstance(metadata.get("kernelspec"), dict) else {}
    )
    language = kernelspec.get("language") or (metadata.get("language_info") or {}).get("name")
    if isinstance(language, str) and language.lower() != "python":
        raise Unreadable(
            "invalid notebook", f"the notebook is written for a {language!r} kernel, not Python"
        )
    expected = spec.release.metadata.get("kernelspec", {}).get("name", "python3")
    given = kernelspec.get("name")
    if given != expected:
        notes.append(("wrong kernel", f"kernel {given!r} replaced by {expected!r}"))
    return notebook, notes


def _check_cells(notebook: nbformat.NotebookNode) -> None:
    """Unreadable unless every cell is a cell: a dict with a known type and text for a source."""
    if not isinstance(notebook.get("cells"), list):
        raise Unreadable("invalid notebook", "the notebook has no list of cells")
    for index, cell in enumerate(notebook.cells):
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise Unreadable("invalid notebook", f"cell {index + 1} is not a notebook cell")
        source = cell.get("source", "")
        if not isinstance(source, str) and not (
            isinstance(source, list) and all(isinstance(line, str) for line in source)
        ):
            raise Unreadable("invalid notebook", f"cell {index + 1} has no text as its source")
        if not isinstance(cell.get("metadata", {}), dict):
            raise Unreadable("invalid notebook", f"cell {index + 1} has malformed metadata")


# -- 2. canonical notebook -------------------------------------------------------------------------


def _same_metadata(student: dict, release: dict) -> bool:
    return all(nbgrader_meta(student).get(k) == nbgrader_meta(release).get(k) for k in GRADING_KEYS)


def canonicalize(
    student: nbformat.NotebookNode, spec: NotebookSpec
) -> tuple[nbformat.NotebookNode, list[str]]:
    """The student's notebook on the instructor's skeleton, and a note for every repair."""
    notes: list[str] = []
    out: list[Any] = []
    seen: set[str] = set()
    used_ids: set[str] = set(spec.order)
    extra = 0

    def free_cell(cell: dict, cell_type: str) -> Any:
        nonlocal extra
        extra += 1
        cell_id = cell.get("id") if isinstance(cell.get("id"), str) else ""
        if not CELL_ID.match(cell_id) or cell_id in used_ids:
            cell_id = f"student-{extra:03d}"
        used_ids.add(cell_id)
        maker = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
        return maker(_text(cell.get("source")), id=cell_id)

    for cell in student.cells:
        cell_type = cell.get("cell_type")
        grade_id = nbgrader_meta(cell).get("grade_id")
        kind = spec.kinds.get(grade_id) if isinstance(grade_id, str) else None
        if kind is not None and grade_id not in seen:
            seen.add(grade_id)
            release = spec.release_cells[grade_id]
            new = copy.deepcopy(release)
            if kind in ("solution", "manual", "task"):
                new.source = _text(cell.get("source"))
                if cell_type != release.cell_type or not _same_metadata(cell, release):
                    notes.append(f"metadata of cell {grade_id!r} overwritten from the source")
            elif _text(cell.get("source")).strip() != release.source.strip() or not _same_metadata(
                cell, release
            ):
                notes.append(f"edited locked cell {grade_id!r} overwritten from the source")
            if new.cell_type == "code":
                new.outputs, new.execution_count = [], None
            out.append(new)
        elif kind is not None:
            notes.append(f"cell id {grade_id!r} appears more than once; the first one is graded")
            if kind == "solution" and cell_type == "code":
                out.append(free_cell(cell, "code"))  # the copy still runs, as the student's code
        else:
            if nbgrader_meta(cell).get("grade") or nbgrader_meta(cell).get("solution"):
                notes.append(f"unknown graded cell {grade_id!r} kept as an ungraded cell")
            if cell_type in ("code", "markdown"):
                out.append(free_cell(cell, cell_type))
    if not seen:
        found = sorted(
            {str(nbgrader_meta(c).get("grade_id")) for c in student.cells if nbgrader_meta(c)}
        )
        raise Unreadable(
            "wrong assignment",
            f"none of the {len(spec.order)} graded cells of {spec.name} is in this notebook"
            + (f" (it has the cells {', '.join(found[:5])})" if found else ""),
        )
    for index, grade_id in enumerate(spec.order):
        if grade_id in seen:
            continue
        notes.append(f"deleted cell {grade_id!r} restored")
        before = spec.order[:index]
        position = 0
        for i, cell in enumerate(out):
            if nbgrader_meta(cell).get("grade_id") in before:
                position = i + 1
        out.insert(position, copy.deepcopy(spec.release_cells[grade_id]))
        seen.add(grade_id)
    canonical = copy.deepcopy(spec.release)
    canonical.cells = out
    nbformat.validate(canonical)
    return canonical, notes


# -- 3. judging ------------------------------------------------------------------------------------


@dataclass
class NotebookVerdict:
    notebook: str
    flags: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    tests: dict[str, bool] = field(default_factory=dict)  # grade id -> passed, as judged here
    failures: dict[str, str] = field(default_factory=dict)  # grade id -> why its test failed
    cells: dict[str, list[dict]] = field(default_factory=dict)  # cell id -> outputs
    seconds: dict[str, float] = field(default_factory=dict)

    def flag(self, status: str, message: str) -> None:
        if status not in self.flags:
            self.flags.append(status)
        if message and message not in self.messages:
            self.messages.append(message)


def _trap_targets(spec: NotebookSpec) -> list[tuple[Any, str, str, Any]]:
    """(owner, attribute, label, original) of every trap the hidden checks may set."""
    for module in spec.modules:
        importlib.import_module(module)
    targets, seen = [], set()
    for name, module in list(sys.modules.items()):
        if not name.startswith("autograder.hidden.") or module is None:
            continue
        listing = getattr(module, "shortcut_targets", None)
        if not callable(listing):
            continue
        for owner, attribute, label in listing():
            key = (id(owner), attribute)
            if key not in seen:
                seen.add(key)
                targets.append((owner, attribute, label, getattr(owner, attribute)))
    return targets


_RESOURCE_HINTS = (
    "MemoryError",
    "Resource temporarily unavailable",
    "Cannot allocate memory",
    "No space left on device",  # the private root's bytes or files are used up
    "File too large",  # RLIMIT_FSIZE
)


def _error_output(error: BaseException) -> dict:
    """An error output with no traceback frames: hidden-test lines never reach the feedback."""
    ename = type(error).__name__
    if isinstance(error, wire.StudentError):
        ename = "Error"
    evalue = str(error)[:3000]
    return {
        "output_type": "error",
        "ename": ename,
        "evalue": evalue,
        "traceback": [f"{ename}: {evalue}"],
    }


def run_test_cell(code: str, namespace: dict, label: str) -> tuple[bool, list[dict]]:
    """Execute an instructor test cell here; (passed, outputs)."""
    stdout = io.StringIO()
    outputs: list[dict] = []
    passed = True
    try:
        compiled = compile(code, f"<{label}>", "exec")
        with (
            contextlib.redirect_stdout(stdout),
            contextlib.redirect_stderr(io.StringIO()),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore")
            exec(compiled, namespace)  # noqa: S102 - instructor code, in the trusted grader
    except BaseException as error:  # noqa: BLE001 - SystemExit from a check is a failure too
        passed = False
        outputs.append(_error_output(error))
    text = stdout.getvalue()[:10_000]
    if text:
        outputs.insert(0, {"output_type": "stream", "name": "stdout", "text": text})
    return passed, outputs


def judge_notebook(
    spec: NotebookSpec,
    canonical: nbformat.NotebookNode,
    student_bytes: bytes,
    scratch: Path,
    limits: Limits,
    verdict: NotebookVerdict,
    deadline: float | None = None,
) -> None:
    """Run the submission and its tests; fill ``verdict`` (outputs per cell, flags, tests).

    Nothing runs after ``deadline`` (``time.monotonic()``; by default the submission's time
    limit from now): the cells left, tests included, fail with a message saying so."""
    started = time.monotonic()
    deadline = started + limits.submission_timeout if deadline is None else deadline
    kernel = SandboxKernel(scratch, limits, files={f"{spec.name}.ipynb": student_bytes})
    kernel.deadline = deadline
    verdict.seconds["kernel_start"] = time.monotonic() - started
    try:
        session = wire.Session(kernel, _trap_targets(spec))
        namespace: dict[str, Any] = {"__name__": "__grader__"}
        for grade_id in spec.order:  # instructor setup cells also run here, for the tests
            cell = spec.source_cells[grade_id]
            if cell.cell_type == "code" and spec.kinds[grade_id] == "locked":
                run_test_cell(cell.source, namespace, grade_id)
        # Cells run in notebook order: the student's in the kernel, each test cell here when
        # its turn comes, seeing the student's names as they are at that point.
        verdict.seconds.update(student_cells=0.0, tests=0.0)
        for cell in canonical.cells:
            grade_id = nbgrader_meta(cell).get("grade_id")
            if cell.cell_type != "code":
                continue
            started = time.monotonic()
            if kernel.time_left() <= 0:
                outcome = kernel.out_of_time()
                verdict.cells[cell.id] = [_error_output(TimeoutError(outcome.evalue))]
                verdict.flag(
                    "timed out",
                    f"the submission ran longer than {limits.submission_timeout:g} s in all;"
                    " the cells after that were not run",
                )
                if spec.kinds.get(grade_id) == "test":
                    verdict.tests[grade_id] = False
                    verdict.failures[grade_id] = f"TimeoutError: {outcome.evalue}"
                continue
            if spec.kinds.get(grade_id) == "test":
                _bind_student_names(session, spec, namespace, verdict)
                passed, outputs = run_test_cell(
                    spec.source_cells[grade_id].source, namespace, grade_id
                )
                verdict.tests[grade_id] = passed
                verdict.cells[cell.id] = outputs
                if not passed:
                    error = outputs[-1]
                    verdict.failures[grade_id] = f"{error['ename']}: {error['evalue']}"[:500]
                for output in outputs:
                    if output["output_type"] == "error" and any(
                        hint in output["evalue"] for hint in _RESOURCE_HINTS
                    ):
                        verdict.flag("resource limit", f"{grade_id}: {output['evalue'][:120]}")
                verdict.seconds["tests"] += time.monotonic() - started
                continue
            outcome = kernel.run_cell(cell.source)
            verdict.cells[cell.id] = outcome.outputs
            where = f"cell {grade_id or cell.id}"
            if outcome.status == "timeout" and outcome.evalue == OUT_OF_TIME:
                verdict.flag("timed out", f"{where} was stopped at the submission's deadline")
            elif outcome.status == "timeout":
                verdict.flag("timed out", f"{where} ran longer than {limits.cell_timeout:g} s")
            elif outcome.status == "died":
                verdict.flag("kernel died", f"the kernel died in {where}")
            if outcome.trimmed:
                verdict.messages.append(f"{where}: outputs trimmed to the grader's caps")
            if outcome.refused and outcome.status != "died":
                verdict.flag("resource limit", f"{where}: an output over {limits.reply_mb} MB")
            elif outcome.status == "error" and any(
                hint in outcome.ename + outcome.evalue for hint in _RESOURCE_HINTS
            ):
                verdict.flag("resource limit", f"{where}: {outcome.ename}: {outcome.evalue[:120]}")
            verdict.seconds["student_cells"] += time.monotonic() - started
        if session.timeouts:
            verdict.flag("timed out", f"{session.timeouts} graded call(s) ran out of time")
        if session.refused:
            verdict.flag(
                "resource limit",
                f"{session.refused} graded call(s) answered with over {limits.reply_mb} MB",
            )
        if kernel.memory_stops():
            verdict.flag(
                "resource limit",
                f"the kernel's processes used more than {limits.kernel_memory_mb} MB together:"
                f" {kernel.memory_stops()} of them stopped",
            )
        if session.deaths:
            verdict.flag("kernel died", f"the kernel died in {session.deaths} graded call(s)")
    finally:
        kernel.close()


def _bind_student_names(
    session: wire.Session, spec: NotebookSpec, namespace: dict, verdict: NotebookVerdict
) -> None:
    """Put the solution cells' names into the test namespace, as they are in the kernel now."""
    names = list(dict.fromkeys(spec.api_names))
    try:
        found = wire.fetch_names(session, names)
    except Exception as error:  # noqa: BLE001 - a broken kernel fails the tests instead
        found = {}
        message = f"the solution's names could not be read: {error}"[:300]
        if message not in verdict.messages:
            verdict.messages.append(message)
    for name in names:
        if name in found:
            namespace[name] = found[name]
        else:
            namespace.pop(name, None)
