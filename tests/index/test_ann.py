"""The HNSW graph of the embedded index against exact search, and the memory-mapped format-3 snapshot."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from hanrag.backends.embedded import EmbeddedBackend
from hanrag.config import Config
from hanrag.index import dense, store
from hanrag.index.snapshot import open_snapshot
from hanrag.pipeline import build_from_chunks
from hanrag.records import Chunk, Filters

N, DIM = 3000, 32


def clustered(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """Text-like vectors: 60 topics plus noise, normalised."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((60, dim)).astype(np.float32)
    x = centres[rng.integers(0, 60, n)] + 0.5 * rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


class TableEmbedder:
    """Vectors looked up by text (the chunk text holds its row number): the graph sees known vectors."""

    max_tokens = 512
    truncates = True

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors, self.dim = vectors, vectors.shape[1]

    def encode_passages(self, texts):
        return np.stack([self.vectors[int(t.split()[1])] for t in texts])

    encode_queries = encode_passages

    def count_tokens(self, text: str) -> int:
        return 4

    def identity(self) -> dict:
        return {"model": "table", "dim": self.dim, "revision": "1", "pooling": "none", "normalize": True,
                "max_seq_length": 512, "query_prefix": "", "passage_prefix": ""}


@pytest.fixture(scope="module")
def ann_index(tmp_path_factory) -> tuple[Path, np.ndarray]:
    vectors = clustered(N, DIM)
    langs = ("ko", "zh", "en")
    chunks = [Chunk(chunk_id=f"c{i:05d}", doc_id=f"d{i // 10}", text=f"row {i} word{i % 97}", start=i % 10,
                    end=i % 10 + 5, source=f"d{i // 10}.md", lang=langs[i % 3]) for i in range(N)]
    cfg = Config()
    cfg.index.dedup = False
    index = tmp_path_factory.mktemp("ann") / "ix"
    mp = pytest.MonkeyPatch()
    mp.setattr(dense, "ANN_MIN_ROWS", 1000)  # a graph at 3k chunks (the default starts far higher)
    try:
        build_from_chunks(chunks, index, cfg, embedder=TableEmbedder(vectors), progress=False)
    finally:
        mp.undo()
    return index, vectors


def test_graph_recall_against_exact(ann_index) -> None:
    index, vectors = ann_index
    snap = open_snapshot(index)
    assert snap.manifest["dense_index"]["kind"] == "hnsw" and snap.ann is not None and len(snap.ann) == N
    assert "dense.usearch" in snap.manifest["files"]
    rng = np.random.default_rng(1)
    hits = 0
    for q in vectors[rng.integers(0, N, 50)]:
        ex, _ = dense.top_k(snap.embeddings, q, 10)
        rows, _ = snap.ann.search(q, 10)
        hits += len(set(ex.tolist()) & set(rows.tolist()))
    assert hits / 500 >= 0.9


def test_backend_uses_graph_and_filters_before_top_k(ann_index, monkeypatch) -> None:
    index, vectors = ann_index
    backend = EmbeddedBackend.open(index)
    calls = []
    real = backend.snapshot.ann.search
    monkeypatch.setattr(backend.snapshot.ann, "search", lambda q, c: calls.append(c) or real(q, c))
    monkeypatch.setattr("hanrag.backends.embedded.EXACT_FILTERED_MAX", 100)  # a 1k-row filter takes the graph
    q = vectors[7]
    got = backend.dense_top_k(q, 10, backend.mask(None))
    ref = backend.dense_top_k(q, 10, backend.mask(None), exact=True)
    assert calls and len(set(got[0].tolist()) & set(ref[0].tolist())) >= 8
    # scores are exact cosines of the stored vectors, whichever path found the rows
    np.testing.assert_allclose(got[1], backend.snapshot.embeddings[got[0]] @ q, rtol=1e-5, atol=1e-6)
    hits = backend.dense_search(q, 10, Filters(lang=("zh",)))
    assert len(hits) == 10 and all(backend.get_chunks([cid])[0].lang == "zh" for cid, _ in hits)
    assert len(calls) == 2  # a third of the rows: the graph, oversampled
    # a selective filter (one document's 10 rows): exact scoring of the allowed rows, all of them returned
    calls.clear()
    monkeypatch.setattr("hanrag.backends.embedded.EXACT_FILTERED_MAX", 50_000)
    hits = backend.dense_search(q, 20, Filters(source_glob="d5.md"))
    assert not calls and sorted(c for c, _ in hits) == [f"c{i:05d}" for i in range(50, 60)]


def test_exact_filtered_search_gathers_few_rows_and_scans_under_a_broad_mask(ann_index, monkeypatch) -> None:
    index, vectors = ann_index
    backend = EmbeddedBackend.open(index)
    gathered = []
    real = dense.top_k_rows
    monkeypatch.setattr(dense, "top_k_rows", lambda *a: gathered.append(len(a[1])) or real(*a))
    q = vectors[21]
    for f in (Filters(lang=("ko",)), Filters(source_glob="d1?.md")):  # a third of the rows; 10 documents
        mask = backend.mask(f)
        rows, scores = backend.dense_top_k(q, 10, mask)  # both at most EXACT_FILTERED_MAX: exact
        ref_rows, ref_scores = dense.top_k(backend.snapshot.embeddings, q, 10, mask=mask)
        assert rows.tolist() == ref_rows.tolist()
        np.testing.assert_allclose(scores, ref_scores, rtol=1e-6)
    # the third is scanned under the mask (gathering it costs more), the few rows are gathered
    assert gathered == [int(backend.mask(Filters(source_glob="d1?.md")).sum())] == [100]


