"""The search pipeline: plan -> retrieve -> fuse -> rerank -> diversify -> hits.

Written against :class:`hanrag.backends.base.IndexBackend` only, so the same
code runs on the embedded snapshot and on Milvus. Filters go to the backend
(applied before top-K). Near-duplicates are never returned by the backend; the
kept hit lists their sources in ``also_in``.

Size (about 500 lines): the stages of one query in order; each stage is a method, the cross-lingual stage
the largest.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from hanrag.backends.base import IndexBackend
from hanrag.config import Config
from hanrag.index.dense import ANN_MIN_ROWS
from hanrag.records import Chunk, Explanation, Filters, Hit, QueryPlan
from hanrag.search.diversity import apply_diversity
from hanrag.search.fusion import Fused, candidate_count, fuse
from hanrag.search.plan import QueryPlanner

LANGS = ("ko", "zh", "en")
# from the size where the embedded backend walks its HNSW graph, a dense search costs over 10 ms
# (benchmarks/scale.py) and BM25 can run beside it
PARALLEL_MIN_ROWS = ANN_MIN_ROWS

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


_Extra = dict[str, tuple[float, str]]  # expansion tokens to add to a query: token -> (weight, origin)


def _pool() -> ThreadPoolExecutor:
    """The process's worker threads for a query's dense side (created on first hybrid search)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(thread_name_prefix="hanrag-dense")
        return _POOL


@dataclass
class StageTimes:
    """Seconds spent per stage of one search (for benchmarks and the server's timing header)."""

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


@dataclass
class _Candidates:
    """One search's candidate state between retrieve and fuse. Built per call of :meth:`Searcher.run`
    and passed between its stages, never stored on the searcher (searches run concurrently).

    Mutable because the cross-lingual stage re-plans, widens the BM25 query and adds candidates.
    """

    plan: QueryPlan
    weights: dict[str, float]
    qvec: np.ndarray | None
    bm25: dict[str, float]
    dense: dict[str, float]
    ids: list[str]
    chunks: dict[str, Chunk]
    offsets: dict[str, float] = field(default_factory=dict)  # per-language dense offsets (cross-lingual centring)


@dataclass(frozen=True)
class _Ranking:
    """Candidate indices (into ``_Candidates.ids``) in final order with their scores.

    ``pre``/``penalties`` are the scores before diversity and its penalties; None (no diversity) means
    pre == scores and every penalty is 1.
    """

    order: list[int]
    scores: list[float]
    rerank_raw: dict[int, float] = field(default_factory=dict)
    pre: list[float] | None = None
    penalties: list[float] | None = None

    def pre_score(self, pos: int) -> float:
        return self.scores[pos] if self.pre is None else self.pre[pos]

    def penalty(self, pos: int) -> float:
        return 1.0 if self.penalties is None else self.penalties[pos]


def _with_lang(filters: Filters | None, lang: str) -> Filters:
    base = filters or Filters()
    if base.lang and lang not in base.lang:
        return Filters(lang=("__none__",))  # the user's filter already excludes this language
    return Filters(lang=(lang,), tier=base.tier, provenance=base.provenance, source_glob=base.source_glob,
                   labels=base.labels)


