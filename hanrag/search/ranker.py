"""The evidence each candidate carries, as features for a learned ranker.

The rule table (:mod:`hanrag.search.presets`) weighs two numbers per candidate — its normalised BM25 and its
calibrated cosine — by the query's rule. A candidate carries more: how much of the query its BM25 covers in the
query's own words and through expansions (lexicon, glossary, corpus links, translations, readings), its raw
cosine against the best in the pool, whether it is in the query's language, where each retriever ranked it, its
length. :func:`candidate_features` computes them from the searcher's own state
(:meth:`hanrag.search.searcher.Searcher.ranking_features`), so ``benchmarks/fit.py --ranker`` trains on what a
search would compute. Under the fitting protocol (docs/evaluation.md) LambdaMART trees started from the rule
table's score now pass it (.7183 against .7130); no model is in the search path yet: it needs its own evaluator,
per-feature contributions under ``--explain`` and product-path figures first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

FEATURES = (
    "rule_fused",  # the rule table's fused score: the model corrects the table rather than replacing it
    "bm25_norm",  # min-max BM25 over the pool
    "dense_calibrated",  # cosine above the language's background (fusion.calibrated_cosine)
    "dense_gap",  # raw cosine minus the pool's best
    "own_share",  # BM25 of the query's own tokens over the query's ceiling
    "expansion_share",  # BM25 of every expansion (lexicon, glossary, links, translations) over the same ceiling
    "same_language",  # 1 when the chunk is in the query's language
    "bm25_rank",  # 1 / (1 + rank) in the BM25 list (0 when BM25 did not retrieve it)
    "dense_rank",  # 1 / (1 + rank) in the dense list
    "log_length",  # log of the chunk's characters over 512
    "centring",  # what the cross-lingual centring added to the cosine (its language's offset times its script weight)
)


def _rank_feature(ids: Sequence[str], retrieved: Mapping[str, float]) -> np.ndarray:
    order = {cid: r for r, cid in enumerate(sorted(retrieved, key=lambda c: -retrieved[c]))}
    return np.array([1.0 / (1.0 + order[c]) if c in order else 0.0 for c in ids], dtype=np.float64)


def candidate_features(ids: Sequence[str], rule_fused: np.ndarray, bm25_norm: np.ndarray, dense_norm: np.ndarray,
                       dense_raw: np.ndarray,
                       own: np.ndarray, expansion: np.ndarray, ceiling: float, same_language: np.ndarray,
                       bm25_list: Mapping[str, float], dense_list: Mapping[str, float],
                       lengths: np.ndarray, centring: np.ndarray | None = None) -> np.ndarray:
    """The (candidates × :data:`FEATURES`) matrix; NaN scores (a retriever that gave none) count as 0."""
    raw = np.asarray(dense_raw, dtype=np.float64)
    best = np.nanmax(raw) if np.isfinite(raw).any() else 0.0
    gap = np.nan_to_num(raw - best, nan=-1.0)
    scale = ceiling if ceiling > 0 else 1.0
    cols = [
        np.nan_to_num(rule_fused), np.nan_to_num(bm25_norm), np.nan_to_num(dense_norm), gap,
        np.nan_to_num(own) / scale, np.nan_to_num(expansion) / scale,
        np.asarray(same_language, dtype=np.float64),
        _rank_feature(ids, bm25_list), _rank_feature(ids, dense_list),
        np.log(np.maximum(np.asarray(lengths, dtype=np.float64), 1.0) / 512.0),
        np.zeros(len(ids)) if centring is None else np.asarray(centring, dtype=np.float64),
    ]
    return np.column_stack(cols).astype(np.float64)
