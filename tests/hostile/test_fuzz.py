"""Issue 13: hypothesis fuzzing of the chunker, tokenizers and embedder, each in its own process so a
native abort (the U+FDFA heap overflow killed the whole process) fails the test instead of pytest."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("fuzz_child.py")


def _fuzz(surface: str, examples: int, max_run: int, timeout: float) -> None:
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, str(CHILD), surface, str(examples), str(max_run)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=ROOT,
    )
    why = f"{surface}: rc {proc.returncode} (negative = killed by a signal)\n{proc.stderr[-4000:]}"
    assert proc.returncode == 0, why
    assert f"{surface}: {examples} inputs, 0 failures" in proc.stdout


def test_fuzz_chunker() -> None:
    _fuzz("chunker", 500, 1500, 300)


def test_fuzz_tokenizers() -> None:
    _fuzz("tokenizers", 300, 1500, 300)


@pytest.mark.slow
def test_fuzz_embedder() -> None:
    # long runs are capped lower: each 510-token window costs a full forward pass
    _fuzz("embedder", 40, 100, 600)
