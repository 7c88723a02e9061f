"""Data files shipped inside the package: the lexicons, the learned rankers, the sample corpus and its config.

They live under ``hanrag/`` so that a wheel installed anywhere carries them (``pyproject.toml`` lists
them as package data); nothing here may point into a checkout.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
LEXICON_DIR = PACKAGE_DIR / "lexicons"
RANKER_DIR = PACKAGE_DIR / "rankers"
SAMPLE_DIR = PACKAGE_DIR / "sample"
SAMPLE_CORPUS = SAMPLE_DIR / "corpus"
SAMPLE_CONFIG = SAMPLE_DIR / "hanrag.toml"
