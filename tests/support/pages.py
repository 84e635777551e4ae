"""A tiny server for pages the demo shop does not have."""

from __future__ import annotations

import mimetypes
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class PageServer:
    """Serves fixed pages on 127.0.0.1, typed by their path's extension (HTML without one); any
    other path gets ``fallback``, or a 404."""

    def __init__(self, pages: dict[str, str] | None = None, fallback: str | None = None) -> None:
        self.pages: dict[str, str] = dict(pages or {})
        served = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                html = served.get(path, fallback)
                data = (html or "not found").encode()
                self.send_response(200 if html is not None else 404)
                kind = mimetypes.guess_type(path)[0] or "text/html"
                self.send_header("Content-Type", f"{kind}; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # a short poll: stop() waits for the serving loop to notice, at every test's end
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> PageServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