def test_one_scan_serves_every_filter_below_the_shared_scan_size(ann_index, monkeypatch) -> None:
    """Below ``SHARED_SCAN_MAX_ROWS`` a graph is not walked for ``dense_search_each``: the rows are scored once for
    all its filters, giving per filter the exact search's top-k; above it, the graph is walked per filter."""
    index, vectors = ann_index
    backend = EmbeddedBackend.open(index)
    walks, scans = [], []
    real_walk, real_scan = backend.snapshot.ann.search, dense.inner_products
    monkeypatch.setattr(backend.snapshot.ann, "search", lambda q, c: walks.append(c) or real_walk(q, c))
    monkeypatch.setattr(dense, "inner_products", lambda *a: scans.append(1) or real_scan(*a))
    monkeypatch.setattr("hanrag.backends.embedded.EXACT_FILTERED_MAX", 100)  # a 1k-row filter takes the graph
    q = vectors[33]
    filters = [None, Filters(lang=("ko",)), Filters(lang=("zh",)), Filters(lang=("en",), source_glob="d1*.md")]
    assert backend.dense_scan_shared()
    each = backend.dense_search_each(q, 15, filters)
    assert len(scans) == 1 and not walks
    for got, f in zip(each, filters, strict=True):
        rows, scores = dense.top_k(backend.snapshot.embeddings, q, 15, mask=backend.mask(f))
        exact = zip(rows.tolist(), scores.astype(np.float64).tolist(), strict=True)
        assert got == [(f"c{r:05d}", s) for r, s in exact]
    assert all(backend.get_chunks([cid])[0].lang == "zh" for cid, _ in each[2]) and len(each[2]) == 15
    assert backend.dense_search_each(q, 0, filters) == [[], [], [], []]
    monkeypatch.setattr("hanrag.backends.embedded.SHARED_SCAN_MAX_ROWS", N)  # an index this size walks its graph
    assert not backend.dense_scan_shared()
    scans.clear()
    walked = backend.dense_search_each(q, 15, filters[:3])
    assert len(walks) == 3 and walked == [backend.dense_search(q, 15, f) for f in filters[:3]]


def test_records_are_read_by_row_and_id(ann_index) -> None:
    index, _ = ann_index
    snap = open_snapshot(index)
    assert len(snap.chunks) == N and snap.chunks[1234].chunk_id == "c01234" and snap.chunks[-1].chunk_id == "c02999"
    assert snap.row_of["c02000"] == 2000 and "nope" not in snap.row_of and snap.row_of.get("c9") is None
    with pytest.raises(KeyError, match="unknown chunk id"):
        snap.rows(["c00001", "missing"])
    # many ids in one lookup: unknown ones (and one longer than any stored id, which must not match its prefix) are -1
    many = snap.row_of.many(["c02999", "nope", "c00001" + "9" * 40, "c00000", "c00001"])
    assert many.tolist() == [2999, -1, -1, 0, 1] and snap.row_of.many([]).tolist() == []
    assert [c.start for c in EmbeddedBackend(snap).doc_chunks("d3")] == list(range(10))


def test_corrupt_graph_and_big_file_edges(ann_index, tmp_path, monkeypatch) -> None:
    import shutil

    index, _ = ann_index
    copy = tmp_path / "ix"
    shutil.copytree(index, copy)
    graph = store.current_snapshot_dir(copy) / "dense.usearch"
    data = bytearray(graph.read_bytes())
    data[-10] ^= 0xFF
    graph.write_bytes(bytes(data))
    with pytest.raises(store.IndexLoadError, match="dense.usearch: checksum differs"):
        open_snapshot(copy)
    # a big file is checked at open by size and its first/last MiB only; the full hash is doctor's (verify="full")
    monkeypatch.setattr(store, "FULL_VERIFY_MAX_BYTES", 1000)
    manifest = json.loads((graph.parent / "manifest.json").read_text())
    assert manifest["files"]["dense.usearch"]["bytes"] > 1000
    with pytest.raises(store.IndexLoadError, match="first/last MiB"):
        open_snapshot(copy)
    with pytest.raises(store.IndexLoadError, match="checksum differs"):
        open_snapshot(copy, verify="full")


def test_float16_exact_search_matches_float32() -> None:
    x = clustered(5000, DIM, seed=3)
    q = x[11]
    rows32, s32 = dense.top_k(x, q, 10)
    rows16, s16 = dense.top_k(x.astype(np.float16), q, 10)
    assert len(set(rows32.tolist()) & set(rows16.tolist())) >= 9
    np.testing.assert_allclose(s16, s32, atol=2e-3)


def test_filter_columns_agree_with_the_records(ann_index) -> None:
    index, _ = ann_index
    backend = EmbeddedBackend.open(index)
    snap = backend.snapshot
    for f in (Filters(lang=("ko",)), Filters(lang=("zh", "en"), tier=(0,)), Filters(tier=(3,)),
              Filters(provenance=("ai-draft",)), Filters(lang=("en",), source_glob="d1*.md")):
        ref = np.fromiter((f.accepts(c) for c in snap.chunks), dtype=bool, count=len(snap))
        assert np.array_equal(backend._filter_rows(f), ref), f
