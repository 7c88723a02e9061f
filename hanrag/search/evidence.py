"""What the index says about a query: its BM25 ceiling, its lexical evidence, its dense background.

Read by the stages that decide from the index rather than from the query text: the plan stage (a term no chunk
holds), the cross-lingual stage (weak lexical evidence: :mod:`hanrag.search.widen`), fusion (the ceiling and the
dense background) and the ranker's features. Nothing here changes a record; the manifest's mean vectors are read
once (a searcher serves one snapshot: a reload makes a new one).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from hanrag.backends.base import IndexBackend
from hanrag.records import Chunk, QueryPlan

# a language shapes the query's language axes only with this many chunks: the mean of fewer is more one page's topic
# than the language's place in the encoder's space
AXIS_MIN_CHUNKS = 50


def language_axes(means: Mapping[str, np.ndarray]) -> np.ndarray:
    """Orthonormal rows spanning the differences between the languages' mean chunk vectors (shape (0, dim) with
    fewer than two languages): the directions along which a multilingual encoder tells the corpus's languages
    apart."""
    vecs = [np.asarray(m, dtype=np.float64).reshape(-1) for _, m in sorted(means.items())]
    if len(vecs) < 2:
        return np.zeros((0, vecs[0].size if vecs else 0))
    diffs = np.stack([v - vecs[0] for v in vecs[1:]], axis=1)
    basis, singular, _ = np.linalg.svd(diffs, full_matrices=False)
    return basis[:, singular > 1e-9 * max(1.0, float(singular.max()))].T


def neutral_query(qvec: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """``qvec`` without its components along ``axes``, back to unit length (``qvec`` itself when no axis or
    nothing is left). Scored against a chunk, it gives the cosine of the two with the language axes taken out of
    both (the chunk's components along them meet nothing in the query): a Korean question no longer prefers a Korean
    passage for being Korean, and its score to each language's mean — the calibrated background — is one number."""
    q = np.asarray(qvec, dtype=np.float64).reshape(-1)
    if axes.size == 0 or axes.shape[1] != q.size:
        return np.asarray(qvec)
    out = q - axes.T @ (axes @ q)
    norm = float(np.linalg.norm(out))
    return (out / norm).astype(np.asarray(qvec).dtype) if norm > 1e-6 else np.asarray(qvec)


class Evidence:
    """The index-side measures of a query over one backend (the analyzer tokenises a plan's terms)."""

    def __init__(self, backend: IndexBackend, analyzer) -> None:
        self.backend = backend
        self.analyzer = analyzer
        self._dense_mean: np.ndarray | None = None
        self._lang_means: dict[str, np.ndarray] = {}
        self._lang_counts: dict[str, int] = {}
        self._axes: np.ndarray | None = None

    def term_tokens(self, term: str, plan: QueryPlan) -> list[str]:
        return [t for t in self.analyzer.analyze(term, plan.lang).tokens if t in plan.tokens] or [term]

    def absent(self, term: str, plan: QueryPlan) -> bool:
        """No chunk holds any of the term's own tokens (filters aside: absence is a property of the index)."""
        return all(not self.backend.sparse_search({t: 1.0}, 1) for t in self.term_tokens(term, plan))

    def query_ceiling(self, plan: QueryPlan, weights: Mapping[str, float]) -> float:
        """The BM25 score of a chunk holding every own token of the query and every stand-in for an absent term."""
        absent = {via[len("lexicon:"):-len(" (absent)")] for _, via in plan.expansion_via if via.endswith("(absent)")}
        full = {t for t, via in plan.expansion_via if via.endswith("(absent)")}
        # an absent term's own tokens give way to their stand-ins (never both: the ceiling would count it twice)
        gone = {t for term in absent for t in self.term_tokens(term, plan)}
        query = {t: weights[t] for t in weights if (t in plan.tokens and t not in gone) or t in full} or weights
        return self.backend.sparse_ceiling(query)

    def lexical_evidence(self, plan: QueryPlan, weights: Mapping[str, float], bm25: Mapping[str, float],
                         chunks: Mapping[str, Chunk], lang: str | None = None, ceiling: float | None = None) -> float:
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

    def translated_evidence(self, plan: QueryPlan, weights: Mapping[str, float], bm25: Mapping[str, float]) -> float:
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

    def _read_means(self) -> np.ndarray:
        """The manifest's mean vectors and per-language chunk counts, read once (a searcher serves one snapshot: a
        reload makes a new one); returns the overall mean (empty when the manifest has none)."""
        if self._dense_mean is not None:
            return self._dense_mean
        manifest = self.backend.manifest() or {}
        mean = manifest.get("dense_mean")
        self._dense_mean = np.asarray(mean, dtype=np.float64) if mean else np.zeros(0)
        self._lang_means = {g: np.asarray(m, dtype=np.float64)
                            for g, m in (manifest.get("dense_mean_by_lang") or {}).items() if isinstance(m, list)}
        counts = manifest.get("langs")
        self._lang_counts = ({g: n for g, n in counts.items() if isinstance(n, int)} if isinstance(counts, dict)
                             else {})
        return self._dense_mean

    def language_axes(self) -> np.ndarray:
        """The snapshot's language axes (:func:`language_axes` over the manifest's ``dense_mean_by_lang``, languages
        of at least :data:`AXIS_MIN_CHUNKS` chunks); no axis for an index of one language or built without them."""
        if self._axes is None:
            self._read_means()
            means = {g: m for g, m in self._lang_means.items()
                     if m.size and self._lang_counts.get(g, 0) >= AXIS_MIN_CHUNKS}
            sizes = {m.size for m in means.values()}
            self._axes = language_axes(means) if len(sizes) == 1 else np.zeros((0, 0))
        return self._axes

    def neutral(self, qvec: np.ndarray) -> np.ndarray:
        """The query vector with the snapshot's language axes taken out (:func:`neutral_query`)."""
        return neutral_query(qvec, self.language_axes())

    def dense_background(self, qvec: np.ndarray | None, langs: Sequence[str] | None = None
                         ) -> float | np.ndarray | None:
        """The query's mean cosine to every chunk (q · the manifest's mean vector) or, with ``langs``, per
        candidate to the chunks of its language (``dense_mean_by_lang``; the overall mean for a language the
        manifest lacks); None when unknown (an index built before the manifest carried it: min-max)."""
        mean = self._read_means()
        if qvec is None or mean.size != np.asarray(qvec).size:
            return None
        q = np.asarray(qvec, dtype=np.float64).reshape(-1)
        overall = float(np.dot(mean, q))
        if langs is None:
            return overall
        per = {g: float(np.dot(m, q)) for g, m in self._lang_means.items() if m.size == q.size}
        return np.array([per.get(g, overall) for g in langs], dtype=np.float64)
