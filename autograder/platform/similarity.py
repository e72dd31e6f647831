"""Which submissions share solution code: pairs of students, per part, for the TA to look at.

Reads files only (the canonical notebooks the judge wrote, and an optional folder of past or
public solutions); no submitted code runs. For every solution code cell of the assignment (a
*part*, named like the columns of ``grades.csv``):

1. **the student's code**: the cell of that ``grade_id`` in the graded notebook;
2. **normalised**: parsed with :mod:`ast` and unparsed, so comments, docstrings, string
   statements and formatting do not count; every name the code binds (its functions, classes,
   parameters, variables, loop and comprehension variables) becomes ``_f`` or ``_v``, so
   renaming does not count either, while the names it uses from elsewhere (``np.tanh``,
   ``range``, the imported modules) are kept; code that does not parse is compared without
   the lines the parser stops at, or else on its raw text, and the pair says so;
3. **the skeleton removed**: the lines of the released cell (signature, docstring, the raising
   stub), normalised the same way, are dropped, so two blank submissions share nothing;
4. **fingerprinted and compared** with ``copydetect`` (winnowed k-gram fingerprints of the
   normalised text): every pair of students, and every student with every file of the past
   solutions. A pair's score for a part is copydetect's similarity, the larger of the two
   sides' shares of code found in the other; the pair is listed when a part's score is at
   least the threshold.

Reordered functions or statements still match: fingerprints are compared as sets. Code of
fewer than :data:`MIN_CHARS` characters once normalised is not compared (too short to tell a
copy from the one obvious way to write it), and is listed with the reason.
"""

from __future__ import annotations

import ast
import io
import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from autograder import nbgrader_format as fmt
from autograder.platform import judge

# copydetect's noise threshold k (characters of normalised code in one fingerprint) and its
# winnowing window; window 1 keeps every k-gram (solutions are short, the cost is small).
K = 40
WINDOW = 1
# The default score from which a pair is listed; tests/grading/test_similarity.py measures it
# on planted copies and independent solutions of Assignment 1 (see the TAs' guide).
THRESHOLD = 0.6
MIN_CHARS = 80  # shorter normalised code is not compared
MAX_SOURCE_CHARS = 100_000  # a longer cell is listed as not compared
MAX_PAST_BYTES = 50 * 1024 * 1024
FUNCTION, VARIABLE = "_f", "_v"


class SimilarityError(ValueError):
    """Bad options (threshold out of range, a missing folder of past solutions)."""


@dataclass(frozen=True)
class Part:
    """A solution code cell of the assignment, as released."""

    key: str  # like the CSV's columns: grade_id, or notebook:grade_id with several notebooks
    notebook: str
    grade_id: str
    skeleton: str  # the released cell's source
    names: tuple[str, ...]  # the functions and classes it asks for (to find it in a .py file)


def parts_of(releases: dict[str, nbformat.NotebookNode]) -> list[Part]:
    """The solution code cells of the released notebooks (notebook name -> notebook)."""
    parts = []
    for name, notebook in releases.items():
        for cell in notebook.cells:
            grade_id = fmt.grade_id(cell)
            if grade_id and fmt.is_solution_code(cell):
                key = grade_id if len(releases) == 1 else f"{name}:{grade_id}"
                source = judge._text(cell.get("source"))
                parts.append(
                    Part(key, name, grade_id, source, tuple(judge.top_level_names(source)))
                )
    return parts


# -- normalising -----------------------------------------------------------------------------------


class _Bound(ast.NodeVisitor):
    """The names a piece of code binds: functions and classes, and every other binding."""

    def __init__(self) -> None:
        self.functions: set[str] = set()
        self.variables: set[str] = set()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.add(node.name)
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.functions.add(node.name)
        self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> None:
        self.variables.add(node.arg)
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.variables.add(node.id)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.variables.add(node.name)
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        self.variables.update(node.names)

    visit_Nonlocal = visit_Global


