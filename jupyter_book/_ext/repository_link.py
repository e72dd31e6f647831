"""The site's links to the course repository: the header's repository button on every page, and
the landing page's "Source" link, the ``{repository-link}`` directive.

With a repository address set (``[project.urls] Repository`` in pyproject.toml, or
``COURSE_REPOSITORY_URL``), ``tools/build.py`` passes it as Jupyter Book's ``repository: url``
and as the Sphinx setting ``course_repository_url``, which this extension reads. The directive then shows a paragraph "Source: <address>" linking to it; without an address it
shows nothing (no empty link). sphinx-book-theme's repository button takes only GitHub, GitLab
and Bitbucket addresses: for another host the build leaves it off, and this extension adds the
same button to the header, with Git's icon.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective


def _address(app: Sphinx) -> str:
    # not the theme's repository_url: Jupyter Book's defaults give it Jupyter Book's own
    return app.config.course_repository_url or ""


class RepositoryLink(SphinxDirective):
    has_content = False

    def run(self) -> list[nodes.Node]:
        url = _address(self.env.app)
        if not url:
            return []
        paragraph = nodes.paragraph(classes=["course-repository"])
        paragraph += nodes.Text("Source: ")
        paragraph += nodes.reference(url, url, refuri=url)
        return [paragraph]


def add_repository_button(app: Sphinx, pagename, templatename, context, doctree) -> None:
    """The theme's repository button, for an address on a host the theme does not know."""
    options = app.config.html_theme_options or {}
    url = _address(app)
    if not url or str(options.get("use_repository_button")).lower() == "true":
        return  # no address, or the theme made the button
    button = {
        "type": "link",
        "url": url.rstrip("/"),
        "tooltip": "Source repository",
        "text": "",
        "icon": "fab fa-git-alt",
        "label": "source-repository-button",
    }
    context.setdefault("header_buttons", []).insert(0, button)  # where the theme puts its own


def setup(app: Sphinx) -> dict:
    app.add_config_value("course_repository_url", "", "env", types=[str])
    app.add_directive("repository-link", RepositoryLink)
    # after sphinx-book-theme's handlers (priority 500 makes the list, 501 fills it)
    app.connect("html-page-context", add_repository_button, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
