"""Every "Lecture N" and "Assignment N" in a page's prose is a link to that unit's page.

The lectures and assignments refer to each other by number ("as in Lecture 4", "Assignment 2
asked for"); on the website each such mention, outside code, math, headings' anchors and
existing links, becomes a link to the unit's page. A post-transform, so it sees every page,
lectures, assignments and guides alike, once the documents and their names are all known.
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms.post_transforms import SphinxPostTransform

MENTION = re.compile(r"\b(Lecture|Assignment)s? (\d)\b")
SKIP = (nodes.reference, nodes.literal, nodes.literal_block, nodes.math, nodes.math_block,
        nodes.raw, nodes.title, nodes.FixedTextElement)  # fmt: skip


def unit_pages(docnames) -> dict[tuple[str, int], str]:
    """("Lecture", 2) -> the docname of Lecture 2's page, and the same for assignments."""
    pages = {}
    for docname in docnames:
        lecture = re.fullmatch(r"_generated/lectures/0?(\d)_\w+", docname)
        assignment = re.fullmatch(r"_generated/assignments/a(\d)_\w+/a\1_\w+", docname)
        if lecture:
            pages[("Lecture", int(lecture.group(1)))] = docname
        elif assignment:
            pages[("Assignment", int(assignment.group(1)))] = docname
    return pages


class UnitLinks(SphinxPostTransform):
    default_priority = 900
    formats = ("html",)

    def run(self, **kwargs) -> None:
        pages = unit_pages(self.env.found_docs)
        here = self.env.docname
        for text in list(self.document.findall(nodes.Text)):
            if any(isinstance(parent, SKIP) for parent in _ancestors(text)):
                continue
            value = str(text)
            pieces, last = [], 0
            for match in MENTION.finditer(value):
                target = pages.get((match.group(1), int(match.group(2))))
                if target is None or target == here:
                    continue
                pieces.append(nodes.Text(value[last : match.start()]))
                uri = self.app.builder.get_relative_uri(here, target)
                link = nodes.reference("", "", internal=True, refuri=uri)
                link += nodes.Text(match.group(0))
                pieces.append(link)
                last = match.end()
            if pieces:
                pieces.append(nodes.Text(value[last:]))
                text.parent.replace(text, pieces)


def _ancestors(node: nodes.Node):
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def setup(app: Sphinx) -> dict:
    app.add_post_transform(UnitLinks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
