"""BM25 without Milvus' analysers: hanrag's tokens, scores split into a stored and a query half.

BM25 factors as ``score(q, d) = Σ_t w_q(t) · idf(t) · tfpart(t, d)``, so each chunk stores
``tfpart`` as a sparse vector over hanrag term ids and the query vector carries
``w_q(t) · idf(t)``: Milvus' sparse inner product (SPARSE_INVERTED_INDEX, IP, exact) is
then the BM25 score. Both halves are :mod:`hanrag.index.sparse`'s formulas, whose IDF is clamped
at 0 as bm25s clamps it when it builds the embedded index: robertson's
``log((N − df + 0.5) / (df + 0.5))`` is negative for a term in more than half the documents,
bm25s scores such a term 0, and Milvus refuses negative sparse values outright
(``tests/test_backend_parity.py`` holds every method to the embedded scores).
"""

from __future__ import annotations

from collections.abc import Mapping

from hanrag.index.sparse import bm25_idf, bm25_tf_part


def tf_vector(
    counts: Mapping[str, int], term_ids: Mapping[str, int], avgdl: float, k1: float, b: float, method: str
) -> dict[int, float]:
    """The stored half of one chunk: {term id: tf part}. Milvus refuses an empty sparse vector, so a
    chunk without tokens stores a single explicit 0 (it can never score)."""
    dl = sum(counts.values())
    vec = {term_ids[t]: float(bm25_tf_part(n, dl, avgdl, k1, b, method)) for t, n in counts.items()}
    return {k: v for k, v in vec.items() if v > 0} or {0: 0.0}


def query_vector(
    query: Mapping[str, float], stats: Mapping[str, tuple[int, int]], n_docs: int, method: str
) -> dict[int, float]:
    """The query half: {term id: weight · idf} for the weighted tokens the collection knows
    (``stats``: token -> (term id, df)). Tokens with df = 0 cannot match and tokens with idf 0 add
    nothing, so both are left out (a query of only those finds nothing, as on the embedded index)."""
    vec: dict[int, float] = {}
    for term, weight in query.items():
        if not weight or term not in stats:
            continue
        tid, df = stats[term]
        idf = float(bm25_idf(df, n_docs, method)) if df > 0 else 0.0
        if idf > 0:
            vec[tid] = vec.get(tid, 0.0) + float(weight) * idf
    return vec
