"""Script ratios and the ko / zh / en language decision.

Everything here is pure, dependency-free and cheap: the chunker tags every chunk
with :func:`detect_lang`, the query planner reads :func:`hanja_ratio`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

Lang = Literal["ko", "zh", "en"]

# how much of a text detect_lang looks at; long documents are decided by their start
DETECT_WINDOW = 2000
# share of letters above which a script decides the language
SCRIPT_THRESHOLD = 0.20
# letters below which a text given a default language takes it: too little prose to decide on (a Korean sentence
# of a dozen syllables between two code blocks)
MIN_LETTERS = 24


@dataclass(frozen=True)
class ScriptCounts:
    """Character counts of one text by script. ``letters`` counts every ``str.isalpha`` character
    (Hangul, ideographs, Latin, kana, ...) and is the denominator of :func:`detect_lang`."""

    hangul: int = 0  # Hangul syllables only
    jamo: int = 0
    cjk: int = 0
    latin: int = 0
    other_letters: int = 0
    letters: int = 0
    non_space: int = 0

    def ratio(self, script: str) -> float:
        return getattr(self, script) / self.letters if self.letters else 0.0


_HANGUL_RE = re.compile("[\uac00-\ud7af]+")
_JAMO_RE = re.compile("[\u1100-\u11ff\u3130-\u318f\ua960-\ua97f\ud7b0-\ud7ff]+")
_CJK_RE = re.compile("[\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U000323af\uf900-\ufaff\U0002f800-\U0002fa1f]+")
_LATIN_RE = re.compile("[A-Za-z\u00c0-\u024f\u1e00-\u1eff]+")
_SPACE_RE = re.compile(r"\s+")


def _run_length(pattern: re.Pattern[str], text: str) -> int:
    return sum(map(len, pattern.findall(text)))


def script_counts(text: str) -> ScriptCounts:
    # runs of a script counted by regex in C: this is on the chunking hot path (one call per chunk)
    hangul = _run_length(_HANGUL_RE, text)
    cjk = _run_length(_CJK_RE, text)
    letters = sum(map(str.isalpha, text))
    latin = _run_length(_LATIN_RE, text)
    jamo = _run_length(_JAMO_RE, text)
    latin = min(latin, letters)  # the Latin ranges hold a few non-letters (×, ÷)
    other = max(0, letters - hangul - cjk - latin - jamo)
    non_space = len(text) - _run_length(_SPACE_RE, text)
    return ScriptCounts(hangul, jamo, cjk, latin, other, letters, non_space)


_LETTER_RE = re.compile(r"[^\W\d_]+")  # letters (word characters less digits and the underscore), runs
_SCRIPT_RE = {"hangul": _HANGUL_RE, "cjk": _CJK_RE, "latin": _LATIN_RE}
LANG_SCRIPT = {"ko": "hangul", "zh": "cjk", "en": "latin"}  # the script each language tag is detected by


def script_share(text: str, script: str) -> float:
    """The share of ``text``'s letters written in ``script`` (``hangul``, ``cjk`` or ``latin``); 0.0 without
    letters. Two regex passes, for the search path (:func:`script_counts` makes five and a Python one)."""
    letters = _run_length(_LETTER_RE, text)
    return min(1.0, _run_length(_SCRIPT_RE[script], text) / letters) if letters else 0.0


_SYMBOL_RE = re.compile(r"[!-/:-@\[-`{-~0-9]+")  # ASCII punctuation, symbols and digits


def symbol_share(text: str) -> float:
    """The share of ``text``'s non-space characters that are ASCII punctuation, symbols or digits: about .05 in prose
    of any script, a third or more in code, commands and configuration."""
    non_space = len(text) - _run_length(_SPACE_RE, text)
    return _run_length(_SYMBOL_RE, text) / non_space if non_space else 0.0


# the character classes of :func:`bmp_classes`, one bit each
CLASS_LETTER, CLASS_SYMBOL, CLASS_SPACE = 1, 2, 4
CLASS_SCRIPT = {"hangul": 8, "cjk": 16, "latin": 32}


@functools.cache
def bmp_classes() -> bytes:
    """For every Basic Multilingual Plane code point, a byte of the class bits above, each set exactly where the
    regex :func:`script_share` or :func:`symbol_share` counts with matches it: a table lookup per character then
    gives both shares for many texts at once (:func:`hanrag.search.ranker.text_shape`). Surrogates: no class."""
    plane = "".join(chr(c) if not 0xD800 <= c < 0xE000 else "\0" for c in range(0x10000))
    table = 0  # the bytes as one integer: a class's runs are set by slices, the classes joined by one OR
    for bit, pattern in ((CLASS_LETTER, _LETTER_RE), (CLASS_SYMBOL, _SYMBOL_RE), (CLASS_SPACE, _SPACE_RE),
                         *((CLASS_SCRIPT[name], _SCRIPT_RE[name]) for name in CLASS_SCRIPT)):
        marks = bytearray(0x10000)
        for m in pattern.finditer(plane):
            marks[m.start():m.end()] = bytes((bit,)) * (m.end() - m.start())
        table |= int.from_bytes(marks, "big")
    return table.to_bytes(0x10000, "big")


def detect_lang(text: str, default: Lang | None = None, window: int = DETECT_WINDOW,
                min_letters: int = MIN_LETTERS) -> Lang:
    """Tag a text ``ko``, ``zh`` or ``en``.

    Only the first ``window`` characters (2,000) are looked at. Ratios are taken over *letters only*
    (characters for which ``str.isalpha`` holds: Hangul syllables, CJK ideographs, Latin
    and other alphabets); spaces, digits, punctuation and symbols count for nothing.
    Hangul syllables (U+AC00–U+D7AF) above 20 % of the letters → ``ko``; else CJK
    ideographs above 20 % → ``zh`` (Hanja-only classical text is ``zh``); else ``en``
    (also for texts without letters). Korean text with Hanja terms stays ``ko`` because
    Hangul is checked first.

    ``default``: the language of a text with fewer than ``min_letters`` letters (24: a chunk whose prose is a
    line between code blocks takes its document's language, :func:`hanrag.chunking.chunk_document`).
    """
    counts = script_counts(text[:window])
    if default is not None and counts.letters < min_letters:
        return default
    if counts.ratio("hangul") > SCRIPT_THRESHOLD:
        return "ko"
    if counts.ratio("cjk") > SCRIPT_THRESHOLD:
        return "zh"
    return "en"


def hanja_ratio(text: str) -> float:
    """CJK ideographs / non-space characters of the whole text (0.0 for an empty text).

    Unlike :func:`detect_lang` digits and punctuation count in the denominator: a query
    like ``甲木 2024?`` is less "Hanja" than ``甲木``.
    """
    counts = script_counts(text)
    return counts.cjk / counts.non_space if counts.non_space else 0.0
