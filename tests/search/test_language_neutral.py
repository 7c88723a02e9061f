"""The language-neutral query vector (search.language_neutral_query): the directions that separate the corpus's
languages leave the query before any dense step, so a passage no longer scores for sharing the query's language."""

from __future__ import annotations

import numpy as np
import pytest

from hanrag.backends.memory import MemoryBackend
from hanrag.config import Config
from hanrag.records import Chunk
from hanrag.search.evidence import AXIS_MIN_CHUNKS, Evidence, language_axes, neutral_query
from hanrag.search.searcher import Searcher


def unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_axes_span_every_difference_of_language_means():
    rng = np.random.default_rng(0)
    means = {g: rng.normal(size=16) for g in ("en", "ko", "zh")}
    axes = language_axes(means)
    assert axes.shape == (2, 16)
    assert np.allclose(axes @ axes.T, np.eye(2), atol=1e-9)
    for a in means.values():
        for b in means.values():
            d = a - b
            assert np.allclose(axes.T @ (axes @ d), d, atol=1e-9)  # the difference lies in their span


def test_no_axis_for_one_language_or_identical_means():
    v = np.arange(8.0)
    assert language_axes({"ko": v}).shape == (0, 8)
    assert language_axes({}).shape[0] == 0
    assert language_axes({"ko": v, "en": v.copy()}).shape == (0, 8)
    q = unit(np.arange(1.0, 9.0))
    assert np.array_equal(neutral_query(q, language_axes({"ko": v})), q)


def test_neutral_query_is_unit_orthogonal_and_sees_one_background():
    rng = np.random.default_rng(1)
    means = {g: rng.normal(size=32) for g in ("en", "ko", "zh")}
    axes = language_axes(means)
    q = unit(rng.normal(size=32)).astype(np.float32)
    n = neutral_query(q, axes)
    assert n.dtype == np.float32
    assert np.linalg.norm(n) == pytest.approx(1.0, abs=1e-6)
    assert np.allclose(axes @ n, 0.0, atol=1e-6)
    backgrounds = [float(n @ m) for m in means.values()]  # the calibrated fusion's background, per language
    assert max(backgrounds) - min(backgrounds) == pytest.approx(0.0, abs=1e-5)
    assert float(q @ means["ko"]) != pytest.approx(float(q @ means["en"]), abs=1e-3)  # and it was not before


def test_a_query_along_the_axes_alone_is_left_as_it_is():
    axes = np.eye(4)[:1]
    q = np.array([1.0, 0.0, 0.0, 0.0])
    assert np.array_equal(neutral_query(q, axes), q)  # nothing left to point anywhere: keep the vector


# Two languages told apart along e0, four topics on e1..e4: Korean pages about topics A and B, English pages about C
# and D. A Korean question about C shares the language direction with the Korean pages, which outscore the English
# page about C on the raw cosine; without the language axes the English answer wins.
DIM = 6
E0, A, B, C, D = (np.eye(DIM)[i] for i in range(5))
PAGES = [
    ("ko-a", "ko", "에이 주제의 한국어 문서", 0.6 * E0 + 0.8 * A),
    ("ko-b", "ko", "비 주제의 한국어 문서", 0.6 * E0 + 0.8 * B),
    ("en-c", "en", "an English page about topic C", -0.6 * E0 + 0.8 * C),
    ("en-d", "en", "an English page about topic D", -0.6 * E0 + 0.8 * D),
]
KO_QUERY_ABOUT_C = unit(0.6 * E0 + 0.8 * C)


@pytest.fixture(scope="module")
def analyzer():
    from hanrag.text import get_analyzer

    return get_analyzer(Config())


def backend(analyzer, counts: dict[str, int]) -> MemoryBackend:
    chunks = [Chunk(chunk_id=cid, doc_id=cid, text=text, start=0, end=len(text), source=cid, path=cid, lang=lang)
              for cid, lang, text, _ in PAGES]
    tokens = analyzer.tokenize_many([c.text for c in chunks], [c.lang for c in chunks])
    vectors = np.stack([unit(v) for *_, v in PAGES]).astype(np.float32)
    return MemoryBackend(chunks, tokens, vectors, manifest={"langs": counts})


def dense_top(analyzer, neutral: bool, counts: dict[str, int]) -> tuple[str, np.ndarray]:
    cfg = Config()
    cfg.search.language_neutral_query = neutral
    s = Searcher(backend(analyzer, counts), cfg, embedder=None, analyzer=analyzer)
    res = s.run("씨 주제는 무엇인가", top_k=4, mode="dense", qvec=KO_QUERY_ABOUT_C.astype(np.float32))
    cand, _ = s.fused_candidates("씨 주제는 무엇인가", 4, "dense", qvec=KO_QUERY_ABOUT_C.astype(np.float32))
    return res.hits[0].chunk.chunk_id, np.asarray(cand.qvec)


