"""Build the English corpora shipped in ``course/data/files/`` from Debian packages.

    python -m tools.prepare_corpora            # apt-get update + download, then build
    python -m tools.prepare_corpora --debs D   # build from .deb files already in folder D

The packages are downloaded with ``apt-get download`` and unpacked with ``dpkg-deb -x`` into a
temporary folder: nothing is installed on the system, and students never need apt (the
prepared files ship with the course). The output is deterministic: documents and examples in
source order, splits from a CRC32 hash of a name, gzip with a fixed timestamp and no file name,
so the same packages give the same bytes.

Three files are written, plus licence notices and a generated README.md:

- ``prose_web.jsonl.gz``: the World English Bible (``sword-text-web``), one JSON object per
  chapter: {"id", "title", "split", "paragraphs": [[sentence, ...], ...]}.
- ``prose_pydocs.jsonl.gz``: the Python 3.11 documentation's reST sources
  (``python3.11-doc``), one object per page, code blocks, directives and markup removed.
- ``wordnet_examples.jsonl.gz``: WordNet 3.0 example sentences (``wordnet-base``), one object
  per sentence with its marked word: {"tokens", "target", "lemma", "synset", "pos",
  "supersense", "ambiguous", "split"}.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from course.data.english import (
    OTHER_LEXNAMES,
    POS_LABELS,
    PROSE_FILES,
    REBUILD_COMMAND,
    SPLITS,
    SUPERSENSE_LABELS,
    WORDNET_FILE,
)
from course.data.words import tokenize

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "course" / "data" / "files"
PACKAGES = ("sword-text-web", "python3.11-doc", "wordnet-base")


# ----------------------------------------------------------------------------------------------
# Deterministic output


def split_of(name: str) -> str:
    """Return "test" for one name in ten, "val" for another one in ten, "train" otherwise.

    Depends only on the name (CRC32), so it is the same on every run and machine.
    """
    bucket = zlib.crc32(name.encode("utf-8")) % 10
    return SPLITS[2] if bucket == 0 else SPLITS[1] if bucket == 1 else SPLITS[0]


def write_jsonl_gz(path: Path, records: Iterable[dict]) -> None:
    """Write one compact JSON object per line, gzip'd with mtime 0 and no stored file name."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as gz:
        for record in records:
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
            gz.write(line.encode("utf-8") + b"\n")
    path.write_bytes(buffer.getvalue())


# ----------------------------------------------------------------------------------------------
# Sentences and words

_ABBREVIATIONS = {
    "e.g", "i.e", "cf", "vs", "mr", "mrs", "ms", "dr", "st", "fig", "approx", "al",
    "resp", "ca", "jr", "sr", "vol", "p", "pp", "ch", "sec", "ver", "viz", "incl",
}  # fmt: skip
# A sentence ends at . ! ? (or ...) plus closing quotes or brackets, then whitespace.
_SENTENCE_END = re.compile(r"""[.!?]+["'”’)\]]*(?=\s+)""")
_NEXT_STARTS_SENTENCE = re.compile(r"""\s+["'“‘(\[]*[A-Z0-9]""")


def split_sentences(paragraph: str) -> list[str]:
    """Split a paragraph into sentences with a few rules (no model, no data).

    A boundary is end punctuation, optional closing quotes, whitespace, and a capital letter or
    digit (after optional opening quotes). "e.g.", "Mr." and initials such as "J." do not end a
    sentence.
    """
    text = " ".join(paragraph.split())
    sentences: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
        if not _NEXT_STARTS_SENTENCE.match(text, end):
            continue
        if match.group().startswith("..") and not match.group().startswith("..."):
            continue  # "[A .. Z]"
        if match.group() == ".":  # not after a closing quote: '“No.” Then' ends a sentence
            word = re.search(r"([\w.'’]+)$", text[start : match.start()])
            previous = word.group(1) if word else ""
            if (
                previous.lower() in _ABBREVIATIONS
                or re.fullmatch(r"[A-Z]", previous)  # an initial: "J. R. R. Tolkien"
                or re.fullmatch(r"(?:\w\.)+\w", previous)  # "A.M. Kuchling", "U.S"
            ):
                continue
        sentences.append(text[start:end].strip())
        start = end
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return [s for s in sentences if s]


# ----------------------------------------------------------------------------------------------
# World English Bible: SWORD zText module -> chapters


