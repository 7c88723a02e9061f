"""Snapshot store: manifest round trip, checksums, foreign/corrupt indexes, cleanup, dense top-k."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hanrag.backends.embedded import EmbeddedBackend
from hanrag.config import Config
from hanrag.embed import load_embedder
from hanrag.index import store
from hanrag.index.dense import top_k
from hanrag.index.snapshot import open_snapshot
from hanrag.pipeline import build_from_chunks
from hanrag.records import Chunk, Filters

TEXTS = [
    ("a", "ko", "쿠버네티스 파드가 재시작을 반복하면 로그를 먼저 확인한다.", 0),
    ("a", "ko", "배포 롤백은 kubectl rollout undo 명령으로 한다.", 0),
    ("b", "zh", "甲木为阳木，象征参天大树。", 1),
    ("c", "en", "JWT tokens carry signed claims about the user.", 2),
]


def make_chunks(texts=TEXTS) -> list[Chunk]:
    return [
        Chunk(chunk_id=f"{doc}-{i}", doc_id=doc, text=t, start=0, end=len(t), source=f"https://x/{doc}",
              path=f"{doc}.md", lang=lang, tier=tier, labels=("l1",) if doc == "a" else ())
        for i, (doc, lang, t, tier) in enumerate(texts)
    ]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    index = tmp_path_factory.mktemp("store") / "index"
    report = build_from_chunks(make_chunks(), index, Config(), progress=False)
    return index, report


def test_manifest_round_trip(built):
    index, report = built
    snap = open_snapshot(index)
    m = snap.manifest
    assert m["format"] == "hanrag-index" and m["format_version"] == store.FORMAT_VERSION
    assert m["snapshot"] == report.snapshot == snap.name
    assert m["embedder"]["identity"] == load_embedder(Config().embedder).identity()
    assert m["embedder"]["dim"] == 384 + 512  # e5 and the second encoder (embedder.cross_lingual_weight)
    assert m["counts"] == {"documents": 3, "chunks": 4, "duplicates": 0, "kept": 4}
    assert m["config_hash"] == Config().hash("chunking", "text", "lexicon", "bm25", "embedder", "index")
    assert "analyzer_version" in m["analyzer"] and m["created_at"] and m["hanrag_version"]
    assert set(m["files"]) >= {"chunks.jsonl", "embeddings.npy", "duplicates.json"}
    assert any(f.startswith("sparse/") for f in m["files"])
    assert [c.to_dict() for c in snap.chunks] == [c.to_dict() for c in make_chunks()]
    assert isinstance(snap.embeddings, np.memmap) and snap.embeddings.dtype == np.float32
    assert snap.embeddings.shape == (4, 384 + 512)  # e5 and the second encoder (embedder.cross_lingual_weight)


def test_backend_search_and_filters(built):
    index, _ = built
    b = EmbeddedBackend.open(index)
    e = load_embedder(Config().embedder)
    q = e.encode_queries(["파드 재시작 로그"])[0]
    hits = b.dense_search(q, 2)
    assert hits[0][0] == "a-0" and len(hits) == 2
    only_zh = b.dense_search(q, 2, Filters(lang=("zh",)))
    assert [h[0] for h in only_zh] == ["b-2"]  # filter applied before top-k: still a result
    assert [h[0] for h in b.dense_search(q, 5, Filters(labels=("l1",)))] == ["a-0", "a-1"]
    np.testing.assert_allclose(b.dense_scores(q, ["a-0"]), [hits[0][1]], rtol=1e-5)
    assert [c.chunk_id for c in b.doc_chunks("a")] == ["a-0", "a-1"]
    with pytest.raises(KeyError):
        b.get_chunks(["nope"])
    assert b.count() == 4


def test_corrupt_file_is_refused(built, tmp_path):
    import shutil

    index, _ = built
    copy = tmp_path / "copy"
    shutil.copytree(index, copy)
    snap_dir = store.current_snapshot_dir(copy)
    emb = snap_dir / "embeddings.npy"
    data = bytearray(emb.read_bytes())
    data[-1] ^= 0xFF
    emb.write_bytes(bytes(data))
    with pytest.raises(store.IndexLoadError, match="checksum differs"):
        open_snapshot(copy)
    (snap_dir / "chunks.jsonl").unlink()
    with pytest.raises(store.IndexLoadError, match="missing file"):
        open_snapshot(copy)


def test_foreign_and_future_indexes_refused(built, tmp_path):
    with pytest.raises(store.IndexLoadError, match="no such index"):
        open_snapshot(tmp_path / "absent")
    (tmp_path / "foreign").mkdir()
    with pytest.raises(store.IndexLoadError, match="not a hanrag index"):
        open_snapshot(tmp_path / "foreign")
    import shutil

    index, _ = built
    shutil.copytree(index, tmp_path / "future")
    mpath = store.current_snapshot_dir(tmp_path / "future") / "manifest.json"
    m = json.loads(mpath.read_text())
    m["format_version"] = 99
    mpath.write_text(json.dumps(m))
    with pytest.raises(store.IndexLoadError, match="format version 99"):
        open_snapshot(tmp_path / "future")
    m["format"] = "something-else"
    mpath.write_text(json.dumps(m))
    with pytest.raises(store.IndexLoadError, match="foreign"):
        open_snapshot(tmp_path / "future")


def test_old_snapshots_removed_never_current(tmp_path):
    index = tmp_path / "ix"
    cfg = Config()
    cfg.index.keep_snapshots = 2
    names = [build_from_chunks(make_chunks(TEXTS[: 2 + i % 2]), index, cfg, progress=False).snapshot for i in range(4)]
    assert store.list_snapshots(index) == names[-2:]
    assert store.read_pointer(index) == names[-1]
    cfg.index.keep_snapshots = 0  # even 0 keeps the published one
    build_from_chunks(make_chunks(), index, cfg, progress=False)
    assert store.list_snapshots(index) == [store.read_pointer(index)]


def test_leftovers_of_killed_build_cleaned(built, tmp_path):
    import shutil

    index, _ = built
    copy = tmp_path / "ix"
    shutil.copytree(index, copy)
    (store.snapshots_dir(copy) / ".tmp-20000101T000000-000000000-1").mkdir()
    (store.snapshots_dir(copy) / "99990101T000000-000000000-1").mkdir()  # renamed in, never published
    removed = store.clean_leftovers(copy)
    assert len(removed) == 2
    assert store.list_snapshots(copy) == [store.read_pointer(copy)]


def test_float16_option(tmp_path):
    cfg = Config()
    cfg.embedder.dtype = "float16"
    build_from_chunks(make_chunks(), tmp_path / "ix", cfg, progress=False)
    b = EmbeddedBackend.open(tmp_path / "ix")
    assert b.snapshot.embeddings.dtype == np.float16
    q = load_embedder(cfg.embedder).encode_queries(["JWT claims"])[0]
    assert b.dense_search(q, 1)[0][0] == "c-3"


def test_dense_top_k_exact_and_masked():
    rng = np.random.default_rng(0)
    m = rng.normal(size=(1000, 8)).astype(np.float32)
    q = rng.normal(size=8).astype(np.float32)
    idx, scores = top_k(m, q, 5)
    full = m @ q
    assert idx.tolist() == np.argsort(-full)[:5].tolist()
    np.testing.assert_allclose(scores, full[idx], rtol=1e-6)
    mask = np.zeros(1000, bool)
    mask[[3, 7, 9]] = True
    idx, _ = top_k(m, q, 10, mask)
    assert sorted(idx.tolist()) == [3, 7, 9]
    assert top_k(m, q, 0)[0].size == 0
    with pytest.raises(ValueError, match="dimension"):
        top_k(m, np.zeros(3, np.float32), 2)


def test_an_opened_snapshot_leaves_no_file_open_for_the_collector(built):
    """The chunk records are read through a map of chunks.jsonl, which holds its own handle: opening and dropping a
    snapshot leaves no open file object behind (a collected one warns, ResourceWarning, under whichever test runs)."""
    import gc
    import warnings

    index, _ = built
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        snap = open_snapshot(index)
        assert snap.chunks[0].chunk_id
        del snap
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]
