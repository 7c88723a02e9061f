"""The learned ranker (hanrag.search.ranker): boosted trees read from JSON and evaluated with numpy alone, as
LightGBM evaluates them; the bundled model; bad model files; and the stage that reorders a search's fused head."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hanrag.backends.memory import MemoryBackend
from hanrag.config import Config
from hanrag.records import Chunk
from hanrag.search.ranker import FEATURES, RankerError, _ranker_from, from_lightgbm, load_ranker
from hanrag.search.searcher import Searcher


def _lightgbm_model(zero_as_missing: bool, nan_in_training: bool):
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(1500, len(FEATURES)))
    if nan_in_training:
        X[::5, 3] = np.nan
    X[::3, 4] = 0.0
    y = (X[:, 0] + 0.5 * np.nan_to_num(X[:, 3]) - X[:, 4] + rng.normal(size=len(X)) * 0.3 > 0.3).astype(int)
    data = lgb.Dataset(X, y, group=[50] * 30, feature_name=list(FEATURES), init_score=X[:, 0] * 10.0)
    params = {"objective": "lambdarank", "num_leaves": 7, "min_data_in_leaf": 5, "verbose": -1, "seed": 1,
              "zero_as_missing": zero_as_missing, "num_threads": 1}
    model = lgb.train(params, data, num_boost_round=40)
    X[::7, 3] = np.nan  # a NaN where the trees never saw one goes as LightGBM sends it (missing type "None": as 0)
    return model, X


@pytest.mark.parametrize(("zero_as_missing", "nan_in_training"), [(False, True), (True, True), (False, False)])
def test_the_trees_score_as_lightgbm_scores_them(zero_as_missing: bool, nan_in_training: bool) -> None:
    booster, X = _lightgbm_model(zero_as_missing, nan_in_training)
    spec = json.loads(json.dumps(from_lightgbm(booster.dump_model(), FEATURES, 10.0, 50)))  # through JSON text
    model = _ranker_from(spec, "test")
    assert np.allclose(model.predict(X), booster.predict(X), rtol=0, atol=1e-9)
    assert np.allclose(model.score(X), booster.predict(X) + 10.0 * X[:, 0], rtol=0, atol=1e-9)
    contrib, base = model.contributions(X)
    assert np.allclose(base + contrib.sum(axis=1), booster.predict(X), atol=1e-9)  # every score adds up
    assert (contrib != 0).any(axis=0).sum() >= 2  # credit goes to the features the trees split on


def test_the_bundled_model_loads_and_says_how_it_was_trained() -> None:
    model = load_ranker("lambdamart")
    assert model is not None and model.features == FEATURES and model.source == "bundled:lambdamart"
    assert model.head >= 10 and model.rule_scale > 0 and len(model.roots) >= 10
    assert "korquad1_ko_chunks" in model.trained["sets"] and model.trained["commit"]
    assert load_ranker("") is None  # the rule table alone


def _write(tmp_path: Path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def _one_split(**tree) -> dict:
    base = {"feature": [6, -1, -1], "threshold": [0.5, 0.0, 0.0], "left": [1, 1, 2], "right": [2, 1, 2],
            "value": [0.0, 1.0, -1.0], "missing": [0, 0, 0], "default_left": [True, False, False]}
    return {"format": "hanrag-trees/1", "features": list(FEATURES), "rule_scale": 10.0, "head": 50,
            "trees": [{**base, **tree}]}


def test_a_bad_model_file_is_named_with_its_problem(tmp_path: Path) -> None:
    cases = {
        "absent.json": None,
        "text.json": "not json",
        "binary.json": "\udcff",
        "format.json": json.dumps({**_one_split(), "format": "xgboost"}),
        "features.json": json.dumps({**_one_split(), "features": list(FEATURES[:-1])}),
        "loop.json": json.dumps(_one_split(left=[0, 1, 2])),  # a split whose child is itself: a walk never ends
        "feature.json": json.dumps(_one_split(feature=[99, -1, -1])),
        "lengths.json": json.dumps(_one_split(value=[0.0])),
        "nan.json": json.dumps(_one_split(value=[0.0, float("nan"), 1.0])),
        "keep.json": json.dumps({**_one_split(), "keep_language_order": "yes"}),
    }
    for name, text in cases.items():
        path = str(tmp_path / name)
        if text == "\udcff":
            (tmp_path / name).write_bytes(b"\xff\xfe\x00")
        elif text is not None:
            _write(tmp_path, name, text)
        with pytest.raises(RankerError) as err:
            load_ranker(path)
        assert path in str(err.value), name
    assert FEATURES[-1] in str(pytest.raises(RankerError, load_ranker, str(tmp_path / "features.json")).value)
    good = load_ranker(_write(tmp_path, "good.json", json.dumps(_one_split())))
    assert good.head == 50 and good.keep_language_order  # a model written before the key ran that way
    plain = load_ranker(_write(tmp_path, "plain.json", json.dumps({**_one_split(), "keep_language_order": False})))
    assert not plain.keep_language_order


DOCS = [
    ("en/a", "en", "Roll back a failed deployment with kubectl rollout undo deployment."),
    ("en/b", "en", "A deployment rollout can be paused and resumed with kubectl rollout pause."),
    ("en/c", "en", "Scale a deployment with kubectl scale to change its replica count."),
    ("ko/a", "ko", "배포를 롤백하려면 kubectl rollout undo 명령을 실행한다."),
    ("ko/b", "ko", "디플로이먼트의 레플리카 수는 kubectl scale 명령으로 바꾼다."),
    ("zh/a", "zh", "甲木为阳木，象征参天大树。"),
]


@pytest.fixture(scope="module")
def parts():
    from hanrag.embed import load_embedder
    from hanrag.text import get_analyzer

    embedder = load_embedder(Config().embedder)
    analyzer = get_analyzer(Config())
    chunks = [Chunk(chunk_id=cid, doc_id=cid, text=text, start=0, end=len(text), source=cid, path=cid, lang=lang)
              for cid, lang, text in DOCS]
    tokens = analyzer.tokenize_many([c.text for c in chunks], [c.lang for c in chunks])
    vectors = np.asarray(embedder.encode_passages([c.text for c in chunks]), dtype=np.float32)
    return chunks, tokens, vectors, analyzer, embedder


def _searcher(parts, ranker: str) -> Searcher:
    chunks, tokens, vectors, analyzer, embedder = parts
    cfg = Config()
    cfg.search.ranker = ranker
    return Searcher(MemoryBackend(chunks, tokens, vectors), cfg, embedder=embedder, analyzer=analyzer)


def test_a_model_reorders_the_head_and_every_score_adds_up(parts, tmp_path: Path) -> None:
    """A one-split model that lifts every passage not in the query's language by 100 (over the rule scale, 10 on
    the fused scale): the English question's Korean and Chinese passages come first, each hit's explanation says
    what the model added, and fused plus those numbers is the hit's score."""
    spec = _one_split(value=[0.0, 100.0, 0.0])  # same_language <= .5 -> +100
    rule = _searcher(parts, "").run("roll back a deployment", top_k=6, explain=True)
    lifted = _searcher(parts, _write(tmp_path, "m.json", json.dumps(spec))).run("roll back a deployment", top_k=6,
                                                                              explain=True)
    assert rule.plan.ranker == "" and rule.plan.ranked is None
    assert all(not h.explanation.learned for h in rule.hits)
    assert lifted.plan.ranker.endswith("m.json") and lifted.plan.ranked == len(lifted.hits) == 6
    langs = [h.chunk.lang for h in lifted.hits]
    assert langs[:3] != ["en"] * 3 and set(langs[:3]) == {"ko", "zh"}, langs
    for h in lifted.hits:
        e = h.explanation
        parts_ = dict(e.learned)
        assert e.fused + sum(parts_.values()) == pytest.approx(h.score)
        assert parts_.get("same_language", 0.0) == pytest.approx(10.0 if h.chunk.lang != "en" else 0.0)
    # the rule table's order within each language stays: the model only lifted by language
    assert [h.chunk.chunk_id for h in lifted.hits if h.chunk.lang == "en"] == \
        [h.chunk.chunk_id for h in rule.hits if h.chunk.lang == "en"]


