"""The cross-encoder is loaded once per configuration, even when threads ask at once, and kept across swaps."""

from __future__ import annotations

import threading

import pytest

from hanrag.config import Config, RerankConfig
from hanrag.search import rerank
from hanrag.search.rerank import Reranker, get_reranker
from hanrag.search.searcher import Searcher


@pytest.fixture(scope="module")
def ce_path(tmp_path_factory):
    from tests.tiny_models import make_tiny_bert

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
