"""The website in a real browser: Debian's headless Chromium, driven by Playwright.

The site is served on 127.0.0.1 and every request to another host is blocked (and fails the
page that made it). For every page: it answers 200, logs no console error, its math is
typeset by the local MathJax, every image loads and every internal link (and its #anchor)
resolves, and axe-core finds no serious or critical accessibility problem at 1280 px in the
light theme and at a phone's 390 px, nor with its colour rules in the dark theme. At 1280, 1024,
900 and 390 px no page pans sideways and every wide display equation shows that it scrolls; at
1280 and 1024 px none scrolls, and every diagram's smallest label is at least 9 px high; at
390 px no inline equation or link is cut off at the screen's edge, and a wide table says that it
scrolls; printed, no code block cuts its lines. Search finds lecture text. Screenshots, a table
of page sizes and the accessibility counts go to ``build/screenshots/``.

Chromium is required, not optional: `make test` installs it (`make browser`) when absent.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import re
import shutil
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.messages import raises
from tools.browser import launch, offline_context
from tools.build import BOOK, BUILD, lecture_sources
from tools.site_server import serve

HTML = BOOK / "_build" / "html"
SCREENSHOTS = BUILD / "screenshots"
FIRST_LECTURE = f"_generated/lectures/{lecture_sources()[0].stem}.html"
SEARCH_TERM = "backpropagation"  # appears in Lecture 1's title and text


def _site_pages() -> list[str]:
    if not HTML.is_dir():
        return []
    return sorted(
        p.relative_to(HTML).as_posix()
        for p in HTML.rglob("*.html")
        if p.relative_to(HTML).parts[0] not in {"_static", "_sources", "_downloads"}
    )


PAGES = _site_pages()
SIZES: dict[str, tuple[int, int, int]] = {}  # page -> (files loaded, bytes, bytes gzipped)
# What axe-core checks each page in: the desktop width in the light theme (the site's default),
# the same in the dark theme, and a phone's width.
VIEWS = ("1280 px, light", "1280 px, dark (colour rules)", "390 px, light (see PHONE_OFF)")
PHONE = (390, 844)
ACCESSIBILITY = {view: Counter() for view in VIEWS}  # view -> impact -> violated rules, all pages
CHECKED = Counter()  # view -> pages axe-core checked in it


@functools.cache
def _gzipped_size(path: Path) -> int:
    return len(gzip.compress(path.read_bytes(), compresslevel=6))


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site_url():
    assert (HTML / "intro.html").exists(), f"{HTML} has no site; run `make` first"
    with serve(HTML) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright, timeout_ms=30_000)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def context(browser, site_url):
    """A browser context that can reach only the local site; blocked URLs are recorded."""
    local = urlsplit(site_url).netloc
    # 120 s: a long lecture page under the suite's load (the attack batches' fork bomb runs beside
    # it) has taken more than 60 s to settle (Lecture 7, whose page settles in 2 s on a quiet
    # machine); a page that never settles still fails
    context = offline_context(
        browser, lambda url: urlsplit(url).netloc == local, viewport=(1280, 900), timeout_ms=120_000
    )
    yield context
    context.close()


# -- helpers ----------------------------------------------------------------------------------


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.refresh = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key):
                self.ids.add(attrs[key])
        if tag == "meta" and (attrs.get("http-equiv") or "").lower() == "refresh":
            self.refresh = True


_ANCHORS: dict[Path, _Anchors] = {}


def _anchors(path: Path) -> _Anchors:
    if path not in _ANCHORS:
        parser = _Anchors()
        parser.feed(path.read_text(encoding="utf-8"))
        _ANCHORS[path] = parser
    return _ANCHORS[path]


def _local_file(url: str, site_url: str) -> Path:
    path = unquote(urlsplit(url).path)[len(urlsplit(site_url).path) :]
    target = HTML / path
    return target / "index.html" if target.is_dir() or not path else target


@functools.cache
def _axe_script() -> str:
    from axe_playwright_python.sync_playwright import Axe

    return Axe().axe_script


# axe-core's colour-contrast rule leaves out the tokens of highlighted code (.highlight): their
# thousands of spans made that rule most of axe's time on a lecture page, and
# tests/build/test_code_colours.py checks every token colour of both themes' highlighting styles
# against the code block's background instead. Every other rule still covers code blocks.
AXE_SETUP = """() => axe.configure({
  rules: [{id: 'color-contrast', selector: '*:not(.highlight *)'}],
})"""

AXE_RUN = """async ([rules, off]) => (await axe.run(document, {
    resultTypes: ['violations'],
    ...(rules.length ? {runOnly: {type: 'rule', values: rules}} : {}),
    rules: Object.fromEntries(off.map((id) => [id, {enabled: false}])),
  })).violations
  .map((v) => ({id: v.id, impact: v.impact, help: v.help,
                targets: v.nodes.slice(0, 3).map((n) => n.target)}))"""

# The dark theme changes the page's colours and nothing else (the same elements, names, roles
# and layout) but the logo, which it swaps for the dark one: in it axe-core runs only the rules
# that colours or that image can change, so that three views cost about what one view of all
# rules with the code's tokens did.
DARK_RULES = ("color-contrast", "link-in-text-block", "image-alt")
# At the phone's width every rule runs but colour contrast, on every page but the landing page:
# the theme's colours do not depend on the width (both themes are checked at 1280 px), and the
# chrome that only a phone shows (the header's buttons) is the same on every page. The width
# is what the layout rules need (scrollable regions; axe-core's target-size rule is off by
# default and is not run here). Colour contrast was about 80% of axe-core's time on a page,
# about 3 s, in each view.
PHONE_OFF = ("color-contrast",)
LANDING = "intro.html"

# pydata-sphinx-theme makes each block that scrolls sideways reachable by keyboard (tabindex 0),
# 300 ms after a resize: at the phone's width many more code blocks scroll
SCROLLERS_READY = """() => [...document.querySelectorAll('#main-content *')].every((e) =>
  e.scrollWidth <= e.clientWidth || e.tabIndex >= 0
  || !['auto', 'scroll'].includes(getComputedStyle(e).overflowX))"""

THEME = """(theme) => {
  const html = document.documentElement;
  html.dataset.mode = html.dataset.theme = theme;
  return getComputedStyle(document.body).backgroundColor;
}"""


def _accessibility_problems(
    page, view: str, rules: tuple[str, ...] = (), off: tuple[str, ...] = ()
) -> list[str]:
    """axe-core's serious and critical violations on the open page as it is now (WCAG 2.x A and
    AA and its best practices, or only ``rules``; never those in ``off``), one line each: the
    view, the rule, its help and the first elements it names. Every violation is counted in
    ACCESSIBILITY[view] by its impact."""
    if not page.evaluate("() => Boolean(window.axe)"):
        page.evaluate(_axe_script())
        page.evaluate(AXE_SETUP)
    found = page.evaluate(AXE_RUN, [list(rules), list(off)])
    CHECKED[view] += 1
    ACCESSIBILITY[view].update(v["impact"] for v in found)
    return [
        f"{view}: {v['id']} ({v['impact']}): {v['help']}, at {v['targets']}"
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


# What a reader sees of the page's width: a page that is wider than the screen pans sideways
# (the first elements that stick out are named); a display equation wider than its column
# scrolls in its own box, which a keyboard can reach and which shows a shadow at an edge with
# more beyond it (course.css). MathJax's hidden copy for screen readers is left out. Also: each
# diagram of course.viz.diagrams (the picture of a code cell that only calls it) with the height
# its smallest label is shown at (``labels``: that height as a fraction of the picture's width);
# the inline equations and links whose text reaches past the screen's edge with no box that
# scrolls it into view (the theme clips an inline equation, and a link to the next page, to its
# box); and the boxes of tables that scroll, with the line that says so (course.css).
LAYOUT = """(labels) => {
  const root = document.documentElement;
  const name = (e) => `${e.tagName.toLowerCase()}.${[...e.classList].join('.')}: `
      + e.textContent.trim().slice(0, 50);
  const out = [...document.querySelectorAll('.bd-article *')].filter((e) => {
    if (e.closest('mjx-assistive-mml')) return false;
    const right = e.getBoundingClientRect().right;
    if (right <= root.clientWidth + 1) return false;
    for (let p = e.parentElement; p; p = p.parentElement) {
      if (p.scrollWidth > p.clientWidth + 1
          && ['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX)) return false;
    }
    return true;
  });
  const wide = [...document.querySelectorAll('mjx-container[display="true"]')]
      .filter((m) => m.scrollWidth > m.clientWidth + 1);
  const uncued = wide.filter((m) => {
    const style = getComputedStyle(m);
    return !['auto', 'scroll'].includes(style.overflowX) || m.tabIndex < 0
        || (style.backgroundImage.match(/gradient/g) || []).length < 4;
  });
  const diagrams = [];
  for (const cell of document.querySelectorAll('.cell')) {
    const call = (cell.querySelector('.cell_input') || {textContent: ''}).textContent
        .match(/\\b(\\w+_diagram)\\(\\)/);
    const img = cell.querySelector('.cell_output img');
    if (!call || !img || !(call[1] in labels)) continue;
    const style = getComputedStyle(img);
    const shown = img.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    diagrams.push({name: call[1], shown, label: labels[call[1]] * shown});
  }
  const scrolls = (e) => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX)
      && e.scrollWidth > e.clientWidth + 1;
  const cut = [...document.querySelectorAll('.bd-main a[href], span.math > mjx-container')]
    .filter((e) => {
      if (!e.getClientRects().length || getComputedStyle(e).visibility !== 'visible') return false;
      const text = document.createRange();
      text.selectNodeContents(e);
      const box = text.getBoundingClientRect();
      if (!box.width || (box.left >= -1 && box.right <= root.clientWidth + 1)) return false;
      for (let p = e; p; p = p.parentElement) if (scrolls(p)) return false;
      return true;
    });
  const tables = [...document.querySelectorAll('.pst-scrollable-table-container')].filter(scrolls)
    .map((box) => ({hint: getComputedStyle(box, '::before').content, reachable: box.tabIndex >= 0,
                    table: box.textContent.trim().slice(0, 50)}));
  return {pans: root.scrollWidth > root.clientWidth, width: root.scrollWidth,
          out: out.slice(0, 3).map(name), wide: wide.length, uncued: uncued.map(name),
          scrolling: wide.map(name), diagrams, cut: cut.map(name), tables};
}"""
WIDTHS = (1280, 1024, 900, PHONE[0])
# From 1,024 px up (course.css): no display equation scrolls, and a diagram's smallest label is
# shown at least LEGIBLE_LABEL CSS pixels high.
WIDE = 1024
LEGIBLE_LABEL = 9.0
DIAGRAMS: dict[int, set[str]] = {width: set() for width in WIDTHS}  # width -> diagrams checked
SMALLEST_LABEL: dict[int, float] = {}  # width -> the smallest label height shown, all pages
# Printed on A4 with the default margins: about 718 CSS pixels across. A code block, input or
# output, that still scrolls sideways in print loses the end of its long lines on paper.
PAPER = (718, 1000)
CUT_IN_PRINT = """() => [...document.querySelectorAll('pre')]
  .filter((pre) => pre.getClientRects().length && pre.scrollWidth > pre.clientWidth + 1)
  .map((pre) => pre.textContent.trim().slice(0, 50))"""
WIDE_EQUATIONS = Counter()  # width -> display equations wider than their column, all pages


@functools.cache
def _diagram_labels() -> dict[str, float]:
    """{diagram: its smallest label's font size over its picture's width}, for each diagram of
    course.viz.diagrams drawn as a lecture shows it: IPython's inline backend saves the figure at
    its own dpi with a tight box (the lecture's picture has twice the pixels, shown at half size,
    test_lecture_figures_have_twice_the_pixels_of_their_shown_size). Times the width a page
    shows the picture at, it is the height the label is shown at (a subscript is smaller still,
    as in any text)."""
    import io

    import matplotlib

    matplotlib.use("Agg")  # headless
    import matplotlib.pyplot as plt
    from matplotlib.text import Text
    from PIL import Image

    from course.viz import diagrams

    labels = {}
    for name in diagrams.__all__:
        figure = getattr(diagrams, name)()
        try:
            sizes = [
                text.get_fontsize()
                for text in figure.findobj(Text)
                if text.get_visible() and text.get_text().strip()
            ]
            picture = io.BytesIO()
            figure.savefig(picture, format="png", bbox_inches="tight")
            with Image.open(picture) as png:
                labels[name] = min(sizes) / 72 * figure.dpi / png.width  # points to pixels
        finally:
            plt.close(figure)
    return labels


def _layout_problems(page, width: int) -> list[str]:
    """:data:`LAYOUT` on the open page at ``width``: what pans the page, which wide equations
    give no sign that they scroll; from :data:`WIDE` px, which display equations scroll and
    which diagrams show a label below LEGIBLE_LABEL px; on a phone, which inline equations and
    links are cut off, and which tables that scroll do not say so."""
    found = page.evaluate(LAYOUT, _diagram_labels())
    WIDE_EQUATIONS[width] += found["wide"]
    problems = []
    if found["pans"]:
        problems.append(f"{width} px: the page pans sideways ({found['width']} px): {found['out']}")
    if found["uncued"]:
        problems.append(f"{width} px: wide equations with no scroll cue: {found['uncued']}")
    if width >= WIDE:
        if found["scrolling"]:
            problems.append(f"{width} px: display equations that scroll: {found['scrolling']}")
        DIAGRAMS[width] |= {diagram["name"] for diagram in found["diagrams"]}
        for diagram in found["diagrams"]:
            SMALLEST_LABEL[width] = min(SMALLEST_LABEL.get(width, 99.0), diagram["label"])
            if diagram["label"] < LEGIBLE_LABEL:
                problems.append(
                    f"{width} px: {diagram['name']}'s smallest label is shown "
                    f"{diagram['label']:.1f} px high ({diagram['shown']} px wide)"
                )
    if width <= PHONE[0]:
        if found["cut"]:
            problems.append(f"{width} px: cut off at the screen's edge: {found['cut'][:3]}")
        for table in found["tables"]:
            if "scroll sideways" not in table["hint"] or not table["reachable"]:
                problems.append(f"{width} px: a wide table that does not say it scrolls: {table}")
    return problems


def _problems_in_every_view(page, name: str) -> list[str]:
    """:func:`_accessibility_problems` at 1280 px in the light theme, then in the dark theme
    (switched as the theme's button does: ``data-theme`` on ``<html>``; DARK_RULES), then at
    390 px (PHONE_OFF, but on the landing page); :func:`_layout_problems` at 1280, 1024, 900
    and 390 px; and, printed (:data:`PAPER`), no code block that cuts its lines."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.add_style_tag(content="*, *::before, *::after { transition: none !important; }")
    light = page.evaluate(THEME, "light")
    problems = _accessibility_problems(page, VIEWS[0]) + _layout_problems(page, WIDTHS[0])
    dark = page.evaluate(THEME, "dark")
    assert dark != light, f"the dark theme did not change the page's background ({light})"
    problems += _accessibility_problems(page, VIEWS[1], DARK_RULES)
    page.evaluate(THEME, "light")
    for width in WIDTHS[1:-1]:
        page.set_viewport_size({"width": width, "height": PHONE[1]})
        problems += _layout_problems(page, width)
    page.set_viewport_size({"width": PHONE[0], "height": PHONE[1]})
    try:
        page.wait_for_function(SCROLLERS_READY, polling=100, timeout=3_000)
    except PlaywrightTimeout:
        pass  # axe-core names the blocks a keyboard cannot scroll
    off = () if name == LANDING else PHONE_OFF
    problems += _layout_problems(page, PHONE[0]) + _accessibility_problems(page, VIEWS[2], off=off)
    page.set_viewport_size({"width": PAPER[0], "height": PAPER[1]})
    page.emulate_media(media="print")
    cut = page.evaluate(CUT_IN_PRINT)
    page.emulate_media(media="screen")
    return problems + ([f"print: code lines cut at the paper's edge: {cut[:3]}"] if cut else [])


def _open(context, url: str):
    """Open ``url`` in a new tab; return (page, response, console errors, local files loaded)."""
    page = context.new_page()
    errors: list[str] = []
    loaded: list[str] = []
    page.on(
        "console",
        lambda message: (
            errors.append(f"console: {message.text}") if message.type == "error" else None
        ),
    )
    page.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    page.on("requestfailed", lambda request: errors.append(f"failed: {request.url}"))
    page.on("response", lambda response: loaded.append(response.url))
    pending: set = set()  # the page's requests not yet answered or failed (see _settled)
    page.on("request", lambda request: pending.add(request))
    page.on("requestfinished", lambda request: pending.discard(request))
    page.on("requestfailed", lambda request: pending.discard(request))
    page.pending_requests = pending
    response = page.goto(url, wait_until="load")
    return page, response, errors, loaded


def _settled(page) -> None:
    """Wait for the page's network to go idle (Playwright's "networkidle", within the context's
    timeout). Where Playwright has not seen that moment by then but no request of the page is
    outstanding by the page's own request events, the page has settled; one still loading
    fails, naming what it waits for."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_load_state("networkidle")
    except PlaywrightTimeout:
        page.wait_for_timeout(1_000)  # the events of requests that have just ended
        waiting = sorted(request.url for request in page.pending_requests)
        assert not waiting, f"the page is still loading {len(waiting)} request(s): {waiting[:5]}"


TYPESET = """async () => {
  if (!window.MathJax || !MathJax.startup || !MathJax.startup.promise) return null;
  await MathJax.startup.promise;
  return {
    math: document.querySelectorAll('.math').length,
    rendered: document.querySelectorAll('mjx-container').length,
    errors: document.querySelectorAll('mjx-merror').length,
  };
}"""

IMAGES = """async () => {
  const images = Array.from(document.images);
  images.forEach((img) => { img.loading = 'eager'; });
  await Promise.all(images.map((img) => img.complete ? null :
      new Promise((done) => { img.onload = img.onerror = done; })));
  return images.map((img) => ({src: img.currentSrc || img.src, width: img.naturalWidth}));
}"""


# -- the checks -------------------------------------------------------------------------------


@pytest.mark.build
def test_the_site_has_every_kind_of_page():
    assert "intro.html" in PAGES and FIRST_LECTURE in PAGES, PAGES
    assert any(p.startswith("_generated/assignments/") for p in PAGES), PAGES
    for page in ("guides/students.html", "guides/tas.html", "guides/instructors.html"):
        assert page in PAGES, f"{page} missing from {PAGES}"
    assert "references.html" in PAGES and "search.html" in PAGES
    assert "notation.html" in PAGES and "measurements.html" in PAGES


class _ProseText(HTMLParser):
    """The text a reader sees as prose: typeset math, code, outputs and scripts left out."""

    VOID = {"br", "img", "meta", "link", "input", "hr", "wbr", "col", "source", "area"}
    HIDDEN_TAGS = {"script", "style", "pre", "code", "svg", "textarea", "title", "head"}
    HIDDEN_CLASSES = {"math", "highlight", "output", "cell_output", "notranslate"}

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[bool] = []
        self.parts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
        self.stack.append(tag in self.HIDDEN_TAGS or bool(classes & self.HIDDEN_CLASSES))

    def handle_endtag(self, tag):
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        if not any(self.stack):
            self.parts.append(data)


RAW_TEX = re.compile(
    r"\$|\\(frac|mathrm|mathbf|mathcal|sqrt|top|sum|begin|end|left|right|cdot|odot|tanh|sigma"
    r"|alpha|theta|partial|operatorname|lvert|rvert)\b"
)


@pytest.mark.build
def test_no_page_shows_raw_tex_in_its_prose():
    """Math that did not parse (display math in a list item, a `|` splitting a table row, a
    wrapped line read as a list) shows as TeX source between dollars: no page has any."""
    found = []
    for name in PAGES:
        parser = _ProseText()
        parser.feed((HTML / name).read_text(encoding="utf-8"))
        text = "".join(parser.parts)
        found += [f"{name}: ...{text[max(0, m.start() - 50) : m.end() + 30]!r}"
                  for m in RAW_TEX.finditer(text)]  # fmt: skip
    assert not found, "\n".join(found[:20])


class _Mentions(_ProseText):
    """Prose text, each piece with whether it is inside a link or a heading."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.pieces: list[tuple[str, bool]] = []

    def handle_starttag(self, tag, attrs):
        super().handle_starttag(tag, attrs)
        if tag not in self.VOID:
            self.tags.append(tag)

    def handle_endtag(self, tag):
        super().handle_endtag(tag)
        if tag not in self.VOID and self.tags:
            self.tags.pop()

    def handle_data(self, data):
        if not any(self.stack):
            linked = any(t in ("a", "h1", "h2", "h3", "h4", "h5", "h6") for t in self.tags)
            self.pieces.append((data, linked))


MENTION = re.compile(r"\b(Lecture|Assignment)s? (\d)\b")


def _unit_of_page(name: str) -> tuple[str, int] | None:
    stem = name.rsplit("/", 1)[-1]
    found = re.match(r"(a?)0?(\d)_", stem)
    if not found or not name.startswith("_generated/"):
        return None
    return ("Assignment" if found.group(1) else "Lecture", int(found.group(2)))


@pytest.mark.build
def test_every_mention_of_a_unit_links_to_it():
    """ "Lecture 4" or "Assignment 2" in a page's prose is a link to that unit (not on its own
    page, in code, in math or in a heading)."""
    unlinked, links = [], 0
    for name in PAGES:
        parser = _Mentions()
        parser.feed((HTML / name).read_text(encoding="utf-8"))
        for text, linked in parser.pieces:
            for match in MENTION.finditer(text):
                if linked:
                    links += 1
                elif (match.group(1), int(match.group(2))) != _unit_of_page(name):
                    unlinked.append(f"{name}: ...{text[max(0, match.start() - 40) : match.end()]}")
    assert not unlinked, "\n".join(unlinked[:20])
    assert links >= 50, links


@pytest.mark.build
def test_the_reading_order_is_by_unit_each_lecture_then_its_assignment():
    text = (HTML / "intro.html").read_text(encoding="utf-8")
    assert "bd-docs-nav" in text, "the sidebar navigation is missing from intro.html"
    nav = text[text.find("bd-docs-nav") :]
    order = [_unit_of_page(href) for href in re.findall(r'href="(_generated/[^"#]+)\.html"', nav)]
    units = [unit for unit in dict.fromkeys(order) if unit]
    expected = [(kind, n) for n in range(1, 9) for kind in ("Lecture", "Assignment")]
    assert units == expected, units


NAVIGATION = """(kind) => {
  const modal = document.getElementById(`pst-${kind}-sidebar-modal`);
  const inline = document.getElementById(`pst-${kind}-sidebar`);
  const shown = (element) => element && element.getClientRects().length > 0
      && getComputedStyle(element).visibility !== 'hidden';
  const links = (element) => element ? [...element.querySelectorAll('a[href]')]
      .filter(shown).map((a) => a.getAttribute('href')) : [];
  return {open: Boolean(modal && modal.open), links: modal && modal.open ? links(modal)
      : links(inline)};
}"""


# From which window width each sidebar stands beside the article (course.css); below, a drawer.
BESIDE = {"primary": 1280, "secondary": 1664}


@pytest.mark.parametrize("width", [390, 900, 1024, 1280, 1700])
@pytest.mark.browser
@pytest.mark.build
def test_the_navigation_and_the_page_contents_open_at_every_width(width, browser, site_url):
    """Phone, tablet, laptop, desktop: the list of units and the page's contents are in reach,
    either shown beside the text or behind a button that opens them. Where course.css keeps a
    sidebar as a drawer to widen the article (the navigation below 1,280 px, the contents below
    1,664 px), its button opens the drawer; on a wide screen both stand beside the text."""
    local = urlsplit(site_url).netloc
    context = offline_context(
        browser, lambda url: urlsplit(url).netloc == local, viewport=(width, 800), timeout_ms=60_000
    )
    page = context.new_page()
    page.goto(f"{site_url}/{FIRST_LECTURE}", wait_until="load")
    here = FIRST_LECTURE.rsplit("/", 1)[-1]  # the page itself: linked as "#" in its own menu
    lectures = {f"{source.stem}.html" for source in lecture_sources()} - {here}
    for kind in ("primary", "secondary"):
        found = page.evaluate(NAVIGATION, kind)
        assert bool(found["links"]) == (width >= BESIDE[kind]), (kind, width, found)
        if not found["links"]:  # not beside the text: a visible button must open it
            toggle = page.locator(f".{kind}-toggle:visible").first
            toggle.click()
            page.wait_for_timeout(300)
            found = page.evaluate(NAVIGATION, kind)
            assert found["open"], f"{kind} toggle at {width} px opened nothing"
        names = {href.rsplit("/", 1)[-1].split("#")[0] for href in found["links"]}
        if kind == "primary":
            assert lectures <= names, (width, sorted(lectures - names))
        else:
            assert len(found["links"]) >= 3, (width, found)  # the lecture's sections
        page.keyboard.press("Escape")
        page.wait_for_timeout(200)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"navigation_{width}px.png")
    context.close()
    assert context.blocked == []


BIBLIOGRAPHY_ENTRY = re.compile(
    r'<div class="citation"[^>]*>\s*<span class="label"><span class="fn-bracket">\[</span>'
    r"(?P<label>.*?)<span.*?</span></span>\s*<p>(?P<text>.*?)</p>",
    re.S,
)
AUTHOR_YEAR = re.compile(r"[^\W\d][\w .'-]*?( and [\w .'-]+| et al\.)?, \d{4}[a-z]?")


@pytest.mark.build
def test_the_bibliography_is_labelled_by_author_and_year_and_links_every_entry():
    """The citations in the text read "(Pascanu et al., 2013)"; the bibliography they point to
    is labelled the same way, not numbered, and each entry links its paper."""
    text = (HTML / "references.html").read_text(encoding="utf-8")
    entries = BIBLIOGRAPHY_ENTRY.findall(text)
    assert len(entries) >= 30, len(entries)
    assert not [label for label, _ in entries if not AUTHOR_YEAR.fullmatch(label)], entries[:3]
    assert len({label for label, _ in entries}) == len(entries)
    unlinked = [label for label, body in entries if 'class="reference external"' not in body]
    assert not unlinked, f"bibliography entries with no link to their paper: {unlinked}"
    lecture = (HTML / FIRST_LECTURE).read_text(encoding="utf-8")
    assert "(Pascanu et al., 2013)" in re.sub(r"<[^>]+>", "", lecture)


def test_author_year_labels_tell_apart_entries_of_the_same_authors_and_year():
    from pybtex.database import Entry, Person

    citations = _site_extension("course_citations")

    def entry(key: str, authors: list[str], year: str) -> Entry:
        made = Entry("article", fields={"title": key, "year": year})
        made.key = key
        made.persons["author"] = [Person(name) for name in authors]
        return made

    entries = [
        entry("a", ["Hochreiter, Sepp", r"Schmidhuber, J{\"u}rgen"], "1997"),
        entry("b", ["Radford, Alec", "Wu, Jeff", "Child, Rewon"], "2019"),
        entry("c", ["Radford, Alec", "Narasimhan, Karthik", "Salimans, Tim"], "2019"),
        entry("d", [r"van Merri{\"e}nboer, Bart"], "2015"),
    ]
    labels = list(citations.AuthorYearLabelStyle().format_labels(entries))
    assert labels == [
        "Hochreiter and Schmidhuber, 1997",
        "Radford et al., 2019a",
        "Radford et al., 2019b",
        "van Merriënboer, 2015",
    ]
    nobody = Entry("misc", fields={"title": "x", "year": "2020"})
    nobody.key = "nobody"
    with raises(ValueError, "nobody", "author", "editor"):
        list(citations.AuthorYearLabelStyle().format_labels([nobody]))


@pytest.mark.build
def test_the_landing_page_every_lecture_and_assignment_offer_the_student_bundle():
    """Each of them links the bundle (the notebook alone fails without its ``course``
    package), and every link reaches one copy of ``dist/student.zip``."""
    from tools.student_lab import BUNDLE_ZIP

    offering = [
        name
        for name in PAGES
        if name.startswith(
            ("intro", "guides/students", "_generated/lectures/", "_generated/assignments/")
        )
    ]
    assert len(offering) >= 2 + 2 * len(lecture_sources()), offering
    targets = set()
    for name in offering:
        text = (HTML / name).read_text(encoding="utf-8")
        links = re.findall(r'href="([^"]*/student\.zip)"', text)
        assert links, f"{name} does not offer the student bundle"
        targets |= {((HTML / name).parent / unquote(link)).resolve() for link in links}
    assert len(targets) == 1, targets
    assert targets.pop().read_bytes() == BUNDLE_ZIP.read_bytes()


@pytest.mark.build
def test_every_page_names_the_licences_in_its_footer():
    for name in PAGES:
        if _anchors(HTML / name).refresh:
            continue  # index.html: a redirect to the landing page, no content of its own
        text = (HTML / name).read_text(encoding="utf-8")
        footer = text[text.find('<footer class="bd-footer-content"') :]
        assert "MIT licence" in footer and "CC BY 4.0" in footer, name


@pytest.mark.parametrize("name", PAGES)
@pytest.mark.browser
@pytest.mark.build
def test_page_works_offline_in_a_browser(name, context, site_url):
    blocked_before = len(context.blocked)
    page, response, errors, loaded = _open(context, site_url + name)
    try:
        assert response is not None and response.status == 200, (
            f"{name} answered {response and response.status}"
        )
        if _anchors(HTML / name).refresh:  # index.html forwards to the landing page
            page.wait_for_url("**/intro.html")
            return

        typeset = page.evaluate(TYPESET)
        if typeset is None:  # Sphinx loads MathJax only on pages with math
            typeset = {"math": page.locator(".math").count(), "rendered": 0, "errors": 0}
        assert typeset["rendered"] >= typeset["math"], (
            f"{name}: MathJax rendered {typeset['rendered']} of {typeset['math']} formulas"
        )
        assert typeset["errors"] == 0, f"{name}: {typeset['errors']} formulas fail to typeset"

        broken = [i["src"] for i in page.evaluate(IMAGES) if i["width"] == 0]
        assert not broken, f"{name}: images that do not load: {broken}"

        links = page.eval_on_selector_all("a[href]", "(links) => links.map((a) => a.href)")
        bad = []
        for link in sorted(set(links)):
            if not link.startswith(site_url):
                continue  # links to the papers and other sites are not followed
            target = _local_file(link, site_url)
            if not target.is_file():
                bad.append(f"{link} (no such file)")
                continue
            fragment = unquote(urlsplit(link).fragment)
            if fragment and target.suffix == ".html" and fragment not in _anchors(target).ids:
                bad.append(f"{link} (no #{fragment} in {target.name})")
        assert not bad, f"{name}: internal links that do not resolve: {bad}"

        _settled(page)
        assert not errors, f"{name}: " + "; ".join(errors)
        assert len(context.blocked) == blocked_before, (
            f"{name} tried to reach the internet: {context.blocked[blocked_before:]}"
        )
        files = {_local_file(url, site_url) for url in loaded if url.startswith(site_url)}
        files = {f for f in files if f.is_file()}
        SIZES[name] = (
            len(files),
            sum(f.stat().st_size for f in files),
            sum(_gzipped_size(f) for f in files),
        )
        problems = _problems_in_every_view(page, name)
        assert not problems, f"{name}: " + "\n".join(problems)
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.build
def test_search_finds_lecture_text(context, site_url):
    page, response, errors, _ = _open(context, f"{site_url}search.html?q={SEARCH_TERM}")
    try:
        assert response.status == 200
        hit = page.wait_for_selector(
            f"#search-results a[href*='{FIRST_LECTURE.removesuffix('.html')}']", timeout=15_000
        )
        assert hit is not None
        summary = page.inner_text("#search-results")
        assert "lecture" in summary.lower(), summary[:500]
        assert not errors, errors
    finally:
        page.close()


SEARCH_RESULTS = "#pst-search-dialog #search-results a[href*='{}']"


@pytest.mark.browser
@pytest.mark.build
def test_search_shows_results_as_you_type(context, site_url):
    """On a lecture page, the header's search button opens the search box, and typing shows the
    matching pages under it (pydata-sphinx-theme's ``search_as_you_type``, from the site's own
    index) before any Enter."""
    page, _, errors, _ = _open(context, site_url + FIRST_LECTURE)
    try:
        page.locator(".search-button__button:visible").first.click()
        box = page.locator("#pst-search-dialog input[name=q]")
        box.wait_for(state="visible")
        box.press_sequentially(SEARCH_TERM, delay=30)
        hit = page.wait_for_selector(
            SEARCH_RESULTS.format(FIRST_LECTURE.rsplit("/", 1)[-1].removesuffix(".html")),
            timeout=15_000,
        )
        assert hit is not None and page.url.endswith(FIRST_LECTURE), page.url
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=SCREENSHOTS / "search-as-you-type.png")
        assert not errors, errors
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.build
def test_screenshots_of_the_landing_page_and_a_lecture(context, site_url):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page, _, _, _ = _open(context, site_url + "intro.html")
    try:
        page.evaluate(TYPESET)
        page.screenshot(path=SCREENSHOTS / "landing.png", full_page=True)
        page.goto(site_url + FIRST_LECTURE, wait_until="load")
        page.evaluate(TYPESET)
        page.evaluate(IMAGES)
        page.screenshot(path=SCREENSHOTS / "lecture.png")
        # a stretch with equations and a figure
        page.locator(
            "h2", has_text="Backpropagation through time"
        ).first.scroll_into_view_if_needed()
        page.evaluate("() => window.scrollBy(0, -80)")
        page.screenshot(path=SCREENSHOTS / "lecture-bptt.png")
    finally:
        page.close()
    for name in ("landing.png", "lecture.png", "lecture-bptt.png"):
        assert (SCREENSHOTS / name).stat().st_size > 10_000, f"{name} looks empty"


