"""Keep the built site self-contained: nothing on a page may come from the internet.

Loaded by ``_config.yml`` (``sphinx.local_extensions``). Two jobs, on every HTML page:

1. Jupyter Book always loads sphinx-thebe, which inlines ``THEBE_JS_URL = "https://unpkg..."``
   in a config script even when thebe is off. Thebe is off here, so its config script, its
   JavaScript and its CSS are dropped from every page.
2. Notebook outputs must not load anything from the internet. bertviz's attention views, as
   bertviz makes them, load require.js, d3 and jQuery from
   ``https://cdnjs.cloudflare.com/ajax/libs/...``; the course's ``course.viz.attention_views``
   makes the same views with the libraries written into the output. A page whose body still
   loads a script from cdnjs or any other http(s) address fails the build (warnings are
   errors), naming the address and the course function to use.
"""

from __future__ import annotations

import re

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

CDNJS = "https://cdnjs.cloudflare.com/"
# a cdnjs address anywhere (bertviz names them in require.config, not only in <script src>),
# or a <script> element loading from any http(s) address
_CDNJS_ADDRESS = re.compile(re.escape(CDNJS) + r"[^\s'\"<>]*")
_SCRIPT_SOURCE = re.compile(r"<script\b[^>]*\bsrc=[\"']?((?:https?:)?//[^\s'\">]+)", re.I)


def _is_thebe(asset) -> bool:
    text = f"{asset} {getattr(asset, 'attributes', {}).get('body', '')}"
    return "thebe" in text.lower()


def external_scripts(body: str) -> list[str]:
    """The scripts a page body would load from the internet (cdnjs addresses, <script src>)."""
    found = set(_CDNJS_ADDRESS.findall(body)) | set(_SCRIPT_SOURCE.findall(body))
    return sorted(found)


def _on_page(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if "script_files" in context:
        context["script_files"][:] = [js for js in context["script_files"] if not _is_thebe(js)]
    if "css_files" in context:
        context["css_files"][:] = [css for css in context["css_files"] if not _is_thebe(css)]
    for script in external_scripts(context.get("body", "")):
        logger.warning(
            "%s loads %s from the internet, which the offline site cannot; make attention "
            "views with course.viz.attention_views (head_view, model_view), not bertviz",
            pagename,
            script,
        )


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _on_page, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
