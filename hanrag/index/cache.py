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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.embed import identity_key
from hanrag.fsutil import atomic_save_npy, atomic_write_bytes, load_npy

CACHE_DIR = "cache"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """Vectors keyed by sha256 of the text, for one embedder identity.

    On disk, append-only segments: ``seg-<n>.npy`` (float32 rows) and ``seg-<n>.json`` (their keys and
    token counts), the JSON written last, atomically, so it only ever names a complete npy. A checkpoint
    writes only the rows added since the last one; rewriting the whole cache at every checkpoint made a
    build quadratic (a million chunks would have written terabytes). Past :data:`MAX_SEGMENTS`, or after
    :meth:`prune`, everything is compacted into one segment and the old files are removed after it is
    written, so a crash at any point leaves a readable cache (a row in two segments is read once).
    The single-file layout of earlier releases (``keys.json`` + ``vectors-*.npy``) is still read.
    """

    MAX_SEGMENTS = 32

    def __init__(self, root: Path, identity: dict[str, Any], dim: int) -> None:
        self.dir = root / f"emb-{identity_key(identity)}"
        self.dim = dim
        self.identity = identity
        self.index: dict[str, int] = {}
        self.keys: list[str] = []  # row order
        self.tokens: list[int] = []
        self._blocks: list[np.ndarray] = []  # rows in order; joined on first read, so adding stays linear
        self._saved = 0  # rows [0, _saved) are on disk
        self._files: list[Path] = []  # what holds them
        self._load()

    @property
    def vectors(self) -> np.ndarray:
        """Every row as one array (joins the blocks; :meth:`take` reads rows without that copy)."""
        if len(self._blocks) != 1:
            self._blocks = [np.concatenate(self._blocks) if self._blocks else np.zeros((0, self.dim), np.float32)]
        return self._blocks[0]

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The given rows (float32, in the order asked), gathered from the blocks where they lie: the saved
        segments are memory-mapped, so a build reading a million cached vectors never holds them all."""
        rows = np.asarray(rows, dtype=np.int64)
        out = np.empty((rows.size, self.dim), np.float32)
        starts = np.cumsum([0, *(len(b) for b in self._blocks)])
        which = np.searchsorted(starts, rows, side="right") - 1
        for b in np.unique(which):
            sel = which == b
            out[sel] = self._blocks[int(b)][rows[sel] - starts[b]]
        return out

    @property
    def saved_rows(self) -> int:
        return self._saved

    def _load(self) -> None:
        legacy = self.dir / "keys.json"
        for meta_path in [legacy, *sorted(self.dir.glob("seg-*.json"))]:
            self._read(meta_path)
        self._saved = len(self.index)

    def _read(self, meta_path: Path) -> None:
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            vec_path = self.dir / meta["file"]
            vectors = load_npy(vec_path, "r")
        except (FileNotFoundError, KeyError, TypeError, ValueError, OSError):
            return  # no cache or an unusable segment: those texts are embedded again
        keys = meta.get("keys", [])
        tokens = meta.get("tokens", [-1] * len(keys))
        if vectors.shape != (len(keys), self.dim) or meta.get("identity") != self.identity or len(tokens) != len(keys):
            return
        fresh = [i for i, k in enumerate(keys) if k not in self.index]
        base = len(self.index)
        for j, i in enumerate(fresh):
            self.index[keys[i]] = base + j
        self.keys.extend(keys[i] for i in fresh)
        self.tokens.extend(int(tokens[i]) for i in fresh)
        # a memory-mapped segment (read on demand); a copy of its new rows when some were in an earlier one (or
        # when it is not float32, which this class never writes)
        whole = len(fresh) == len(keys) and vectors.dtype == np.float32
        self._blocks.append(vectors if whole else np.asarray(vectors[fresh], dtype=np.float32))
        self._files += [meta_path, vec_path]

    def get(self, key: str) -> tuple[np.ndarray, int] | None:
        i = self.index.get(key)
        return None if i is None else (self.take(np.array([i]))[0], self.tokens[i])

    def add(self, keys: Sequence[str], vectors: np.ndarray, tokens: Sequence[int]) -> None:
        self._trim()
        new = [(k, i) for i, k in enumerate(keys) if k not in self.index]
        if not new:
            return
        base = len(self.index)
        block = np.asarray(vectors[[i for _, i in new]], dtype=np.float32)
        added = [k for k, _ in new]
        counts = [int(tokens[i]) for _, i in new]
        # the index is what counts (see _trim) and grows last, in one C call that Ctrl-C cannot split: an add
        # cut short leaves only rows past it, so a build interrupted here still saves every complete row
        self._blocks.append(block)
        self.keys.extend(added)
        self.tokens.extend(counts)
        self.index.update(zip(added, range(base, base + len(added)), strict=True))

    def _trim(self) -> None:
        """Drop rows past ``len(self.index)``: what an :meth:`add` interrupted (KeyboardInterrupt) left behind."""
        n = len(self.index)
        if len(self.keys) == len(self.tokens) == sum(len(b) for b in self._blocks) == n:
            return
        del self.keys[n:], self.tokens[n:]
        kept, rows = [], 0
        for block in self._blocks:
            if rows >= n:
                break
            kept.append(block[: n - rows])
            rows += len(kept[-1])
        self._blocks = kept

    def prune(self, keep: set[str]) -> bool:
        """Drop entries no current chunk uses once they outnumber the used ones (bounded growth)."""
        unused = len(self.index) - len(keep & self.index.keys())
        if unused <= max(1000, len(keep)):
            return False
        rows = [(k, i) for k, i in self.index.items() if k in keep]
        vectors = self.vectors[[i for _, i in rows]] if rows else np.zeros((0, self.dim), np.float32)
        self._blocks = [vectors]
        self.tokens = [self.tokens[i] for _, i in rows]
        self.index = {k: j for j, (k, _) in enumerate(rows)}
        self.keys = [k for k, _ in rows]
        self._saved = -1  # what is on disk no longer matches the rows: the next save compacts
        return True

    def save(self, identity: dict[str, Any] | None = None) -> None:
        """Write the rows added since the last save as a new segment (compacting when due)."""
        self._trim()
        compact = self._saved < 0 or len(self._files) // 2 + 1 > self.MAX_SEGMENTS
        start = 0 if compact else self._saved
        if start == len(self.index) and not compact:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        name = f"seg-{time.time_ns():020d}"
        keys = self.keys[start:]
        atomic_save_npy(self.dir / f"{name}.npy", self.take(np.arange(start, len(self.index))))
        atomic_write_bytes(self.dir / f"{name}.json", json.dumps(
            {"identity": self.identity if identity is None else identity, "file": f"{name}.npy", "keys": keys,
             "tokens": self.tokens[start:]}).encode())
        written = [self.dir / f"{name}.json", self.dir / f"{name}.npy"]
        if compact:  # the new segment holds every row: the old files go (only after it is complete)
            for old in self._files:
                old.unlink(missing_ok=True)
            for old in self.dir.glob("vectors-*.npy"):  # a legacy file keys.json no longer named
                old.unlink(missing_ok=True)
            self._files = written
        else:
            self._files += written
        self._saved = len(self.index)
        self._map_saved(start, self.dir / f"{name}.npy")

    def _map_saved(self, start: int, path: Path) -> None:
        """Rows from ``start`` on are now in ``path``: read them from there (memory-mapped) and let the in-memory
        copies go, so a long build's new vectors do not pile up in memory."""
        kept, rows = [], 0
        for block in self._blocks:
            if rows >= start:
                break
            kept.append(block)
            rows += len(block)
        if rows != start:  # a block across the boundary (not expected): keep everything as it is
            return
        try:
            mapped = load_npy(path, "r")
        except (OSError, ValueError):
            return
        if mapped.shape == (len(self.index) - start, self.dim):
            self._blocks = [*kept, mapped]


