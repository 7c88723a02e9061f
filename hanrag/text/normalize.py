"""Normalisation and script runs shared by every tokenizer.

Text is NFKC-normalised first (full-width Latin → ASCII, CJK compatibility
ideographs → unified ones), then split into script runs: CJK ideographs (Hanja /
Hanzi), Latin words (letters, digits, ``+`` ``#``), and everything else (Hangul and
punctuation). Each run kind is tokenised by the same code whichever language the
text is tagged with, which is what makes 甲木 or Kubernetes index identically in a
Korean, Chinese or English chunk.
"""

from __future__ import annotations

import re
import unicodedata

# CJK unified ideographs + extensions A–H + compatibility blocks (NFKC folds most of the latter)
_HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U000323af\U0002f800-\U0002fa1f"
HAN_RUN = re.compile(f"[{_HAN}]+")
# Latin words incl. digits and accented letters; a trailing + or # keeps C++ / C#
LATIN_RUN = re.compile(r"[0-9A-Za-z\u00c0-\u024f]+(?:[+#]+(?![0-9A-Za-z]))?")
HAN_OR_LATIN = re.compile(f"[{_HAN}]+|" + LATIN_RUN.pattern)
PLACEHOLDER = "A"
HANGUL = re.compile(r"[\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]")


_SURROGATES = str.maketrans({cp: "\ufffd" for cp in range(0xD800, 0xE000)})


def without_surrogates(text: str) -> str:
    """``text`` with every lone surrogate (a JSON query's "\ud800", a non-UTF-8 byte of an argv) as U+FFFD: they
    cannot reach Kiwi or jieba as UTF-8. One character for one, so offsets into ``text`` still hold."""
    return text.translate(_SURROGATES) if not text.isascii() else text


def normalize(text: str) -> str:
    return unicodedata.normalize("NFKC", without_surrogates(text))


def split_runs(text: str) -> tuple[list[str], list[str], str]:
    """Return (han runs, latin runs, rest) where rest is the text with each run replaced by ``A``.

    A placeholder (not deletion, not a blank) keeps the grammar intact for the Korean
    analyser: 甲木은 → ``A은`` so 은 stays a particle (a bare ``은`` would be read as
    a noun). Kiwi tags the placeholder SL, and Korean keeps no SL tokens.
    """
    han: list[str] = []
    latin: list[str] = []

    def _take(m: re.Match[str]) -> str:
        s = m.group(0)
        (han if HAN_RUN.fullmatch(s) else latin).append(s)
        return PLACEHOLDER

    rest = HAN_OR_LATIN.sub(_take, text)
    return han, latin, rest
