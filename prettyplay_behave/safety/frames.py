"""Which frame or window receives what step code types, clicks or uploads, and its origin.

Only the frames of a page are read here, through Playwright's and the browser's own records of
them (their URLs, their parents, the frame that owns an element, the frame that opened a window,
the boxes of frame elements): nothing the page's own scripts could answer falsely. A frame
without a URL of its own (``about:blank``, ``about:srcdoc``) has the origin of the frame that
holds it; a window without one (a blank window a script opened) has the origin of the frame that
opened it, so a blank window opened by another origin's frame is of that origin. The one
question put to a page's script, which element has the focus, is only asked of frames of allowed
origins: the app's own.

Pointer input is judged by place: a point, or an element's box, that lies over the box of a
frame of another origin would reach that frame, whatever element the page shows there.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from playwright.sync_api import Error as PlaywrightError

from .origins import OPAQUE

if TYPE_CHECKING:
    from playwright.sync_api import ElementHandle, Frame, Locator, Page

MAX_FRAME_DEPTH = 32  # frames nested deeper than this are not followed for the focus
MAX_OPENERS = 8  # a chain of blank windows, each opened by the one before, is followed this far
BLANK = "about:blank"


def origin_url(frame: Frame) -> str:
    """The URL that gives ``frame`` its origin: its own, its parent's for ``about:`` frames, and
    for a window without a URL of its own, that of the frame that opened it (``"null"`` when
    that frame cannot be known: it counts as outside every bound)."""
    current: Frame | None = frame
    while current is not None:
        if current.url and not current.url.startswith("about:"):
            return current.url
        if current.parent_frame is None:
            return opener_url(current.page)
        current = current.parent_frame
    return BLANK


def opener_url(page: Page, depth: int = 0) -> str:
    """The URL giving its origin to the frame that opened ``page`` (a window without a URL of
    its own); ``about:blank`` for a window nothing opened (an origin of its own)."""
    if depth > MAX_OPENERS:
        return OPAQUE
    try:
        session = page.context.new_cdp_session(page)
    except PlaywrightError:  # no DevTools (Firefox, WebKit): judged by the opening page
        return _opener_page_url(page, depth)
    try:
        info = session.send("Target.getTargetInfo")["targetInfo"]
    except PlaywrightError:
        return OPAQUE
    finally:
        _detach(session)
    if not info.get("openerId"):
        return BLANK
    opener = page.opener()
    frame_id = info.get("openerFrameId")
    if opener is None or not frame_id:  # the opener is closed: which origin it had is unknown
        return OPAQUE
    return _frame_url(opener, str(frame_id), depth)


def _frame_url(page: Page, frame_id: str, depth: int) -> str:
    """The origin-giving URL of the frame ``frame_id`` of ``page``, from the browser's tree."""
    session = page.context.new_cdp_session(page)
    try:
        tree = session.send("Page.getFrameTree")["frameTree"]
    except PlaywrightError:
        return OPAQUE
    finally:
        _detach(session)
    frames: dict[str, tuple[str, str | None]] = {}  # id -> (URL, parent id)
    pending: list[tuple[dict[str, Any], str | None]] = [(tree, None)]
    while pending:
        node, parent = pending.pop()
        frames[node["frame"]["id"]] = (node["frame"].get("url", ""), parent)
        pending += [(child, node["frame"]["id"]) for child in node.get("childFrames", ())]
    current: str | None = frame_id
    while current is not None and current in frames:
        url, current = frames[current][0], frames[current][1]
        if url and not url.startswith("about:"):
            return url
    if current is None and frame_id in frames:  # up to the page's own blank main frame
        return opener_url(page, depth + 1)
    return OPAQUE


def _opener_page_url(page: Page, depth: int) -> str:
    """Without the browser's record of the opening frame: the opening page's, when it has one
    frame, else unknown (any of its frames may have opened the window)."""
    opener = page.opener()
    if opener is None:
        return BLANK
    if len(opener.frames) != 1:
        return OPAQUE
    url = opener.main_frame.url
    return url if url and not url.startswith("about:") else opener_url(opener, depth + 1)


