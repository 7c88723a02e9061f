"""Searches on Milvus: top-k BM25 and dense with every filter applied before the cut, exact BM25 of
given chunks, the ceiling of the weak-lexical measure, and Milvus-side fusion for the benchmark.

Source globs: an exact glob is a LIKE pushed down to Milvus (:mod:`.expressions`). Any other glob is
narrowed to its exact chunk ids with one scan of the LIKE superset, and that id list is kept per
(glob, other filters) until the collection changes: the version is read from the meta row (one
primary-key lookup) on every such search, so a push is seen at once and a glob never scans the
collection twice for one state of it.
"""

from __future__ import annotations

import fnmatch
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hanrag.backends.milvus.bm25 import query_vector
from hanrag.backends.milvus.connection import QUERY_LIMIT
from hanrag.backends.milvus.expressions import and_expr, filters_to_expr, glob_is_exact, in_list
from hanrag.backends.milvus.reads import ReadsMixin
from hanrag.index.sparse import bm25_ceiling
from hanrag.records import Filters
from hanrag.search.fusion import candidate_count  # the pool hanrag's own fusion draws

GLOB_CACHE_SIZE = 64


def meta_version(meta: Mapping[str, Any] | None) -> tuple | None:
    """What identifies one written state of the collection; None while a write is under way (nothing
    read then may be kept)."""
    if not meta or meta.get("state") != "complete":
        return None
    return (meta.get("generation"), meta.get("started_at"), meta.get("finished_at"), meta.get("n_docs"),
            meta.get("total_len"))  # fmt: skip


