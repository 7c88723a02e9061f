"""The rerank stage does what it claims: it orders the head as the cross-encoder scores it, blends as documented,
keeps the tail below in fused order, stops at its time budget, cuts long passages, refuses a max_length the model
cannot take, and serves concurrent queries without serialising them. The cross-encoder is loaded once per
configuration, even when threads ask at once, and kept across swaps.

The models are tiny random BERTs built on the fly (fixtures/tiny_models.py): their scores mean nothing, which is what
makes the order they give differ from the fused one.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import numpy as np
import pytest

from hanrag.backends.memory import MemoryBackend
from hanrag.config import Config, RerankConfig
from hanrag.records import Chunk
from hanrag.search import rerank
from hanrag.search.fusion import minmax
from hanrag.search.rerank import CHARS_PER_TOKEN, Reranker, RerankError, get_reranker
from hanrag.search.searcher import Searcher


@pytest.fixture(scope="module")
def ce_path(tmp_path_factory):
    from fixtures.tiny_models import make_tiny_bert

    return make_tiny_bert(tmp_path_factory.mktemp("ce") / "ce", cross_encoder=True)


@pytest.fixture
def loads(monkeypatch):
    """Counts real Reranker loads (the real constructor runs; it is only counted, and slowed so threads overlap)."""
    rerank._LOADED.clear()
    count = []
    real_init = Reranker.__init__

    def counted(self, *args, **kwargs):
        count.append(1)
        threading.Event().wait(0.2)  # widen the window two unlocked loads would both fall into
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(Reranker, "__init__", counted)
    yield count
    rerank._LOADED.clear()


def test_threads_asking_at_once_load_one_model(ce_path, loads):
    cfg = RerankConfig(model=str(ce_path), max_length=32)
    got: list[Reranker] = []
    start = threading.Barrier(8)

    def ask() -> None:
        start.wait()
        got.append(get_reranker(cfg))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 8 and len({id(r) for r in got}) == 1
    assert len(loads) == 1
    assert got[0].score("kubernetes pod", ["pod restart", "log"]).shape == (2,)


def test_kept_across_index_swaps_and_reloaded_on_a_new_config(ce_path, loads):
    """api.Index.reload builds a new Searcher on every swap; each asks for the reranker again. (The reranker
    never touches the backend, so these searchers have none.)"""
    cfg = Config()
    cfg.search.rerank.model = str(ce_path)
    cfg.search.rerank.max_length = 32
    first = Searcher(None, cfg).reranker
    swapped = Searcher(None, cfg).reranker  # a new index
    assert swapped is first and len(loads) == 1
    cfg2 = Config()
    cfg2.search.rerank.model = str(ce_path)
    cfg2.search.rerank.max_length = 48  # another model setting: another load
    assert Searcher(None, cfg2).reranker is not first
    assert len(loads) == 2
    cfg.search.rerank.max_length = 16  # editing a config later does not change the model already handed out
    assert first.cfg.max_length == 32


# ----------------------------------------------------------------------------- the stage over a small index

QUERY = "kubernetes pod restart"
# every chunk matches the query in BM25 (so the fused head holds them all), each in its own words early on (the
# model reads 32 tokens of a pair: no two pairs may read the same)
TEXTS = [
    "kubernetes pod restart: delete the pod and the deployment makes a new one.",
    "pod logs first, then restart the kubernetes pod if it hangs.",
    "node drain moves every pod off a kubernetes node before maintenance.",
    "restart policy of a pod: always, on failure or never.",
    "data on a pod volume survives a restart of the container.",
    "index of kubernetes runbooks: pod, node, deploy, config.",
    "error budget: a pod restart counts against the service.",
    "query the kubernetes api for pod restart counts.",
    "token expiry makes the pod fail; restart it after a config fix.",
    "search the log of the previous pod before a restart.",
    "model server pods restart slowly; raise the probe timeout.",
    "test pods in a kubernetes namespace restart on every deploy.",
]
CHUNKS = [Chunk(chunk_id=f"c{i:02d}", doc_id=f"d{i:02d}", text=t, start=0, end=len(t), source=f"s{i}", path=f"p{i}.md")
          for i, t in enumerate(TEXTS)]


@pytest.fixture(scope="module")
def analyzer():
    from hanrag.text import get_analyzer

    return get_analyzer(Config())


@pytest.fixture(scope="module")
def backend(analyzer):
    tokens = analyzer.tokenize_many(TEXTS, ["en"] * len(TEXTS))
    vectors = np.random.default_rng(0).normal(size=(len(TEXTS), 8)).astype(np.float32)  # bm25 mode: never read
    return MemoryBackend(CHUNKS, tokens, vectors)


@pytest.fixture(scope="module")
def sharp_ce(tmp_path_factory):
    """A tiny random cross-encoder whose scores spread: the freshly initialised one (weights of std 0.02) scores every
    pair 0.4956 give or take 1e-5, near-ties that batching noise (6e-8) could flip. Its matrices scaled by 10, the
    scores of TEXTS spread over 0.21 to 0.28, at least 0.0027 apart."""
    import torch
    from transformers import BertForSequenceClassification

    from fixtures.tiny_models import make_tiny_bert

    path = make_tiny_bert(tmp_path_factory.mktemp("sharp") / "ce", cross_encoder=True)
    bert = BertForSequenceClassification.from_pretrained(path)
    with torch.no_grad():
        for name, weight in bert.named_parameters():
            if name.endswith("weight") and weight.dim() == 2 and name.split(".")[-2] not in {
                    "position_embeddings", "token_type_embeddings"}:
                weight.mul_(10.0)
    bert.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def model(sharp_ce):
    """One loaded tiny cross-encoder for the stage tests; each test gives it its own settings (``with_cfg``)."""
    return Reranker(RerankConfig(model=str(sharp_ce), max_length=32))


def with_cfg(model: Reranker, **kw) -> tuple[Reranker, Config]:
    """``model`` under the [search.rerank] settings ``kw`` (a shallow copy: the weights are shared), and a config
    that says the same."""
    cfg = Config()
    cfg.search.rerank = dataclasses.replace(model.cfg, **kw)
    rr = Reranker.__new__(Reranker)
    rr.__dict__.update(model.__dict__, cfg=cfg.search.rerank)
    return rr, cfg


def searcher(backend, analyzer, rr: Reranker, cfg: Config) -> Searcher:
    return Searcher(backend, cfg, analyzer=analyzer, reranker=rr)


def fused_ids(s: Searcher, top_k: int) -> list[str]:
    """The fused order the rerank stage starts from (the same search up to fusion)."""
    cand, fused = s.fused_candidates(QUERY, top_k, "bm25")
    return [cand.ids[int(i)] for i in fused.order()]


class Clock:
    """The rerank module's clock, moved by the test: a batch takes exactly the time the test says."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = Clock()
    monkeypatch.setattr(rerank, "time", c)  # only hanrag.search.rerank reads this clock
    return c


