"""The machine-wide embedding cache: a second run embeds nothing and returns the same vectors."""

from __future__ import annotations

import numpy as np
import pytest

from hanrag.config import Config
from hanrag.embed import load_embedder
from hanrag.embed_cache import CachingEmbedder


@pytest.fixture(scope="module")
def inner():
    return load_embedder(Config().embedder)


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


def test_an_unreadable_shard_is_only_a_miss(tmp_path, inner):
    cache = CachingEmbedder(inner, tmp_path)
    cache.encode_passages(["한 문장"])
    cache.save()
    for meta in cache.dir.glob("*.json"):
        meta.write_text("{not json", encoding="utf-8")
    again = CachingEmbedder(inner, tmp_path)
    again.encode_passages(["한 문장"])
    assert again.embedded == 1
