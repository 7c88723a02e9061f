from pathlib import Path

from hanrag.bundled import SAMPLE_CORPUS
from hanrag.config import Config, CorpusConfig
from hanrag.sources import READERS, read_corpus
from hanrag.sources.document import decode_bytes, find_sources, tier_for

EXAMPLES = SAMPLE_CORPUS


def write(root: Path, rel: str, data: str | bytes) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return p


def test_front_matter_tier_and_provenance(tmp_path):
    write(tmp_path, "0. 자체 정리/a.md", "---\ntitle: 갑목\nsource: https://ko.wikipedia.org/wiki/천간\n"
          "author: kim\nversion: 2\nmodified: 2024-05-01\nlabels: [saju, 천간]\nsource_type: ai-draft\n---\n"
          "# Heading\n\n본문이다.\n출처: 위키백과 https://en.wikipedia.org/wiki/Heavenly_Stems\n")
    write(tmp_path, "99. 온라인 자료 (정리 X)/b.txt", "# B title\n\nSource: a printed book\n")
    write(tmp_path, "c.md", "no heading here https://example.org/x.\n")
    docs, findings = read_corpus(tmp_path, Config())
    assert findings == []
    by_id = {d.doc_id: d for d in docs}
    a = by_id["0. 자체 정리/a.md"]
    assert a.title == "갑목" and a.tier == 0 and a.provenance == "ai-draft"
    assert a.sources == ("https://ko.wikipedia.org/wiki/천간", "https://en.wikipedia.org/wiki/Heavenly_Stems")
    assert a.author == "kim" and a.version == "2" and a.modified == "2024-05-01" and a.labels == ("saju", "천간")
    assert a.text.startswith("# Heading")  # front matter is not part of the text
    b = by_id["99. 온라인 자료 (정리 X)/b.txt"]
    assert b.tier == 99 and b.title == "B title" and b.sources == ("a printed book",) and b.provenance == "human"
    c = by_id["c.md"]
    assert c.tier == 0 and c.title == "c" and c.sources == ("https://example.org/x",)


def test_tier_map_and_ai_globs(tmp_path):
    write(tmp_path, "raw/x.md", "text https://a.example\n")
    cfg = Config(corpus=CorpusConfig(tiers={"raw": 7}, ai_draft_globs=["raw/*"], default_tier=3))
    (doc,), _ = read_corpus(tmp_path, cfg)
    assert doc.tier == 7 and doc.provenance == "ai-draft"
    assert tier_for("plain/x.md", cfg) == 3 and tier_for("x.md", cfg) == 3


def test_a_folder_named_for_a_year_is_not_a_tier():
    cfg = Config(corpus=CorpusConfig(default_tier=3))
    assert tier_for("99. 온라인 자료/x.md", cfg) == 99 and tier_for("07 notes/x.md", cfg) == 7
    # tiers are 0-99: a year (or a 30-digit number) would be a tier no filter can name
    assert tier_for("2024 notes/x.md", cfg) == 3 and tier_for(f"{'9' * 30}/x.md", cfg) == 3


def test_encodings_binary_empty_large(tmp_path):
    write(tmp_path, "bom.md", b"\xef\xbb\xbf# T\r\n\r\nline one\r\nline two https://a.example\r\n")
    write(tmp_path, "cp949.txt", "사주 메모입니다. 갑목은 양의 나무입니다. 출처: https://namu.wiki/w/사주\n".encode("cp949"))
    write(tmp_path, "bin.txt", b"abc\x00\x01\x02def" * 10)
    write(tmp_path, "empty.md", b"")
    write(tmp_path, "big.md", "x" * 200)
    cfg = Config(corpus=CorpusConfig(max_file_bytes=150))
    docs, findings = read_corpus(tmp_path, cfg)
    by_id = {d.doc_id: d for d in docs}
    assert by_id["bom.md"].text == "# T\n\nline one\nline two https://a.example\n"
    assert "갑목" in by_id["cp949.txt"].text
    codes = {(f.path, f.code) for f in findings}
    assert ("bin.txt", "binary-file") in codes
    assert ("empty.md", "empty-file") in codes
    assert ("big.md", "too-large") in codes
    enc = [f for f in findings if f.path == "cp949.txt"]
    assert enc and enc[0].code == "encoding" and ("cp949" in enc[0].message or "euc" in enc[0].message.lower())
    assert set(by_id) == {"bom.md", "cp949.txt"}


def test_undecodable_is_a_finding_not_a_crash(tmp_path):
    text, findings = decode_bytes(bytes([0xC3, 0x28, 0xA0, 0xA1, 0xFF, 0xFE, 0xFD]) * 3, "x.txt")
    assert text is not None or findings[0].severity == "error"
    assert findings and findings[0].path == "x.txt"


def test_bad_front_matter_and_unknown_reader(tmp_path):
    write(tmp_path, "bad.md", "---\ntitle: [unclosed\n---\nbody https://a.example\n")
    write(tmp_path, "skip.rst", "ignored")
    docs, findings = read_corpus(tmp_path, Config())
    assert [d.doc_id for d in docs] == ["bad.md"]
    assert [f.code for f in findings] == ["bad-front-matter"]


def test_readers_is_a_plain_dict():
    assert set(READERS) >= {".md", ".markdown", ".txt"}


def test_find_sources_patterns():
    text = "본문\n출처: 나무위키\nSource: https://kubernetes.io/docs/x/ .\n来源: 書\n[link](https://a.example/y)"
    assert find_sources(text, Config().corpus.source_pattern) == [
        "나무위키", "https://kubernetes.io/docs/x/", "書", "https://a.example/y"]


def test_sample_corpus_reads():
    docs, findings = read_corpus(EXAMPLES, Config())
    assert len(docs) >= 25
    assert {d.tier for d in docs} >= {0, 1, 99}
    codes = {f.code for f in findings}
    assert {"binary-file", "empty-file", "encoding"} <= codes
