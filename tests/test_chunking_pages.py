"""Page starts are hard chunk borders: a chunk never spans two pages and its ``page`` is where its text is."""

from __future__ import annotations

from hanrag.chunking import chunk_document
from hanrag.config import ChunkingConfig
from hanrag.records import Document


def _doc(pages: list[str], sep: str = "\n\n") -> Document:
    starts, pos = [], 0
    for text in pages:
        starts.append(pos)
        pos += len(text) + len(sep)
    return Document(doc_id="d.pdf", path="d.pdf", title="t", text=sep.join(pages), page_starts=tuple(starts))


def test_short_pages_do_not_share_a_chunk() -> None:
    doc = _doc(["## 설치\n\n첫 쪽의 설치 안내다.", "둘째 쪽에서 설치가 이어진다.", "셋째 쪽 끝."])
    chunks = chunk_document(doc, ChunkingConfig())
    assert [(c.page, c.text) for c in chunks] == [
        (1, "## 설치\n\n첫 쪽의 설치 안내다."), (2, "둘째 쪽에서 설치가 이어진다."), (3, "셋째 쪽 끝.")]
    # the section runs on over the page breaks: same section index and heading path on every page
    assert {(c.section, c.headings) for c in chunks} == {(0, ("설치",))}


def test_page_break_inside_a_paragraph_and_no_overlap_across_it() -> None:
    # a single newline between pages: the paragraph itself runs over the break
    pages = [" ".join(f"p{n}w{i}." for i in range(60)) for n in (1, 2)]
    doc = _doc(pages, sep="\n")
    chunks = chunk_document(doc, ChunkingConfig(chunk_size=120, overlap=30))
    assert {c.page for c in chunks} == {1, 2}
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
        assert {w[:2] for w in c.text.split()} == {f"p{c.page}"}
    # overlap still works inside a page
    assert any(b.start < a.end for a, b in zip(chunks, chunks[1:], strict=False) if a.page == b.page)


def test_documents_without_pages_are_unchanged() -> None:
    text = "## A\n\n" + "word " * 200
    with_pages = chunk_document(Document("d", "d", "t", text, page_starts=(0,)), ChunkingConfig())
    without = chunk_document(Document("d", "d", "t", text), ChunkingConfig())
    assert [(c.start, c.end, c.chunk_id) for c in with_pages] == [(c.start, c.end, c.chunk_id) for c in without]
    assert {c.page for c in with_pages} == {1} and {c.page for c in without} == {None}
