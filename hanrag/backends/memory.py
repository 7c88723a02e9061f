"""An :class:`~hanrag.backends.base.IndexBackend` over in-memory arrays.

For tests and quality benchmarks that assemble an index from already-computed
tokens and embeddings (no snapshot on disk). BM25 is bm25s (same scoring as the
embedded index); dense is a brute-force inner product. Filters are applied to
the candidate mask before top-K, like the real backends.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

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
        import bm25s
        import scipy.sparse as sp

        if not (len(chunks) == len(tokens) == len(vectors)):
            raise ValueError("chunks, tokens and vectors must be aligned")
        self.chunks = list(chunks)
        self.pos = {c.chunk_id: i for i, c in enumerate(self.chunks)}
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        retriever = bm25s.BM25(method=method, k1=k1, b=b)
        # bm25s drops empty docs' tokens fine, but needs at least one token overall
        retriever.index([list(t) or [""] for t in tokens], show_progress=False)
        s = retriever.scores
        n = len(self.chunks)
        ncols = len(s["indptr"]) - 1
        # bm25s adds an empty-string token that has no column; keep only scored tokens
        self.vocab: dict[str, int] = {t: i for t, i in retriever.vocab_dict.items() if t and i < ncols}
        # (docs x vocab) matrix of per-token BM25 contributions; a weighted query is one mat-vec
        self.matrix = sp.csc_matrix((s["data"], s["indices"], s["indptr"]), shape=(n, ncols))
        self.df = np.diff(np.asarray(s["indptr"]))  # documents per token (column lengths)
        self.k1, self.method = k1, method
        # duplicate chunk id -> kept chunk id; duplicates never come back on their own
        self.dup_of = dict(duplicates or {})
        self.hidden = np.zeros(n, dtype=bool)
        for dup in self.dup_of:
            self.hidden[self.pos[dup]] = True
        langs: dict[str, int] = {}
        for c in self.chunks:
            langs[c.lang] = langs.get(c.lang, 0) + 1
        self._manifest = {"backend": "memory", "chunks": n, "langs": langs,
                          "dense_mean": self.vectors.mean(axis=0).tolist() if n else None, **(manifest or {})}
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

    def _all_sparse(self, query: Mapping[str, float]) -> np.ndarray:
        cols = [(self.vocab[t], w) for t, w in query.items() if t in self.vocab]
        if not cols:
            return np.zeros(len(self.chunks), dtype=np.float64)
        idx = np.array([c for c, _ in cols])
        w = np.array([w for _, w in cols], dtype=np.float64)
        return np.asarray(self.matrix[:, idx] @ w).reshape(-1)

    @staticmethod
    def _top(scores: np.ndarray, mask: np.ndarray, k: int, positive: bool) -> list[int]:
        ok = mask & (scores > 0) if positive else mask
        cand = np.flatnonzero(ok)
        if len(cand) > k:
            part = np.argpartition(-scores[cand], k - 1)[:k]
            cand = cand[part]
        return [int(i) for i in cand[np.argsort(-scores[cand], kind="stable")]]

    def sparse_search(
        self, query: Mapping[str, float], k: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        scores = self._all_sparse(query)
        return [(self.chunks[i].chunk_id, float(scores[i])) for i in self._top(scores, self._mask(filters), k, True)]

    def sparse_scores(self, query: Mapping[str, float], chunk_ids: Sequence[str]) -> np.ndarray:
        scores = self._all_sparse(query)
        return np.array([scores[self.pos[c]] for c in chunk_ids], dtype=np.float64)

    def sparse_ceiling(self, query: Mapping[str, float]) -> float:
        from hanrag.index.sparse import bm25_ceiling

        df_of = {t: int(self.df[self.vocab[t]]) for t in query if t in self.vocab}
        return bm25_ceiling(query, df_of, len(self.chunks), self.k1, self.method)

    def dense_search(self, qvec: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        scores = self.vectors @ np.asarray(qvec, dtype=np.float32)
        return [(self.chunks[i].chunk_id, float(scores[i])) for i in self._top(scores, self._mask(filters), k, False)]

    def dense_scores(self, qvec: np.ndarray, chunk_ids: Sequence[str]) -> np.ndarray:
        idx = [self.pos[c] for c in chunk_ids]
        return (self.vectors[idx] @ np.asarray(qvec, dtype=np.float32)).astype(np.float64)

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
