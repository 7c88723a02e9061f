"""What every embedder is: the :class:`Embedder` protocol, its identity, and the check that an index
is searched with the model it was built with."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hanrag.embed.text import EmbedderMismatchError


@runtime_checkable
class Embedder(Protocol):
    dim: int
    max_tokens: int
    truncates: bool  # False when longer texts are embedded in windows (nothing cut)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def count_tokens(self, text: str) -> int: ...

    def identity(self) -> dict[str, Any]: ...


def _normalise(vectors: Any, dim: int) -> np.ndarray:
    arr = np.asarray(vectors, dtype=np.float32).reshape(-1, dim)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


def _file_fingerprint(path: Path, h: Any) -> None:
    """Hash a (possibly multi-GB) file by its size and first/last MiB: cheap, changes on any re-download."""
    size = path.stat().st_size
    h.update(f"{path.name}:{size}".encode())
    with path.open("rb") as fh:
        h.update(fh.read(1 << 20))
        if size > 2 << 20:
            fh.seek(-(1 << 20), 2)
            h.update(fh.read(1 << 20))


# keys that must agree between an index and the embedder that queries it
IDENTITY_KEYS = ("backend", "model", "revision", "dim", "query_prompt", "passage_prompt", "runtime", "precision",
                 "converter", "blend")
# what a key missing from an identity means: identities written before these keys existed (and every backend
# but a converted sentence-transformers model) ran on torch in fp32, unconverted
IDENTITY_DEFAULTS = {"runtime": "torch", "precision": "fp32", "converter": "", "blend": ""}


def identity_key(identity: dict[str, Any]) -> str:
    """Short stable hash of an embedder identity (embedding cache folders, comparisons)."""
    blob = json.dumps(identity, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def check_embedder(manifest: dict[str, Any], embedder: Embedder) -> None:
    """Refuse to search an index with another model than the one it was built with."""
    built = (manifest.get("embedder") or {}).get("identity") or {}
    now = embedder.identity()
    built = {**IDENTITY_DEFAULTS, **built}
    now = {**IDENTITY_DEFAULTS, **now}
    diffs = [k for k in IDENTITY_KEYS if built.get(k) != now.get(k)]
    if diffs:
        detail = ", ".join(f"{k}: index {built.get(k)!r} vs configured {now.get(k)!r}" for k in diffs)
        hint = ""
        if "blend" in diffs:  # most often an index built before the second encoder was on by default
            from hanrag.embed.blend import blend_weight

            hint = f" (it was built with embedder.cross_lingual_weight = {blend_weight(built):g})"
        raise EmbedderMismatchError(
            f"the index was built with another embedder ({detail}); "
            f"search with the embedder config the index was built with{hint}, or rebuild the index with `hanrag build`"
        )
