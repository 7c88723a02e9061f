"""The cases hanrag exists for, over a small corpus written for them (tests/data/cross_script):
a Korean query finds the Hanja passage through readings, absent terms match through their equivalents,
English translations never carry tagged senses, and --explain says how every token matched."""

from __future__ import annotations

import shutil

import pytest

import hanrag
from hanrag.config import Config
from hanrag.search.xling import _OFFENSIVE

DATA = __import__("pathlib").Path(__file__).parent / "data" / "cross_script"


@pytest.fixture(scope="module")
def idx(tmp_path_factory):
    root = tmp_path_factory.mktemp("xs")
    corpus = root / "corpus"
    shutil.copytree(DATA, corpus)
    hanrag.build(corpus, root / "index", Config())
    return hanrag.open(root / "index", Config())


def _top(idx, query: str):
    res = idx.search_result(query, top_k=5, explain=True)
    return res, res.hits[0]


def test_korean_readings_find_the_hanja_passage(idx):
    res, top = _top(idx, "갑목 인월 용신")
    assert top.chunk.path.endswith("saju_hanja.md")
    assert res.plan.rule != "weak-lexical" and res.plan.lexical_evidence > 0.5  # readings are lexical evidence
    via = dict(top.explanation.matched_via)
    assert via.get("갑목") == "reading" and via.get("용신") == "reading"  # the chunk's 甲木 / 用神 read in Hangul


def test_absent_korean_terms_match_through_their_equivalents_in_full(idx):
    res, top = _top(idx, "쿠버네티스 배포 롤백")
    assert top.chunk.path.endswith("k8s_rollback.md")
    via = dict(res.plan.expansion_via)
    assert via["kubernet"] == "lexicon:쿠버네티스 (absent)"  # 쿠버네티스 occurs in no chunk (kubernet: stemmed)
    assert dict(res.plan.expansions)["kubernet"] == pytest.approx(1.0)
    how = dict(top.explanation.matched_via)
    assert how["kubernet"] == "lexicon:쿠버네티스"


def test_english_question_never_expands_to_slurs(idx):
    res, top = _top(idx, "who invented the Korean alphabet")
    expansions = {t for t, _ in res.plan.expansions}
    assert not expansions & {"棒子", "思密达", "杜撰", "台"}
    assert all(not _OFFENSIVE.search(via) for _, via in res.plan.expansion_via)
    assert top.chunk.path.endswith("hangul_ko.md")  # reached through the reading of 韩国 (한국)
    assert dict(top.explanation.matched_via)["한국"] == "translation:korean (reading)"


def test_explain_names_how_each_token_matched(idx):
    _, top = _top(idx, "배포 캐시 정책")
    how = dict(top.explanation.matched_via)
    assert top.chunk.path.endswith("cache_policy.md")
    assert how["배포"] == "as written" and how["캐시"] == "as written"
