"""A screenshot of a page of the leaderboard site (`marl leaderboard --site DIR`) in headless
Chromium, the system's (Debian's `chromium`) through Playwright; no browser download, no
network. `chromium()` is also what tests/test_site_browser.py drives.

    python scripts/site_screenshot.py results/site/index.html \
        docs/pages/assets/site-overview-desktop.png --width 1400 --height 900
    python scripts/site_screenshot.py results/site/index.html \
        docs/pages/assets/site-overview-phone.png --width 400 --height 800

Feeds `docs/pages/assets/site-overview-desktop.png` and
`docs/pages/assets/site-overview-phone.png` (the first screen a reader sees, shown in the
leaderboard guide): run both after regenerating the site.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


@contextlib.contextmanager
def chromium(width: int = 1400, height: int = 900) -> Iterator[Any]:
    """A Playwright browser context of the installed Chromium with a fresh profile."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p, tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM,
            args=list(ARGS),
            headless=True,
            viewport={"width": width, "height": height},
        )
        try:
            yield context
        finally:
            context.close()


def screenshot(
    page_path: str | Path, out: str | Path, width: int = 1400, height: int | None = None
) -> Path:
    """The page at `width` px as a PNG: its first `height` px (the first screen), or the whole
    page without a height."""
    with chromium(width, height or 900) as context:
        page = context.new_page()
        page.goto(Path(page_path).resolve().as_uri())
        page.screenshot(path=str(out), full_page=height is None)
    return Path(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("page", help="an HTML file of the site, e.g. results/site/index.html")
    parser.add_argument("out", help="the PNG to write")
    parser.add_argument("--width", type=int, default=1400, help="viewport width in px")
    parser.add_argument(
        "--height", type=int, help="viewport height in px: the first screen only (default: all)"
    )
    args = parser.parse_args()
    print(screenshot(args.page, args.out, args.width, args.height))


if __name__ == "__main__":
    main()
