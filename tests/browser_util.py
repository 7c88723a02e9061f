"""The headless browser of the inspector's tests: Debian's chromium + chromedriver driven by Selenium.

``BROWSER_MARKS`` skip a module (with the reason) when chromium, chromedriver or a CJK font (fonts-noto-cjk)
is missing, except under ``make test``, which installs them and sets HANRAG_REQUIRE_BROWSER=1: there a
missing piece fails rather than letting the suite pass without it. ``chrome(profile)`` opens one browser.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
REQUIRED = os.environ.get("HANRAG_REQUIRE_BROWSER") == "1"


def _has_cjk_font() -> bool:
    try:
        out = subprocess.run(["fc-list", ":lang=ko"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return bool(out.strip())


MISSING = [name for name, ok in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER),
                                 ("a CJK font (fonts-noto-cjk)", _has_cjk_font())) if not ok]

BROWSER_MARKS = [
    pytest.mark.slow,
    pytest.mark.skipif(
        bool(MISSING) and not REQUIRED,
        reason=f"not installed: {', '.join(MISSING)} (`make browser` installs them)",
    ),
]


@contextmanager
def chrome(profile: Path) -> Iterator[object]:
    """A headless chromium with its own profile folder and the browser console log kept; quit on exit."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                "--window-size=1280,1800", f"--user-data-dir={profile}"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # Selenium Manager must not try to download a driver: the service names Debian's
    drv = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    drv.set_page_load_timeout(60)
    try:
        yield drv
    finally:
        drv.quit()
