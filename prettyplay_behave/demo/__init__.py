"""The demo shop that the example features and the test suite run against."""

from .server import LABELS, VARIANTS, DemoShop

__all__ = ["LABELS", "VARIANTS", "DemoShop"]