class _Rename(ast.NodeTransformer):
    """Bound names to placeholders; docstrings and other bare strings (comments) dropped."""

    def __init__(self, bound: _Bound) -> None:
        self.functions = bound.functions
        self.variables = bound.variables - bound.functions

    def _name(self, name: str) -> str:
        if name in self.functions:
            return FUNCTION
        return VARIABLE if name in self.variables else name

    def visit_FunctionDef(self, node):
        node.name = FUNCTION
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = VARIABLE
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self._name(node.id)
        return node

    def visit_keyword(self, node: ast.keyword) -> ast.keyword:
        if node.arg is not None and node.arg in self.variables:
            node.arg = VARIABLE  # a keyword naming a parameter of the code's own function
        return self.generic_visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.ExceptHandler:
        if node.name:
            node.name = VARIABLE
        return self.generic_visit(node)

    def visit_Global(self, node):
        node.names = [self._name(n) for n in node.names]
        return node

    visit_Nonlocal = visit_Global

    def visit_Expr(self, node: ast.Expr):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return None  # a docstring, or a string used as a comment
        return self.generic_visit(node)

    def generic_visit(self, node):
        node = super().generic_visit(node)
        if getattr(node, "body", None) == [] and not isinstance(node, ast.Module):
            node.body = [ast.Pass()]  # a body that was only a docstring
        return node


SALVAGE_TRIES = 20  # lines of a cell that may be left out to parse the rest


def _unparsed(code: str) -> str:
    bound = _Bound()
    tree = ast.parse(code)
    bound.visit(tree)
    return ast.unparse(ast.fix_missing_locations(_Rename(bound).visit(tree)))


def normalise(code: str) -> tuple[list[str], bool]:
    """``code`` as normalised lines, and whether all of it parsed.

    Code that does not parse loses the lines the parser stops at (up to SALVAGE_TRIES of them),
    and the rest is normalised; failing that, it is its raw lines, comment and blank lines
    dropped.
    """
    lines = code.splitlines()
    for _ in range(SALVAGE_TRIES + 1):
        try:
            text = _unparsed("\n".join(lines))
        except SyntaxError as error:
            at = (error.lineno or 0) - 1
            if not 0 <= at < len(lines) or lines[at].strip() in ("", "..."):
                break
            indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
            lines[at] = indent + "..."  # the line the parser stopped at, left out
            continue
        except (ValueError, RecursionError, MemoryError):
            break
        return [line for line in text.splitlines() if line.strip()], lines == code.splitlines()
    raw = [line.rstrip() for line in code.splitlines()]
    return [line for line in raw if line.strip() and not line.lstrip().startswith("#")], False


def solution_text(code: str, skeleton: str) -> tuple[str, bool]:
    """The student's own code of a cell: normalised, the skeleton's lines removed."""
    lines, parsed = normalise(code)
    released, _ = normalise(skeleton)
    given = {line.strip() for line in released}
    if not parsed:  # the skeleton's raw lines too: what a student left of it as written
        given |= {line.strip() for line in skeleton.splitlines()}
    return "\n".join(line for line in lines if line.strip() not in given), parsed


# -- reading solutions -----------------------------------------------------------------------------


@dataclass
class Code:
    """One side of a comparison: whose (a student id, or ``past: FILE``), which part, the text."""

    owner: str
    part: str
    text: str
    parsed: bool


@dataclass
class Skipped:
    owner: str
    part: str  # "" for the whole submission or file
    why: str


def cell_sources(notebook: Any, parts: list[Part], notebook_name: str) -> dict[str, str]:
    """Part key -> the first code cell of that grade_id in ``notebook`` (as the judge takes it)."""
    found: dict[str, str] = {}
    wanted = {p.grade_id: p.key for p in parts if p.notebook == notebook_name}
    for cell in notebook.get("cells", []) if isinstance(notebook, dict) else []:
        grade_id = fmt.grade_id(cell)
        if grade_id in wanted and cell.get("cell_type") == "code":
            found.setdefault(wanted[grade_id], judge._text(cell.get("source")))
    return found


