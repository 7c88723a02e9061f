"""Query analysis for BM25: the query's tokens, its domain terms and weighted expansions.

* ``tokens``: the query's own tokens (weight 1.0).
* ``terms``: lexicon terms found in the raw query before morphological analysis
  (longest first, non-overlapping: 합충형파해, not 합충 + 합).
* ``expansions``: the equivalents of those terms, each tokenised by the tokenizer
  of its own script (甲木 → jieba/OpenCC, Load Balancer → English rules) so they
  match index tokens; plus the Hangul readings of the query's Han words (甲木 → 갑목),
  so a Hanja query finds Korean text. Expansion tokens weigh ``expansion_weight``
  and never lower an original token's weight.

Everything ``--explain`` shows comes from :class:`QueryTerms`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hanrag.lexicon import Lexicon
    from hanrag.text import Analyzer


@dataclass(frozen=True)
class QueryTerms:
    tokens: tuple[str, ...]  # the query's own tokens, in order, deduplicated
    terms: tuple[str, ...]  # lexicon terms found in the query
    expansions: tuple[tuple[str, float], ...]  # (token, weight) added by lexicons and Hanja readings
    weights: dict[str, float] = field(default_factory=dict)  # the weighted bag BM25 scores
    # where each expansion token came from: token -> the term (or Han word) it expands
    expansion_sources: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "tokens": list(self.tokens),
            "terms": list(self.terms),
            "expansions": [[t, w] for t, w in self.expansions],
            "weights": dict(self.weights),
            "expansion_sources": dict(self.expansion_sources),
        }


def analyze_query(
    text: str,
    lang: str,
    analyzer: Analyzer,
    lexicon: Lexicon | None,
    expansion_weight: float,
) -> QueryTerms:
    if not 0.0 <= expansion_weight <= 1.0:
        raise ValueError(f"expansion_weight must be in [0, 1], got {expansion_weight}")
    analysis = analyzer.analyze(text, lang)
    tokens = tuple(dict.fromkeys(analysis.tokens))
    weights: dict[str, float] = dict.fromkeys(tokens, 1.0)
    terms = domain_terms(text, analyzer, lexicon) if lexicon is not None else ()
    expansions: dict[str, float] = {}
    sources: dict[str, str] = {}

    def _add_all(toks: tuple[str, ...], source: str) -> None:
        # a multi-word equivalent (roll back, Load Balancer) shares one expansion weight among its words
        w = expansion_weight / max(1, len(toks))
        for tok in toks:
            if tok in weights or expansion_weight <= 0.0:
                continue  # never lower (or double) an original token
            if w > expansions.get(tok, 0.0):
                expansions[tok] = w
                sources[tok] = source

    for term in terms:
        # the term itself may be split differently by the query's morphology; add it whole too
        _add_all(analyzer.analyze(term, lang).tokens, term)
        for equiv in lexicon.equivalents(term) if lexicon is not None else ():
            _add_all(analyzer.analyze(equiv, lang).tokens, term)
    if analyzer.cfg.hanja_readings:
        for reading in analysis.readings:
            _add_all((reading,), "hanja reading")
    for tok, w in expansions.items():
        weights[tok] = max(weights.get(tok, 0.0), w)
    return QueryTerms(tokens, terms, tuple(expansions.items()), weights, sources)


def domain_terms(text: str, analyzer: Analyzer, lexicon: Lexicon) -> tuple[str, ...]:
    """The lexicon terms of a query: found on morpheme borders (:meth:`Analyzer.term_border`), and a term its
    lexicon lists as a homograph of an ordinary word only beside one of that lexicon's terms that is not
    (천간과 지지 is about the branches, 정부를 지지하는 여론 is not)."""
    found = [term for _, _, term in lexicon.find_spans(text, analyzer.term_border)]
    homograph = [t.casefold() in lexicon.homographs for t in found]
    anchored = any(t.casefold() in lexicon.context_forms and not h for t, h in zip(found, homograph, strict=True))
    return tuple(t for t, h in zip(found, homograph, strict=True) if anchored or not h)


def glossary_expansions(text: str, lang: str, analyzer: Analyzer, glossary: Lexicon, weight: float,
                        taken: dict[str, float]) -> dict[str, tuple[float, str]]:
    """BM25 expansion from the index's corpus glossary (:mod:`hanrag.index.glossary`): token -> (weight,
    ``glossary:<term>``) for the glossed terms in ``text``, none of ``taken`` (the query's weighted tokens).

    The corpus wrote the two forms as one term's names: at ``weight`` 1 an equivalent weighs what the term's own
    words weigh (each up to 1), so a passage that uses only the other form scores as if it used the query's."""
    out: dict[str, tuple[float, str]] = {}
    if weight <= 0:
        return out
    for term in glossary.find_terms(text, analyzer.term_border):
        own = len(analyzer.analyze(term, lang).tokens)
        for equiv in glossary.equivalents(term):
            toks = analyzer.analyze(equiv, lang).tokens
            w = weight * min(own, len(toks)) / max(1, len(toks))
            for tok in toks:
                if tok not in taken and w > out.get(tok, (0.0, ""))[0]:
                    out[tok] = (w, f"glossary:{term}")
    return out
