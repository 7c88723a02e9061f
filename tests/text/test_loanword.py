"""Sound keys of loanwords (hanrag.text.loanword): a Hangul transliteration and its English word share a key."""

from __future__ import annotations

import pytest

from hanrag.text.loanword import (
    best_spellings,
    english_key,
    hangul_key,
    may_be_loanword,
    may_be_sino_korean,
    min_likeness,
    voicing_misses,
)

# Korean technical loanwords as Korean documentation writes them (not taken from any eval set's queries)
PAIRS = [
    ("디플로이먼트", "deployment"), ("롤백", "rollback"), ("레플리카", "replica"), ("오토베큠", "autovacuum"),
    ("딕셔너리", "dictionary"), ("데코레이터", "decorator"), ("쿠버네티스", "kubernetes"),
    ("컨테이너", "container"), ("인그레스", "ingress"), ("네임스페이스", "namespace"), ("엔드포인트", "endpoint"),
    ("볼륨", "volume"), ("오토스케일링", "autoscaling"), ("시크릿", "secret"), ("프로브", "probe"),
    ("서비스", "service"), ("클러스터", "cluster"), ("셀렉터", "selector"), ("컨트롤러", "controller"),
    ("퍼시스턴트", "persistent"), ("데몬셋", "daemonset"), ("스테이트풀셋", "statefulset"), ("인덱스", "index"),
    ("트랜잭션", "transaction"), ("체크포인트", "checkpoint"), ("레플리케이션", "replication"),
    ("파티션", "partition"), ("버전", "version"), ("프록시", "proxy"), ("토큰", "token"),
    ("마이그레이션", "migration"), ("스키마", "schema"), ("템플릿", "template"), ("플러그인", "plugin"),
    ("매니페스트", "manifest"), ("어노테이션", "annotation"), ("익스텐션", "extension"), ("데이터베이스", "database"),
    # keys of two classes
    ("서버", "server"), ("노드", "node"), ("코드", "code"), ("버그", "bug"), ("태그", "tag"), ("로그", "log"),
    ("파드", "pod"), ("포트", "port"), ("스토어", "store"), ("메모리", "memory"), ("페이지", "page"),
]


@pytest.mark.parametrize(("ko", "en"), PAIRS)
def test_a_loanword_and_its_english_share_a_key(ko: str, en: str) -> None:
    assert may_be_loanword(ko)
    assert hangul_key(ko) == english_key(en), (ko, en)


def test_a_word_that_starts_with_a_vowel_is_not_one_that_does_not() -> None:
    assert hangul_key("도메인") == english_key("domain")
    assert hangul_key("도메인") != english_key("admin")
    assert english_key("autovacuum").startswith("_") and hangul_key("오토베큠").startswith("_")


def test_sino_korean_and_native_verbs_are_not_keyed_as_loanwords() -> None:
    for word in ("관리자", "변수", "함수", "설정", "방법", "사용자"):
        assert may_be_sino_korean(word) and not may_be_loanword(word), word
    assert not may_be_loanword("바꾸다")  # a verb's dictionary form
    assert not may_be_loanword("데이터")  # one consonant class: too short a key to mean anything


def test_the_vowels_choose_among_one_key() -> None:
    # service, jobs and sparse all key as S-P-S; 서비스 has the vowels of service
    assert best_spellings("서비스", ["jobs", "service", "sparse"], 0.6) == ["service"]
    assert best_spellings("컨테이너", ["contain", "container"], 0.6) == ["container"]
    assert best_spellings("디바이스", ["types", "device"], 0.6) == ["device"]
    assert best_spellings("deployment", ["디플로이먼트"], 0.6, english_first=True) == ["디플로이먼트"]
    assert best_spellings("오토베큠", ["outpacing"], 0.6) == []


def test_a_short_key_needs_close_vowels_and_the_same_voicing() -> None:
    # code, card, good and get all key as K-T; only code is spelled 코드 (ㅋ is k, ㄱ g; ㅗ is o, not ar)
    assert best_spellings("코드", ["good", "card", "get", "code"], min_likeness(hangul_key("코드"))) == ["code"]
    assert best_spellings("노드", ["note", "need", "node"], min_likeness(hangul_key("노드"))) == ["node"]
    assert best_spellings("파드", ["port", "part", "pod"], min_likeness(hangul_key("파드"))) == ["pod"]
    assert best_spellings("로드", ["read", "load"], min_likeness(hangul_key("로드"))) == ["load"]
    # value keys like 플레이어 and its vowels fit, but v is ㅂ, not ㅍ: a short key keeps every sound
    assert voicing_misses("플레이어", "value") == 1
    assert best_spellings("value", ["플레이어"], min_likeness(english_key("value")), english_first=True) == []
    # a long key keeps the looser floor, and two words that fit alike share the link
    assert best_spellings("케이스", ["case", "cause"], min_likeness(hangul_key("케이스"))) == ["case", "cause"]
    assert best_spellings("롤백", ["rollback", "loopback"], min_likeness(hangul_key("롤백"))) == ["rollback"]


def test_korean_spelling_habits() -> None:
    # an epenthetic 이 after a final sibilant, a final soft g, a silent r before a final e, oo as u, 아우 as ou
    assert best_spellings("페이지", ["pass", "page"], 0.85) == ["page"]
    assert best_spellings("스토어", ["started", "store"], 0.85) == ["store"]
    assert best_spellings("루트", ["rate", "root"], 0.85) == ["root"]
    assert best_spellings("마우스", ["mature", "major", "mouse"], 0.85) == ["mouse"]
    assert best_spellings("사이드", ["third", "side"], 0.85) == ["side"]
