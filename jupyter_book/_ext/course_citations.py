"""Author-year citations in round brackets: {cite:p}`key` renders "(Pascanu et al., 2013)".

sphinxcontrib-bibtex's ``author_year`` style uses square brackets; this registers the same
style with round ones as ``author_year_round`` (``bibtex_reference_style`` in _config.yml),
and makes the bibliography's entries list items for assistive technology.
"""

from __future__ import annotations

import dataclasses

import sphinxcontrib.bibtex.plugin
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
