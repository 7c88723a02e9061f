"""Han-character runs (Chinese text, Hanja inside Korean or English text): OpenCC t2s + jieba.

The run is converted to simplified first and segmented afterwards, so 合沖 and 合冲,
寶鑑 and 宝鉴 segment identically. Hanja readings (甲木 → 갑목) are taken from the
original characters when t2s kept the length (almost always), so Korean readings of
traditional forms are exact.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from bm25s.stopwords import STOPWORDS_CHINESE

# jieba emits single punctuation/space tokens inside runs only in rare cases; runs are pure Han
STOPWORDS = frozenset(STOPWORDS_CHINESE) | frozenset("的了和是在也有就都而及与或之其")


class ChineseTokenizer:
    def __init__(self, opencc_config: str = "t2s", user_words: Iterable[str] = (), readings: bool = True) -> None:
        import jieba
        import opencc

        jieba.setLogLevel(logging.WARNING)
        self._cc = opencc.OpenCC(opencc_config) if opencc_config else None
        self._jieba = jieba.Tokenizer()  # private instance: user words never leak into other users of jieba
        self._jieba.initialize()
        for w in user_words:
            s = self.convert(w)
            self._jieba.add_word(s, freq=max(self._jieba.suggest_freq(s, tune=False), 2000))
        self.readings = readings
        self._reading_cache: dict[str, str | None] = {}

    def convert(self, text: str) -> str:
        return self._cc.convert(text) if self._cc is not None else text

    def reading(self, word: str) -> str | None:
        """Hangul reading of a Han word (甲木 → 갑목), or None if any character has none."""
        if word in self._reading_cache:
            return self._reading_cache[word]
        import hanja

        r = hanja.translate(word, "substitution")
        out = r if r and all("\uac00" <= ch <= "\ud7af" for ch in r) else None
        if len(self._reading_cache) < 200_000:
            self._reading_cache[word] = out
        return out

    def analyze(self, run: str) -> tuple[list[str], list[str]]:
        """(simplified tokens, Hangul readings) of one Han run."""
        simp = self.convert(run)
        aligned = len(simp) == len(run)
        tokens: list[str] = []
        readings: list[str] = []
        pos = 0
        for tok in self._jieba.cut(simp, HMM=True):
            start, pos = pos, pos + len(tok)
            if tok in STOPWORDS or not tok.strip():
                continue
            tokens.append(tok)
            # single characters get no reading: 水 → 수 would collide with every Korean 수 (number, water, hand)
            if self.readings and len(tok) >= 2:
                r = self.reading(run[start:pos] if aligned else tok)
                if r is not None:
                    readings.append(r)
        return tokens, readings
