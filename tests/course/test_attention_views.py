"""course.viz.attention_views: bertviz's head and model views that draw with no network.

Unit tests check what the functions accept and refuse, and that the HTML names no CDN. The
browser tests serve the returned HTML on 127.0.0.1 to Debian's Chromium with every request to
another host aborted, and check that each view draws (token labels, model-view thumbnails)
on its own and next to others. The website and JupyterLab paths are tested in
tests/build/test_website.py and tests/build/test_student_flow.py.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest
import torch

from course.viz import attention_views
from course.viz.attention_views import JS, head_view, model_view
from tests.messages import raises
from tools.browser import launch, offline_context
from tools.site_server import serve

pytestmark = pytest.mark.usefixtures("one_thread")

TOKENS = ["zebra", "quartz", "violin", "oyster", "maple"]
SOURCE = ["chats", "dorment", "</s>"]  # special tokens as a seq2seq model has them
TARGET = ["<s>", "cats", "are", "sleeping"]
CDN_HOSTS = (
    "cdnjs.cloudflare.com",
    "cdn.jsdelivr.net",
    "unpkg.com",
    "ajax.googleapis.com",
    "code.jquery.com",
)


def _weights(layers: int, heads: int, rows: int, cols: int, batch: int = 1, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    scores = torch.randn(layers, batch, heads, rows, cols, generator=generator)
    return list(scores.softmax(-1))  # layers x (B, h, rows, cols)


def _params(html: str) -> list[dict]:
    """The parameters bertviz wrote into each view of ``html``."""
    found = re.findall(r"const params = (\{.*?\}); // HACK", html, re.S)
    assert found, "no bertviz parameters in the HTML"
    return [json.loads(text) for text in found]


# -- what the functions accept ----------------------------------------------------------------


def test_torch_tensors_and_numpy_arrays_give_the_same_view():
    weights = _weights(2, 3, 5, 5)
    from_torch = _params(head_view(weights, TOKENS).data)[0]
    from_numpy = _params(head_view([w.numpy() for w in weights], TOKENS).data)[0]
    assert from_torch["attention"] == from_numpy["attention"]
    view = from_torch["attention"][0]
    assert view["left_text"] == TOKENS and view["right_text"] == TOKENS
    attn = np.array(view["attn"])  # (layers, heads, T, T)
    assert attn.shape == (2, 3, 5, 5)
    expected = torch.stack([w[0] for w in weights]).double().numpy()
    np.testing.assert_allclose(attn, expected, atol=0.5e-4 + 1e-12)
    model = _params(model_view([w.numpy() for w in weights], TOKENS).data)[0]
    assert model["attention"] == from_torch["attention"] and model["display_mode"] == "light"


def test_example_picks_one_element_of_the_batch():
    weights = _weights(2, 2, 5, 5, batch=3)
    attn = np.array(_params(head_view(weights, TOKENS, example=2).data)[0]["attention"][0]["attn"])
    np.testing.assert_allclose(attn, torch.stack([w[2] for w in weights]).numpy(), atol=1e-4)
    assert not np.allclose(attn, torch.stack([w[0] for w in weights]).numpy(), atol=1e-2)


def test_the_encoder_decoder_form_has_encoder_decoder_and_cross_views():
    enc, dec, cross = _weights(2, 2, 3, 3), _weights(2, 2, 4, 4, seed=1), _weights(2, 2, 4, 3)
    for make in (head_view, model_view):
        html = make(
            encoder_attention=enc,
            decoder_attention=dec,
            cross_attention=cross,
            encoder_tokens=SOURCE,
            decoder_tokens=TARGET,
        ).data
        views = {v["name"]: v for v in _params(html)[0]["attention"]}
        assert list(views) == ["Encoder", "Decoder", "Cross"]
        assert views["Cross"]["left_text"] == TARGET and views["Cross"]["right_text"] == SOURCE
        assert np.array(views["Cross"]["attn"]).shape == (2, 2, 4, 3)
    only_cross = head_view(cross_attention=cross, encoder_tokens=SOURCE, decoder_tokens=TARGET)
    assert [v["name"] for v in _params(only_cross.data)[0]["attention"]] == ["Cross"]


def test_sentence_pairs_and_the_chosen_layers_and_heads_reach_bertviz():
    weights = _weights(3, 4, 5, 5)
    params = _params(head_view(weights, TOKENS, sentence_b_start=2, layer=1, heads=[0, 3]).data)[0]
    assert [v["name"] for v in params["attention"]][:3] == ["All", "Sentence A -> Sentence A", "Sentence B -> Sentence B"]  # fmt: skip
    assert params["layer"] == 1 and params["heads"] == [0, 3]
    model = _params(model_view(weights, TOKENS, layers=[0, 2], heads=[1], display_mode="dark").data)
    assert model[0]["include_layers"] == [0, 2] and model[0]["include_heads"] == [1]
    assert np.array(model[0]["attention"][0]["attn"]).shape == (2, 1, 5, 5)


# -- what they refuse, and how they say it ------------------------------------------------------


@pytest.mark.parametrize(
    "change, error, message",
    [
        (lambda w: w[0], TypeError, ("attention", "one array per layer", r"\[attention\]")),
        (lambda w: [], TypeError, ("attention", "non-empty")),
        (lambda w: [w[0], w[1][0]], ValueError, (r"attention\[1\]", r"\(B, heads, 5, 5\)", r"got \(3, 5, 5\)")),
        (lambda w: [w[0], w[1][..., :4]], ValueError, (r"attention\[1\]", r"\(B, heads, 5, 5\)", r"\(1, 3, 5, 4\)")),
        (lambda w: [w[0], w[1][:, :2]], ValueError, (r"attention\[1\]", "2 heads", r"\(B, 3, 5, 5\)")),
        (lambda w: [w[0], "weights"], TypeError, (r"attention\[1\]", "array or tensor", r"\bstr\b")),
        (lambda w: [w[0] > 0.2, w[1]], TypeError, (r"attention\[0\]", "real numbers", "bool")),
        (lambda w: [w[0], w[1] * float("nan")], ValueError, (r"attention\[1\]", "example 0", "NaN")),
        (lambda w: [w[0] * 3, w[1]], ValueError, (r"attention\[0\]", r"\[0, 1\]")),
    ],
)  # fmt: skip
def test_bad_attention_is_refused_naming_the_layer_and_the_expected_shape(change, error, message):
    with raises(error, *message):
        head_view(change(_weights(2, 3, 5, 5)), TOKENS)
    with raises(error, *message):
        model_view(change(_weights(2, 3, 5, 5)), TOKENS)


def test_bad_tokens_and_options_are_refused():
    weights = _weights(2, 3, 5, 5)
    with raises(TypeError, "tokens", "list of strings", "one string"):
        head_view(weights, "zebra quartz violin oyster maple")
    with raises(TypeError, "tokens", "list of strings"):
        head_view(weights, [1, 2, 3, 4, 5])
    with raises(ValueError, "tokens", "'</script>'", "cannot be shown"):
        head_view(weights, ["<s>", "</script>", "a", "b", "</s>"])
    assert "</s>" in head_view(weights, ["<s>", "a", "b", "c", "</s>"]).data  # an EOS token is fine
    with pytest.raises(ValueError, match=r"for 4 tokens, got \(1, 3, 5, 5\)"):
        head_view(weights, TOKENS[:4])
    with pytest.raises(ValueError, match="tokens are required"):
        head_view(weights)
    with raises(ValueError, "example 1", "out of range", "batch"):
        head_view(weights, TOKENS, example=1)
    with raises(ValueError, "layer", r"\[0, 2\)", "got 2"):
        head_view(weights, TOKENS, layer=2)
    with raises(ValueError, "heads", r"\[0, 3\)", r"\[0, 3\]"):
        head_view(weights, TOKENS, heads=[0, 3])
    with raises(ValueError, "layers", r"\[0, 2\)", r"\[\]"):
        model_view(weights, TOKENS, layers=[])
    with pytest.raises(ValueError, match=r"sentence_b_start: .* in \[1, 5\), got 5"):
        head_view(weights, TOKENS, sentence_b_start=5)
    with raises(ValueError, "display_mode", "'dark'", "'blue'"):
        model_view(weights, TOKENS, display_mode="blue")
    with pytest.raises(ValueError, match="no attention given"):
        model_view()


def test_bad_encoder_decoder_arguments_are_refused():
    enc, dec, cross = _weights(2, 2, 3, 3), _weights(2, 2, 4, 4), _weights(2, 2, 4, 3)
    pair = {"encoder_tokens": SOURCE, "decoder_tokens": TARGET}
    with raises(ValueError, "attention and tokens", "not both"):
        head_view(enc, SOURCE, decoder_attention=dec, **pair)
    with pytest.raises(ValueError, match="cross_attention: encoder_tokens required"):
        head_view(cross_attention=cross, decoder_tokens=TARGET)
    with raises(ValueError, r"cross_attention\[0\]", r"\(B, heads, 4, 3\)", r"\(1, 2, 3, 4\)"):
        head_view(cross_attention=[w.transpose(-1, -2) for w in cross], **pair)
    with raises(ValueError, "decoder_attention", "1 layers", "encoder_attention"):
        model_view(encoder_attention=enc, decoder_attention=dec[:1], **pair)
    with raises(ValueError, "tokens", "sentence_b_start", "self-attention"):
        head_view(encoder_attention=enc, tokens=SOURCE, **pair)


# -- offline: what the HTML holds -------------------------------------------------------------


def _urls(text: str) -> set[str]:
    return set(re.findall(r"https?://[^\s'\"()<>\\]+", text))


LABELS = ("attention head view, layer 0", "attention model view", "attention head view, layer 0")


def test_the_html_names_no_cdn_and_loads_nothing():
    import bertviz

    enc, dec = _weights(2, 2, 3, 3), _weights(2, 2, 4, 4)
    pages = [
        head_view(_weights(2, 3, 5, 5), TOKENS).data,
        model_view(_weights(2, 3, 5, 5), TOKENS).data,
        head_view(
            encoder_attention=enc, decoder_attention=dec, encoder_tokens=SOURCE, decoder_tokens=TARGET
        ).data,
    ]  # fmt: skip
    # the only addresses are those in the comments and XML namespaces of the shipped libraries
    # and of bertviz's own script (its credits), none of them a CDN or loaded by anything
    known = set()
    for script in [*JS.glob("*.js"), *Path(bertviz.__file__).parent.glob("*_view.js")]:
        known |= {u for u in _urls(script.read_text()) if "cdnjs" not in u}
    for html, label in zip(pages, LABELS, strict=True):
        assert not {urlsplit(url).netloc for url in _urls(html)} & set(CDN_HOSTS), _urls(html)
        assert _urls(html) <= known, _urls(html) - known
        assert not re.search(r"\b(src|href)\s*=\s*[\"']?(https?:)?//", html), "an external load"
        # require.js, d3 + jQuery, bertviz's view, the hint (and jQuery's own '"<script>"')
        assert html.count("</script>") == 4, html.count("</script>")
        assert attention_views.HINT in html
        # the box it scrolls sideways in can be reached and scrolled with the keyboard
        (box,) = re.findall(r'<div class="course-attention-view"[^>]*>', html)
        assert 'tabindex="0"' in box and 'role="region"' in box, box
        assert f'aria-label="{label}"' in box, box  # names the view, not only "attention view"


def test_the_shipped_libraries_are_the_files_the_readme_names_with_their_licences():
    readme = (JS / "README.md").read_text()
    rows = re.findall(r"^\| `([\w.-]+\.js)` \| `([\w@.-]+)`.*\| `([0-9a-f]{64})` \|", readme, re.M)
    assert {file for file, _, _ in rows} == {p.name for p in JS.glob("*.js")}
    for file, _, digest in rows:
        assert hashlib.sha256((JS / file).read_bytes()).hexdigest() == digest, file
    for name in ("requirejs", "d3", "jquery"):
        licence = (JS / f"LICENSE-{name}.txt").read_text()
        assert "Permission is hereby granted" in licence or "Redistribution and use" in licence
    assert "Apache License" in (JS / "LICENSE-bertviz.txt").read_text()  # its scripts, in views
    html = head_view(_weights(1, 1, 5, 5), TOKENS).data
    for file in JS.glob("*.js"):
        assert file.read_text() in html, f"{file.name} is not written into the view unchanged"


def test_a_changed_bertviz_is_caught_not_loaded_from_the_internet():
    view = head_view(_weights(1, 1, 5, 5), TOKENS).data  # sanity: the real one passes
    assert "cdnjs" not in view
    with raises(RuntimeError, "no longer loads", "require.min.js", "once"):
        attention_views._offline("<div>no script</div>")
    raw = '<script src="https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6/require.min.js"></script>'
    with pytest.raises(RuntimeError, match="no longer loads d3 from"):
        attention_views._offline(raw + "<script>require.config({paths: {}})</script>")
    paths = "".join(
        f"'https://cdnjs.cloudflare.com/ajax/libs/{path}'"
        for path, _ in attention_views.MODULES.values()
    )
    extra = "'https://cdnjs.cloudflare.com/ajax/libs/lodash/4.0.0/lodash.min'"
    with raises(RuntimeError, "lodash/4.0.0/lodash.min", "course/viz/js/", "not hold"):
        attention_views._offline(f"{raw}<script>{paths}{extra}</script>")


# -- in a browser, with the network closed ----------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright, timeout_ms=30_000)
        yield browser
        browser.close()


def _drawn(browser, tmp_path: Path, views: dict[str, str]) -> tuple[dict, list[str], list[str]]:
    """Serve ``views`` ({page name: HTML}) and open each with the network closed.

    Returns ({page: what it drew}, errors, requests to other hosts).
    """
    for name, html in views.items():
        (tmp_path / f"{name}.html").write_text(
            f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{html}</body></html>"
        )
    drawn, errors = {}, []
    with serve(tmp_path) as url:
        local = urlsplit(url).netloc
        context = offline_context(
            browser, lambda u: urlsplit(u).netloc == local, viewport=(1280, 900), timeout_ms=20_000
        )
        try:
            for name in views:
                page = context.new_page()
                page.on("pageerror", lambda error, name=name: errors.append(f"{name}: {error}"))
                page.on(
                    "console",
                    lambda m, name=name: (
                        errors.append(f"{name}: {m.text}") if m.type == "error" else None
                    ),
                )
                page.goto(f"{url}{name}.html", wait_until="load")
                page.wait_for_function(
                    "() => Array.from(document.querySelectorAll('[id^=bertviz-]')).every("
                    "v => v.querySelector('svg text'))",
                    timeout=15_000,
                )
                drawn[name] = page.evaluate(DRAWN)
                page.close()
        finally:
            context.close()
    return drawn, errors, context.blocked


DRAWN = """() => Array.from(document.querySelectorAll('[id^=bertviz-]')).map(v => ({
    texts: Array.from(v.querySelectorAll('svg text')).map(t => t.textContent),
    thumbnails: v.querySelectorAll('.attn_background').length,
    hint: Array.from(document.querySelectorAll('p[id^=course-hint-]')).length,
}))"""


@pytest.mark.browser
def test_each_view_draws_on_its_own_with_the_network_closed(browser, tmp_path):
    weights = _weights(2, 3, 5, 5)
    enc, dec, cross = _weights(2, 2, 3, 3), _weights(2, 2, 4, 4), _weights(2, 2, 4, 3)
    pair = {"encoder_tokens": SOURCE, "decoder_tokens": TARGET}
    views = {
        "head": head_view(weights, TOKENS).data,
        "model": model_view(weights, TOKENS).data,
        "encoder_decoder": head_view(
            encoder_attention=enc, decoder_attention=dec, cross_attention=cross, **pair
        ).data,
    }
    drawn, errors, blocked = _drawn(browser, tmp_path, views)
    assert not blocked, f"the views tried to reach {blocked}"
    assert not errors, errors
    (head,), (model,), (encoder_decoder,) = drawn["head"], drawn["model"], drawn["encoder_decoder"]
    assert head["texts"] == TOKENS + TOKENS, head  # queries on the left, keys on the right
    assert model["thumbnails"] == 2 * 3, model  # one per layer and head
    assert {"Heads", "Layers"} <= set(model["texts"]), model
    assert encoder_decoder["texts"] == SOURCE + SOURCE, encoder_decoder  # the first: encoder
    assert head["hint"] == model["hint"] == 0, "the 'has not run' line stayed on the page"


@pytest.mark.browser
def test_views_share_a_page_and_the_model_view_opens_a_head(browser, tmp_path):
    """Two views on one page (the libraries arrive twice, as in a notebook): both draw; a
    click on a model-view thumbnail shows that head with its tokens."""
    weights = _weights(2, 2, 5, 5)
    both = head_view(weights, TOKENS).data + model_view(weights, TOKENS, layers=[1]).data
    (tmp_path / "both.html").write_text(f"<!DOCTYPE html><html><body>{both}</body></html>")
    with serve(tmp_path) as url:
        local = urlsplit(url).netloc
        context = offline_context(
            browser, lambda u: urlsplit(u).netloc == local, viewport=(1280, 900), timeout_ms=20_000
        )
        errors: list[str] = []
        try:
            page = context.new_page()
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.goto(f"{url}both.html", wait_until="load")
            page.wait_for_function("() => document.querySelectorAll('.attn_background').length")
            head, model = page.evaluate(DRAWN)
            assert head["texts"] == TOKENS + TOKENS and model["thumbnails"] == 2
            page.mouse.click(*_centre(page.locator("#attn_background_0_1")))
            page.wait_for_function("() => document.querySelectorAll('text.token').length")
            tokens = page.eval_on_selector_all("text.token", "ts => ts.map(t => t.textContent)")
            assert tokens == TOKENS + TOKENS, tokens
            detail = page.locator("text.detail", has_text="Layer 1, Head 1")
            assert detail.count() == 1
            assert page.evaluate("() => typeof window.$ === 'undefined'"), "jQuery left on $"
        finally:
            context.close()
    assert not context.blocked and not errors, (context.blocked, errors)


def _centre(locator) -> tuple[float, float]:
    box = locator.bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def test_every_menu_of_a_view_is_named_for_screen_readers():
    enc, dec = _weights(2, 2, 3, 3), _weights(2, 2, 4, 4)
    views = {
        "head": head_view(_weights(2, 3, 5, 5), TOKENS).data,
        "encoder-decoder": head_view(
            encoder_attention=enc, decoder_attention=dec, encoder_tokens=SOURCE, decoder_tokens=TARGET
        ).data,
    }  # fmt: skip
    for name, html in views.items():
        menus = re.findall(r"(\w+): <select\b([^>]*)>", html)
        assert menus, f"{name} view: no menu found"
        for word, attributes in menus:
            assert f'aria-label="{word}"' in attributes, (name, word, attributes)
