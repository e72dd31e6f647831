"""Serve the built website on 127.0.0.1: ``python -m tools.site_server [--port 8000]``.

The browser tests use :func:`serve` to get a server on a free port for the length of a test
session; people use the command to preview the site exactly as the tests see it.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tools.notebooks import REPO

SITE = REPO / "jupyter_book" / "_build" / "html"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        pass


@contextlib.contextmanager
def serve(root: Path = SITE, port: int = 0) -> Iterator[str]:
    """Serve ``root`` on 127.0.0.1 (a free port unless given); yield the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    if not (SITE / "index.html").exists():
        print(f"{SITE} has no site yet; run `make` first")
        return 1
    with serve(SITE, args.port) as url:
        print(f"Serving {SITE} at {url}intro.html (Ctrl-C to stop)", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
