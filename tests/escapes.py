"""Known ways out of a Python sandbox, each as a complete piece of step code.

Every entry must be refused by the code policy; the cache tests also plant each one in a
cache file and expect the entry to be refused on replay.
"""

from __future__ import annotations

from tests.support.code import step

ESCAPES: dict[str, str] = {
    # imports
    "import_os": step('import os\nos.system("id")'),
    "import_os_module_level": 'import os\n\n\ndef step(page):\n    os.system("id")\n',
    "from_os_import_system": step('from os import system\nsystem("id")'),
    "dunder_import": step('__import__("os").system("id")'),
    # object graph walks and string-built attribute names
    "subclasses_walk": step("().__class__.__base__.__subclasses__()"),
    "private_proxy_target": step('page._target.evaluate("document.cookie")'),
    "getattr_dunder": step('getattr(page, "__class__")'),
    "getattr_chr_join": step(
        'getattr(page, "".join([chr(95), chr(95), "class", chr(95), chr(95)]))'
    ),
    "str_format_field": step('"{0.__class__.__init__.__globals__}".format(page)'),
    "str_format_unbound": step('str.format("{0.__class__}", page)'),
    "format_map": step('"{p.__class__}".format_map({"p": page})'),
    "format_builtin": step('format(page, "")'),
    "operator_attrgetter": step('operator.attrgetter("__class__")(page)'),
    "mro_walk": step("str.mro()"),
    # frames
    "generator_frame": step('(x for x in []).gi_frame.f_globals["__builtins__"]'),
    "frame_via_call_chain": step('page.title().gi_frame.f_back.f_globals["__builtins__"]'),
    "attribute_error_obj": step(
        """
        try:
            page.missing
        except AttributeError as error:
            error.obj.context
        """
    ),
    "try_star": step(
        """
        try:
            page.missing
        except* AttributeError as group:
            group.exceptions[0].obj.context
        """
    ),
    # scopes and constructs outside the allowlist
    "lambda": step("leak = lambda: page.context\nleak()"),
    "list_comprehension_scope": step("[p.context for p in [page]]"),
    "while_true": step("while True:\n    pass"),
    "nested_def": step("def inner():\n    return page.context\ninner()"),
    "class_def": step("class Evil:\n    pass"),
    "with_statement": step('with open("/etc/passwd") as handle:\n    handle.read()'),
    "global_statement": step("global leaked\nleaked = page"),
    "walrus": step("(found := page)"),
    "starred_call": step('page.fill(*["#q", "x"])'),
    "double_starred_call": step('page.get_by_role("button", **{"name": "Go"}).click()'),
    "raise_statement": step("raise SystemExit(1)"),
    "del_statement": step("del page"),
    "assign_attribute": step("page.goto = page.click"),
    "recursion": step("step(page)"),
    "huge_power": step("size = 10 ** 10 ** 10"),
    "nested_loops": step(
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
    "too_long": step("pass\n" * 250),
    # refused builtins
    "globals": step('globals()["__builtins__"]'),
    "eval": step('eval("1")'),
    "exec": step('exec("import os")'),
    "compile": step('compile("1", "x", "eval")'),
    "open": step('open("/etc/passwd").read()'),
    "vars": step("vars(page)"),
    "type": step("type(page)"),
    "breakpoint": step("breakpoint()"),
    "print": step("print(page.url)"),
    # page capabilities outside the allowlist
    "goto_file": step('page.goto("file:///etc/passwd")'),
    "goto_file_fstring": step('page.goto(f"file:///etc/{page.title()}")'),
    "goto_chrome": step('page.goto("chrome://settings")'),
    "goto_data": step('page.goto("data:text/html,<script>alert(1)</script>")'),
    "goto_javascript": step('page.goto(url=" java\\tscript:alert(document.cookie)")'),
    "evaluate": step('page.evaluate("document.cookie")'),
    "evaluate_handle": step('page.evaluate_handle("window")'),
    "locator_evaluate_all": step('page.locator("a").evaluate_all("els => els.length")'),
    "set_input_files": step('page.locator("input").set_input_files("/etc/passwd")'),
    "screenshot": step('page.screenshot(path="/tmp/x.png")'),
    "pdf": step('page.pdf(path="/tmp/x.pdf")'),
    "context_cookies": step("page.context.cookies()"),
    "request_get": step('page.request.get("http://x")'),
    "route": step('page.route("**", len)'),
    "expose_function": step('page.expose_function("leak", len)'),
    "add_init_script": step('page.add_init_script("window.x = 1")'),
    "event_listener": step('page.on("console", len)'),
    "expect_navigation": step("page.expect_navigation()"),
    "main_frame": step('page.main_frame.evaluate("1")'),
    "set_content": step("page.set_content(\"<script>fetch('/x')</script>\")"),
    "locator_page": step('page.get_by_role("button").page.evaluate("1")'),
    # secrets may only be typed
    "secret_into_local": step('password = secret("PASSWORD")\npage.fill("#q", password)'),
    "secret_into_expect": step('expect(page.get_by_text(secret("PASSWORD"))).to_be_visible()'),
    "secret_as_selector": step('page.fill(secret("PASSWORD"), "x")'),
    "secret_in_url": step('page.goto("/login?pw=" + secret("PASSWORD"))'),
}
