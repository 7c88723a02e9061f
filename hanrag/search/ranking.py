"""The order after fusion: the learned ranking, rerank and diversity stages, each returning a new :class:`Ranking`.

The learned ranking stage reorders the fused head with boosted trees over each candidate's evidence when
``search.ranker`` names a model (:mod:`hanrag.search.ranker`); the rerank stage reorders the head with a
cross-encoder when one is configured (:mod:`hanrag.search.rerank` holds the model); the diversity stage damps later
hits of a source already seen (:mod:`hanrag.search.diversity`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from hanrag.records import QueryPlan
from hanrag.search.candidates import Candidates, Request, frozen_map
from hanrag.search.diversity import apply_diversity
from hanrag.search.fusion import Fused
from hanrag.search.ranker import keep_language_order

if TYPE_CHECKING:
    from hanrag.search.ranker import TreeRanker
    from hanrag.search.rerank import Reranker
    from hanrag.search.searcher import StageTimes


@dataclass(frozen=True)
class Ranking:
    """Candidate indices (into ``Candidates.ids``) in final order with their scores, and the plan as run (the
    rerank stage records its run in it: ``QueryPlan.reranked``).

    ``pre``/``penalties`` are the scores before diversity and its penalties; None (no diversity) means
    pre == scores and every penalty is 1. ``rerank_raw``: candidate index -> the cross-encoder's raw score.
    ``learned``: candidate index -> what the learned ranker added to the candidate's fused score, per feature
    (``("base", …)`` first: the trees' value before any split); the candidates it reordered, and only those.
    """

    plan: QueryPlan
    order: tuple[int, ...]
    scores: tuple[float, ...]
    rerank_raw: Mapping[int, float] = field(default_factory=dict)
    pre: tuple[float, ...] | None = None
    penalties: tuple[float, ...] | None = None
    learned: Mapping[int, tuple[tuple[str, float], ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "order", tuple(self.order))
        object.__setattr__(self, "scores", tuple(self.scores))
        object.__setattr__(self, "rerank_raw", frozen_map(self.rerank_raw))
        object.__setattr__(self, "learned", frozen_map(self.learned))
        for name in ("pre", "penalties"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(getattr(self, name)))

    def pre_score(self, pos: int) -> float:
        return self.scores[pos] if self.pre is None else self.pre[pos]

    def penalty(self, pos: int) -> float:
        return 1.0 if self.penalties is None else self.penalties[pos]


def fused_ranking(cand: Candidates, fused: Fused) -> Ranking:
    """The candidates in their fused order with their fused scores (the rule table's ranking)."""
    order = [int(i) for i in fused.order()]
    return Ranking(cand.plan, order, [float(fused.fused[i]) for i in order])


def learned_ranking(model: TreeRanker | None, features: Callable[[Sequence[int]], np.ndarray], cand: Candidates,
                    fused: Fused, times: StageTimes, explain: bool = True) -> Ranking:
    """The fused ranking, its head (the first ``model.head``, as the model was trained) reordered by the learned
    ranker when one is given (hybrid searches: the model corrects the rule table's fusion of both retrievers).

    A reordered candidate scores its fused score plus the trees' correction over the rule scale (so the numbers
    stay on the fused scale, and ``--explain`` adds them up); the candidates past the head keep their fused order
    below the head's lowest score. With a model that says so (``TreeRanker.keep_language_order``), the candidates in
    the query's language keep the rule table's order among themselves (:func:`hanrag.search.ranker.keep_language_order`:
    the model places the other languages' among them; an explanation lists the scores handed over as
    ``language_order``). ``features(rows)``: the ranker features
    of those candidate indices (:meth:`hanrag.search.searcher.Searcher.ranking_features`). The plan records the
    model and how many it reordered (``QueryPlan.ranker``, ``QueryPlan.ranked``); with ``explain``,
    ``Ranking.learned`` holds what each feature added (the attribution costs about twice the scoring, so a search
    that explains nothing skips it)."""
    base = fused_ranking(cand, fused)
    if model is None or cand.plan.mode != "hybrid":
        return base
    t = time.perf_counter()
    head = list(base.order[:model.head])
    X = features(head)
    learned = {}
    if explain:
        contrib, bias = model.contributions(X)
        correction = (bias + contrib.sum(axis=1)) / model.rule_scale
        learned = {head[j]: (("base", bias / model.rule_scale),
                             *((name, float(v) / model.rule_scale) for name, v in zip(model.features, contrib[j],
                                                                                      strict=True) if v != 0.0))
                   for j in range(len(head))}
    else:
        correction = model.predict(X) / model.rule_scale
    learned_scores = np.asarray(base.scores[:len(head)]) + correction
    scores = learned_scores
    if model.keep_language_order:
        # the head is in the rule table's order, so its own position is the rule score keep_language_order reads
        scores = keep_language_order(learned_scores, -np.arange(len(head), dtype=np.float64),
                                     X[:, model.features.index("same_language")] > 0.5)
    if learned:
        for j in np.flatnonzero(scores != learned_scores):
            learned[head[j]] = (*learned[head[j]], ("language_order", float(scores[j] - learned_scores[j])))
    new = sorted(range(len(head)), key=lambda j: (-scores[j], j))
    floor = float(scores.min())
    tail = [min(s, floor) for s in base.scores[len(head):]]
    times.extra["ranker"] = time.perf_counter() - t
    plan = dataclasses.replace(cand.plan, ranker=model.source, ranked=len(head))
    return Ranking(plan, [head[j] for j in new] + list(base.order[len(head):]),
                   [float(scores[j]) for j in new] + tail, learned=learned)


def rerank(reranker: Reranker | None, head_size: int, request: Request, cand: Candidates, ranking: Ranking,
           times: StageTimes) -> Ranking:
    """Cross-encoder rerank of the ranking's head when a reranker is given; else the ranking as it is.

    The head is the first ``head_size`` (``search.rerank.candidates``; at least ``request.top_k``) of the order
    so far (fused, or learned); the reranker scores as much of it as ``search.rerank.budget_ms`` allows, best
    first (:meth:`Reranker.rerank`). The reranked hits come first in their reranked order; every other candidate
    (past the head, or not reached within the budget) follows in its order with a score below the lowest reranked
    one. The ranking's plan records how many were reranked of how many, in how many ms, under which budget
    (``QueryPlan.reranked``)."""
    if reranker is None:
        return ranking
    order, scores = list(ranking.order), list(ranking.scores)
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
    plan = dataclasses.replace(ranking.plan, reranked=k, rerank_candidates=n,
                               rerank_ms=round(times.rerank * 1000, 1), rerank_budget_ms=rr.budget_ms)
    return Ranking(plan, order, scores, rerank_raw=rerank_raw, learned=ranking.learned)


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
        learned=ranking.learned,
    )