def read_ztext(module_dir: Path) -> list[str]:
    """Return every entry of a SWORD zText module (Old then New Testament), in index order.

    Layout: ``*.bzs`` lists compressed blocks (uint32 offset, size, uncompressed size);
    ``*.bzv`` lists entries (uint32 block, uint32 offset in the block, uint16 size);
    ``*.bzz`` holds the zlib-compressed blocks. Entries are book, chapter and verse slots in
    the module's versification; absent verses are empty strings.
    """
    entries: list[str] = []
    for testament in ("ot", "nt"):
        blocks_index = (module_dir / f"{testament}.bzs").read_bytes()
        verse_index = (module_dir / f"{testament}.bzv").read_bytes()
        data = (module_dir / f"{testament}.bzz").read_bytes()
        blocks = [
            struct.unpack_from("<III", blocks_index, i) for i in range(0, len(blocks_index), 12)
        ]
        cache: dict[int, bytes] = {}
        for i in range(0, len(verse_index), 10):
            block, offset, size = struct.unpack_from("<IIH", verse_index, i)
            if size == 0:
                entries.append("")
                continue
            if block not in cache:
                start, compressed, _ = blocks[block]
                cache[block] = zlib.decompress(data[start : start + compressed])
            entries.append(cache[block][offset : offset + size].decode("utf-8"))
    return entries


_TAG = re.compile(r"<(/?)([\w:]+)([^>]*?)(/?)>")
_SKIPPED_ELEMENTS = {"note", "title", "speaker", "catchWord", "rdg"}  # not verse text
# The module's versification (NRSVA) has no slot for Greek Daniel: its text is squeezed into
# one entry, cut at 65,535 bytes, and Hosea's book heading is lost with it. Greek Daniel and
# Greek Esther repeat most of Daniel and Esther, so both are left out (and do not leak the
# text of one split into another).
_WEB_SKIPPED_BOOKS = {"DanGr", "EsthGr"}
_WEB_BOOK_FALLBACK = {"Hos": "Hosea"}


def _attribute(attributes: str, name: str) -> str | None:
    found = re.search(rf'\b{name}="([^"]*)"', attributes)
    return found.group(1) if found else None


def web_chapters(entries: list[str]) -> list[dict]:
    """Turn OSIS-marked zText entries into chapter records with paragraphs of sentences.

    Footnotes, cross references, section headings and speaker labels are dropped; the words of
    the verses are kept as written. A paragraph starts at each OSIS paragraph, line-group or
    paragraph-break mark. Text outside chapters (preface, book introductions) is dropped.
    Each record also counts its "verses" (entries with text).
    """
    chapters: list[dict] = []
    book_names: dict[str, str] = {}
    book = chapter = None
    paragraphs: list[list[str]] = [[]]
    skip_depth = verses = 0
    entry_has_text = False

    def add(text: str) -> None:
        nonlocal entry_has_text, verses
        if chapter and not skip_depth and chapter.split(".")[0] not in _WEB_SKIPPED_BOOKS:
            paragraphs[-1].append(text)
            if text.strip() and not entry_has_text:
                entry_has_text, verses = True, verses + 1

    def new_paragraph() -> None:
        if "".join(paragraphs[-1]).strip():
            paragraphs.append([])

    def close_chapter() -> None:
        texts = (" ".join("".join(p).split()) for p in paragraphs)
        texts = (re.sub(r"\s+([.,;:!?])", r"\1", t) for t in texts)  # where a note was cut
        sentences = [split_sentences(t) for t in texts if t]
        if chapter and sentences:
            code, number = chapter.rsplit(".", 1)
            name = book_names.get(code) or _WEB_BOOK_FALLBACK.get(code, code)
            chapters.append({"id": f"web/{chapter}", "title": f"{name} {number}",
                             "paragraphs": sentences, "verses": verses})  # fmt: skip

    for entry in entries:
        entry_has_text = False
        position = 0
        for match in _TAG.finditer(entry):
            add(entry[position : match.start()])
            position = match.end()
            closing, name, attributes, empty = match.groups()
            kind = _attribute(attributes, "type")
            if name in _SKIPPED_ELEMENTS and not empty:
                skip_depth += -1 if closing else 1
                add(" ")  # "God<note>...</note>created": keep the words apart
            elif name == "div" and kind == "book" and _attribute(attributes, "sID"):
                book = _attribute(attributes, "osisID")
            elif name == "milestone" and kind == "x-usfm-h" and book:
                book_names.setdefault(book, _attribute(attributes, "n") or book)
            elif name == "chapter":
                if chapter:
                    close_chapter()
                chapter = _attribute(attributes, "sID") and _attribute(attributes, "osisID")
                paragraphs, verses = [[]], 0
            elif (
                (name == "div" and kind == "x-p")
                or name == "lg"
                or (name == "lb" and kind == "x-p")
            ):
                new_paragraph()
        add(entry[position:])
        add(" ")  # entries are separate verses
    if chapter:
        close_chapter()
    return chapters