def test_the_query_language_keeps_the_rule_tables_order(parts, tmp_path: Path) -> None:
    """A model that sinks BM25's first candidate by 100 (10 on the fused scale) may not reorder the query's own
    language: the English question's English passages keep the rule table's order, the sunk score goes to the last
    of them, and the explanation says what was handed over (``language_order``), so every score still adds up."""
    spec = _one_split(feature=[FEATURES.index("bm25_rank"), -1, -1], threshold=[0.99, 0.0, 0.0],
                      value=[0.0, 0.0, -100.0])  # BM25's first (rank feature 1.0) -> -100
    query = "roll back a deployment"
    rule = _searcher(parts, "").run(query, top_k=6, explain=True)
    sunk = _searcher(parts, _write(tmp_path, "sink.json", json.dumps(spec))).run(query, top_k=6, explain=True)
    english = [h.chunk.chunk_id for h in rule.hits if h.chunk.lang == "en"]
    assert len(english) == 3 and [h.chunk.chunk_id for h in sunk.hits if h.chunk.lang == "en"] == english
    handed = {h.chunk.chunk_id: dict(h.explanation.learned).get("language_order", 0.0) for h in sunk.hits}
    assert handed[english[0]] > 9.0 and handed[english[-1]] < 0.0  # the first's sunk score went to the last
    for h in sunk.hits:
        assert h.explanation.fused + sum(dict(h.explanation.learned).values()) == pytest.approx(h.score, abs=1e-5)
    assert sunk.hits[-1].chunk.chunk_id == english[-1]  # where English sits among the others is the model's


