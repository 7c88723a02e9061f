"""The index's embedding cache: append-only segments, compaction, resume, the earlier single-file layout."""

import json

import numpy as np

from hanrag.index.cache import EmbeddingCache
from hanrag.pipeline import vectors
from hanrag.records import Chunk

IDENT = {"model": "test", "dim": 4}


def vecs(n, start=0):
    return np.arange(start * 4, (start + n) * 4, dtype=np.float32).reshape(n, 4)


def keys(n, start=0):
    return [f"k{i}" for i in range(start, start + n)]


def segments(cache):
    return sorted(p.name for p in cache.dir.glob("seg-*.npy"))


def test_checkpoints_write_only_new_rows_and_reload(tmp_path):
    c = EmbeddingCache(tmp_path, IDENT, 4)
    c.add(keys(3), vecs(3), [1, 2, 3])
    c.save()
    c.add(keys(2, 3), vecs(2, 3), [4, 5])
    c.add(keys(2, 3), vecs(2, 3), [4, 5])  # already there: ignored
    c.save()
    c.save()  # nothing new: no empty segment
    shapes = [np.load(c.dir / n).shape for n in segments(c)]
    assert shapes == [(3, 4), (2, 4)]
    again = EmbeddingCache(tmp_path, IDENT, 4)
    assert len(again.index) == 5 and again.saved_rows == 5
    vec, tok = again.get("k4")
    assert vec.tolist() == vecs(1, 4)[0].tolist() and tok == 5
    assert EmbeddingCache(tmp_path, {"model": "other", "dim": 4}, 4).get("k0") is None  # another identity


def test_compaction_past_the_segment_limit_and_after_prune(tmp_path, monkeypatch):
    monkeypatch.setattr(EmbeddingCache, "MAX_SEGMENTS", 3)
    c = EmbeddingCache(tmp_path, IDENT, 4)
    for i in range(5):
        c.add(keys(1, i), vecs(1, i), [i])
        c.save()
        assert len(segments(c)) <= 3
    again = EmbeddingCache(tmp_path, IDENT, 4)
    assert [again.get(k)[1] for k in keys(5)] == [0, 1, 2, 3, 4]
    # prune keeps the used rows and rewrites the cache as one segment
    big = EmbeddingCache(tmp_path / "big", IDENT, 4)
    big.add(keys(3000), vecs(3000), list(range(3000)))
    big.save()
    assert big.prune(set(keys(10)))
    big.save()
    assert len(segments(big)) == 1
    reread = EmbeddingCache(tmp_path / "big", IDENT, 4)
    assert len(reread.index) == 10 and reread.get("k9")[0].tolist() == vecs(1, 9)[0].tolist()


def test_crash_between_compaction_and_cleanup_reads_each_row_once(tmp_path):
    c = EmbeddingCache(tmp_path, IDENT, 4)
    c.add(keys(2), vecs(2), [1, 2])
    c.save()
    old = {p.name: p.read_bytes() for p in c.dir.iterdir()}
    c.add(keys(1, 2), vecs(1, 2), [3])
    c._saved = -1  # force a compaction, then put the old segment back as if the cleanup never ran
    c.save()
    for name, data in old.items():
        (c.dir / name).write_bytes(data)
    again = EmbeddingCache(tmp_path, IDENT, 4)
    assert len(again.index) == 3 and again.vectors.shape == (3, 4)
    assert again.get("k1")[0].tolist() == vecs(1, 1)[0].tolist()


def test_unreadable_segment_costs_only_its_rows(tmp_path):
    c = EmbeddingCache(tmp_path, IDENT, 4)
    c.add(keys(2), vecs(2), [1, 2])
    c.save()
    c.add(keys(2, 2), vecs(2, 2), [3, 4])
    c.save()
    first, second = sorted(c.dir.glob("seg-*.json"))
    second.write_text("{not json", encoding="utf-8")
    again = EmbeddingCache(tmp_path, IDENT, 4)
    assert sorted(again.index) == ["k0", "k1"]


def test_layout_of_earlier_releases_is_read_then_replaced(tmp_path):
    d = tmp_path / EmbeddingCache(tmp_path, IDENT, 4).dir.name
    d.mkdir()
    np.save(d / "vectors-1.npy", vecs(2))
    (d / "keys.json").write_text(json.dumps({"identity": IDENT, "file": "vectors-1.npy", "keys": keys(2),
                                             "tokens": [7, 8]}), encoding="utf-8")
    c = EmbeddingCache(tmp_path, IDENT, 4)
    assert c.get("k1")[1] == 8
    c._saved = -1
    c.save()
    assert not (d / "keys.json").exists() and not (d / "vectors-1.npy").exists()
    assert EmbeddingCache(tmp_path, IDENT, 4).get("k1")[1] == 8


class CountingEmbedder:
    dim, max_tokens, truncates = 4, 512, True

    def __init__(self):
        self.seen = 0

    def encode_passages(self, texts):
        self.seen += len(texts)
        return np.stack([np.array([len(t), 1, 0, 0], np.float32) / np.hypot(len(t), 1) for t in texts])

    def count_tokens(self, text):
        return len(text)

    def identity(self):
        return {"model": "counting", "dim": 4}


