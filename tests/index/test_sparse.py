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
