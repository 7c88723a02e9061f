"""The Python API: ``hanrag.open(index_dir)`` -> :class:`Index`, ``hanrag.build(corpus, index_dir)``.

An :class:`Index` loads the config, embedder, analyzer and lexicon once and
searches the configured backend (:func:`hanrag.backends.open_backend`): the index
folder's CURRENT snapshot, or with ``[backend] kind = "milvus"`` the [milvus]
collection pushed from it (the folder is then not read). :meth:`Index.reload`
re-opens when a build has moved the pointer (or a push has changed the collection);
the swap is one attribute assignment, so a search already running keeps the
backend it started with.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hanrag.config import Config, load_config
from hanrag.records import Chunk, Filters, Hit, QueryPlan, SearchLimits, check_mode, check_query

if TYPE_CHECKING:
    from hanrag.search.searcher import SearchResult


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
        self._state = self._open()  # (backend, searcher, version): replaced as a whole, never mutated

    # -- loading ------------------------------------------------------------------------------------
    @property
    def embedder(self):
        if self._embedder is None:
            from hanrag.embed import load_embedder

            self._embedder = load_embedder(self.config.embedder)
        return self._embedder

    def _open(self):
        from hanrag.backends import open_backend
        from hanrag.embed import check_embedder
        from hanrag.search.searcher import Searcher

        backend = open_backend(self.config, self.index_dir)
        check_embedder(backend.manifest(), self.embedder)
        searcher = Searcher(backend, self.config, self.embedder, self.analyzer, self.lexicon)
        return backend, searcher, self._version(backend)

    def _version(self, backend) -> str:
        """What names the data a backend serves now: the current snapshot, or for Milvus the last push."""
        if backend.name == "milvus":
            meta = backend.meta(refresh=True)
            return f"{meta.get('snapshot')}@{meta.get('finished_at')}"
        from hanrag.index.store import current_snapshot_dir

        return current_snapshot_dir(self.index_dir).name

    @property
    def backend(self):
        return self._state[0]

    @property
    def snapshot(self):
        """The open snapshot (embedded backend); None on a remote backend."""
        return getattr(self._state[0], "snapshot", None)

    @property
    def searcher(self):
        return self._state[1]

    def reload(self) -> bool:
        """Re-open if the data changed since it was opened: the index's pointer names another snapshot, or
        (Milvus) another push has finished. True when it swapped."""
        with self._lock:
            if self._version(self._state[0]) == self._state[2]:
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
        return self.search_result(query, top_k=top_k, mode=mode, filters=filters, explain=explain).hits

    def search_result(
        self,
        query: str,
        top_k: int = 10,
        mode: str = "hybrid",
        filters: Filters | None = None,
        explain: bool = False,
        preload: bool = False,
    ) -> SearchResult:
        """The hits with the plan the search actually used (rule and weights after the weak-lexical check)
        and its stage times; safe to call from several threads at once.

        ``preload``: for a cold process's first search (the CLI) — the query's analyzers load in a thread
        while the model embeds the query here, so the search waits for the slower of the two, not both.
        The same functions compute the same plan and vector: the result does not change.

        ValueError when an argument is past the limits every entry applies (:class:`hanrag.records.SearchLimits`:
        ``[server] max_query_chars`` and ``max_top_k``, tiers 0-99, a source glob of at most 500 characters)."""
        # the bounds every entry applies ([server] max_query_chars, max_top_k; tiers 0-99; glob length): a value
        # past them is one ValueError here, never an OverflowError or minutes of work further down
        SearchLimits.of(self.config.server).check(query, top_k, mode, filters)
        searcher = self._state[1]  # one read: a concurrent reload cannot switch it mid-search
        qvec = self._preload(searcher, query, mode) if preload else None
        return searcher.run(query, top_k=top_k, mode=mode, filters=filters, explain=explain, qvec=qvec)

    @staticmethod
    def _preload(searcher, query: str, mode: str):
        """Plan ``query`` in a thread (loads Kiwi / jieba as its text and lexicon expansions need) while the
        embedder encodes it here (its C engine or torch runs without the GIL); the query vector, or None."""
        if not query or not query.strip():
            return None  # run() reports the empty query
        planner = threading.Thread(target=_quietly, args=(searcher.plan, query, mode), name="hanrag-preload")
        planner.start()
        try:
            return searcher.embed_query(query) if mode != "bm25" and searcher.embedder is not None else None
        finally:
            planner.join()

    def plan(self, query: str, mode: str = "hybrid") -> QueryPlan:
        """The plan decided from the query text alone, before retrieval. A hybrid search may still switch
        to the weak-lexical rule once BM25 has run: use :meth:`search_result` for the plan that was used."""
        check_query(query, self.config.server.max_query_chars)
        check_mode(mode)
        return self._state[1].plan(query, mode)

    def chunk(self, chunk_id: str) -> Chunk:
        return self._state[1].backend.get_chunks([chunk_id])[0]

    def document(self, doc_id: str) -> list[Chunk]:
        chunks = self._state[1].backend.doc_chunks(doc_id)
        if not chunks:
            raise KeyError(f"unknown document {doc_id!r} in index {self.index_dir}")
        return chunks

    def stats(self) -> dict[str, Any]:
        backend = self._state[0]
        if backend.name == "milvus":
            return self._remote_stats(backend)
        snap = backend.snapshot
        m = snap.manifest
        langs: dict[str, int] = {}
        tiers: dict[str, int] = {}
        for c in snap.chunks:
            langs[c.lang] = langs.get(c.lang, 0) + 1
            tiers[str(c.tier)] = tiers.get(str(c.tier), 0) + 1
        size = sum(p.stat().st_size for p in Path(snap.path).rglob("*") if p.is_file())
        return {
            "index_dir": str(self.index_dir),
            "backend": "embedded",
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
            "glossary": m.get("glossary") or {},  # the 한글(English) pairs the corpus glosses itself (search expansion)
            "hanrag_version": m.get("hanrag_version"),
        }

    @staticmethod
    def _remote_stats(backend) -> dict[str, Any]:
        """Stats of a Milvus collection from its manifest: no full scan (per-language/tier counts and the
        on-disk size are the server's business, so they are left out rather than guessed)."""
        m = backend.manifest()
        info = m.get("backend") or {}
        counts = m.get("counts") or {}
        return {
            "index_dir": None,
            "backend": "milvus",
            "uri": info.get("uri"),
            "collection": info.get("collection"),
            "state": info.get("state"),
            "snapshot": info.get("snapshot"),
            "chunks": backend.count(),
            "documents": counts.get("documents"),
            "duplicates": counts.get("duplicates"),
            "langs": None,
            "tiers": None,
            "bytes": None,
            "embedder": (m.get("embedder") or {}).get("identity") or m.get("embedder"),
            "built_at": m.get("created_at"),
            "pushed_at": info.get("pushed_at"),
            "build": m.get("build"),
            "glossary": m.get("glossary") or {},
            "hanrag_version": m.get("hanrag_version"),
        }

    def __repr__(self) -> str:
        backend = self._state[0]
        return (f"Index({str(self.index_dir)!r}, backend={backend.name!r}, version={self._state[2]!r}, "
                f"chunks={backend.count()})")


def _quietly(fn, *args: Any) -> None:
    """Run ``fn`` for its side effects (loading); an error is left for the real call to raise."""
    try:
        fn(*args)
    except Exception:
        pass


def open(index_dir: str | Path, config: Config | str | Path | None = None) -> Index:
    """Open an index for search: its current snapshot, or the [milvus] collection when the config's
    ``[backend] kind = "milvus"`` (``index_dir`` is then not read)."""
    return Index(index_dir, config)


def build(corpus: str | Path, index_dir: str | Path, config: Config | str | Path | None = None, **kwargs):
    """Build (or incrementally update) the index at ``index_dir`` from a corpus folder."""
    from hanrag.pipeline import build_index

    cfg = config if isinstance(config, Config) else load_config(config)
    return build_index(corpus, index_dir, cfg, **kwargs)