def test_a_model_run_as_trained_reorders_the_query_language_too(parts, tmp_path: Path) -> None:
    """The same sinking model with ``keep_language_order`` false (how the bundled model runs): BM25's first English
    passage goes below the other English ones, and nothing is handed over."""
    spec = {**_one_split(feature=[FEATURES.index("bm25_rank"), -1, -1], threshold=[0.99, 0.0, 0.0],
                         value=[0.0, 0.0, -100.0]), "keep_language_order": False}
    query = "roll back a deployment"
    rule = _searcher(parts, "").run(query, top_k=6, explain=True)
    sunk = _searcher(parts, _write(tmp_path, "sink.json", json.dumps(spec))).run(query, top_k=6, explain=True)
    english = [h.chunk.chunk_id for h in rule.hits if h.chunk.lang == "en"]
    assert [h.chunk.chunk_id for h in sunk.hits if h.chunk.lang == "en"] == [*english[1:], english[0]]
    assert sunk.hits[-1].chunk.chunk_id == english[0]
    for h in sunk.hits:
        assert "language_order" not in dict(h.explanation.learned)
        assert h.explanation.fused + sum(dict(h.explanation.learned).values()) == pytest.approx(h.score, abs=1e-5)


def test_the_bundled_model_says_how_it_is_run() -> None:
    """The bundled trees run as the protocol chose them (``trained.run``: the row whose held-out mean it preferred)."""
    model = load_ranker("lambdamart")
    run = model.trained["run"]
    assert model.keep_language_order == (run == "lambdarank-residual, language order kept")
    means = model.trained["mean_held_out_ndcg@10"]
    assert means[run] >= means["rule table"]


def test_the_head_features_are_those_the_model_was_trained_on(parts) -> None:
    """At search time the ranker computes the features of the head alone; each row is the row the whole pool gives
    (what benchmarks/fit.py --records stores for training)."""
    s = _searcher(parts, "lambdamart")
    for query in ("roll back a deployment", "디플로이먼트 레플리카", "甲木"):
        cand, fused = s.fused_candidates(query, 10, "hybrid")
        rows = [int(i) for i in fused.order()[:3]]
        assert np.array_equal(s.ranking_features(cand, fused, rows), s.ranking_features(cand, fused)[rows])


def test_the_bundled_ranker_runs_in_every_mode(parts) -> None:
    s = _searcher(parts, "lambdamart")
    hybrid = s.run("배포 롤백 방법", top_k=4, explain=True)
    assert hybrid.plan.ranker == "bundled:lambdamart" and hybrid.hits
    assert hybrid.hits[0].explanation.learned[0][0] == "base"
    for mode in ("bm25", "dense"):  # one retriever: nothing for the model to weigh
        res = s.run("배포 롤백 방법", top_k=4, mode=mode, explain=True)
        assert res.plan.ranker == "" and all(not h.explanation.learned for h in res.hits)


def test_a_search_that_explains_nothing_ranks_the_same(parts) -> None:
    """Without --explain the stage scores the head without the per-feature attribution: the same order and scores."""
    s = _searcher(parts, "lambdamart")
    for query in ("roll back a deployment", "디플로이먼트 레플리카 수", "甲木"):
        plain, explained = s.run(query, top_k=6), s.run(query, top_k=6, explain=True)
        assert [h.chunk.chunk_id for h in plain.hits] == [h.chunk.chunk_id for h in explained.hits]
        assert [h.score for h in plain.hits] == pytest.approx([h.score for h in explained.hits], abs=1e-12)
        assert plain.plan == explained.plan and plain.plan.ranker == "bundled:lambdamart"
