"""Issue 30, finding 6: an index is data, checked as data.

The pointer and every snapshot file and folder must be regular and inside the index (a pipe or a device
never blocks or floods a reader); contents that an attacker rewrote with every checksum recomputed
("re-sealed") are refused at open when they are structurally wrong, flagged by ``hanrag doctor`` when they
are consistent but not the text's, and only the keyed seal catches a same-length text replacement."""

from __future__ import annotations

import json
import os
import shutil
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np
import pytest

from fixtures.server import ThreadServer
from fixtures.tamper import RESEALED, copy_index, edit_npy, make_chunks, replace_text_same_length, reseal
from hanrag.config import Config
from hanrag.doctor import diagnose
from hanrag.index import integrity, store
from hanrag.index.snapshot import open_snapshot
from hanrag.index.sparse import SparseIndex
from hanrag.pipeline import build_from_chunks
from hanrag.server import create_app
from tests.hostile.test_index_server import assert_one_line_error, cli

KEY_ENV = store.INDEX_KEY_ENV


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = tmp_path_factory.mktemp("contents") / "index"
    saved = os.environ.pop(KEY_ENV, None)
    try:
        build_from_chunks(make_chunks(), index, Config(), progress=False)
    finally:
        if saved is not None:
            os.environ[KEY_ENV] = saved
    return index


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)


