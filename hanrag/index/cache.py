"""The build's caches in ``INDEX/cache/``: embeddings and index tokens keyed by content hash.

An embedding cache keyed by (embedder identity, sha256 of chunk text) lets a rebuild embed
only texts it has never seen; tokens are cached the same way, keyed by analyzer identity,
language and text. The Milvus backend reads the token cache to push a snapshot without
re-tokenising it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.embed import identity_key
from hanrag.fsutil import atomic_save_npy, atomic_write_bytes

CACHE_DIR = "cache"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors keyed by sha256 of the text, for one embedder identity.

    ``keys.json`` names the vectors file it belongs to; a new vectors file is written
    first and the key file replaced atomically after, so the pair is always consistent.
    """

    def __init__(self, root: Path, identity: dict[str, Any], dim: int) -> None:
        self.dir = root / f"emb-{identity_key(identity)}"
        self.dim = dim
        self.index: dict[str, int] = {}
        self.tokens: list[int] = []
        self.vectors = np.zeros((0, dim), np.float32)
        self._load(identity)

    def _load(self, identity: dict[str, Any]) -> None:
        try:
            meta = json.loads((self.dir / "keys.json").read_text(encoding="utf-8"))
            vectors = np.load(self.dir / meta["file"], allow_pickle=False)
        except (FileNotFoundError, KeyError, ValueError, OSError):
            return  # no cache or an unusable one: embed again
        keys = meta.get("keys", [])
        if vectors.shape != (len(keys), self.dim) or meta.get("identity") != identity:
            return
        self.index = {k: i for i, k in enumerate(keys)}
        self.tokens = list(meta.get("tokens", [-1] * len(keys)))
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.identity = identity

    def get(self, key: str) -> tuple[np.ndarray, int] | None:
        i = self.index.get(key)
        return None if i is None else (self.vectors[i], self.tokens[i])

    def add(self, keys: Sequence[str], vectors: np.ndarray, tokens: Sequence[int]) -> None:
        new = [(k, i) for i, k in enumerate(keys) if k not in self.index]
        if not new:
            return
        base = len(self.index)
        for j, (k, _) in enumerate(new):
            self.index[k] = base + j
        self.tokens.extend(int(tokens[i]) for _, i in new)
        self.vectors = np.concatenate([self.vectors, vectors[[i for _, i in new]].astype(np.float32)])

    def prune(self, keep: set[str]) -> bool:
        """Drop entries no current chunk uses once they outnumber the used ones (bounded growth)."""
        unused = len(self.index) - len(keep & self.index.keys())
        if unused <= max(1000, len(keep)):
            return False
        rows = [(k, i) for k, i in self.index.items() if k in keep]
        self.vectors = self.vectors[[i for _, i in rows]] if rows else np.zeros((0, self.dim), np.float32)
        self.tokens = [self.tokens[i] for _, i in rows]
        self.index = {k: j for j, (k, _) in enumerate(rows)}
        return True

    def save(self, identity: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        name = f"vectors-{time.time_ns()}.npy"
        atomic_save_npy(self.dir / name, self.vectors)
        keys = sorted(self.index, key=self.index.__getitem__)
        atomic_write_bytes(
            self.dir / "keys.json",
            json.dumps({"identity": identity, "file": name, "keys": keys, "tokens": self.tokens}).encode(),
        )
        for p in self.dir.glob("vectors-*.npy"):
            if p.name != name:
                p.unlink(missing_ok=True)


class TokenCache:
    """Index tokens keyed by (language, sha256 of text), for one analyzer identity."""

    def __init__(self, root: Path, analyzer_key: str) -> None:
        self.root = root
        self.path = root / f"tokens-{analyzer_key}.json"
        try:
            self.data: dict[str, list[str]] = json.loads(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            self.data = {}
        self.dirty = False

    def save(self, keep: set[str]) -> None:
        if not self.dirty and len(self.data) <= len(keep):
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = {k: v for k, v in self.data.items() if k in keep}
        atomic_write_bytes(self.path, json.dumps(data, ensure_ascii=False).encode("utf-8"))

    @classmethod
    def for_analyzer(cls, root: Path, analyzer: Any) -> TokenCache:
        return cls(root, identity_key(analyzer.identity()))


def token_key(text: str, lang: str) -> str:
    return f"{lang}:{text_hash(text)}"


def tokenize_cached(cache: TokenCache, analyzer: Any, texts: Sequence[str], langs: Sequence[str]) -> list[list[str]]:
    """Tokens of ``texts`` from ``cache``, tokenising (in one batch) only those it lacks; the cache is saved
    with exactly these texts' entries (a text no longer asked for is dropped)."""
    keys = [token_key(t, g) for t, g in zip(texts, langs, strict=True)]
    missing = [i for i, k in enumerate(keys) if k not in cache.data]
    if missing:
        todo_texts = [texts[i] for i in missing]
        todo_langs = [langs[i] for i in missing]
        many = getattr(analyzer, "tokenize_many", None)
        toks = (many(todo_texts, todo_langs) if many
                else [analyzer.tokenize(t, g) for t, g in zip(todo_texts, todo_langs, strict=True)])
        for i, t in zip(missing, toks, strict=True):
            cache.data[keys[i]] = list(t)
        cache.dirty = True
    cache.save(set(keys))
    return [cache.data[k] for k in keys]


__all__ = ["CACHE_DIR", "EmbeddingCache", "TokenCache", "text_hash", "token_key", "tokenize_cached"]
