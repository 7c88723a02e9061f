"""A PDF page boundary is a hard chunk border: no chunk spans two pages, and ``page`` cites the right one.

The pages here are short on purpose: both together fit in one default 512-character chunk, which is how
page-2 text used to end up in a chunk cited as page 1.
"""

from __future__ import annotations

from pathlib import Path

from fixtures.pdf import write_pdf
from hanrag.chunking import chunk_document
from hanrag.config import Config
from hanrag.index.snapshot import open_snapshot
from hanrag.pipeline import build_index
from hanrag.sources.pdf import read_pdf

PAGES = [
    "Chapter 1: Backups\nSnapshots of the orders database are taken nightly.",
    "Chapter 2: Restores\nA restore drill replays the latest snapshot every quarter.",
]


def _two_pages(path: Path) -> Path:
    return write_pdf(path, PAGES, source="https://docs.example.com/storage")


def test_two_short_pages_are_two_chunks(tmp_path: Path) -> None:
    doc, findings = read_pdf(_two_pages(tmp_path / "storage.pdf"), tmp_path, Config())
    assert findings == [] and doc is not None
    cfg = Config().chunking
    assert len(doc.text) < cfg.chunk_size  # both pages would fit in one chunk
    chunks = chunk_document(doc, cfg)
    assert [c.page for c in chunks] == [1, 2]
    first, second = chunks
    assert first.text.startswith("Chapter 1") and "taken nightly" in first.text
    assert "Chapter 2" not in first.text and "restore drill" not in first.text
    assert second.text.startswith("Chapter 2") and "restore drill" in second.text
    assert "taken nightly" not in second.text  # no overlap carried across the page border
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
    assert len({c.chunk_id for c in chunks}) == 2


def test_page_border_inside_a_long_section(tmp_path: Path) -> None:
    """Pages longer than a chunk: every chunk, overlap included, lies within one page."""
    pages = [" ".join(f"Page{n} sentence {i} about storage." for i in range(40)) for n in (1, 2, 3)]
    write_pdf(tmp_path / "long.pdf", pages, size=11)
    doc, _ = read_pdf(tmp_path / "long.pdf", tmp_path, Config())
    assert doc is not None
    chunks = chunk_document(doc, Config().chunking)
    ends = [*doc.page_starts[1:], len(doc.text)]
    for c in chunks:
        assert c.page is not None
        assert doc.page_starts[c.page - 1] <= c.start and c.end <= ends[c.page - 1]
        assert all(w == f"Page{c.page}" for w in c.text.split() if w.startswith("Page"))
    assert {c.page for c in chunks} == {1, 2, 3}
    assert len(chunks) > 3  # each page is longer than one chunk


def test_index_build_carries_the_page(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _two_pages(corpus / "storage.pdf")
    cfg = Config()  # default chunk size: the two pages would fit in one chunk
    cfg.corpus.extensions = [".pdf"]
    build_index(corpus, tmp_path / "index", cfg, progress=False)
    chunks = open_snapshot(tmp_path / "index").chunks
    assert [(c.doc_id, c.page) for c in chunks] == [("storage.pdf", 1), ("storage.pdf", 2)]
    by_page = {c.page: c.text for c in chunks}
    assert "taken nightly" in by_page[1] and "restore drill" not in by_page[1]
    assert "restore drill" in by_page[2] and "taken nightly" not in by_page[2]
