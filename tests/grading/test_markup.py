"""Student markup rendered for a TA or a student: sanitised, with math, tables and images kept.

The browser test (tests/grading/test_ta_grading.py) opens formgrader and the feedback files in
Chromium; these tests pin the rules of autograder/platform/markup.py one by one, without a browser.
"""

from __future__ import annotations

import base64

import pytest

from autograder.platform import markup
from autograder.platform.sandbox import _displayable

PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()


def _render(source: str) -> str:
    return str(markup.markdown2html({}, source))


@pytest.mark.parametrize(
    "hostile",
    [
        "<img src=x onerror=alert(1)>",
        "<script>alert(1)</script>",
        "<svg onload=alert(1)><script>alert(1)</script></svg>",
        '<iframe srcdoc="<script>alert(1)</script>"></iframe>',
        '<a href="javascript:alert(1)">x</a>',
        '<a href="jav&#x61;script:alert(1)">x</a>',
        "[x](javascript:alert(1))",
        '<details open ontoggle="alert(1)">x</details>',
        '<object data="http://evil.example/o"></object><embed src="http://evil.example/e">',
        '<meta http-equiv="refresh" content="0;url=http://evil.example/">',
        '<link rel="stylesheet" href="http://evil.example/s.css">',
        "<style>@import url(http://evil.example/i.css);</style>",
        '<div style="background:url(http://evil.example/b)">x</div>',
        '<form action="http://evil.example/f"><button formaction="javascript:alert(1)">go</button>',
        "![x](http://evil.example/i.png)",
        '<img src="/api/contents">',
    ],
)
def test_nothing_live_or_remote_is_left(hostile):
    html = _render(hostile).lower()
    for word in ("alert", "evil.example", "javascript", "<script", "<iframe", "<svg", "/api/"):
        assert word not in html, (hostile, html)
    assert " on" not in html.replace("noopener", ""), html


def test_math_tables_images_and_links_are_kept():
    source = (
        "Where $a < b$ and $$\\sum_{t=1}^{T} h_t$$\n\n"
        "| x | y |\n|:--|--:|\n| 1 | 2 |\n\n"
        f"![plot]({PNG}) and [the paper](https://arxiv.org/abs/1706.03762)\n\n"
        "`a < b` in code, **bold**, <sub>1</sub>"
    )
    html = _render(source)
    assert "$a &lt; b$" in html and "$$\\sum_{t=1}^{T} h_t$$" in html
    assert "<table>" in html and 'style="text-align:left"' in html.replace(": ", ":")
    assert f'src="{PNG}"' in html
    assert 'href="https://arxiv.org/abs/1706.03762"' in html
    assert "<code>a &lt; b</code>" in html and "<strong>bold</strong>" in html
    assert "<sub>1</sub>" in html


def test_only_text_and_base64_png_outputs_are_kept_from_the_kernel():
    assert _displayable("text/plain", "x")
    assert _displayable("image/png", "iVBORw0KGgo=\n")
    assert not _displayable("image/png", 'x" onerror="alert(1)')
    for mimetype in ("text/html", "application/javascript", "image/svg+xml", "text/markdown"):
        assert not _displayable(mimetype, "<b>x</b>")


def test_the_mathjax_is_local_and_inlined_with_links_off():
    html = markup.mathjax_html()
    assert html.count("<script") == 2 and "src=" not in html.split(">", 2)[0]
    assert '"href": ["{#2}", 2]' in html and '"require"' in html
    assert '"bbox"' in html and '"html"' in html and '"action"' in html  # packages switched off
    assert "postFilters.add" in html  # attributes stripped after parsing, whatever made them
    assert html.count("</script") == 2  # the inlined code cannot close its element early


def test_the_grading_config_routes_html_exports_through_the_sanitiser(tmp_path):
    from traitlets.config.loader import PyFileConfigLoader

    config_file = tmp_path / "nbgrader_config.py"
    config_file.write_text(markup.exporter_config())
    config = PyFileConfigLoader(config_file.name, str(tmp_path)).load_config()
    exporter = config.HTMLExporter
    assert exporter.sanitize_html is True
    assert exporter.filters["markdown2html"] == "autograder.platform.markup.markdown2html"
    assert str(markup.TEMPLATES) in exporter.extra_template_basedirs
    assert (markup.TEMPLATES / "base" / "mathjax.html.j2").is_file()


