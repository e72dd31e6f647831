"""Find instructor-only text (solutions, model answers, hidden tests) in student-facing files.

The secrets are the actual lines: every line inside a ``### BEGIN SOLUTION`` block, every
model answer of a manually graded cell, every line of a hidden-test block and of the hidden
checks in ``autograder/hidden``. A line also present in public material (the lectures, the
``course`` package, the public parts of the assignment) is not a secret and is left out.
"""

from __future__ import annotations

import json
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

from autograder.nbgrader_format import (
    cell_kind,
    hidden_test_blocks,
    read_source,
    solution_blocks,
    without_hidden_tests,
    without_solutions,
)
from tools.notebooks import REPO

MIN_LENGTH = 12  # shorter lines ("return h", "else:") carry no solution on their own
TEXT_SUFFIXES = {
    ".py",
    ".md",
    ".txt",
    ".json",
    ".ipynb",
    ".html",
    ".js",
    ".yml",
    ".yaml",
    ".cfg",
    ".toml",
    ".csv",
}


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# A line that is one name, number or string with punctuation around it ('"attention",',
# "torch.float64)") says nothing about a solution, and matches unrelated data (a checkpoint's
# metadata, a word list): it is not a secret, whatever its length.
_ONE_TOKEN = re.compile(r"""[\s"'(\[{]*[\w.\-/]+[\s"')\]},:;]*""")


def _lines(text: str) -> set[str]:
    return {
        normalise(line)
        for line in text.splitlines()
        if len(normalise(line)) >= MIN_LENGTH and not _ONE_TOKEN.fullmatch(normalise(line))
    }


def secret_and_public_lines(solutions: Path = REPO / "solutions") -> tuple[set[str], set[str]]:
    """Split the assignment sources' lines into secret ones and public ones."""
    secret, public = set(), set()
    for source in sorted(solutions.glob("*/*.py")):
        for cell in read_source(source).cells:
            text = cell["source"]
            if cell_kind(cell) == "manual":
                secret |= _lines(text)  # a model answer: the whole cell
                continue
            for part in solution_blocks(text) + hidden_test_blocks(text):
                secret |= _lines(part)
            public |= _lines(without_solutions(without_hidden_tests(text)))
    for hidden_check in sorted((REPO / "autograder" / "hidden").glob("*.py")):
        secret |= _lines(hidden_check.read_text())
    for folder in (REPO / "lectures", REPO / "course"):
        for path in folder.rglob("*.py"):
            public |= _lines(path.read_text())
    return secret - public, public


class _TextOnly(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        if tag in {"style"}:
            self._skip += 1

    def handle_endtag(self, tag):
        if tag in {"style"} and self._skip:
            self._skip -= 1

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


def readable_text(path: Path) -> str:
    """What a person (or a program) can read from a file: HTML without tags, notebook cells."""
    raw = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".html":
        parser = _TextOnly()
        parser.feed(raw)
        return raw + "\n" + "".join(parser.parts)
    if path.suffix == ".ipynb":
        try:
            notebook = json.loads(raw)
        except json.JSONDecodeError:
            return raw
        pieces = [raw]
        for cell in notebook.get("cells", []):
            pieces.append("".join(cell.get("source", [])))
            for output in cell.get("outputs", []):
                pieces.append("".join(output.get("text", [])))
                for value in output.get("data", {}).values():
                    pieces.append("".join(value) if isinstance(value, list) else str(value))
        return "\n".join(pieces)
    return unescape(raw) if path.suffix in {".js", ".json"} else raw


def find_leaks(root: Path, secrets: set[str]) -> list[tuple[Path, str]]:
    """Every (file, secret line) pair where a secret line stands as a line of a text file below ``root``.

    Lines are compared whole, after folding white space, in what a reader sees (HTML without its
    tags, notebook cells and outputs), so syntax highlighting or JSON escaping hides nothing.
    """
    leaks = []
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for path in files:
        if path.suffix not in TEXT_SUFFIXES:
            continue
        lines = {normalise(line) for line in readable_text(path).splitlines()}
        leaks += [(path, line) for line in sorted(secrets & lines)]
    return leaks
