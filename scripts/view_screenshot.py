#!/usr/bin/env python3
"""Regenerate docs/view.png, the README's picture of `cmem view`, with the browser tests' own harness.

    python scripts/view_screenshot.py            # writes docs/view.png (needs chromium; see tests/chromium.py)

The page is the one the real `cmem view` writes for the browser tests' fixture home (tests/view_fixtures.py,
without its hostile record), shown at 1100x720 in headless Chromium with one record open. The type icons
are emoji: install a colour emoji font first (Debian: fonts-noto-color-emoji) or they show as boxes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.chromium import Browser  # noqa: E402
from tests.view_fixtures import PROJECT, fill_home  # noqa: E402

OUT = REPO / "docs" / "view.png"
LIMIT = 150_000  # bytes: the README stays light


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="cmem-view-shot-") as tmp:
        root = Path(tmp)
        env = {
            **os.environ, "CMEM_HOME": str(root / "home"), "CMEM_PROJECT": PROJECT, "CMEM_EMBED_MODEL": "none",
            "HOME": str(root / "user"), "XDG_CONFIG_HOME": str(root / "config"),
        }  # fmt: skip
        os.environ.update(env)
        ids = fill_home(root / "home", hostile=False)
        page = root / "page.html"
        subprocess.run(
            [sys.executable, "-m", "cmem_cli", "view", "--no-open", "--output", str(page)],
            env=env, cwd=root, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        with Browser() as browser:
            tab = browser.new_page(width=1100, height=720)
            tab.goto(page.as_uri() + f"#{ids['bugfix']}")
            tab.evaluate("window.scrollTo(0, 0)")
            errors = tab.errors()
            if errors:
                print(f"the page reported: {errors}", file=sys.stderr)
                return 1
            OUT.write_bytes(tab.screenshot())
    size = OUT.stat().st_size
    print(f"wrote {OUT.relative_to(REPO)} ({size:,} bytes)")
    if size > LIMIT:
        print(f"it is over {LIMIT:,} bytes: make the picture smaller", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