# ----------------------------------------------------------------------------------------------
# Python documentation: reST -> paragraphs of prose

# Directives whose body is prose (descriptions of functions, notes...). Every other directive
# (code, tables, toctrees, images, index entries...) is dropped with its body.
_PROSE_DIRECTIVES = {
    "function", "method", "class", "classmethod", "staticmethod", "attribute", "data",
    "exception", "decorator", "decoratormethod", "describe", "cmdoption", "option", "envvar",
    "opcode", "pdbcommand", "abstractmethod", "coroutinefunction", "coroutinemethod",
    "c:function", "c:type", "c:macro", "c:member", "c:var", "c:data",
    "note", "warning", "seealso", "versionadded", "versionchanged", "deprecated",
    "deprecated-removed", "impl-detail", "admonition", "attention", "caution", "danger",
    "error", "hint", "important", "tip", "glossary", "topic", "sidebar", "container",
}  # fmt: skip
# Of those, directives whose argument (on the directive line) is prose too.
_ADMONITIONS = {
    "note", "warning", "seealso", "impl-detail", "attention", "caution", "danger", "error",
    "hint", "important", "tip", "admonition",
}  # fmt: skip
_DIRECTIVE = re.compile(r"^\.\.\s+([\w:-]+)::\s*(.*)$")
_ADORNMENT = re.compile(r"""^([=\-`:'"~^_*+#<>.])\1+$""")
_SIMPLE_TABLE_BORDER = re.compile(r"^=+( +=+)+$")
_BULLET = re.compile(r"^(?:[*+\-•]|#\.|\d+\.|\(?[a-z0-9]\))\s+")
_FIELD = re.compile(r"^:([^:`]+):(?:\s+|$)")
_INLINE = re.compile(
    r"``(?P<literal>.+?)``"
    r"|(?P<roles>(?::[\w.+-]+)+:)`(?P<roled>(?:[^`\\]|\\.)*)`"
    r"|`(?P<ref>(?:[^`\\]|\\.)+)`_{0,2}"
    r"|(?<![\w*\\])\*\*(?P<strong>[^*\s](?:.*?[^*\s])?)\*\*(?![\w*])"
    r"|(?<![\w*\\])\*(?P<emphasis>[^*\s](?:[^*]*?[^*\s])?)\*(?![\w*])"
    r"|\|(?P<substitution>[\w -]+)\|_{0,2}"
    r"|\s?\[(?:#[\w-]*|\d+|\*)\]_"
)


def _interpreted(content: str, roles: str = "") -> str:
    content = content.replace("\\", "")
    titled = re.fullmatch(r"(.*?)\s*<([^<>]+)>", content, flags=re.S)
    if titled and titled.group(1):
        return titled.group(1)
    if titled:
        content = titled.group(2)
    if roles.endswith(":pep:"):
        return f"PEP {content}"
    if roles.endswith(":rfc:"):
        return f"RFC {content}"
    if roles.endswith(":issue:"):
        return f"bpo-{content}"
    if roles.endswith(":gh:"):
        return f"gh-{content}"
    if roles.endswith(":abbr:"):
        return re.sub(r"\s*\(.*\)$", "", content)
    content = content.lstrip("!")
    if content.startswith("~"):
        content = content[1:].split(".")[-1]
    return content


def rst_inline(text: str) -> str:
    """Replace reST inline markup by its visible text: ``:func:`os.open``` -> "os.open"."""

    def visible(match: re.Match) -> str:
        groups = match.groupdict()
        if groups["literal"] is not None:
            return groups["literal"]
        if groups["roled"] is not None:
            return _interpreted(groups["roled"], groups["roles"])
        if groups["ref"] is not None:
            return _interpreted(groups["ref"])
        if groups["strong"] is not None:
            return groups["strong"]
        if groups["emphasis"] is not None:
            return groups["emphasis"]
        if groups["substitution"] is not None:
            name = groups["substitution"]
            return "3.11" if name in ("release", "version") else name
        return ""  # footnote reference

    text = _INLINE.sub(visible, text)
    text = re.sub(r"(?<=[A-Za-z0-9])_(?=[\s.,;:!?)]|$)", "", text)  # `name`_ link leftovers
    text = text.replace("\\ ", "").replace("\\", "")
    return " ".join(text.split())


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _block_end(lines: list[str], start: int, indent: int) -> int:
    """Index after the block of lines (blank or indented deeper than ``indent``) at ``start``."""
    end = start
    while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > indent):
        end += 1
    return end


def _dedent(lines: list[str]) -> list[str]:
    indents = [_indent(line) for line in lines if line.strip()]
    cut = min(indents, default=0)
    return [line[cut:] for line in lines]


