"""The Python API: ``hanrag.open(index_dir)`` -> :class:`Index`, ``hanrag.build(corpus, index_dir)``.

An :class:`Index` loads the config, embedder, analyzer and lexicon once and
searches the index's CURRENT snapshot. :meth:`Index.reload` re-opens when a
build has moved the pointer; the swap is one attribute assignment, so a search
already running keeps the (immutable) old snapshot it started with.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from hanrag.config import Config, load_config
from hanrag.records import Chunk, Filters, Hit


class Index:
    """A searchable index on disk."""

    def __init__(self, index_dir: str | Path, config: Config | str | Path | None = None, *, embedder=None) -> None:
        from hanrag.lexicon import load_lexicons
        from hanrag.text import get_analyzer

        self.index_dir = Path(index_dir)
        self.config = config if isinstance(config, Config) else load_config(config)
        self.lexicon = load_lexicons(self.config)
        self.analyzer = get_analyzer(self.config)
        self._embedder = embedder
        self._lock = threading.Lock()
        self._state = self._open()  # (snapshot, searcher): replaced as a whole, never mutated

    # -- loading ------------------------------------------------------------------------------------
    @property
    def embedder(self):
        if self._embedder is None:
            from hanrag.embed import load_embedder

            self._embedder = load_embedder(self.config.embedder)
        return self._embedder

    def _open(self):
        from hanrag.backends.embedded import EmbeddedBackend
        from hanrag.embed import check_embedder
        from hanrag.index.snapshot import open_snapshot
        from hanrag.search.searcher import Searcher

        snapshot = open_snapshot(self.index_dir)
        check_embedder(snapshot.manifest, self.embedder)
        backend = EmbeddedBackend(snapshot)
        searcher = Searcher(backend, self.config, self.embedder, self.analyzer, self.lexicon)
        return snapshot, searcher

    @property
    def snapshot(self):
        return self._state[0]

    @property
    def searcher(self):
        return self._state[1]

    def reload(self) -> bool:
        """Re-open if the index's pointer names another snapshot; True when it swapped."""
        from hanrag.index.store import current_snapshot_dir

        with self._lock:
            current = current_snapshot_dir(self.index_dir)
            if current.name == self._state[0].name:
                return False
            self._state = self._open()
            return True

    # -- queries ------------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        top_k: int = 10,
        mode: str = "hybrid",
        filters: Filters | None = None,
        explain: bool = False,
    ) -> list[Hit]:
        searcher = self._state[1]  # one read: a concurrent reload cannot switch it mid-search
        return searcher.search(query, top_k=top_k, mode=mode, filters=filters, explain=explain)

    def plan(self, query: str, mode: str = "hybrid"):
        return self._state[1].plan(query, mode)

    def chunk(self, chunk_id: str) -> Chunk:
        return self._state[1].backend.get_chunks([chunk_id])[0]

    def document(self, doc_id: str) -> list[Chunk]:
        chunks = self._state[1].backend.doc_chunks(doc_id)
        if not chunks:
            raise KeyError(f"unknown document {doc_id!r} in index {self.index_dir}")
        return chunks

    def stats(self) -> dict[str, Any]:
        snap = self._state[0]
        m = snap.manifest
        langs: dict[str, int] = {}
        tiers: dict[str, int] = {}
        for c in snap.chunks:
            langs[c.lang] = langs.get(c.lang, 0) + 1
            tiers[str(c.tier)] = tiers.get(str(c.tier), 0) + 1
        size = sum(p.stat().st_size for p in Path(snap.path).rglob("*") if p.is_file())
        return {
            "index_dir": str(self.index_dir),
            "snapshot": snap.name,
            "chunks": len(snap.chunks),
            "documents": len(snap.doc_rows),
            "duplicates": int((snap.dup_of >= 0).sum()),
            "langs": langs,
            "tiers": tiers,
            "bytes": size,
            "embedder": (m.get("embedder") or {}).get("identity") or m.get("embedder"),
            "built_at": m.get("created_at"),
            "build": m.get("build"),  # timings and counts of the build that published this snapshot
            "hanrag_version": m.get("hanrag_version"),
        }

    def __repr__(self) -> str:
        return f"Index({str(self.index_dir)!r}, snapshot={self.snapshot.name!r}, chunks={len(self.snapshot)})"


def open(index_dir: str | Path, config: Config | str | Path | None = None) -> Index:  # noqa: A001 - public name
    """Open an index for search (its current snapshot)."""
    return Index(index_dir, config)


def build(corpus: str | Path, index_dir: str | Path, config: Config | str | Path | None = None, **kwargs):
    """Build (or incrementally update) the index at ``index_dir`` from a corpus folder."""
    from hanrag.index.build import build_index

    cfg = config if isinstance(config, Config) else load_config(config)
    return build_index(corpus, index_dir, cfg, **kwargs)