# -- math in Chromium: the payloads of tests/grading/attacks, typeset by the course's MathJax -----


def _typeset(tmp_path, mathjax: str, name: str) -> tuple[dict, dict, list[str]]:
    """Open a page of hostile math under ``mathjax`` (two script elements); return MathJax's
    counts, the audit of tools/formgrader.py, and the requests that were blocked."""
    from tests.grading.attacks import hostile_math
    from tools.browser import local_page
    from tools.formgrader import AUDIT_JS, MATHJAX_JS

    body = "".join(f"<p>{clean_math}</p>" for clean_math in hostile_math("page"))
    page_file = tmp_path / f"{name}.html"
    page_file.write_text(
        f'<html><head>{mathjax}</head><body><div id="notebook-container">'
        f"<p>$h_t = \\tanh(W h_{{t-1}} + U x_t) \\bmod 2$</p>{body}</div></body></html>"
    )
    with local_page(page_file, viewport=(900, 700)) as page:
        math = page.evaluate(MATHJAX_JS)
        for link in page.locator("mjx-container a").all():  # a reader clicks every math link
            link.click(force=True, timeout=2_000, no_wait_after=True)
        page.wait_for_timeout(500)
        found = page.evaluate(AUDIT_JS, "#notebook-container")
    return math, found, page.context.blocked


@pytest.mark.browser
def test_math_cannot_become_a_link_a_style_or_a_request(tmp_path):
    from tests.grading.attacks import hostile_math

    math, found, blocked = _typeset(tmp_path, markup.mathjax_html(), "course")
    assert math["rendered"] == len(hostile_math("page")) + 1 and math["errors"] == 0, math
    assert found == {"ran": [], "live": []}, found
    assert blocked == [], blocked


@pytest.mark.browser
def test_the_math_audit_sees_links_and_styles_under_mathjax_as_it_comes(tmp_path):
    """The control: the same MathJax with its stock TeX configuration makes live math."""
    stock = markup.mathjax_html().split("</script>", 1)[1]  # MathJax itself, no configuration
    config = '<script>window.MathJax = {tex: {inlineMath: [["$", "$"]]}};</script>'
    _, found, blocked = _typeset(tmp_path, config + stock, "stock")
    assert "a href" in found["live"] and any("style" in what for what in found["live"]), found
    assert any(url.startswith("http://evil.example/") for url in blocked), blocked


@pytest.mark.parametrize(
    "pathological",
    [
        "\\begin{x} " * 4000,  # unclosed environments: nbconvert's math pattern is quadratic
        "$a " * 20000,  # unclosed inline math: 16 s in nbconvert on a loaded machine
        "[a](" * 20000,
        "\\begin{x} " * 100 + "a" * 100_000,
        "word " * 30_000,  # longer than any written answer
    ],
)
def test_markdown_that_would_render_in_quadratic_time_is_shown_as_text(pathological):
    assert markup.too_costly(pathological)
    html = _render(pathological + "<script>alert(1)</script>")
    assert html.startswith("<p><em>[this markdown cell (") and "shown as text" in html
    assert "<script>" not in html  # escaped, or cut off with the rest past 20,000 characters
    assert len(html) < 21_000 + 500  # cut to 20,000 characters


def test_a_long_written_answer_with_math_still_renders_as_markdown():
    answer = "The gradient $\\partial L / \\partial h_t$ shrinks by $\\|W\\|$ per step. " * 120
    answer += "\n\n$$\\begin{aligned} a &= b \\\\ c &= d \\end{aligned}$$\n\n**bold** and `code`"
    assert not markup.too_costly(answer)
    html = _render(answer)
    assert "<strong>bold</strong>" in html and "<code>code</code>" in html
    assert "shown as text" not in html
