"""Author-year citations in round brackets: {cite:p}`key` renders "(Pascanu et al., 2013)".

sphinxcontrib-bibtex's ``author_year`` style uses square brackets; this registers the same
style with round ones as ``author_year_round`` (``bibtex_reference_style`` in _config.yml).
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


def setup(app: Sphinx) -> dict:
    return {"parallel_read_safe": True, "parallel_write_safe": True}
