"""The examples run against the demo shop, started here unless a base_url is configured."""

import os

from prettyplay_behave.behave import use_prettyplay
from prettyplay_behave.demo.server import DemoShop


def before_all(context):
    userdata = context.config.userdata
    if "prettyplay.base_url" in userdata or "PRETTYPLAY_BASE_URL" in os.environ:
        return
    variant = userdata.get("demo.variant", "normal")
    context.demo_shop = DemoShop(variant=variant).start()
    userdata["prettyplay.base_url"] = context.demo_shop.url


def after_all(context):
    if getattr(context, "demo_shop", None):
        context.demo_shop.stop()


use_prettyplay(globals())