# the size of each figure's picture (the dark theme pads images on a white ground)
# each figure's picture: the width it was drawn at (its inline style), the size it is shown at
# (the dark theme pads images on a white ground), and its output box
FIGURES = """() => Array.from(document.querySelectorAll('.cell_output img')).map((img) => {
  const style = getComputedStyle(img);
  const padding = (a, b) => parseFloat(style[a]) + parseFloat(style[b]);
  const box = img.closest('.cell_output');
  const boxStyle = getComputedStyle(box);
  return {src: img.getAttribute('src'), ratio: img.naturalWidth / img.naturalHeight,
          drawn: parseFloat(img.style.width),
          shown: [img.clientWidth - padding('paddingLeft', 'paddingRight'),
                  img.clientHeight - padding('paddingTop', 'paddingBottom')],
          column: box.clientWidth, scrolls: box.scrollWidth > box.clientWidth + 1,
          box: boxStyle.overflowX, hint: getComputedStyle(box, '::before').content,
          reachable: box.tabIndex >= 0};
})"""
LEGIBLE = 0.75  # of its drawn width: the least a figure is shown at on a phone (course.css)


def _figure_problems(figures: list[dict], width: int) -> list[str]:
    """On a phone a figure is shown at LEGIBLE of its drawn width or more, and one wider than its
    column scrolls in its output box, which says so in a line above it and is in the tab order;
    on a wider screen every figure fits its column. Every figure keeps its aspect ratio."""
    problems = [
        f"not at its own aspect ratio: {f}"
        for f in figures
        if abs(f["shown"][0] / f["shown"][1] - f["ratio"]) > 0.02
    ]
    for f in figures:
        if width <= PHONE[0] and f["shown"][0] < min(f["drawn"], LEGIBLE * f["drawn"]) - 2:
            problems.append(f"{width} px: shown below {LEGIBLE} of its drawn width: {f}")
        if f["scrolls"] and (f["box"] not in ("auto", "scroll") or "swipe" not in f["hint"]):
            problems.append(f"{width} px: wider than its box, which does not say it scrolls: {f}")
        if f["scrolls"] and not f["reachable"]:
            problems.append(f"{width} px: in a box that a keyboard cannot scroll: {f}")
        if width > PHONE[0] and f["scrolls"]:
            problems.append(f"{width} px: wider than its column: {f}")
    return problems


