"""Serve the demo shop until interrupted: ``python -m prettyplay_behave.demo``."""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType

from .server import VARIANTS, DemoShop


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m prettyplay_behave.demo",
        description="Serve the prettyplay demo shop.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port; 0 picks a free one")
    parser.add_argument("--variant", choices=VARIANTS, default="normal", help="shop variant")
    args = parser.parse_args(argv)

    shop = DemoShop(port=args.port, variant=args.variant, host=args.host)
    try:
        shop.start()
    except OSError as exc:
        parser.exit(1, f"error: cannot serve on {args.host}:{args.port}: {exc}\n")
    # A plain SIGTERM (kill, a test harness) should stop as cleanly as Ctrl+C, also one sent
    # the moment the URL is out, before the wait begins.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        print(
            f"Demo shop ({shop.variant}) serving at {shop.url} - press Ctrl+C to stop", flush=True
        )
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        shop.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
