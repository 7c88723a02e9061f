"""The last stage: the top of a ranking as :class:`Hit` records, with their near-duplicates' sources and, when
asked, every number behind each score (:class:`Explanation`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from hanrag.backends.base import IndexBackend
from hanrag.index.sparse import bm25_text
from hanrag.records import Chunk, Explanation, Hit, QueryPlan
from hanrag.search.candidates import Candidates
from hanrag.search.fusion import Fused
from hanrag.search.ranking import Ranking


def make_hits(backend: IndexBackend, analyzer, cand: Candidates, fused: Fused, ranking: Ranking, top_k: int,
              explain: bool, headings: bool = False) -> list[Hit]:
    """The top ``top_k`` of ``ranking`` as hits, with their near-duplicates' sources and, when asked,
    explanations (``analyzer`` finds the query tokens each chunk matched; ``headings``: the index's BM25 holds each
    chunk's title and heading path, :func:`hanrag.index.sparse.indexed_headings`)."""
    top = ranking.order[:top_k]
    dups = backend.duplicates_of([cand.ids[i] for i in top])
    hits = []
    for rank, i in enumerate(top, 1):
        cid = cand.ids[i]
        chunk = cand.chunks[cid]
        score = ranking.scores[rank - 1]
        exp = None
        if explain:
            exp = explanation(analyzer, ranking.plan, cand.weights, fused, i, chunk, ranking.pre_score(rank - 1),
                              ranking.rerank_raw.get(i), ranking.penalty(rank - 1), score,
                              cid in cand.bm25, cid in cand.dense, round(cand.centring(cid), 6) + 0.0,  # never -0.0
                              ranking.learned.get(i, ()), headings)
        hits.append(Hit(chunk, float(score), rank, tuple(dups.get(cid, ())), exp))
    return hits


def explanation(analyzer, plan: QueryPlan, weights: Mapping[str, float], fused: Fused, i: int, chunk: Chunk,
                pre: float, rerank: float | None, penalty: float, final: float, by_bm25: bool,
                by_dense: bool, centring: float = 0.0, learned: tuple[tuple[str, float], ...] = (),
                headings: bool = False) -> Explanation:
    """Every number behind candidate ``i``'s final score, and which query tokens its chunk matched and how
    (``headings``: the index holds its title and heading path too, :func:`hanrag.index.sparse.bm25_text`)."""
    def num(x: float) -> float | None:
        return None if np.isnan(x) else float(x)

    analysis = analyzer.analyze(bm25_text(chunk, headings), chunk.lang)
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
        centring=centring,
        learned=tuple((name, round(v, 6) + 0.0) for name, v in learned),
    )
