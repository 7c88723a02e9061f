import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hanrag.bundled import SAMPLE_CORPUS
from hanrag.chunking import chunk_document, is_grapheme_boundary, prose_view, safe_cut, split_sections
from hanrag.config import ChunkingConfig, Config
from hanrag.front_matter import split_front_matter
from hanrag.records import Document

CFG = ChunkingConfig(chunk_size=120, overlap=30)


def doc(text: str, **kw) -> Document:
    return Document(doc_id="d.md", path="d.md", title="t", text=text, sources=("https://a.example",), **kw)


def nows(s: str) -> str:
    return re.sub(r"\s+", "", s)


def check_invariants(d: Document, cfg: ChunkingConfig) -> None:
    chunks = chunk_document(d, cfg)
    sections = split_sections(d.text, cfg.heading_level)
    for c in chunks:
        assert c.text == d.text[c.start : c.end]
        assert 0 < len(c.text) <= cfg.chunk_size
        sec = sections[c.section]
        assert sec.start <= c.start and c.end <= sec.end  # never spans two sections
        assert c.headings == sec.headings
    for sec in sections:
        own = [c for c in chunks if c.section == sec.index]
        assert own, "every section yields chunks"
        parts, prev_start, prev_end = [], sec.start - 1, sec.start
        for c in own:
            assert c.start > prev_start and c.start >= prev_end - cfg.overlap  # overlap ≤ cfg.overlap
            prev_start = c.start
            parts.append(d.text[max(c.start, prev_end) : c.end])
            prev_end = c.end
        assert nows("".join(parts)) == nows(d.text[sec.start : sec.end])


def test_no_chunk_crosses_separator_or_heading():
    text = "# Title\n\n" + "alpha beta. " * 30 + "\n\n---\n\n" + "gamma delta. " * 30 + "\n\n## H2\n\n" + "omega. " * 30
    chunks = chunk_document(doc(text), CFG)
    for c in chunks:
        assert "---" not in c.text
        assert not ("alpha" in c.text and "gamma" in c.text)
        assert not ("gamma" in c.text and "omega" in c.text)
        assert "## H2" not in c.text or c.text.startswith("## H2")
    h2 = [c for c in chunks if "omega" in c.text]
    assert h2 and all(c.headings == ("Title", "H2") for c in h2)
    assert {c.headings for c in chunks if "gamma" in c.text} == {("Title",)}
    check_invariants(doc(text), CFG)


def test_size_and_overlap_within_sections_not_across():
    text = "First one here. " * 40 + "\n\n---\n\n" + "Second one now. " * 40
    chunks = chunk_document(doc(text), CFG)
    assert all(len(c.text) <= CFG.chunk_size for c in chunks)
    for a, b in zip(chunks, chunks[1:], strict=False):
        if a.section == b.section:
            assert b.start < a.end, "overlap within a section"
            overlap = text[b.start : a.end]
            assert 0 < len(overlap) <= CFG.overlap
            assert overlap[0].isupper()  # snapped to a sentence start
        else:
            assert b.start > a.end, "no overlap across sections"


def test_korean_sentence_split():
    sentence = "갑목은 양의 나무다.그리고 인월에 태어나면 목이 왕하다고 본다요."
    text = "".join(f"{sentence[:-1]}{i}번째 문장이다." for i in range(20))  # no spaces between sentences
    chunks = chunk_document(doc(text), CFG)
    assert len(chunks) > 1
    for c in chunks[:-1]:
        assert c.text.endswith("다."), c.text[-10:]
    assert all(c.lang == "ko" for c in chunks)


def test_code_fences_and_tables_kept_whole():
    code = "```python\n# not a heading\n---\n\n" + "x = 1\n" * 5 + "```"
    table = "| a | b |\n|---|---|\n" + "| 1 | 2 |\n" * 4
    text = "Intro. " * 10 + "\n\n" + code + "\n\n" + table + "\n\n" + "Outro. " * 10
    cfg = ChunkingConfig(chunk_size=100, overlap=20)
    chunks = chunk_document(doc(text), cfg)
    assert len(split_sections(text, 2)) == 1  # '---' and '#' inside the fence do not split
    assert any(code in c.text for c in chunks)
    assert any(table.strip() in c.text for c in chunks)


def test_front_matter_not_split():
    raw = "---\ntitle: x\nsource: https://a.example\n---\n# Body\n\ntext here.\n"
    _, body, _ = split_front_matter(raw, "x.md")
    assert body.startswith("# Body")
    # a Document that still carries front matter: the block is neither a separator nor chunked
    chunks = chunk_document(doc(raw), CFG)
    assert len(chunks) == 1 and chunks[0].text.startswith("# Body")


