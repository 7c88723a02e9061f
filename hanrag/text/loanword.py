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
import itertools
import re
from collections.abc import Iterable

_FIRST = 0xAC00
_LAST = 0xD7A3
# initial consonants in jamo order -> sound ('' = silent: ㅇ, and ㅎ which English h rarely keeps). A lower-case
# letter is a sound Korean loanword spelling keeps apart within its class (ㄷ is d and ㅌ t, ㅈ is j or z and ㅊ ch),
# an upper-case one the class alone; the key is the classes (:data:`_CLASS`), the letters only break ties
_INITIAL = ("g", "k", "N", "d", "t", "L", "M", "b", "p", "s", "s", "", "j", "j", "c", "k", "t", "p", "")
# final consonants (index 0 = none) -> class; a final ㅅ in a loanword is a t (셋 set, 로봇 robot) and a final ㅇ
# is ng, one nasal like n
_FINAL = ("", "K", "K", "K", "N", "N", "N", "T", "L", "LK", "LM", "LP", "LS", "LT", "LP", "L", "M", "P", "PS",
          "T", "T", "N", "T", "T", "K", "T", "P", "")

# English spelling -> sounds as above; applied left to right, longest pattern first at each position
_EN_RULES = (
    ("tion", "SN"), ("sion", "SN"), ("ture", "c"), ("sch", "Sk"), ("tch", "c"), ("dge", "j"), ("ph", "p"),
    ("th", "S"), ("sh", "S"), ("ch", "c"), ("ck", "k"), ("qu", "k"), ("gh", ""), ("wh", ""), ("x", "kS"),
)
_EN_SINGLE = {"b": "b", "p": "p", "f": "p", "v": "b", "d": "d", "t": "t", "k": "k", "q": "k", "g": "g",
              "s": "S", "z": "j", "j": "j", "l": "L", "m": "M", "n": "N"}
_SOFT_G_END = re.compile(r"(e|es|y|ies)$")  # a final ge or gy is a j: page 페이지, technology 테크놀로지
_CLASS = str.maketrans("gkdtbpsjc", "KKTTPPSSS")
_VOWELS = frozenset("aeiouy")
_EN_WORD = re.compile(r"^[a-z]+$")
MIN_KEY = 2


def _jamo(syllable: str) -> tuple[int, int, int]:
    code = ord(syllable) - _FIRST
    return code // 588, (code % 588) // 28, code % 28


def _collapse(sounds: str) -> tuple[str, str]:
    """(key, sounds): one class for a run of the same class (ll, 롤 + 백, ss), and the run's sound where all its
    letters agree (else its class), so the two strings align."""
    key, merged = [], []
    for cls, run in itertools.groupby(sounds, key=lambda ch: ch.translate(_CLASS)):
        letters = {ch for ch in run if ch.islower()}
        key.append(cls)
        merged.append(letters.pop() if len(letters) == 1 else cls)
    return "".join(key), "".join(merged)


@functools.lru_cache(maxsize=65536)
def _hangul_sounds(word: str) -> tuple[str, str]:
    if not word or not all(_FIRST <= ord(ch) <= _LAST for ch in word):
        return "", ""
    out = ["_" if _INITIAL[_jamo(word[0])[0]] == "" else ""]
    for ch in word:
        ini, _, fin = _jamo(ch)
        out.append(_INITIAL[ini] + _FINAL[fin])
    return _collapse("".join(out))


def hangul_key(word: str) -> str:
    """The consonant-class key of a Hangul word ('' when it holds anything but Hangul syllables); ``_`` first when it
    starts with a vowel or ㅎ, as an English word that starts with a vowel, h, w or y does (도메인 is not admin)."""
    return _hangul_sounds(word)[0]


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
            # 서버, 에러: an r not before a vowel is not written, nor one before a silent final e (스토어 store)
            out.append("L" if nxt in _VOWELS and word[i + 1:] != "e" else "")
        elif ch == "c":
            out.append("S" if nxt in "eiy" and nxt else "k")
        elif ch == "g" and _SOFT_G_END.match(word, i + 1):
            out.append("j")
        elif ch == "s" and not (i and word[i - 1] in _VOWELS and nxt in _VOWELS):
            out.append("s")  # an s between vowels may be a z (유저 user), elsewhere it is ㅅ (패스 pass, not 페이지)
        elif ch == "n" and nxt == "g" and (i + 2 >= n or word[i + 2] not in _VOWELS):
            out.append("N" if i + 2 >= n else "Ng")  # 킹 king; 잉글리시 English
            i += 2
            continue
        else:
            out.append(_EN_SINGLE.get(ch, ""))
        i += 1
    return "".join(out)


@functools.lru_cache(maxsize=65536)
def _english_sounds(word: str) -> tuple[str, str]:
    if not _EN_WORD.match(word):
        return "", ""
    onset = "_" if word[0] in "aeiouyhw" else ""
    key, sounds = _collapse(_english_classes(re.sub(r"([b-df-hj-np-tv-z])\1", r"\1", word)))
    return onset + key, onset + sounds


def english_key(word: str) -> str:
    """The consonant-class key of a lower-case English word ('' for anything else)."""
    return _english_sounds(word)[0]