def timed(monkeypatch, rr: Reranker, clock: Clock, seconds_per_batch: float) -> list[int]:
    """Make every scored batch of ``rr`` take ``seconds_per_batch`` on ``clock``; the sizes of the batches scored."""
    batches: list[int] = []
    real = rr.score

    def score(query, passages):
        batches.append(len(passages))
        clock.now += seconds_per_batch
        return real(query, passages)

    monkeypatch.setattr(rr, "score", score)
    return batches


def test_the_head_takes_the_cross_encoders_order(backend, analyzer, model):
    rr, cfg = with_cfg(model, candidates=10, batch_size=3)
    s = searcher(backend, analyzer, rr, cfg)
    head = fused_ids(s, 10)[:10]
    res = s.run(QUERY, top_k=10, mode="bm25", explain=True)
    # the cross-encoder's own predict on the same pairs, in one call (not the stage's batches)
    text = {c.chunk_id: c.text for c in CHUNKS}
    predicted = np.asarray(model.model.predict([(QUERY, text[c]) for c in head], show_progress_bar=False))
    assert np.diff(np.sort(predicted)).min() > 1e-5  # the setup: no near-ties for batching noise to flip
    want = [head[j] for j in np.argsort(-predicted, kind="stable")]
    got = [h.chunk.chunk_id for h in res.hits]
    assert got == want
    assert got != head  # reranking changed the fused order (what this setup is chosen for)
    assert [h.explanation.rerank for h in res.hits] == pytest.approx(sorted(predicted, reverse=True), abs=1e-5)
    assert (res.plan.reranked, res.plan.rerank_candidates, res.plan.rerank_budget_ms) == (10, 10, 0)
    assert res.plan.rerank_ms is not None and res.plan.rerank_ms > 0
    assert res.plan.to_dict()["reranked"] == 10  # in the JSON of --json and the server's plan