def test_hard_cut_grapheme_safe():
    text = "e\u0301" * 200 + "👩\u200d💻" * 50 + "\u1100\u1161\u11a8" * 80  # combining, ZWJ, conjoining jamo
    cfg = ChunkingConfig(chunk_size=64, overlap=8)
    chunks = chunk_document(doc(text), cfg)
    for c in chunks:
        assert len(c.text) <= 64
        assert is_grapheme_boundary(text, c.start) and is_grapheme_boundary(text, c.end)
    assert not is_grapheme_boundary("e\u0301", 1)
    assert safe_cut("abe\u0301", 3, 0) == 2


def test_chunk_fields_and_stable_ids():
    d = doc("## A\n\n" + "word " * 100, tier=99, provenance="ai-draft", labels=("x",), page_starts=(0, 200, 400))
    c1, c2 = chunk_document(d, CFG), chunk_document(d, CFG)
    assert [c.chunk_id for c in c1] == [c.chunk_id for c in c2]
    assert len({c.chunk_id for c in c1}) == len(c1) and all(len(c.chunk_id) >= 16 for c in c1)
    assert {(c.tier, c.provenance, c.labels, c.source, c.lang) for c in c1} == {
        (99, "ai-draft", ("x",), "https://a.example", "en")}
    assert [c.page for c in c1] == [1 if c.start < 200 else 2 if c.start < 400 else 3 for c in c1]


def test_mixed_language_tags():
    text = ("## ko\n\n갑목은 양의 나무다.\n\n## zh\n\n甲木參天，脫胎要火。\n\n## en\n\nRoll back the deployment.\n\n"
            "## mix\n\n갑목(甲木) 용신은 병화(丙火)다.")
    langs = [c.lang for c in chunk_document(doc(text), ChunkingConfig())]
    assert langs == ["ko", "zh", "en", "ko"]


KO_PAGE_WITH_CODE = """## 레플리카셋 삭제

레플리카셋을 `--cascade=orphan` 옵션과 함께 [`kubectl delete`](/docs/reference/kubectl/kubectl-commands#delete)
를 사용하면 연관 파드에 영향을 주지 않고 삭제할 수 있다. 자세한 내용은 https://kubernetes.io/docs/concepts/ 를 본다.

```shell
kubectl proxy --port=8080
curl -X DELETE 'localhost:8080/apis/apps/v1/namespaces/default/replicasets/frontend' \
  -d '{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Orphan"}' -H "Content-Type: application/json"
```

그 다음 레플리카셋을 생성한다.

```shell
kubectl apply -f https://kubernetes.io/examples/controllers/frontend.yaml
kubectl get rs frontend -o jsonpath='{.spec.replicas}' --namespace default --output-version v1
```
"""


def test_language_is_read_from_prose_not_code():
    # by its letters the first chunk is mostly English (a command, a link target, a URL): its prose is Korean; the
    # code-only chunks and the one-line chunk between them take the page's language
    chunks = chunk_document(doc(KO_PAGE_WITH_CODE), ChunkingConfig(chunk_size=200, overlap=0))
    assert len(chunks) >= 3
    assert [c.lang for c in chunks] == ["ko"] * len(chunks)
    # an English page with Korean comments in its code stays English
    en = ("## Scale\n\nScale the replica set to three replicas and check the result.\n\n"
          "```shell\n# 레플리카셋을 3으로 스케일하고 결과를 확인한다\nkubectl scale --replicas=3 rs/foo\n```\n")
    assert {c.lang for c in chunk_document(doc(en), ChunkingConfig(chunk_size=80, overlap=0))} == {"en"}


def test_document_language_from_little_prose():
    # a page that is one Korean sentence over a list of API links: its letters are mostly the links', its prose
    # is Korean, and so is its chunk
    text = ("본 페이지에 기술된 API에 대해서 다음을 읽어본다.\n\n"
            "* [`PersistentVolume`](/docs/reference/kubernetes-api/persistent-volume-v1/)\n"
            "* [`PersistentVolumeClaim`](/docs/reference/kubernetes-api/config-and-storage-resources/pvc-v1/)\n")
    assert [c.lang for c in chunk_document(doc(text), ChunkingConfig())] == ["ko"]
    # a page of code alone is read from all of its text
    assert [c.lang for c in chunk_document(doc("```shell\nkubectl get pods --all-namespaces\n```\n"),
                                           ChunkingConfig())] == ["en"]


