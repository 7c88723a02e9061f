"""The embedded backend: the search pipeline's IndexBackend over a local snapshot.

Filters become a boolean mask applied before top-k (never after), and near-duplicate
rows are masked out of both retrievers: their kept copy is returned instead and
lists their sources via :meth:`duplicates_of`.

Dense search is exact below :data:`hanrag.index.dense.ANN_MIN_ROWS` chunks and walks the
snapshot's HNSW graph above. A filter stays a pre-filter there too: a selective one (few
allowed rows) is answered by exact scoring of the allowed rows only; a broad one by asking
the graph for enough neighbours that k allowed ones survive (oversampled by the allowed
share), falling back to exact scoring when too few do. Graph candidates are re-scored with
the stored vectors, so dense scores are the same numbers :meth:`dense_scores` returns.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.index import dense
from hanrag.index.snapshot import Snapshot, open_snapshot
from hanrag.records import Chunk, Filters

# a filter allowing at most this many rows (or under this share of the index) is searched exactly over
# the allowed rows: scoring 50k float16 rows takes a few ms, and an oversampled graph walk for a rare
# filter would visit more (benchmarks/scale.py measures both)
EXACT_FILTERED_MAX = 50_000
FILTERED_ANN_MIN_SHARE = 0.1
OVERSAMPLE = 1.5  # graph candidates per wanted result, over 1/allowed share
# gathering allowed rows costs about this many times a contiguous scan per row (100k chunks, a third
# allowed: gather 17.4 ms, scanning all and masking 12.5 ms; scale.py); above 1/GATHER_COST of the
# index, scanning everything under the mask is the faster exact search
GATHER_COST = 4
# below this many rows, searches of one query vector under several filters (a hybrid search's own dense search and
# its per-language pools) share one scan of every vector rather than walking the graph once per filter, side by side
# (benchmarks/scale.py: hybrid_p50_ms against hybrid_graph_p50_ms)
SHARED_SCAN_MAX_ROWS = 500_000


class EmbeddedBackend:
    name = "embedded"

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self._masks: OrderedDict[Filters, np.ndarray] = OrderedDict()
        # searches run side by side (server threads, a query's BM25 and dense retrieval): the LRU is shared
        self._masks_lock = threading.Lock()

    @classmethod
    def open(cls, index_dir: str | Path, *, verify: bool | str = True) -> EmbeddedBackend:
        return cls(open_snapshot(index_dir, verify=verify))

    def manifest(self) -> dict[str, Any]:
        return self.snapshot.manifest

    def count(self) -> int:
        return len(self.snapshot)

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        return self.snapshot.chunks.many(self.snapshot.rows(chunk_ids))

    def doc_chunks(self, doc_id: str) -> list[Chunk]:
        return [self.snapshot.chunks[r] for r in self.snapshot.doc_rows.get(doc_id, [])]

    def mask(self, filters: Filters | None) -> np.ndarray:
        """Rows a search may return: kept (not a near-duplicate) and accepted by the filters. Cached per filter."""
        key = filters if filters is not None and not filters.is_empty() else Filters()
        with self._masks_lock:
            hit = self._masks.get(key)
            if hit is not None:
                self._masks.move_to_end(key)
                return hit
        m = self.snapshot.kept.copy()
        if not key.is_empty():
            m &= self._filter_rows(key)
        with self._masks_lock:
            self._masks[key] = m
            if len(self._masks) > 64:
                self._masks.popitem(last=False)
        return m

    def _filter_rows(self, key: Filters) -> np.ndarray:
        """Rows the filter accepts: lang / tier / provenance on the memory-mapped columns, the rest (source glob,
        labels) by decoding the records those columns left."""
        snap = self.snapshot
        meta = snap.meta
        if meta is None:
            return np.fromiter((key.accepts(c) for c in snap.chunks), dtype=bool, count=len(snap))
        m = np.ones(len(snap), dtype=bool)
        if key.lang:
            m &= np.isin(meta["lang"], np.array([g.encode() for g in key.lang], dtype="S8"))
        if key.tier:
            m &= np.isin(meta["tier"], np.array(key.tier, dtype=np.int64))
        if key.provenance:
            m &= np.isin(meta["provenance"], np.array([p.encode() for p in key.provenance], dtype="S16"))
        if key.source_glob or key.labels:
            rows = np.flatnonzero(m)
            m[rows] = np.fromiter((key.accepts(snap.chunks[int(r)]) for r in rows), dtype=bool, count=rows.size)
        return m

    def _ids(self, rows: np.ndarray, scores: np.ndarray) -> list[tuple[str, float]]:
        # no record decoded just for its id; one gather from the mapped ids, not one memmap access per row
        ids = self.snapshot.chunk_ids[np.asarray(rows, dtype=np.int64)].tolist()
        return [(i.decode("utf-8"), s) for i, s in zip(ids, np.asarray(scores, dtype=np.float64).tolist(), strict=True)]

    def sparse_search(
        self, query: Mapping[str, float], k: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        if not query or k <= 0:
            return []
        rows, scores = self.snapshot.sparse.top_k(query, k, mask=self.mask(filters))
        rows, scores = np.asarray(rows), np.asarray(scores)
        keep = scores > 0  # a BM25 score of 0 means no query token matched
        return self._ids(rows[keep], scores[keep])

    def sparse_scores(self, query: Mapping[str, float], chunk_ids: Sequence[str]) -> np.ndarray:
        rows = self.snapshot.rows(chunk_ids)
        if not query or rows.size == 0:
            return np.zeros(rows.size, np.float32)
        return np.asarray(self.snapshot.sparse.row_scores(query, rows), dtype=np.float32)

    def sparse_ceiling(self, query: Mapping[str, float]) -> float:
        return self.snapshot.sparse.ceiling(query)

    def dense_search(self, qvec: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        rows, scores = self.dense_top_k(qvec, k, self.mask(filters))
        return self._ids(rows, scores)

    def dense_scan_shared(self) -> bool:
        """Whether :meth:`dense_search_each` scores every row once for all its filters: on an index without a graph,
        or with fewer rows than ``SHARED_SCAN_MAX_ROWS``."""
        return self.snapshot.ann is None or len(self.snapshot) < SHARED_SCAN_MAX_ROWS

    def dense_search_each(self, qvec: np.ndarray, k: int, filters: Sequence[Filters | None]
                          ) -> list[list[tuple[str, float]]]:
        if k <= 0:
            return [[] for _ in filters]
        masks = [self.mask(f) for f in filters]
        if not self.dense_scan_shared():
            return [self._ids(*self.dense_top_k(qvec, k, m)) for m in masks]
        # an exact search under a mask scans every row and masks the scores (dense.top_k): one scan serves all, and
        # on an index that has a graph it gives the exact top-k where the walks would give an approximate one
        scores = dense.inner_products(self.snapshot.embeddings, qvec)
        return [self._ids(*dense.top_k_scores(scores, k, m)) for m in masks]

    def dense_top_k(self, qvec: np.ndarray, k: int, mask: np.ndarray, *, exact: bool = False
                    ) -> tuple[np.ndarray, np.ndarray]:
        """(rows, cosine) of the k best allowed rows; ``exact`` forces the brute-force reference."""
        snap = self.snapshot
        ann = snap.ann
        if exact or ann is None:
            return dense.top_k(snap.embeddings, qvec, k, mask=mask)
        n = len(snap)
        allowed = int(np.count_nonzero(mask))
        if allowed <= EXACT_FILTERED_MAX or allowed < FILTERED_ANN_MIN_SHARE * n:
            return self._exact_filtered(qvec, k, mask, allowed)
        want = min(k, allowed)
        count = min(n, int(np.ceil(want * OVERSAMPLE * n / allowed)) + 10)
        rows, _ = ann.search(qvec, count)
        rows = rows[(rows >= 0) & (rows < n)]
        rows = rows[np.asarray(mask)[rows]]
        if rows.size < want:  # the filter removed more than expected near this query
            return self._exact_filtered(qvec, k, mask, allowed)
        idx, scores = dense.top_k_scores(dense.row_products(snap.embeddings, rows, qvec), k)
        return rows[idx], scores

    def _exact_filtered(self, qvec: np.ndarray, k: int, mask: np.ndarray, allowed: int
                        ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k of the allowed rows: score only them when few, else scan all under the mask."""
        emb = self.snapshot.embeddings
        if allowed * GATHER_COST < len(self.snapshot):
            return dense.top_k_rows(emb, np.flatnonzero(mask), qvec, k)
        return dense.top_k(emb, qvec, k, mask=mask)

    def dense_scores(self, qvec: np.ndarray, chunk_ids: Sequence[str]) -> np.ndarray:
        rows = self.snapshot.rows(chunk_ids)
        if rows.size == 0:
            return np.zeros(0, np.float32)
        return dense.row_products(self.snapshot.embeddings, rows, qvec)

    def duplicates_of(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        out = {}
        for cid in chunk_ids:
            row = self.snapshot.row_of.get(cid)
            if row is not None:
                also = self.snapshot.also_in(row)
                if also:
                    out[cid] = also
        return out
