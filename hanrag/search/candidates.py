"""The records the search stages hand on, each frozen: a stage reads its input and builds a new record.

One search runs (:class:`hanrag.search.searcher.Searcher`)::

    Request -> Planned (plan) -> Candidates (retrieve, :mod:`hanrag.search.retrieve`)
            -> Candidates (widen: more candidates, a new plan; :mod:`hanrag.search.widen`)
            -> Fused (fuse, :mod:`hanrag.search.fusion`)
            -> Ranking (rerank, then diversity; :mod:`hanrag.search.ranking`) -> hits (:mod:`hanrag.search.hits`)

A record's mappings are read-only views of copies made when the record is built, its id lists are tuples and its
arrays are read-only views, so no stage can change a record another stage (or a caller such as
``benchmarks/fit.py``) still holds: a stage that changes the candidate set returns a new :class:`Candidates`
(``dataclasses.replace``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from hanrag.records import Chunk, Filters, QueryPlan


def frozen_map(values: Mapping) -> Mapping:
    """A read-only view of a copy of ``values`` (same order)."""
    return MappingProxyType(dict(values))


def read_only(arr: np.ndarray | None) -> np.ndarray | None:
    """A read-only view of ``arr`` (the array itself stays writable for whoever owns it); None stays None."""
    if arr is None:
        return None
    view = np.asarray(arr).view()
    view.flags.writeable = False
    return view


@dataclass(frozen=True)
class Request:
    """One search as asked: what the stages after planning read and none of them changes."""

    query: str
    top_k: int
    mode: str
    filters: Filters | None
    qvec: np.ndarray | None  # a query vector given by the caller (benchmarks' cached vectors); None: embed the query
    k: int  # how many candidates each retriever draws (fusion and, when on, the reranker)
    # language -> the filters of its dense pool, drawn by retrieval with the query's own dense search (one scan of
    # the vectors serves them all: Widener.pools_wanted); empty: the cross-lingual stage draws what it needs itself
    pools: Mapping[str, Filters] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "qvec", read_only(self.qvec))
        object.__setattr__(self, "pools", frozen_map(self.pools))


@dataclass(frozen=True)
class Planned:
    """The plan stage's output: the plan and the weighted BM25 query (token -> weight, expansions included)."""

    plan: QueryPlan
    weights: Mapping[str, float]

    def __post_init__(self) -> None:
        object.__setattr__(self, "weights", frozen_map(self.weights))


@dataclass(frozen=True)
class Candidates:
    """One search's candidates: the union of the BM25 and dense lists with their chunks, the plan and the BM25
    query they were drawn with. Made by retrieval; the cross-lingual stage (:mod:`hanrag.search.widen`) returns
    new ones when it widens the BM25 query, re-plans or draws per-language dense pools."""

    plan: QueryPlan
    weights: Mapping[str, float]  # the BM25 query: token -> weight, expansions included
    qvec: np.ndarray | None  # the query vector (None when no dense side ran and none was given)
    bm25: Mapping[str, float]  # chunk id -> BM25 score, best first
    dense: Mapping[str, float]  # chunk id -> cosine, best first (per-language pools appended)
    ids: tuple[str, ...]  # the candidates: BM25's then dense's, first seen first
    chunks: Mapping[str, Chunk]  # every candidate's chunk
    offsets: Mapping[str, float] = field(default_factory=dict)  # per-language dense offsets (cross-lingual centring)
    bm25_scales: Mapping[str, float] = field(default_factory=dict)  # per-language BM25 factors (lexical parity)
    offset_weights: Mapping[str, float] = field(default_factory=dict)  # chunk id -> factor on its language's offset
    # language -> its dense pool ((chunk id, cosine), best first), drawn with the query's own dense search when the
    # backend scores every row once for all (the cross-lingual stage draws them itself otherwise)
    pools: Mapping[str, tuple[tuple[str, float], ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("weights", "bm25", "dense", "chunks", "offsets", "bm25_scales", "offset_weights", "pools"):
            object.__setattr__(self, name, frozen_map(getattr(self, name)))
        object.__setattr__(self, "ids", tuple(self.ids))
        object.__setattr__(self, "qvec", read_only(self.qvec))

    def centring(self, cid: str) -> float:
        """What the cross-lingual centring adds to candidate ``cid``'s cosine before fusion: minus its language's
        offset, times its script weight (``search.xling_centring_by_script``)."""
        return float(self.centrings((cid,))[0])

    def centrings(self, ids: Sequence[str]) -> np.ndarray:
        """:meth:`centring` of each of ``ids`` (zeros when no centring ran)."""
        if not self.offsets:
            return np.zeros(len(ids))
        offsets, weights, chunks = self.offsets, self.offset_weights, self.chunks
        return np.array([-offsets.get(chunks[c].lang, 0.0) * weights.get(c, 1.0) for c in ids], dtype=np.float64)