@pytest.mark.parametrize("blend", [0.0, 0.3, 1.0])
def test_blend_is_the_documented_formula(backend, analyzer, model, blend):
    rr, cfg = with_cfg(model, candidates=8, batch_size=4, blend=blend)
    s = searcher(backend, analyzer, rr, cfg)
    head = fused_ids(s, 8)[:8]
    hits = s.run(QUERY, top_k=8, mode="bm25", explain=True).hits
    raw = np.array([h.explanation.rerank for h in hits])
    fused = np.array([h.explanation.fused for h in hits])
    want = (1 - blend) * minmax(raw) + blend * minmax(fused)
    assert [h.score for h in hits] == pytest.approx(list(want), abs=1e-9)
    assert [h.explanation.final for h in hits] == pytest.approx(list(want), abs=1e-9)
    if blend == 1.0:
        assert [h.chunk.chunk_id for h in hits] == head  # the fused order, kept
    else:
        assert [h.chunk.chunk_id for h in hits] != head


def test_the_tail_stays_below_in_fused_order(backend, analyzer, model, monkeypatch, clock):
    """A budget that fits one batch of 3 out of 9 candidates: the 6 left are the tail, shown in the top 9."""
    rr, cfg = with_cfg(model, candidates=9, batch_size=3, budget_ms=100)
    timed(monkeypatch, rr, clock, 0.080)  # one batch: 80 ms; a second would end at 160 ms > 100
    s = searcher(backend, analyzer, rr, cfg)
    head = fused_ids(s, 9)[:9]
    res = s.run(QUERY, top_k=9, mode="bm25", explain=True)
    reranked = [h for h in res.hits if h.explanation.rerank is not None]
    tail = [h for h in res.hits if h.explanation.rerank is None]
    assert len(reranked) == 3 and len(tail) == 6
    assert res.hits[:3] == reranked  # the reranked ones first
    assert {h.chunk.chunk_id for h in reranked} == set(head[:3])  # the best-fused batch is the one scored
    assert [h.chunk.chunk_id for h in tail] == head[3:]  # the tail in its fused order
    assert max(h.score for h in tail) < min(h.score for h in reranked)
    assert (res.plan.reranked, res.plan.rerank_candidates, res.plan.rerank_budget_ms) == (3, 9, 100)


