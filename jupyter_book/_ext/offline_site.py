"""Keep the built site self-contained: nothing on a page may come from the internet.

Loaded by ``_config.yml`` (``sphinx.local_extensions``). Two jobs, on every HTML page:

1. Jupyter Book always loads sphinx-thebe, which inlines ``THEBE_JS_URL = "https://unpkg..."``
   in a config script even when thebe is off. Thebe is off here, so its config script, its
   JavaScript and its CSS are dropped from every page.
2. Notebook outputs that load JavaScript from cdnjs (bertviz's head, model and neuron views
   load require.js, d3 and jQuery from ``https://cdnjs.cloudflare.com/ajax/libs/...``) are
   pointed at the copy of the same file under ``cdnjs/`` (same path as on cdnjs), so
   the views work offline. A page that needs a library that is not mirrored there fails the
   build (warnings are errors) and names the file to add.
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

CDNJS = "https://cdnjs.cloudflare.com/ajax/libs/"
# Served as <site>/cdnjs/ (html_extra_path), not from _static: Jupyter Book adds every .js
# file under _static to every page.
MIRROR = Path(__file__).resolve().parent.parent / "_offline" / "cdnjs"
_CDNJS_REFERENCE = re.compile(re.escape(CDNJS) + r"([\w./@-]+)")


def _is_thebe(asset) -> bool:
    text = f"{asset} {getattr(asset, 'attributes', {}).get('body', '')}"
    return "thebe" in text.lower()


def _localise_cdnjs(body: str, pagename: str) -> str:
    """Rewrite cdnjs URLs in ``body`` to the mirror in ``cdnjs/``, relative to the page."""
    prefix = "../" * pagename.count("/") + "cdnjs/"
    for path in sorted(set(_CDNJS_REFERENCE.findall(body))):
        # require.js paths leave out ".js" (``d3: '.../d3/5.7.0/d3.min'``)
        candidates = [path, f"{path}.js"]
        if not any((MIRROR / c).is_file() for c in candidates):
            logger.warning(
                "%s loads %s%s, which is not mirrored in jupyter_book/_offline/cdnjs/%s",
                pagename,
                CDNJS,
                path,
                path,
            )
    return body.replace(CDNJS, prefix)


def _on_page(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if "script_files" in context:
        context["script_files"][:] = [js for js in context["script_files"] if not _is_thebe(js)]
    if "css_files" in context:
        context["css_files"][:] = [css for css in context["css_files"] if not _is_thebe(css)]
    if CDNJS in context.get("body", ""):
        context["body"] = _localise_cdnjs(context["body"], pagename)


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _on_page, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
