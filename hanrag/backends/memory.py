"""An :class:`~hanrag.backends.base.IndexBackend` over in-memory arrays.

For tests that assemble an index from already-computed tokens and embeddings (no snapshot on
disk); the quality benchmarks build real indexes through ``hanrag.build`` instead. BM25 is
:class:`~hanrag.index.sparse.SparseIndex` — the embedded index's own scorer, built from the same
tokens — so a test on this backend sees the product's scores (``tests/test_backend_parity.py``
checks hits and scores against the embedded and Milvus backends for every BM25 method); dense is a
brute-force inner product.
Filters are applied to the candidate mask before top-K, like the real backends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hanrag.config import Bm25Config
from hanrag.index.glossary import mine_glossary
from hanrag.index.sparse import SparseIndex
from hanrag.records import Chunk, Filters


class MemoryBackend:
    name = "memory"

    def __init__(
        self,
        chunks: Sequence[Chunk],
        tokens: Sequence[Sequence[str]],
        vectors: np.ndarray,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        duplicates: Mapping[str, str] | None = None,
        manifest: dict[str, Any] | None = None,
    ) -> None:
        if not (len(chunks) == len(tokens) == len(vectors)):
            raise ValueError("chunks, tokens and vectors must be aligned")
        self.chunks = list(chunks)
        self.pos = {c.chunk_id: i for i, c in enumerate(self.chunks)}
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        bm25 = Bm25Config(method=method, k1=k1, b=b)
        self.sparse = SparseIndex.build([[str(t) for t in doc] for doc in tokens], bm25)
        n = len(self.chunks)
        # duplicate chunk id -> kept chunk id; duplicates never come back on their own
        self.dup_of = dict(duplicates or {})
        self.hidden = np.zeros(n, dtype=bool)
        for dup in self.dup_of:
            self.hidden[self.pos[dup]] = True
        langs: dict[str, int] = {}
        for c in self.chunks:
            langs[c.lang] = langs.get(c.lang, 0) + 1
        dense_mean = self.vectors.mean(axis=0).tolist() if n else None
        lang_of = np.array([c.lang for c in self.chunks])
        by_lang = {g: self.vectors[lang_of == g].mean(axis=0).tolist() for g in langs}
        self._manifest = {"backend": "memory", "chunks": n, "langs": langs, "dense_mean": dense_mean,
                          "dense_mean_by_lang": by_lang, "glossary": mine_glossary(c.text for c in self.chunks)}
        self._manifest.update(manifest or {})
        self._mask_cache: dict[Filters, np.ndarray] = {}

    # -- protocol -----------------------------------------------------------------------------------
    def manifest(self) -> dict[str, Any]:
        return dict(self._manifest)

    def count(self) -> int:
        return len(self.chunks)

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        return [self.chunks[self.pos[c]] for c in chunk_ids]

    def doc_chunks(self, doc_id: str) -> list[Chunk]:
        return sorted((c for c in self.chunks if c.doc_id == doc_id), key=lambda c: c.start)

    def _mask(self, filters: Filters | None) -> np.ndarray:
        if filters is None or filters.is_empty():
            return ~self.hidden
        m = self._mask_cache.get(filters)
        if m is None:
            m = np.array([filters.accepts(c) for c in self.chunks], dtype=bool) & ~self.hidden
            self._mask_cache[filters] = m
        return m

    def sparse_search(
        self, query: Mapping[str, float], k: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        if not query or k <= 0:
            return []
        rows, scores = self.sparse.top_k(query, k, mask=self._mask(filters))
        return [(self.chunks[int(r)].chunk_id, float(s)) for r, s in zip(rows, scores, strict=True)]

    def sparse_scores(self, query: Mapping[str, float], chunk_ids: Sequence[str]) -> np.ndarray:
        return self.sparse.row_scores(query, np.array([self.pos[c] for c in chunk_ids], dtype=np.int64))

    def sparse_ceiling(self, query: Mapping[str, float]) -> float:
        return self.sparse.ceiling(query)

    def dense_search(self, qvec: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        return self.dense_search_each(qvec, k, [filters])[0]

    def dense_scan_shared(self) -> bool:
        return True

    def dense_search_each(self, qvec: np.ndarray, k: int, filters: Sequence[Filters | None]
                          ) -> list[list[tuple[str, float]]]:
        if k <= 0:
            return [[] for _ in filters]
        scores = self.vectors @ np.asarray(qvec, dtype=np.float32).reshape(-1)
        return [self._best(scores, k, f) for f in filters]

    def _best(self, scores: np.ndarray, k: int, filters: Filters | None) -> list[tuple[str, float]]:
        cand = np.flatnonzero(self._mask(filters))
        if len(cand) > k:
            cand = cand[np.argpartition(-scores[cand], k - 1)[:k]]
        order = np.lexsort((cand, -scores[cand]))  # score descending, then row, as the embedded backend
        return [(self.chunks[int(i)].chunk_id, float(scores[i])) for i in cand[order]]

    def dense_scores(self, qvec: np.ndarray, chunk_ids: Sequence[str]) -> np.ndarray:
        idx = [self.pos[c] for c in chunk_ids]
        return (self.vectors[idx] @ np.asarray(qvec, dtype=np.float32).reshape(-1)).astype(np.float32)

    def duplicates_of(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """As the embedded snapshot names them: each duplicate's source (else path, else doc id), once, and
        never the kept chunk's own source."""
        out: dict[str, list[str]] = {}
        wanted = set(chunk_ids)
        for dup, kept in self.dup_of.items():
            if kept not in wanted:
                continue
            c, own = self.chunks[self.pos[dup]], self.chunks[self.pos[kept]]
            name = c.source or c.path or c.doc_id
            names = out.setdefault(kept, [])
            if name != (own.source or own.path) and name not in names:
                names.append(name)
        return {k: tuple(v) for k, v in out.items() if v}
