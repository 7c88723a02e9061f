"""Han-character runs (Chinese text, Hanja inside Korean or English text): OpenCC t2s + jieba.

The run is converted to simplified first and segmented afterwards, so 合沖 and 合冲,
寶鑑 and 宝鉴 segment identically. Hanja readings (甲木 → 갑목) are taken from the
original characters when t2s kept the length (almost always), so Korean readings of
traditional forms are exact.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import warnings
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType

from hanrag.fsutil import default_cache_dir
from hanrag.text.stopwords import stopwords

# jieba emits single punctuation/space tokens inside runs only in rare cases; runs are pure Han
STOPWORDS = stopwords("STOPWORDS_CHINESE") | frozenset("的了和是在也有就都而及与或之其")


_JIEBA_LOCK = threading.Lock()


def cache_dir() -> Path:
    """hanrag's per-user cache folder (:func:`hanrag.fsutil.default_cache_dir`), created private on first use."""
    path = default_cache_dir()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def _jieba_dir() -> str:
    """Where jieba keeps its prefix-dictionary cache: hanrag's cache folder, not the shared temp folder (whose
    ``jieba.cache`` any local user could have written); the temp folder only when the cache folder is unusable."""
    try:
        path = cache_dir() / "jieba"
        path.mkdir(mode=0o700, exist_ok=True)
        if os.access(path, os.W_OK):
            return str(path)
    except OSError:
        pass
    return tempfile.gettempdir()


def load_jieba() -> ModuleType:
    """jieba, imported quietly: no "Building prefix dict" banner (its logger), no pkg_resources deprecation
    warning (its import), its global tokenizer's cache in :func:`cache_dir`. Every hanrag use goes through here."""
    with _JIEBA_LOCK:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # jieba/_compat.py imports the deprecated pkg_resources
            warnings.simplefilter("ignore", DeprecationWarning)
            import jieba
        logging.getLogger("jieba").setLevel(logging.WARNING)
        if jieba.dt.tmp_dir is None:
            jieba.dt.tmp_dir = _jieba_dir()
        return jieba


def new_jieba_tokenizer() -> object:
    """A private ``jieba.Tokenizer`` over the default dictionary, initialised from a copy of the global one's.

    Copying the global tokenizer's prefix dictionary (untouched by hanrag: user words only go into
    private instances) takes milliseconds, where loading it again takes a second or more; cross-script
    translation reads the global one's word frequencies, so a translating search loads the dictionary once.
    """
    jieba = load_jieba()
    jieba.dt.initialize()  # once per process; a no-op when done
    tokenizer = jieba.Tokenizer()
    tokenizer.tmp_dir = jieba.dt.tmp_dir
    with jieba.dt.lock:
        tokenizer.FREQ, tokenizer.total = dict(jieba.dt.FREQ), jieba.dt.total
    tokenizer.initialized = True
    return tokenizer


class ChineseTokenizer:
    def __init__(self, opencc_config: str = "t2s", user_words: Iterable[str] = (), readings: bool = True) -> None:
        import opencc

        self._cc = opencc.OpenCC(opencc_config) if opencc_config else None
        # a private instance: user words never leak into other users of jieba
        self._jieba = new_jieba_tokenizer()
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
