"""fit_ranker.py --score-also: a second version's records scored by the same folds' models, query by query."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import fit_ranker

from hanrag.search.ranker import FEATURES


class Unmoved:
    """A model that adds nothing to the rule table's score: the residual trees then rank as the table does."""

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.zeros(len(X))


def _run(qid: str, scores: list[float], rel: dict[str, int]) -> dict:
    docs = [f"d{i}" for i in range(len(scores))]
    s = np.array(scores)
    return {"set": "tune_x", "cell": "ko", "qid": qid, "docs": docs, "rel": rel, "bn": s, "dn": s,
            "X": np.zeros((len(docs), len(FEATURES))), "grade": np.array([rel.get(d, 0) for d in docs], np.int8)}


def test_the_same_model_scores_both_versions_and_counts_the_queries_the_change_moved() -> None:
    before = fit_ranker.with_rule([_run("q1", [.9, .5, .1], {"d1": 2}), _run("q2", [.9, .5, .1], {"d0": 2})], {})
    after = fit_ranker.with_rule([_run("q1", [.4, .8, .1], {"d1": 2}), _run("q2", [.9, .5, .1], {"d0": 2})], {})
    mine = fit_ranker.query_ndcgs(before, [fit_ranker.score_model(Unmoved(), fit_ranker._head(r), True)
                                           for r in before])
    held, moved = fit_ranker.scored_alike(Unmoved(), mine, after)
    assert held["rule table"] == pytest.approx(1.0) and held["lambdarank-residual"] == pytest.approx(1.0)
    first = fit_ranker.ndcg(before[0], before[0]["fused"])
    assert first < 1.0
    assert moved == {"queries": 1, "mean_change": pytest.approx(1.0 - first)}


def test_versions_of_other_queries_are_refused() -> None:
    a = [_run("q1", [.5], {}), _run("q2", [.5], {})]
    fit_ranker.same_queries(a, [_run("q1", [.1], {}), _run("q2", [.2], {})])
    with pytest.raises(ValueError, match="first apart"):
        fit_ranker.same_queries(a, [_run("q1", [.5], {}), _run("q3", [.5], {})])
    with pytest.raises(ValueError, match="not the same query runs"):
        fit_ranker.same_queries(a, a[:1])


def test_a_missing_records_file_is_named_not_a_traceback(tmp_path: Path) -> None:
    import subprocess

    script = Path(fit_ranker.__file__)
    missing = tmp_path / "other.npz"
    done = subprocess.run([sys.executable, str(script), str(missing), "--score-also", str(missing)],
                          capture_output=True, text=True, cwd=script.parent)
    assert done.returncode == 2
    assert f"no records file {missing}" in done.stderr and "Traceback" not in done.stderr