def graded_solutions(
    course: Path, assignment: str, students: list[str], parts: list[Part]
) -> tuple[dict[str, dict[str, str]], list[Skipped]]:
    """Each student's solution cells, from the canonical notebooks the judge wrote
    (``course/submitted/STUDENT/ASSIGNMENT/NOTEBOOK.ipynb``); students without one are skipped."""
    notebooks = sorted({p.notebook for p in parts})
    sources: dict[str, dict[str, str]] = {}
    skipped = []
    for student in students:
        found: dict[str, str] = {}
        for name in notebooks:
            path = course / "submitted" / student / assignment / f"{name}.ipynb"
            if not path.is_file():
                why = f"no graded copy of {name}.ipynb (its row in grades.csv says why)"
                skipped.append(Skipped(student, "", why))
                continue
            try:
                notebook = nbformat.read(path, as_version=4)
            except Exception as error:  # noqa: BLE001 - any unreadable file is listed, not fatal
                skipped.append(Skipped(student, "", f"{name}.ipynb unreadable: {error}"[:300]))
                continue
            found |= cell_sources(notebook, parts, name)
        if found:
            sources[student] = found
    return sources, skipped


def past_solutions(
    folder: Path, parts: list[Part]
) -> tuple[dict[str, dict[str, str]], list[Skipped]]:
    """The solutions in ``folder`` (``*.ipynb`` and ``*.py``, recursively), by ``past: PATH``.

    A notebook, or a ``py:percent`` file with nbgrader metadata like ``solutions/``, gives the
    cell of each part's ``grade_id`` (solution markers dropped); a cell or plain ``.py`` file
    without one gives the top-level functions and classes that the part's skeleton defines.
    """
    if not folder.is_dir():
        raise SimilarityError(f"{folder}: no such folder of past solutions")
    sources: dict[str, dict[str, str]] = {}
    skipped = []
    notebooks = {p.notebook for p in parts}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.suffix not in (".ipynb", ".py") or any(p.startswith(".") for p in relative.parts):
            continue
        owner = f"past: {relative.as_posix()}"
        if not path.is_file():
            continue
        if path.stat().st_size > MAX_PAST_BYTES:
            skipped.append(Skipped(owner, "", f"larger than {MAX_PAST_BYTES >> 20} MB"))
            continue
        try:
            cells = _past_cells(path)
        except Exception as error:  # noqa: BLE001 - listed as not compared, never fatal
            skipped.append(Skipped(owner, "", f"unreadable: {error}"[:300]))
            continue
        found = {}
        for part in parts:
            if len(notebooks) > 1 and path.stem in notebooks and path.stem != part.notebook:
                continue
            code = _past_part(cells, part)
            if code:
                found[part.key] = code
        if found:
            sources[owner] = found
        else:
            skipped.append(Skipped(owner, "", "holds none of the assignment's parts"))
    return sources, skipped