def test_prose_view_keeps_offsets_and_blanks_code():
    view = prose_view(KO_PAGE_WITH_CODE)
    assert len(view) == len(KO_PAGE_WITH_CODE)
    assert "kubectl" not in view and "https" not in view and "cascade" not in view
    assert "연관 파드에 영향을 주지 않고" in view and "그 다음 레플리카셋을 생성한다." in view
    # an unclosed fence runs to the end of the text; a fence in a list item (indented) is code too
    assert prose_view("본문이다.\n\n```\nkubectl get pods\n").strip() == "본문이다."
    assert "kubectl" not in prose_view("* 예시:\n\n    ```shell\n    kubectl get pods\n    ```\n")


def test_prose_view_of_a_hostile_long_line_is_linear():
    # a 2 MB line of "[a](" without ")": the link-target pattern once scanned to the line's end from every "](",
    # hours of work; in a child process with a timeout, so a regression fails instead of hanging the suite
    import subprocess
    import sys

    code = ("from hanrag.chunking import prose_view; v = prose_view('[a](' * 500_000 + '\\n[b](/docs/x) y');"
            "assert len(v) == 2_000_015 and v.endswith('\\n[b           y'), v[-20:]")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_invalid_config_rejected():
    import pytest

    with pytest.raises(ValueError):
        chunk_document(doc("x"), ChunkingConfig(chunk_size=100, overlap=80))


WORDS = st.sampled_from(["갑목은", "나무다.", "병화", "甲木", "參天，", "脫胎要火。", "deploy", "rollback.", "the",
                         "e\u0301", "👩\u200d💻", "요.", "x" * 70, "가" * 90, "!", "kubectl", "?"])
SEP = st.sampled_from([" ", " ", " ", "", "\n", "\n\n"])
PARA = st.lists(st.tuples(WORDS, SEP), min_size=1, max_size=60).map(lambda ws: "".join(w + s for w, s in ws).strip())
BLOCK = st.one_of(
    PARA,
    PARA,
    PARA,
    st.just("---"),
    st.sampled_from(["# Title", "## 용신", "## Rollback", "### minor"]),
    PARA.map(lambda p: "```\n" + p.replace("\n\n", "\n") + "\n---\n```"),
    st.just("| a | b |\n|---|---|\n| 1 | 2 |"),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(blocks=st.lists(BLOCK, min_size=1, max_size=12), size=st.integers(40, 300), ratio=st.floats(0, 0.45),
       level=st.integers(1, 3))
def test_property_invariants(blocks, size, ratio, level):
    text = "\n\n".join(blocks) + "\n"
    cfg = ChunkingConfig(chunk_size=size, overlap=int(size * ratio), heading_level=level)
    d = doc(text)
    check_invariants(d, cfg)
    # everything outside sections is separator lines or whitespace
    covered = "".join(d.text[s.start : s.end] for s in split_sections(text, level))
    assert nows(covered) == nows(re.sub(r"(?m)^-{3,}$", "", text)) or "```" in text


def test_a_paragraph_between_rules_is_not_front_matter():
    # "?" is YAML for {None: None}: read as front matter, the paragraph vanished from the index
    text = "---\n\n?\n\n---\n"
    assert "?" in "".join(text[s.start : s.end] for s in split_sections(text, 1))


def test_sample_corpus_config_chunks():

    from hanrag.validate import prepare_corpus

    root = SAMPLE_CORPUS
    cfg = Config()
    prepared = prepare_corpus(root, cfg)
    for d in prepared.documents:
        check_invariants(d, cfg.chunking)


def test_a_heading_only_section_joins_the_section_under_it():
    text = "# 스크랩 모음\n\n## 첫 글\n\n쿠버네티스 롤백 절차를 정리한다.\n\n## 둘째 글\n\n인증서 갱신 주기.\n"
    doc = Document(doc_id="scrap.md", path="scrap.md", title="스크랩", text=text, sources=("https://x",))
    chunks = chunk_document(doc, ChunkingConfig())
    assert not any(c.text.strip() == "# 스크랩 모음" for c in chunks)
    assert chunks[0].text.startswith("# 스크랩 모음\n\n## 첫 글") and "롤백" in chunks[0].text
    assert chunks[0].headings == ("스크랩 모음", "첫 글")
    for c in chunks:
        assert text[c.start:c.end] == c.text
    # a heading before a separator, or at the very end, stays where it is: nothing follows it to join
    assert [("# 끝\n")[s.start:s.end] for s in split_sections("# 끝\n")] == ["# 끝"]
    # a breadcrumb heading above a sibling heading (a synced Confluence page) stays first in the heading path
    page = "# Engineering / 배포 가이드\n\n# 개요\n\n본문.\n"
    assert [s.headings for s in split_sections(page)] == [("Engineering / 배포 가이드", "개요")]
