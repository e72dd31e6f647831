"""Keep the built site self-contained and light: nothing on a page may come from the internet.

Loaded by ``_config.yml`` (``sphinx.local_extensions``). Three jobs, on every HTML page:

1. Jupyter Book always loads sphinx-thebe, which inlines ``THEBE_JS_URL = "https://unpkg..."``
   in a config script even when thebe is off. Thebe is off here, so its config script, its
   JavaScript and its CSS are dropped from every page.
2. Notebook outputs must not load anything from the internet. bertviz's attention views, as
   bertviz makes them, load require.js, d3 and jQuery from
   ``https://cdnjs.cloudflare.com/ajax/libs/...``; the course's ``course.viz.attention_views``
   makes the same views with the libraries written into the output. A page whose body still
   loads a script from cdnjs or any other http(s) address fails the build (warnings are
   errors), naming the address and the course function to use.
3. Each of those views carries its own copy of the libraries (about 410 KB), so that it draws
   on its own in a notebook. On the site the copies are the same file, so every view loads
   the one ``_static/attention-view-libraries.js`` instead: the browser fetches it once per
   site, and a page with two views is 0.8 MB lighter.
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

CDNJS = "https://cdnjs.cloudflare.com/"
# a cdnjs address anywhere (bertviz names them in require.config, not only in <script src>),
# or a <script> element loading from any http(s) address
_CDNJS_ADDRESS = re.compile(re.escape(CDNJS) + r"[^\s'\"<>]*")
_SCRIPT_SOURCE = re.compile(r"<script\b[^>]*\bsrc=[\"']?((?:https?:)?//[^\s'\">]+)", re.I)


# the two <script> elements course.viz.attention_views writes before each view (require.js, then
# d3 and jQuery registered with it); the libraries hold no "</script" (it checks)
_VIEW_LIBRARIES = re.compile(
    r"<script>(/\* require-[\d.]+\.js: see course/viz/js/README\.md \*/\n.*?)</script>\n"
    r"<script>(/\* d3 and jQuery for bertviz: see course/viz/js/README\.md \*/\n.*?)</script>",
    re.S,
)
LIBRARIES_FILE = "attention-view-libraries.js"


def _is_thebe(asset) -> bool:
    text = f"{asset} {getattr(asset, 'attributes', {}).get('body', '')}"
    return "thebe" in text.lower()


def external_scripts(body: str) -> list[str]:
    """The scripts a page body would load from the internet (cdnjs addresses, <script src>)."""
    found = set(_CDNJS_ADDRESS.findall(body)) | set(_SCRIPT_SOURCE.findall(body))
    return sorted(found)


def share_view_libraries(body: str, source: str) -> tuple[str, str | None]:
    """``body`` with each attention view's inline libraries replaced by one
    ``<script src="{source}">``, and the script that file must hold (None: no view, nothing
    replaced). A ValueError if the page's views carry different copies."""
    copies = {"\n".join(found.groups()) for found in _VIEW_LIBRARIES.finditer(body)}
    if not copies:
        return body, None
    if len(copies) > 1:
        raise ValueError(f"the page's attention views carry {len(copies)} different libraries")
    return _VIEW_LIBRARIES.sub(f'<script src="{source}"></script>', body), copies.pop()


def _on_page(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if "script_files" in context:
        context["script_files"][:] = [js for js in context["script_files"] if not _is_thebe(js)]
    if "css_files" in context:
        context["css_files"][:] = [css for css in context["css_files"] if not _is_thebe(css)]
    if "body" in context:
        source = context["pathto"](f"_static/{LIBRARIES_FILE}", 1)
        try:
            context["body"], libraries = share_view_libraries(context["body"], source)
        except ValueError as error:
            logger.warning("%s: %s", pagename, error)
            libraries = None
        if libraries is not None:
            # every page's views come from the same course.viz.attention_views
            target = Path(app.outdir) / "_static" / LIBRARIES_FILE
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(libraries, encoding="utf-8")
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
