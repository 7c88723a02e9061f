"""The fitting protocol's judgments: a tuning set's own joined by its pooled ones (benchmarks/evalsets.py), and
records re-judged with the judgments in force (benchmarks/fit_ranker.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from hanrag.eval import EvalDoc, EvalQuery, EvalSet

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import evalsets
import fit_ranker


@pytest.fixture()
def tuning_set(tmp_path, monkeypatch) -> EvalSet:
    monkeypatch.setattr(evalsets, "POOL_DIR", tmp_path)
    (tmp_path / "tune_x.tsv").write_text(
        "# pooled judgments for tune_x\n"
        "q1\tdoc-3\t1\tpartly: names the flag\n"
        "q1\tdoc-1\t0\tthe pool's reader disagreed with the set\n"
        "q2\tother:tune_y/doc-9\t2\tanswers, in the other language\n", encoding="utf-8")
    docs = tuple(EvalDoc(f"doc-{i}", f"text {i}") for i in range(4))
    queries = (EvalQuery("q1", "first", "ko"), EvalQuery("q2", "second", "ko"))
    return EvalSet("tune_x", docs, queries, {"q1": {"doc-1": 2}, "q2": {"doc-2": 2}})


def test_pooled_judgments_join_the_sets_own_and_never_override_them(tuning_set) -> None:
    judged = evalsets.fit_judgments(tuning_set)
    # a passage of another set is named as fit.py's records name it (no set prefix); the set's own grade wins
    assert judged == {"q1": {"doc-1": 2, "doc-3": 1}, "q2": {"doc-2": 2, "doc-9": 2}}


def test_records_are_judged_again_with_the_judgments_in_force(tuning_set, monkeypatch) -> None:
    loaded = []
    monkeypatch.setattr(fit_ranker, "load", lambda name: loaded.append(name) or tuning_set)
    docs = ["doc-9", "doc-2", "doc-3", "doc-0"]
    old = [{"set": name, "qid": qid, "rel": {}, "docs": docs, "grade": np.zeros(4, np.int8)}
           for name, qid in (("tune_x", "q1"), ("tune_x", "q2"), ("MIXED:tune_x", "q2"))]
    out = fit_ranker.rejudged(old)
    assert loaded == ["tune_x"]  # the runs alone and in MIXED share one reading of the set
    assert out[0]["grade"].tolist() == [0, 0, 1, 0] and out[1]["grade"].tolist() == [2, 2, 0, 0]
    assert out[2]["rel"] == {"doc-2": 2, "doc-9": 2}
    with pytest.raises(SystemExit, match="records without qids"):
        fit_ranker.rejudged([{"set": "tune_x", "rel": {}, "docs": docs, "grade": np.zeros(4, np.int8)}])


def test_a_pool_file_is_replaced_whole_and_keeps_what_was_pooled(tmp_path, monkeypatch) -> None:
    """benchmarks/pool.py and pool_fit.py join a new pool to the passages pooled before (judged work)."""
    monkeypatch.setattr(evalsets, "POOL_DIR", tmp_path / "pooled")
    assert evalsets.read_pool("tune_x") == {}
    first = {("q1", "doc-1"): {"qid": "q1", "query": "첫 질문", "doc": "doc-1", "text": "본문", "rows": ["bm25"]}}
    path = evalsets.write_pool("tune_x", first)
    pool = evalsets.read_pool("tune_x")
    assert pool == first and path.read_text(encoding="utf-8").count("\n") == 1
    pool[("q2", "doc-2")] = {"qid": "q2", "query": "second", "doc": "doc-2", "text": "t", "rows": ["dense"]}
    evalsets.write_pool("tune_x", pool)
    assert list(evalsets.read_pool("tune_x")) == [("q1", "doc-1"), ("q2", "doc-2")]
    assert [p.name for p in path.parent.iterdir()] == ["pool-tune_x.jsonl"]  # no temporary file left


SMALL_TREES = {"num_leaves": 7, "min_data_in_leaf": 5, "rounds": 20}


def _records(n: int = 40) -> list[dict]:
    """Query runs whose relevance follows two features, noisily."""
    rng = np.random.default_rng(3)
    records = []
    for _ in range(n):
        X = rng.normal(size=(30, len(fit_ranker.FEATURES)))
        grade = (X[:, 1] + X[:, 4] + rng.normal(size=30) * 0.5 > 1.2).astype(np.int8)
        records.append({"X": X, "grade": grade, "fused": X[:, 0] * 0.1})
    return records


def test_the_seed_is_the_trees_draw_and_the_same_seed_the_same_trees() -> None:
    """``fit_ranker.py --seed``: LightGBM's draw of the features each tree sees (feature_fraction < 1), so two runs on
    the same records differ by the draw alone, and one seed gives the same trees every time."""
    pytest.importorskip("lightgbm")
    records, trees = _records(), SMALL_TREES

    def dump(seed: int) -> list:
        return fit_ranker.train_lambdarank(records, residual=True, seed=seed, trees=trees).dump_model()["tree_info"]

    assert dump(0) == dump(0)
    assert dump(0) != dump(1)


def test_an_ensemble_exports_as_one_model_scoring_the_mean_of_its_boosters(tmp_path) -> None:
    """``fit_ranker.py --ensemble K``: K boosters under seeds seed … seed + K - 1; the exported JSON model (one set of
    trees, each value over K) scores what their mean predicts, and its contributions still add up to the score."""
    pytest.importorskip("lightgbm")
    from hanrag.search.ranker import from_lightgbm, load_ranker

    records = _records()
    ensemble = fit_ranker.train_ensemble(records, True, seed=4, size=3, trees=SMALL_TREES)
    assert len(ensemble.models) == 3
    X = np.vstack([r["X"] for r in records[:5]])
    singles = [fit_ranker.train_lambdarank(records, True, 4 + i, SMALL_TREES).predict(X) for i in range(3)]
    assert np.allclose(ensemble.predict(X), np.mean(singles, axis=0))
    path = tmp_path / "ensemble.json"  # as `--export` writes it, read as search.ranker reads a model file
    path.write_text(json.dumps(from_lightgbm(ensemble.dump_model(), fit_ranker.FEATURES, 10.0, 50)), encoding="utf-8")
    model = load_ranker(str(path))
    assert len(model.roots) == 3 * SMALL_TREES["rounds"]
    assert np.allclose(model.predict(X), ensemble.predict(X), atol=1e-9)
    contrib, base = model.contributions(X)
    assert np.allclose(base + contrib.sum(axis=1), ensemble.predict(X), atol=1e-9)
    assert fit_ranker.train_ensemble(records, True, seed=4, size=1, trees=SMALL_TREES).predict(X) == \
        pytest.approx(singles[0])


def test_sets_kept_out_of_training_leave_with_their_mixed_runs_and_a_misspelt_one_is_refused() -> None:
    """``fit_ranker.py --train-without``: a set's standalone and MIXED-FIT records leave the training pool together,
    the other sets' stay; a name no record carries is an error rather than a run that measures nothing."""
    records = [{"set": s} for s in ("tune_a", "MIXED:tune_a", "tune_b", "MIXED:tune_b", "korquad")]
    kept = fit_ranker.training_records(records, ["tune_b"])
    assert [r["set"] for r in kept] == ["tune_a", "MIXED:tune_a", "korquad"]
    assert fit_ranker.training_records(records, []) == records
    with pytest.raises(ValueError, match="tune_c"):
        fit_ranker.training_records(records, ["tune_b", "tune_c"])


def test_records_are_read_by_their_feature_names(tmp_path) -> None:
    """Records that name their columns (fit.py) are read by name, so a feature added or dropped since leaves them
    readable; records without names must have this hanrag's columns, and a missing feature is named."""
    names = [*fit_ranker.FEATURES, "a_feature_since_dropped"]
    X = np.arange(3 * len(names), dtype=float).reshape(3, len(names))
    X = X[:, ::-1]
    names = names[::-1]
    picked = fit_ranker.feature_columns(X, names, tmp_path / "r.npz")
    assert picked.shape == (3, len(fit_ranker.FEATURES))
    assert np.array_equal(picked[:, 0], X[:, names.index(fit_ranker.FEATURES[0])])
    with pytest.raises(SystemExit, match="without the features second_gap"):
        fit_ranker.feature_columns(X, [n for n in names if n != "second_gap"], tmp_path / "r.npz")
    with pytest.raises(SystemExit, match="r.npz: records of 15 features without their names"):
        fit_ranker.feature_columns(X, None, tmp_path / "r.npz")
    assert fit_ranker.feature_columns(X[:, 1:], None, tmp_path / "r.npz").shape[1] == len(fit_ranker.FEATURES)
