"""Does a Hangul word spell an English word? Sound keys for loanwords (디플로이먼트 ↔ deployment).

Korean technical writing transliterates English terms (오토베큠, 레플리카, 데코레이터), and no dictionary lists
a corpus's own transliterations. Both spellings keep the consonants, in order, while the vowels drift (an
English vowel letter becomes one of several Hangul vowels, and Hangul adds 으 between consonants), so a word
is reduced to a key of consonant classes — the sounds a Hangul letter and an English spelling can both stand
for (ㅂ/ㅍ and b/p/f/v are one class; ㄹ and l/r; ㅅ/ㅈ/ㅊ and s/z/j/ch/sh). A pair is plausible when the keys
are equal and long enough to mean something (three classes or more); among several English words with one key,
the vowels pick the closest spelling (:func:`likeness`).

The English rules follow how Korean transcribes English (국립국어원's 외래어 표기법 in spirit): an r that is not
before a vowel is silent (서버, 에러), ``tion``/``sion``/``ture`` are one sibilant (딕셔너리), a final ng is
one nasal (오토스케일링), a doubled letter is one sound. They are coarse on purpose: the key decides nothing
alone, and a link only ever lands on a word the corpus itself uses (:mod:`hanrag.index.links`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

_FIRST = 0xAC00
_LAST = 0xD7A3
# initial consonants in jamo order -> class ('' = silent: ㅇ, and ㅎ which English h rarely keeps)
_INITIAL = ("K", "K", "N", "T", "T", "L", "M", "P", "P", "S", "S", "", "S", "S", "S", "K", "T", "P", "")
# final consonants (index 0 = none) -> class; a final ㅅ in a loanword is a t (셋 set, 로봇 robot) and a final ㅇ
# is ng, one nasal like n
_FINAL = ("", "K", "K", "K", "N", "N", "N", "T", "L", "LK", "LM", "LP", "LS", "LT", "LP", "L", "M", "P", "PS",
          "T", "T", "N", "T", "T", "K", "T", "P", "")

# English spelling -> classes; applied left to right, longest pattern first at each position
_EN_RULES = (
    ("tion", "SN"), ("sion", "SN"), ("ture", "S"), ("sch", "SK"), ("tch", "S"), ("dge", "S"), ("ph", "P"),
    ("th", "S"), ("sh", "S"), ("ch", "S"), ("ck", "K"), ("qu", "K"), ("gh", ""), ("wh", ""), ("x", "KS"),
)
_EN_SINGLE = {"b": "P", "p": "P", "f": "P", "v": "P", "d": "T", "t": "T", "k": "K", "q": "K", "g": "K",
              "s": "S", "z": "S", "j": "S", "l": "L", "m": "M", "n": "N"}
_VOWELS = frozenset("aeiouy")
_EN_WORD = re.compile(r"^[a-z]+$")
MIN_KEY = 3


def _jamo(syllable: str) -> tuple[int, int, int]:
    code = ord(syllable) - _FIRST
    return code // 588, (code % 588) // 28, code % 28


def _collapse(classes: str) -> str:
    """One class for a run of the same class: ll, 롤 + 백 (ㄹ final beside nothing), ss."""
    return re.sub(r"(.)\1+", r"\1", classes)


@functools.lru_cache(maxsize=65536)
def hangul_key(word: str) -> str:
    """The consonant-class key of a Hangul word ('' when it holds anything but Hangul syllables); ``_`` first when it
    starts with a vowel or ㅎ, as an English word that starts with a vowel, h, w or y does (도메인 is not admin)."""
    if not word or not all(_FIRST <= ord(ch) <= _LAST for ch in word):
        return ""
    out = ["_" if _INITIAL[_jamo(word[0])[0]] == "" else ""]
    for ch in word:
        ini, _, fin = _jamo(ch)
        out.append(_INITIAL[ini] + _FINAL[fin])
    return _collapse("".join(out))


def _english_classes(word: str) -> str:
    out = []
    i, n = 0, len(word)
    while i < n:
        rule = next(((pat, cls) for pat, cls in _EN_RULES if word.startswith(pat, i)), None)
        if rule is not None:
            out.append(rule[1])
            i += len(rule[0])
            continue
        ch = word[i]
        nxt = word[i + 1] if i + 1 < n else ""
        if ch == "r":
            out.append("L" if nxt in _VOWELS else "")  # 서버, 에러: an r not before a vowel is not written
        elif ch == "c":
            out.append("S" if nxt in "eiy" and nxt else "K")
        elif ch == "n" and nxt == "g" and (i + 2 >= n or word[i + 2] not in _VOWELS):
            out.append("N" if i + 2 >= n else "NK")  # 킹 king; 잉글리시 English
            i += 2
            continue
        else:
            out.append(_EN_SINGLE.get(ch, ""))
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=65536)
def english_key(word: str) -> str:
    """The consonant-class key of a lower-case English word ('' for anything else)."""
    if not _EN_WORD.match(word):
        return ""
    onset = "_" if word[0] in "aeiouyhw" else ""
    return onset + _collapse(_english_classes(re.sub(r"([b-df-hj-np-tv-z])\1", r"\1", word)))


# the English vowel letters each Hangul vowel transcribes (jamo order; ㅓ is every unstressed vowel, ㅡ none)
_VOWEL_SPELLINGS = ("aou", "ae", "iy", "iy", "aeiou", "ea", "iye", "iye", "oa", "uoa", "uw", "uow", "iyo", "uo",
                    "uow", "uw", "uw", "uey", "", "ui", "iey")


# a vowel and a bare 이 after it: 에이 is the a of name, 아이 the i of file, 오이 the oi of point
_DIPHTHONGS = {_VOWEL_SPELLINGS[5]: "a", _VOWEL_SPELLINGS[1]: "a", _VOWEL_SPELLINGS[0]: "iy", _VOWEL_SPELLINGS[8]: "o"}


def _hangul_vowel_seq(word: str) -> list[str]:
    """The spoken vowels as the English letters each may stand for; a bare vowel syllable after an open one joins
    it as a diphthong (테이 is the a of name, 아이 the i of file)."""
    out: list[str] = []
    open_before = False
    for ch in word:
        ini, vow, fin = _jamo(ch)
        spell = _VOWEL_SPELLINGS[vow]
        if spell and ini == 11 and open_before and vow == 20:
            out[-1] = _DIPHTHONGS.get(out[-1], out[-1])
        elif spell:
            out.append(spell)
        open_before = bool(spell) and fin == 0
    return out


def _english_vowel_seq(word: str) -> list[str]:
    """Vowel groups, each with an r that follows it (er, ir and ur are the 어 of 서버 and 버전)."""
    groups = re.findall(r"[aeiouy]+r?", word)
    if len(groups) > 1 and re.search(r"[^aeiouy]e$", word):
        groups.pop()  # a silent final e
    return groups


def _vowel_cost(spellings: str, group: str) -> float:
    """0 for a vowel Hangul writes this way, a quarter for a loose fit (the schwa ㅓ, ㅣ for an e), 1 for none."""
    schwa = spellings == _VOWEL_SPELLINGS[4]
    if schwa and re.fullmatch(r"[eiu]r", group):
        return 0.0
    vowels = group.rstrip("r")
    letter = next((ch for ch in (vowels[0], vowels[-1]) if ch in spellings), "")
    if not letter:
        return 1.0
    loose = schwa and letter not in "ou" or spellings == _VOWEL_SPELLINGS[20] and letter == "e"
    return 0.25 if loose else 0.0


def likeness(hangul: str, english: str) -> float:
    """How well the Hangul word's vowels transcribe the English word's, 0..1 (the consonants are the key's job):
    the vowels aligned in order, an unstressed English vowel that Hangul writes as 으 or not at all costing three
    quarters, a vowel on one side with no partner a whole one (서비스 is service, not jobs; 레이블 is label)."""
    ko, en = _hangul_vowel_seq(hangul), _english_vowel_seq(english)
    if not ko or not en:
        return 0.0
    # cost[i][j]: the first i Hangul vowels against the first j English vowel groups
    cost = [[0.0] * (len(en) + 1) for _ in range(len(ko) + 1)]
    for i in range(len(ko) + 1):
        for j in range(len(en) + 1):
            if i == j == 0:
                continue
            options = []
            if i and j:
                options.append(cost[i - 1][j - 1] + _vowel_cost(ko[i - 1], en[j - 1]))
            if i:
                options.append(cost[i - 1][j] + 1.0)
            if j:
                options.append(cost[i][j - 1] + 0.75)
            cost[i][j] = min(options)
    return 1.0 - cost[len(ko)][len(en)] / max(len(ko), len(en))


@functools.lru_cache(maxsize=1)
def _sino_syllables() -> frozenset[str]:
    """Every Hangul syllable that reads a common Han character (U+4E00–U+9FFF in the ``hanja`` package's
    table). A word made only of them may be Sino-Korean (관리자 管理者); loanwords almost always hold a syllable
    no Han character reads (디, 플, 트, 컨)."""
    from hanja.table import hanja_table

    return frozenset(r for ch, r in hanja_table.items() if "\u4e00" <= ch <= "\u9fff" and len(r) == 1)


def may_be_sino_korean(word: str) -> bool:
    syllables = _sino_syllables()
    return bool(word) and all(ch in syllables for ch in word)


def may_be_loanword(word: str) -> bool:
    """A Hangul word worth keying: two syllables or more, not a verb's dictionary form, not all Sino-Korean."""
    return (len(word) >= 2 and not word.endswith("다") and len(hangul_key(word).lstrip("_")) >= MIN_KEY
            and not may_be_sino_korean(word))


MIN_LIKENESS = 0.6  # a pair whose vowels are this far apart shares its consonants by chance


def best_spellings(word: str, candidates: Iterable[str], floor: float, english_first: bool = False) -> list[str]:
    """The candidates (filed under ``word``'s key, most used first) whose vowels fit ``word`` best, at least
    ``floor``: the best one, and another only when it fits as well (롤백: rollback, loopback). ``english_first``:
    ``word`` is English and the candidates Hangul."""
    scored = [(likeness(word, c) if not english_first else likeness(c, word), c) for c in candidates]
    best = max((s for s, _ in scored), default=0.0)
    return [c for s, c in scored if s == best][:2] if best >= floor else []
