"""HTML → Markdown and the Confluence HTML export reader, on files the tests write."""

from __future__ import annotations

import zipfile
from pathlib import Path

from hanrag.config import Config
from hanrag.sources import read_corpus
from hanrag.sources.html import html_to_markdown, parse_html_page, read_html

ARTICLE = """<!doctype html><html lang="ko"><head><meta charset="utf-8">
<title>Kubernetes 롤링 업데이트 정리 - Dev Blog</title>
<meta property="og:type" content="article"><meta property="og:title" content="Kubernetes 롤링 업데이트 정리">
<link rel="canonical" href="https://blog.example.com/k8s-rolling">
<meta property="article:published_time" content="2024-03-05T09:00:00+09:00">
<meta property="article:modified_time" content="2024-04-01T10:00:00+09:00">
<meta name="author" content="김개발"><meta name="keywords" content="k8s, deploy"></head><body>
<header><nav><a href="/">Home</a> | <a href="/tags">Tags</a> | <a href="/about">About us</a></nav></header>
<div class="sidebar"><h3>Popular posts</h3><ul><li><a href="/a">Post A</a></li></ul></div>
<article><h1>Kubernetes 롤링 업데이트 정리</h1>
<p>롤링 업데이트는 파드를 하나씩 교체하여 무중단 배포를 가능하게 합니다. 이 글에서는 maxSurge와
maxUnavailable 설정을 설명합니다. Deployment 객체의 strategy 필드에서 설정하며 기본값은 25%입니다.</p>
<h2>설정 값</h2>
<table><tr><th>필드</th><th>기본값</th></tr><tr><td>maxSurge</td><td>25% | 1</td></tr></table>
<h2>예제</h2>
<pre><code class="language-yaml">strategy:
  rollingUpdate:
    maxSurge: 1
</code></pre>
<p>배포 도중 문제가 생기면 kubectl rollout undo 명령으로 되돌릴 수 있습니다. snake_case_name 그대로.</p>
</article>
<footer><p>© 2024 Dev Blog. All rights reserved.</p></footer></body></html>"""


def test_article_metadata_and_boilerplate_removed() -> None:
    page = parse_html_page(ARTICLE)
    assert page.is_article
    assert page.title == "Kubernetes 롤링 업데이트 정리"
    assert page.canonical_url == "https://blog.example.com/k8s-rolling"
    assert page.modified == "2024-04-01T10:00:00+09:00" and page.published.startswith("2024-03-05")
    assert page.author == "김개발" and page.lang == "ko" and page.keywords == ("k8s", "deploy")
    md = page.markdown
    for junk in ("Popular posts", "All rights reserved", "About us"):
        assert junk not in md
    assert "## 설정 값" in md and "## 예제" in md
    assert "| maxSurge | 25% \\| 1 |" in md  # a pipe inside a cell is escaped, the row keeps two cells
    assert "```yaml\nstrategy:\n  rollingUpdate:\n    maxSurge: 1\n```" in md
    assert "snake_case_name" in md  # no markdown escaping inside words


def test_article_without_semantic_container_keeps_tables() -> None:
    html = ARTICLE.replace("<article>", '<div class="post">').replace("</article>", "</div>")
    md = parse_html_page(html).markdown
    assert "| maxSurge |" in md and "```yaml" in md
    assert "All rights reserved" not in md


def test_plain_page_kept_whole() -> None:
    html = "<html><body><nav>Docs index</nav><h2>Install</h2><p>Run <code>pip install x</code>.</p></body></html>"
    page = parse_html_page(html)
    assert not page.is_article
    assert "Docs index" in page.markdown and "## Install" in page.markdown and "`pip install x`" in page.markdown


def test_table_without_head_gets_its_first_row_as_header() -> None:
    md = html_to_markdown("<table><tr><td>천간</td><td>오행</td></tr><tr><td>甲</td><td>木</td></tr></table>")
    assert md.strip().splitlines() == ["| 천간 | 오행 |", "| --- | --- |", "| 甲 | 木 |"]