class SearchMixin(ReadsMixin):
    _qv_cache: tuple[tuple, float, dict[int, float]] | None = None
    _glob_cache: OrderedDict[tuple[str, str], tuple[tuple, str | None]]
    _glob_lock: threading.Lock

    def _put_meta(self, meta: dict[str, Any]) -> None:
        self._qv_cache = None  # statistics change with the meta row
        super()._put_meta(meta)

    # -------------------------------------------------------------- BM25 query side

    def _query_vector(self, query: Mapping[str, float]) -> dict[int, float]:
        """Sparse query vector {term id: weight * idf} from the current statistics (one lookup).

        The last one is reused for 2 s: the searcher asks for the same weights twice per
        query (top-k, then scores of the dense-only candidates); statistics change only
        on pushes, and a search racing a push may see either side of it anyway.
        """
        key = tuple(sorted(query.items()))
        cached = self._qv_cache
        if cached is not None and cached[0] == key and time.monotonic() - cached[1] < 2.0:
            return cached[2]
        n_docs, stats = self._term_stats(t for t, w in query.items() if w)
        vec = query_vector(query, stats, n_docs, self._method())
        self._qv_cache = (key, time.monotonic(), vec)
        return vec

    def sparse_ceiling(self, query: Mapping[str, float]) -> float:
        """The highest BM25 score any chunk could reach (``bm25_ceiling``) from the current df / N (one lookup)."""
        terms = [t for t, w in query.items() if w > 0]
        if not terms:
            return 0.0
        n_docs, stats = self._term_stats(terms)
        df_of = {t: df for t, (_, df) in stats.items()}
        bm = self.meta().get("bm25", {})
        return bm25_ceiling(query, df_of, n_docs, float(bm.get("k1", self.cfg.bm25.k1)), self._method())

    def sparse_scores(self, query: Mapping[str, float], chunk_ids: Sequence[str]) -> np.ndarray:
        """BM25 of given chunks: the stored tf parts dotted with the query vector, in hanrag (float32 as Milvus)."""
        if not chunk_ids:
            return np.zeros(0, dtype=np.float32)
        return self.sparse_scores_with(self._query_vector(query), chunk_ids)

    # -------------------------------------------------------------- filters

    def _search_filter(self, filters: Filters | None) -> str | None:
        """The expression for a search: filters plus 'not a folded duplicate'; None = nothing can match."""
        base = and_expr('dup_of == ""', filters_to_expr(filters))
        if filters is None or not filters.source_glob or glob_is_exact(filters.source_glob):
            return base
        return self._glob_ids_expr(filters.source_glob, base)

    def _glob_ids_expr(self, glob: str, base: str) -> str | None:
        """``base`` narrowed to the chunks the glob matches exactly, resolved once per collection version."""
        version = meta_version(self._read_meta())
        key = (glob, base)
        with self._glob_lock:  # the server searches from several threads
            hit = self._glob_cache.get(key)
            if hit is not None and version is not None and hit[0] == version:
                self._glob_cache.move_to_end(key)
                return hit[1]
        expr = self.resolve_glob(glob, base)  # outside the lock: a scan may take a while
        if version is not None:
            with self._glob_lock:
                self._glob_cache[key] = (version, expr)
                while len(self._glob_cache) > GLOB_CACHE_SIZE:
                    self._glob_cache.popitem(last=False)
        return expr

    def resolve_glob(self, glob: str, base: str) -> str | None:
        """One scan of the LIKE superset (``base`` holds it), the exact glob applied in hanrag."""
        rows = self._scan(self.collection, ["chunk_id", "source", "path"], base)
        ids = [r["chunk_id"] for r in rows if fnmatch.fnmatch(r["source"], glob) or fnmatch.fnmatch(r["path"], glob)]
        return and_expr(base, in_list("chunk_id", ids)) if ids else None

    # -------------------------------------------------------------- top-k

    def _search(self, field_name: str, vector: Any, k: int, expr: str, params: dict[str, Any]) -> list[tuple]:
        res = self._call(
            "search",
            self.client.search,
            self.collection,
            data=[vector],
            anns_field=field_name,
            limit=min(k, QUERY_LIMIT),
            filter=expr,
            search_params=params,
            output_fields=[],
            consistency_level=self.mcfg.consistency_level,
        )
        hits = [(str(h["id"]), float(h["distance"])) for h in res[0]]
        # deterministic order for equal scores (Milvus does not promise one)
        return sorted(hits, key=lambda h: (-h[1], h[0]))

    def sparse_search(
        self, query: Mapping[str, float], k: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        qvec = self._query_vector(query)
        if not qvec:
            return []
        expr = self._search_filter(filters)
        if expr is None:
            return []
        params = {"metric_type": "IP", "params": {"drop_ratio_search": 0.0}}
        return [(cid, s) for cid, s in self._search("sparse", qvec, k, expr, params) if s > 0]

    def dense_search(self, qvec: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        expr = self._search_filter(filters)
        if expr is None:
            return []
        vec = np.asarray(qvec, dtype=np.float32).reshape(-1).tolist()
        return self._search("dense", vec, k, expr, self._dense_params(k))

    def dense_scan_shared(self) -> bool:
        return False

    def dense_search_each(self, qvec: np.ndarray, k: int, filters: Sequence[Filters | None]
                          ) -> list[list[tuple[str, float]]]:
        # Milvus searches its own index per request: nothing is shared between the filters
        return [self.dense_search(qvec, k, f) for f in filters]

    def _dense_params(self, k: int) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self.mcfg.dense_index.upper() == "HNSW":
            params["ef"] = max(k, self.mcfg.hnsw_ef)
        elif self.mcfg.dense_index.upper() == "IVF_FLAT":
            params["nprobe"] = self.mcfg.ivf_nprobe
        return {"metric_type": "IP", "params": params}

    def hybrid_search_server(
        self,
        query: Mapping[str, float],
        qvec: np.ndarray,
        k: int,
        bm25_weight: float,
        dense_weight: float,
        filters: Filters | None = None,
        candidates: int | None = None,
    ) -> list[tuple[str, float]]:
        """Milvus-side fusion (hybrid_search + WeightedRanker), for comparison with fusion in hanrag."""
        from pymilvus import AnnSearchRequest, WeightedRanker

        expr = self._search_filter(filters)
        sparse_q = self._query_vector(query)
        if expr is None:
            return []
        n = candidate_count(k, candidates or 0)
        reqs, weights = [], []
        if sparse_q:
            reqs.append(AnnSearchRequest([sparse_q], "sparse", {"metric_type": "IP"}, n, expr=expr))
            weights.append(bm25_weight)
        dense = np.asarray(qvec, dtype=np.float32).reshape(-1).tolist()
        reqs.append(AnnSearchRequest([dense], "dense", self._dense_params(n), n, expr=expr))
        weights.append(dense_weight)
        res = self._call(
            "hybrid_search",
            self.client.hybrid_search,
            self.collection,
            reqs,
            WeightedRanker(*weights),
            limit=k,
            output_fields=[],
            consistency_level=self.mcfg.consistency_level,
        )
        return [(str(h["id"]), float(h["distance"])) for h in res[0]]
