"""Issue 30, findings 2, 3 and 8: hostile corpora. One bad file is a finding about that file and the rest
of the corpus is read, chunked and deduplicated; every input path is bounded (YAML aliases and nesting,
OpenAPI ``$ref`` expansion, folder depth, chunks per file) and near-duplicate detection stays linear on
repetitive text; a malformed field is a warning and the document stays; encodings are read as documented.

No timed asserts: each test checks the mechanism that bounds the work, on inputs big enough that the
unbounded code took minutes (or crashed) and the bounded code takes a moment."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from fixtures.hostile import LAUGHS, SOURCE, nested_ref_spec
from fixtures.pdf import write_pdf
from hanrag.chunking import MAX_CHUNKS_PER_DOC, chunk_corpus, chunk_document
from hanrag.config import Config
from hanrag.front_matter import FRONT_MATTER_MAX_NODES, YAML_MAX_DEPTH, YamlLimitError, load_yaml
from hanrag.index import dedup
from hanrag.index.dedup import mark_duplicates, normalise, shingles
from hanrag.pipeline import find_duplicates
from hanrag.records import Chunk, Document
from hanrag.sources import openapi as openapi_mod
from hanrag.sources import read_corpus
from hanrag.sources.document import decode_bytes
from hanrag.sources.files import MAX_FOLDER_DEPTH
from hanrag.validate import LONG_LINE, LONG_TOKEN, lint_document, prepare_corpus


def _codes(findings, path: str) -> set[str]:
    return {f.code for f in findings if f.path == path}


def _ok(corpus: Path, name: str = "ok.md") -> None:
    (corpus / name).write_text(f"# 정상 문서\n{SOURCE}이 문서는 멀쩡합니다.\n", encoding="utf-8")


# --- finding 2: one bad file never aborts the corpus -------------------------------------------------


def test_lone_surrogate_in_openapi_json_is_a_finding_and_the_corpus_chunks_and_dedups(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _ok(corpus)
    (corpus / "api.json").write_text(
        '{"openapi": "3.0.0", "info": {"title": "T\\ud800", "version": "1"},'
        ' "servers": [{"url": "https://api.example.org"}],'
        ' "paths": {"/a": {"get": {"summary": "bad \\ud800 here", "responses": {"200": {"description": "ok"}}}}}}',
        encoding="utf-8",
    )
    prepared = prepare_corpus(corpus, Config())
    assert {d.doc_id for d in prepared.indexable} == {"api.json", "ok.md"}
    assert "unencodable-text" in _codes(prepared.findings, "api.json")
    api = next(d for d in prepared.indexable if d.doc_id == "api.json")
    assert "\ufffd" in api.text and "\ufffd" in api.title
    chunks, findings = chunk_corpus(prepared.indexable, Config().chunking)
    assert not findings
    for c in chunks:
        c.text.encode("utf-8")  # every chunk is text that encodes (hashing, JSON, the tokenizer)
    find_duplicates(chunks, Config())  # was UnicodeEncodeError in dedup.normalise (OpenCC)


def test_dedup_takes_a_lone_surrogate_instead_of_raising() -> None:
    # a connector's Document that escaped the readers' clean-up must not stop a build either
    def t2s(text: str) -> str:
        text.encode("utf-8")  # as OpenCC does
        return text

    assert normalise("abc\ud800defg", t2s) == "abcdefg"  # U+FFFD, then dropped like any symbol
    assert shingles("abc\ud800defg").size > 0


def test_corpus_1200_folders_deep_is_walked_without_recursion_and_cut_with_a_finding(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _ok(corpus)
    folders = [corpus]
    for depth in range(1, 1201):
        folders.append(folders[-1] / "d")
        folders[-1].mkdir()  # one level at a time: os.makedirs itself recurses
        if depth in (10, 1200):
            _ok(folders[-1], f"at{depth}.md")
    try:
        docs, findings = read_corpus(corpus, Config())  # was RecursionError in walk_corpus
    finally:  # bottom up: shutil.rmtree (pytest's tmp_path clean-up) recurses too
        for folder in reversed(folders[1:]):
            for file in folder.glob("*.md"):
                file.unlink()
            folder.rmdir()
    ids = {d.doc_id for d in docs}
    assert "ok.md" in ids and "d/" * 10 + "at10.md" in ids
    assert not any(i.endswith("at1200.md") for i in ids)
    deep = [f for f in findings if f.code == "too-deep"]
    assert len(deep) == 1 and deep[0].path.count("/") == MAX_FOLDER_DEPTH


# --- finding 3: bounded and linear -------------------------------------------------------------------


def test_billion_laughs_front_matter_is_a_finding_and_the_document_stays(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "laughs.md").write_text(f"---\n{LAUGHS}title: *i\ntags: *i\n---\n# 웃음\n{SOURCE}본문.\n")
    docs, findings = read_corpus(corpus, Config())  # was 160 s of lint and MemoryError in chunk/build
    (doc,) = docs
    assert doc.title == "웃음" and not doc.labels  # the front matter is ignored, the body kept
    (bad,) = [f for f in findings if f.code == "bad-front-matter"]
    assert "aliases" in bad.message
    assert chunk_document(doc, Config().chunking)


def test_billion_laughs_openapi_yaml_is_a_parse_error_finding(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    _ok(corpus)
    (corpus / "api.yaml").write_text(
        LAUGHS + "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n"
        "      summary: hi\n      tags: *i\n      responses: {'200': {description: ok}}\n"
    )
    docs, findings = read_corpus(corpus, Config())
    assert [d.doc_id for d in docs] == ["ok.md"]
    (bad,) = [f for f in findings if f.path == "api.yaml"]
    assert bad.code == "parse-error" and "YAML limits" in bad.message


def test_yaml_loader_counts_aliases_at_their_expanded_size_and_bounds_nesting() -> None:
    with pytest.raises(YamlLimitError, match="aliases"):
        load_yaml(LAUGHS, max_nodes=FRONT_MATTER_MAX_NODES)
    with pytest.raises(YamlLimitError, match="recursive"):
        load_yaml("a: &a [1, *a]")
    # libyaml parses deep nesting in quadratic time and its composer recurses in C (100,000 levels
    # crash the process): the bounded composer stops at the cap after a few hundred events
    with pytest.raises(YamlLimitError, match="nested"):
        load_yaml("[" * 1_000_000 + "]" * 1_000_000)
    load_yaml("[" * (YAML_MAX_DEPTH - 1) + "]" * (YAML_MAX_DEPTH - 1))
    # ordinary YAML, anchors and merge keys included, loads as the safe loader loads it
    text = "base: &b {k: v, n: 1}\nuse: *b\nmerged:\n  <<: *b\n  n: 2\nlist: [1, 2.5, true, null, '2024-01-02']\n"
    assert load_yaml(text) == yaml.safe_load(text)


def test_nested_non_cyclic_refs_are_cut_at_a_budget_with_a_finding(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    raw = json.dumps(nested_ref_spec())
    assert len(raw) < 15_000
    (corpus / "api.json").write_text(raw)
    prepared = prepare_corpus(corpus, Config())
    (doc,) = prepared.indexable
    # unbounded: 15 + 15^2 + 15^3 field lines per endpoint, 72,000 lines (~2.5 MB) for 20 endpoints
    fields = sum(1 for line in doc.text.splitlines() if line.lstrip().startswith("- `f"))
    assert fields <= 20 * openapi_mod._MAX_OP_LINES
    assert fields <= max(openapi_mod._MIN_SPEC_LINES, len(raw) // openapi_mod._BYTES_PER_LINE)
    assert "## GET /p19" in doc.text  # every endpoint keeps its section
    assert "schema-truncated" in _codes(prepared.findings, "api.json")
    assert len(chunk_document(doc, Config().chunking)) < 1_000


def test_oneof_chains_are_named_to_a_bounded_depth() -> None:
    # oneOf of eight refs, each a oneOf of eight refs, ... ten levels: 8^10 names unfolded without a bound
    schemas = {f"S{i}": {"oneOf": [{"$ref": f"#/components/schemas/S{i + 1}"}] * 8} for i in range(10)}
    schemas["S10"] = {"type": "string"}
    spec = openapi_mod._Spec({"components": {"schemas": schemas}})
    kind = openapi_mod._type_of(spec, {"$ref": "#/components/schemas/S0"}, frozenset())
    assert kind.count("|") < 8**openapi_mod._MAX_DEPTH


def test_dedup_buckets_never_hold_a_documents_own_chunks_for_it_and_stay_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # one file of one repeated line (thousands of identical chunks in one document) and 3,000 identical
    # notes: every chunk shares every LSH bucket with all the others
    same = "같은 줄이 반복됩니다. the same line again and again, word for word."
    chunks = [Chunk(chunk_id=f"r{i}", doc_id="repeat.md", text=same, start=0, end=len(same)) for i in range(3_000)]
    note = "똑같은 메모 본문입니다. an identical note body, copied into many notes."
    chunks += [Chunk(chunk_id=f"n{i}", doc_id=f"n{i}.md", text=note, start=0, end=len(note)) for i in range(3_000)]
    seen: list[int] = []
    real_others = dedup._Bucket.others

    def others(self: dedup._Bucket, doc: str) -> list[int]:
        found = real_others(self, doc)
        seen.append(len(found))
        assert doc not in self.by_doc or all(p not in self.by_doc[doc] for p in found)
        return found

    monkeypatch.setattr(dedup._Bucket, "others", others)
    result = mark_duplicates(chunks)
    assert max(seen) <= dedup._BUCKET_CAP  # constant work per chunk, not one step per earlier chunk
    assert result.candidates <= dedup._MAX_VERIFY * len(chunks)
    dup = result.dup_of
    assert (dup[:3_000] == -1).all()  # a document never folds into itself
    assert (dup[3_001:] == 3_000).all() and dup[3_000] == -1  # identical notes fold into the first note


def test_dedup_bucket_keeps_few_chunks_per_document() -> None:
    bucket = dedup._Bucket()
    for pos in range(1_000):
        bucket.remember(pos, "a.md")
    for pos in range(1_000, 1_100):
        bucket.remember(pos, f"n{pos}.md")
    assert bucket.size <= dedup._BUCKET_CAP
    assert bucket.others("zzz.md")[: dedup._PER_DOC] == list(range(dedup._PER_DOC))
    assert all(p >= 1_000 for p in bucket.others("a.md"))


def test_long_lines_and_tokens_are_findings() -> None:
    doc = Document(doc_id="x.md", path="x.md", title="x", text="# x\n" + "x" * (LONG_LINE + 10) + "\nend\n",
                   sources=("https://example.org",))
    codes = {f.code: f for f in lint_document(doc, Config())}
    assert "line 2 of the text" in codes["long-line"].message
    assert "long-token" in codes
    words = Document(doc_id="y.md", path="y.md", title="y", text=("word " * 5_000 + "\n") * 2,
                     sources=("https://example.org",))
    codes = {f.code for f in lint_document(words, Config())}
    assert "long-line" in codes and "long-token" not in codes
    assert LONG_TOKEN < LONG_LINE


def test_chunks_per_document_are_capped_with_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    import hanrag.chunking as chunking

    monkeypatch.setattr(chunking, "MAX_CHUNKS_PER_DOC", 50)
    text = "".join(f"## 제목 {i}\n본문 {i}.\n\n" for i in range(200))
    doc = Document(doc_id="many.md", path="many.md", title="t", text=text, sources=("https://example.org",))
    chunks, findings = chunk_corpus([doc], Config().chunking)
    assert len(chunks) == 50
    (cut,) = findings
    assert cut.code == "too-many-chunks" and cut.path == "many.md"
    assert MAX_CHUNKS_PER_DOC >= 45_000  # a 20 MB file of prose stays whole


def test_a_document_that_cannot_be_chunked_is_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    import hanrag.chunking as chunking

    docs = [Document(doc_id=n, path=n, title=n, text=f"# {n}\n본문.\n", sources=("s",)) for n in ("a.md", "b.md")]
    real = chunking.chunk_document

    def broken(doc: Document, cfg, findings=None):
        if doc.doc_id == "a.md":
            raise RecursionError("maximum recursion depth exceeded")
        return real(doc, cfg, findings)

    monkeypatch.setattr(chunking, "chunk_document", broken)
    chunks, findings = chunk_corpus(docs, Config().chunking)
    assert {c.doc_id for c in chunks} == {"b.md"}
    assert [(f.path, f.code) for f in findings] == [("a.md", "chunk-failed")]


# --- finding 8: documents kept, encodings read as documented ----------------------------------------


def test_an_impossible_front_matter_date_is_a_warning_and_the_document_stays(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "date.md").write_text(f"---\ntitle: 날짜\ndate: 2024-13-45\ntags: [a]\n---\n본문.\n{SOURCE}")
    docs, findings = read_corpus(corpus, Config())  # was read-failed (ValueError) and the document dropped
    (doc,) = docs
    assert doc.title == "날짜" and doc.modified == "2024-13-45" and doc.labels == ("a",)
    (warn,) = [f for f in findings if f.path == "date.md"]
    assert warn.severity == "warning" and "2024-13-45" in warn.message


def test_html_nested_400_deep_is_flattened_with_a_warning(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "deep.html").write_text(
        "<html><body><h1>깊은 페이지</h1>" + "<div>" * 400 + "<p>깊은 곳의 본문 https://example.org/deep</p>"
        + "</div>" * 400 + "</body></html>"
    )
    docs, findings = read_corpus(corpus, Config())  # was RecursionError and the document dropped
    (doc,) = docs
    assert "깊은 곳의 본문" in doc.text and doc.sources
    assert "deep-html" in _codes(findings, "deep.html")


def test_openapi_fields_of_the_wrong_type_keep_the_document(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    spec = {"swagger": "2.0", "info": {"title": "W", "version": 1}, "host": "api.example.org",
            "schemes": "https", "consumes": 5, "externalDocs": "nope", "servers": [{"url": 7}],
            "paths": {"/a": {"parameters": 3, "post": {"summary": "S", "tags": 5, "parameters": 7,
                                                        "responses": {"200": {"description": "ok"}}}}}}
    (corpus / "api.json").write_text(json.dumps(spec))
    docs, findings = read_corpus(corpus, Config())  # was TypeError: read-failed, the document dropped
    (doc,) = docs
    assert "## POST /a" in doc.text and "Tags: 5" in doc.text
    assert not [f for f in findings if f.severity == "error"]


def test_an_endpoint_the_renderer_cannot_read_keeps_its_heading_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = openapi_mod.render_operation

    def render(spec, method, path, item, op):
        if path == "/bad":
            raise TypeError("'int' object is not iterable")
        return real(spec, method, path, item, op)

    monkeypatch.setattr(openapi_mod, "render_operation", render)
    spec = {"openapi": "3.0.0", "info": {"title": "M", "version": "1"}, "servers": [{"url": "https://e.org"}],
            "paths": {"/bad": {"get": {"summary": "나쁜 것", "responses": {}}},
                      "/good": {"get": {"summary": "좋은 것", "responses": {"200": {"description": "ok"}}}}}}
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "api.json").write_text(json.dumps(spec))
    docs, findings = read_corpus(corpus, Config())
    (doc,) = docs
    assert "## GET /bad\n\n나쁜 것" in doc.text and "- 200: ok" in doc.text
    (bad,) = [f for f in findings if f.code == "malformed-field"]
    assert "GET /bad" in bad.message and bad.severity == "warning"


@pytest.mark.parametrize("codec", ["utf-32", "utf-32-le", "utf-32-be"])
def test_utf32_with_a_bom_is_read_as_utf32(codec: str) -> None:
    text = f"# 유티에프 삼십이\n{SOURCE}본문 ✓\n"
    data = ("\ufeff" + text).encode(codec) if codec != "utf-32" else text.encode(codec)
    decoded, findings = decode_bytes(data, "u32.md")
    assert decoded == text and not findings


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-8"])
def test_a_nul_is_binary_in_every_encoding(codec: str) -> None:
    data = ("\ufeff# 제목\n본문\x00끝\n").encode(codec)
    decoded, findings = decode_bytes(data, "nul.md")
    assert decoded is None
    assert [f.code for f in findings] == ["binary-file"]


def test_a_utf16_le_text_starting_with_a_bom_still_reads() -> None:
    text = "# 제목\nplain utf-16 text\n"
    assert decode_bytes(("\ufeff" + text).encode("utf-16-le"), "a.md") == (text, [])


def test_pdf_pages_of_one_line_each_keep_their_text(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write_pdf(corpus / "slides.pdf", [f"Slide {i}" for i in range(1, 6)], source="https://example.org/slides")
    docs, findings = read_corpus(corpus, Config())
    (doc,) = docs  # was "no text layer (a scan?)": the running-line removal dropped every line
    assert "Slide 3" in doc.text and doc.meta["pages"] == 5
    assert "no-text-layer" not in _codes(findings, "slides.pdf")


def test_pdf_running_headers_are_still_dropped(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    words = ["alpha", "bravo", "charlie", "delta"]
    pages = [f"ACME Handbook\nChapter on {w}: the {w} text.\nPage {i}" for i, w in enumerate(words, 1)]
    write_pdf(corpus / "book.pdf", pages, source="https://example.org/book")
    (doc,), _ = read_corpus(corpus, Config())
    assert "ACME Handbook" not in doc.text and "Page 2" not in doc.text and "Chapter on bravo" in doc.text


def test_walk_keeps_its_order_and_loop_detection(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    for sub in ("b/c", "a", "b/a"):
        (corpus / sub).mkdir(parents=True)
    for name in ("z.md", "a/x.md", "b/c/y.md", "b/a/w.md", "b/v.md"):
        _ok(corpus, name)
    (corpus / "b" / "c" / "up").symlink_to("..")
    os.chmod(corpus / "a", 0o755)
    cfg = Config()
    cfg.corpus.follow_symlinks = True
    docs, findings = read_corpus(corpus, cfg)
    assert [d.doc_id for d in docs] == ["a/x.md", "b/a/w.md", "b/c/y.md", "b/v.md", "z.md"]
    assert "symlink-loop" in _codes(findings, "b/c/up")


def test_lint_and_chunk_report_the_chunk_cap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    import hanrag.chunking as chunking
    from hanrag.cli import app

    monkeypatch.setattr(chunking, "MAX_CHUNKS_PER_DOC", 50)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    body = "".join(f"## 제목 {i}\n본문 {i}.\n\n" for i in range(200))
    (corpus / "many.md").write_text(f"---\nsource: https://example.org/many\n---\n{body}", encoding="utf-8")
    result = CliRunner().invoke(app, ["lint", str(corpus), "--json"])
    assert result.exit_code == 0, result.output
    assert any(f["code"] == "too-many-chunks" for f in json.loads(result.output)["findings"])
    out = tmp_path / "chunks.jsonl"
    result = CliRunner().invoke(app, ["chunk", str(corpus), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert len(out.read_text(encoding="utf-8").splitlines()) == 50
