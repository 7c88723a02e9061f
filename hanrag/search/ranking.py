"""The order after fusion: the rerank stage and the diversity stage, each returning a new :class:`Ranking`.

The rerank stage reorders the fused head with a cross-encoder when one is configured (:mod:`hanrag.search.rerank`
holds the model); the diversity stage damps later hits of a source already seen (:mod:`hanrag.search.diversity`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hanrag.records import QueryPlan
from hanrag.search.candidates import Candidates, Request, frozen_map
from hanrag.search.diversity import apply_diversity
from hanrag.search.fusion import Fused

if TYPE_CHECKING:
    from hanrag.search.rerank import Reranker
    from hanrag.search.searcher import StageTimes


@dataclass(frozen=True)
class Ranking:
    """Candidate indices (into ``Candidates.ids``) in final order with their scores, and the plan as run (the
    rerank stage records its run in it: ``QueryPlan.reranked``).

    ``pre``/``penalties`` are the scores before diversity and its penalties; None (no diversity) means
    pre == scores and every penalty is 1. ``rerank_raw``: candidate index -> the cross-encoder's raw score.
    """

    plan: QueryPlan
    order: tuple[int, ...]
    scores: tuple[float, ...]
    rerank_raw: Mapping[int, float] = field(default_factory=dict)
    pre: tuple[float, ...] | None = None
    penalties: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "order", tuple(self.order))
        object.__setattr__(self, "scores", tuple(self.scores))
        object.__setattr__(self, "rerank_raw", frozen_map(self.rerank_raw))
        for name in ("pre", "penalties"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(getattr(self, name)))

    def pre_score(self, pos: int) -> float:
        return self.scores[pos] if self.pre is None else self.pre[pos]

    def penalty(self, pos: int) -> float:
        return 1.0 if self.penalties is None else self.penalties[pos]


def rerank(reranker: Reranker | None, head_size: int, request: Request, cand: Candidates, fused: Fused,
           times: StageTimes) -> Ranking:
    """Cross-encoder rerank of the fused head when a reranker is given; else the fused ranking.

    The head is the first ``head_size`` (``search.rerank.candidates``; at least ``request.top_k``) of the fused
    order; the reranker scores as much of it as ``search.rerank.budget_ms`` allows, best-fused first
    (:meth:`Reranker.rerank`). The reranked hits come first in their reranked order; every other candidate (past
    the head, or not reached within the budget) follows in its fused order with a score below the lowest reranked
    one. The ranking's plan records how many were reranked of how many, in how many ms, under which budget
    (``QueryPlan.reranked``)."""
    order = [int(i) for i in fused.order()]
    scores = [float(fused.fused[i]) for i in order]
    if reranker is None:
        return Ranking(cand.plan, order, scores)
    t = time.perf_counter()
    n = min(len(order), max(head_size, request.top_k))
    rr = reranker.rerank(request.query, [cand.chunks[cand.ids[i]].text for i in order[:n]], scores[:n])
    k = rr.reranked  # the first k of the head were scored (all n without a budget)
    head = order[:k]
    rerank_raw = {i: float(r) for i, r in zip(head, rr.raw, strict=True)}
    new_head = sorted(range(k), key=lambda j: (-rr.final[j], j))
    order = [head[j] for j in new_head] + order[k:]
    tail_cap = float(rr.final.min()) if k else 0.0
    # reranked hits stay above the un-reranked tail (their scores live on another scale); the tail keeps its
    # fused order
    scores = [float(rr.final[j]) for j in new_head] + [tail_cap - 1.0 - r for r in range(len(order) - k)]
    times.rerank = time.perf_counter() - t
    plan = dataclasses.replace(cand.plan, reranked=k, rerank_candidates=n,
                               rerank_ms=round(times.rerank * 1000, 1), rerank_budget_ms=rr.budget_ms)
    return Ranking(plan, order, scores, rerank_raw=rerank_raw)


def diversify(cand: Candidates, ranking: Ranking, factors) -> Ranking:
    """Source-diversity penalties (``search.diversity_factors``); keeps the pre-penalty scores for the
    explanation."""
    order = ranking.order
    sources = [cand.chunks[cand.ids[i]].source or cand.chunks[cand.ids[i]].doc_id for i in order]
    div_order, penalties, finals = apply_diversity(ranking.scores, sources, factors)
    return Ranking(
        plan=ranking.plan,
        order=tuple(order[j] for j in div_order),
        scores=tuple(finals[j] for j in div_order),
        rerank_raw=ranking.rerank_raw,
        pre=tuple(ranking.scores[j] for j in div_order),
        penalties=tuple(penalties[j] for j in div_order),
    )
