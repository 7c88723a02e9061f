"""The search stages hand on frozen records: no field of a stage's output can be assigned, its mappings and arrays
cannot be written, and running the next stages (or a whole search) leaves a record as it was made. Run stage by
stage, the pipeline gives what :meth:`Searcher.run` gives; ``benchmarks/fit.py``'s re-weighting is fusion's own
arithmetic."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping

import numpy as np
import pytest

from hanrag.backends.memory import MemoryBackend
from hanrag.config import Config
from hanrag.records import Chunk
from hanrag.search.candidates import Candidates, Planned, Request
from hanrag.search.fusion import Fused, minmax, reweight
from hanrag.search.hits import make_hits
from hanrag.search.ranking import Ranking, diversify, learned_ranking, rerank
from hanrag.search.rerank import RerankResult
from hanrag.search.searcher import Searcher, StageTimes

DOCS = [
    ("k8s/a", "runbooks/k8s.md", "en", "Restart a kubernetes pod: kubectl delete pod, then wait."),
    ("k8s/b", "runbooks/k8s.md", "en", "Kubernetes node drain moves pods off a node before maintenance."),
    ("saju/a", "saju/ohaeng.md", "ko", "갑목은 양의 나무로 큰 나무를 뜻한다. 오행 중 목에 속한다."),
    ("saju/b", "saju/ohaeng.md", "ko", "을목은 음의 나무로 풀과 덩굴을 뜻한다."),
    ("zh/a", "zh/wuxing.md", "zh", "甲木为阳木，象征参天大树，五行属木。"),
    ("zh/b", "zh/wuxing.md", "zh", "乙木为阴木，象征花草藤蔓。"),
    ("deploy/a", "runbooks/deploy.md", "en", "Roll back a failed deployment with kubectl rollout undo."),
]
# English words over a corpus that says it in Korean and Chinese: weak English evidence, so the cross-lingual stage
# widens the BM25 query (translations), re-plans (weak-lexical) and draws per-language dense pools
QUERY = "big tree of the five elements"


@pytest.fixture(scope="module")
def embedder():
    from hanrag.embed import load_embedder

    return load_embedder(Config().embedder)


@pytest.fixture(scope="module")
def parts(embedder):
    from hanrag.text import get_analyzer

    analyzer = get_analyzer(Config())
    chunks = [Chunk(chunk_id=cid, doc_id=src, text=text, start=0, end=len(text), source=src, path=src, lang=lang)
              for cid, src, lang, text in DOCS]
    tokens = analyzer.tokenize_many([c.text for c in chunks], [c.lang for c in chunks])
    vectors = np.asarray(embedder.encode_passages([c.text for c in chunks]), dtype=np.float32)
    return chunks, tokens, vectors, analyzer


def make(parts, embedder) -> Searcher:
    """The default searcher: the learned ranker's stage runs too."""
    chunks, tokens, vectors, analyzer = parts
    cfg = Config()
    assert cfg.search.ranker == "lambdamart"
    return Searcher(MemoryBackend(chunks, tokens, vectors), cfg, embedder=embedder, analyzer=analyzer)


class ReversedReranker:
    """A stand-in cross-encoder: scores the fused head in reverse (no model needed to exercise the stage)."""

    def rerank(self, query, passages, fused):
        raw = np.arange(len(passages), dtype=np.float64)
        return RerankResult(raw, minmax(raw), 0.0, len(passages), len(passages), 0)