def test_embedding_checkpoints_are_geometric_and_a_rerun_embeds_nothing(tmp_path, monkeypatch):
    saves = []
    real = EmbeddingCache.save
    monkeypatch.setattr(EmbeddingCache, "save", lambda self, *a: saves.append(len(self.index)) or real(self, *a))
    chunks = [Chunk(chunk_id=f"c{i}", doc_id="d", text=f"text {i}", start=0, end=1, source="s", path="p",
                    lang="en", section=0) for i in range(5000)]
    emb = CountingEmbedder()
    quiet = lambda name, total: lambda n: None  # noqa: E731
    vectors.embed_chunks(chunks, emb, tmp_path, 16, quiet, tmp_path / "a.npy", np.float32)
    assert emb.seen == 5000
    # 256, then a quarter of what is saved each time: a few checkpoints, not 5000 / 256
    assert 5 <= len(saves) <= 12, saves
    emb2 = CountingEmbedder()
    out = vectors.embed_chunks(chunks, emb2, tmp_path, 16, quiet, tmp_path / "b.npy", np.float16)
    assert emb2.seen == 0 and out.embedded == 0 and out.tokens[7] == len("text 7")
    first, again = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
    assert first.shape == again.shape == (5000, 4) and again.dtype == np.float16
    np.testing.assert_allclose(again, first, atol=1e-3)
    # row order is chunk order, whatever order the cache holds them in
    np.testing.assert_allclose(first[7], emb.encode_passages(["text 7"])[0], rtol=1e-6)
    np.testing.assert_allclose(out.mean, first.mean(axis=0, dtype=np.float64), rtol=1e-6)


def test_token_cache_holds_joined_tokens_and_reads_the_list_format(tmp_path):
    import json

    from hanrag.index.cache import SEP, TokenCache, iter_tokens

    class Splitter:
        calls = 0

        def tokenize(self, text, lang):
            Splitter.calls += 1
            return text.split()

    old = {"en:old": ["written", "as", "a", "list"]}
    (tmp_path / "tokens-x.json").write_text(json.dumps(old))
    cache = TokenCache(tmp_path, "x")
    assert cache.get("en:old") == ["written", "as", "a", "list"]
    cache.put("en:odd", ["a" + SEP + "b", "c"])  # would not survive joining: kept as a list
    cache.put("en:one-empty", [""])
    cache.put("en:none", [])
    assert cache.get("en:odd") == ["a" + SEP + "b", "c"] and cache.get("en:one-empty") == [""]
    assert cache.get("en:none") == []
    texts = [f"t{i} common words" for i in range(10)]
    parts = list(iter_tokens(cache, Splitter(), texts, ["en"] * 10, batch=3))
    assert [len(p) for p in parts] == [3, 3, 3, 1] and parts[1][0] == ["t3", "common", "words"]
    assert Splitter.calls == 10
    saved = json.loads((tmp_path / "tokens-x.json").read_text())
    assert len(saved) == 10 and all(isinstance(v, str) for v in saved.values())  # only the texts asked for
    again = TokenCache(tmp_path, "x")
    assert [t for p in iter_tokens(again, Splitter(), texts, ["en"] * 10) for t in p] == [t.split() for t in texts]
    assert Splitter.calls == 10  # every text came from the cache


def test_saved_segments_are_memory_mapped_and_rows_are_taken_across_blocks(tmp_path):
    cache = EmbeddingCache(tmp_path, IDENT, 4)
    rng = np.random.default_rng(0)
    first, second = rng.normal(size=(5, 4)).astype(np.float32), rng.normal(size=(3, 4)).astype(np.float32)
    cache.add([f"a{i}" for i in range(5)], first, [1] * 5)
    cache.save()
    cache.add([f"b{i}" for i in range(3)], second, [2] * 3)
    cache.save()
    assert all(isinstance(b, np.memmap) for b in cache._blocks)  # saved rows leave memory
    again = EmbeddingCache(tmp_path, IDENT, 4)
    assert len(again._blocks) == 2 and all(isinstance(b, np.memmap) for b in again._blocks)  # nothing read yet
    rows = np.array([6, 0, 4, 5, 2])
    expect = np.concatenate([first, second])[rows]
    np.testing.assert_array_equal(again.take(rows), expect)
    assert len(again._blocks) == 2  # taking rows joined nothing
    np.testing.assert_array_equal(again.get("b1")[0], second[1])
    assert again.take(np.zeros(0, np.int64)).shape == (0, 4)


def test_npy_rows_reads_slices_like_the_array(tmp_path):
    x = np.arange(70 * 4, dtype=np.float16).reshape(70, 4)
    np.save(tmp_path / "m.npy", x)
    rows = vectors.NpyRows(tmp_path / "m.npy")
    assert rows.shape == (70, 4) and rows.ndim == 2
    for s in (slice(0, 10), slice(65, 200), slice(70, 80), slice(3, 4)):
        np.testing.assert_array_equal(rows[s], x[s])


def test_npy_headers_are_read_safely_from_many_threads(tmp_path):
    """load_npy from many threads at once. The failure it guards against (CPython 3.11's AST constructor, which
    NumPy's header parser uses, raising SystemError when two threads parse together) was seen once, in
    test_build.py's concurrent reader under load, and could not be reproduced on demand: this is a smoke test."""
    import threading

    from hanrag.fsutil import load_npy

    for i in range(4):
        np.save(tmp_path / f"a{i}.npy", np.full((3, 2), i, np.float32))
    errors = []

    def reader(i):
        try:
            for _ in range(300):
                assert load_npy(tmp_path / f"a{i % 4}.npy", "r")[0, 0] == i % 4
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:1]
