"""Build-time near-duplicate marking.

A chunk whose cosine to an earlier *kept* chunk of another document is at least
the threshold is marked a duplicate of it. "Earlier" is the priority order: better
(lower) tier first, then the earlier document, then position in the document, so
the kept copy is the most authoritative one. Similarities come from blocked matrix
products (block x n), never a Python double loop; Python only visits rows that have
a candidate at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hanrag.records import Chunk


@dataclass(frozen=True)
class DedupResult:
    dup_of: np.ndarray  # int64 per chunk row: row of the kept chunk, -1 when kept itself
    duplicates: int
    groups: int  # kept chunks that have at least one duplicate
    threshold: float

    def summary(self) -> dict[str, float | int]:
        return {"duplicates": self.duplicates, "groups": self.groups, "threshold": self.threshold}


def priority_order(chunks: Sequence[Chunk]) -> np.ndarray:
    """Rows sorted by (tier, first appearance of the document, row)."""
    doc_rank: dict[str, int] = {}
    for c in chunks:
        doc_rank.setdefault(c.doc_id, len(doc_rank))
    keys = [(c.tier, doc_rank[c.doc_id], i) for i, c in enumerate(chunks)]
    return np.array([k[2] for k in sorted(keys)], dtype=np.int64)


def mark_duplicates(
    chunks: Sequence[Chunk], embeddings: np.ndarray, threshold: float = 0.95, block: int = 1024
) -> DedupResult:
    n = len(chunks)
    dup_of = np.full(n, -1, dtype=np.int64)
    if n < 2:
        return DedupResult(dup_of, 0, 0, threshold)
    order = priority_order(chunks)
    emb = np.asarray(embeddings, dtype=np.float32)[order]  # rows in priority order
    doc_codes = {d: i for i, d in enumerate(dict.fromkeys(c.doc_id for c in chunks))}
    docs = np.array([doc_codes[chunks[r].doc_id] for r in order], dtype=np.int64)
    kept = np.ones(n, dtype=bool)  # in priority positions
    target = np.full(n, -1, dtype=np.int64)  # in priority positions
    for start in range(1, n, block):
        stop = min(n, start + block)
        sims = emb[start:stop] @ emb[:stop].T  # (b, stop): only earlier positions matter
        rows = np.arange(start, stop)
        cols = np.arange(stop)
        candidate = (sims >= threshold) & (cols[None, :] < rows[:, None]) & (docs[None, :stop] != docs[rows][:, None])
        for r in np.flatnonzero(candidate.any(axis=1)):
            pos = start + r
            # earlier rows of this same block may have just been marked: check kept now
            cand = np.flatnonzero(candidate[r] & kept[:stop])
            if cand.size:
                kept[pos] = False
                target[pos] = cand[0]  # the highest-priority kept copy
    dup_positions = np.flatnonzero(~kept)
    dup_of[order[dup_positions]] = order[target[dup_positions]]
    groups = len(set(dup_of[dup_of >= 0].tolist()))
    return DedupResult(dup_of, int(dup_positions.size), groups, threshold)
