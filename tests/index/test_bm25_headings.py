"""``bm25.headings``: a chunk's title and heading path indexed with its text (hanrag.index.sparse.bm25_text)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hanrag.api import Index
from hanrag.config import Config
from hanrag.index.sparse import bm25_text, indexed_headings
from hanrag.pipeline import build_from_documents
from hanrag.records import Chunk, Document

PAGES = {"Rolling back a deployment": "Undo the last rollout and return to the revision before it.",
         "Scaling": "Change the number of replicas with one command."}


class LengthEmbedder:
    """A 4-dim vector from the text's length: no model to load."""

    dim, max_tokens, truncates = 4, 512, True

    def encode_passages(self, texts):
        return np.stack([np.array([len(t), 1, 0, 0], np.float32) / np.hypot(len(t), 1) for t in texts])

    encode_queries = encode_passages

    def count_tokens(self, text):
        return len(text)

    def identity(self):
        return {"model": "length", "dim": 4}


def test_the_text_bm25_reads() -> None:
    c = Chunk(chunk_id="c", doc_id="d", text="Undo the last rollout.", start=0, end=22, title="Deployments",
              headings=("Deployments", "Rolling back"))
    assert bm25_text(c, False) == c.text
    assert bm25_text(c, True) == "Deployments\nRolling back\nUndo the last rollout."  # the title once
    assert bm25_text(Chunk(chunk_id="c", doc_id="d", text="x", start=0, end=1), True) == "x"
    assert not indexed_headings({}) and not indexed_headings({"config": {"bm25": {"k1": 1.5}}})
    assert indexed_headings({"config": {"bm25": {"headings": True}}})


def _index(tmp_path: Path, headings: bool) -> Index:
    cfg = Config()
    cfg.bm25.headings = headings
    docs = [Document(doc_id=f"p{i}", path=f"p{i}.txt", title=title, text=text,
                     sources=(f"https://docs.example.org/{i}",)) for i, (title, text) in enumerate(PAGES.items())]
    build_from_documents(docs, tmp_path / str(headings), cfg, embedder=LengthEmbedder())
    return Index(tmp_path / str(headings), config=cfg, embedder=LengthEmbedder())


def test_a_page_is_found_by_its_title_and_the_explanation_says_so(tmp_path: Path) -> None:
    """"rolling back" is in no text, only in one page's title: with headings indexed, BM25 finds that page and its
    explanation lists the title's words as matched; without, BM25 finds nothing."""
    on = _index(tmp_path, True)
    assert indexed_headings(on.searcher.backend.manifest())
    hits = on.search("rolling back", mode="bm25", top_k=2, explain=True)
    assert [h.chunk.title for h in hits] == ["Rolling back a deployment"]
    assert set(hits[0].explanation.matched_tokens) >= {t for t in on.searcher.analyzer.tokenize("rolling back", "en")}
    off = _index(tmp_path, False)
    assert not indexed_headings(off.searcher.backend.manifest())
    assert off.search("rolling back", mode="bm25", top_k=2) == []