@pytest.mark.browser
@pytest.mark.build
def test_screenshots_on_a_phone_and_in_the_dark_theme(browser, site_url):
    """The landing page and a lecture at 390 px, and in the dark theme chosen as a reader's
    choice is remembered (``mode`` in localStorage): the theme applies it, and the sidebar shows
    the dark logo (its text's contrast: tests/build/test_code_colours.py). The lecture's
    figures are legible (:func:`_figure_problems`)."""
    local = urlsplit(site_url).netloc
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for suffix, viewport, mode in (("390px", PHONE, "light"), ("dark", (1280, 900), "dark")):
        context = offline_context(
            browser, lambda url: urlsplit(url).netloc == local, viewport=viewport, timeout_ms=60_000
        )
        context.add_init_script(f"localStorage.setItem('mode', '{mode}')")
        page = context.new_page()
        try:
            for name, shot in (("intro.html", "landing"), (FIRST_LECTURE, "lecture")):
                page.goto(site_url + name, wait_until="load")
                assert page.evaluate("() => document.documentElement.dataset.theme") == mode
                page.evaluate(TYPESET)
                page.evaluate(IMAGES)
                page.screenshot(path=SCREENSHOTS / f"{shot}-{suffix}.png")
            page.locator(".cell_output img").first.scroll_into_view_if_needed()
            page.screenshot(path=SCREENSHOTS / f"lecture-figure-{suffix}.png")
            figures = page.evaluate(FIGURES)
            assert len(figures) >= 3, figures
            problems = _figure_problems(figures, viewport[0])
            assert not problems, "\n".join(problems)
            if viewport == PHONE:  # the lecture has figures drawn wider than a phone's column
                assert any(f["scrolls"] for f in figures), figures
            if mode == "dark":
                logo = page.locator("img.logo__image:visible")
                assert logo.count() == 1 and logo.get_attribute("src").endswith("logo-dark.svg")
        finally:
            context.close()
        assert context.blocked == []
    for name in ("landing", "lecture", "lecture-figure"):
        for suffix in ("390px", "dark"):
            assert (SCREENSHOTS / f"{name}-{suffix}.png").stat().st_size > 10_000, (
                f"{name}-{suffix}.png looks empty"
            )


