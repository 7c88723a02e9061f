"""The corpus glossary: Korean ↔ English term pairs the corpus itself writes down, mined at build time.

Korean technical writing glosses its terms in parentheses — ``활성 프로브(liveness probe)``,
``데몬셋(DaemonSet)``, ``Deployment(디플로이먼트)``. Such a pair is the author's own statement that the two
forms name one thing, so the searcher uses it like a lexicon entry the index wrote for itself: a Korean query
term reaches English text that only uses the English form, and an English query reaches Korean text. Most of
these terms are loanwords (디플로이먼트, 인그레스), which no dictionary translation reaches: their Hangul is
a transliteration, not a Sino-Korean reading.

Mining is deliberately narrow: the gloss must be Latin words right after (or right before) Hangul words. A
pair is the whole gloss: the Korean noun phrase before a parenthesis runs back to the first word that cannot
be part of a term (a noun with its particle, 파드의; a modifier, 통합된; an adverb), so 사후 분석(Postmortem)
pairs 사후 분석, never 분석 alone. At most three words a side, the two sides at most one word apart, no
acronyms (``컨테이너 런타임 인터페이스(CRI)``), no function word at either end of the English
(``Quality of``). Each term keeps its ``PER_TERM`` most frequent
glosses, and the most often glossed terms are kept up to ``MAX_BYTES``.
The glossary lives in the snapshot's manifest (``glossary``), so it always matches the index it came from.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable

from hanrag.text.english import STOPWORDS

PER_TERM = 2
# a bound on the manifest (Milvus keeps it in one JSON field of at most 64 KiB, beside the dense means): the most
# often glossed terms are kept, up to this many bytes of JSON with every non-ASCII character escaped
MAX_BYTES = 24_000
MAX_WORDS = 3

_HANGUL_WORDS = rf"[가-힣]+(?:[ ][가-힣]+){{0,{MAX_WORDS - 1}}}"
_LATIN_WORDS = rf"[A-Za-z][A-Za-z0-9.\-]*(?:[ ][A-Za-z][A-Za-z0-9.\-]*){{0,{MAX_WORDS - 1}}}"
# 한글(English) and English(한글); the paren may be full-width
_KO_EN = re.compile(rf"({_HANGUL_WORDS})[ ]?[(（][ ]?({_LATIN_WORDS})[ ]?[)）]")
_EN_KO = re.compile(rf"({_LATIN_WORDS})[ ]?[(（][ ]?({_HANGUL_WORDS})[ ]?[)）]")
# a word that ends in one of these is a noun with its case particle (볼륨을), not a term
_PARTICLES = ("을", "를", "의", "에", "에서", "에게", "으로", "로서", "로써", "와", "과", "은", "는", "이다", "한다")
# ...and one that ends like this modifies a noun (통합된, 없는): a gloss of a longer English word, not a term
_MODIFIERS = ("하는", "되는", "아닌", "없는", "않은", "있는", "적인", "된", "스러운", "가능한")
_ACRONYM = re.compile(r"^[A-Z0-9.\-]+s?$")
# a Hangul word right before a match: the noun phrase may start earlier than the pattern's three words
_HANGUL_BEFORE = re.compile(r"([가-힣]+)[ ]?$")


def _plain_word(word: str) -> bool:
    """Without morphology: a word that is not a noun with its particle (볼륨을) nor a modifier (통합된)."""
    return not ((word.endswith(_PARTICLES) and len(word) > 2) or word.endswith(_MODIFIERS))


def _check(ko: list[str], en: list[str]) -> tuple[str, str] | None:
    """The pair as terms, or None: an explanation, an acronym, a phrase cut out of a sentence."""
    if not ko or len(ko) > MAX_WORDS or len(en) > MAX_WORDS or len("".join(ko)) < 2:
        return None
    if len(en) > len(ko) + 1 or len(ko) > len(en) + 1:
        return None  # a long English phrase glossing one word is an explanation, not a term's other name
    if any(_ACRONYM.match(w) for w in en) or en[0].lower() in STOPWORDS or en[-1].lower() in STOPWORDS:
        return None  # a function word at either end: a phrase cut out of a sentence (Quality of, Mani the)
    en_term = " ".join(en).strip(".-")
    if len(en_term) < 3 or not en_term[0].isalpha():
        return None
    return " ".join(ko), en_term


def _pairs(text: str, is_term_word: Callable[[str], bool]) -> Iterable[tuple[str, str]]:
    if "(" not in text and "（" not in text:
        return
    for m in _KO_EN.finditer(text):
        # the gloss names the whole noun phrase before it: 사후 분석(Postmortem) is 사후 분석, not 분석 (a common
        # word that would then expand to postmortem); the phrase runs back to a word that is not part of a term
        # (파드의, 그리고), and one that may run on past what the pattern caught is left alone
        words = m.group(1).split(" ")
        n = len(words)
        while n and is_term_word(words[n - 1]):
            n -= 1
        if n == 0 and (before := _HANGUL_BEFORE.search(text, 0, m.start(1))) and is_term_word(before.group(1)):
            continue
        pair = _check(words[n:], m.group(2).split(" "))
        if pair:
            yield pair
    for m in _EN_KO.finditer(text):
        # English before the paren: its last words gloss the Korean inside (Deployment(디플로이먼트)), which is
        # whole; how many English words is unknown, so as many as the Korean has
        en_words, ko_words = m.group(1).split(" "), m.group(2).split(" ")
        if all(is_term_word(w) for w in ko_words):
            pair = _check(ko_words, en_words[-min(len(ko_words), MAX_WORDS):])
            if pair:
                yield pair


def mine_glossary(texts: Iterable[str], is_term_word: Callable[[str], bool] | None = None) -> dict[str, list[str]]:
    """Korean term -> its English glosses, most frequent first (``PER_TERM``, ``MAX_BYTES``).

    ``is_term_word`` tells whether a Korean word can be part of a term (the build passes
    :meth:`hanrag.text.Analyzer.is_nominal_word`, Kiwi's reading); without it a word ending in a particle or a
    modifier ending is not."""
    is_term_word = is_term_word or _plain_word
    counts: Counter[tuple[str, str]] = Counter()
    surface: dict[tuple[str, str], Counter[str]] = {}
    for text in texts:
        for ko, en in _pairs(text, is_term_word):
            key = (ko, en.casefold())
            counts[key] += 1
            surface.setdefault(key, Counter())[en] += 1
    per_term: dict[str, list[tuple[int, str]]] = {}
    for (ko, folded), n in counts.items():
        if ko.casefold() != folded:
            per_term.setdefault(ko, []).append((n, surface[(ko, folded)].most_common(1)[0][0]))
    out: dict[str, list[str]] = {}
    size = 2
    for ko, glosses in sorted(per_term.items(), key=lambda kv: (-sum(n for n, _ in kv[1]), kv[0])):
        ens = [en for _, en in sorted(glosses, key=lambda g: (-g[0], g[1]))[:PER_TERM]]
        size += len(json.dumps({ko: ens})) + 1  # '"k": [...]' plus its comma
        if size > MAX_BYTES:
            break
        out[ko] = ens
    return dict(sorted(out.items()))