@pytest.mark.parametrize(
    ("budget_ms", "reranked"),
    [
        (1, 3),  # too small for one batch: the first batch still runs
        (600, 6),  # after 2 batches (500 ms), a third (250 ms more) would not fit
        (750, 9),  # ... and here it fits exactly
        (0, 9),  # no budget: every candidate
    ],
)
def test_the_budget_decides_how_many_batches_run(backend, analyzer, model, monkeypatch, clock, budget_ms, reranked):
    rr, cfg = with_cfg(model, candidates=9, batch_size=3, budget_ms=budget_ms)
    batches = timed(monkeypatch, rr, clock, 0.25)  # 250 ms a batch (sums exact in binary)
    result = rr.rerank(QUERY, TEXTS[:9], np.linspace(1, 0, 9))
    assert (result.reranked, result.candidates, result.budget_ms) == (reranked, 9, budget_ms)
    assert len(result.raw) == len(result.final) == reranked and sum(batches) == reranked
    assert batches == [3] * (reranked // 3)
    # the same through the searcher, reported in the plan
    batches.clear()
    res = searcher(backend, analyzer, rr, cfg).run(QUERY, top_k=9, mode="bm25", explain=True)
    assert (res.plan.reranked, res.plan.rerank_candidates) == (reranked, 9)
    assert sum(h.explanation.rerank is not None for h in res.hits) == reranked


def test_a_budget_on_a_real_clock_reranks_fewer(model, monkeypatch):
    """No fake clock: batches that take at least 50 ms each (a real sleep) and a 120 ms budget: after two batches
    (>= 100 ms) a third (>= 50 ms more) cannot fit, however slow the machine, so 2 or 4 of the 12 are reranked."""
    rr, _ = with_cfg(model, candidates=12, batch_size=2, budget_ms=120)
    real = rr.score
    monkeypatch.setattr(rr, "score", lambda q, p: (time.sleep(0.05), real(q, p))[1])
    result = rr.rerank(QUERY, TEXTS, np.linspace(1, 0, 12))
    assert result.reranked in (2, 4) and result.candidates == 12 and len(result.raw) == result.reranked


def test_max_length_past_the_models_positions_is_refused_at_load(ce_path):
    with pytest.raises(RerankError, match=r"search\.rerank\.max_length = 65 .*64 token positions"):
        Reranker(RerankConfig(model=str(ce_path), max_length=65))
    Reranker(RerankConfig(model=str(ce_path), max_length=64))  # the model's own length is fine


def test_long_passages_are_cut_before_tokenising(model, monkeypatch):
    rr, _ = with_cfg(model, batch_size=16)
    cut = CHARS_PER_TOKEN * rr.cfg.max_length
    seen: list[int] = []
    real_predict = rr.model.predict

    def predict(pairs, **kw):
        seen.extend(len(q) + len(p) for q, p in pairs)
        return real_predict(pairs, **kw)

    long = ("kubernetes pod restart log " * 4000)[:100_000]
    monkeypatch.setattr(rr.model, "predict", predict)
    t = time.perf_counter()
    result = rr.rerank(QUERY, [long] * 16, np.zeros(16))
    seconds = time.perf_counter() - t
    assert result.reranked == 16 and max(seen) <= len(QUERY) + cut
    # uncut, tokenising these 1.6M characters takes seconds (0.18 s a passage); cut, milliseconds
    assert seconds < 1.5
    # the cut changes nothing the model reads: 32 tokens come long before 256 characters
    assert rr.score(QUERY, [long])[0] == pytest.approx(rr.score(QUERY, [long[:cut]])[0], abs=1e-6)
    assert rr.score(QUERY, [long])[0] == pytest.approx(rr.score(QUERY, [long[:2000]])[0], abs=1e-6)


# ----------------------------------------------------------------------------- concurrent queries in the server


def test_the_server_reranks_queries_side_by_side(ce_path, tmp_path):
    """Two reranked searches score at the same moment (a barrier both must reach), and a third search answers while
    both are held inside their slow rerank: no lock serialises the queries of the server's worker threads."""
    import httpx

    import hanrag
    from fixtures.server import TEST_CONFIG, ThreadServer, build_test_index
    from fixtures.tiny_models import make_tiny_bert
    from hanrag.server import create_app

    # a tiny embedder too: the bundled one's ONNX conversion costs a test session most of a minute
    encoder = make_tiny_bert(tmp_path / "encoder")
    built = build_test_index(tmp_path, config=TEST_CONFIG + f"""
[embedder]
backend = "sentence-transformers"
model = "{encoder.as_posix()}"
max_seq_length = 64
""")
    cfg = built["config"]
    cfg.search.rerank = RerankConfig(model=str(ce_path), max_length=32, candidates=10, batch_size=2, budget_ms=1)
    rerank._LOADED.clear()
    rr = get_reranker(cfg.search.rerank)  # the instance the server's searcher gets
    slow = {"deployment rollback", "kubectl rollout undo"}
    both_inside = threading.Barrier(3, timeout=30)  # the two slow reranks and this test
    fast_answered = threading.Event()
    held: list[bool] = []
    real = rr.score

    def score(query, passages):
        if query in slow:
            both_inside.wait()  # breaks (an error, a failed search) unless both slow searches score at once
            held.append(fast_answered.wait(30))  # held open until the fast search has answered
        return real(query, passages)

    rr.score = score
    try:
        index = hanrag.open(built["index_dir"], cfg)
        index.search_result("갑목 용신")  # the fast query's analyzers load here, not while the others are held
        with ThreadServer(create_app(built["index_dir"], cfg, index=index)) as srv, \
                httpx.Client(base_url=srv.url, timeout=60) as client:
            answers: dict[str, httpx.Response] = {}

            def ask(query: str) -> None:
                answers[query] = client.post("/search", json={"query": query, "top_k": 5, "plan": True})

            threads = [threading.Thread(target=ask, args=(q,)) for q in sorted(slow)]
            for t in threads:
                t.start()
            both_inside.wait()  # both slow searches are inside the reranker now
            fast = client.post("/search", json={"query": "갑목 용신", "top_k": 5, "plan": True})
            fast_answered.set()
            for t in threads:
                t.join(60)
        assert fast.status_code == 200 and fast.json()["hits"], fast.text
        assert held == [True, True]  # the fast answer came while both slow reranks were still held
        for q in slow:
            assert answers[q].status_code == 200, answers[q].text
            plan = answers[q].json()["plan"]
            # the budget (1 ms) is spent by the first batch: 2 reranked of the head
            assert plan["reranked"] == 2 and plan["rerank_candidates"] >= 5 and plan["rerank_budget_ms"] == 1
            assert plan["rerank_ms"] > 0
        assert fast.json()["plan"]["reranked"] == 2
    finally:
        rerank._LOADED.clear()
