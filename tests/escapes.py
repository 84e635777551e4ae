"""Known ways out of a Python sandbox, each as a complete piece of step code.

Every entry must be refused by the code policy; the cache tests also plant each one in a
cache file and expect the entry to be refused on replay.
"""

from __future__ import annotations

import textwrap


def _step(body: str) -> str:
    """A ``def step(page):`` around ``body``."""
    return "def step(page):\n" + textwrap.indent(textwrap.dedent(body).strip("\n"), "    ") + "\n"


ESCAPES: dict[str, str] = {
    # imports
    "import_os": _step('import os\nos.system("id")'),
    "import_os_module_level": 'import os\n\n\ndef step(page):\n    os.system("id")\n',
    "from_os_import_system": _step('from os import system\nsystem("id")'),
    "dunder_import": _step('__import__("os").system("id")'),
    # object graph walks and string-built attribute names
    "subclasses_walk": _step("().__class__.__base__.__subclasses__()"),
    "private_proxy_target": _step('page._target.evaluate("document.cookie")'),
    "getattr_dunder": _step('getattr(page, "__class__")'),
    "getattr_chr_join": _step(
        'getattr(page, "".join([chr(95), chr(95), "class", chr(95), chr(95)]))'
    ),
    "str_format_field": _step('"{0.__class__.__init__.__globals__}".format(page)'),
    "str_format_unbound": _step('str.format("{0.__class__}", page)'),
    "format_map": _step('"{p.__class__}".format_map({"p": page})'),
    "format_builtin": _step('format(page, "")'),
    "operator_attrgetter": _step('operator.attrgetter("__class__")(page)'),
    "mro_walk": _step("str.mro()"),
    # frames
    "generator_frame": _step('(x for x in []).gi_frame.f_globals["__builtins__"]'),
    "frame_via_call_chain": _step('page.title().gi_frame.f_back.f_globals["__builtins__"]'),
    "attribute_error_obj": _step(
        """
        try:
            page.missing
        except AttributeError as error:
            error.obj.context
        """
    ),
    "try_star": _step(
        """
        try:
            page.missing
        except* AttributeError as group:
            group.exceptions[0].obj.context
        """
    ),
    # scopes and constructs outside the allowlist
    "lambda": _step("leak = lambda: page.context\nleak()"),
    "list_comprehension_scope": _step("[p.context for p in [page]]"),
    "while_true": _step("while True:\n    pass"),
    "nested_def": _step("def inner():\n    return page.context\ninner()"),
    "class_def": _step("class Evil:\n    pass"),
    "with_statement": _step('with open("/etc/passwd") as handle:\n    handle.read()'),
    "global_statement": _step("global leaked\nleaked = page"),
    "walrus": _step("(found := page)"),
    "starred_call": _step('page.fill(*["#q", "x"])'),
    "double_starred_call": _step('page.get_by_role("button", **{"name": "Go"}).click()'),
    "raise_statement": _step("raise SystemExit(1)"),
    "del_statement": _step("del page"),
    "assign_attribute": _step("page.goto = page.click"),
    "recursion": _step("step(page)"),
    "huge_power": _step("size = 10 ** 10 ** 10"),
    "nested_loops": _step(
        """
        for a in range(3):
            for b in range(3):
                for c in range(3):
                    pass
        """
    ),
    "async_step": "async def step(page):\n    await page.goto('/')\n",
    "decorated_step": "@print\ndef step(page):\n    pass\n",
    "default_argument": 'def step(page, os=__import__("os")):\n    pass\n',
    "too_long": _step("pass\n" * 250),
    # refused builtins
    "globals": _step('globals()["__builtins__"]'),
    "eval": _step('eval("1")'),
    "exec": _step('exec("import os")'),
    "compile": _step('compile("1", "x", "eval")'),
    "open": _step('open("/etc/passwd").read()'),
    "vars": _step("vars(page)"),
    "type": _step("type(page)"),
    "breakpoint": _step("breakpoint()"),
    "print": _step("print(page.url)"),
    # page capabilities outside the allowlist
    "goto_file": _step('page.goto("file:///etc/passwd")'),
    "goto_file_fstring": _step('page.goto(f"file:///etc/{page.title()}")'),
    "goto_chrome": _step('page.goto("chrome://settings")'),
    "goto_data": _step('page.goto("data:text/html,<script>alert(1)</script>")'),
    "goto_javascript": _step('page.goto(url=" java\\tscript:alert(document.cookie)")'),
    "evaluate": _step('page.evaluate("document.cookie")'),
    "evaluate_handle": _step('page.evaluate_handle("window")'),
    "locator_evaluate_all": _step('page.locator("a").evaluate_all("els => els.length")'),
    "set_input_files": _step('page.locator("input").set_input_files("/etc/passwd")'),
    "screenshot": _step('page.screenshot(path="/tmp/x.png")'),
    "pdf": _step('page.pdf(path="/tmp/x.pdf")'),
    "context_cookies": _step("page.context.cookies()"),
    "request_get": _step('page.request.get("http://x")'),
    "route": _step('page.route("**", len)'),
    "expose_function": _step('page.expose_function("leak", len)'),
    "add_init_script": _step('page.add_init_script("window.x = 1")'),
    "event_listener": _step('page.on("console", len)'),
    "expect_navigation": _step("page.expect_navigation()"),
    "main_frame": _step('page.main_frame.evaluate("1")'),
    "set_content": _step("page.set_content(\"<script>fetch('/x')</script>\")"),
    "locator_page": _step('page.get_by_role("button").page.evaluate("1")'),
    # secrets may only be typed
    "secret_into_local": _step('password = secret("PASSWORD")\npage.fill("#q", password)'),
    "secret_into_expect": _step('expect(page.get_by_text(secret("PASSWORD"))).to_be_visible()'),
    "secret_as_selector": _step('page.fill(secret("PASSWORD"), "x")'),
    "secret_in_url": _step('page.goto("/login?pw=" + secret("PASSWORD"))'),
}
