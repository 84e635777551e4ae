"""What an element is to a user, read in the page: its role (explicit or implicit), an
approximate accessible name, its test id, its own text and its tag. The evidence a green run
keeps of what its locators found, and what a page offers in their place later.

Never a field's value: a text field's name comes from its label, never from what was typed.
Each text comes as long as the caller asks (``chars``): the caller redacts it before it cuts it
shorter, so a secret the page shows across the cut is never kept in part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Locator

if TYPE_CHECKING:
    from playwright.sync_api import Page

PAGE_LIMIT = 400  # the elements one reading of a page returns at most

# One element's properties, each text at most ``chars`` long; the implicit roles are the common
# ones of HTML-AAM.
_DESCRIBE = """
const squeeze = (text) => (text || "").replace(/\\s+/g, " ").trim().slice(0, chars);
const INPUT_ROLES = {button: "button", submit: "button", reset: "button", image: "button",
  checkbox: "checkbox", radio: "radio", range: "slider", number: "spinbutton",
  search: "searchbox", email: "textbox", tel: "textbox", text: "textbox", url: "textbox",
  password: "textbox"};
const TAG_ROLES = {BUTTON: "button", SUMMARY: "button", TEXTAREA: "textbox", NAV: "navigation",
  MAIN: "main", UL: "list", OL: "list", LI: "listitem", TABLE: "table", TR: "row", TD: "cell",
  TH: "columnheader", DIALOG: "dialog", ARTICLE: "article", HEADER: "banner",
  FOOTER: "contentinfo", ASIDE: "complementary", OPTION: "option", PROGRESS: "progressbar",
  FIELDSET: "group", DETAILS: "group", H1: "heading", H2: "heading", H3: "heading",
  H4: "heading", H5: "heading", H6: "heading"};
const FROM_CONTENT = new Set(["button", "link", "heading", "cell", "columnheader", "option",
  "tab", "menuitem", "checkbox", "radio", "switch", "listitem", "row"]);
const FIELDS = new Set(["INPUT", "TEXTAREA", "SELECT"]);
const roleOf = (el) => {
  const explicit = (el.getAttribute("role") || "").trim().split(/\\s+/)[0];
  if (explicit) return explicit;
  const tag = el.tagName;
  if (tag === "A" || tag === "AREA") return el.hasAttribute("href") ? "link" : "";
  if (tag === "INPUT") {
    const type = (el.getAttribute("type") || "text").toLowerCase();
    if (el.hasAttribute("list") && INPUT_ROLES[type] === "textbox") return "combobox";
    return INPUT_ROLES[type] || "";
  }
  if (tag === "SELECT") return el.multiple || el.size > 1 ? "listbox" : "combobox";
  if (tag === "IMG") return el.getAttribute("alt") === "" ? "presentation" : "img";
  if (tag === "FORM" || tag === "SECTION") {
    return el.hasAttribute("aria-label") || el.hasAttribute("aria-labelledby")
      ? (tag === "FORM" ? "form" : "region") : "";
  }
  return TAG_ROLES[tag] || "";
};
const nameOf = (el, role) => {
  const by = (el.getAttribute("aria-labelledby") || "").split(/\\s+/)
    .map((id) => document.getElementById(id)).filter(Boolean);
  if (by.length) return squeeze(by.map((other) => other.innerText).join(" "));
  if (el.getAttribute("aria-label")) return squeeze(el.getAttribute("aria-label"));
  if (el.labels && el.labels.length) return squeeze(el.labels[0].innerText);
  if (el.tagName === "IMG" && el.getAttribute("alt")) return squeeze(el.getAttribute("alt"));
  if (el.tagName === "INPUT" && ["button", "submit", "reset"].includes(el.type)) {
    return squeeze(el.value);  // a button's caption, never a field's value
  }
  if (FROM_CONTENT.has(role) && !FIELDS.has(el.tagName)) return squeeze(el.innerText);
  if (role === "dialog" || role === "article" || role === "region" || role === "form") {
    const heading = el.querySelector("h1, h2, h3, h4, h5, h6");
    if (heading) return squeeze(heading.innerText);
  }
  return squeeze(el.getAttribute("placeholder") || el.getAttribute("title") || "");
};
const describe = (el, attr) => {
  const role = roleOf(el).slice(0, chars);
  return {
    role, name: nameOf(el, role), testId: (el.getAttribute(attr) || "").slice(0, chars),
    text: FIELDS.has(el.tagName) ? "" : squeeze(el.innerText),
    tag: el.tagName.toLowerCase().slice(0, chars),
  };
};
"""

_OF_LOCATOR = (
    f"(elements, [attr, chars]) => {{ {_DESCRIBE} "
    "return elements.map((el) => describe(el, attr)); }"
)

# Every element a locator could be rewritten to find, within some roots: one with a role or a
# test id, shown.
_WITHIN = f"""{_DESCRIBE}
const within = (roots, attr, limit) => {{
  const out = [];
  for (const root of roots) {{
    for (const el of root.querySelectorAll("*")) {{
      if (out.length >= limit) return out;
      const role = roleOf(el);
      if ((!role || role === "presentation") && !el.hasAttribute(attr)) continue;
      if (el.getClientRects().length === 0) continue;
      out.push(describe(el, attr));
    }}
  }}
  return out;
}};"""
_OF_PAGE = (
    f"([attr, chars, limit]) => {{ {_WITHIN} "
    "return within(document.body ? [document.body] : [], attr, limit); }"
)
_INSIDE = f"(roots, [attr, chars, limit]) => {{ {_WITHIN} return within(roots, attr, limit); }}"


def describe_all(locator: Locator, test_id_attribute: str, chars: int) -> list[dict[str, Any]]:
    """The properties of every element ``locator`` finds now, without waiting, each text at
    most ``chars`` long; none when the page cannot be read (it is navigating, it closed)."""
    try:
        found: list[dict[str, Any]] = locator.evaluate_all(_OF_LOCATOR, [test_id_attribute, chars])
    except PlaywrightError:
        return []
    return found


def elements_within(
    scope: Page | Locator, test_id_attribute: str, chars: int
) -> list[dict[str, Any]]:
    """The properties of the shown elements with a role or a test id in ``scope`` (the page,
    or inside what a locator finds), in document order, at most ``PAGE_LIMIT``; each text at
    most ``chars`` long."""
    arguments = [test_id_attribute, chars, PAGE_LIMIT]
    try:
        if isinstance(scope, Locator):
            found: list[dict[str, Any]] = scope.evaluate_all(_INSIDE, arguments)
        else:
            found = scope.evaluate(_OF_PAGE, arguments)
    except PlaywrightError:
        return []
    return found
