"""Two local origins: an app whose pages a test writes, and another origin that logs every
request it receives (what must never reach it) and serves a frame for embedding."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FRAME_TEXT = "text inside the other origin's frame"


class _Server:
    def __init__(self, host: str, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer((host, 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.url = f"http://{host}:{self.httpd.server_address[1]}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class TwoOrigins:
    """``app`` (127.0.0.1) serves ``pages`` (HTML by path, ``{outside}`` filled in) and
    ``redirects`` (path -> Location, ``{outside}`` filled in); ``outside`` (127.0.0.2) answers
    every request with a small page (``/frame`` with ``FRAME_TEXT``) and records it in
    ``hits`` as path and query."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        self.redirects: dict[str, str] = {}
        self.hits: list[str] = []
        origins = self

        class App(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if path in origins.redirects:
                    self.send_response(302)
                    self.send_header("Location", origins.fill(origins.redirects[path]))
                    self.end_headers()
                    return
                body = origins.fill(origins.pages.get(path, "<title>App</title><h1>App</h1>"))
                _send(self, body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Outside(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                origins.hits.append(self.path)
                if self.path.startswith("/frame"):
                    _send(self, f"<title>Frame</title><p id='inside'>{FRAME_TEXT}</p>")
                else:
                    _send(self, "<title>Outside</title><h1>outside</h1>")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._app = _Server("127.0.0.1", App)
        self._outside = _Server("127.0.0.2", Outside)
        self.app, self.outside = self._app.url, self._outside.url

    def fill(self, text: str) -> str:
        return text.replace("{outside}", self.outside)

    def __enter__(self) -> TwoOrigins:
        self._app.thread.start()
        self._outside.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._app.stop()
        self._outside.stop()


def _send(handler: BaseHTTPRequestHandler, body: str) -> None:
    data = body.encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html; charset=utf-8")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)
