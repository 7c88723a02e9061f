"""``embedder.headings``: a chunk's title and heading path embedded with its text (hanrag.index.dense.embedded_text)."""

from __future__ import annotations

import dataclasses
import re
import zlib
from pathlib import Path

import numpy as np

from fixtures.tamper import make_chunks
from hanrag.api import Index
from hanrag.config import Config
from hanrag.doctor import diagnose
from hanrag.index.dense import embedded_headings, embedded_text
from hanrag.pipeline import build_from_chunks, build_from_documents
from hanrag.records import Chunk, Document

PAGES = {"Rolling back a deployment": "Undo the last rollout and return to the revision before it.",
         "Scaling": "Change the number of replicas with one command."}
DIM = 512


class WordEmbedder:
    """A bag of hashed words (crc32, so the same on every machine): texts sharing a word have a positive cosine,
    texts sharing none a cosine of 0. Records every passage it is given."""

    dim, max_tokens, truncates = DIM, 512, True

    def __init__(self) -> None:
        self.passages: list[str] = []

    def _vectors(self, texts):
        out = np.zeros((len(texts), DIM), np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"[a-z]+", t.lower()):
                out[i, zlib.crc32(w.encode()) % DIM] += 1.0
            out[i, 0] += 1e-3  # no zero vector
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def encode_passages(self, texts):
        self.passages += list(texts)
        return self._vectors(texts)

    encode_queries = _vectors

    def count_tokens(self, text):
        return len(text.split())

    def identity(self):
        return {"model": "words", "dim": DIM}


def test_the_text_the_encoder_reads() -> None:
    c = Chunk(chunk_id="c", doc_id="d", text="Undo the last rollout.", start=0, end=22, title="Deployments",
              headings=("Deployments", "Rolling back"))
    assert embedded_text(c, False) == c.text
    assert embedded_text(c, True) == "Deployments\nRolling back\nUndo the last rollout."
    assert not embedded_headings({}) and not embedded_headings({"config": {"bm25": {"headings": True}}})
    assert embedded_headings({"config": {"embedder": {"headings": True}}})


def _index(tmp_path: Path, headings: bool, embedder: WordEmbedder) -> Index:
    cfg = Config()
    cfg.embedder.headings = headings
    cfg.bm25.headings = False  # the title reaches the hits through the vectors alone
    docs = [Document(doc_id=f"p{i}", path=f"p{i}.txt", title=title, text=text,
                     sources=(f"https://docs.example.org/{i}",)) for i, (title, text) in enumerate(PAGES.items())]
    build_from_documents(docs, tmp_path / "index", cfg, embedder=embedder)
    return Index(tmp_path / "index", config=cfg, embedder=embedder)


def test_a_page_is_found_by_the_vector_of_its_title(tmp_path: Path) -> None:
    """"rolling back" is in no text, only in one page's title: with headings embedded, dense search finds that page
    (a positive cosine); without, no page shares a word with the query. Turning the setting on re-embeds every
    chunk (the index cache is keyed by the text embedded), and the manifest says which text was embedded."""
    emb = WordEmbedder()
    off = _index(tmp_path, False, emb)
    assert not embedded_headings(off.searcher.backend.manifest())
    assert sorted(emb.passages) == sorted(PAGES.values())
    assert max(h.score for h in off.search("rolling back", mode="dense", top_k=2)) < 0.05
    emb.passages.clear()
    on = _index(tmp_path, True, emb)
    assert embedded_headings(on.searcher.backend.manifest())
    assert sorted(emb.passages) == sorted(f"{t}\n{x}" for t, x in PAGES.items())
    hits = on.search("rolling back", mode="dense", top_k=2)
    assert hits[0].chunk.title == "Rolling back a deployment" and hits[0].score > 0.2


def test_doctor_embeds_the_text_the_index_embedded(tmp_path: Path) -> None:
    """The doctor's content checks tokenise and embed sampled chunks again and compare them with the stored postings
    and vectors: with headings indexed (bm25.headings, the default) and embedded they must read the same headed
    text, or every titled chunk reads as rewritten."""
    cfg = Config()
    cfg.embedder.headings = True
    chunks = [dataclasses.replace(c, title=f"Chapter {i}: on {c.doc_id}", headings=("Operations", "Rollbacks"))
              for i, c in enumerate(make_chunks())]
    build_from_chunks(chunks, tmp_path / "index", cfg, progress=False)
    problems = diagnose(tmp_path / "index", cfg)
    assert not [p for p in problems if p.code == "index-content-mismatch"], problems
