"""The search pipeline: plan -> retrieve -> widen -> fuse -> learned ranking -> rerank -> diversify -> hits.

:class:`Searcher` runs the stages in order; each takes frozen records and returns a new one
(:mod:`hanrag.search.candidates`): the plan stage (:mod:`hanrag.search.plan`), retrieval
(:mod:`hanrag.search.retrieve`), the cross-lingual stage that widens the candidates (:mod:`hanrag.search.widen`),
fusion (here, over :mod:`hanrag.search.fusion`), the learned ranking (:mod:`hanrag.search.ranker` holds the model),
rerank and diversity (:mod:`hanrag.search.ranking`) and the hits
(:mod:`hanrag.search.hits`). What the index says about a query (its BM25 ceiling, lexical evidence, dense
background) is :mod:`hanrag.search.evidence`.

Written against :class:`hanrag.backends.base.IndexBackend` only, so the same code runs on the embedded snapshot
and on Milvus. Filters go to the backend (applied before top-K). Near-duplicates are never returned by the
backend; the kept hit lists their sources in ``also_in``.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from hanrag.backends.base import IndexBackend
from hanrag.config import Config
from hanrag.embed.blend import blend_weight, second_query
from hanrag.embed.use_m import USE_DIM
from hanrag.index.sparse import indexed_headings
from hanrag.records import Chunk, Filters, Hit, QueryPlan
from hanrag.search.candidates import Candidates, Planned, Request
from hanrag.search.evidence import Evidence
from hanrag.search.fusion import Fused, candidate_count, fuse
from hanrag.search.hits import make_hits
from hanrag.search.plan import QueryPlanner, promote_absent_terms
from hanrag.search.ranker import candidate_features, load_ranker, text_shape
from hanrag.search.ranking import diversify, learned_ranking, rerank
from hanrag.search.retrieve import Retriever
from hanrag.search.widen import Widener


@dataclass
class StageTimes:
    """Seconds spent per stage of one search (for benchmarks and the server's timing header); the one thing the
    stages write into, each its own fields."""

    plan: float = 0.0
    bm25: float = 0.0
    embed: float = 0.0
    dense: float = 0.0
    fusion: float = 0.0
    rerank: float = 0.0
    total: float = 0.0
    extra: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchResult:
    """One search, as it ran: the final plan (rule and weights actually used, which the hybrid
    pipeline may re-select once BM25 has run), the hits and the seconds per stage.

    Returned rather than stored on the searcher, so concurrent searches never see each other's state.
    """

    plan: QueryPlan
    hits: list[Hit]
    times: StageTimes


class Searcher:
    """Hybrid search over one backend. Heavy objects (embedder, analyzer, lexicon) are loaded once by the caller.

    Nothing of one search is stored on the searcher: one instance serves concurrent searches (per-search state
    lives in the records the stages hand on)."""

    def __init__(self, backend: IndexBackend, cfg: Config, embedder=None, analyzer=None, lexicon=None, reranker=None):
        self.backend = backend
        self.cfg = cfg
        self.embedder = embedder
        if analyzer is None:
            from hanrag.text import get_analyzer

            analyzer = get_analyzer(cfg)
        if lexicon is None:
            from hanrag.lexicon import load_lexicons

            lexicon = load_lexicons(cfg)
        self.analyzer = analyzer
        self.lexicon = lexicon
        self.planner = QueryPlanner(cfg, analyzer, lexicon)
        self._reranker = reranker
        # loaded here, not at the first search: a model file that cannot be read fails when the index opens
        self.ranker = load_ranker(cfg.search.ranker)
        self.evidence = Evidence(backend, analyzer)
        self.retriever = Retriever(backend, lambda query: self.embed_query(query),
                                   self.evidence.neutral if cfg.search.language_neutral_query else None)
        self.widener = Widener(backend, cfg, analyzer, self.planner, self.evidence, self.retriever.large)

    # -- pieces -------------------------------------------------------------------------------------
    @property
    def glossary(self):
        """The corpus glossary of the open snapshot as a lexicon, or None (:attr:`Widener.glossary`)."""
        return self.widener.glossary

    @property
    def sound_keys(self) -> dict[str, dict[str, list[str]]]:
        """The open snapshot's words by consonant key (:attr:`Widener.sound_keys`)."""
        return self.widener.sound_keys

    @property
    def reranker(self):
        if self._reranker is None and self.cfg.search.rerank.model:
            from hanrag.search.rerank import get_reranker  # lazy: only configs with a reranker load torch

            self._reranker = get_reranker(self.cfg.search.rerank)  # one model per config, kept across swaps
        return self._reranker

    def index_langs(self) -> tuple[str, ...]:
        """Languages present in the index (from the manifest's per-language counts when given)."""
        return self.widener.index_langs()

    def plan(self, query: str, mode: str = "hybrid") -> QueryPlan:
        return self.planner.plan(query, mode)[0]

    def embed_query(self, query: str) -> np.ndarray:
        if self.embedder is None:
            raise RuntimeError("dense search needs an embedder (pass embedder= or use hanrag.open)")
        vec = np.asarray(self.embedder.encode_queries([query]), dtype=np.float32).reshape(-1)
        return vec

    # -- pipeline -----------------------------------------------------------------------------------
    def search(
        self,
        query: str,
        top_k: int = 10,
        mode: str = "hybrid",
        filters: Filters | None = None,
        explain: bool = False,
        qvec: np.ndarray | None = None,
    ) -> list[Hit]:
        """Top-``top_k`` hits for ``query`` (:meth:`run` without the plan and stage times)."""
        return self.run(query, top_k, mode, filters, explain, qvec).hits

    def run(
        self,
        query: str,
        top_k: int = 10,
        mode: str = "hybrid",
        filters: Filters | None = None,
        explain: bool = False,
        qvec: np.ndarray | None = None,
    ) -> SearchResult:
        """Top-``top_k`` hits for ``query`` with the final plan and stage times.

        ``qvec`` skips query embedding (benchmarks with cached vectors).
        """
        if not query or not query.strip():
            raise ValueError("empty query")
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        if filters is not None and filters.is_empty():
            filters = None
        times = StageTimes()
        t0 = time.perf_counter()
        request = self.request(query, top_k, mode, filters, qvec)
        cand, fused = self.fused_stages(request, times)
        if fused is None:
            times.total = time.perf_counter() - t0
            return SearchResult(cand.plan, [], times)
        ranking = learned_ranking(self.ranker, lambda rows: self.ranking_features(cand, fused, rows), cand, fused,
                                  times, explain)
        ranking = rerank(self.reranker, self.cfg.search.rerank.candidates, request, cand, ranking, times)
        if self.cfg.search.diversity:
            ranking = diversify(cand, ranking, self.cfg.search.diversity_factors)
        hits = make_hits(self.backend, self.analyzer, cand, fused, ranking, top_k, explain,
                         self.indexed_headings if explain else False)
        times.total = time.perf_counter() - t0
        return SearchResult(ranking.plan, hits, times)

    def request(self, query: str, top_k: int = 10, mode: str = "hybrid", filters: Filters | None = None,
                qvec: np.ndarray | None = None) -> Request:
        """The search as the stages read it, with how many candidates each retriever draws: enough for fusion
        and, when on, the reranker."""
        sc = self.cfg.search
        k = candidate_count(top_k, sc.candidates)
        if sc.rerank.model:
            k = max(k, sc.rerank.candidates)
        # the language pools the cross-lingual stage is sure to draw, drawn with the query's own dense search when one
        # scan of the vectors serves them all
        pools = self.widener.pools_wanted(mode, filters) if self.backend.dense_scan_shared() else {}
        return Request(query, top_k, mode, filters, qvec, k, pools)

    def fused_candidates(self, query: str, top_k: int = 10, mode: str = "hybrid", filters: Filters | None = None,
                         qvec: np.ndarray | None = None, times: StageTimes | None = None,
                         ) -> tuple[Candidates, Fused | None]:
        """Plan, retrieve, the cross-lingual stage and fusion — the pipeline up to rerank. ``fused`` is None
        when nothing was retrieved. ``benchmarks/fit.py`` re-weights the fused candidates' normalised scores
        (:func:`hanrag.search.fusion.reweight`)."""
        return self.fused_stages(self.request(query, top_k, mode, filters, qvec),
                                 times if times is not None else StageTimes())

    def fused_stages(self, request: Request, times: StageTimes) -> tuple[Candidates, Fused | None]:
        """:meth:`fused_candidates` for a built request."""
        planned = self.planned(request, times)
        cand = self.retriever.retrieve(request, planned, times)
        # said in the plan (every score explained): the dense side ran on the language-neutral vector
        if self.retriever.neutral is not None and request.mode != "bm25" and cand.qvec is not None:
            axes = int(self.evidence.language_axes().shape[0])
            cand = dataclasses.replace(cand, plan=dataclasses.replace(cand.plan, language_axes=axes))
        if not cand.ids:
            return cand, None
        if request.mode == "hybrid" and self.cfg.search.cross_lingual:
            cand = self.widener.widen(request, cand, times)
        t = time.perf_counter()
        fused = self.fuse(cand)
        times.fusion = time.perf_counter() - t
        return cand, fused

    # -- the stages this class holds (the others are modules of their own) --------------------------
    def planned(self, request: Request, times: StageTimes) -> Planned:
        """The plan stage: the plan from the query text (:class:`QueryPlanner`), and, unless dense-only, a lexicon
        term no chunk holds gives way to its equivalents (:func:`promote_absent_terms`)."""
        t0 = time.perf_counter()
        plan, weights = self.planner.plan(request.query, request.mode)
        if request.mode != "dense":
            plan, weights = promote_absent_terms(plan, weights, self.cfg.lexicon.expansion_weight,
                                                 self.evidence.absent)
        times.plan = time.perf_counter() - t0
        return Planned(plan, weights)

    def fuse(self, cand: Candidates) -> Fused:
        """The fusion stage: fused scores over ``cand.ids`` — weighted fusion in hybrid mode, else the one
        retriever's raw score."""
        sc = self.cfg.search
        mode = cand.plan.mode
        b_arr, d_arr = self._scores(cand, mode)
        if cand.offsets:
            d_arr = d_arr + cand.centrings(cand.ids)
        if cand.bm25_scales:
            b_arr = b_arr * np.array([cand.bm25_scales.get(cand.chunks[c].lang, 1.0) for c in cand.ids])
        if mode == "hybrid":
            ceiling = self.evidence.query_ceiling(cand.plan, cand.weights) if sc.fusion == "ceiling" else 0.0
            langs = [cand.chunks[c].lang for c in cand.ids] if sc.dense_background == "language" else None
            background = self.evidence.dense_background(cand.qvec, langs) if sc.fusion == "calibrated" else None
            return fuse(cand.ids, b_arr, d_arr, cand.plan.bm25_weight, cand.plan.dense_weight, sc.fusion, sc.rrf_k,
                        ceiling, background)
        raw = b_arr if mode == "bm25" else d_arr
        return Fused(cand.ids, b_arr, d_arr, np.nan_to_num(b_arr), np.nan_to_num(d_arr),
                     np.nan_to_num(raw, nan=-np.inf), mode)

    def _scores(self, cand: Candidates, mode: str) -> tuple[np.ndarray, np.ndarray]:
        """BM25 and dense score arrays over ``cand.ids`` (NaN = not scored); in hybrid mode with
        ``fill_missing``, a candidate only one retriever found is scored by the other too."""
        ids = cand.ids
        b_arr = np.array([cand.bm25.get(c, np.nan) for c in ids], dtype=np.float64)
        d_arr = np.array([cand.dense.get(c, np.nan) for c in ids], dtype=np.float64)
        if self.cfg.search.fill_missing and mode == "hybrid":
            miss_b = [i for i, c in enumerate(ids) if c not in cand.bm25]
            miss_d = [i for i, c in enumerate(ids) if c not in cand.dense]
            if miss_b and cand.weights:
                b_arr[miss_b] = self.backend.sparse_scores(cand.weights, [ids[i] for i in miss_b])
            if miss_d and cand.qvec is not None:
                d_arr[miss_d] = self.backend.dense_scores(cand.qvec, [ids[i] for i in miss_d])
        return b_arr, d_arr

    @functools.cached_property
    def indexed_headings(self) -> bool:
        """Whether the index's BM25 holds each chunk's title and heading path (read from its manifest once: a
        searcher serves one index, and on Milvus the manifest is a round trip)."""
        return indexed_headings(self.backend.manifest())

    def ranking_features(self, cand: Candidates, fused: Fused, rows: Sequence[int] | None = None) -> np.ndarray:
        """The learned ranker's features (:func:`hanrag.search.ranker.candidate_features`) of the candidates at
        ``rows`` (indices into ``cand.ids``; default all), each measured against the whole pool as in training."""
        idx = np.arange(len(cand.ids)) if rows is None else np.asarray(rows, dtype=np.int64)
        ids = [cand.ids[i] for i in idx]
        own_tokens = set(cand.plan.tokens)
        own = {t: w for t, w in cand.weights.items() if t in own_tokens}
        expansion = {t: w for t, w in cand.weights.items() if t not in own_tokens}
        own_scores = self.backend.sparse_scores(own, ids) if own else np.zeros(len(ids))
        exp_scores = self.backend.sparse_scores(expansion, ids) if expansion else np.zeros(len(ids))
        chunks = [cand.chunks[c] for c in ids]
        raw = np.asarray(fused.dense_raw, dtype=np.float64)
        script, symbols = text_shape([c.text for c in chunks], cand.plan.lang)
        second = self.second_cosines(cand)
        return candidate_features(
            ids, fused.fused[idx], fused.bm25_norm[idx], fused.dense_norm[idx], raw[idx], own_scores, exp_scores,
            self.query_ceiling(cand.plan, cand.weights), np.array([c.lang == cand.plan.lang for c in chunks]),
            cand.bm25, cand.dense, np.array([len(c.text) for c in chunks]),
            cand.centrings(ids),
            dense_best=float(np.nanmax(raw)) if np.isfinite(raw).any() else 0.0, script_share=script,
            symbol_share=symbols, second=None if second is None else second[idx],
            second_best=None if second is None else float(second.max(initial=0.0)))

    @functools.cached_property
    def second_weight(self) -> float:
        """The second encoder's weight in the index's vectors (its manifest's embedder identity; 0 without one)."""
        return blend_weight((self.backend.manifest().get("embedder") or {}).get("identity") or {})

    def second_cosines(self, cand: Candidates) -> np.ndarray | None:
        """The second encoder's cosine of every pool candidate (``embedder.cross_lingual_weight``; None without one
        or without a query vector): read from the blended vectors the index holds, no second query embedding."""
        weight = self.second_weight
        if weight <= 0 or cand.qvec is None or not cand.ids:
            return None
        query = second_query(cand.qvec, weight, USE_DIM)
        return np.asarray(self.backend.dense_scores(query, list(cand.ids)), dtype=np.float64)

    # -- what the index says about a query (hanrag.search.evidence) ----------------------------------
    def lexical_evidence(self, plan: QueryPlan, weights: Mapping[str, float], bm25: Mapping[str, float],
                         chunks: Mapping[str, Chunk], lang: str | None = None, ceiling: float | None = None) -> float:
        """:meth:`Evidence.lexical_evidence`."""
        return self.evidence.lexical_evidence(plan, weights, bm25, chunks, lang, ceiling)

    def translated_evidence(self, plan: QueryPlan, weights: Mapping[str, float], bm25: Mapping[str, float]) -> float:
        """:meth:`Evidence.translated_evidence`."""
        return self.evidence.translated_evidence(plan, weights, bm25)

    def dense_background(self, qvec: np.ndarray | None, langs: Sequence[str] | None = None
                         ) -> float | np.ndarray | None:
        """:meth:`Evidence.dense_background`."""
        return self.evidence.dense_background(qvec, langs)

    def query_ceiling(self, plan: QueryPlan, weights: Mapping[str, float]) -> float:
        """:meth:`Evidence.query_ceiling`."""
        return self.evidence.query_ceiling(plan, weights)