def rst_paragraphs(lines: list[str]) -> tuple[str | None, list[str]]:
    """Return (first section title, paragraphs of prose) of a reST document.

    Dropped: code (literal blocks after "::", doctest blocks, code directives), tables,
    comments and targets, section titles, definition-list terms, and directives not in the
    prose list. Kept: paragraphs, list items (markers removed), and the bodies of prose
    directives (function descriptions, notes, version notes), with inline markup resolved.
    """
    lines = [line.expandtabs(8).rstrip() for line in lines]
    title: str | None = None
    paragraphs: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        indent = _indent(line)
        if not stripped or (_ADORNMENT.match(stripped) and len(stripped) > 2):
            i += 1
            continue
        underline = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if _ADORNMENT.match(underline) and len(underline) >= min(len(stripped), 3):
            if title is None:
                title = rst_inline(stripped)
            i += 2
            continue
        if stripped.startswith("..") and (stripped == ".." or stripped[2] in " \t"):
            end = _block_end(lines, i + 1, indent)
            directive = _DIRECTIVE.match(stripped)
            if directive and directive.group(1) in _PROSE_DIRECTIVES:
                body = _dedent(lines[i + 1 : end])
                while body and _FIELD.match(body[0].strip()):  # directive options
                    body = body[1:]
                if directive.group(1) in _ADMONITIONS and directive.group(2):
                    body = [directive.group(2), *body]
                paragraphs.extend(rst_paragraphs(body)[1])
            i = end
            continue
        if stripped.startswith(">>>") or stripped.startswith("+-") or stripped.startswith("+="):
            while i < len(lines) and lines[i].strip():
                i += 1
            continue
        if _SIMPLE_TABLE_BORDER.match(stripped):
            borders = 0
            while i < len(lines) and borders < 3:
                if _SIMPLE_TABLE_BORDER.match(lines[i].strip()):
                    borders += 1
                elif not lines[i].strip() and borders >= 2:
                    break
                i += 1
            continue
        # A paragraph or list item: lines up to a blank line, a new item or an indent change.
        bullet = _BULLET.match(stripped)
        item_indent = indent + (bullet.end() if bullet else 0)
        chunk = [stripped[bullet.end() :] if bullet else stripped]
        if chunk[0].startswith(".."):  # "* .. _target:": the item's text follows, indented
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip():
            nxt = lines[j].strip()
            if bullet and _BULLET.match(nxt) and _indent(lines[j]) == indent:
                break  # the next item ("- x" inside a paragraph or an item's text is text)
            if nxt.startswith(".. ") or nxt.startswith(">>>"):
                break
            if _indent(lines[j]) != item_indent and not (bullet is None and j == i + 1):
                break
            if bullet is None and j == i + 1 and _indent(lines[j]) > indent:
                chunk = []  # a definition-list term: drop it, the definition follows
                break
            chunk.append(nxt)
            j += 1
        if not chunk:
            i += 1
            continue
        text = " ".join(chunk)
        field = _FIELD.match(text)
        if field:
            text = text[field.end() :]
        literal_follows = text.endswith("::")
        if literal_follows:
            text = text[:-2].rstrip() + (":" if text[:-2].rstrip() and text[-3] != " " else "")
        text = rst_inline(text)
        if re.search(r"[A-Za-z]{2}", text):
            paragraphs.append(text)
        i = _block_end(lines, j, indent) if literal_follows else j
    return title, paragraphs


_PYDOCS_SKIPPED = {
    "contents",
    "copyright",
    "license",
    "whatsnew/changelog",
    "includes/wasm-notavail",
}


def pydocs_pages(sources_dir: Path) -> list[dict]:
    """Return one record per documentation page (sorted by page name), prose only."""
    pages = []
    names = {p.relative_to(sources_dir).as_posix().removesuffix(".rst.txt"): p
             for p in sources_dir.rglob("*.rst.txt")}  # fmt: skip
    for name, path in sorted(names.items()):
        if name in _PYDOCS_SKIPPED:
            continue
        title, paragraphs = rst_paragraphs(path.read_text(encoding="utf-8").splitlines())
        sentences = [split_sentences(p) for p in paragraphs]
        sentences = [s for s in sentences if s]
        if sentences:
            pages.append({"id": f"pydocs/{name}", "title": title or name, "paragraphs": sentences})
    return pages


# ----------------------------------------------------------------------------------------------
# WordNet example sentences -> two word-level tasks

