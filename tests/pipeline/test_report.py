"""The build's stage timings: a :class:`BuildTimer` the caller starts and hands on, never private arguments."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from hanrag.config import Config
from hanrag.pipeline import BuildTimer, build_from_chunks, build_from_documents, build_index
from hanrag.records import Chunk, Document


class LengthEmbedder:
    """A 4-dim vector from the text's length: no model to load."""

    dim, max_tokens, truncates = 4, 512, True

    def encode_passages(self, texts):
        return np.stack([np.array([len(t), 1, 0, 0], np.float32) / np.hypot(len(t), 1) for t in texts])

    def count_tokens(self, text):
        return len(text)

    def identity(self):
        return {"model": "length", "dim": 4}


def test_stages_add_up_in_order_and_total_counts_from_the_start() -> None:
    timer = BuildTimer(started=time.perf_counter() - 1.0)
    with timer.stage("prepare"):
        time.sleep(0.01)
    timer.add("embedding", 0.5)
    timer.add("embedding", 0.25)
    t = timer.timings()
    assert list(t) == ["prepare", "embedding", "total"]
    assert t["embedding"] == 0.75 and 0.01 <= t["prepare"] < 0.5 and t["total"] >= 1.0


def test_a_stage_that_raises_is_timed_too() -> None:
    timer = BuildTimer()
    with pytest.raises(ValueError), timer.stage("prepare"):
        raise ValueError("bad corpus")
    assert "prepare" in timer.timings()


def _assert_timings(t: dict[str, float]) -> None:
    assert list(t)[0] == "prepare" and list(t)[-1] == "total"
    assert {"tokenize", "embedding", "dedup", "sparse", "write", "ann", "publish"} <= set(t)
    stages = sum(v for k, v in t.items() if k != "total")
    assert t["total"] >= stages - 0.001 * len(t)  # the stages run one after another, within the total


def test_build_index_times_its_reading_and_chunking_as_prepare(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(3):
        (corpus / f"d{i}.md").write_text(f"---\nsource: https://example.org/{i}\n---\n# 문서 {i}\n\n배포 롤백 {i}.\n",
                                         encoding="utf-8")
    report = build_index(corpus, tmp_path / "ix", Config(), embedder=LengthEmbedder(), progress=False)
    _assert_timings(report.timings)
    assert report.timings["prepare"] > 0


def test_documents_and_ready_chunks_report_the_same_stages(tmp_path: Path) -> None:
    docs = [Document(doc_id=f"p{i}", path=f"p{i}", title=f"페이지 {i}", text=f"# 페이지 {i}\n\nJWT rotation step {i}.",
                     sources=(f"https://wiki.example.org/{i}",)) for i in range(2)]
    report = build_from_documents(docs, tmp_path / "a", Config(), embedder=LengthEmbedder())
    _assert_timings(report.timings)
    chunks = [Chunk(chunk_id=f"c{i}", doc_id="d", text=f"text {i}", start=0, end=6, lang="en") for i in range(3)]
    ready = build_from_chunks(chunks, tmp_path / "b", Config(), embedder=LengthEmbedder(), progress=False)
    _assert_timings(ready.timings)
    assert ready.timings["prepare"] == 0.0  # ready-made chunks: nothing read
    # a caller's own timer: its earlier work is in the total
    timer = BuildTimer(started=time.perf_counter() - 2.0)
    late = build_from_chunks(chunks, tmp_path / "c", Config(), embedder=LengthEmbedder(), progress=False,
                             timer=timer)
    assert late.timings["total"] >= 2.0