def voicing_misses(hangul: str, english: str) -> int:
    """How many aligned consonants of two words with one key differ within their class: 코드 is code, not good (ㅋ
    is k, ㄱ g); 노드 is node, not note. A final consonant (받침) is only its class and never differs."""
    ko, en = _hangul_sounds(hangul)[1], _english_sounds(english)[1]
    return sum(a != b for a, b in zip(ko, en, strict=False) if a.islower() and b.islower())


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
        elif spell and ini == 11 and open_before and vow == 13 and out[-1] == _VOWEL_SPELLINGS[0]:
            out[-1] = "ou"  # 아우 is the ou of route and the ow of down (라우트, 다운로드)
        elif spell:
            out.append(spell)
        open_before = bool(spell) and fin == 0
    return out


def _english_vowel_seq(word: str) -> list[str]:
    """Vowel groups, each with an r that follows it (er, ir and ur are the 어 of 서버 and 버전)."""
    groups = re.findall(r"[aeiouy]+r?", word)
    if len(groups) > 1 and re.search(r"[^aeiouy]e$", word) and not re.search(r"[aeiouy]re$", word):
        groups.pop()  # a silent final e; after a vowel and r it is the 어 of 스토어 store and 코어 core
    return groups


def _vowel_cost(spellings: str, group: str) -> float:
    """0 for a vowel Hangul writes this way, a quarter for a loose fit, 1 for none. Loose: the schwa ㅓ; ㅣ for an e;
    ㅗ for an a as in 콜 call and ㅔ for one as in 케어 care (세트 is set, not state); an er, ir or ur as anything but
    ㅓ; a vowel pair's second letter (read is not 로드; oo is a u, as in 루트 root and 훅 hook)."""
    schwa = spellings == _VOWEL_SPELLINGS[4]
    if schwa and re.fullmatch(r"[eiu]r", group):
        return 0.0
    vowels = group.rstrip("r")
    if vowels == "oo":
        vowels = "uo"
    letter = next((ch for ch in (vowels[0], vowels[-1]) if ch in spellings), "")
    if not letter:
        return 1.0
    loose = (schwa and letter not in "ou" or spellings == _VOWEL_SPELLINGS[20] and letter == "e"
             or spellings in (_VOWEL_SPELLINGS[5], _VOWEL_SPELLINGS[8]) and letter == "a" or letter != vowels[0]
             or not schwa and re.fullmatch(r"[eiu]r", group) is not None)
    return 0.25 if loose else 0.0


def likeness(hangul: str, english: str) -> float:
    """How well the Hangul word's vowels transcribe the English word's, 0..1 (the consonants are the key's job):
    the vowels aligned in order, an unstressed English vowel that Hangul writes as 으 or not at all costing three
    quarters, a vowel on one side with no partner a whole one (서비스 is service, not jobs; 레이블 is label)."""
    ko, en = _hangul_vowel_seq(hangul), _english_vowel_seq(english)
    if not ko or not en:
        return 0.0
    if len(ko) > 1 and _EPENTHETIC_I.search(hangul):
        # 캐시 cache, 페이지 page: Korean ends a final sh, ch or j with 이; the word may also mean its 이 (택시 taxi)
        return max(_aligned_likeness(ko, en), _aligned_likeness(ko[:-1], en))
    return _aligned_likeness(ko, en)


# a last syllable 시, 지 or 치 (and their tense forms) after another
_EPENTHETIC_I = re.compile("[시씨지찌치]$")


def _aligned_likeness(ko: list[str], en: list[str]) -> float:
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
# a key of two classes is shared by many words (코드 code, card, good, get): its vowels must fit closely (chosen by
# reading the tuning sets' links, not fitted: 스토어 store .88 and 키워드 keyword .88 pass, 읽기 arraylike .67 not)
MIN_LIKENESS_SHORT = 0.85


def min_likeness(key: str) -> float:
    """The least likeness for a link under ``key``."""
    return MIN_LIKENESS if len(key.lstrip("_")) > MIN_KEY else MIN_LIKENESS_SHORT


def best_spellings(word: str, candidates: Iterable[str], floor: float, english_first: bool = False) -> list[str]:
    """The candidates (filed under ``word``'s key, most used first) whose vowels fit ``word`` best, at least
    ``floor`` (and, above :data:`MIN_LIKENESS`, whose consonants' voicing all agree): the best one, and another only
    when it fits as well (케이스: case, cause). ``english_first``:
    ``word`` is English and the candidates Hangul."""
    pairs = [(word, c) if not english_first else (c, word) for c in candidates]
    # the vowels first, then the consonants' voicing among words that fit as well
    scored = [(likeness(*p), -voicing_misses(*p), c) for p, c in zip(pairs, candidates, strict=True)]
    if floor > MIN_LIKENESS:
        scored = [x for x in scored if x[1] == 0]  # a short key's word must keep every sound (value is not 플레이어)
    best = max(((s, v) for s, v, _ in scored), default=(0.0, 0))
    return [c for s, v, c in scored if (s, v) == best][:2] if best[0] >= floor else []
