"""Shared by the examples: the sample corpus bundled with hanrag built into an index, incrementally.

Each example takes ``--index DIR`` (default ``index/demo``, the folder ``make demo`` builds); the build
is incremental, so after the first run it only checks the corpus. Everything runs offline.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import hanrag
from hanrag.bundled import SAMPLE_CONFIG, SAMPLE_CORPUS

CORPUS = SAMPLE_CORPUS
CONFIG = SAMPLE_CONFIG

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the bundled model; never a hub
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # Haystack reports pipeline runs unless told not to


def sample_index(description: str) -> Path:
    """Parse ``--index`` and build (or update) the sample index there; returns its folder."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--index", type=Path, default=Path("index/demo"), help="index folder (built if needed)")
    index_dir = parser.parse_args().index
    hanrag.build(CORPUS, index_dir, CONFIG, progress=False)
    return index_dir
