"""Fixtures of the server tests: the headless browser of the inspector's tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_util import chrome


@pytest.fixture()
def driver(tmp_path: Path):
    with chrome(tmp_path / "chrome-profile") as drv:
        yield drv
