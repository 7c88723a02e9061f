"""Near-duplicate marking: blocked products, other documents only, better tier then earlier document kept."""

from __future__ import annotations

import numpy as np

from hanrag.index.dedup import mark_duplicates
from hanrag.records import Chunk


def _chunk(i: int, doc: str, tier: int = 0) -> Chunk:
    return Chunk(chunk_id=f"c{i}", doc_id=doc, text=f"t{i}", start=0, end=1, source=f"src-{doc}", tier=tier)


def _unit(rng, n, d=16):
    v = rng.normal(size=(n, d)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def test_duplicate_of_other_document_marked_and_same_document_not():
    rng = np.random.default_rng(0)
    base = _unit(rng, 4)
    emb = np.vstack([base, base[0:1], base[1:2]])  # row 4 copies row 0 (other doc), row 5 copies row 1 (same doc)
    chunks = [_chunk(0, "a"), _chunk(1, "b"), _chunk(2, "c"), _chunk(3, "d"), _chunk(4, "e"), _chunk(5, "b")]
    res = mark_duplicates(chunks, emb, 0.95, block=2)
    assert res.dup_of.tolist() == [-1, -1, -1, -1, 0, -1]
    assert res.duplicates == 1 and res.groups == 1


def test_better_tier_is_kept_even_when_later():
    rng = np.random.default_rng(1)
    v = _unit(rng, 1)
    emb = np.vstack([v, v, v])
    chunks = [_chunk(0, "a", tier=2), _chunk(1, "b", tier=0), _chunk(2, "c", tier=2)]
    res = mark_duplicates(chunks, emb, 0.95)
    assert res.dup_of.tolist() == [1, -1, 1]  # tier 0 kept; both tier-2 copies fold into it
    assert res.groups == 1 and res.duplicates == 2


def test_threshold_respected_and_blocks_agree():
    rng = np.random.default_rng(2)
    base = _unit(rng, 50, d=32)
    noise = _unit(rng, 50, d=32)
    near = base + 0.1 * noise  # cosine ~0.995
    far = base + 1.5 * noise  # cosine well below .95
    emb = np.vstack([base, near / np.linalg.norm(near, axis=1, keepdims=True),
                     far / np.linalg.norm(far, axis=1, keepdims=True)]).astype(np.float32)
    chunks = [_chunk(i, f"d{i}") for i in range(150)]
    a = mark_duplicates(chunks, emb, 0.95, block=7)
    b = mark_duplicates(chunks, emb, 0.95, block=1024)
    assert np.array_equal(a.dup_of, b.dup_of)
    assert a.dup_of[50:100].tolist() == list(range(50))
    assert (a.dup_of[100:] == -1).all() and (a.dup_of[:50] == -1).all()


def test_chain_points_to_kept_copy():
    v = np.array([[1.0, 0.0]], np.float32)
    emb = np.vstack([v, v, v])
    res = mark_duplicates([_chunk(0, "a"), _chunk(1, "b"), _chunk(2, "c")], emb, 0.95)
    assert res.dup_of.tolist() == [-1, 0, 0]