class Searcher:
    """Hybrid search over one backend. Heavy objects (embedder, analyzer, lexicon) are loaded once by the caller."""

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
        self._index_langs: tuple[str, ...] | None = None
        self._dense_mean: np.ndarray | None = None
        self._lang_means: dict[str, np.ndarray] = {}
        self._parallel: bool | None = None  # dense side in a worker (large indexes; decided on first search)

    # -- pieces -------------------------------------------------------------------------------------
    @functools.cached_property
    def glossary(self):
        """The corpus glossary of the open snapshot (its manifest's ``glossary``, less ``search.glossary_exclude``)
        as a lexicon; None without one or with ``search.glossary_weight`` 0. Read once: a searcher serves one
        snapshot."""
        from hanrag.lexicon import Lexicon

        entries = (self.backend.manifest() or {}).get("glossary") if self.cfg.search.glossary_weight > 0 else None
        drop = {t.casefold() for t in self.cfg.search.glossary_exclude}
        clean: dict[str, list[str]] = {}
        for term, equivs in (entries.items() if isinstance(entries, dict) else ()):
            kept = [str(e) for e in equivs if str(e).casefold() not in drop] if isinstance(equivs, list) else []
            if kept and str(term).casefold() not in drop:
                clean[str(term)] = kept
        return Lexicon(clean) if clean else None

    @functools.cached_property
    def sound_keys(self) -> dict[str, dict[str, list[str]]]:
        """The open snapshot's English words and Korean loanwords by consonant key (its manifest's ``sound_keys``,
        :mod:`hanrag.index.links`); empty without them or with ``search.link_weight`` 0."""
        keys = (self.backend.manifest() or {}).get("sound_keys") if self.cfg.search.link_weight > 0 else None
        if not isinstance(keys, dict):
            return {}
        return {side: {str(k): [str(w) for w in ws] for k, ws in table.items() if isinstance(ws, list)}
                for side, table in keys.items() if isinstance(table, dict)}

    @property
    def reranker(self):
        if self._reranker is None and self.cfg.search.rerank.model:
            from hanrag.search.rerank import get_reranker  # lazy: only configs with a reranker load torch

            self._reranker = get_reranker(self.cfg.search.rerank)  # one model per config, kept across swaps
        return self._reranker

    def index_langs(self) -> tuple[str, ...]:
        """Languages present in the index (from the manifest's per-language counts when given)."""
        if self._index_langs is None:
            counts = (self.backend.manifest() or {}).get("langs") or {}
            langs = tuple(lang for lang in LANGS if counts.get(lang, 0) > 0) if isinstance(counts, dict) else ()
            self._index_langs = langs or LANGS
        return self._index_langs

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

        ``qvec`` skips query embedding (benchmarks with cached vectors). Nothing is stored on
        the searcher: one instance serves concurrent searches (per-search state lives in locals).
        """
        if not query or not query.strip():
            raise ValueError("empty query")
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1, got {top_k}")
        if filters is not None and filters.is_empty():
            filters = None
        times = StageTimes()
        t0 = time.perf_counter()
        cand, fused = self.fused_candidates(query, top_k, mode, filters, qvec, times)
        if fused is None:
            times.total = time.perf_counter() - t0
            return SearchResult(cand.plan, [], times)
        order = [int(i) for i in fused.order()]
        ranking = self._rerank(query, cand, fused, order, top_k, times)
        ranking = self._diversify(cand, ranking)
        hits = self._hits(cand, fused, ranking, top_k, explain)
        times.total = time.perf_counter() - t0
        return SearchResult(cand.plan, hits, times)

    def fused_candidates(self, query: str, top_k: int = 10, mode: str = "hybrid", filters: Filters | None = None,
                         qvec: np.ndarray | None = None, times: StageTimes | None = None,
                         ) -> tuple[_Candidates, Fused | None]:
        """Plan, retrieve, the cross-lingual stage and fusion — the pipeline up to rerank. ``fused`` is None
        when nothing was retrieved. :meth:`run` continues from here; ``benchmarks/fit.py`` re-weights the
        fused candidates' normalised scores."""
        times = times if times is not None else StageTimes()
        t0 = time.perf_counter()
        plan, weights = self.planner.plan(query, mode)
        if mode != "dense":
            plan, weights = self._promote_absent_terms(plan, weights)
        times.plan = time.perf_counter() - t0
        k = self._candidate_k(top_k)
        cand = self._retrieve(query, plan, weights, mode, k, filters, qvec, times)
        if not cand.ids:
            return cand, None
        if mode == "hybrid" and self.cfg.search.cross_lingual:
            self._cross_lingual_stage(cand, k, filters, times)
        t = time.perf_counter()
        fused = self._fuse(cand, mode)
        times.fusion = time.perf_counter() - t
        return cand, fused

    # -- pipeline stages (each takes and returns per-search state; nothing lands on self) ------------
    def _promote_absent_terms(self, plan: QueryPlan, weights: dict[str, float]) -> tuple[QueryPlan, dict[str, float]]:
        """A domain term that occurs in no chunk (쿠버네티스 in a corpus that writes Kubernetes) can only match
        through its equivalents: they stand in for it at full weight instead of ``expansion_weight``."""
        ew = self.cfg.lexicon.expansion_weight
        if ew <= 0 or not plan.terms:
            return plan, weights
        absent = [term for term in plan.terms if self._absent(term, plan)]
        if not absent:
            return plan, weights
        via = dict(plan.expansion_via)
        weights = dict(weights)
        for tok, src in via.items():
            term = src.partition(":")[2]
            if src.startswith("lexicon:") and term in absent and tok in weights and tok not in plan.tokens:
                weights[tok] = min(1.0, weights[tok] / ew)  # a multi-word equivalent still shares one weight
                via[tok] = f"lexicon:{term} (absent)"
        expansions = tuple((t, weights.get(t, w)) for t, w in plan.expansions)
        return dataclasses.replace(plan, expansions=expansions, expansion_via=tuple(via.items())), weights

    def _term_tokens(self, term: str, plan: QueryPlan) -> list[str]:
        return [t for t in self.analyzer.analyze(term, plan.lang).tokens if t in plan.tokens] or [term]

    def _absent(self, term: str, plan: QueryPlan) -> bool:
        """No chunk holds any of the term's own tokens (filters aside: absence is a property of the index)."""
        return all(not self.backend.sparse_search({t: 1.0}, 1) for t in self._term_tokens(term, plan))

    def _large(self) -> bool:
        """The index is big enough for the dense side to run beside BM25 (asked of the backend once)."""
        if self._parallel is None:
            self._parallel = self.backend.count() >= PARALLEL_MIN_ROWS
        return self._parallel

    def _candidate_k(self, top_k: int) -> int:
        """How many candidates each retriever draws: enough for fusion and, when on, the reranker."""
        sc = self.cfg.search
        k = candidate_count(top_k, sc.candidates)
        if sc.rerank.model:
            k = max(k, sc.rerank.candidates)
        return k

    def _retrieve(self, query: str, plan: QueryPlan, weights: dict[str, float], mode: str, k: int,
                  filters: Filters | None, qvec: np.ndarray | None, times: StageTimes) -> _Candidates:
        """Sparse top-K and dense top-K; the union of their ids, with chunks loaded when there are any."""
        bm25: dict[str, float] = {}
        dense: dict[str, float] = {}

        def dense_side() -> tuple[np.ndarray, dict[str, float]]:
            t = time.perf_counter()
            vec = self.embed_query(query) if qvec is None else qvec
            times.embed = time.perf_counter() - t
            t = time.perf_counter()
            found = dict(self.backend.dense_search(vec, k, filters))
            times.dense = time.perf_counter() - t
            return vec, found

        # hybrid on a large index: the dense side runs in a worker while BM25 runs here (the HNSW walk and BLAS
        # release the GIL; at 1M chunks BM25's time hides behind the graph walk's). On a small index both take
        # a few ms and the hand-over to a thread would cost more than it saves (the embedder keeps the GIL)
        pending = _pool().submit(dense_side) if mode == "hybrid" and weights and self._large() else None
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
            qvec, dense = pending.result()
        elif mode != "bm25":
            qvec, dense = dense_side()
        ids = list(dict.fromkeys([*bm25, *dense]))
        # no backend round trip for an empty candidate set (the caller returns early)
        chunks = dict(zip(ids, self.backend.get_chunks(ids), strict=True)) if ids else {}
        return _Candidates(plan, weights, qvec, bm25, dense, ids, chunks)

    def _cross_lingual_stage(self, cand: _Candidates, k: int, filters: Filters | None, times: StageTimes) -> None:
        """Adds the query's corpus links (오토베큠 -> autovacuum); re-selects the rule on the lexical evidence in
        any script; when the query's own language has weak lexical evidence, lets other languages compete: the
        other names the corpus glossary gives its terms (활성 프로브 = liveness probe) and dictionary
        translations for English queries (time counted as BM25), and each language's dense pool centred (time
        counted as dense). Updates ``cand`` in place.
        """
        sc = self.cfg.search
        # corpus links in every query: a Korean question in a mixed collection needs the English words of its
        # answer even when Korean passages match it too (they are precise: a link lands on a word the corpus uses)
        if sc.link_weight > 0:
            self._widen(cand, self._linked, k, filters, times)
        ceiling = self.query_ceiling(cand.plan, cand.weights)
        evidence = self.lexical_evidence(cand.plan, cand.weights, cand.bm25, cand.chunks, ceiling=ceiling)
        weak = evidence < sc.xling_min_evidence  # in any script: decides the weights
        own = self.lexical_evidence(cand.plan, cand.weights, cand.bm25, cand.chunks, lang=cand.plan.lang,
                                    ceiling=ceiling)
        compete = own < sc.xling_min_evidence  # in the query's own language: other languages compete
        if compete and self.glossary is not None:
            self._widen(cand, self._glossed, k, filters, times)
            # a glossed term's other name is lexical evidence too (measured against the query's own ceiling)
            evidence = self.lexical_evidence(cand.plan, cand.weights, cand.bm25, cand.chunks, ceiling=ceiling)
            weak = evidence < sc.xling_min_evidence
        cand.plan = dataclasses.replace(self.planner.replan(cand.plan, weak), lexical_evidence=round(evidence, 4))
        if compete and cand.plan.lang == "en" and sc.xling_translate_weight > 0:
            self._widen(cand, self._translations, k, filters, times)
            # translations that match are lexical evidence too: the rule is chosen again on the query as run
            after = self.translated_evidence(cand.plan, cand.weights, cand.bm25)
            if weak and after >= sc.xling_min_evidence:
                cand.plan = dataclasses.replace(self.planner.replan(cand.plan, True, translated=True),
                                                lexical_evidence=round(after, 4))
        if compete and sc.xling_calibration == "center" and cand.qvec is not None:
            t = time.perf_counter()
            cand.offsets = self._cross_lingual(cand.qvec, k, filters, cand.plan.lang, cand.dense, cand.chunks)
            cand.ids = list(dict.fromkeys([*cand.ids, *cand.dense]))
            times.dense += time.perf_counter() - t

    def _fill_missing(self, cand: _Candidates, mode: str) -> tuple[np.ndarray, np.ndarray]:
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

    def _fuse(self, cand: _Candidates, mode: str) -> Fused:
        """Fused scores over ``cand.ids``: weighted fusion in hybrid mode, else the one retriever's raw score."""
        sc = self.cfg.search
        b_arr, d_arr = self._fill_missing(cand, mode)
        if cand.offsets:
            d_arr = d_arr - np.array([cand.offsets.get(cand.chunks[c].lang, 0.0) for c in cand.ids])
        if mode == "hybrid":
            ceiling = self.query_ceiling(cand.plan, cand.weights) if sc.fusion == "ceiling" else 0.0
            langs = [cand.chunks[c].lang for c in cand.ids] if sc.dense_background == "language" else None
            background = self.dense_background(cand.qvec, langs) if sc.fusion == "calibrated" else None
            return fuse(cand.ids, b_arr, d_arr, cand.plan.bm25_weight, cand.plan.dense_weight, sc.fusion, sc.rrf_k,
                        ceiling, background)
        raw = b_arr if mode == "bm25" else d_arr
        return Fused(tuple(cand.ids), b_arr, d_arr, np.nan_to_num(b_arr), np.nan_to_num(d_arr),
                     np.nan_to_num(raw, nan=-np.inf), mode)

    def ranking_features(self, cand: _Candidates, fused: Fused) -> np.ndarray:
        """The learned ranker's features of every candidate (:func:`hanrag.search.ranker.candidate_features`)."""
        from hanrag.search.ranker import candidate_features

        own_tokens = set(cand.plan.tokens)
        own = {t: w for t, w in cand.weights.items() if t in own_tokens}
        expansion = {t: w for t, w in cand.weights.items() if t not in own_tokens}
        n = len(cand.ids)
        own_scores = self.backend.sparse_scores(own, cand.ids) if own else np.zeros(n)
        exp_scores = self.backend.sparse_scores(expansion, cand.ids) if expansion else np.zeros(n)
        chunks = [cand.chunks[c] for c in cand.ids]
        return candidate_features(
            cand.ids, fused.fused, fused.bm25_norm, fused.dense_norm, fused.dense_raw, own_scores, exp_scores,
            self.query_ceiling(cand.plan, cand.weights), np.array([c.lang == cand.plan.lang for c in chunks]),
            cand.bm25, cand.dense, np.array([len(c.text) for c in chunks]))

    def _rerank(self, query: str, cand: _Candidates, fused: Fused, order: list[int], top_k: int,
                times: StageTimes) -> _Ranking:
        """Cross-encoder rerank of the fused head when a reranker is configured; else the fused ranking."""
        scores = [float(fused.fused[i]) for i in order]
        reranker = self.reranker
        if reranker is None:
            return _Ranking(order, scores)
        t = time.perf_counter()
        n = min(len(order), max(self.cfg.search.rerank.candidates, top_k))
        head = order[:n]
        rr = reranker.rerank(query, [cand.chunks[cand.ids[i]].text for i in head], scores[:n])
        rerank_raw = {i: float(r) for i, r in zip(head, rr.raw, strict=True)}
        new_head = sorted(range(n), key=lambda j: (-rr.final[j], j))
        order = [head[j] for j in new_head] + order[n:]
        tail_cap = float(rr.final.min()) if n else 0.0
        # reranked hits stay above the un-reranked tail (their scores live on another scale)
        scores = [float(rr.final[j]) for j in new_head] + [tail_cap - 1.0 - r for r in range(len(order) - n)]
        times.rerank = time.perf_counter() - t
        return _Ranking(order, scores, rerank_raw=rerank_raw)

    def _diversify(self, cand: _Candidates, ranking: _Ranking) -> _Ranking:
        """Source-diversity penalties when on; keeps the pre-penalty scores for the explanation."""
        if not self.cfg.search.diversity:
            return ranking
        order = ranking.order
        sources = [cand.chunks[cand.ids[i]].source or cand.chunks[cand.ids[i]].doc_id for i in order]
        div_order, penalties, finals = apply_diversity(ranking.scores, sources, self.cfg.search.diversity_factors)
        return _Ranking(
            order=[order[j] for j in div_order],
            scores=[finals[j] for j in div_order],
            rerank_raw=ranking.rerank_raw,
            pre=[ranking.scores[j] for j in div_order],
            penalties=[penalties[j] for j in div_order],
        )

    def _hits(self, cand: _Candidates, fused: Fused, ranking: _Ranking, top_k: int, explain: bool) -> list[Hit]:
        """The top ``top_k`` as hits, with their near-duplicates' sources and, when asked, explanations."""
        top = ranking.order[:top_k]
        dups = self.backend.duplicates_of([cand.ids[i] for i in top])
        hits = []
        for rank, i in enumerate(top, 1):
            cid = cand.ids[i]
            chunk = cand.chunks[cid]
            score = ranking.scores[rank - 1]
            exp = None
            if explain:
                exp = self._explain(cand.plan, cand.weights, fused, i, chunk, ranking.pre_score(rank - 1),
                                    ranking.rerank_raw.get(i), ranking.penalty(rank - 1), score,
                                    cid in cand.bm25, cid in cand.dense)
            hits.append(Hit(chunk, float(score), rank, tuple(dups.get(cid, ())), exp))
        return hits

    def lexical_evidence(self, plan: QueryPlan, weights: dict[str, float], bm25: dict[str, float],
                         chunks: dict[str, Chunk], lang: str | None = None, ceiling: float | None = None) -> float:
        """How much of the query the best chunk matches lexically: its BM25 score over the query's ceiling
        (:meth:`IndexBackend.sparse_ceiling`), 0 without any match.

        Any chunk, in any script (``lang`` None): a Korean query that matches a Hanja passage through its
        readings (갑목 = 甲木) or an English runbook through the lexicon has lexical evidence — this decides
        the weights. With ``lang``, only chunks in that language: weak same-language evidence is what lets
        other languages compete (per-language dense pools, translations). A ratio, not a raw score: BM25
        grows with idf, i.e. with corpus size. The ceiling holds the query's own tokens and the equivalents
        standing in for absent terms (full weight); other expansions count in the score only, so an
        expansion match adds evidence but its absence costs none. ``ceiling``: :meth:`query_ceiling` when
        the caller has it already.
        """
        scores = [s for cid, s in bm25.items() if lang is None or chunks[cid].lang == lang]
        if not scores:
            return 0.0
        if ceiling is None:
            ceiling = self.query_ceiling(plan, weights)
        return float(max(scores) / ceiling) if ceiling > 0 else 0.0

    def translated_evidence(self, plan: QueryPlan, weights: dict[str, float], bm25: dict[str, float]) -> float:
        """Lexical evidence once translations ran: the best BM25 over the larger of two ceilings — the query
        in its own words, or in translation. A translated word is matched by one of its translations in one
        script (发明 or its reading 발명), so it counts with its best translation the index holds, not the sum."""
        if not bm25:
            return 0.0
        best: dict[str, float] = {}
        for tok, via in plan.expansion_via:
            if via.startswith("translation:") and tok in weights and self.backend.sparse_search({tok: 1.0}, 1):
                word = via[len("translation:"):].removesuffix(" (reading)")
                best[word] = max(best.get(word, 0.0), self.backend.sparse_ceiling({tok: weights[tok]}))
        ceiling = max(self.query_ceiling(plan, weights), sum(best.values()))
        return float(max(bm25.values()) / ceiling) if ceiling > 0 else 0.0

    def dense_background(self, qvec: np.ndarray | None, langs: Sequence[str] | None = None
                         ) -> float | np.ndarray | None:
        """The query's mean cosine to every chunk (q · the manifest's mean vector) or, with ``langs``, per
        candidate to the chunks of its language (``dense_mean_by_lang``; the overall mean for a language the
        manifest lacks); None when unknown (an index built before the manifest carried it: min-max)."""
        if self._dense_mean is None:  # read once: a searcher serves one snapshot (a reload makes a new one)
            manifest = self.backend.manifest() or {}
            mean = manifest.get("dense_mean")
            self._dense_mean = np.asarray(mean, dtype=np.float64) if mean else np.zeros(0)
            self._lang_means = {g: np.asarray(m, dtype=np.float64)
                                for g, m in (manifest.get("dense_mean_by_lang") or {}).items()}
        if qvec is None or self._dense_mean.size != np.asarray(qvec).size:
            return None
        q = np.asarray(qvec, dtype=np.float64).reshape(-1)
        overall = float(np.dot(self._dense_mean, q))
        if langs is None:
            return overall
        per = {g: float(np.dot(m, q)) for g, m in self._lang_means.items() if m.size == q.size}
        return np.array([per.get(g, overall) for g in langs], dtype=np.float64)

    def query_ceiling(self, plan: QueryPlan, weights: dict[str, float]) -> float:
        """The BM25 score of a chunk holding every own token of the query and every stand-in for an absent term."""
        absent = {via[len("lexicon:"):-len(" (absent)")] for _, via in plan.expansion_via if via.endswith("(absent)")}
        full = {t for t, via in plan.expansion_via if via.endswith("(absent)")}
        # an absent term's own tokens give way to their stand-ins (never both: the ceiling would count it twice)
        gone = {t for term in absent for t in self._term_tokens(term, plan)}
        query = {t: weights[t] for t in weights if (t in plan.tokens and t not in gone) or t in full} or weights
        return self.backend.sparse_ceiling(query)

    def _translations(self, plan: QueryPlan, weights: dict[str, float]) -> _Extra:
        """Dictionary translations (en -> zh, and their Hangul readings) of the query's words not yet in it."""
        from hanrag.search.xling import translate_query

        sources: dict[str, str] = {}
        trans = translate_query(plan.query, self.analyzer, self.cfg.search.xling_translate_weight, sources)
        return {t: (w, f"translation:{sources[t]}") for t, w in trans.items() if t not in weights}

    def _glossed(self, plan: QueryPlan, weights: dict[str, float]) -> _Extra:
        """The other names the corpus glossary gives the query's terms, not yet in the query."""
        from hanrag.text.query import glossary_expansions

        return glossary_expansions(plan.query, plan.lang, self.analyzer, self.glossary,
                                   self.cfg.search.glossary_weight, weights)

    def _linked(self, plan: QueryPlan, weights: dict[str, float]) -> _Extra:
        """The corpus links of the query's words (오토베큠 -> autovacuum, deployment -> 디플로이먼트, 변수 -> variable)
        not yet in it; one word's links share ``search.link_weight``."""
        from hanrag.text.query import link_expansions

        sc = self.cfg.search

        def exists(tok: str) -> bool:
            return bool(self.backend.sparse_search({tok: 1.0}, 1))

        links = link_expansions(plan.query, plan.tokens, self.analyzer, self.sound_keys, sc.link_weight,
                                sc.link_channels, weights, exists)
        # as for a lexicon term (_promote_absent_terms): a query word no chunk holds (오토베큠 over English pages) can
        # only match through its links, which then stand in for it at its full weight
        def held(word: str) -> bool:  # an English word as the index writes it (stemmed)
            return exists(word if not word.isascii() else (self.analyzer.english_token(word) or word))

        absent = {word for _, via in links.values() if not held(word := via[5:].rpartition(" (")[0])}
        return {t: (min(1.0, w / sc.link_weight) if via[5:].rpartition(" (")[0] in absent else w, via)
                for t, (w, via) in links.items()}

    def _widen(self, cand: _Candidates, extra_of: Callable[[QueryPlan, dict[str, float]], _Extra], k: int,
               filters: Filters | None, times: StageTimes) -> None:
        """Adds the tokens ``extra_of`` gives (token -> weight, origin) to the BM25 query and retrieves again:
        updates ``cand`` in place (new chunks loaded), time counted as BM25. Nothing to add, nothing changes."""
        t = time.perf_counter()
        extra = extra_of(cand.plan, cand.weights)
        if extra:
            cand.weights = {**cand.weights, **{tok: w for tok, (w, _) in extra.items()}}
            cand.bm25 = dict(self.backend.sparse_search(cand.weights, k, filters))
            new = [cid for cid in cand.bm25 if cid not in cand.chunks]
            if new:
                cand.chunks.update(zip(new, self.backend.get_chunks(new), strict=True))
            cand.ids = list(dict.fromkeys([*cand.ids, *cand.bm25]))
            plan = cand.plan
            cand.plan = dataclasses.replace(
                plan, expansions=plan.expansions + tuple((tok, w) for tok, (w, _) in extra.items()),
                expansion_via=plan.expansion_via + tuple((tok, via) for tok, (_, via) in extra.items()))
        times.bm25 += time.perf_counter() - t

    def _cross_lingual(
        self, qvec: np.ndarray, k: int, filters: Filters | None, own: str, dense: dict[str, float],
        chunks: dict[str, Chunk],
    ) -> dict[str, float]:
        """Draw dense candidates per corpus language and centre each language on its own pool.

        Returns per-language offsets (pool mean minus the query language's pool mean):
        subtracting them puts every language's candidates on the same footing, so a
        strongly same-language-biased encoder no longer buries the other script.
        """
        means: dict[str, float] = {}
        for lang in self.index_langs():
            hits = self.backend.dense_search(qvec, k, _with_lang(filters, lang))
            if not hits:
                continue
            means[lang] = float(np.mean([s for _, s in hits]))
            new = [cid for cid, _ in hits if cid not in chunks]
            for cid, s in hits:
                dense.setdefault(cid, s)
            if new:
                chunks.update(zip(new, self.backend.get_chunks(new), strict=True))
        ref = means.get(own, max(means.values()) if means else 0.0)
        return {lang: m - ref for lang, m in means.items()}

    def _explain(self, plan: QueryPlan, weights: dict[str, float], fused: Fused, i: int, chunk: Chunk, pre: float,
                 rerank: float | None, penalty: float, final: float, by_bm25: bool, by_dense: bool) -> Explanation:
        def num(x: float) -> float | None:
            return None if np.isnan(x) else float(x)

        analysis = self.analyzer.analyze(chunk.text, chunk.lang)
        written = set(analysis.tokens)
        tokens = written | set(analysis.readings)
        exp_tokens = {t for t, _ in plan.expansions}
        matched = tuple(t for t in weights if t in tokens and t not in exp_tokens)
        matched_exp = tuple(t for t in weights if t in tokens and t in exp_tokens)
        via = dict(plan.expansion_via)

        def how(t: str) -> str:
            if t in exp_tokens:
                return via.get(t, "lexicon").replace(" (absent)", "")
            return "as written" if t in written else "reading"  # the chunk's Hanja, read in Hangul
        return Explanation(
            bm25_raw=num(fused.bm25_raw[i]),
            bm25_norm=float(fused.bm25_norm[i]) if plan.mode != "dense" else None,
            dense_raw=num(fused.dense_raw[i]),
            dense_norm=float(fused.dense_norm[i]) if plan.mode != "bm25" else None,
            bm25_weight=plan.bm25_weight,
            dense_weight=plan.dense_weight,
            rule=plan.rule,
            fusion=fused.method,
            fused=float(fused.fused[i]),
            rerank=rerank,
            penalty=float(penalty),
            final=float(final),
            matched_tokens=matched,
            matched_expansions=matched_exp,
            found_by=tuple(n for n, ok in (("bm25", by_bm25), ("dense", by_dense)) if ok),
            matched_via=tuple((t, how(t)) for t in (*matched, *matched_exp)),
        )
