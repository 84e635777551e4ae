"""The demo shop: a tiny standard-library web app that the examples and tests run against.

Three variants share one codebase. ``normal`` is the reference shop, ``changed-ui`` relabels
and moves the controls while keeping every flow intact (test rot), and ``broken-product`` keeps
the normal UI but never confirms an order (a product defect). A running server switches variant
through ``set_variant`` or the hidden ``/__variant`` endpoint.

State (cookie choice, cart, accepted terms, signed-in user) lives on the server, keyed by a
session cookie, so every fresh browser context starts with an empty shop.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import itertools
import json
import re
import secrets
import socket
import socketserver
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from string import Template
from types import MappingProxyType, TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

__all__ = [
    "LABELS",
    "PASSWORD",
    "PRODUCTS",
    "STATUS_CONFIRMED",
    "STATUS_FAILED",
    "VARIANTS",
    "DemoShop",
    "Product",
]

VARIANTS = ("normal", "changed-ui", "broken-product")

# "Remember me": a login also sets this cookie, signed, so that a saved storage state (a
# Playwright storage-state file) starts a later session logged in, even after a restart.
REMEMBER_COOKIE = "demo_remember"
_REMEMBER_KEY = b"the demo shop signs its remember-me cookie with this"

# path -> (title, page file, kind): the pages of features/real_pages.feature
_REAL_PAGES = {
    "/help": ("Help", "help.html", "page"),
    "/help/questions": ("Questions", "help-questions.html", "bare"),
    "/help/contact": ("Contact", "help-contact.html", "bare"),
    "/newsletter": ("Newsletter", "newsletter.html", "page"),
    "/deals": ("Deals", "deals.html", "page"),
    "/deals/today": ("Deal of the day", "deal.html", "bare"),
    "/terms-of-sale": ("Terms of sale", "terms-of-sale.html", "bare"),
    "/returns": ("Returns", "returns.html", "page"),
    "/invoices": ("Invoices", "invoices.html", "page"),
    "/invoices/1001.txt": ("invoice-1001.txt", "invoice-1001.txt", "download"),
}


def remember_token(email: str) -> str:
    """The value of the remember-me cookie for ``email``."""
    signature = hmac.new(_REMEMBER_KEY, email.encode(), hashlib.sha256).hexdigest()[:24]
    return f"{email}|{signature}"


def _remembered(value: str | None) -> str | None:
    email = (value or "").partition("|")[0]
    return email if email and value and hmac.compare_digest(value, remember_token(email)) else None


PASSWORD = "secret"
STATUS_CONFIRMED = "order confirmed"
STATUS_FAILED = "order failed: payment service unavailable"
LOGIN_ERROR = "Invalid email or password"


@dataclass(frozen=True)
class Product:
    """One item of the catalogue; prices are in cents."""

    id: str
    name: str
    price_cents: int

    @property
    def price(self) -> str:
        return _money(self.price_cents)


PRODUCTS = (
    Product("mug", "Blue Mug", 1200),
    Product("tea", "Green Tea", 850),
    Product("notebook", "Paper Notebook", 500),
    Product("lamp", "Desk Lamp", 3990),
)
_PRODUCTS_BY_ID = {product.id: product for product in PRODUCTS}

_NORMAL_LABELS = {
    "cookie_region": "Cookie consent",
    "cookie_title": "We use cookies",
    "cookie_text": "We use cookies to remember your cart and your preferences.",
    "accept_cookies": "Accept cookies",
    "reject_cookies": "Necessary only",
    "products_title": "Products",
    "add_to_cart": "Add to cart",
    "added": "added to cart",
    "cart_word": "Cart",
    "cart_title": "Your cart",
    "cart_items": "Cart items",
    "cart_empty": "Your cart is empty.",
    "remove": "Remove",
    "checkout": "Checkout",
    "terms_title": "Terms and conditions",
    "accept_terms": "I accept the terms",
    "terms_required": "Please accept the terms to continue.",
    "terms_continue": "Continue",
    "terms_close": "Close",
    "email": "Email",
    "name": "Name",
    "password": "Password",
    "place_order": "Place order",
    "log_in": "Log in",
    "log_out": "Log out",
}
_CHANGED_LABELS = {
    **_NORMAL_LABELS,
    "cookie_region": "Privacy settings",
    "cookie_title": "Your privacy",
    "cookie_text": "This site uses cookies to keep your basket and your settings.",
    "accept_cookies": "Allow all",
    "reject_cookies": "Only essential",
    "products_title": "Our range",
    "add_to_cart": "Add to basket",
    "added": "added to basket",
    "cart_word": "Basket",
    "cart_title": "Your basket",
    "cart_items": "Basket items",
    "cart_empty": "Your basket is empty.",
    "remove": "Delete",
    "checkout": "Proceed to checkout",
    "terms_title": "Terms of sale",
    "accept_terms": "I agree to the terms",
    "terms_required": "Please agree to the terms to continue.",
    "terms_continue": "Next",
    "terms_close": "Cancel",
    "email": "E-mail address",
    "name": "Full name",
    "place_order": "Confirm purchase",
    "log_in": "Sign in",
    "log_out": "Sign out",
}
# The visible wording of every control, per variant; tests and examples may read it.
LABELS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "normal": MappingProxyType(_NORMAL_LABELS),
        "changed-ui": MappingProxyType(_CHANGED_LABELS),
        "broken-product": MappingProxyType(_NORMAL_LABELS),
    }
)

_STATIC = {"style.css": "text/css; charset=utf-8", "app.js": "text/javascript; charset=utf-8"}
_MAX_BODY = 64 * 1024
_MAX_SESSIONS = 10_000


def _money(cents: int) -> str:
    return f"${cents // 100}.{cents % 100:02d}"


def check_variant(variant: str) -> str:
    """Return ``variant`` if it is known, else raise ``ValueError`` listing the known ones."""
    if variant not in VARIANTS:
        allowed = ", ".join(VARIANTS)
        raise ValueError(f"unknown demo shop variant {variant!r}; expected one of: {allowed}")
    return variant


@cache
def _page_file(name: str) -> str:
    return (resources.files(__package__) / "pages" / name).read_text(encoding="utf-8")


@cache
def _template(name: str) -> Template:
    return Template(_page_file(name))


@cache
def _fragments() -> dict[str, Template]:
    parts = re.split(r"<!-- fragment: ([a-z_]+) -->\n", _page_file("fragments.html"))
    pairs = zip(parts[1::2], parts[2::2], strict=True)
    return {name: Template(body.rstrip("\n")) for name, body in pairs}


_NO_VALUES: Mapping[str, object] = MappingProxyType({})


def _fragment(which: str, values: Mapping[str, object] = _NO_VALUES, /, **more: object) -> str:
    return _fragments()[which].substitute(values, **more)


@dataclass
class _Session:
    cookies_answered: bool = False
    cart: dict[str, int] = field(default_factory=dict)
    terms_accepted: bool = False
    user: str | None = None

    @property
    def count(self) -> int:
        return sum(self.cart.values())

    @property
    def total_cents(self) -> int:
        return sum(_PRODUCTS_BY_ID[pid].price_cents * qty for pid, qty in self.cart.items())


@dataclass
class _Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def text(cls, text: str, status: int = 200) -> _Response:
        return cls(status, text.encode(), "text/plain; charset=utf-8")

    @classmethod
    def json_body(cls, payload: Mapping[str, Any], status: int = 200) -> _Response:
        return cls(status, json.dumps(payload).encode(), "application/json")

    @classmethod
    def redirect(cls, location: str) -> _Response:
        return cls(303, b"", "text/plain; charset=utf-8", [("Location", location)])


class _Request:
    """What a route needs: the session, the variant's labels and the submitted form."""

    def __init__(
        self,
        shop: DemoShop,
        session: _Session,
        path: str,
        form: Mapping[str, str],
        wants_json: bool,
    ) -> None:
        self.shop = shop
        self.session = session
        self.path = path
        self.form = form
        self.wants_json = wants_json
        self.variant = shop.variant
        self.labels = LABELS[self.variant]
        self.changed = self.variant == "changed-ui"
        self.remember: str | None = None  # a login to remember (set by post())
        self.forget = False  # a logout

    def page(self, title: str, content: str, status: int = 200) -> _Response:
        s, labels = self.session, self.labels
        banner = ""
        if not s.cookies_answered:
            banner = _fragment("cookie_banner", labels, next=html.escape(self.path))
        cart_link = _fragment("cart_link", labels, count=s.count)
        if s.user:
            account = _fragment("welcome", labels, user=html.escape(s.user))
        else:
            account = _fragment("login_link", labels)
        body = _template("layout.html").substitute(
            title=html.escape(title),
            banner_top="" if self.changed else banner,
            banner_bottom=banner if self.changed else "",
            nav_cart="" if self.changed else cart_link,
            header_cart=cart_link if self.changed else "",
            account=account,
            content=content,
        )
        return _Response(status, body.encode())

    def home(self) -> _Response:
        if self.changed:
            items = "\n".join(_product_html("product_card", p, self.labels) for p in PRODUCTS[::-1])
            products = _fragment("product_grid", self.labels, items=items)
        else:
            items = "\n".join(_product_html("product_item", p, self.labels) for p in PRODUCTS)
            products = _fragment("product_list", self.labels, items=items)
        return self.page("Home", _template("home.html").substitute(products=products))

    def cart(self) -> _Response:
        s, labels = self.session, self.labels
        if s.cart:
            items = "\n".join(
                _fragment(
                    "cart_item",
                    labels,
                    id=pid,
                    name=_PRODUCTS_BY_ID[pid].name,
                    qty=qty,
                    line_total=_money(_PRODUCTS_BY_ID[pid].price_cents * qty),
                )
                for pid, qty in s.cart.items()
            )
            body = _fragment("cart_filled", labels, items=items, total=_money(s.total_cents))
        else:
            body = _fragment("cart_empty", labels)
        content = _template("cart.html").substitute(cart_title=labels["cart_title"], body=body)
        return self.page(labels["cart_title"], content)

    def checkout(
        self, status: str = "", detail: str = "", error: str = "", http_status: int = 200
    ) -> _Response:
        s, labels = self.session, self.labels
        if not (s.cart and s.terms_accepted) and not status:
            return _Response.redirect("/cart")
        fields = [_fragment("email_field", labels), _fragment("name_field", labels)]
        if self.changed:
            fields.reverse()
        count = s.count
        summary = f"{count} item{'s' if count != 1 else ''}, total {_money(s.total_cents)}"
        content = _template("checkout.html").substitute(
            summary=summary if count else "",
            fields="\n".join(fields),
            error_hidden="" if error else "hidden",
            error=html.escape(error),
            place_order=labels["place_order"],
            status=html.escape(status),
            detail=html.escape(detail),
        )
        return self.page("Checkout", content, http_status)

    def login(self, error: str = "", email: str = "") -> _Response:
        if self.session.user and not error:
            body = _fragment("logged_in", user=html.escape(self.session.user))
        else:
            body = _fragment(
                "login_form",
                self.labels,
                email_value=html.escape(email),
                error_hidden="" if error else "hidden",
                error=html.escape(error),
            )
        return self.page(self.labels["log_in"], _template("login.html").substitute(body=body))

    def real_page(self, path: str) -> _Response:
        """The pages of the real-pages examples: frames, dialogs, tabs, uploads, downloads."""
        title, name, kind = _REAL_PAGES[path]
        if kind == "bare":  # a page that lives in a frame or a tab of its own
            return _Response(200, _page_file(name).encode())
        if kind == "download":
            disposition = ("Content-Disposition", f'attachment; filename="{title}"')
            return _Response(200, _page_file(name).encode(), "text/plain", [disposition])
        return self.page(title, _page_file(name))

    def promo(self) -> _Response:
        """A sale page with hidden instructions aimed at an LLM: the prompt-injection fixture."""
        return self.page("Spring sale", _page_file("promo.html"))

    def not_found(self) -> _Response:
        return self.page("Page not found", _fragment("not_found"), 404)

    def back(self, location: str, payload: Mapping[str, Any], status: int = 200) -> _Response:
        """Answer a script with JSON and a plain form post with a redirect."""
        if self.wants_json:
            return _Response.json_body(payload, status)
        return _Response.redirect(location)

    def post(self) -> _Response:
        s, form = self.session, self.form
        if self.path == "/consent":
            s.cookies_answered = True
            target = form.get("next", "/")
            safe = target.startswith("/") and not target.startswith("//")
            return self.back(target if safe else "/", {"ok": True})
        if self.path == "/cart/add":
            product = _PRODUCTS_BY_ID.get(form.get("product", ""))
            if product is None:
                return self.back("/", {"ok": False, "error": "Unknown product."}, 400)
            s.cart[product.id] = s.cart.get(product.id, 0) + 1
            message = f"{product.name} {self.labels['added']}."
            return self.back("/", {"ok": True, "count": s.count, "message": message})
        if self.path == "/cart/remove":
            s.cart.pop(form.get("product", ""), None)
            if not s.cart:
                s.terms_accepted = False
            return self.back("/cart", {"ok": True, "count": s.count})
        if self.path == "/terms":
            if form.get("accept") == "yes" and s.cart:
                s.terms_accepted = True
                return _Response.redirect("/checkout")
            return _Response.redirect("/cart")
        if self.path == "/order":
            return self.order()
        if self.path == "/login":
            email, password = form.get("email", "").strip(), form.get("password", "")
            if not email or password != PASSWORD:
                return self.login(LOGIN_ERROR, email)
            s.user = email.split("@", 1)[0] or email
            self.remember = email
            return _Response.redirect("/")
        if self.path == "/logout":
            s.user = None
            self.forget = True
            return _Response.redirect("/")
        return self.not_found()

    def order(self) -> _Response:
        s, form = self.session, self.form
        email, name = form.get("email", "").strip(), form.get("name", "").strip()
        error = ""
        if not (s.cart and s.terms_accepted):
            error = "Your cart is empty or the terms are not accepted."
        elif not email or "@" not in email:
            error = "Please enter a valid email address."
        elif not name:
            error = "Please enter your name."
        if error:
            if self.wants_json:
                return _Response.json_body({"ok": False, "error": error}, 400)
            return self.checkout(error=error, http_status=400)
        if self.variant == "broken-product":
            if self.wants_json:
                return _Response.json_body({"ok": False, "status": STATUS_FAILED}, 503)
            return self.checkout(status=STATUS_FAILED, http_status=503)
        number = next(self.shop._order_numbers)
        s.cart.clear()
        s.terms_accepted = False
        detail = f"Thank you, {name}. Your order number is {number}."
        if self.wants_json:
            return _Response.json_body(
                {"ok": True, "status": STATUS_CONFIRMED, "detail": detail, "count": 0}
            )
        return self.checkout(status=STATUS_CONFIRMED, detail=detail)


