"""Searches return their own plan and stage times (no state on the searcher), from many threads at once;
the weak-lexical trigger is a ratio to the query's BM25 ceiling, so it does not depend on corpus size."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import hanrag
from hanrag.backends.memory import MemoryBackend
from hanrag.config import Config
from hanrag.records import Chunk

TEXTS = [
    ("runbooks/k8s.md", "en", "Restart a kubernetes pod with kubectl delete pod; the deployment recreates it."),
    ("runbooks/k8s.md", "en", "Drain a kubernetes node before maintenance so pods move elsewhere."),
    ("runbooks/deploy.md", "en", "Roll back a failed deployment with kubectl rollout undo."),
    ("saju/ohaeng.md", "ko", "갑목은 양의 나무로 큰 나무를 뜻한다. 오행 중 목에 속한다. 갑목의 용신은 계절로 본다."),
    ("saju/yongsin.md", "ko", "인월에 태어난 갑목은 한기가 남아 있어 병화를 용신으로 삼는다."),
    ("zh/wuxing.md", "zh", "甲木为阳木，象征参天大树，五行属木。"),
]
# (query, mode): languages, modes and rules differ, so a plan crossing over between threads shows up
QUERIES = [
    ("restart kubernetes pod", "hybrid"),
    ("갑목 인월 용신", "hybrid"),
    ("甲木 五行", "hybrid"),
    ("how do I undo a failed deployment", "hybrid"),
    ("쿠버네티스 배포 롤백", "hybrid"),
    ("kubectl rollout", "bm25"),
    ("큰 나무", "dense"),
    ("photosynthesis in tropical rainforests", "hybrid"),
]


def chunks() -> list[Chunk]:
    return [Chunk(chunk_id=f"c{i}", doc_id=f"{src}#{i}", text=text, start=0, end=len(text), source=src, path=src,
                  lang=lang) for i, (src, lang, text) in enumerate(TEXTS)]


@pytest.fixture(scope="module")
def idx(tmp_path_factory):
    from hanrag.pipeline import build_from_chunks

    d = tmp_path_factory.mktemp("idx") / "index"
    build_from_chunks(chunks(), d, Config(), progress=False)
    return hanrag.open(d)


@pytest.mark.slow
def test_concurrent_searches_return_their_own_plan(idx):
    expected = {q: idx.search_result(q, top_k=3, mode=m, explain=True) for q, m in QUERIES}
    assert len({r.plan.rule for r in expected.values()}) >= 3  # the queries really take different paths
    jobs = QUERIES * 6
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(lambda qm: idx.search_result(qm[0], top_k=3, mode=qm[1], explain=True), jobs))
    for (q, m), res in zip(jobs, results, strict=True):
        want = expected[q]
        assert res.plan.query == q and res.plan.mode == m
        assert res.plan == want.plan  # rule, weights and evidence of this query, not a neighbour's
        assert [h.chunk.chunk_id for h in res.hits] == [h.chunk.chunk_id for h in want.hits]
        for h in res.hits:  # the hits were scored with the plan that comes back with them
            assert (h.explanation.rule, h.explanation.bm25_weight) == (res.plan.rule, res.plan.bm25_weight)
        assert res.times.total >= res.times.plan >= 0
    assert not hasattr(idx.searcher, "last_plan") and not hasattr(idx.searcher, "last_times")
    assert idx.search("restart kubernetes pod", top_k=3) == [h for h in idx.search_result("restart kubernetes pod",
                                                                                           top_k=3).hits]


@pytest.mark.slow
def test_plan_before_retrieval_vs_plan_used(idx):
    """Index.plan is the text-only plan; search_result's plan carries the weak-lexical switch."""
    res = idx.search_result("photosynthesis in tropical rainforests", top_k=3)
    assert res.plan.rule == "weak-lexical" and res.plan.lexical_evidence < Config().search.xling_min_evidence
    assert idx.plan("photosynthesis in tropical rainforests").rule == "en"


@pytest.mark.slow
def test_small_corpus_korean_query_is_not_weak(idx):
    """On six chunks raw BM25 stays far below the old absolute threshold (5.5), yet a Korean query whose words
    a Korean chunk holds has strong lexical evidence."""
    res = idx.search_result("갑목 인월 용신", top_k=3, explain=True)
    assert res.hits[0].explanation.bm25_raw < 5.5
    assert res.plan.rule != "weak-lexical"
    assert res.plan.lexical_evidence >= Config().search.xling_min_evidence
    assert res.hits[0].chunk.chunk_id == "c4"


def test_ceiling_bounds_every_score_and_is_scale_free():
    from hanrag.index.sparse import bm25_ceiling

    rng = np.random.default_rng(0)
    vocab = [f"t{i}" for i in range(30)]
    docs = [list(rng.choice(vocab, size=int(rng.integers(3, 40)))) for _ in range(200)]
    mem_chunks = [Chunk(chunk_id=f"d{i}", doc_id=f"d{i}", text=" ".join(d), start=0, end=1, lang="en")
                  for i, d in enumerate(docs)]
    be = MemoryBackend(mem_chunks, docs, np.eye(200, 8, dtype=np.float32))
    q = {"t1": 1.0, "t2": 0.5, "t7": 1.0, "unknown": 1.0}
    scores = be.sparse_scores(q, [c.chunk_id for c in mem_chunks])
    ceiling = be.sparse_ceiling(q)
    assert 0 < scores.max() < ceiling
    # a document holding every known token very often comes close to the ceiling of the known tokens
    known = {k: v for k, v in q.items() if k != "unknown"}
    big = [*docs, ["t1"] * 400 + ["t2"] * 400 + ["t7"] * 400]
    be2 = MemoryBackend([*mem_chunks, Chunk(chunk_id="big", doc_id="big", text="", start=0, end=1, lang="en")],
                        big, np.eye(201, 8, dtype=np.float32), b=0.0)
    assert be2.sparse_scores(known, ["big"])[0] / be2.sparse_ceiling(known) > 0.95
    # the ceiling follows df / N, not N: a token as common on a 10x larger corpus has (nearly) the same one
    small = bm25_ceiling({"a": 1.0}, {"a": 5}, 50, 1.5)
    large = bm25_ceiling({"a": 1.0}, {"a": 50}, 500, 1.5)
    assert small == pytest.approx(large, rel=0.05)
    assert bm25_ceiling({"a": 1.0}, {}, 50, 1.5, "atire") > 0
    assert bm25_ceiling({}, {}, 50, 1.5) == 0.0
    with pytest.raises(ValueError, match="unknown BM25 method"):
        bm25_ceiling({"a": 1.0}, {}, 5, 1.5, "nope")
