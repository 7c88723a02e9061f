"""One embedding cache per machine: vectors keyed by (embedder identity, role, sha256 of the text).

:class:`CachingEmbedder` wraps any :class:`hanrag.embed.Embedder` and answers from the cache,
embedding only texts it has never seen. It has the wrapped embedder's identity, so an index
built through it is indistinguishable from one built without it. ``hanrag build`` (on top of
the index's own cache of its chunks), ``hanrag eval`` and the benchmarks share it, so a text
embedded once by any of them, for any index, is never embedded again by the same model.

Where: ``[embedder] cache_dir``, else ``$HANRAG_CACHE_DIR``, else ``$XDG_CACHE_HOME/hanrag``,
else ``~/.cache/hanrag``; vectors live in ``vectors/<identity key>/`` (the converted ONNX model
in ``models/``). Size: ``[embedder] cache_max_gb``; beyond it the oldest shards (of any
identity) are deleted after a save.

On disk: shards ``<time>-<pid>-<random>.npy`` (float32 vectors, never pickle) + ``.json`` (their
keys), each written atomically, the JSON last (it names a complete npy), with names no two
processes share, so concurrent builds and evals never corrupt one another: a reader sees a whole
shard or none. A shard that cannot be read (corrupt JSON or npy, wrong shape) is skipped with a
warning and costs only cache misses; a shard deleted by eviction under a reader is a miss.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import secrets
import time
import warnings
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.embed import identity_key
from hanrag.fsutil import atomic_save_npy, atomic_write_bytes, default_cache_dir, load_npy

VECTORS = "vectors"


def cache_dir(cfg: Any = None) -> Path:
    """The cache folder an ``EmbedderConfig`` names (its ``cache_dir``, else the machine default)."""
    configured = getattr(cfg, "cache_dir", "") if cfg is not None else ""
    return Path(configured).expanduser() if configured else default_cache_dir()


def _key(role: str, text: str) -> str:
    return f"{role}:{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()}"


class CacheWarning(UserWarning):
    """A shard of the embedding cache could not be read (it is skipped)."""


class CachingEmbedder:
    """An embedder that remembers every vector it computed (see the module docstring)."""

    def __init__(
        self,
        inner: Any,
        root: str | Path | None = None,
        save_every: int = 512,
        max_bytes: int | None = None,
    ) -> None:
        self.inner = inner
        self.dim = inner.dim
        self.max_tokens = inner.max_tokens
        self.truncates = inner.truncates
        self.root = Path(root) if root is not None else default_cache_dir() / VECTORS
        self.dir = self.root / identity_key(inner.identity())
        self.save_every = save_every
        self.max_bytes = max_bytes
        self._rows: dict[str, tuple[int, int]] = {}  # key -> (shard, row): shards are never concatenated
        self._blocks: list[np.ndarray] = []
        self._pending: dict[str, np.ndarray] = {}
        self._tokens: dict[str, int] = {}
        self.embedded = 0  # texts actually sent to the wrapped embedder
        self.skipped: list[Path] = []  # shards that could not be read
        self._load()
        # vectors not yet saved are flushed when the process exits (a CLI run that ends normally)
        ref = weakref.ref(self)
        atexit.register(lambda: (obj := ref()) is not None and obj._flush_quietly())

    def __getattr__(self, name: str) -> Any:  # batch_size, model, ... of the wrapped embedder
        if name == "inner":  # not set yet (during unpickling or a failed __init__): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    # -- cache ---------------------------------------------------------------------------------------
    def _load(self) -> None:
        for meta_path in sorted(self.dir.glob("*.json")):
            self._read_shard(meta_path)

    def _read_shard(self, meta_path: Path) -> None:
        npy = meta_path.with_suffix(".npy")
        try:
            keys = json.loads(meta_path.read_text(encoding="utf-8"))
            # read whole, not memory-mapped: each mapping holds a file descriptor, and a cache of a
            # thousand shards would run out of them
            arr = load_npy(npy)
        except FileNotFoundError:
            return  # evicted by another process between the listing and the read: a miss
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            self._skip(meta_path, str(exc))
            return
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            self._skip(meta_path, "its key list is not a list of strings")
        elif arr.dtype != np.float32 or arr.shape != (len(keys), self.dim):
            self._skip(meta_path, f"vectors of shape {arr.shape} {arr.dtype} for {len(keys)} keys of dim {self.dim}")
        else:
            self._add_block(keys, arr)

    def _skip(self, meta_path: Path, why: str) -> None:
        self.skipped.append(meta_path)
        warnings.warn(f"embedding cache: skipping unreadable shard {meta_path} ({why}); its texts are embedded again",
                      CacheWarning, stacklevel=4)

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
        """Write the vectors embedded since the last save as one new shard (then evict beyond the bound)."""
        if not self._pending:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        # unique across processes and restarts: concurrent writers never touch one another's shards
        name = f"{time.time_ns():020d}-{os.getpid()}-{secrets.token_hex(4)}"
        keys = list(self._pending)
        arr = np.stack([self._pending[k] for k in keys]).astype(np.float32)
        atomic_save_npy(self.dir / f"{name}.npy", arr)
        atomic_write_bytes(self.dir / f"{name}.json", json.dumps(keys).encode())  # written last: names a whole npy
        self._add_block(keys, arr)
        self._pending.clear()
        if self.max_bytes is not None:
            evict(self.root, self.max_bytes)

    def _flush_quietly(self) -> None:
        try:
            self.save()
        except OSError:
            pass  # at exit a full or read-only disk only loses cache entries

    def missing(self, texts: Sequence[str], role: str = "passage") -> list[str]:
        """The distinct texts of ``texts`` not in the cache yet (what encoding them would embed)."""
        return list({_key(role, t): t for t in texts if self._vector(_key(role, t)) is None}.values())

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


def evict(root: Path, max_bytes: int) -> int:
    """Delete the oldest shards under ``root`` (every identity) until it holds at most ``max_bytes``.

    Only files this module writes are touched (``*/<shard>.json`` and its ``.npy``); the JSON goes
    first, so a reader never sees keys whose vectors are gone. Returns the shards deleted."""
    shards = []
    total = 0
    for meta in root.glob("*/*.json"):
        npy = meta.with_suffix(".npy")
        try:
            size = meta.stat().st_size + (npy.stat().st_size if npy.exists() else 0)
            mtime = meta.stat().st_mtime
        except FileNotFoundError:
            continue  # removed by a concurrent eviction
        shards.append((mtime, meta.name, meta, size))
        total += size
    deleted = 0
    for _, _, meta, size in sorted(shards):
        if total <= max_bytes:
            break
        meta.unlink(missing_ok=True)
        meta.with_suffix(".npy").unlink(missing_ok=True)
        total -= size
        deleted += 1
    return deleted


def build_embedder(cfg: Any) -> Any:
    """The embedder ``cfg`` (an ``EmbedderConfig``) names, behind the machine cache unless ``cache = false``."""
    from hanrag.embed import load_embedder

    inner = load_embedder(cfg)
    if not getattr(cfg, "cache", True):
        return inner
    return caching(inner, cache_dir(cfg) / VECTORS, max_bytes=int(float(cfg.cache_max_gb) * (1 << 30)))


def caching(inner: Any, root: str | Path | None = None, **kwargs: Any) -> Any:
    """``inner`` behind the machine cache; a blend of two encoders with each part behind its own (a change of
    ``embedder.cross_lingual_weight`` then re-embeds nothing, and the main encoder's vectors serve both)."""
    from hanrag.embed.blend import BlendedEmbedder

    if isinstance(inner, BlendedEmbedder):
        return BlendedEmbedder(CachingEmbedder(inner.primary, root, **kwargs),
                               CachingEmbedder(inner.secondary, root, **kwargs), inner.weight)
    return CachingEmbedder(inner, root, **kwargs)