def within(seconds: float, fn: Callable[[], object]) -> object:
    """fn's result or exception, failing the test if it takes longer (a reader blocked on a pipe)."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s (blocked?)"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")


def refused(index: Path, *words: str) -> None:
    """Open, search (CLI) and doctor each refuse in one line naming ``words``."""
    with pytest.raises(store.IndexLoadError) as info:
        within(30, lambda: open_snapshot(index))
    msg = str(info.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, (w, msg)
    assert_one_line_error(within(60, lambda: cli("search", str(index), "파드 재시작")), *words)
    problems = within(120, lambda: diagnose(index, Config()))
    assert problems[0].code == "index-unreadable" and all(w in problems[0].message for w in words), problems[0]


def doctor_codes(index: Path) -> dict[str, str]:
    return {p.code: p.message for p in within(120, lambda: diagnose(index, Config()))}


# ----------------------------------------------------------------------------- the pointer


def test_current_a_named_pipe_does_not_hang(small_index: Path, tmp_path: Path) -> None:
    index, _ = copy_index(small_index, tmp_path / "ix")
    (index / store.POINTER).unlink()
    os.mkfifo(index / store.POINTER)
    try:
        refused(index, "CURRENT", "pipe")
    finally:  # release a reader that did block (the test has failed then): open the other end and close it
        try:
            os.close(os.open(index / store.POINTER, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # no reader waiting: nothing blocked


def test_current_linked_to_dev_zero_is_not_read_whole(small_index: Path, tmp_path: Path) -> None:
    index, _ = copy_index(small_index, tmp_path / "ix")
    (index / store.POINTER).unlink()
    (index / store.POINTER).symlink_to("/dev/zero")
    t = time.monotonic()
    refused(index, "CURRENT", "symbolic link")
    assert time.monotonic() - t < 60


def test_current_symlinked_to_a_valid_pointer_refused(small_index: Path, tmp_path: Path) -> None:
    index, _ = copy_index(small_index, tmp_path / "ix")
    outside = tmp_path / "pointer"
    shutil.move(index / store.POINTER, outside)
    (index / store.POINTER).symlink_to(outside)
    refused(index, "CURRENT", "symbolic link")


def test_oversized_current_refused_reading_at_most_the_bound(small_index: Path, tmp_path: Path) -> None:
    index, _ = copy_index(small_index, tmp_path / "ix")
    (index / store.POINTER).write_bytes(b"x" * (10 << 20))
    refused(index, "CURRENT", "over 4096 bytes")


def test_name_only_current_refused(small_index: Path, tmp_path: Path) -> None:
    index, snap = copy_index(small_index, tmp_path / "ix")
    (index / store.POINTER).write_text(snap.name + "\n")
    refused(index, "manifest-sha256")
    # the documented roll-back by hand: both lines
    (index / store.POINTER).write_text(
        f"{snap.name}\n{store.POINTER_SUM} {store.sha256_file(snap / store.MANIFEST)}\n")
    assert len(open_snapshot(index)) == 4


# ----------------------------------------------------------------------------- folders and files


@pytest.mark.parametrize("what", ["snapshot", "snapshots", "sparse", "manifest", "file"])
def test_symlinked_folders_and_files_refused(small_index: Path, tmp_path: Path, what: str) -> None:
    index, snap = copy_index(small_index, tmp_path / "ix")
    elsewhere = tmp_path / "elsewhere"
    target = {"snapshot": snap, "snapshots": snap.parent, "sparse": snap / "sparse",
              "manifest": snap / store.MANIFEST, "file": snap / "sparse" / "bm25_vocab.json"}[what]
    shutil.move(target, elsewhere)
    target.symlink_to(elsewhere, target_is_directory=elsewhere.is_dir())
    refused(index, "symbolic link")


def test_manifest_a_pipe_does_not_hang(small_index: Path, tmp_path: Path) -> None:
    index, snap = copy_index(small_index, tmp_path / "ix")
    (snap / store.MANIFEST).unlink()
    os.mkfifo(snap / store.MANIFEST)
    refused(index, "manifest.json", "pipe")


def test_older_snapshot_linked_to_a_pipe_is_reported_not_read(tmp_path: Path) -> None:
    index = tmp_path / "ix"
    build_from_chunks(make_chunks()[:3], index, Config(), progress=False)
    build_from_chunks(make_chunks(), index, Config(), progress=False)
    old = store.snapshots_dir(index) / store.list_snapshots(index)[0]
    (old / "chunks.jsonl").unlink()
    os.mkfifo(old / "chunks.jsonl")
    codes = doctor_codes(index)
    assert "pipe" in codes["old-snapshot-corrupt"]


# ----------------------------------------------------------------------------- re-sealed contents, refused at open


@pytest.mark.parametrize("case", sorted(RESEALED))
def test_resealed_corruption_refused_in_one_line(small_index: Path, tmp_path: Path, case: str) -> None:
    rel, edit, words = RESEALED[case]
    index, snap = copy_index(small_index, tmp_path / "ix")
    edit_npy(snap, rel, edit)
    refused(index, rel.split("/")[-1], words)


def test_resealed_vocabulary_with_a_repeated_token_refused(small_index: Path, tmp_path: Path) -> None:
    index, snap = copy_index(small_index, tmp_path / "ix")
    p = snap / "sparse" / "bm25_vocab.json"
    vocab = json.loads(p.read_text(encoding="utf-8"))
    vocab[1] = vocab[0]
    p.write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    reseal(snap, "sparse/bm25_vocab.json")
    refused(index, "bm25_vocab.json", "distinct tokens")


def test_manifest_claiming_a_graph_over_the_placeholder(small_index: Path, tmp_path: Path) -> None:
    """Once a segfault in doctor: usearch imported before onnxruntime, and a view trusting the header."""
    index, snap = copy_index(small_index, tmp_path / "ix")
    reseal(snap, change=lambda m: m.update(dense_index={**m["dense_index"], "kind": "hnsw", "rows": 4}))
    refused(index, "dense.usearch", "the manifest says 4")
    # the placeholder's header edited to claim the 4 vectors too
    g = snap / "dense.usearch"
    raw = bytearray(g.read_bytes())
    raw[0:4] = struct.pack("<I", 4)
    g.write_bytes(bytes(raw))
    reseal(snap, "dense.usearch")
    refused(index, "dense.usearch", "more than its 112 bytes hold")


def test_doctor_in_a_fresh_process_survives_a_graph_claim(small_index: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    index, snap = copy_index(small_index, tmp_path / "ix")
    # the claim reaches the graph (usearch is imported), then doctor loads the onnx embedder
    reseal(snap, change=lambda m: m.update(dense_index={**m["dense_index"], "kind": "hnsw", "rows": 4}))
    out = subprocess.run([sys.executable, "-m", "hanrag", "doctor", str(index)], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "HANRAG_NO_SERVER": "1", "COLUMNS": "1000"})
    assert out.returncode == 1, (out.returncode, out.stderr[-2000:])
    assert "Traceback" not in out.stdout + out.stderr and "cannot open the HNSW graph" in out.stdout


def test_manifest_naming_another_snapshot_refused(small_index: Path, tmp_path: Path) -> None:
    index, snap = copy_index(small_index, tmp_path / "ix")
    reseal(snap, change=lambda m: m.update(snapshot="20000101T000000-000000000-1"))
    refused(index, "names snapshot")


# ----------------------------------------------------------------------------- consistent rewrites: doctor


def test_reversed_embeddings_resealed_flagged_by_doctor(small_index: Path, tmp_path: Path) -> None:
    index, snap = copy_index(small_index, tmp_path / "ix")
    assert not {c for c in doctor_codes(index) if c.startswith("index-")}
    edit_npy(snap, "embeddings.npy", lambda a: np.ascontiguousarray(a[::-1]))
    assert len(open_snapshot(index)) == 4  # consistent data: open cannot tell
    assert "stored vector is not its text's" in doctor_codes(index)["index-content-mismatch"]


def test_shuffled_vocabulary_resealed_flagged_by_doctor(small_index: Path, tmp_path: Path) -> None:
    index, snap = copy_index(small_index, tmp_path / "ix")
    p = snap / "sparse" / "bm25_vocab.json"
    vocab = json.loads(p.read_text(encoding="utf-8"))
    p.write_text(json.dumps(vocab[::-1], ensure_ascii=False), encoding="utf-8")
    reseal(snap, "sparse/bm25_vocab.json")
    assert len(open_snapshot(index)) == 4
    assert "BM25 postings are not its text's tokens" in doctor_codes(index)["index-content-mismatch"]


def test_big_file_edited_in_the_middle_open_checks_edges_doctor_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What open reads of a file over FULL_VERIFY_MAX_BYTES (its edges) and what doctor reads (all of it),
    with the bounds made small so a 4-chunk index has "big" files."""
    monkeypatch.setattr(store, "FULL_VERIFY_MAX_BYTES", 1024)
    monkeypatch.setattr(store, "EDGE_BYTES", 1024)
    monkeypatch.setattr(integrity, "FULL_VERIFY_MAX_BYTES", 1024)
    monkeypatch.setattr(integrity, "EDGE_BYTES", 1024)
    index = tmp_path / "ix"
    build_from_chunks(make_chunks(), index, Config(), progress=False)
    snap = store.current_snapshot_dir(index)
    # a NaN in the middle of the matrix (row 2 of 4; the edges are its first and last KB), checksums
    # recomputed: open's edge hash and edge values pass, doctor reads every value
    def middle_nan(a: np.ndarray) -> np.ndarray:
        middle = a.shape[1] * (a.shape[0] // 2) + a.shape[1] // 2
        return np.where(np.arange(a.size).reshape(a.shape) == middle, np.nan, a).astype(a.dtype)

    edit_npy(snap, "embeddings.npy", middle_nan)
    assert len(open_snapshot(index)) == 4
    problems = diagnose(index, Config())
    assert problems[0].code == "index-unreadable" and "NaN" in problems[0].message
    # without recomputing: doctor's full sha256 catches the edit open's edge hash cannot
    emb = snap / "embeddings.npy"
    raw = bytearray(emb.read_bytes())
    raw[3000] ^= 0x01
    emb.write_bytes(bytes(raw))
    assert len(open_snapshot(index)) == 4
    assert "checksum differs" in diagnose(index, Config())[0].message


def test_big_bm25_postings_checked_when_a_search_first_reads_them(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    """A postings file too big to read at open: a column with an out-of-range row is refused in one line
    when a search first reads it, never an IndexError (or, negative, another document's score)."""
    monkeypatch.setattr(integrity, "EDGE_BYTES", 8)
    n, vocab = 50, [f"t{i}" for i in range(10)]
    indptr = np.arange(0, 501, 50, dtype=np.int64)
    indices = np.tile(np.arange(n, dtype=np.int32), 10)
    indices[260] = 10_000  # token t5's column
    sparse = SparseIndex(vocab, np.ones(500, np.float32), indices, indptr, np.full(n, 10, np.int32), k1=1.5,
                         b=0.75, method="lucene", rows_sorted=True)
    sparse.check(tmp_path, full=False)  # the edges are fine
    assert sparse.top_k({"t1": 1.0}, 3)[0].size == 3
    with pytest.raises(store.IndexLoadError, match="t5.*out of range"):
        sparse.top_k({"t5": 1.0}, 3)
    with pytest.raises(store.IndexLoadError, match="out of range"):
        sparse.row_scores({"t5": 1.0}, np.array([1, 2]))
    with pytest.raises(store.IndexLoadError, match="out of range"):
        sparse.check(tmp_path, full=True)


# ----------------------------------------------------------------------------- the keyed seal


def test_same_length_text_replacement_only_the_seal_catches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = tmp_path / "ix"
    monkeypatch.setenv(KEY_ENV, "correct horse battery staple")
    build_from_chunks(make_chunks(), index, Config(), progress=False)
    snap = store.current_snapshot_dir(index)
    sealed = json.loads((snap / store.MANIFEST).read_text(encoding="utf-8"))
    assert sealed["seal"]["alg"] == "hmac-sha256"
    assert len(open_snapshot(index)) == 4  # the right key
    evil = replace_text_same_length(snap)
    with pytest.raises(store.IndexLoadError, match="seal does not match"):
        open_snapshot(index)
    assert_one_line_error(cli("search", str(index), "JWT tokens"), "seal does not match")
    assert diagnose(index, Config())[0].code == "index-unreadable"
    # without the key nothing tells the rewrite from the build's own data (what the docs say)
    monkeypatch.delenv(KEY_ENV)
    assert open_snapshot(index).chunks[3].text == evil


def test_seal_refuses_unsealed_and_other_keys(small_index: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    index, _ = copy_index(small_index, tmp_path / "ix")  # built without a key
    monkeypatch.setenv(KEY_ENV, "k1")
    with pytest.raises(store.IndexLoadError, match="not sealed"):
        open_snapshot(index)
    sealed = tmp_path / "sealed"
    build_from_chunks(make_chunks(), sealed, Config(), progress=False)
    assert len(open_snapshot(sealed)) == 4
    monkeypatch.setenv(KEY_ENV, "k2")
    with pytest.raises(store.IndexLoadError, match="seal does not match"):
        open_snapshot(sealed)
    monkeypatch.setenv(KEY_ENV, "  ")
    with pytest.raises(store.IndexLoadError, match="blank"):
        open_snapshot(sealed)
    with pytest.raises(store.IndexBuildError, match="blank"):
        build_from_chunks(make_chunks(), tmp_path / "blank", Config(), progress=False)
    monkeypatch.delenv(KEY_ENV)
    assert len(open_snapshot(sealed)) == 4  # a sealed index opens without the key (nothing to check it with)


def test_resealed_manifest_edit_breaks_the_seal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "k1")
    index = tmp_path / "ix"
    build_from_chunks(make_chunks(), index, Config(), progress=False)
    snap = store.current_snapshot_dir(index)
    edit_npy(snap, "embeddings.npy", lambda a: np.ascontiguousarray(a[::-1]))
    with pytest.raises(store.IndexLoadError, match="seal does not match"):
        open_snapshot(index)


# ----------------------------------------------------------------------------- serve


def test_serve_on_a_resealed_corrupt_index_answers_503_with_the_reason(small_index: Path, tmp_path: Path) -> None:
    index, snap = copy_index(small_index, tmp_path / "ix")
    edit_npy(snap, "sparse/bm25_indices.npy", lambda a: np.where(np.arange(a.size) == 2, 99, a).astype(a.dtype))
    srv = ThreadServer(create_app(index, Config(), background=True))
    srv.check_health = False  # it never becomes ready
    with srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        deadline = time.monotonic() + 120
        while "error" not in (health := c.get("/health").json()):
            assert time.monotonic() < deadline, health
            time.sleep(0.2)
        assert "bm25_indices.npy" in health["error"] and "out of range" in health["error"]
        assert c.get("/health").status_code == 503
        r = c.post("/search", json={"query": "파드"})
        assert r.status_code == 503
        error = r.json()["error"]
        assert "bm25_indices.npy" in error and "\n" not in error


# ----------------------------------------------------------------------------- doctor never crashes


def test_doctor_reports_an_unexpected_failure(small_index: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import hanrag.doctor as doctor

    index, _ = copy_index(small_index, tmp_path / "ix")

    def boom(*args: object) -> None:
        raise RuntimeError("disk on fire\nsecond line")

    monkeypatch.setattr(doctor, "_snapshot_checks", boom)
    problems = diagnose(index, Config())
    failed = next(p for p in problems if p.code == "doctor-check-failed")
    assert "disk on fire" in failed.message and "\n" not in failed.message
