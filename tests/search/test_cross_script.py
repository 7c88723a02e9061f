"""The cases hanrag exists for, over a small corpus written for them (tests/data/cross_script):
a Korean query finds the Hanja passage through readings, absent terms match through their equivalents,
English translations never carry tagged senses, and --explain says how every token matched."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import hanrag
from hanrag.config import Config
from hanrag.text.cedict import _OFFENSIVE

DATA = __import__("pathlib").Path(__file__).parent.parent / "data" / "cross_script"


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
    assert res.plan.rule == "translated"  # weak in English, strong through the translations
    assert dict(top.explanation.matched_via)["한국"] == "translation:korean (reading)"


def test_explain_names_how_each_token_matched(idx):
    _, top = _top(idx, "배포 캐시 정책")
    how = dict(top.explanation.matched_via)
    assert top.chunk.path.endswith("cache_policy.md")
    assert how["배포"] == "as written" and how["캐시"] == "as written"


def test_manifest_carries_languages_and_the_dense_background(idx):
    m = idx.backend.manifest()
    assert m["langs"] == {"en": 3, "ko": 3, "zh": 1}
    assert len(m["dense_mean"]) == idx.embedder.dim
    by_lang = {g: np.asarray(v) for g, v in m["dense_mean_by_lang"].items()}
    assert set(by_lang) == {"en", "ko", "zh"}
    # the overall mean is the chunk-weighted mean of the languages' means
    overall = sum(m["langs"][g] * by_lang[g] for g in by_lang) / sum(m["langs"].values())
    np.testing.assert_allclose(overall, m["dense_mean"], atol=2e-6)


@pytest.mark.parametrize("background", ["corpus", "language"])
def test_calibrated_dense_is_measured_from_the_configured_background(idx, background):
    import copy

    from hanrag.search.searcher import Searcher

    cfg = copy.deepcopy(Config())
    cfg.search.dense_background = background
    searcher = Searcher(idx.backend, cfg, idx.embedder, idx.analyzer, idx.lexicon)
    res = searcher.run("훈민정음 창제", top_k=5, explain=True)
    qvec = np.asarray(idx.embedder.encode_queries(["훈민정음 창제"]), dtype=np.float64).reshape(-1)
    manifest = idx.backend.manifest()
    assert Config().search.fusion == "calibrated" and Config().search.dense_background == "language"
    assert len({h.chunk.lang for h in res.hits}) > 1  # the test compares backgrounds of several languages
    for h in res.hits:
        e = h.explanation
        mean = manifest["dense_mean"] if background == "corpus" else manifest["dense_mean_by_lang"][h.chunk.lang]
        bg = float(np.dot(np.asarray(mean), qvec))
        assert e.fusion == "calibrated"
        assert e.dense_norm == pytest.approx(min(1.0, max(0.0, (e.dense_raw - bg) / (1 - bg))), abs=1e-6)


def test_lint_lists_folds_by_file(tmp_path):
    from typer.testing import CliRunner

    from hanrag.cli import app

    corpus = tmp_path / "c"
    shutil.copytree(DATA, corpus)
    text = (corpus / "k8s_rollback.md").read_text(encoding="utf-8")
    (corpus / "mirror.md").write_text(text.replace("  ", " "), encoding="utf-8")
    out = CliRunner().invoke(app, ["lint", str(corpus), "--json"])
    assert out.exit_code == 0, out.output
    import json

    folds = [f for f in json.loads(out.output)["findings"] if f["code"] == "near-duplicate"]
    assert [f["path"] for f in folds] in (["mirror.md"], ["k8s_rollback.md"])
    assert "dedup_exclude" in folds[0]["message"]
