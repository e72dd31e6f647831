"""MyST markup -> plain Markdown that JupyterLab renders, for the student bundle's notebooks.

The sources use MyST roles that the website (Jupyter Book, Sphinx) turns into numbered
equations and author-year citations. JupyterLab knows none of them and would show them raw.
:func:`for_jupyterlab` rewrites the markdown cells of one notebook:

=====================================  ==================================================
source                                 in the bundle
=====================================  ==================================================
``$$ ... $$ (eq-name)``                ``$$ ... \\tag{n}$$``, numbered in order like the site
``{eq}`eq-name```                      ``(n)``
``{cite:p}`a,b``` (and ``{cite}``)     ``(Author, 1997; Author *et al.*, 2013)``
``{cite:t}`a```                        ``Author *et al.* (2015)``
``{math}`x```                          ``$x$``
``{ref}`label``` / ``{ref}`text <l>``  the heading under ``(label)=``, or ``text``
``(label)=`` target lines              removed
=====================================  ==================================================

A notebook that cites gets a "References" cell at its end, built from
``jupyter_book/references.bib``. Any other role or a MyST directive raises
:class:`MystConversionError` naming the cell, so new markup cannot reach students raw.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from tools.notebooks import REPO

BIBLIOGRAPHY = REPO / "jupyter_book" / "references.bib"

_LABEL = r"[A-Za-z0-9_][\w:.\-]*"
# Display math followed by a label; the body may not contain another `$$`.
LABELLED_MATH = re.compile(rf"\$\$(?P<body>(?:(?!\$\$).)+?)\$\$[ \t]*\((?P<label>{_LABEL})\)", re.S)
TARGET = re.compile(rf"^[ \t]*\((?P<label>{_LABEL})\)=[ \t]*(?:\n|$)", re.M)
ROLE = re.compile(r"\{(?P<role>[A-Za-z][\w:+\-]*)\}`(?P<content>[^`]*)`")
DIRECTIVE = re.compile(r"^[ \t]*(?::{3,}|`{3,}|~{3,})\{(?P<name>[^}]+)\}", re.M)
HEADING = re.compile(r"^#{1,6}[ \t]+(?P<title>.+?)[ \t#]*$", re.M)
EXPLICIT_TARGET = re.compile(r"^(?P<text>.*?)\s*<(?P<label>[^<>]+)>$", re.S)


class MystConversionError(ValueError):
    """A markdown cell uses markup the bundle converter does not handle (or refers to nothing)."""


@dataclass(frozen=True)
class Reference:
    """One bibliography entry: its citation label parts and its line in a References list."""

    key: str
    authors: str  # "Hochreiter and Schmidhuber", "Pascanu *et al.*"
    year: str
    entry: str  # the formatted reference, Markdown


# -- the bibliography -------------------------------------------------------------------------


def _plain(latex: str) -> str:
    """BibTeX field text -> plain Unicode (accents decoded, protective braces dropped)."""
    from pybtex.backends.plaintext import Backend
    from pybtex.richtext import Text

    # render(Backend()) rather than render_as("text"), which looks the backend up among the
    # installed entry points on every call (seconds per bibliography)
    return str(Text.from_latex(latex).render(Backend())).strip()


def _last_name(person) -> str:
    return _plain(" ".join([*person.prelast_names, *person.last_names]))


def _initials(person) -> str:
    names = [*person.first_names, *person.middle_names]
    return " ".join(f"{_plain(n)[0]}." for n in names if _plain(n))


def _cite_authors(persons: list) -> str:
    """The author part of an author-year citation, as the website shows it."""
    last = [_last_name(p) for p in persons]
    if len(last) == 1:
        return last[0]
    if len(last) == 2:
        return f"{last[0]} and {last[1]}"
    return f"{last[0]} *et al.*"


def _list_authors(persons: list) -> str:
    names = [f"{_last_name(p)}, {_initials(p)}".rstrip(", ") for p in persons]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _entry_text(entry, persons: list) -> str:
    """One reference: authors (year). Title. *Venue*, volume(number), pages. Link."""
    fields = {name.lower(): _plain(value) for name, value in entry.fields.items()}
    parts = [f"{_list_authors(persons)} ({fields.get('year', 'n.d.')}). {fields.get('title', '')}."]
    venue = fields.get("journal") or fields.get("booktitle")
    if venue:
        details = [f"*{venue}*"]
        if fields.get("volume"):
            number = f"({fields['number']})" if fields.get("number") and "journal" in fields else ""
            details.append(fields["volume"] + number)
        if fields.get("pages"):
            details.append(fields["pages"].replace("--", "\u2013"))
        parts.append(", ".join(details) + ".")
    else:
        where = [fields.get(f) for f in ("type", "institution", "howpublished", "publisher")]
        if any(where):
            parts.append(", ".join(w for w in where if w) + ".")
    if fields.get("note"):
        parts.append(fields["note"].rstrip(".") + ".")
    if fields.get("doi"):
        parts.append(f"<https://doi.org/{fields['doi']}>")
    elif fields.get("url"):
        parts.append(f"<{fields['url']}>")
    return " ".join(parts)


def load_bibliography(path: Path = BIBLIOGRAPHY) -> dict[str, Reference]:
    """Read a BibTeX file into {key: Reference}. Raises MystConversionError if unreadable."""
    from pybtex.database import parse_file
    from pybtex.scanner import PybtexError

    if not path.is_file():
        raise MystConversionError(f"{path}: no such bibliography")
    try:
        database = parse_file(str(path), bib_format="bibtex")
    except PybtexError as error:
        raise MystConversionError(f"{path}: cannot be read as BibTeX ({error})") from error
    references = {}
    for key, entry in database.entries.items():
        persons = entry.persons.get("author") or entry.persons.get("editor") or []
        if not persons:
            raise MystConversionError(f"{path}: entry {key!r} has no author or editor")
        references[key] = Reference(
            key=key,
            authors=_cite_authors(persons),
            year=_plain(entry.fields.get("year", "n.d.")),
            entry=_entry_text(entry, persons),
        )
    return references


# -- one notebook -----------------------------------------------------------------------------


def _where(cell_index: int, cell) -> str:
    return f"markdown cell {cell_index} ({cell.get('id', '?')})"


def collect_labels(cells: list) -> tuple[dict[str, int], dict[str, str]]:
    """Equation numbers (in order of appearance) and the headings under ``(label)=`` targets."""
    equations: dict[str, int] = {}
    headings: dict[str, str] = {}
    for index, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        for match in LABELLED_MATH.finditer(cell.source):
            label = match["label"]
            if label in equations:
                raise MystConversionError(
                    f"{_where(index, cell)}: the equation label {label!r} is used twice"
                )
            equations[label] = len(equations) + 1
        for match in TARGET.finditer(cell.source):
            heading = HEADING.search(cell.source, match.end())
            headings[match["label"]] = heading["title"] if heading else ""
    return equations, headings


def _cite(role: str, keys: list[str], bibliography: dict[str, Reference]) -> str:
    unknown = [k for k in keys if k not in bibliography]
    if unknown:
        raise KeyError(f"cites {', '.join(unknown)}, not in {BIBLIOGRAPHY.name}")
    references = [bibliography[k] for k in keys]
    if role == "cite:t":
        return ", ".join(f"{r.authors} ({r.year})" for r in references)
    return "(" + "; ".join(f"{r.authors}, {r.year}" for r in references) + ")"


def for_jupyterlab(
    notebook: nbformat.NotebookNode, bibliography: dict[str, Reference] | None = None
) -> nbformat.NotebookNode:
    """Return a copy of ``notebook`` whose markdown cells use no MyST-only markup.

    Equations are numbered 1, 2, ... in order of appearance, as on the website. Cells that
    cite get their references listed in a "References" cell appended at the end.
    """
    converted = copy.deepcopy(notebook)
    equations, headings = collect_labels(converted.cells)
    cited: list[str] = []
    for index, cell in enumerate(converted.cells):
        if cell.cell_type != "markdown":
            continue
        directive = DIRECTIVE.search(cell.source)
        if directive:
            raise MystConversionError(
                f"{_where(index, cell)}: the MyST directive {{{directive['name']}}} is not "
                "supported in the student bundle (tools/lab_markdown.py); write plain Markdown"
            )
        source = LABELLED_MATH.sub(
            lambda m: f"$${m['body'].rstrip()} \\tag{{{equations[m['label']]}}}$$", cell.source
        )
        source = TARGET.sub("", source)

        def replace(match: re.Match) -> str:
            role, content = match["role"], match["content"].strip()
            if role == "eq":
                if content not in equations:
                    raise KeyError(f"refers to the equation {content!r}, which has no label here")
                return f"({equations[content]})"
            if role in {"cite", "cite:p", "cite:t"}:
                keys = [k.strip() for k in content.split(",") if k.strip()]
                if bibliography is None:
                    raise KeyError("cites papers, but no bibliography was given")
                text = _cite(role, keys, bibliography)
                cited.extend(k for k in keys if k not in cited)
                return text
            if role == "math":
                return f"${content}$"
            if role == "ref":
                explicit = EXPLICIT_TARGET.match(content)
                if explicit:
                    return explicit["text"]
                if content not in headings:
                    raise KeyError(f"refers to {content!r}, which no `(label)=` target defines")
                return headings[content]
            raise KeyError(
                f"uses the role {{{role}}}, which the student bundle cannot render "
                "(tools/lab_markdown.py handles eq, cite, cite:p, cite:t, math and ref)"
            )

        try:
            source = ROLE.sub(replace, source)
        except KeyError as error:
            raise MystConversionError(f"{_where(index, cell)}: {error.args[0]}") from None
        if source != cell.source and "nbgrader" in cell.get("metadata", {}):
            raise MystConversionError(
                f"{_where(index, cell)} is an nbgrader cell with MyST markup: changing it in "
                "the bundle would break its checksum, so write it in plain Markdown"
            )
        cell.source = source
    if cited:
        assert bibliography is not None
        entries = sorted((bibliography[k] for k in cited), key=lambda r: (r.entry.lower(), r.key))
        cell = nbformat.v4.new_markdown_cell(
            "## References\n\n" + "\n".join(f"- {r.entry}" for r in entries)
        )
        cell["id"] = "lab-references"
        converted.cells.append(cell)
    return converted


def convert_file(source: Path, target: Path, bibliography: dict[str, Reference]) -> None:
    """Write the JupyterLab-ready version of the notebook ``source`` to ``target``."""
    notebook = nbformat.read(source, as_version=4)
    try:
        converted = for_jupyterlab(notebook, bibliography)
    except MystConversionError as error:
        raise MystConversionError(f"{source.name}: {error}") from error
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(converted, target)
