"""Which frame receives what step code types or uploads, and its origin.

Only the frames of a page are read here, through Playwright's own records of them (their URLs,
their parents, the frame that owns an element): nothing the page's own scripts could answer
falsely. A frame without a URL of its own (``about:blank``, ``about:srcdoc``) has the origin of
the frame that holds it. The one question put to a page's script, which element has the focus,
is only asked of frames of allowed origins: the app's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Frame, Locator, Page

MAX_FRAME_DEPTH = 32  # frames nested deeper than this are not followed for the focus


def origin_url(frame: Frame) -> str:
    """The URL that gives ``frame`` its origin: its own, or its parent's for ``about:`` ones."""
    current: Frame | None = frame
    while current is not None:
        if current.url and not current.url.startswith("about:"):
            return current.url
        current = current.parent_frame
    return "about:blank"


def outside_frames(page: Page, allowed: Callable[[str], bool]) -> bool:
    """Whether any frame of ``page`` is of an origin outside the bounds (no round trip)."""
    return any(not allowed(origin_url(frame)) for frame in page.frames)


def element_frame(locator: Locator, timeout: float) -> Frame | None:
    """The frame that holds the element ``locator`` resolves to (it is waited for)."""
    handle = locator.element_handle(timeout=max(1.0, timeout))
    try:
        return handle.owner_frame()
    finally:
        handle.dispose()


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
