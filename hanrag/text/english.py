"""English (and any Latin-script run) tokenisation: lower-case words, stopwords, optional stemming.

Tokens of two characters or more are kept (CI, CD, DB, VM, LB, QA matter in IT text);
shorter or odd tokens survive only through the allowlist (k8s, l4, c++).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from hanrag.text.stopwords import stopwords

STOPWORDS = stopwords("STOPWORDS_EN")
_WORD = re.compile(r"[0-9a-z\u00c0-\u024f]+(?:[+#]+(?![0-9a-z]))?")


class EnglishTokenizer:
    def __init__(self, allowlist: Iterable[str] = (), stem: bool = False) -> None:
        self.allowlist = frozenset(w.lower() for w in allowlist)
        self._stemmer = None
        if stem:
            import Stemmer  # PyStemmer

            self._stemmer = Stemmer.Stemmer("english")
        self._cache: dict[str, str] = {}

    def _stem(self, word: str) -> str:
        out = self._cache.get(word)
        if out is None:
            out = self._stemmer.stemWord(word) if self._stemmer is not None else word
            if len(self._cache) < 200_000:
                self._cache[word] = out
        return out

    def tokenize(self, text: str) -> list[str]:
        out: list[str] = []
        for w in _WORD.findall(text.lower()):
            if w in self.allowlist:
                out.append(w)  # allowlisted tokens are never stemmed or split
                continue
            w = w.rstrip("+#")
            if len(w) < 2 or w in STOPWORDS:
                continue
            out.append(self._stem(w) if not w.isdigit() else w)
        return out
