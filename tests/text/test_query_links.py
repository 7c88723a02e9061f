"""The query's half of corpus links (hanrag.text.query.link_expansions): which English a Korean word reaches."""

from __future__ import annotations

import pytest

from hanrag.config import Config
from hanrag.text import get_analyzer
from hanrag.text.loanword import english_key
from hanrag.text.query import _cut_loanwords, link_expansions


@pytest.fixture(scope="module")
def analyzer():
    return get_analyzer(Config())


def _keys(*words: str) -> dict[str, dict[str, list[str]]]:
    english: dict[str, list[str]] = {}
    for w in words:
        english.setdefault(english_key(w), []).append(w)
    return {"english": english, "korean": {}}


def _links(analyzer, query: str, *corpus_words: str) -> dict[str, tuple[float, str]]:
    tokens = analyzer.analyze(query, "ko").tokens
    return link_expansions(query, tokens, analyzer, _keys(*corpus_words), 1.0, ["loanword"], {}, lambda t: True)


def test_a_loanword_kiwi_cuts_in_two_links_whole(analyzer) -> None:
    # Kiwi reads 커스텀 as 커스 + 텀 and 클린업 as 클린 + 업; only the whole word spells custom and cleanup, and
    # 커스 alone would reach coarse
    assert analyzer.analyze("커스텀 훅", "ko").tokens[:2] == ("커스", "텀")
    links = _links(analyzer, "커스텀 훅 만들기", "custom", "coarse", "hook")
    assert links["custom"] == (1.0, "link:커스텀 (loanword)")
    assert "coars" not in links and "coarse" not in links
    assert "cleanup" in _links(analyzer, "이펙트 클린업 함수", "cleanup", "effect")


def test_pieces_of_two_words_are_not_one_word() -> None:
    assert _cut_loanwords("이펙트 클린업", ["이펙트", "클린", "업"]) == [("클린업", ("클린", "업"))]
    assert _cut_loanwords("서버 로그", ["서버", "로그"]) == []


def test_a_word_kiwi_keeps_whole_links_as_before(analyzer) -> None:
    links = _links(analyzer, "오토베큠 설정", "autovacuum", "setting")
    assert links["autovacuum"][1] == "link:오토베큠 (loanword)"


def test_a_compound_of_a_sino_korean_word_is_not_a_cut_loanword(analyzer) -> None:
    # 임계값 (threshold) is 임계 臨界 + 값: its own channels read it, not a loanword key (imagefeature)
    links = _links(analyzer, "소프트 축출 임계값", "imagefeature", "soft")
    assert not any(via.startswith("link:임계값") for _, via in links.values())
