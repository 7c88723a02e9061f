"""``embedder.cross_lingual_weight``: the main encoder and USE multilingual v3 as one blended vector."""

from __future__ import annotations

import numpy as np
import pytest

from hanrag.api import Index
from hanrag.config import Config, ConfigError, EmbedderConfig, load_config
from hanrag.doctor import diagnose
from hanrag.embed import EmbedderMismatchError, check_embedder, load_embedder
from hanrag.embed.blend import BlendedEmbedder
from hanrag.embed.cache import build_embedder
from hanrag.pipeline import build_from_documents
from hanrag.records import Document
from hanrag.search.ranker import FEATURES

QUESTIONS = ["배포를 이전 버전으로 되돌리는 방법", "파드가 계속 재시작될 때 원인 찾기"]
# each question's answer is in English; a Korean page on a neighbouring topic follows it
PASSAGES = ["To roll back a deployment to its previous revision, run kubectl rollout undo deployment/nginx.",
            "배포 후에는 모니터링 대시보드에서 응답 시간과 오류율을 확인한다.",
            "If a pod keeps restarting, read its logs with kubectl logs --previous and check the exit code.",
            "파드를 만들 때는 매니페스트에 컨테이너 이미지와 포트를 적는다."]
ANSWER = {0: 0, 1: 2}
NEIGHBOUR = {0: 1, 1: 3}


@pytest.fixture(scope="module")
def blend() -> BlendedEmbedder:
    embedder = load_embedder(EmbedderConfig(cross_lingual_weight=0.5))
    assert isinstance(embedder, BlendedEmbedder)
    return embedder


def _cosines(model, questions=QUESTIONS) -> np.ndarray:
    return model.encode_queries(questions) @ model.encode_passages(PASSAGES).T


def test_the_blended_cosine_is_the_weighted_sum_of_the_two(blend) -> None:
    q, p = blend.encode_queries(QUESTIONS), blend.encode_passages(PASSAGES)
    assert q.shape == (2, 384 + 512) and p.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-5)
    expected = (_cosines(blend.primary) + 0.5 * _cosines(blend.secondary)) / 1.5
    np.testing.assert_allclose(q @ p.T, expected, atol=1e-5)


def test_the_second_encoder_finds_the_answer_in_the_other_language(blend) -> None:
    main, second, both = _cosines(blend.primary), _cosines(blend.secondary), _cosines(blend)
    for i in range(len(QUESTIONS)):
        # why the blend exists: the main encoder prefers the Korean page on a neighbouring topic
        assert main[i, NEIGHBOUR[i]] > main[i, ANSWER[i]]
        assert second[i].argmax() == ANSWER[i]
    assert both[0].argmax() == ANSWER[0]


def test_the_identity_names_the_weight_and_an_index_refuses_another(blend) -> None:
    ident = blend.identity()
    assert ident["dim"] == 896 and ident["blend"].startswith("universal-sentence-encoder-multilingual-3:")
    assert ident["blend"].endswith("@0.5")
    manifest = {"embedder": {"identity": ident}}
    check_embedder(manifest, blend)
    for other in (load_embedder(EmbedderConfig(cross_lingual_weight=0.2)), blend.primary):
        with pytest.raises(EmbedderMismatchError, match="blend"):
            check_embedder(manifest, other)
    # an index built without the second encoder (before it was the default) names the setting that searches it
    with pytest.raises(EmbedderMismatchError, match=r"built with embedder.cross_lingual_weight = 0\)"):
        check_embedder({"embedder": {"identity": blend.primary.identity()}}, blend)


def test_each_encoder_is_cached_apart(tmp_path) -> None:
    first = build_embedder(EmbedderConfig(cross_lingual_weight=0.2, cache_dir=str(tmp_path)))
    first.encode_passages(PASSAGES)
    assert first.missing(PASSAGES) == []
    first.save()
    # another weight, and the main encoder alone, find every vector they need in the cache
    again = build_embedder(EmbedderConfig(cross_lingual_weight=0.7, cache_dir=str(tmp_path)))
    assert again.missing(PASSAGES) == []
    vectors = again.encode_passages(PASSAGES)
    assert again.embedded == 0 and vectors.shape == (4, 896)
    alone = build_embedder(EmbedderConfig(cache_dir=str(tmp_path)))
    alone.encode_passages(PASSAGES)
    assert alone.embedded == 0


@pytest.mark.parametrize("value", ["-0.1", "11", '"high"'])
def test_a_bad_weight_is_refused_naming_the_key(tmp_path, value) -> None:
    path = tmp_path / "hanrag.toml"
    path.write_text(f"[embedder]\ncross_lingual_weight = {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="cross_lingual_weight"):
        load_config(path)


def _index(tmp_path, weight: float) -> Index:
    cfg = Config()
    cfg.embedder.cross_lingual_weight = weight
    cfg.embedder.cache_dir = str(tmp_path / "cache")
    cfg.search.ranker = ""  # the dense channel is under test, not the bundled trees
    docs = [Document(doc_id=f"p{i}", path=f"p{i}.md", title="", text=t, sources=(f"https://example.org/{i}",))
            for i, t in enumerate(PASSAGES)]
    build_from_documents(docs, tmp_path / "index", cfg, progress=False)
    return Index(tmp_path / "index", cfg)


def test_an_index_built_with_the_blend_finds_the_english_answer_to_a_korean_question(tmp_path) -> None:
    index = _index(tmp_path, 1.0)
    assert index.snapshot.manifest["embedder"]["identity"]["blend"].endswith("@1")
    hits = index.search(QUESTIONS[0], top_k=4, mode="dense")
    assert hits[0].chunk.doc_id == "p0"
    problems = diagnose(tmp_path / "index", index.config)
    assert not [p for p in problems if p.severity == "error"], problems


@pytest.mark.parametrize("weight", [0.0, 0.3])
def test_the_ranker_reads_the_second_encoders_cosine_from_the_index(tmp_path, weight) -> None:
    index = _index(tmp_path, weight)
    searcher = index.searcher
    cand, fused = searcher.fused_candidates(QUESTIONS[0])
    gap = searcher.ranking_features(cand, fused)[:, FEATURES.index("second_gap")]
    if weight == 0:
        assert searcher.second_cosines(cand) is None and not gap.any()
        return
    use = searcher.embedder.secondary
    cosines = use.encode_queries(QUESTIONS[:1])[0] @ use.encode_passages([cand.chunks[c].text for c in cand.ids]).T
    np.testing.assert_allclose(searcher.second_cosines(cand), cosines, atol=1e-4)
    np.testing.assert_allclose(gap, cosines - cosines.max(), atol=1e-4)
    assert gap[[cand.chunks[c].doc_id for c in cand.ids].index("p0")] == 0.0  # the English answer is its best
