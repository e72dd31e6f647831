"""Debian's Chromium driven by Playwright, offline: what the browser tests share.

Playwright must never download a browser: :func:`chromium_path` finds the system's Chromium
(``$CHROMIUM`` or ``chromium`` on PATH; ``make browser`` installs it). :func:`offline_context`
opens a context that lets through only the requests a test allows and records the others.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# Flags known to work on the course machines; without the background-networking ones
# Chromium keeps trying to reach Google and floods the closed network with refused connections.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


class ChromiumMissing(RuntimeError):
    """The system has no Chromium to drive."""


def chromium_path() -> str:
    """The system's Chromium (Debian's ``chromium``), or ChromiumMissing naming the fix."""
    path = os.environ.get("CHROMIUM") or shutil.which("chromium")
    if not path or not os.path.exists(path):
        raise ChromiumMissing("chromium is not installed; `make browser` installs it (apt-get)")
    return path


def launch(playwright: Any, *, timeout_ms: int = 60_000) -> Any:
    """Start the system's Chromium, headless, with :data:`CHROMIUM_FLAGS`."""
    return playwright.chromium.launch(
        executable_path=chromium_path(), args=CHROMIUM_FLAGS, headless=True, timeout=timeout_ms
    )


def offline_context(
    browser: Any,
    allowed: Callable[[str], bool],
    *,
    viewport: tuple[int, int],
    timeout_ms: int,
) -> Any:
    """A context whose requests go through only when ``allowed(url)`` (or for data: and blob:
    URLs); every other URL is aborted and appended to ``context.blocked``."""
    width, height = viewport
    context = browser.new_context(viewport={"width": width, "height": height})
    context.blocked = []

    def route(route: Any) -> None:
        url = route.request.url
        if url.startswith(("data:", "blob:")) or allowed(url):
            route.continue_()
        else:
            context.blocked.append(url)
            route.abort()

    context.route("**/*", route)
    context.set_default_timeout(timeout_ms)
    return context


@contextmanager
def local_page(path: Path, *, viewport: tuple[int, int], timeout_ms: int = 60_000) -> Iterator[Any]:
    """One file opened in the system's Chromium, offline: the page, with every request other
    than the file itself blocked and listed in ``page.context.blocked``."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        context = offline_context(
            browser, lambda url: url == path.as_uri(), viewport=viewport, timeout_ms=timeout_ms
        )
        page = context.new_page()
        page.goto(path.as_uri())
        try:
            yield page
        finally:
            browser.close()