_POS_OF = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
_EXCEPTION_FILES = {"noun": "noun.exc", "verb": "verb.exc", "adj": "adj.exc", "adv": "adv.exc"}
# Morphological rules (suffix -> ending), as WordNet's morphy documents them; written here.
_SUFFIX_RULES = {
    "noun": [("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
             ("shes", "sh"), ("men", "man"), ("ies", "y")],
    "verb": [("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
             ("ing", "e"), ("ing", "")],
    "adj": [("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
    "adv": [],
}  # fmt: skip


def read_lexnames(man_page: Path) -> list[str]:
    """Return WordNet's lexicographer file names by number, from the lexnames(5WN) page."""
    names: dict[int, str] = {}
    with gzip.open(man_page, "rt", encoding="utf-8") as text:
        for line in text:
            found = re.match(r"^(\d\d)\s+((?:adj|adv|noun|verb)\.\w+)", line)
            if found:
                names[int(found.group(1))] = found.group(2)
    return [names[i] for i in range(len(names))]


def base_forms(word: str, pos: str, exceptions: dict[str, dict[str, list[str]]]) -> set[str]:
    """Return candidate lemmas of an inflected word: itself, exception-list bases, suffix rules.

    Also undoes a doubled final consonant ("running" -> "runn" -> "run").
    """
    word = word.lower()
    forms = {word, *exceptions[pos].get(word, [])}
    for suffix, ending in _SUFFIX_RULES[pos]:
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            stem = word[: -len(suffix)] + ending
            forms.add(stem)
            if not ending and len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "aeiouls":
                forms.add(stem[:-1])
    return forms


def _read_exceptions(wordnet_dir: Path) -> dict[str, dict[str, list[str]]]:
    exceptions: dict[str, dict[str, list[str]]] = {}
    for pos, name in _EXCEPTION_FILES.items():
        table: dict[str, list[str]] = {}
        for line in (wordnet_dir / name).read_text(encoding="utf-8").splitlines():
            inflected, *bases = line.split()
            table[inflected.replace("_", " ")] = [b.replace("_", " ") for b in bases]
        exceptions[pos] = table
    return exceptions


def _pos_by_lemma(wordnet_dir: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for pos, name in (("noun", "index.noun"), ("verb", "index.verb"), ("adj", "index.adj"),
                      ("adv", "index.adv")):  # fmt: skip
        for line in (wordnet_dir / name).read_text(encoding="utf-8").splitlines():
            if not line.startswith(" "):
                found.setdefault(line.split(" ", 1)[0], set()).add(pos)
    return found


def parse_synset_line(line: str) -> tuple[str, int, str, list[str], list[str]] | None:
    """Parse one ``data.*`` line into (offset, lexfile number, ss_type, lemmas, examples).

    Lemmas are lowercased with "_" kept for multi-word entries and adjective markers such as
    "(a)" removed; examples are the double-quoted parts of the gloss. Header lines give None.
    """
    if line.startswith(" ") or "|" not in line:
        return None
    fields, gloss = line.split(" | ", 1) if " | " in line else line.split("|", 1)
    parts = fields.split()
    offset, lexfile, ss_type, count = parts[0], int(parts[1]), parts[2], int(parts[3], 16)
    lemmas = [re.sub(r"\(\w+\)$", "", parts[4 + 2 * k]).lower() for k in range(count)]
    examples = [e.strip() for e in re.findall(r'"([^"]+)"', gloss)]
    return offset, lexfile, ss_type, lemmas, [e for e in examples if e]


def locate_target(
    tokens: list[str], lemmas: list[str], pos: str, exceptions: dict[str, dict[str, list[str]]]
) -> tuple[int, str] | None:
    """Return (token index, lemma) of the first single-word lemma of the synset in the tokens.

    Lemmas are tried in the synset's order; each against every token, left to right. A token
    matches when the lemma is one of its base forms (so "dogs", "ran", "happier" match "dog",
    "run", "happy"). Multi-word lemmas ("take_off") are not looked for.
    """
    lowered = [t.lower() for t in tokens]
    for lemma in lemmas:
        if "_" in lemma:
            continue
        for index, token in enumerate(lowered):
            if token == lemma or lemma in base_forms(token, pos, exceptions):
                return index, lemma
    return None


def wordnet_examples(wordnet_dir: Path, lexnames: list[str]) -> tuple[list[dict], Counter]:
    """Return one record per (sentence, marked word) and counts of what was kept or dropped."""
    exceptions = _read_exceptions(wordnet_dir)
    pos_of_lemma = _pos_by_lemma(wordnet_dir)
    stats: Counter = Counter()
    records: list[dict] = []
    seen: set[tuple[tuple[str, ...], int]] = set()
    for name in ("data.noun", "data.verb", "data.adj", "data.adv"):
        for line in (wordnet_dir / name).read_text(encoding="utf-8").splitlines():
            parsed = parse_synset_line(line)
            if parsed is None:
                continue
            offset, lexfile, ss_type, lemmas, examples = parsed
            pos = _POS_OF[ss_type]
            for sentence in examples:
                stats["sentences"] += 1
                tokens = tokenize(sentence)
                found = locate_target(tokens, lemmas, pos, exceptions) if tokens else None
                if found is None:
                    stats["target not found"] += 1
                    continue
                target, lemma = found
                key = (tuple(tokens), target)
                if key in seen:
                    stats["duplicate"] += 1
                    continue
                seen.add(key)
                stats["kept"] += 1
                records.append({
                    "tokens": tokens, "target": target, "lemma": lemma,
                    "synset": f"{offset}-{ss_type}", "pos": pos, "supersense": lexnames[lexfile],
                    "ambiguous": len(pos_of_lemma.get(lemma, {pos}) | {pos}) > 1,
                    "split": split_of(lemma),
                })  # fmt: skip
    return records, stats


# ----------------------------------------------------------------------------------------------
# Statistics for the README

_ALPHA_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")


def prose_stats(records: list[dict]) -> dict[str, dict[str, int]]:
    """Documents, paragraphs, sentences, words (alphabetic) and characters per split."""
    table: dict[str, dict[str, int]] = {}
    for split in (*SPLITS, "all"):
        chosen = [r for r in records if split in ("all", r["split"])]
        sentences = [s for r in chosen for p in r["paragraphs"] for s in p]
        table[split] = {
            "documents": len(chosen),
            "paragraphs": sum(len(r["paragraphs"]) for r in chosen),
            "sentences": len(sentences),
            "words": sum(len(_ALPHA_WORD.findall(s)) for s in sentences),
            "characters": sum(len(s) + 1 for s in sentences),
        }
    return table


def task_stats(records: list[dict]) -> dict[str, dict]:
    """Per task: examples and class counts per split, and the majority-class baseline."""
    result = {}
    for task, key, labels in (("pos", "pos", POS_LABELS),
                              ("supersense", "supersense", SUPERSENSE_LABELS)):  # fmt: skip
        chosen = [r for r in records if r[key] in labels]
        counts = {s: Counter(r[key] for r in chosen if r["split"] == s) for s in SPLITS}
        majority = min(counts["train"], key=lambda k: (-counts["train"][k], k))
        result[task] = {
            "counts": counts,
            "majority": majority,
            "baseline": {s: counts[s][majority] / max(1, sum(counts[s].values())) for s in SPLITS},
            "lemmas": {s: len({r["lemma"] for r in chosen if r["split"] == s}) for s in SPLITS},
        }
    return result


# ----------------------------------------------------------------------------------------------
# Download, unpack, build


def _run(command: list[str], cwd: Path | None = None) -> str:
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"prepare_corpora: `{' '.join(command)}` failed:\n{result.stderr}")
    return result.stdout


def download_packages(folder: Path, update: bool) -> None:
    """``apt-get update`` (optional) and ``apt-get download`` the source packages into folder."""
    if shutil.which("apt-get") is None:
        sys.exit("prepare_corpora: needs Debian's apt-get (or pass --debs with the .deb files)")
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    if update:
        _run([*sudo, "apt-get", "update", "-qq"])
    os.chmod(folder, 0o777)  # apt's unprivileged download user writes here
    _run(["apt-get", "download", "-qq", *PACKAGES], cwd=folder)


def unpack(debs: Path, folder: Path) -> dict[str, str]:
    """Unpack each package's .deb with ``dpkg-deb -x``; return {package: version}."""
    versions = {}
    for package in PACKAGES:
        candidates = sorted(debs.glob(f"{package}_*.deb"))
        if not candidates:
            sys.exit(f"prepare_corpora: no {package}_*.deb in {debs}")
        deb = candidates[-1]
        versions[package] = _run(["dpkg-deb", "-f", str(deb), "Version"]).strip()
        (folder / package).mkdir(parents=True, exist_ok=True)
        _run(["dpkg-deb", "-x", str(deb), str(folder / package)])
    return versions


def build(root: Path, versions: dict[str, str], out: Path) -> dict:
    """Write the three corpus files, the notices and README.md into ``out``; return the stats."""
    out.mkdir(parents=True, exist_ok=True)
    web_dir = root / "sword-text-web/usr/share/sword/modules/texts/ztext/engWEB2015eb"
    chapters = web_chapters(read_ztext(web_dir))
    pages = pydocs_pages(root / "python3.11-doc/usr/share/doc/python3.11/html/_sources")
    wordnet_dir = root / "wordnet-base/usr/share/wordnet"
    lexnames = read_lexnames(root / "wordnet-base/usr/share/man/man5/lexnames.5WN.gz")
    if tuple(n for n in lexnames if n not in OTHER_LEXNAMES) != SUPERSENSE_LABELS:
        sys.exit("prepare_corpora: WordNet's lexnames differ from SUPERSENSE_LABELS")
    examples, example_counts = wordnet_examples(wordnet_dir, lexnames)

    verses = sum(c.pop("verses") for c in chapters)
    for record in (*chapters, *pages):
        record["split"] = split_of(record["id"])
    write_jsonl_gz(out / PROSE_FILES["web"], chapters)
    write_jsonl_gz(out / PROSE_FILES["pydocs"], pages)
    write_jsonl_gz(out / WORDNET_FILE, examples)

    shutil.copyfile(root / "wordnet-base/usr/share/doc/wordnet-base/copyright",
                    out / "LICENSE-WordNet.txt")  # fmt: skip
    shutil.copyfile(root / "sword-text-web/usr/share/doc/sword-text-web/copyright",
                    out / "LICENSE-WEB.txt")  # fmt: skip
    license_rst = root / "python3.11-doc/usr/share/doc/python3.11/html/_sources/license.rst.txt"
    (out / "LICENSE-PSF.txt").write_text(_psf_notice(license_rst.read_text(encoding="utf-8")))

    stats = {
        "versions": versions,
        "web": prose_stats(chapters),
        "web_verses": verses,
        "pydocs": prose_stats(pages),
        "wordnet": task_stats(examples),
        "wordnet_counts": dict(example_counts),
        "sizes": {
            name: (out / name).stat().st_size for name in (*PROSE_FILES.values(), WORDNET_FILE)
        },  # fmt: skip
    }
    (out / "README.md").write_text(render_readme(stats), encoding="utf-8")
    return stats


def _psf_notice(license_rst: str) -> str:
    """The PSF licence agreement, as the documentation states it, with its copyright notice."""
    start = license_rst.index(".. _PSF-license:")
    end = license_rst.index("BEOPEN.COM LICENSE AGREEMENT")
    body = license_rst[start:end].split(".. parsed-literal::", 1)[1]
    body = "\n".join(line[3:] if line.startswith("   ") else line for line in body.splitlines())
    return (
        "The file prose_pydocs.jsonl.gz is derived from the Python 3.11 documentation\n"
        "(Debian package python3.11-doc, reST sources in html/_sources/).\n\n"
        "Copyright © 2001-2023 Python Software Foundation; All Rights Reserved.\n\n"
        "Summary of the changes (clause 3 below): only the prose was kept; code blocks, tables,\n"
        "directives and reST markup were removed, and the text was split into sentences.\n\n"
        "PSF LICENSE AGREEMENT FOR PYTHON 3.11 (|release| = 3.11)\n"
        "------------------------------------------------------\n"
        + body.strip().replace("|release|", "3.11")
        + "\n"
    )


def _table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(f"{c:,}" if isinstance(c, int) else str(c) for c in row) + " |"
              for row in rows]  # fmt: skip
    return "\n".join(lines)


def render_readme(stats: dict) -> str:
    """The README of ``course/data/files/``: sources, versions, licences, sizes, counts."""
    v = stats["versions"]
    prose_rows = []
    for source in ("web", "pydocs"):
        for split in (*SPLITS, "all"):
            s = stats[source][split]
            prose_rows.append([source, split, s["documents"], s["paragraphs"], s["sentences"],
                               s["words"], s["characters"]])  # fmt: skip
    total_words = stats["web"]["all"]["words"] + stats["pydocs"]["all"]["words"]
    sizes = stats["sizes"]
    size_rows = [[name, f"{size / 1e6:.2f} MB"] for name, size in sizes.items()]
    size_rows.append(["all three", f"{sum(sizes.values()) / 1e6:.2f} MB"])
    task_parts = []
    for task, info in stats["wordnet"].items():
        labels = POS_LABELS if task == "pos" else SUPERSENSE_LABELS
        rows = [[label, *(info["counts"][s][label] for s in SPLITS)] for label in labels]
        rows.append(["**all**", *(sum(info["counts"][s].values()) for s in SPLITS)])
        rows.append(["distinct lemmas", *(info["lemmas"][s] for s in SPLITS)])
        baseline = ", ".join(f"{s} {info['baseline'][s]:.3f}" for s in SPLITS)
        task_parts.append(
            f"**{task}** (majority class of train: `{info['majority']}`; its accuracy: "
            f"{baseline})\n\n" + _table(["label", *SPLITS], rows) + "\n"
        )
    wn = stats["wordnet_counts"]
    return f"""# Prepared English corpora

Made by `{REBUILD_COMMAND}` from the repository root. It needs Debian's `apt-get`
and `dpkg-deb`, and writes every file here, this README included. Students never need it: the
files ship with the course and are read by `course/data/english.py` with the standard library.
Same packages, same bytes: sources are read in a fixed order, splits come from a CRC32 hash of
a name, and gzip stores no time stamp or file name.

## Sources and licences

| file | source (Debian package, version) | licence | notice |
| --- | --- | --- | --- |
| `{PROSE_FILES["web"]}` | World English Bible with Deuterocanon, SWORD module engWEB2015eb (`sword-text-web` {v["sword-text-web"]}) | public domain | `LICENSE-WEB.txt` |
| `{PROSE_FILES["pydocs"]}` | Python 3.11 documentation, reST sources `html/_sources/*.rst.txt` (`python3.11-doc` {v["python3.11-doc"]}) | PSF License Agreement | `LICENSE-PSF.txt` |
| `{WORDNET_FILE}` | WordNet 3.0 (`wordnet-base` {v["wordnet-base"]}): example sentences in the glosses of `data.noun`, `data.verb`, `data.adj`, `data.adv` | WordNet 3.0 licence (permissive; keep the notice) | `LICENSE-WordNet.txt` |

The World English Bible is public domain; eBible.org asks that a changed text not be called
the World English Bible. The words of the verses are unchanged here; footnotes, cross
references, section headings and verse numbers are removed, so the text is "derived from the
World English Bible". The Python documentation is "Copyright © 2001-2023 Python Software
Foundation; All Rights Reserved"; the PSF licence allows derived works that keep its notice and
summarise the changes (in `LICENSE-PSF.txt`). WordNet's licence asks that its copyright notice
and disclaimer appear on all copies: `LICENSE-WordNet.txt`.

## Files

{_table(["file", "size"], size_rows)}

Each is gzip-compressed JSON Lines, one object per line.

- Prose (one object per document, in corpus order): `{{"id": "web/Gen.1", "title": "Genesis 1",
  "split": "test", "paragraphs": [["In the beginning, God created the heavens and the
  earth.", ...], ...]}}`. Bible documents are chapters (books in canonical order, with the
  deuterocanonical books after Malachi as in the module; Greek Daniel and Greek Esther are
  left out: they repeat Daniel and Esther, and the module stores Greek Daniel cut short).
  Python documents are pages, sorted by name (`contents`, `copyright`, `license` and
  `whatsnew/changelog` left out). Paragraphs follow the sources' paragraph marks; sentences
  come from a rule-based splitter.
- WordNet (one object per example sentence with its marked word): `{{"tokens": [...],
  "target": 3, "lemma": "dog", "synset": "02084071-n", "pos": "noun", "supersense":
  "noun.animal", "ambiguous": true, "split": "train"}}`.

Splits: a document (prose) or a lemma (WordNet) goes to `test` when the CRC32 of its id or
lemma is 0 mod 10, to `val` when it is 1 mod 10, to `train` otherwise.

## Prose

{_table(["source", "split", "documents", "paragraphs", "sentences", "words", "characters"], prose_rows)}

Words are runs of letters (apostrophes inside words allowed), so numbers and code punctuation
do not count. Both sources together: {total_words:,} words.
The Bible has {stats["web_verses"]:,} verses with text.

## Labelled tasks (WordNet example sentences)

Of {wn.get("sentences", 0):,} example sentences, {wn.get("kept", 0):,} are kept. The target word
was not found in {wn.get("target not found", 0):,} (a multi-word lemma, or an inflection the
rules do not know), and {wn.get("duplicate", 0):,} repeat a sentence and target already kept.
The target is the first single-word lemma of the synset found in the sentence (inflections
through WordNet's exception lists and suffix rules written for this course). Tokens are words
and punctuation, clitics apart (`is n't`, `dog 's`).

The split is **by lemma**: a test target word never appears as a target in train or val, so a
model cannot pass by remembering each word's usual label; it must use the word's form and
its context. `ambiguous` marks lemmas that WordNet lists under more than one part of speech.

{chr(10).join(task_parts)}
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--debs", type=Path, help="folder holding the .deb files (no download)")
    parser.add_argument("--no-update", action="store_true", help="skip apt-get update")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output folder")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="corpora-") as temp:
        temp_dir = Path(temp)
        debs = args.debs
        if debs is None:
            debs = temp_dir / "debs"
            debs.mkdir()
            download_packages(debs, update=not args.no_update)
        versions = unpack(debs, temp_dir / "root")
        stats = build(temp_dir / "root", versions, args.out)
    for name, size in stats["sizes"].items():
        print(f"{args.out / name}: {size / 1e6:.2f} MB")
    words = stats["web"]["all"]["words"] + stats["pydocs"]["all"]["words"]
    print(f"prose: {words:,} words; wordnet examples: {stats['wordnet_counts']['kept']:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