def _product_html(fragment: str, product: Product, labels: Mapping[str, str]) -> str:
    return _fragment(fragment, labels, id=product.id, name=product.name, price=product.price)


class _Handler(BaseHTTPRequestHandler):
    server: _ShopServer
    server_version = "DemoShop/1"
    # Headers and body go out as two writes; with Nagle on, delayed ACKs stall each response.
    disable_nagle_algorithm = True
    # A browser may park idle speculative connections; do not let them pin a thread forever.
    timeout = 10

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: the shop runs inside test output."""

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        try:
            response = self._respond(method)
        except Exception:
            traceback.print_exc(file=sys.stderr)
            response = _Response.text("internal error", 500)
        self._send(response)

    def _respond(self, method: str) -> _Response:
        shop = self.server.shop
        url = urlsplit(self.path)
        path = url.path
        if path == "/health":
            return _Response.text("ok")
        if path.startswith("/static/") and method == "GET":
            name = path.removeprefix("/static/")
            if name in _STATIC:
                return _Response(200, _page_file(name).encode(), _STATIC[name])
            return _Response.text("not found", 404)
        raw = self._read_body() if method == "POST" else b""
        if path == "/__variant":
            return self._variant(method, url.query, raw)
        form = {k: v[0] for k, v in parse_qs(raw.decode("utf-8", "replace"), True).items()}
        wants_json = "application/json" in self.headers.get("Accept", "")
        cookie_name = shop.cookie_name
        token = _cookie(self.headers.get("Cookie", ""), cookie_name)
        slow = False
        with shop._lock:
            session, new_token = shop._session(token)
            remembered = _remembered(_cookie(self.headers.get("Cookie", ""), REMEMBER_COOKIE))
            if new_token and remembered:  # "remember me": a fresh session of a known user
                session.user = remembered.split("@", 1)[0]
            request = _Request(shop, session, path, form, wants_json)
            if method == "POST":
                slow = path == "/order"
                response = request.post()
            elif path == "/":
                response = request.home()
            elif path == "/cart":
                response = request.cart()
            elif path == "/checkout":
                response = request.checkout()
            elif path == "/login":
                response = request.login()
            elif path == "/promo":
                response = request.promo()
            elif path in _REAL_PAGES:
                response = request.real_page(path)
            else:
                response = request.not_found()
        if new_token:
            response.headers.append(
                ("Set-Cookie", f"{cookie_name}={new_token}; Path=/; HttpOnly; SameSite=Lax")
            )
        if request.remember:
            remember = f"{REMEMBER_COOKIE}={remember_token(request.remember)}; Path=/; SameSite=Lax"
            response.headers.append(("Set-Cookie", remember))
        if request.forget:
            response.headers.append(("Set-Cookie", f"{REMEMBER_COOKIE}=; Path=/; Max-Age=0"))
        if slow:
            # A real payment call takes a moment; tests must wait for the outcome, not assume it.
            time.sleep(shop.order_delay)
        return response

    def _variant(self, method: str, query: str, raw: bytes) -> _Response:
        shop = self.server.shop
        wanted = parse_qs(query).get("set", [""])[0]
        if method == "POST":
            text = raw.decode("utf-8", "replace").strip()
            fields = parse_qs(text)
            wanted = (fields.get("variant") or fields.get("set") or [text])[0].strip()
        if wanted:
            try:
                shop.set_variant(wanted)
            except ValueError as exc:
                return _Response.text(str(exc), 400)
        return _Response.text(shop.variant)

    def _read_body(self) -> bytes:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = 0
        return self.rfile.read(min(max(length, 0), _MAX_BODY)) if length else b""

    def _send(self, response: _Response) -> None:
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        # Pages change with the variant, so nothing may be served from cache.
        self.send_header("Cache-Control", "no-store")
        for name, value in response.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(response.body)


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name:
            return value
    return None


class _ShopServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], shop: DemoShop) -> None:
        self.shop = shop
        super().__init__(address, _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind resolves the host name, which can stall without DNS.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name = str(host)
        self.server_port = int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class _ShopServer6(_ShopServer):
    address_family = socket.AF_INET6


class DemoShop:
    """The demo shop served from a background thread.

    >>> with DemoShop(variant="changed-ui") as shop:  # doctest: +SKIP
    ...     shop.url
    'http://127.0.0.1:41234'
    """

    order_delay = 0.3

    def __init__(self, port: int = 0, variant: str = "normal", host: str = "127.0.0.1") -> None:
        self.host = host
        self.port = port
        self._variant = check_variant(variant)
        self._lock = threading.Lock()
        self._sessions: dict[str, _Session] = {}
        self._order_numbers = itertools.count(1001)
        self._server: _ShopServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def variant(self) -> str:
        return self._variant

    def set_variant(self, variant: str) -> None:
        """Switch the running (or not yet started) shop to another variant."""
        self._variant = check_variant(variant)

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the demo shop is not running; call start() first")
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    @property
    def cookie_name(self) -> str:
        # Cookies ignore the port, so two shops on one host must not share a session cookie.
        return f"demo_shop_{self.port}"

    def start(self) -> DemoShop:
        """Bind and serve in a daemon thread; returns once the socket accepts connections."""
        if self._server is not None:
            raise RuntimeError("the demo shop is already running")
        server_cls = _ShopServer6 if ":" in self.host else _ShopServer
        server = server_cls((self.host, self.port), self)
        self.port = server.server_port
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": 0.1},
            name=f"demo-shop-{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port; safe to call twice."""
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> DemoShop:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "stopped"
        return f"DemoShop({self._variant!r}, {where})"

    def _session(self, token: str | None) -> tuple[_Session, str | None]:
        """The session for ``token``, or a new one and its token. Call with the lock held."""
        if token is not None and token in self._sessions:
            return self._sessions[token], None
        if len(self._sessions) >= _MAX_SESSIONS:
            # Dicts keep insertion order, so this forgets the oldest session.
            del self._sessions[next(iter(self._sessions))]
        token = secrets.token_urlsafe(16)
        session = self._sessions[token] = _Session()
        return session, token