class _Figures(HTMLParser):
    """The ``<img>`` tags of a page's cell outputs: (src, the size its style shows it at, in
    CSS pixels, or None)."""

    SIZE = re.compile(r"width:\s*(\d+)px;\s*height:\s*(\d+)px")

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # how deep inside a cell output
        self.found: list[tuple[str, tuple[int, int] | None]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.depth or "cell_output" in (attrs.get("class") or "").split():
            self.depth += tag not in _ProseText.VOID
            if tag == "img":
                size = self.SIZE.search(attrs.get("style") or "")
                self.found.append((attrs["src"], size and (int(size[1]), int(size[2]))))

    def handle_endtag(self, tag):
        if self.depth and tag not in _ProseText.VOID:
            self.depth -= 1


@pytest.mark.build
def test_lecture_figures_have_twice_the_pixels_of_their_shown_size():
    """Sharp on high-density screens: each figure of the first lecture's page (the build
    executes every lecture alike, tools/notebooks.py) is a PNG with twice the pixels of the
    width and height its tag's style shows it at."""
    from PIL import Image

    parser = _Figures()
    path = HTML / FIRST_LECTURE
    parser.feed(path.read_text(encoding="utf-8"))
    assert len(parser.found) >= 3, parser.found
    for src, shown in parser.found:
        assert shown, f"{src} has no shown size"
        with Image.open(path.parent / unquote(src)) as png:
            assert (png.width // 2, png.height // 2) == shown, (src, png.size, shown)


def _site_extension(name: str):
    """The site's Sphinx extension ``jupyter_book/_ext/{name}.py``, imported once, under its
    own name as Sphinx imports it (course_citations registers its styles with pybtex, and its
    dataclass looks its module up by name)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, BOOK / "_ext" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def _attention(seed: int = 0) -> list:
    import torch

    generator = torch.Generator().manual_seed(seed)
    return list(torch.randn(2, 1, 3, 4, 4, generator=generator).softmax(-1))  # 2 x (1, 3, 4, 4)


VIEW_TOKENS = ["zebra", "quartz", "violin", "oyster"]


def test_the_site_shares_one_copy_of_the_attention_views_libraries():
    """Each view carries require.js, d3 and jQuery inline; the site extension replaces every
    copy with one shared file, byte for byte the libraries, and refuses a page whose views
    carry two different copies."""
    from course.viz.attention_views import head_view

    offline_site = _site_extension("offline_site")
    view = head_view(_attention(), VIEW_TOKENS).data
    body = f"<p>one</p>{view}<p>two</p>{view}"
    shared, libraries = offline_site.share_view_libraries(body, "../_static/x.js")
    assert shared.count('<script src="../_static/x.js"></script>') == 2
    assert "see course/viz/js/README.md */" not in shared and "<p>two</p>" in shared
    assert libraries.startswith("/* require-2.3.6.js: see course/viz/js/README.md */")
    assert "d3 and jQuery for bertviz" in libraries and len(libraries) > 300_000
    assert offline_site.share_view_libraries("<p>no view</p>", "x.js") == ("<p>no view</p>", None)
    other = view.replace("noConflict(true)", "noConflict(false)")
    with pytest.raises(ValueError, match="2 different libraries"):
        offline_site.share_view_libraries(view + other, "x.js")


@pytest.mark.build
def test_the_lectures_attention_views_load_the_shared_libraries():
    views = 0
    for name in PAGES:
        text = (HTML / name).read_text(encoding="utf-8")
        assert "see course/viz/js/README.md */" not in text, f"{name} inlines the libraries"
        views += text.count('attention-view-libraries.js"></script>')
    assert views >= 4, views  # two views in each of Lectures 6 and 7
    shared = HTML / "_static" / "attention-view-libraries.js"
    assert shared.stat().st_size > 300_000


def test_the_build_refuses_a_page_that_loads_scripts_from_the_internet(monkeypatch, tmp_path):
    """bertviz's own views load from cdnjs: the site extension names every address (a warning,
    which fails the build); the course's views, and local scripts, pass, the views' libraries
    written once beside the page."""
    from types import SimpleNamespace

    from bertviz import head_view as bertviz_head_view

    from course.viz.attention_views import head_view, model_view

    extension = _site_extension("offline_site")
    raw = bertviz_head_view(_attention(), VIEW_TOKENS, html_action="return").data
    cdnjs = extension.external_scripts(raw)
    assert len(cdnjs) == 3 and all(url.startswith(extension.CDNJS) for url in cdnjs), cdnjs
    ours = head_view(_attention(), VIEW_TOKENS).data + model_view(_attention(), VIEW_TOKENS).data
    assert extension.external_scripts(ours) == []
    other = '<script src="//unpkg.com/x.js"></script><script src="_static/local.js"></script>'
    assert extension.external_scripts(other) == ["//unpkg.com/x.js"]

    warnings = []
    monkeypatch.setattr(extension.logger, "warning", lambda *args: warnings.append(args))
    app = SimpleNamespace(outdir=str(tmp_path))
    page = {"body": f"<p>x</p>{raw}", "pathto": lambda name, resource: f"../{name}"}
    extension._on_page(app, "lectures/06", "page.html", page, None)
    assert [w[2] for w in warnings] == cdnjs and all(w[1] == "lectures/06" for w in warnings)
    assert "course.viz.attention_views" in warnings[0][0]
    warnings.clear()
    page["body"] = ours
    extension._on_page(app, "lectures/06", "page.html", page, None)
    assert warnings == []
    shared = f"../_static/{extension.LIBRARIES_FILE}"
    assert page["body"].count(f'<script src="{shared}"></script>') == 2
    assert (tmp_path / "_static" / extension.LIBRARIES_FILE).stat().st_size > 300_000


def _book_with_views(folder: Path) -> Path:
    """A one-page Jupyter Book with the site's own configuration and extensions, whose page is
    a notebook with a head view and a model view as outputs (and math); built as `make` does
    (offline, warnings are errors). Returns its HTML folder."""
    import subprocess
    import sys

    import nbformat

    from course.viz.attention_views import head_view, model_view

    for name in ("_config.yml", "references.bib"):
        shutil.copyfile(BOOK / name, folder / name)
    for name in ("_ext", "_static"):
        shutil.copytree(BOOK / name, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "_toc.yml").write_text("format: jb-book\nroot: views\n")
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notebook.metadata["language_info"] = {"name": "python"}
    notebook.cells = [nbformat.v4.new_markdown_cell("# Views\n\n$$A = \\mathrm{softmax}(QK^T)$$")]
    for count, (source, view) in enumerate(
        [
            ("head_view(weights, tokens)", head_view(_attention(), VIEW_TOKENS)),
            ("model_view(weights, tokens)", model_view(_attention(), VIEW_TOKENS)),
        ],
        start=1,
    ):
        cell = nbformat.v4.new_code_cell(source, execution_count=count)
        data = {"text/html": view.data, "text/plain": repr(view)}
        cell.outputs = [nbformat.v4.new_output("execute_result", data, execution_count=count)]
        notebook.cells.append(cell)
    nbformat.write(notebook, folder / "views.ipynb")
    command = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(folder)]
    command += ["--toc", str(folder / "_toc.yml"), "-W", "--keep-going", "-q"]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return folder / "_build" / "html"


@pytest.mark.browser
def test_attention_views_draw_on_a_site_page_with_the_network_closed(browser, tmp_path):
    """A page of a book built with the site's configuration, holding a head view and a model
    view from course.viz.attention_views, draws both with every other host blocked, with no
    console error, and with the page's own scripts (MathJax, copy buttons) still working. Both
    views load the site's one copy of their libraries."""
    html = _book_with_views(tmp_path)
    text = (html / "views.html").read_text(encoding="utf-8")  # one shared copy of the libraries
    assert text.count('src="_static/attention-view-libraries.js"') == 2, "two views"
    assert "see course/viz/js/README.md */" not in text
    context = browser.new_context()
    blocked = []
    with serve(html) as url:
        local = urlsplit(url).netloc
        context.route(
            "**/*",
            lambda route: (
                route.continue_()
                if urlsplit(route.request.url).netloc == local
                else (blocked.append(route.request.url), route.abort())
            ),
        )
        page, response, errors, _ = _open(context, url + "views.html")
        try:
            assert response.status == 200
            page.wait_for_function(
                "() => document.querySelectorAll('.attn_background').length == 6", timeout=15_000
            )
            texts = page.eval_on_selector_all(
                "[id^=bertviz] svg text", "(ts) => ts.map((t) => t.textContent)"
            )
            assert texts[:8] == VIEW_TOKENS + VIEW_TOKENS, texts  # the head view's labels
            assert {"Heads", "Layers"} <= set(texts[8:]), texts  # the model view's axes
            assert page.locator("p[id^=course-hint-]").count() == 0
            scrolls = page.eval_on_selector_all(  # the 970-pixel model view can be scrolled to
                ".course-attention-view", "(vs) => vs.map((v) => getComputedStyle(v).overflowX)"
            )
            assert scrolls == ["auto", "auto"], scrolls
            reachable = page.eval_on_selector_all(  # ... with the keyboard too
                ".course-attention-view", "(vs) => vs.map((v) => v.tabIndex)"
            )
            assert reachable == [0, 0], reachable
            assert page.evaluate(TYPESET)["rendered"] >= 1, "MathJax stopped working"
            assert page.locator(".copybtn").count() >= 2, "the copy buttons are gone"
            page.wait_for_load_state("networkidle")
            assert not blocked, f"the page tried to reach {blocked}"
            assert not errors, errors
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=SCREENSHOTS / "attention-views.png", full_page=True)
        finally:
            page.close()
            context.close()


