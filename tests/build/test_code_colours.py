"""The website's code highlighting is readable in both themes, checked without a browser.

Every Pygments token colour of the highlighting style that the site uses in the light theme, and
of the one it uses in the dark theme, reaches WCAG 2.x AA contrast (4.5:1) against every
background a code block has in that theme: the style's own (``div.highlight``) and the theme's
surface colour, which pydata-sphinx-theme paints on the ``pre`` inside it. The browser test
(tests/build/test_website.py) leaves code blocks out of axe-core's colour-contrast rule, whose
time the thousands of token spans dominated; this test covers them instead. Nor does axe-core
read the text inside an image: the logo's text colours are checked here too.
"""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest
import yaml
from pygments.styles import get_style_by_name
from pygments.token import Token

from course.viz.cells import contrast_ratio
from tools.build import BOOK

AA = 4.5  # WCAG 2.x success criterion 1.4.3, normal-size text
MODES = ("light", "dark")


def _themes() -> tuple[Path, Path]:
    """The folders of sphinx-book-theme and of the theme it inherits, pydata-sphinx-theme."""
    import pydata_sphinx_theme
    import sphinx_book_theme

    book = Path(sphinx_book_theme.__file__).parent / "theme" / "sphinx_book_theme"
    pydata = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme"
    return book, pydata


def _rgb(colour: str) -> tuple[int, int, int]:
    """``#rgb`` or ``#rrggbb`` as three channels, 0 to 255."""
    digits = colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(c * 2 for c in digits)
    if not re.fullmatch(r"[0-9a-fA-F]{6}", digits):
        raise ValueError(f"not a #rrggbb colour: {colour!r}")
    return tuple(int(digits[i : i + 2], 16) for i in (0, 2, 4))


def contrast(first: str, second: str) -> float:
    """WCAG 2.x contrast ratio of two colours, 1 to 21 (course.viz.cells' formula, which Lecture
    2's cell view uses)."""
    return contrast_ratio(_rgb(first), _rgb(second))


def highlight_styles() -> dict[str, str]:
    """The Pygments style of each theme mode, resolved as pydata-sphinx-theme does: the book's
    ``html_theme_options`` first, then sphinx-book-theme's defaults, then pydata-sphinx-theme's."""
    config = yaml.safe_load((BOOK / "_config.yml").read_text())
    options = config.get("sphinx", {}).get("config", {}).get("html_theme_options", {})
    return {mode: options.get(f"pygments_{mode}_style") or _theme_default(mode) for mode in MODES}


def _theme_default(mode: str) -> str:
    for theme in _themes():  # sphinx-book-theme, then the theme it inherits
        conf = configparser.ConfigParser(interpolation=None)
        conf.read(theme / "theme.conf")
        if conf.has_option("options", f"pygments_{mode}_style"):
            return conf.get("options", f"pygments_{mode}_style")
    raise LookupError(f"no theme names a pygments_{mode}_style")


def theme_colours(variable: str) -> dict[str, str]:
    """A colour variable of each mode, such as ``--pst-color-surface`` (the background of
    ``pre``): pydata-sphinx-theme's, unless the course's stylesheet sets its own."""
    _, pydata = _themes()
    sheets = [
        (pydata / "static" / "styles" / "pydata-sphinx-theme.css").read_text(),
        (BOOK / "_static" / "course.css").read_text(),
    ]
    found = {}
    for mode in MODES:
        block = re.compile(rf"html\[data-theme=\"?{mode}\"?\]\s*{{([^}}]*)}}")
        for sheet in sheets:
            for body in block.findall(sheet):
                value = re.search(rf"{variable}:\s*(#[0-9a-fA-F]{{3,6}})\b", body)
                if value:
                    found[mode] = value.group(1)
    if set(found) != set(MODES):
        raise LookupError(f"{variable} is not set for each of {MODES}: {found}")
    return found


def low_contrast_tokens(style_name: str, backgrounds: list[str], text: str) -> list[str]:
    """Each token type of the style whose colour, on its own background if it has one, else on
    each of ``backgrounds`` and the style's, is below 4.5:1. A token without a colour has the
    style's text colour, or ``text`` (the page's) when the style has none. Whitespace has no
    glyphs."""
    style = get_style_by_name(style_name)
    default = style.style_for_token(Token.Text)["color"]
    low = []
    for token, definition in style:
        if token in Token.Text.Whitespace:
            continue
        colour = "#" + (definition["color"] or default) if definition["color"] or default else text
        grounds = (
            ["#" + definition["bgcolor"]]
            if definition["bgcolor"]
            else [style.background_color, *backgrounds]
        )
        for ground in grounds:
            ratio = contrast(colour, ground)
            if ratio < AA:
                low.append(f"{style_name} {token}: {colour} on {ground} is {ratio:.2f}:1")
    return low


def test_the_contrast_formula_matches_wcag():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # WebAIM's grey
    assert contrast("#fff", "#ffffff") == 1.0
    with pytest.raises(ValueError, match="rrggbb"):
        contrast("white", "#000")


def test_every_code_token_is_readable_in_both_themes():
    styles = highlight_styles()
    surfaces, texts = theme_colours("--pst-color-surface"), theme_colours("--pst-color-text-base")
    low = [
        line
        for mode in MODES
        for line in low_contrast_tokens(styles[mode], [surfaces[mode]], texts[mode])
    ]
    assert not low, "\n".join(low)


def test_the_check_finds_a_low_contrast_style():
    """Sphinx themes' usual tango style: its green strings and orange operators, among others,
    are below 4.5:1 on its background."""
    low = low_contrast_tokens("tango", [], "#000000")
    assert any(" Token.Literal.String: #4e9a06 on #f8f8f8 " in line for line in low), low
    assert any(" Token.Operator: #ce5c00 on #f8f8f8 " in line for line in low), low


@pytest.mark.build
def test_the_built_site_highlights_with_the_checked_styles():
    """The site's pygments.css holds, for each mode, the checked style's background and text."""
    from pygments.formatters import HtmlFormatter

    css = (BOOK / "_build" / "html" / "_static" / "pygments.css").read_text()
    for mode, name in highlight_styles().items():
        prefix = f'html[data-theme="{mode}"] .highlight'
        expected = HtmlFormatter(style=name).get_background_style_defs(prefix)
        assert any(line in css for line in expected if "background" in line), (mode, name)


def test_the_logo_of_each_theme_is_readable_on_its_background():
    """The sidebar's logo is an image with text: the light theme's (``logo``) and the dark
    theme's (``image_dark``) text colours reach 4.5:1 on that theme's page background."""
    config = yaml.safe_load((BOOK / "_config.yml").read_text())
    options = config["sphinx"]["config"]["html_theme_options"]
    logos = {"light": config["logo"], "dark": options["logo"]["image_dark"]}
    backgrounds = theme_colours("--pst-color-background")
    for mode, logo in logos.items():
        fills = re.findall(r'<text[^>]*\sfill="(#[0-9a-fA-F]{3,6})"', (BOOK / logo).read_text())
        assert fills, f"{logo} has no text with a fill colour"
        low = [f for f in fills if contrast(f, backgrounds[mode]) < AA]
        assert not low, f"{logo}: text colours {low} below {AA}:1 on {backgrounds[mode]}"
