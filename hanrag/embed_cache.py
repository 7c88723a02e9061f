"""A machine-wide embedding cache: vectors keyed by (embedder identity, role, sha256 of the text).

:class:`CachingEmbedder` wraps any :class:`hanrag.embed.Embedder` and answers from the
cache, embedding only texts it has never seen; it has the wrapped embedder's identity, so
an index built through it is indistinguishable from one built without it. Evaluation and
benchmarks share it across every index they build (``.cache/vectors`` by default).

On disk a cache is append-only shards ``NNNNNN.npy`` (float32 vectors) + ``NNNNNN.json``
(their keys), each written atomically — the JSON names a complete npy, never pickle — so a
killed run loses at most its unsaved shard.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.embed import identity_key
from hanrag.index.store import atomic_save_npy, atomic_write_bytes

DEFAULT_ROOT = Path(__file__).resolve().parent.parent / ".cache" / "vectors"


def _key(role: str, text: str) -> str:
    return f"{role}:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}"


class CachingEmbedder:
    """An embedder that remembers every vector it computed (see the module docstring)."""

    def __init__(self, inner: Any, root: str | Path = DEFAULT_ROOT, save_every: int = 512) -> None:
        self.inner = inner
        self.dim = inner.dim
        self.max_tokens = inner.max_tokens
        self.truncates = inner.truncates
        self.dir = Path(root) / identity_key(inner.identity())
        self.save_every = save_every
        self._rows: dict[str, tuple[int, int]] = {}  # key -> (shard, row): shards are never concatenated
        self._blocks: list[np.ndarray] = []
        self._pending: dict[str, np.ndarray] = {}
        self._tokens: dict[str, int] = {}
        self.embedded = 0  # texts actually sent to the wrapped embedder
        self._load()

    def __getattr__(self, name: str) -> Any:  # batch_size, model, ... of the wrapped embedder
        return getattr(self.inner, name)

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    # -- cache ---------------------------------------------------------------------------------------
    def _load(self) -> None:
        for meta_path in sorted(self.dir.glob("*.json")):
            try:
                keys = json.loads(meta_path.read_text(encoding="utf-8"))
                arr = np.load(meta_path.with_suffix(".npy"), allow_pickle=False)
            except (OSError, ValueError):
                continue  # an unreadable shard is only a cache miss
            if arr.shape == (len(keys), self.dim):
                self._add_block(keys, arr.astype(np.float32, copy=False))

    def _add_block(self, keys: list[str], arr: np.ndarray) -> None:
        shard = len(self._blocks)
        self._blocks.append(arr)
        for i, k in enumerate(keys):
            self._rows.setdefault(k, (shard, i))

    def _vector(self, key: str) -> np.ndarray | None:
        if key in self._pending:
            return self._pending[key]
        at = self._rows.get(key)
        return None if at is None else self._blocks[at[0]][at[1]]

    def save(self) -> None:
        if not self._pending:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        name = f"{len(list(self.dir.glob('*.json'))):06d}-{len(self._rows)}"
        keys = list(self._pending)
        arr = np.stack([self._pending[k] for k in keys]).astype(np.float32)
        atomic_save_npy(self.dir / f"{name}.npy", arr)
        atomic_write_bytes(self.dir / f"{name}.json", json.dumps(keys).encode())  # written last: names a whole npy
        self._add_block(keys, arr)
        self._pending.clear()

    def _encode(self, texts: Sequence[str], role: str) -> np.ndarray:
        keys = [_key(role, t) for t in texts]
        todo = list(dict.fromkeys(k for k in keys if self._vector(k) is None))
        if todo:
            text_of = dict(zip(keys, texts, strict=True))
            fn = self.inner.encode_passages if role == "passage" else self.inner.encode_queries
            vecs = np.asarray(fn([text_of[k] for k in todo]), dtype=np.float32)
            self._pending.update(zip(todo, vecs, strict=True))
            self.embedded += len(todo)
            if len(self._pending) >= self.save_every:
                self.save()
        if not keys:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._vector(k) for k in keys]).astype(np.float32)

    # -- the Embedder protocol -----------------------------------------------------------------------
    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, "passage")

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, "query")

    def count_tokens(self, text: str) -> int:
        key = _key("tokens", text)
        if key not in self._tokens:
            self._tokens[key] = int(self.inner.count_tokens(text))
        return self._tokens[key]