@pytest.mark.browser
@pytest.mark.build
def test_report_page_sizes():
    """Write the size of every page with everything it loaded (build/screenshots/page_sizes.md)."""
    assert SIZES, "no page was measured"
    lines = [
        "| page | files loaded | total size (KiB) | gzipped (KiB) |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, (count, size, gzipped) in sorted(SIZES.items()):
        lines.append(f"| {name} | {count} | {size / 1024:,.0f} | {gzipped / 1024:,.0f} |")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / "page_sizes.md").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines))


@pytest.mark.browser
@pytest.mark.build
def test_report_accessibility_counts():
    """Write how many axe-core violations (rules violated on a page) each view had, by impact,
    over every page (build/screenshots/accessibility.md); every page was checked in each view."""
    pages = len([name for name in PAGES if not _anchors(HTML / name).refresh])
    assert all(CHECKED[view] == pages for view in VIEWS), (CHECKED, pages)
    impacts = ("critical", "serious", "moderate", "minor")
    lines = [
        "| view | pages | " + " | ".join(impacts) + " |",
        "| --- | ---: | " + " | ".join("---:" for _ in impacts) + " |",
    ]
    for view in VIEWS:
        counts = " | ".join(str(ACCESSIBILITY[view][impact]) for impact in impacts)
        lines.append(f"| {view} | {CHECKED[view]} | {counts} |")
    # the scroll cue of test_page_works_offline_in_a_browser was checked on real wide equations
    assert WIDE_EQUATIONS[PHONE[0]] >= 10, WIDE_EQUATIONS
    # every diagram was checked at each width from WIDE up, on the lecture that draws it
    assert all(DIAGRAMS[w] == set(_diagram_labels()) for w in WIDTHS if w >= WIDE), DIAGRAMS
    lines += [
        "",
        "Display equations wider than their column, all pages: "
        + ", ".join(f"{WIDE_EQUATIONS[w]} at {w} px" for w in WIDTHS)
        + ".",
        "",
        "The smallest diagram label shown, all pages: "
        + ", ".join(f"{SMALLEST_LABEL[w]:.1f} px at {w} px" for w in WIDTHS if w >= WIDE)
        + f" (at least {LEGIBLE_LABEL:g}).",
    ]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    (SCREENSHOTS / "accessibility.md").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines))
