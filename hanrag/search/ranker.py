"""A learned ranker over the evidence each candidate carries: features, and a linear model stored as JSON.

The rule table (:mod:`hanrag.search.presets`) weighs two numbers per candidate — its normalised BM25 and its
calibrated cosine — by the query's rule. What else a candidate carries says more: how much of the query its BM25
covers in the query's own words and through expansions (lexicon, glossary, corpus links, translations, readings),
its raw cosine against the best in the pool, whether it is in the query's language, where each retriever ranked
it, its length. :func:`candidate_features` computes them from the searcher's own state (the same code for search
and for training), and :class:`LinearRanker` scores them: a weight per feature, fitted by ``benchmarks/fit.py``'s
protocol (pairwise logistic loss, leave-one-set-out) and stored as JSON — no pickle, no training library at search
time. ``--explain`` lists each feature's contribution (weight × value).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

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
)


@dataclass(frozen=True)
class LinearRanker:
    """score = bias + Σ weight × feature; fitted on the tuning sets (see the JSON's ``fitted`` record)."""

    weights: dict[str, float]
    bias: float = 0.0

    @classmethod
    def load(cls, path: str | Path) -> LinearRanker:
        """From the JSON ``benchmarks/fit.py`` writes; one line naming the file and the problem otherwise."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            weights = {str(k): float(v) for k, v in data["weights"].items()}
            bias = float(data.get("bias", 0.0))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"{path}: not a ranker model ({e})") from e
        unknown = sorted(set(weights) - set(FEATURES))
        if unknown:
            raise ValueError(f"{path}: unknown ranker features {', '.join(unknown)}")
        if not all(math.isfinite(w) for w in [*weights.values(), bias]):
            raise ValueError(f"{path}: a ranker weight is not a finite number")
        return cls(weights, bias)

    def vector(self) -> np.ndarray:
        return np.array([self.weights.get(f, 0.0) for f in FEATURES], dtype=np.float64)

    def score(self, features: np.ndarray) -> np.ndarray:
        return features @ self.vector() + self.bias

    def contributions(self, row: np.ndarray) -> tuple[tuple[str, float], ...]:
        """Each feature's share of one candidate's score (for ``--explain``), largest first."""
        parts = [(f, float(w * x)) for f, w, x in zip(FEATURES, self.vector(), row, strict=True) if w]
        return tuple(sorted(parts, key=lambda p: -abs(p[1])))


def _rank_feature(ids: Sequence[str], retrieved: Mapping[str, float]) -> np.ndarray:
    order = {cid: r for r, cid in enumerate(sorted(retrieved, key=lambda c: -retrieved[c]))}
    return np.array([1.0 / (1.0 + order[c]) if c in order else 0.0 for c in ids], dtype=np.float64)


def candidate_features(ids: Sequence[str], rule_fused: np.ndarray, bm25_norm: np.ndarray, dense_norm: np.ndarray,
                       dense_raw: np.ndarray,
                       own: np.ndarray, expansion: np.ndarray, ceiling: float, same_language: np.ndarray,
                       bm25_list: Mapping[str, float], dense_list: Mapping[str, float],
                       lengths: np.ndarray) -> np.ndarray:
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
    ]
    return np.column_stack(cols).astype(np.float64)