def test_the_other_language_answer_wins_once_the_language_axis_is_gone(analyzer):
    many = {"ko": AXIS_MIN_CHUNKS, "en": AXIS_MIN_CHUNKS}
    top_raw, q_raw = dense_top(analyzer, False, many)
    top_neutral, q_neutral = dense_top(analyzer, True, many)
    assert top_raw == "ko-a"  # raw cosine: .36 against the English answer's .28
    assert top_neutral == "en-c"
    assert np.array_equal(q_raw, KO_QUERY_ABOUT_C.astype(np.float32))
    axes = Evidence(backend(analyzer, many), analyzer).language_axes()
    assert axes.shape == (1, DIM) and np.allclose(axes @ q_neutral, 0.0, atol=1e-6)


def test_a_language_of_few_chunks_shapes_no_axis(analyzer):
    """A few English chunks in a Korean wiki: their mean is more one page's topic than a language's place."""
    few = {"ko": AXIS_MIN_CHUNKS, "en": AXIS_MIN_CHUNKS - 1}
    assert Evidence(backend(analyzer, few), analyzer).language_axes().shape[0] == 0
    top, q = dense_top(analyzer, True, few)
    assert top == "ko-a" and np.array_equal(q, KO_QUERY_ABOUT_C.astype(np.float32))


def test_eval_has_the_language_neutral_rows():
    """`hanrag eval` and benchmarks/quality.py show the channel as ablation rows, from the user's config."""
    from hanrag.eval import ablation_configs

    rows = ablation_configs(Config())
    mode, cfg = rows["dense, language-neutral query"]
    assert mode == "dense" and cfg.search.language_neutral_query
    mode, cfg = rows["language-neutral query"]
    assert mode == "hybrid" and cfg.search.language_neutral_query and cfg.search.xling_calibration == "none"
    assert not rows["hanrag default"][1].search.language_neutral_query


def test_a_manifest_without_usable_means_or_counts_gives_no_axis(analyzer):
    """An index built before the manifest carried per-language means, or a hand-edited one: the query stays as it
    is, and the search runs."""
    for manifest in ({"dense_mean_by_lang": None}, {"langs": "ko,en"}, {"langs": {"ko": "many", "en": 100}},
                     {"dense_mean_by_lang": {"ko": "x", "en": [0.0] * DIM}}):
        b = backend(analyzer, {"ko": AXIS_MIN_CHUNKS, "en": AXIS_MIN_CHUNKS})
        b._manifest.update(manifest)
        assert Evidence(b, analyzer).language_axes().shape[0] == 0, manifest
        cfg = Config()
        cfg.search.language_neutral_query = True
        hits = Searcher(b, cfg, embedder=None, analyzer=analyzer).run(
            "씨 주제", top_k=2, mode="dense", qvec=KO_QUERY_ABOUT_C.astype(np.float32)).hits
        assert len(hits) == 2


def test_the_plan_says_how_many_language_axes_the_query_left_out(analyzer):
    """Every score explained: the plan (and so --explain, the server's plan and the inspector) carries it."""
    many = {"ko": AXIS_MIN_CHUNKS, "en": AXIS_MIN_CHUNKS}
    for neutral, mode, expected in ((True, "dense", 1), (True, "hybrid", 1), (False, "hybrid", None),
                                    (True, "bm25", None)):
        cfg = Config()
        cfg.search.language_neutral_query = neutral
        s = Searcher(backend(analyzer, many), cfg, embedder=None, analyzer=analyzer)
        plan = s.run("씨 주제는 무엇인가", top_k=2, mode=mode, qvec=KO_QUERY_ABOUT_C.astype(np.float32)).plan
        assert plan.language_axes == expected, (neutral, mode)
    one = Searcher(backend(analyzer, {"ko": AXIS_MIN_CHUNKS, "en": 1}), cfg_on(), embedder=None, analyzer=analyzer)
    assert one.run("씨 주제", top_k=2, mode="dense", qvec=KO_QUERY_ABOUT_C.astype(np.float32)).plan.language_axes == 0


def cfg_on() -> Config:
    cfg = Config()
    cfg.search.language_neutral_query = True
    return cfg


def test_explain_prints_the_language_axes(analyzer):
    import io

    from rich.console import Console

    from hanrag.commands.search import render_hits

    s = Searcher(backend(analyzer, {"ko": AXIS_MIN_CHUNKS, "en": AXIS_MIN_CHUNKS}), cfg_on(), embedder=None,
                 analyzer=analyzer)
    res = s.run("씨 주제", top_k=2, mode="dense", qvec=KO_QUERY_ABOUT_C.astype(np.float32), explain=True)
    buf = io.StringIO()
    render_hits(res.plan, res.hits, True, Console(file=buf, width=200))
    assert "the query vector without 1 language axes" in buf.getvalue()
