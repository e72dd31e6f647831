"""Sentences in the lectures' text that state a number or a comparison, and what guards each.

A lecture's prose must not say what its cells do not show. A sentence in a markdown cell that has
a digit or a comparison word (``COMPARISON_WORDS``) is *guarded* when the code cell just before or
just after its markdown cell guards the text: it calls ``record(...)`` of ``course.metrics``
(which fails the build when its comparison does not hold), or it has an ``assert`` statement and
says that it checks the prose, in an assert's message or in a comment (``TEXT_WORDS``: "the text
below says...", "the slide's 1.5 billion", "as published"). An assert that checks something
else (a gradient against autograd, a shape) guards no sentence beside it. A sentence is
*allowed* when the lecture's allow-list (``lectures/claims/NN_name.toml``) names it with a reason:
history, a published figure with its source, a definition, a fact of the mathematics shown, a
setting the code beside it uses, or a pointer to where something is measured. Numbers that a
cell computes belong in that cell's output (an f-string), not in the markdown.

    python -m tools.claims            # list the unguarded sentences; exit 1 if there are any

An allow-list entry that matches no sentence is an error too, so the list cannot go stale.
``make test`` runs the check (``tests/build/test_claims.py``).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import jupytext

REPO = Path(__file__).resolve().parent.parent
LECTURES = REPO / "lectures"
ALLOW_DIR = LECTURES / "claims"

COMPARISON_WORDS = (
    "beats",
    "better",
    "worse",
    "grows",
    "shrinks",
    "vanishes",
    "near",
    "most",
    "at least",
    "never",
    "always",
    "fails",
    "holds",
)
# The words by which an assert's message or a comment says that it checks the prose
TEXT_WORDS = ("text", "summary", "says", "said", "slide", "slides", "paper", "published", "quotes")
REASONS = ("history", "published", "definition", "mathematics", "setting", "pointer")

_WORDS = re.compile(r"\b(" + "|".join(re.escape(w) for w in COMPARISON_WORDS) + r")\b", re.I)
_DIGIT = re.compile(r"\d")
_TEXT = re.compile(r"\b(" + "|".join(TEXT_WORDS) + r")\b", re.I)
# What is not prose: display and inline maths, code, MyST roles and their targets, link targets,
# HTML comments and tags, and the numbers that only name a part of the course.
_STRIP = [
    re.compile(r"\$\$.*?\$\$", re.S),
    re.compile(r"\$[^$\n]+\$"),
    re.compile(r"```.*?```", re.S),
    re.compile(r"`[^`\n]*`"),
    re.compile(r"\{[a-z:]+\}"),
    re.compile(r"\]\([^)]*\)"),
    re.compile(r"<!--.*?-->", re.S),
    re.compile(r"<[^>\n]+>"),
    re.compile(
        r"\b(Lectures?|Units?|Assignments?|Sections?|Figures?|Tables?|Exercises?|Questions?|"
        r"Steps?|Part)\s+\d+(\s*(,|and|or|–|-)\s*\d+)*",
        re.I,
    ),
]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(*\"'_])")


@dataclass(frozen=True)
class Sentence:
    """One sentence of a lecture's markdown, as written (one line, spaces collapsed)."""

    lecture: str  # the file's stem, "02_lstm_gru"
    cell: int  # the cell's number in the notebook, counted from 1
    text: str
    guarded: bool  # the code cell before or after guards the text (_guards_text)


def _guards_text(source: str) -> bool:
    """Whether a code cell guards the prose beside it: a ``record(...)`` call, or an ``assert``
    statement in a cell that says it checks the text (``TEXT_WORDS`` in an assert's message or
    in a comment)."""
    comments = " ".join(re.findall(r"#(.*)$", source, re.M))
    try:
        tree = ast.parse(source)
    except SyntaxError:  # IPython magics: fall back on the text
        asserts = re.findall(r"^\s*assert\b(.*)$", source, re.M)
        return bool(re.search(r"\brecord\(", source)) or bool(
            asserts and _TEXT.search(" ".join(asserts) + " " + comments)
        )
    messages, asserting = [], False
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert):
            asserting = True
            if node.msg is not None:
                messages.append(ast.get_source_segment(source, node.msg) or "")
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name == "record":
                return True
    return asserting and bool(_TEXT.search(" ".join(messages) + " " + comments))


