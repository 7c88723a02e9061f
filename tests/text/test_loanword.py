"""Sound keys of loanwords (hanrag.text.loanword): a Hangul transliteration and its English word share a key."""

from __future__ import annotations

import pytest

from hanrag.text.loanword import best_spellings, english_key, hangul_key, may_be_loanword, may_be_sino_korean

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
    assert not may_be_loanword("파드")  # two consonant classes: too short a key to mean anything


def test_the_vowels_choose_among_one_key() -> None:
    # service, jobs and sparse all key as S-P-S; 서비스 has the vowels of service
    assert best_spellings("서비스", ["jobs", "service", "sparse"], 0.6) == ["service"]
    assert best_spellings("컨테이너", ["contain", "container"], 0.6) == ["container"]
    assert best_spellings("디바이스", ["types", "device"], 0.6) == ["device"]
    assert best_spellings("deployment", ["디플로이먼트"], 0.6, english_first=True) == ["디플로이먼트"]
    assert best_spellings("오토베큠", ["outpacing"], 0.6) == []
