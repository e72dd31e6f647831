"""Author-year citations in round brackets: {cite:p}`key` renders "(Pascanu et al., 2013)",
and the bibliography is labelled the same way, "[Pascanu et al., 2013]", not numbered.

sphinxcontrib-bibtex's ``author_year`` style uses square brackets; this registers the same
style with round ones as ``author_year_round`` (``bibtex_reference_style`` in _config.yml).
pybtex's ``plain`` style numbers its entries; ``plain_author_year`` (``bibtex_default_style``)
is the same style with author-year labels. The bibliography's entries become list items for
assistive technology.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Iterator

import pybtex.plugin
import sphinxcontrib.bibtex.plugin
from pybtex.database import Entry, Person
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from sphinx.application import Sphinx
from sphinxcontrib.bibtex.style.referencing import BracketStyle
from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle


def _round() -> BracketStyle:
    return BracketStyle(left="(", right=")")


@dataclasses.dataclass
class RoundAuthorYearReferenceStyle(AuthorYearReferenceStyle):
    bracket_parenthetical: BracketStyle = dataclasses.field(default_factory=_round)
    bracket_textual: BracketStyle = dataclasses.field(default_factory=_round)
    bracket_author: BracketStyle = dataclasses.field(default_factory=_round)
    bracket_label: BracketStyle = dataclasses.field(default_factory=_round)
    bracket_year: BracketStyle = dataclasses.field(default_factory=_round)


sphinxcontrib.bibtex.plugin.register_plugin(
    "sphinxcontrib.bibtex.style.referencing", "author_year_round", RoundAuthorYearReferenceStyle
)


def _surname(person: Person) -> str:
    """The surname as printed: "van Merriënboer" from ``van Merri{\\"e}nboer``."""
    names = person.rich_prelast_names + person.rich_last_names
    return " ".join(name.render_as("text") for name in names)


def author_year_label(entry: Entry) -> str:
    """ "Hochreiter and Schmidhuber, 1997" for two authors, "Pascanu et al., 2013" for more."""
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    surnames = [_surname(person) for person in people]
    if not surnames:
        raise ValueError(f"{entry.key}: a bibliography entry needs an author or an editor")
    if len(surnames) == 1:
        who = surnames[0]
    elif len(surnames) == 2:
        who = f"{surnames[0]} and {surnames[1]}"
    else:
        who = f"{surnames[0]} et al."
    return f"{who}, {entry.fields['year']}"


class AuthorYearLabelStyle(BaseLabelStyle):
    """Author-year labels; two entries that would share one get "a", "b" after the year."""

    def format_labels(self, sorted_entries: Iterable[Entry]) -> Iterator[str]:
        labels = [author_year_label(entry) for entry in sorted_entries]
        shared = Counter(labels)
        seen: Counter = Counter()
        for label in labels:
            if shared[label] > 1:
                seen[label] += 1
                label += "abcdefghijklmnopqrstuvwxyz"[seen[label] - 1]
            yield label


class PlainAuthorYearStyle(PlainStyle):
    default_label_style = "author_year"


pybtex.plugin.register_plugin("pybtex.style.labels", "author_year", AuthorYearLabelStyle)
pybtex.plugin.register_plugin("pybtex.style.formatting", "plain_author_year", PlainAuthorYearStyle)


def _biblioentries_as_listitems(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """docutils writes the bibliography as ``role="list"`` holding ``role="doc-biblioentry"``
    entries, a role that ARIA 1.2 and the DPUB module 1.1 no longer count as a list item:
    screen readers and axe-core then see a list with no items. Each entry becomes a listitem."""
    body = context.get("body", "")
    if 'class="citation-list"' in body:
        context["body"] = body.replace('role="doc-biblioentry"', 'role="listitem"')


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _biblioentries_as_listitems)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