# tokens of one text are held joined by this separator: one string per text instead of one per token (a
# million chunks' token lists took several GB as separate strings); no analyzer emits it inside a token
# (it is whitespace to str.split and to every tokenizer's regex), and a token that held it would be kept
# as a list
SEP = "\x1f"


class TokenCache:
    """Index tokens keyed by (language, sha256 of text), for one analyzer identity.

    On disk one JSON object, key -> tokens joined by :data:`SEP` (older files hold lists; both are read)."""

    def __init__(self, root: Path, analyzer_key: str) -> None:
        self.root = root
        self.path = root / f"tokens-{analyzer_key}.json"
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            self.data: dict[str, str | list[str]] = data if isinstance(data, dict) else {}
        except (FileNotFoundError, ValueError, OSError):
            self.data = {}
        self.dirty = False

    def __contains__(self, key: str) -> bool:
        return key in self.data

    def get(self, key: str) -> list[str] | None:
        value = self.data.get(key)
        if value is None or isinstance(value, list):
            return value
        return value.split(SEP) if value else []

    def put(self, key: str, tokens: Sequence[str]) -> None:
        # a list when joining would not round-trip (a token holding SEP, or one empty token)
        self.data[key] = list(tokens) if any(SEP in t or not t for t in tokens) else SEP.join(tokens)
        self.dirty = True

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


def iter_tokens(cache: TokenCache, analyzer: Any, texts: Sequence[str], langs: Sequence[str],
                batch: int = 4096) -> Iterator[list[list[str]]]:
    """Tokens of ``texts`` a batch at a time, from ``cache`` or tokenising (a batch at once) what it lacks.

    After the last batch the cache is saved with exactly these texts' entries (a text no longer asked for
    is dropped); a build consumes the batches as they come, so all the token lists never exist at once."""
    keys = [token_key(t, g) for t, g in zip(texts, langs, strict=True)]
    many = getattr(analyzer, "tokenize_many", None)
    for s in range(0, len(keys), batch):
        part = keys[s : s + batch]
        missing = list({k: s + i for i, k in enumerate(part) if k not in cache}.values())  # once per distinct text
        if missing:
            todo_texts = [texts[i] for i in missing]
            todo_langs = [langs[i] for i in missing]
            toks = (many(todo_texts, todo_langs) if many
                    else [analyzer.tokenize(t, g) for t, g in zip(todo_texts, todo_langs, strict=True)])
            for i, t in zip(missing, toks, strict=True):
                cache.put(keys[i], t)
        yield [cache.get(k) or [] for k in part]
    cache.save(set(keys))


def tokenize_cached(cache: TokenCache, analyzer: Any, texts: Sequence[str], langs: Sequence[str]) -> list[list[str]]:
    """Tokens of every text (:func:`iter_tokens` collected); the cache is saved with exactly these texts."""
    return [toks for part in iter_tokens(cache, analyzer, texts, langs) for toks in part]


__all__ = ["CACHE_DIR", "SEP", "EmbeddingCache", "TokenCache", "iter_tokens", "text_hash", "token_key",
           "tokenize_cached"]
