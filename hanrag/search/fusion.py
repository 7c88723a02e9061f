"""Fuse BM25 and dense candidate scores into one ranking.

Candidates are the union of both retrievers' top-K. Each retriever's scores are
normalised over the candidate set (min-max or z-score) and combined with the
plan's weights, or the candidates are ranked per retriever and combined by
weighted reciprocal rank (RRF, explicit ``k``). A candidate found by only one
retriever either carries its exactly computed missing score (``filled``) or has
no score from the other retriever (normalised to 0 / no RRF contribution).
"""

from __future__ import annotations

import typing
from dataclasses import dataclass

import numpy as np

from hanrag.config import Fusion
from hanrag.search.candidates import read_only

FUSIONS: tuple[str, ...] = typing.get_args(Fusion)  # the config's one list of fusion methods


@dataclass(frozen=True)
class Fused:
    """Per-candidate arrays, aligned with ``ids``; NaN raw score = not known."""

    ids: tuple[str, ...]
    bm25_raw: np.ndarray
    dense_raw: np.ndarray
    bm25_norm: np.ndarray
    dense_norm: np.ndarray
    fused: np.ndarray
    method: str

    def __post_init__(self) -> None:
        """The arrays as read-only views (whoever passed them in keeps writable ones): a stage after fusion, or a
        benchmark re-weighting the scores, builds new arrays rather than changing these."""
        object.__setattr__(self, "ids", tuple(self.ids))
        for name in ("bm25_raw", "dense_raw", "bm25_norm", "dense_norm", "fused"):
            object.__setattr__(self, name, read_only(getattr(self, name)))

    def order(self) -> np.ndarray:
        """Candidate indices best first; ties (most often candidates that fusion scores 0, their cosine below the
        background) go by the raw dense cosine, then candidate order."""
        dense = np.nan_to_num(np.asarray(self.dense_raw, dtype=np.float64), nan=-np.inf)
        return np.lexsort((-dense, -np.asarray(self.fused, dtype=np.float64)))


def minmax(scores: np.ndarray) -> np.ndarray:
    """Scale known (non-NaN) scores to [0, 1]; unknown -> 0.

    All-equal scores carry no ranking information: they map to 1 when positive
    (every candidate matched equally) and 0 otherwise.
    """
    out = np.zeros(len(scores), dtype=np.float64)
    known = ~np.isnan(scores)
    if not known.any():
        return out
    vals = scores[known].astype(np.float64)
    lo, hi = float(vals.min()), float(vals.max())
    if hi - lo <= 1e-12:
        out[known] = 1.0 if hi > 0 else 0.0
    else:
        out[known] = (vals - lo) / (hi - lo)
    return out


def zscore(scores: np.ndarray) -> np.ndarray:
    """Standardise known scores (mean 0, std 1); unknown -> the known minimum's z (no credit)."""
    out = np.zeros(len(scores), dtype=np.float64)
    known = ~np.isnan(scores)
    if not known.any():
        return out
    vals = scores[known].astype(np.float64)
    std = float(vals.std())
    if std <= 1e-12:
        return out
    z = (vals - vals.mean()) / std
    out[known] = z
    # an unknown score is treated as "no better than the worst known one"
    out[~known] = float(z.min())
    return out


def rrf_ranks(scores: np.ndarray, k: float) -> np.ndarray:
    """1 / (k + rank) with rank 1 = best known score; unknown -> 0."""
    out = np.zeros(len(scores), dtype=np.float64)
    known = np.flatnonzero(~np.isnan(scores))
    if len(known) == 0:
        return out
    order = known[np.argsort(-scores[known], kind="stable")]
    out[order] = 1.0 / (k + np.arange(1, len(order) + 1, dtype=np.float64))
    return out


def ceiling_scale(scores: np.ndarray, ceiling: float) -> np.ndarray:
    """BM25 as the share of the query's highest possible score (clipped to [0, 1]; unknown -> 0).

    Absolute, unlike min-max: a chunk matching one word of five stays near 0.2 however weak the
    other candidates are, and a full match is 1 on any candidate set.
    """
    if ceiling <= 0:
        return np.zeros(len(scores), dtype=np.float64)
    return np.clip(np.nan_to_num(np.asarray(scores, dtype=np.float64), nan=0.0) / ceiling, 0.0, 1.0)


