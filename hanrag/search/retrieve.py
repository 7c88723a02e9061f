"""The retrieve stage: BM25 top-K and dense top-K for a planned query, the union of their ids with their chunks.

On a large index the dense side (embedding the query, walking the HNSW graph) runs in a worker thread while BM25
runs in the caller's: both release the GIL for most of their time. Filters go to the backend (applied before
top-K).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import numpy as np

from hanrag.backends.base import IndexBackend
from hanrag.search.candidates import Candidates, Planned, Request

if TYPE_CHECKING:
    from hanrag.search.searcher import StageTimes

# from this size a dense search costs over 10 ms, whether it scans every vector or walks the graph
# (benchmarks/scale.py), and BM25 can run beside it
PARALLEL_MIN_ROWS = 100_000

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def dense_workers() -> ThreadPoolExecutor:
    """The process's worker threads for a query's dense searches on a large index (created on first use): the dense
    side beside BM25, and the cross-lingual stage's per-language pools side by side."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(thread_name_prefix="hanrag-dense")
        return _POOL


class Retriever:
    """Draws a query's candidates from one backend; ``embed`` turns a query into its vector."""

    def __init__(self, backend: IndexBackend, embed: Callable[[str], np.ndarray],
                 neutral: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        self.backend = backend
        self.embed = embed
        self.neutral = neutral  # the query vector made language-neutral (Evidence.neutral) before any dense step
        self._parallel: bool | None = None  # dense side in a worker (large indexes; decided on first search)

    def large(self) -> bool:
        """The index is big enough for the dense side to run beside BM25 (asked of the backend once)."""
        if self._parallel is None:
            self._parallel = self.backend.count() >= PARALLEL_MIN_ROWS
        return self._parallel

    def retrieve(self, request: Request, planned: Planned, times: StageTimes) -> Candidates:
        """Sparse top-K and dense top-K (``request.k`` each, per ``request.mode``); the union of their ids, with
        chunks loaded when there are any. Seconds go to ``times`` (bm25, embed, dense)."""
        mode, k, filters, weights = request.mode, request.k, request.filters, planned.weights
        qvec = request.qvec
        bm25: dict[str, float] = {}
        dense: dict[str, float] = {}
        pools: dict[str, tuple[tuple[str, float], ...]] = {}

        def dense_side() -> tuple[np.ndarray, dict[str, float], dict[str, tuple[tuple[str, float], ...]]]:
            t = time.perf_counter()
            vec = self.embed(request.query) if request.qvec is None else request.qvec
            if self.neutral is not None:
                vec = self.neutral(vec)
            times.embed = time.perf_counter() - t
            t = time.perf_counter()
            # one backend call draws the query's own search and each language's pool the request names: on an index
            # searched exactly, one scan of every vector serves them all (four scans were most of a hybrid search's
            # time, benchmarks/scale.py)
            found, *each = self.backend.dense_search_each(vec, k, [filters, *request.pools.values()])
            times.dense = time.perf_counter() - t
            return vec, dict(found), {lang: tuple(hits) for lang, hits in zip(request.pools, each, strict=True)}

        # hybrid on a large index: the dense side runs in a worker while BM25 runs here (the HNSW walk and BLAS
        # release the GIL; at 1M chunks BM25's time hides behind the graph walk's). On a small index both take
        # a few ms and the hand-over to a thread would cost more than it saves (the embedder keeps the GIL)
        pending = dense_workers().submit(dense_side) if mode == "hybrid" and weights and self.large() else None
        if mode != "dense" and weights:
            t = time.perf_counter()
            try:
                bm25 = dict(self.backend.sparse_search(weights, k, filters))
            except BaseException:
                if pending is not None and not pending.cancel():
                    pending.exception()  # wait for it: never leave a worker searching on its own
                raise
            times.bm25 = time.perf_counter() - t
        if pending is not None:
            qvec, dense, pools = pending.result()
        elif mode != "bm25":
            qvec, dense, pools = dense_side()
        ids = list(dict.fromkeys([*bm25, *dense]))
        # no backend round trip for an empty candidate set (the caller returns early)
        chunks = dict(zip(ids, self.backend.get_chunks(ids), strict=True)) if ids else {}
        return Candidates(planned.plan, planned.weights, qvec, bm25, dense, tuple(ids), chunks, pools=pools)
