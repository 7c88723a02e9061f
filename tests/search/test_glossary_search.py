"""The corpus glossary at work: a Korean term reaches English text that only uses its English name, and back,
when the query's own language has weak lexical evidence (tests/data/glossary: a Korean page glossing
스테이트풀셋(StatefulSet) and others, an English StatefulSet page).

Corpus links (loanwords by sound) reach the same words, so these tests run without them
(``search.link_weight = 0``) to see what the glossary does; the last test sees both at work."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

import hanrag
from hanrag.config import Config

DATA = Path(__file__).parent.parent / "data" / "glossary"


def no_links() -> Config:
    cfg = Config()
    cfg.search.link_weight = 0.0
    return cfg


@pytest.fixture(scope="module")
def idx(tmp_path_factory):
    root = tmp_path_factory.mktemp("gl")
    shutil.copytree(DATA, root / "corpus")
    hanrag.build(root / "corpus", root / "index", Config())
    return hanrag.open(root / "index", no_links())


def _hit(res, name: str):
    return next((h for h in res.hits if h.chunk.path.endswith(name)), None)


def test_the_build_keeps_the_corpus_glossary_in_the_manifest(idx):
    g = idx.backend.manifest()["glossary"]
    assert g["스테이트풀셋"] == ["StatefulSet"] and g["활성 프로브"] == ["liveness probe"]
    assert idx.stats()["glossary"] == g  # GET /stats shows it


def test_a_korean_term_matches_english_text_through_the_gloss(idx):
    res = idx.search_result("스테이트풀셋 파드 순서", top_k=5, explain=True)
    via = dict(res.plan.expansion_via)
    assert via["statefulset"] == "glossary:스테이트풀셋"
    # the gloss weighs what the glossed word weighs: the English page matches as if it wrote 스테이트풀셋
    assert dict(res.plan.expansions)["statefulset"] == pytest.approx(Config().search.glossary_weight)
    hit = _hit(res, "en_statefulset.md")
    assert hit is not None and hit.explanation.bm25_raw > 0
    assert dict(hit.explanation.matched_via)["statefulset"] == "glossary:스테이트풀셋"


def test_an_english_term_matches_korean_text_through_the_gloss(idx):
    res = idx.search_result("liveness probe restarts", top_k=5, explain=True)
    hit = _hit(res, "ko_workloads.md")
    assert hit is not None
    how = dict(hit.explanation.matched_via)
    toks = idx.analyzer.analyze("활성 프로브", "ko").tokens  # Kiwi's tokens of the glossed term
    assert toks and {how.get(t) for t in toks} == {"glossary:liveness probe"}


def test_a_query_its_own_language_answers_is_not_glossed(idx):
    # the Korean page matches every word: with xling_compete = "weak" no other language competes, so the English
    # names stay out; by default ("always") they are added, and the Korean page that answers still comes first
    query = "레플리카셋 파드 레플리카 실행 보장"
    cfg = Config()
    cfg.search.xling_compete = "weak"
    weak = hanrag.open(idx.index_dir, cfg).search_result(query, top_k=3, explain=True)
    assert not any(via.startswith("glossary:") for _, via in weak.plan.expansion_via)
    assert weak.hits[0].chunk.path.endswith("ko_workloads.md")
    res = idx.search_result(query, top_k=3, explain=True)
    assert any(via.startswith("glossary:") for _, via in res.plan.expansion_via)
    assert res.hits[0].chunk.path.endswith("ko_workloads.md")


def test_the_glossary_can_be_switched_off(idx):
    cfg = no_links()
    cfg.search.glossary_weight = 0.0
    off = hanrag.open(idx.index_dir, cfg)
    res = off.search_result("스테이트풀셋 파드 순서", top_k=5, explain=True)
    assert not any(via.startswith("glossary:") for _, via in res.plan.expansion_via)
    hit = _hit(res, "en_statefulset.md")
    assert hit is None or "statefulset" not in dict(hit.explanation.matched_via)  # 파드 -> pod (IT lexicon) only


def test_a_wrong_pair_can_be_excluded_by_either_side(idx):
    for name in ("스테이트풀셋", "statefulset"):
        cfg = no_links()
        cfg.search.glossary_exclude = [name]
        res = hanrag.open(idx.index_dir, cfg).search_result("스테이트풀셋 파드 순서", top_k=5, explain=True)
        assert "glossary:스테이트풀셋" not in dict(res.plan.expansion_via).values()
    assert "스테이트풀셋" not in (hanrag.open(idx.index_dir, cfg).searcher.glossary.entries)



def test_without_the_glossary_a_loanword_link_still_reaches_the_english_page(idx):
    cfg = copy.deepcopy(Config())
    cfg.search.glossary_weight = 0.0
    res = hanrag.open(idx.index_dir, cfg).search_result("스테이트풀셋 파드 순서", top_k=5, explain=True)
    hit = _hit(res, "en_statefulset.md")
    assert hit is not None
    assert dict(hit.explanation.matched_via)["statefulset"] == "link:스테이트풀셋 (loanword)"