def calibrated_cosine(scores: np.ndarray, background: float | np.ndarray | None) -> np.ndarray:
    """Dense scores as the distance above the query's background cosine towards 1, clipped to [0, 1]; unknown -> 0.

    ``background``: the query's mean cosine to the corpus (one number) or, per candidate, to the chunks of the
    candidate's language. Absolute, unlike min-max: a .03 cosine gap between the best candidates stays a small
    gap instead of becoming the whole 0-1 range. Per language, because a multilingual encoder puts every pair
    of one language higher than any cross-language pair: measured from its own language's background, a Korean
    passage answering an English question is not outranked by English text that merely shares its language.
    Min-max when no background is known."""
    scores = np.asarray(scores, dtype=np.float64)
    if background is None:
        return minmax(scores)
    bg = np.broadcast_to(np.asarray(background, dtype=np.float64), scores.shape)
    if not np.all(np.isfinite(bg)) or np.any(bg >= 1.0):
        return minmax(scores)
    vals = np.where(np.isnan(scores), bg, scores)
    return np.clip((vals - bg) / (1.0 - bg), 0.0, 1.0)


def fuse(
    ids: list[str] | tuple[str, ...],
    bm25: np.ndarray,
    dense: np.ndarray,
    bm25_weight: float,
    dense_weight: float,
    method: str = "minmax",
    rrf_k: float = 2.0,
    bm25_ceiling: float = 0.0,
    dense_background: float | np.ndarray | None = None,
) -> Fused:
    """Combine aligned raw score arrays (NaN = retriever gave no score) into one fused score.

    ``ceiling``: BM25 over the query's ceiling (``bm25_ceiling``, :func:`ceiling_scale`), dense min-max.
    ``calibrated``: BM25 min-max, dense above the query's corpus background (:func:`calibrated_cosine`)."""
    if method not in FUSIONS:
        raise ValueError(f"unknown fusion {method!r}; expected one of {', '.join(FUSIONS)}")
    if rrf_k <= 0 and method == "rrf":
        raise ValueError(f"rrf_k must be > 0, got {rrf_k}")
    bm25 = np.asarray(bm25, dtype=np.float64)
    dense = np.asarray(dense, dtype=np.float64)
    if not (len(ids) == len(bm25) == len(dense)):
        raise ValueError("ids, bm25 and dense must have the same length")
    if method == "minmax":
        bn, dn = minmax(bm25), minmax(dense)
    elif method == "zscore":
        bn, dn = zscore(bm25), zscore(dense)
    elif method == "ceiling":
        bn, dn = ceiling_scale(bm25, bm25_ceiling), minmax(dense)
    elif method == "calibrated":
        bn, dn = minmax(bm25), calibrated_cosine(dense, dense_background)
    else:
        bn, dn = rrf_ranks(bm25, rrf_k), rrf_ranks(dense, rrf_k)
    return Fused(tuple(ids), bm25, dense, bn, dn, reweight(bn, dn, bm25_weight, dense_weight), method)


def reweight(bm25_norm: np.ndarray, dense_norm: np.ndarray, bm25_weight: float, dense_weight: float) -> np.ndarray:
    """The fused score of normalised BM25 and dense scores under a plan's weights: ``bm25_weight · bm25_norm +
    dense_weight · dense_norm`` — what :func:`fuse` computes once it has normalised the raw scores, so weights
    can be re-applied to a :class:`Fused`'s ``bm25_norm`` / ``dense_norm`` (``benchmarks/fit.py``) with the very
    numbers a search would get, whatever the method (under ``rrf`` the normalised scores are reciprocal ranks)."""
    return bm25_weight * np.asarray(bm25_norm) + dense_weight * np.asarray(dense_norm)


POOL = 400  # candidates per retriever for any top_k up to 100: the pools the defaults were fitted on


def candidate_count(top_k: int, configured: int = 0) -> int:
    """K per retriever: the configured value, else max(:data:`POOL`, 4 x top_k).

    Not 4 x top_k alone: BM25 is min-max normalised over the pool, the cross-lingual stage centres each language on
    its pool, and an answer the encoder ranks 60th in another language reaches the top only when it is drawn. With
    the pool tied to top_k, ten hits were not the first ten of a hundred (en2ko_tech alone: nDCG@10 .554 asking for
    ten, .687 for a hundred), and the defaults, fitted on 100-hit searches, were not what a 10-hit search ran."""
    return configured if configured > 0 else max(POOL, 4 * top_k)
