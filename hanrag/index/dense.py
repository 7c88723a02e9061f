"""Exact dense retrieval: inner product over the (memory-mapped) embedding matrix.

Vectors are L2-normalised, so the inner product is the cosine. A brute-force
matrix-vector product over 10k x 384 float32 takes well under a millisecond;
``argpartition`` picks the top k without sorting everything.
"""

from __future__ import annotations

import numpy as np


def inner_products(matrix: np.ndarray, qvec: np.ndarray) -> np.ndarray:
    """Scores of every row (float32), also for a float16 matrix."""
    q = np.asarray(qvec, dtype=matrix.dtype if matrix.dtype == np.float16 else np.float32).reshape(-1)
    if matrix.shape[0] == 0:
        return np.zeros(0, np.float32)
    if q.shape[0] != matrix.shape[1]:
        raise ValueError(f"query vector has dimension {q.shape[0]}, the index has {matrix.shape[1]}")
    return np.asarray(matrix @ q, dtype=np.float32)


def top_k_scores(scores: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Indices and scores of the k best entries, best first; ``mask`` (bool) excludes rows before selection."""
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
        available = int(mask.sum())
    else:
        available = scores.shape[0]
    k = min(k, available)
    if k <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    if k < scores.shape[0]:
        idx = np.argpartition(-scores, k - 1)[:k]
    else:
        idx = np.arange(scores.shape[0])
    # stable order: score descending, then row ascending (deterministic ties)
    order = np.lexsort((idx, -scores[idx]))
    idx = idx[order]
    return idx.astype(np.int64), scores[idx].astype(np.float32)


def top_k(
    matrix: np.ndarray, qvec: np.ndarray, k: int, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Exact inner-product top-k of one query vector over ``matrix`` rows, mask applied before top-k."""
    return top_k_scores(inner_products(matrix, qvec), k, mask)