def test_read_html_document(tmp_path: Path) -> None:
    (tmp_path / "2_blog").mkdir()
    f = tmp_path / "2_blog" / "k8s.html"
    f.write_text(ARTICLE, encoding="utf-8")
    doc, findings = read_html(f, tmp_path, Config())
    assert findings == []
    assert doc is not None and doc.doc_id == "2_blog/k8s.html" and doc.tier == 2
    assert doc.source == "https://blog.example.com/k8s-rolling"
    assert doc.modified == "2024-04-01T10:00:00+09:00" and doc.author == "김개발"
    assert doc.labels == ("k8s", "deploy") and doc.meta["article"] is True


def test_cp949_page_and_empty_page(tmp_path: Path) -> None:
    f = tmp_path / "old.html"
    html = '<html><head><meta charset="euc-kr"></head><body><p>출처: 국립국어원 사전</p></body></html>'
    f.write_bytes(html.encode("cp949"))
    doc, _ = read_html(f, tmp_path, Config())
    assert doc is not None and "국립국어원" in doc.text and doc.source == "국립국어원 사전"
    empty = tmp_path / "empty.html"
    empty.write_text("<html><body><script>var a=1;</script></body></html>", encoding="utf-8")
    doc, findings = read_html(empty, tmp_path, Config())
    assert doc is None and findings[0].code == "empty-file" and findings[0].path == "empty.html"


def _export_page(title: str, page_id: int, body: str) -> str:
    return f"""<html><head><title>Dev Space : {title}</title></head><body><div id="page"><div id="main-header">
<div id="breadcrumb-section"><ol id="breadcrumbs"><li><a href="index.html">Dev Space</a></li>
<li><a href="Engineering_1.html">Engineering</a></li></ol></div>
<h1 id="title-heading" class="pagetitle"><span id="title-text"> Dev Space : {title} </span></h1></div>
<div id="content" class="view"><div class="page-metadata">Created by <span class="author"> 김철수</span>,
last modified on Mar 05, 2024</div><div id="main-content" class="wiki-content group">{body}</div></div>
<div id="footer">Document generated by Confluence</div></div></body></html>"""


def test_confluence_export_zip_via_read_corpus(tmp_path: Path) -> None:
    z = tmp_path / "dev-export.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("DEV/index.html", "<html><body><h1>Space index</h1></body></html>")
        zf.writestr("DEV/배포-가이드_101.html", _export_page("배포 가이드", 101, "<h2>롤링</h2><p>maxSurge 설정.</p>"))
        zf.writestr("DEV/Empty_102.html", _export_page("Empty", 102, ""))
        zf.writestr("DEV/styles/site.css", "body{}")
    cfg = Config()
    cfg.corpus.extensions = [".md", ".zip"]
    cfg.confluence.url = "https://wiki.example.com"
    docs, findings = read_corpus(tmp_path, cfg)
    assert [d.title for d in docs] == ["배포 가이드"]
    doc = docs[0]
    assert doc.doc_id == "dev-export.zip/DEV/배포-가이드_101.html"
    assert doc.text.startswith("# Dev Space / Engineering / 배포 가이드\n") and "## 롤링" in doc.text
    assert doc.source == "https://wiki.example.com/pages/viewpage.action?pageId=101"
    assert doc.author == "김철수" and doc.meta["page_id"] == "101"
    assert any(f.code == "empty-page" and "Empty_102" in f.path for f in findings)


def test_zip_that_is_not_an_export(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "misc.zip", "w") as zf:
        zf.writestr("readme.txt", "hello")
    (tmp_path / "bad.zip").write_bytes(b"not a zip")
    cfg = Config()
    cfg.corpus.extensions = [".zip"]
    docs, findings = read_corpus(tmp_path, cfg)
    assert docs == []
    assert {f.code for f in findings} == {"bad-zip", "not-confluence-export"}
