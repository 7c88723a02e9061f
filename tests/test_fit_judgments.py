"""The fitting protocol's judgments: a tuning set's own joined by its pooled ones (benchmarks/evalsets.py), and
records re-judged with the judgments in force (benchmarks/fit_ranker.py)."""

from __future__ import annotations

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


def test_the_seed_is_the_trees_draw_and_the_same_seed_the_same_trees() -> None:
    """``fit_ranker.py --seed``: LightGBM's draw of the features each tree sees (feature_fraction < 1), so two runs on
    the same records differ by the draw alone, and one seed gives the same trees every time."""
    pytest.importorskip("lightgbm")
    rng = np.random.default_rng(3)
    records = []
    for _ in range(40):
        X = rng.normal(size=(30, len(fit_ranker.FEATURES)))
        grade = (X[:, 1] + X[:, 4] + rng.normal(size=30) * 0.5 > 1.2).astype(np.int8)
        records.append({"X": X, "grade": grade, "fused": X[:, 0] * 0.1})
    trees = {"num_leaves": 7, "min_data_in_leaf": 5, "rounds": 20}

    def dump(seed: int) -> list:
        return fit_ranker.train_lambdarank(records, residual=True, seed=seed, trees=trees).dump_model()["tree_info"]

    assert dump(0) == dump(0)
    assert dump(0) != dump(1)