def _detach(session: Any) -> None:
    with suppress(PlaywrightError):  # the page closed meanwhile
        session.detach()


def outside_frames(page: Page, allowed: Callable[[str], bool]) -> bool:
    """Whether any frame of ``page`` is of an origin outside the bounds (no round trip, but for
    a window without a URL of its own)."""
    return any(not allowed(origin_url(frame)) for frame in page.frames)


def element_frame(locator: Locator, timeout: float) -> Frame | None:
    """The frame that holds the element ``locator`` resolves to (it is waited for)."""
    handle = one_handle(locator, timeout)
    try:
        return handle.owner_frame()
    finally:
        handle.dispose()


def one_handle(locator: Locator, timeout: float) -> ElementHandle:
    """The handle of the one element ``locator`` resolves to: at once when it is there (one
    round trip), else as Playwright waits for it (polling, which raises on many elements)."""
    found = locator.element_handles()
    if len(found) == 1:
        return found[0]
    for handle in found:
        handle.dispose()
    return locator.element_handle(timeout=max(1.0, timeout))


def focused_frame(page: Page, allowed: Callable[[str], bool]) -> Frame:
    """The frame whose element has the keyboard focus; the search stops at the first frame of
    another origin on the way (its own script is never asked)."""
    frame = page.main_frame
    for _ in range(MAX_FRAME_DEPTH):
        handle = frame.evaluate_handle("() => document.activeElement")
        try:
            element = handle.as_element()
            child = element.content_frame() if element is not None else None
        finally:
            handle.dispose()
        if child is None:
            return frame
        frame = child
        if not allowed(origin_url(frame)):
            return frame
    return frame


@dataclass(frozen=True)
class Box:
    """A rectangle in the page's viewport, in CSS pixels."""

    x: float
    y: float
    width: float
    height: float

    @classmethod
    def of(cls, found: Any) -> Box | None:
        return None if found is None else cls(*(found[k] for k in ("x", "y", "width", "height")))

    def holds(self, x: float, y: float) -> bool:
        return self.x <= x <= self.x + self.width and self.y <= y <= self.y + self.height

    def meets(self, other: Box) -> bool:
        return not (
            other.x > self.x + self.width
            or other.x + other.width < self.x
            or other.y > self.y + self.height
            or other.y + other.height < self.y
        )


EVERYWHERE = Box(float("-inf"), float("-inf"), float("inf"), float("inf"))


@dataclass(frozen=True)
class ForeignFrame:
    """A frame of an origin outside the bounds, and where its element lies on the page."""

    url: str
    box: Box


def foreign_frames(page: Page, allowed: Callable[[str], bool]) -> list[ForeignFrame]:
    """The frames of ``page`` of origins outside the bounds, with their boxes (Playwright's
    layout records, not the page's script); a page whose own document is outside lies
    everywhere. Frames inside a foreign frame are covered by its box; a frame that shows
    nothing (no box) receives no pointer."""
    found: list[ForeignFrame] = []
    main = origin_url(page.main_frame)
    if not allowed(main):
        return [ForeignFrame(main, EVERYWHERE)]
    for frame in page.frames:
        if frame.parent_frame is None or not allowed(origin_url(frame.parent_frame)):
            continue
        url = origin_url(frame)
        if allowed(url):
            continue
        try:
            element = frame.frame_element()
            box = Box.of(element.bounding_box())
            element.dispose()
        except PlaywrightError:  # detached meanwhile: it receives nothing
            continue
        if box is not None:
            found.append(ForeignFrame(url, box))
    return found


def frame_at(frames: list[ForeignFrame], x: float, y: float) -> ForeignFrame | None:
    """The foreign frame whose box holds the point (x, y), if any."""
    return next((frame for frame in frames if frame.box.holds(x, y)), None)


def frame_over(frames: list[ForeignFrame], box: Box) -> ForeignFrame | None:
    """The foreign frame whose box meets ``box``, if any."""
    return next((frame for frame in frames if frame.box.meets(box)), None)
