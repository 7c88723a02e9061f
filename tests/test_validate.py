import hashlib
from pathlib import Path

from hanrag.chunking import chunk_documents
from hanrag.config import Config, CorpusConfig
from hanrag.validate import is_indexable, lint, prepare_corpus


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def test_sourceless_file_reported_excluded_and_untouched(tmp_path):
    nosrc = write(tmp_path, "0. a/nosrc.md", "# 메모\n\n출처를 모르는 글이다.\n")
    write(tmp_path, "0. a/ok.md", "# OK\n\nbody\n출처: https://ko.wikipedia.org/wiki/오행\n")
    before = nosrc.read_bytes(), nosrc.stat().st_mtime_ns
    prepared = prepare_corpus(tmp_path, Config())
    chunk_documents(prepared.indexable, Config().chunking)
    errors = [f for f in prepared.findings if f.severity == "error"]
    assert [(f.path, f.code) for f in errors] == [("0. a/nosrc.md", "no-source")]
    assert [d.doc_id for d in prepared.indexable] == ["0. a/ok.md"]
    assert prepared.excluded == (("0. a/nosrc.md", "no source cited"),)
    assert nosrc.exists() and (nosrc.read_bytes(), nosrc.stat().st_mtime_ns) == before
    assert hashlib.sha256(nosrc.read_bytes()).hexdigest() == hashlib.sha256(before[0]).hexdigest()


def test_size_rules(tmp_path):
    long_body = "\n".join(f"line {i}" for i in range(450)) + "\nhttps://a.example\n"
    write(tmp_path, "mixed.txt", long_body)
    write(tmp_path, "sep.txt", long_body.replace("line 200\n", "---\n"))
    write(tmp_path, "head.md", "## topic\n" + long_body)
    write(tmp_path, "mid.txt", "\n".join(f"l{i}" for i in range(250)) + "\nhttps://a.example\n")
    prepared = prepare_corpus(tmp_path, Config())
    codes = {(f.path, f.code, f.severity) for f in prepared.findings}
    assert ("mixed.txt", "mixed-topics", "warning") in codes
    assert ("mixed.txt", "long-file", "info") in codes
    assert not any(c[1] == "mixed-topics" and c[0] != "mixed.txt" for c in codes)
    assert ("mid.txt", "long-file", "info") in codes and ("sep.txt", "long-file", "info") in codes
    mixed = next(f for f in prepared.findings if f.code == "mixed-topics")
    assert "mixed topics" in mixed.message


def test_ai_draft_listed_and_excluded_by_default(tmp_path):
    write(tmp_path, "ai.md", "---\nsource_type: ai-draft\n---\ntext https://a.example\n")
    prepared = prepare_corpus(tmp_path, Config())
    assert [f.code for f in prepared.findings] == ["ai-draft"]
    assert prepared.indexable == ()
    ok, reason = is_indexable(prepared.documents[0], Config())
    assert not ok and "ai-draft" in reason
    cfg = Config(corpus=CorpusConfig(include_ai_draft=True))
    included = prepare_corpus(tmp_path, cfg)
    assert [d.provenance for d in included.indexable] == ["ai-draft"]
    assert all(c.provenance == "ai-draft" for c in chunk_documents(included.indexable, cfg.chunking))


def test_lint_passes_reading_findings_and_bad_pattern(tmp_path):
    from hanrag.records import Finding

    read = [Finding("x.bin", "warning", "binary-file", "binary")]
    cfg = Config(corpus=CorpusConfig(source_pattern="(unclosed"))
    findings = lint([], read, cfg)
    assert {f.code for f in findings} == {"binary-file", "bad-source-pattern"}
