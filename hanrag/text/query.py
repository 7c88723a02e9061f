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

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hanrag.lexicon import Lexicon
    from hanrag.text import Analyzer


_HANGUL_WORD = re.compile(r"^[가-힣]{2,}$")
_LATIN_WORD = re.compile(r"[A-Za-z]{4,}")
_HANGUL_RUN = re.compile(r"[가-힣]+")


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


def _cut_loanwords(text: str, tokens: list[str]) -> list[tuple[str, tuple[str, ...]]]:
    """(word, its pieces) for each run of two or three of the query's Hangul tokens that the query writes inside
    one word: Kiwi cuts a loanword it does not know into nouns it does (커스텀 -> 커스 + 텀, 콜백 -> 콜 + 백), and
    only the whole spells the English (custom, callback). The longest runs come first."""
    words = set(_HANGUL_RUN.findall(text))
    out: list[tuple[str, tuple[str, ...]]] = []
    for i in range(len(tokens) - 1):
        for j in range(i + 2, min(i + 4, len(tokens) + 1)):
            pieces = tuple(tokens[i:j])
            word = "".join(pieces)
            if all(_HANGUL_RUN.fullmatch(p) for p in pieces) and any(word in w for w in words):
                out.append((word, pieces))
    return sorted(out, key=lambda x: -len(x[1]))


def link_expansions(text: str, tokens: Iterable[str], analyzer: Analyzer, keys: Mapping[str, Mapping[str, list[str]]],
                    weight: float, channels: Iterable[str], taken: Mapping[str, float],
                    exists: Callable[[str], bool]) -> dict[str, tuple[float, str]]:
    """BM25 expansion across Korean and English from the index's sound keys (:mod:`hanrag.index.links`): token ->
    (weight, ``link:<word> (<channel>)``), none of ``taken``.

    * a Korean loanword of the query (``tokens``) -> the corpus's English words with its consonant key, the vowels
      choosing among them (오토베큠 -> autovacuum); one that Kiwi cut into pieces links as the whole word the query
      writes (커스텀, not 커스 + 텀: :func:`_cut_loanwords`);
    * an English word of the query (``text``) -> the corpus's Korean loanwords the same way (deployment ->
      디플로이먼트);
    * a Sino-Korean word -> CC-CEDICT's English glosses of its Han words that the index holds (``exists``:
      변수 -> variable).

    One query word's links share ``weight``."""
    from hanrag.text.cedict import hangul_en_dictionary
    from hanrag.text.loanword import MIN_LIKENESS, best_spellings, english_key, hangul_key, may_be_loanword
    from hanrag.text.loanword import may_be_sino_korean as sino

    channels = set(channels)
    english, korean = keys.get("english") or {}, keys.get("korean") or {}
    links: dict[str, tuple[list[str], str]] = {}

    def spelled_as(word: str) -> list[str]:
        spelled = best_spellings(word, english.get(hangul_key(word), ()), MIN_LIKENESS)
        return [t for t in dict.fromkeys(analyzer.english_token(w) for w in spelled) if t]

    tokens = list(dict.fromkeys(tokens))
    whole: set[str] = set()  # pieces of a loanword Kiwi cut up (커스 + 텀), linked as the word they spell
    if "loanword" in channels:
        for word, pieces in _cut_loanwords(text, tokens):
            # a piece that is a Sino-Korean word of its own (임계 臨界 of 임계값) makes a compound, not a cut loanword
            if any(p in hangul_en_dictionary() for p in pieces):
                continue
            if not whole.intersection(pieces) and may_be_loanword(word) and (targets := spelled_as(word)):
                links[word] = (targets, "loanword")
                whole.update(pieces)
    for tok in tokens:
        if not _HANGUL_WORD.match(tok) or tok in whole:
            continue
        if "loanword" in channels and may_be_loanword(tok):
            links[tok] = (spelled_as(tok), "loanword")
        elif "hanja" in channels and sino(tok):
            glosses = (analyzer.english_token(w) for w in hangul_en_dictionary().get(tok, ()))
            links[tok] = ([t for t in dict.fromkeys(glosses) if t and exists(t)][:2], "hanja")
    if "loanword" in channels:
        for word in dict.fromkeys(w.lower() for w in _LATIN_WORD.findall(text)):
            cands = korean.get(english_key(word), ())
            links[word] = (best_spellings(word, cands, MIN_LIKENESS, english_first=True), "loanword")
    out: dict[str, tuple[float, str]] = {}
    for word, (targets, channel) in links.items():
        targets = [t for t in targets if t not in taken]
        for t in targets:
            w = weight / len(targets)
            if w > out.get(t, (0.0, ""))[0]:
                out[t] = (w, f"link:{word} ({channel})")
    return out
