"""Corpus links: what a Korean word of a query names in the corpus's English, and back — the build's half.

A collection that mixes Korean and English writes one concept two ways, and most Korean technical words name the
English ones in one of two ways:

* **loanword** — the Hangul spells the English sound (디플로이먼트 = deployment, 오토베큠 = autovacuum);
* **hanja** — a Sino-Korean word is a Han word read in Hangul (변수 = 變數 = variable), which CC-CEDICT glosses.

No dictionary lists a corpus's own transliterations, so the build writes down the words a link may reach: the
corpus's English words and its loanword-like Korean tokens, filed under their consonant keys
(:mod:`hanrag.text.loanword`). The searcher links a query word to the words filed under its key — the vowels
picking the closest spelling — and a Sino-Korean query word to the CC-CEDICT glosses the index holds
(:func:`hanrag.text.query.link_expansions`). A link therefore always lands on a word this corpus uses, which is
what makes a coarse key or an ambiguous reading precise enough to use, and a query word the corpus never writes
(오토베큠 over English pages only) still finds its English.

The tables live in the snapshot's manifest (``sound_keys``), like the glossary, bounded the same way: the most used
words first, up to ``MAX_BYTES``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping

from hanrag.text.loanword import MIN_KEY, english_key, hangul_key, may_be_loanword

MAX_BYTES = 24_000  # both tables, JSON with non-ASCII escaped (the manifest shares Milvus's 64 KiB field)
_EN_WORD = re.compile(r"[A-Za-z]{4,}")
_HANGUL_TOKEN = re.compile(r"^[가-힣]{2,}$")


def english_words(texts: Iterable[str]) -> Counter[str]:
    """Lower-case English words of four letters or more, by the number of texts that use them."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update({w.lower() for w in _EN_WORD.findall(text)})
    return counts


def sound_keys(vocab: Iterable[str], df: Iterable[int], texts: Iterable[str]) -> dict[str, dict[str, list[str]]]:
    """``{"english": {key: [words]}, "korean": {key: [tokens]}}`` for a built index: the English words of the chunk
    texts and the loanword-like Hangul tokens of its BM25 vocabulary (with their document counts), each under its
    consonant key, most used first."""
    korean = {t: int(n) for t, n in zip(vocab, df, strict=True) if _HANGUL_TOKEN.match(t) and may_be_loanword(t)}
    english = {w: n for w, n in english_words(texts).items() if len(english_key(w).lstrip("_")) >= MIN_KEY}
    return _bounded({"english": (english, english_key), "korean": (korean, hangul_key)})


def _bounded(tables: Mapping[str, tuple[Mapping[str, int], object]]) -> dict[str, dict[str, list[str]]]:
    """Both tables filed by key, the most used words first until ``MAX_BYTES``; sorted for a stable manifest."""
    words = sorted(((n, side, w) for side, (counts, _) in tables.items() for w, n in counts.items()),
                   key=lambda x: (-x[0], x[1], x[2]))
    out: dict[str, dict[str, list[str]]] = {side: {} for side in tables}
    size = len(json.dumps(out))
    for _, side, word in words:
        key = tables[side][1](word)  # type: ignore[operator]
        # '"word", ' in a list, and '"KEY": [], ' for a new key (json.dumps's separators)
        size += len(json.dumps(word)) + 2 + (len(json.dumps(key)) + 6 if key not in out[side] else 0)
        if size > MAX_BYTES:
            break
        out[side].setdefault(key, []).append(word)
    return {side: dict(sorted(keys.items())) for side, keys in out.items()}
