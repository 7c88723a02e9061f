import numpy as np
import pytest

from hanrag.config import Bm25Config
from hanrag.index.sparse import SparseIndex, bm25_idf, bm25_tf_part

DOCS = [["a", "b", "a"], [], ["d", "b"], ["c", "a", "e", "e"]]


def test_scores_match_pure_functions():
    cfg = Bm25Config(k1=1.2, b=0.6)
    ix = SparseIndex.build(DOCS, cfg)
    avg = sum(map(len, DOCS)) / len(DOCS)
    for tok in ["a", "b", "e"]:
        df = sum(tok in d for d in DOCS)
        expect = [
            bm25_idf(df, len(DOCS)) * bm25_tf_part(d.count(tok), len(d), avg, cfg.k1, cfg.b) if tok in d else 0.0
            for d in DOCS
        ]
        np.testing.assert_allclose(ix.scores({tok: 1.0}), expect, rtol=1e-5)


def test_weighted_sum_and_unknown_tokens():
    ix = SparseIndex.build(DOCS, Bm25Config())
    combined = ix.scores({"a": 1.0, "b": 0.5, "zzz": 3.0})
    np.testing.assert_allclose(combined, ix.scores({"a": 1.0}) + 0.5 * ix.scores({"b": 1.0}), rtol=1e-6)
    assert ix.n_docs == 4


def test_top_k_and_mask():
    ix = SparseIndex.build(DOCS, Bm25Config())
    idx, sc = ix.top_k({"a": 1.0}, 10)
    assert set(idx.tolist()) == {0, 3} and sc[0] >= sc[1] > 0  # zero-score docs are not hits
    mask = np.array([False, True, True, True])
    idx, _ = ix.top_k({"a": 1.0}, 10, mask=mask)
    assert idx.tolist() == [3]
    idx, _ = ix.top_k({"a": 1.0, "b": 1.0, "c": 1.0}, 1)
    assert len(idx) == 1
    with pytest.raises(ValueError, match="mask"):
        ix.top_k({"a": 1.0}, 3, mask=np.ones(2, bool))


def test_save_load_roundtrip_without_pickle(tmp_path):
    ix = SparseIndex.build(DOCS, Bm25Config())
    names = ix.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)
    assert all(n.endswith((".npy", ".json")) for n in names)
    for mmap in (True, False):
        back = SparseIndex.load(tmp_path, mmap=mmap)
        np.testing.assert_array_equal(back.scores({"a": 1, "e": 0.5}), ix.scores({"a": 1, "e": 0.5}))
    for n in names:
        if n.endswith(".npy"):
            np.load(tmp_path / n, allow_pickle=False)  # would raise on an object array
    assert back.doc_term_weights(3).keys() == {"c", "a", "e"}


def test_load_incomplete_index_names_the_file(tmp_path):
    SparseIndex.build(DOCS, Bm25Config()).save(tmp_path)
    (tmp_path / "bm25_indptr.npy").unlink()
    with pytest.raises(FileNotFoundError, match="bm25_indptr.npy"):
        SparseIndex.load(tmp_path)


def test_empty_corpus():
    ix = SparseIndex.build([], Bm25Config())
    assert ix.n_docs == 0 and ix.top_k({"a": 1.0}, 5)[0].size == 0


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire"])
def test_pure_functions_match_bm25s_for_every_method(method):
    """bm25_idf · bm25_tf_part (what the Milvus backend stores) equals bm25s' matrix, common tokens included:
    "a" is in 3 of 5 documents, where robertson's raw idf is negative and bm25s clamps it at 0."""
    docs = [*DOCS, ["a", "d"]]
    cfg = Bm25Config(method=method)
    ix = SparseIndex.build(docs, cfg)
    avg = sum(map(len, docs)) / len(docs)
    for tok in ("a", "b", "e"):
        df = sum(tok in d for d in docs)
        want = [
            bm25_idf(df, len(docs), method) * bm25_tf_part(d.count(tok), len(d), avg, cfg.k1, cfg.b, method)
            if tok in d else 0.0
            for d in docs
        ]
        np.testing.assert_allclose(ix.scores({tok: 1.0}), want, rtol=1e-5, atol=1e-7)
    assert bm25_idf(3, 5, "robertson") == 0.0


def test_row_scores_equal_full_scores_for_any_rows(tmp_path):
    rng = np.random.default_rng(3)
    vocab = [f"t{i}" for i in range(40)]
    docs = [[vocab[j] for j in rng.integers(0, 40, rng.integers(1, 30))] for _ in range(300)]
    idx = SparseIndex.build(docs, Bm25Config())
    assert idx.rows_sorted
    idx.save(tmp_path)
    loaded = SparseIndex.load(tmp_path)
    weights = {"t1": 1.0, "t7": 0.5, "t39": 2.0, "absent": 1.0}
    rows = np.array([299, 0, 17, 17, 150, 3])
    for index in (idx, loaded):
        assert loaded.rows_sorted
        np.testing.assert_allclose(index.row_scores(weights, rows), index.scores(weights)[rows], rtol=1e-6)
    assert index.row_scores(weights, np.zeros(0, np.int64)).shape == (0,)