def prose(markdown: str) -> str:
    """``markdown`` with its maths, code, roles, targets and course references removed."""
    for pattern in _STRIP:
        markdown = pattern.sub(" ", markdown)
    return markdown


def split_sentences(markdown: str) -> list[str]:
    """The sentences of a markdown cell: paragraphs and list items apart, headings dropped."""
    blocks, current = [], []
    for line in markdown.splitlines():
        stripped = line.strip()
        item = re.match(r"^([-*+]|\d+[.)])\s+", stripped)
        if not stripped or stripped.startswith("#") or item or stripped.startswith(("|", ":::")):
            if current:
                blocks.append(" ".join(current))
            current = []
            if item:
                current = [stripped[item.end() :]]
            continue
        current.append(stripped)
    if current:
        blocks.append(" ".join(current))
    return [s.strip() for block in blocks for s in _SENTENCE_END.split(block) if s.strip()]


def states_something(sentence: str) -> bool:
    """Whether a sentence (its prose, without maths or code) has a digit or a comparison word."""
    text = prose(sentence)
    return bool(_DIGIT.search(text) or _WORDS.search(text))


def lecture_sentences(path: Path) -> list[Sentence]:
    """Every sentence of ``path``'s markdown cells that states a number or a comparison."""
    notebook = jupytext.read(path)
    cells = notebook.cells
    found = []
    for index, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        neighbours = [cells[i] for i in (index - 1, index + 1) if 0 <= i < len(cells)]
        guarded = any(c.cell_type == "code" and _guards_text(c.source) for c in neighbours)
        for sentence in split_sentences(cell.source):
            if states_something(sentence):
                found.append(Sentence(path.stem, index + 1, " ".join(sentence.split()), guarded))
    return found


def normalise(text: str) -> str:
    return " ".join(text.split()).casefold()


def allow_list(stem: str, folder: Path = ALLOW_DIR) -> list[dict]:
    """A lecture's allowed sentences: ``[[allowed]]`` tables with ``sentence`` (the sentence, or
    its start of at least 40 characters) and ``reason`` (one of ``REASONS``, a colon, then why)."""
    path = folder / f"{stem}.toml"
    if not path.exists():
        return []
    with path.open("rb") as file:
        entries = tomllib.load(file).get("allowed", [])
    for entry in entries:
        sentence, reason = entry.get("sentence", ""), entry.get("reason", "")
        if len(sentence) < 40 and not sentence.endswith((".", "?", "!", ":")):
            raise ValueError(f"{path.name}: {sentence!r}: give the whole sentence or 40 characters")
        if reason.partition(":")[0].strip() not in REASONS or not reason.partition(":")[2].strip():
            raise ValueError(
                f"{path.name}: {sentence[:50]!r}: the reason must be one of {', '.join(REASONS)}, "
                f"a colon and why (got {reason!r})"
            )
    return entries


def unguarded(paths: list[Path] | None = None, folder: Path = ALLOW_DIR) -> list[str]:
    """The problems: each unguarded sentence that no allow-list entry names, and each entry that
    names no sentence, as one line each."""
    problems = []
    for path in paths or sorted(LECTURES.glob("[0-9][0-9]_*.py")):
        entries = allow_list(path.stem, folder)
        used = [False] * len(entries)
        for sentence in lecture_sentences(path):
            matches = [
                i
                for i, entry in enumerate(entries)
                if normalise(sentence.text).startswith(normalise(entry["sentence"]))
            ]
            for i in matches:
                used[i] = True
            if not sentence.guarded and not matches:
                problems.append(f"{path.stem} cell {sentence.cell}: {sentence.text}")
        for entry, was_used in zip(entries, used, strict=True):
            if not was_used:
                problems.append(
                    f"{path.stem}: allow-list entry matches no sentence: {entry['sentence']!r}"
                )
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("lectures", nargs="*", type=Path, help="lecture sources (all by default)")
    args = parser.parse_args(argv)
    problems = unguarded(args.lectures or None)
    for line in problems:
        print(line)
    print(f"{len(problems)} unguarded sentence(s) or stale allow-list entries", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