def _past_cells(path: Path) -> list[tuple[str | None, str]]:
    """(grade_id, source) of every code cell of a past solution file."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".ipynb":
        notebook = nbformat.reads(text, as_version=4)
    elif re.search(r"^# %%", text, re.M):
        import jupytext

        notebook = jupytext.reads(text, fmt="py:percent")
    else:
        return [(None, text)]
    return [
        (fmt.grade_id(cell), fmt.without_solution_markers(judge._text(cell.get("source"))))
        for cell in notebook.cells
        if cell.get("cell_type") == "code"
    ]


def _past_part(cells: list[tuple[str | None, str]], part: Part) -> str:
    for grade_id, source in cells:
        if grade_id == part.grade_id:
            return source
    pieces = []
    for _, source in cells:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for node in tree.body:
            if getattr(node, "name", None) in part.names:
                pieces.append(ast.get_source_segment(source, node) or "")
    return "\n\n".join(pieces)


# -- comparing -----------------------------------------------------------------------------------


@dataclass
class Match:
    part: str
    score: float  # the larger of the two shares
    shares: tuple[float, float]  # of a's code found in b, of b's code found in a
    texts: tuple[str, str]  # the normalised code compared, skeleton removed
    spans: tuple[list[list[int]], list[list[int]]]  # the matching [start, end) of each text
    parsed: tuple[bool, bool]


@dataclass
class Pair:
    a: str
    b: str
    score: float
    matches: list[Match]


@dataclass
class Result:
    threshold: float
    parts: list[str]
    pairs: list[Pair] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    compared: int = 0  # pairs of sides compared, over all parts
    highest_below: float = 0.0  # the highest part score of the pairs not listed
    past: str = ""  # the folder of past solutions, if any
    settings: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _codes(sources: dict[str, dict[str, str]], parts: list[Part], skipped: list[Skipped]):
    codes: dict[str, list[Code]] = {p.key: [] for p in parts}
    for owner, found in sources.items():
        for part in parts:
            source = found.get(part.key)
            if source is None:
                continue
            if len(source) > MAX_SOURCE_CHARS:
                skipped.append(Skipped(owner, part.key, f"longer than {MAX_SOURCE_CHARS:,} chars"))
                continue
            text, parsed = solution_text(source, part.skeleton)
            if not text.strip():
                continue  # the skeleton, or nothing: nothing of its own to compare
            if len(text) < MIN_CHARS:
                why = f"{len(text)} characters of its own once normalised: too short to compare"
                skipped.append(Skipped(owner, part.key, why))
                continue
            codes[part.key].append(Code(owner, part.key, text, parsed))
    return codes


def _fingerprint(code: Code):
    from copydetect import CodeFingerprint

    return CodeFingerprint(f"{code.owner}.py", K, WINDOW, filter=False, fp=io.StringIO(code.text))


def _spans(slices) -> list[list[int]]:
    if len(slices) == 0 or len(slices[0]) == 0:
        return []
    return [[int(start), int(end)] for start, end in zip(slices[0], slices[1], strict=True)]


def compare(
    parts: list[Part],
    submissions: dict[str, dict[str, str]],
    past: dict[str, dict[str, str]] | None = None,
    threshold: float = THRESHOLD,
    skipped: list[Skipped] | None = None,
) -> Result:
    """Every pair of submissions, and every submission with every past solution, per part.

    ``submissions`` and ``past``: owner -> part key -> the cell's source as written.
    """
    from copydetect import __version__, compare_files

    check_threshold(threshold)
    skipped = list(skipped or [])
    result = Result(threshold, [p.key for p in parts], skipped=skipped)
    result.settings = {"library": f"copydetect {__version__}", "k": K, "window": WINDOW}
    result.settings["min_chars"] = MIN_CHARS
    students = _codes(submissions, parts, skipped)
    others = _codes(past or {}, parts, skipped)
    found: dict[tuple[str, str], list[Match]] = {}
    for part in parts:
        mine = [(c, _fingerprint(c)) for c in students[part.key]]
        theirs = [(c, _fingerprint(c)) for c in others[part.key]]
        for index, (a, print_a) in enumerate(mine):
            for b, print_b in mine[index + 1 :] + theirs:
                result.compared += 1
                if not print_a.hashes & print_b.hashes:
                    continue
                _, shares, slices = compare_files(print_a, print_b)
                score = float(max(shares))
                if score < threshold:
                    result.highest_below = max(result.highest_below, score)
                    continue
                match = Match(
                    part.key,
                    round(score, 4),
                    (round(float(shares[0]), 4), round(float(shares[1]), 4)),
                    (a.text, b.text),
                    (_spans(slices[0]), _spans(slices[1])),
                    (a.parsed, b.parsed),
                )
                found.setdefault((a.owner, b.owner), []).append(match)
    result.highest_below = round(result.highest_below, 4)
    result.pairs = sorted(
        (Pair(a, b, max(m.score for m in matches), matches) for (a, b), matches in found.items()),
        key=lambda pair: (-pair.score, pair.a, pair.b),
    )
    return result


def check_threshold(threshold: float) -> None:
    if not 0 < threshold <= 1:
        raise SimilarityError(f"the similarity threshold must be in (0, 1], not {threshold}")


def write_json(result: Result, target: Path) -> Path:
    target.write_text(json.dumps(result.to_json(), indent=1), encoding="utf-8")
    return target