def test_index_written_before_rows_were_sorted_still_scores_rows(tmp_path):
    import json

    idx = SparseIndex.build([["a", "b"], ["b"], ["a", "c"]], Bm25Config())
    idx.save(tmp_path)
    meta = json.loads((tmp_path / "bm25_meta.json").read_text())
    del meta["rows_sorted"]
    (tmp_path / "bm25_meta.json").write_text(json.dumps(meta))
    old = SparseIndex.load(tmp_path)
    assert not old.rows_sorted
    np.testing.assert_allclose(old.row_scores({"a": 1.0}, np.array([2, 1])), old.scores({"a": 1.0})[[2, 1]])


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire"])
def test_pruned_top_k_equals_scoring_every_column(monkeypatch, method):
    """MaxScore pruning (large indexes) returns the same rows and scores as the full pass."""
    import hanrag.index.sparse as sparse

    rng = np.random.default_rng(11)
    vocab = [f"w{i}" for i in range(300)]
    p = 1.0 / np.arange(1, 301)  # Zipf: a few tokens in most documents, most tokens rare
    p /= p.sum()
    docs = [list(rng.choice(vocab, size=int(rng.integers(3, 40)), p=p)) for _ in range(3000)]
    idx = SparseIndex.build(docs, Bm25Config(method=method))
    mask = rng.random(3000) > 0.3
    queries = [{"w0": 1.0, "w1": 1.0, "w250": 1.0}, {"w0": 1.0, "w3": 0.5, "w120": 2.0, "w299": 1.0},
               {"w0": 1.0, "w1": 1.0, "w2": 1.0}, {"w5": 1.0, "absent": 1.0}]
    expected = {}
    for i, q in enumerate(queries):
        for k in (1, 10, 50):
            for m in (None, mask):
                expected[i, k, m is None] = idx.top_k(q, k, mask=m)
    monkeypatch.setattr(sparse, "PRUNE_MIN_POSTINGS", 50)
    calls = []
    real = SparseIndex._top_k_pruned
    monkeypatch.setattr(SparseIndex, "_top_k_pruned", lambda self, *a: calls.append(1) or real(self, *a))
    for i, q in enumerate(queries):
        for k in (1, 10, 50):
            for m in (None, mask):
                rows, scores = idx.top_k(q, k, mask=m)
                want_rows, want_scores = expected[i, k, m is None]
                assert rows.tolist() == want_rows.tolist(), (q, k)
                np.testing.assert_allclose(scores, want_scores, rtol=1e-5)
    assert calls  # the pruned path ran


@pytest.mark.parametrize("method", ["lucene", "robertson", "atire"])
def test_build_matches_bm25s(method):
    """The batch-by-batch builder gives bm25s' own score matrix (same vocabulary order, columns, scores)."""
    import random

    import bm25s

    import hanrag.index.sparse as sparse_mod

    rng = random.Random(3)
    words = [f"w{i}" for i in range(300)]
    docs = [[rng.choice(words[: rng.randint(5, 300)]) for _ in range(rng.randint(0, 40))] for _ in range(500)]
    cfg = Bm25Config(k1=1.3, b=0.7, method=method)
    ours = SparseIndex.build(docs, cfg)
    small = sparse_mod.BUILD_BATCH
    try:
        sparse_mod.BUILD_BATCH = 37  # many batches: rows and vocabulary carry over between them
        batched = SparseIndex.build(iter(docs), cfg)
    finally:
        sparse_mod.BUILD_BATCH = small
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in d] for d in docs]
    ref = bm25s.BM25(k1=cfg.k1, b=cfg.b, method=method)
    ref.index((ids, vocab), create_empty_token=False, show_progress=False)
    s = ref.scores
    for index in (ours, batched):
        assert index.vocab == list(vocab) and index.rows_sorted
        np.testing.assert_array_equal(index.indptr, np.asarray(s["indptr"]))
        order = np.lexsort((np.asarray(s["indices"]), np.repeat(np.arange(len(vocab)), np.diff(s["indptr"]))))
        np.testing.assert_array_equal(index.indices, np.asarray(s["indices"])[order])
        np.testing.assert_allclose(index.data, np.asarray(s["data"])[order], rtol=2e-6)
        np.testing.assert_array_equal(index.doc_lens, [len(d) for d in docs])