def plain(value):
    """``value`` as plain, comparable data: a record's fields, a mapping's items, an array's exact bytes."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return (type(value).__name__, tuple((f.name, plain(getattr(value, f.name))) for f in dataclasses.fields(value)))
    if isinstance(value, Mapping):
        return ("map", tuple((k, plain(v)) for k, v in value.items()))
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, tuple | list):
        return ("seq", tuple(plain(v) for v in value))
    return value


def stages(s, query: str = QUERY, top_k: int = 3):
    """Every stage of one hybrid search, each run on the record the one before made, with a snapshot of every
    record taken as it was made."""
    times = StageTimes()
    made = {}

    def keep(name, record):
        made[name] = (record, plain(record))
        return record

    request = keep("request", s.request(query, top_k, "hybrid"))
    planned = keep("planned", s.planned(request, times))
    retrieved = keep("retrieved", s.retriever.retrieve(request, planned, times))
    widened = keep("widened", s.widener.widen(request, retrieved, times))
    fused = keep("fused", s.fuse(widened))
    learned = keep("learned", learned_ranking(s.ranker, lambda rows: s.ranking_features(widened, fused, rows),
                                              widened, fused, times))
    reranked = keep("reranked", rerank(ReversedReranker(), 4, request, widened, learned, times))
    diversified = keep("diversified", diversify(widened, reranked, [1.0, 0.5]))
    hits = make_hits(s.backend, s.analyzer, widened, fused, diversified, top_k, True)
    return made, hits


def test_every_stage_output_is_frozen(parts, embedder):
    made, _ = stages(make(parts, embedder))
    types = {"request": Request, "planned": Planned, "retrieved": Candidates, "widened": Candidates,
             "fused": Fused, "learned": Ranking, "reranked": Ranking, "diversified": Ranking}
    for name, (record, _) in made.items():
        assert type(record) is types[name]
        for f in dataclasses.fields(record):
            with pytest.raises(dataclasses.FrozenInstanceError):
                setattr(record, f.name, getattr(record, f.name))
    cand = made["widened"][0]
    for mapping in (cand.weights, cand.bm25, cand.dense, cand.chunks, cand.offsets, made["planned"][0].weights,
                    made["reranked"][0].rerank_raw, made["learned"][0].learned):
        with pytest.raises(TypeError):
            mapping["x"] = 1.0  # type: ignore[index]
    assert isinstance(cand.ids, tuple) and isinstance(made["reranked"][0].order, tuple)
    fused = made["fused"][0]
    for arr in (cand.qvec, fused.bm25_raw, fused.dense_raw, fused.bm25_norm, fused.dense_norm, fused.fused):
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 0.0


def test_a_stage_leaves_the_record_it_read_as_it_was(parts, embedder):
    s = make(parts, embedder)
    made, hits = stages(s)
    s.run(QUERY, top_k=3, explain=True)  # a whole search besides, on the same searcher
    for name, (record, snapshot) in made.items():
        assert plain(record) == snapshot, f"the {name} record changed after it was made"
    retrieved, widened = made["retrieved"][0], made["widened"][0]
    # the cross-lingual stage made new candidates: more BM25 tokens, a new rule, per-language offsets
    assert widened is not retrieved and len(widened.weights) > len(retrieved.weights)
    assert widened.plan.rule != retrieved.plan.rule and widened.plan.lexical_evidence is not None
    assert widened.offsets and not retrieved.offsets and retrieved.plan.lexical_evidence is None
    # the rerank stage records its run in the ranking's plan, not in the candidates'
    assert made["reranked"][0].plan.reranked == 4 and widened.plan.reranked is None
    assert [h.rank for h in hits] == [1, 2, 3]


def test_the_stages_run_one_by_one_give_the_search(parts, embedder):
    s = make(parts, embedder)
    times = StageTimes()
    request = s.request(QUERY, 5, "hybrid")
    cand = s.widener.widen(request, s.retriever.retrieve(request, s.planned(request, times), times), times)
    fused = s.fuse(cand)
    ranking = learned_ranking(s.ranker, lambda rows: s.ranking_features(cand, fused, rows), cand, fused, times)
    assert rerank(None, 30, request, cand, ranking, times) is ranking
    hits = make_hits(s.backend, s.analyzer, cand, fused, ranking, 5, True)
    res = s.run(QUERY, top_k=5, explain=True)
    assert res.plan == ranking.plan == dataclasses.replace(cand.plan, ranker="bundled:lambdamart",
                                                           ranked=min(50, len(cand.ids)))
    assert [(h.chunk.chunk_id, h.score, h.explanation) for h in hits] == \
        [(h.chunk.chunk_id, h.score, h.explanation) for h in res.hits]


def test_reweighting_the_fused_candidates_is_fusion_itself(parts, embedder):
    """``benchmarks/fit.py`` re-applies weights to a search's normalised scores with :func:`reweight`: under the
    plan's own weights that gives the search's fused scores exactly."""
    s = make(parts, embedder)
    for query in (QUERY, "kubernetes pod restart", "갑목 오행"):
        cand, fused = s.fused_candidates(query, 10, "hybrid")
        assert isinstance(cand, Candidates) and fused is not None and fused.ids == cand.ids
        again = reweight(fused.bm25_norm, fused.dense_norm, cand.plan.bm25_weight, cand.plan.dense_weight)
        assert np.array_equal(again, fused.fused)


def test_other_languages_compete_always_when_configured(parts, embedder):
    """search.xling_compete: "weak" lets other languages compete only on weak own-language evidence; "always" for
    every query of a multi-language index, while the rule still follows the evidence."""
    chunks, tokens, vectors, analyzer = parts
    query = "roll back a failed kubernetes deployment with kubectl rollout undo"  # strong English evidence

    def widened(compete: str):
        cfg = Config()
        cfg.search.xling_compete = compete
        s = Searcher(MemoryBackend(chunks, tokens, vectors), cfg, embedder=embedder, analyzer=analyzer)
        made, _ = stages(s, query)
        return made["widened"][0]

    weak, always = widened("weak"), widened("always")
    assert weak.plan.rule == always.plan.rule == "en"
    assert not weak.offsets and set(always.offsets) >= {"ko", "zh"}  # each language's dense pool, centred


def test_a_share_of_the_centring_for_queries_with_strong_own_evidence(parts, embedder):
    """search.xling_compete_share scales the offsets of a query that competes only because of "always"."""
    chunks, tokens, vectors, analyzer = parts
    query = "roll back a failed kubernetes deployment with kubectl rollout undo"

    def offsets(share: float):
        cfg = Config()
        cfg.search.xling_compete, cfg.search.xling_compete_share = "always", share
        s = Searcher(MemoryBackend(chunks, tokens, vectors), cfg, embedder=embedder, analyzer=analyzer)
        return stages(s, query)[0]["widened"][0].offsets

    full, quarter, none = offsets(1.0), offsets(0.25), offsets(0.0)
    assert set(full) == set(quarter) >= {"ko", "zh"} and any(v != 0 for v in full.values())
    assert all(quarter[lang] == pytest.approx(0.25 * full[lang]) for lang in full)
    assert all(v == 0 for v in none.values())


# strong English evidence in the test corpus, and a Korean runbook that writes the same kubectl command
ROLLBACK = "roll back a failed kubernetes deployment with kubectl rollout undo"


def with_korean_runbook(parts, embedder) -> tuple[MemoryBackend, object]:
    """The test corpus and a Korean runbook that matches :data:`ROLLBACK` lexically (kubectl rollout undo, 롤백)."""
    chunks, tokens, vectors, analyzer = parts
    text = "실패한 deployment는 kubectl rollout undo 명령으로 롤백한다."
    extra = Chunk(chunk_id="deploy/ko", doc_id="ko/deploy.md", text=text, start=0, end=len(text),
                  source="ko/deploy.md", path="ko/deploy.md", lang="ko")
    backend = MemoryBackend([*chunks, extra], [*tokens, analyzer.tokenize_many([text], ["ko"])[0]],
                            np.vstack([vectors, embedder.encode_passages([text])]).astype(np.float32))
    return backend, analyzer


def test_a_language_with_lexical_evidence_is_centred_fully(parts, embedder):
    """search.xling_compete_by_evidence: a language whose own passages match the query lexically (here a Korean
    runbook that writes the kubectl command) is centred fully; a language without such evidence keeps the share."""
    backend, analyzer = with_korean_runbook(parts, embedder)

    def widened(by_evidence: bool) -> Candidates:
        cfg = Config()
        cfg.search.xling_compete, cfg.search.xling_compete_share = "always", 0.25
        cfg.search.xling_compete_by_evidence = by_evidence
        s = Searcher(backend, cfg, embedder=embedder, analyzer=analyzer)
        return stages(s, ROLLBACK)[0]["widened"][0]

    plain, gated = widened(False), widened(True)
    share, by_evidence = plain.offsets, gated.offsets
    assert set(share) == set(by_evidence) >= {"ko", "zh"} and share["ko"] != 0 and share["zh"] != 0
    assert by_evidence["ko"] == pytest.approx(4 * share["ko"])  # Korean matches kubectl rollout undo: all of it
    assert by_evidence["zh"] == pytest.approx(share["zh"])  # nothing Chinese matches: the share

    # the plan says it (every score explained): what each language's cosines got, and its share
    centring = {lang: (added, s) for lang, added, s in gated.plan.language_centring}
    assert centring["ko"] == (pytest.approx(-by_evidence["ko"], abs=1e-4), 1.0)
    assert centring["zh"] == (pytest.approx(-by_evidence["zh"], abs=1e-4), 0.25)
    assert "en" not in centring  # the query's own language: nothing added
    assert {lang: s for lang, _, s in plain.plan.language_centring} == {"ko": 0.25, "zh": 0.25}


def test_lexical_parity_puts_a_matching_language_s_best_on_the_own_best(parts, embedder):
    """search.xling_lexical_parity: a language whose passages match the query lexically, less than the own language's,
    has its BM25 scaled so that its best equals the own best; a language matching nothing is left as it is."""
    backend, analyzer = with_korean_runbook(parts, embedder)

    def run(parity: bool):
        cfg = Config()
        cfg.search.xling_lexical_parity = parity
        s = Searcher(backend, cfg, embedder=embedder, analyzer=analyzer)
        made = stages(s, ROLLBACK)[0]
        return made["widened"][0], made["fused"][0]

    (off, fused_off), (on, fused_on) = run(False), run(True)
    assert not off.bm25_scales and off.plan.lexical_parity == ()
    assert set(on.bm25_scales) == {"ko"} and on.bm25_scales["ko"] > 1  # zh matches nothing: no factor
    assert on.plan.lexical_parity == (("ko", pytest.approx(on.bm25_scales["ko"], abs=1e-4)),)
    i_ko, i_en = on.ids.index("deploy/ko"), on.ids.index("deploy/a")
    assert fused_on.bm25_raw[i_ko] == pytest.approx(fused_on.bm25_raw[i_en])  # the best Korean on the best English
    assert fused_off.bm25_raw[off.ids.index("deploy/ko")] < fused_off.bm25_raw[off.ids.index("deploy/a")]


def test_centring_by_script_weighs_a_code_heavy_chunk_less(parts, embedder):
    """search.xling_centring_by_script: a Korean chunk that is mostly a command gets less of the Korean offset than
    the Korean prose chunks, which get about all of it (the weights average 1 over the language's candidates)."""
    from hanrag.search.widen import script_weights

    backend, analyzer = with_korean_runbook(parts, embedder)

    def widened(by_script: bool) -> Candidates:
        cfg = Config()
        cfg.search.xling_centring_by_script = by_script
        s = Searcher(backend, cfg, embedder=embedder, analyzer=analyzer)
        return stages(s, ROLLBACK)[0]["widened"][0]

    off, on = widened(False), widened(True)
    assert not off.offset_weights and on.offsets == off.offsets
    korean = {cid: w for cid, w in on.offset_weights.items() if on.chunks[cid].lang == "ko"}
    assert len(korean) >= 2 and sum(korean.values()) / len(korean) == pytest.approx(1.0)
    assert korean["deploy/ko"] < 1 < max(korean.values())  # the runbook line is half kubectl: less Korean
    assert all(on.chunks[cid].lang != "en" for cid in on.offset_weights)  # the query's own language: no weight
    # the fused dense scores follow: the runbook's cosine moved by its weight times the Korean offset
    fuse = Searcher(backend, Config(), embedder=embedder, analyzer=analyzer).fuse
    fused_off, fused_on = fuse(off), fuse(on)  # the weights travel with the candidates
    i = on.ids.index("deploy/ko")
    assert fused_on.dense_raw[i] - fused_off.dense_raw[off.ids.index("deploy/ko")] == pytest.approx(
        -on.offsets["ko"] * (korean["deploy/ko"] - 1.0))
    # a chunk with no Hangul at all (a Korean page's code alone) gets none of it
    code = Chunk(chunk_id="c", doc_id="c", text="kubectl rollout undo deployment/api", start=0, end=35, source="c",
                 path="c", lang="ko")
    prose = Chunk(chunk_id="p", doc_id="p", text="배포를 되돌린다", start=0, end=8, source="p", path="p", lang="ko")
    assert script_weights({"c": code, "p": prose}, "en") == {"c": 0.0, "p": 2.0}
    assert script_weights({"c": code, "p": prose}, "ko") == {}
    known = {"p": 0.5}  # a share counted before is read, not counted again; a new one is kept
    assert script_weights({"c": code, "p": prose}, "en", known) == {"c": 0.0, "p": 2.0}
    assert known == {"p": 0.5, "c": 0.0}
    # each hit's explanation says what its cosine got: its language's offset times its weight
    cfg = Config()
    cfg.search.xling_centring_by_script = True
    res = Searcher(backend, cfg, embedder=embedder, analyzer=analyzer).run(ROLLBACK, top_k=20, explain=True)
    by_id = {h.chunk.chunk_id: h.explanation for h in res.hits}
    assert by_id["deploy/ko"].centring == pytest.approx(-on.offsets["ko"] * korean["deploy/ko"], abs=1e-5)
    assert all(e.centring == 0.0 for cid, e in by_id.items() if on.chunks.get(cid) and on.chunks[cid].lang == "en")


def test_explain_prints_the_centring(parts, embedder):
    """--explain prints what the cross-lingual stage added to each language's cosines; a one-language index, where
    no other language competes, prints no centring line."""
    import io

    from rich.console import Console

    from hanrag.commands.search import render_hits

    def shown(s: Searcher) -> str:
        res = s.run("roll back a failed kubernetes deployment with kubectl rollout undo", top_k=3, explain=True)
        buf = io.StringIO()
        render_hits(res.plan, res.hits, True, Console(file=buf, width=200))
        return buf.getvalue()

    text = shown(make(parts, embedder))
    line = [ln for ln in text.splitlines() if "centring:" in ln]
    assert len(line) == 1 and "ko +" in line[0] and "zh +" in line[0] and "en " not in line[0], line
    assert " centring)" in text  # a hit of another language: its cosine and what the centring added
    chunks, tokens, vectors, analyzer = parts
    en = [i for i, c in enumerate(chunks) if c.lang == "en"]
    one = MemoryBackend([chunks[i] for i in en], [tokens[i] for i in en], vectors[en])
    assert "centring:" not in shown(Searcher(one, Config(), embedder=embedder, analyzer=analyzer))


def test_per_language_pools_side_by_side_give_what_one_after_another_gives(parts, embedder, monkeypatch):
    """On a large index the cross-lingual stage searches each language's pool in worker threads: the widened
    candidates (offsets, dense scores, chunks) are exactly those of the sequential searches."""
    def widened(large: bool):
        s = make(parts, embedder)
        monkeypatch.setattr(s.widener, "large", lambda: large)
        monkeypatch.setattr(s.backend, "dense_scan_shared", lambda: False)  # the pools are the stage's to draw
        calls: list[str] = []
        search = s.backend.dense_search

        def counted(qvec, k, filters=None):
            calls.append(threading.current_thread().name)
            return search(qvec, k, filters)

        monkeypatch.setattr(s.backend, "dense_search", counted)
        return stages(s)[0]["widened"][0], calls

    serial, serial_calls = widened(False)
    side, side_calls = widened(True)
    assert serial.offsets and side.offsets == serial.offsets
    assert side.dense == serial.dense and side.ids == serial.ids and set(side.chunks) == set(serial.chunks)
    assert any(n.startswith("hanrag-dense") for n in side_calls)
    assert not any(n.startswith("hanrag-dense") for n in serial_calls)


def test_pools_drawn_with_the_own_search_give_what_the_stage_draws(parts, embedder, monkeypatch):
    """A backend that scores every row once for all filters draws each language's pool with the query's own dense
    search, in one call; the widened candidates are exactly those of pools the cross-lingual stage draws itself."""
    def widened(shared: bool):
        s = make(parts, embedder)
        monkeypatch.setattr(s.backend, "dense_scan_shared", lambda: shared)
        calls: list[int] = []
        each = s.backend.dense_search_each  # the memory backend's dense_search is one of these too

        def counted(qvec, k, filters):
            calls.append(len(filters))
            return each(qvec, k, filters)

        monkeypatch.setattr(s.backend, "dense_search_each", counted)
        found = stages(s)[0]
        return found["request"][0], found["retrieved"][0], found["widened"][0], calls

    request, retrieved, shared, shared_calls = widened(True)
    assert set(request.pools) == set(retrieved.pools) == {"ko", "zh", "en"}
    assert shared_calls == [4]  # own search and three pools: one call
    request, _, apart, apart_calls = widened(False)
    assert not request.pools and apart_calls == [1, 1, 1, 1]
    assert shared.offsets and shared.offsets == apart.offsets
    assert shared.dense == apart.dense and shared.ids == apart.ids and set(shared.chunks) == set(apart.chunks)
    # drawn ahead only when the stage is sure to draw them: hybrid, and languages that always compete
    s = make(parts, embedder)
    assert set(s.widener.pools_wanted("hybrid", None)) == {"ko", "zh", "en"}
    assert not s.widener.pools_wanted("dense", None)
    s.cfg.search.xling_compete = "weak"  # then the stage decides on the query's evidence
    assert not s.widener.pools_wanted("hybrid", None)


def test_the_evidence_per_language_has_its_ablation_rows():
    """hanrag eval and quality.py show the centring without the evidence per language, and lexical parity."""
    from hanrag.eval import ablation_configs

    rows = ablation_configs(Config())
    mode, cfg = rows["one centring share"]
    assert mode == "hybrid" and not cfg.search.xling_compete_by_evidence and not cfg.search.xling_lexical_parity
    mode, cfg = rows["lexical parity"]
    assert mode == "hybrid" and cfg.search.xling_compete_by_evidence and cfg.search.xling_lexical_parity
    assert rows["hanrag default"][1].search.xling_compete_by_evidence
