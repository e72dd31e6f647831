"""Student markup made harmless wherever grading renders it to HTML, with math kept.

A submission's markdown cells are the student's text, and markdown carries raw HTML: an
``<img onerror=…>``, a ``<script>``, an ``<iframe>``, an SVG with a script or a
``javascript:`` link would run in the browser of whoever opens the rendered page. Two pages
render submissions: nbgrader's formgrader, inside the TA's authenticated Jupyter server, and
the feedback HTML a TA sends to the student. Both come from nbconvert's HTML exporter, and the
grading course directory configures it (:func:`exporter_config`) so that:

- every markdown cell goes through :func:`markdown2html`: nbconvert's own renderer, then
  :func:`clean_html` (nh3, an allow-list sanitiser): no script, no event handler, no style, no
  embed or form, links only to ``http(s)``/``mailto``/``#anchors``, images only as inline
  ``data:`` PNG/JPEG/GIF (so opening a page never fetches anything from elsewhere); text,
  tables, lists, code and the ``$…$`` math text are kept;
- the page's MathJax is the course's local copy, inlined (:func:`mathjax_html`), with the
  TeX commands that make links, load code or set HTML attributes or styles (``\\href``,
  ``\\require``, ``\\class``, ``\\style``, ``\\bbox``, ``\\mmlToken[…]``…) switched off,
  and every attribute that links, styles or fetches stripped from the parsed math whatever
  command made it, so math renders offline and cannot become a link, a style or a request.

Outputs need no such pass: the judge keeps only text, PNG images and errors
(``autograder/platform/sandbox.py``), which nbconvert escapes; the exporter's own
``sanitize_html`` is switched on as well, for any HTML output a future change lets through.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import nh3
from jinja2 import pass_context
from markupsafe import Markup

TEMPLATES = Path(__file__).resolve().parent / "templates"

# What a student's markdown may become: the text-level and table tags of nh3's allow-list.
TAGS = {
    "a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd", "del",
    "div", "dl", "dt", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd",
    "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strike", "strong",
    "sub", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "tt", "u", "ul", "var",
}  # fmt: skip
ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title", "width", "height"},
    "td": {"align", "colspan", "rowspan", "style"},
    "th": {"align", "colspan", "rowspan", "style"},
    "ol": {"start"},
    "code": {"class"},
    "div": {"class"},
    "pre": {"class"},
    "span": {"class"},
}
LINK_SCHEMES = ("http://", "https://", "mailto:")
IMAGE_DATA = re.compile(r"^data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*$")
CLASS_NAME = re.compile(r"^[A-Za-z0-9_ -]{0,200}$")


def _attribute(tag: str, attribute: str, value: str) -> str | None:
    """Keep an attribute value only if it cannot fetch, navigate to code, or clobber the page."""
    if tag == "img" and attribute == "src":
        return value if IMAGE_DATA.match(value) else None
    if tag == "a" and attribute == "href":
        lowered = value.strip().lower()
        return value if lowered.startswith(LINK_SCHEMES) or value.startswith("#") else None
    if attribute == "class":
        return value if CLASS_NAME.match(value) else None
    return value


def clean_html(html: str) -> str:
    """``html`` with only :data:`TAGS` and :data:`ATTRIBUTES` left, and safe URLs only."""
    return nh3.clean(
        html,
        tags=TAGS,
        clean_content_tags={"script", "style"},
        attributes=ATTRIBUTES,
        attribute_filter=_attribute,
        url_schemes={"http", "https", "mailto", "data"},
        filter_style_properties={"text-align"},
        link_rel="noopener noreferrer nofollow",
    )


# nbconvert's markdown (mistune with its math patterns) takes time quadratic in some inputs: a
# cell of 60,000 characters of unclosed `$` took 16 s, thousands of unclosed \begin{...} minutes.
# A cell whose length times its count of such openers is over MAX_MARKUP_WORK, or that is longer
# than MAX_MARKDOWN_CHARS, is shown as plain text (escaped, cut), which takes linear time.
MAX_MARKDOWN_CHARS = 100_000
MAX_MARKUP_WORK = 20_000_000
_OPENERS = ("$", "\\begin", "\\(", "\\[", "[", "*", "_", "`", "<")
SHOWN_AS_TEXT = 20_000


def too_costly(source: str) -> bool:
    """True where rendering ``source`` as markdown could take more than about a second."""
    if len(source) > MAX_MARKDOWN_CHARS:
        return True
    return len(source) * sum(source.count(opener) for opener in _OPENERS) > MAX_MARKUP_WORK


def as_text(source: str) -> str:
    """``source`` as an escaped preformatted block, cut to SHOWN_AS_TEXT characters, with a note."""
    import html

    note = (
        f"[this markdown cell ({len(source):,} characters) is too long or too full of math and"
        " markup to render; it is shown as text"
        + (f", its first {SHOWN_AS_TEXT:,} characters" if len(source) > SHOWN_AS_TEXT else "")
        + "]"
    )
    return f"<p><em>{html.escape(note)}</em></p><pre>{html.escape(source[:SHOWN_AS_TEXT])}</pre>"


@pass_context
def markdown2html(context, source: str) -> Markup:
    """Jinja filter replacing nbconvert's ``markdown2html``: its rendering, then :func:`clean_html`.

    Cell attachments are ignored (the graded notebook keeps none) and no image is read from disk.
    A cell that would take too long to render (:func:`too_costly`) is shown as text.
    """
    if too_costly(str(source)):
        return Markup(as_text(str(source)))  # noqa: S704 - escaped above
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    renderer = IPythonRenderer(escape=False, attachments={}, embed_images=False, path="")
    return Markup(clean_html(MarkdownWithMath(renderer=renderer).render(source)))  # noqa: S704


# -- MathJax, local and inlined --------------------------------------------------------------------

MATHJAX_CONFIG = {
    "tex": {
        "inlineMath": [["$", "$"], ["\\(", "\\)"]],
        "displayMath": [["$$", "$$"], ["\\[", "\\]"]],
        "processEscapes": True,
        "processEnvironments": True,
        "tags": "ams",
        # No package that loads code, sets HTML attributes or styles, or makes a link or a tooltip;
        # \href shows its text only. \mmlToken stays (\bmod and others are made of it): the
        # attributes it sets are stripped by MATHJAX_ATTRIBUTE_FILTER.
        "packages": {"[-]": ["require", "autoload", "html", "unicode", "bbox", "action"]},
        "macros": {"href": ["{#2}", 2]},
    },
    "options": {"enableMenu": False},
    "loader": {"load": []},
    "startup": {"typeset": True},
}

# A second line of defence, whatever TeX a future package lets through: after parsing, every
# MathML node loses the attributes that link, style, name or fetch, and keeps a colour only when
# it is a colour (a name or #hex), so nothing a student writes in math becomes a link, a CSS
# rule or a request. Runs as a TeX post-filter, before any output is made.
MATHJAX_ATTRIBUTE_FILTER = r"""
window.MathJax.startup.ready = function () {
  MathJax.startup.defaultReady();
  var DROP = /^(href|xlink:href|src|style|class|id|data-.*|on.*|actiontype|background)$/i;
  var COLOURS = /^(mathcolor|mathbackground|color)$/i;
  var COLOUR = /^(#[0-9a-f]{3}|#[0-9a-f]{6}|[a-z]{1,30})$/i;
  var UNSAFE = /url\s*\(|expression\s*\(|javascript:|vbscript:|data:|@import/i;
  function clean(node) {
    var attributes = node.attributes.getAllAttributes();
    Object.keys(attributes).forEach(function (name) {
      var value = String(attributes[name]);
      if (name.indexOf('data-mjx-') === 0 && !UNSAFE.test(value)) { return; }  // MathJax's own
      if (DROP.test(name) || UNSAFE.test(value)
          || (COLOURS.test(name) && !COLOUR.test(value.trim()))) {
        delete attributes[name];
      }
    });
  }
  MathJax.startup.document.inputJax.forEach(function (jax) {
    jax.postFilters.add(function (args) { args.data.root.walkTree(clean); }, -6);
  });
};
"""


def mathjax_file() -> Path:
    """The course's MathJax 3 (sphinx-mathjax-offline's copy): SVG output, every TeX package."""
    from importlib import metadata

    try:
        found = Path(
            metadata.distribution("sphinx-mathjax-offline").locate_file(
                "sphinx-mathjax-offline/static/mathjax/tex-svg-full.js"
            )
        )
    except metadata.PackageNotFoundError:
        found = None
    if found is None or not found.is_file():
        raise FileNotFoundError(
            "MathJax (tex-svg-full.js of the sphinx-mathjax-offline package) is not installed;"
            " `make venv` installs it (requirements.txt)"
        )
    return found


@functools.lru_cache(maxsize=1)
def mathjax_html() -> str:
    """Two script elements: the configuration, then MathJax itself, inlined (no request)."""
    code = mathjax_file().read_text(encoding="utf-8").replace("</script", "<\\/script")
    config = json.dumps(MATHJAX_CONFIG)
    return (
        f'<script type="text/javascript">window.MathJax = {config};'
        f"{MATHJAX_ATTRIBUTE_FILTER}</script>\n"
        f'<script type="text/javascript">{code}</script>'
    )


def mathjax_filter(_url: object = None) -> Markup:
    """Jinja filter behind ``templates/mathjax.html.j2``: the URL it is given is ignored."""
    return Markup(mathjax_html())  # noqa: S704 - our own vendored script


def exporter_config() -> str:
    """nbgrader configuration lines (for a course directory's nbgrader_config.py) that route every
    HTML export of a submission, formgrader's pages and the feedback files, through this module.

    nbgrader's own templates (``formgrade``, ``feedback``) stay first in the template search
    path; ``templates/base/mathjax.html.j2`` comes before nbconvert's, so its ``mathjax``
    macro, which those templates call, is ours.
    """
    import nbgrader

    nbgrader_templates = Path(nbgrader.__file__).parent / "server_extensions/formgrader/templates"
    repo = str(Path(__file__).resolve().parents[2])  # the checkout: autograder/platform/markup.py
    return f"""
# Student markup never runs in a TA's or a student's browser, and math renders offline:
# see autograder/platform/markup.py (the TA's Jupyter server imports it from the repository).
import sys as _sys
if {repo!r} not in _sys.path:
    _sys.path.append({repo!r})
c.HTMLExporter.sanitize_html = True
c.HTMLExporter.filters = {{
    "markdown2html": "autograder.platform.markup.markdown2html",
    "local_mathjax": "autograder.platform.markup.mathjax_filter",
}}
c.HTMLExporter.extra_template_basedirs = [{str(nbgrader_templates)!r}, {str(TEMPLATES)!r}]
"""
