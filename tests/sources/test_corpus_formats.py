"""The default corpus extensions read HTML and PDF beside Markdown: one build, chunks from all three."""

from __future__ import annotations

import json
from pathlib import Path

from fixtures.pdf import write_pdf
from hanrag.config import Config
from hanrag.index.snapshot import open_snapshot
from hanrag.pipeline import build_index

MARKDOWN = """---
title: 배포 절차
source: https://wiki.example.com/deploy
---
# 배포 절차

## 롤백

배포 후 오류율이 오르면 kubectl rollout undo 명령으로 이전 리비전으로 되돌린다.
"""

HTML = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Pager duty rotation</title>
<link rel="canonical" href="https://docs.example.com/oncall"></head><body>
<h1>Pager duty rotation</h1>
<h2>Handover</h2><p>The outgoing engineer writes a handover note listing every open incident and its owner.</p>
<h2>Escalation</h2><p>Escalate to the secondary after fifteen minutes without an acknowledgement.</p>
</body></html>"""

PAGES = [
    "Chapter 1: Backups\nSnapshots of the orders database are taken nightly and kept for thirty days.",
    "Chapter 2: Restores\nA restore drill replays the latest snapshot into a scratch cluster every quarter.",
]


def _pdf(path: Path) -> None:
    write_pdf(path, PAGES, title="Storage handbook", source="https://docs.example.com/storage")


def test_default_extensions_build_md_html_and_pdf(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "docs").mkdir(parents=True)
    (corpus / "docs" / "deploy.md").write_text(MARKDOWN, encoding="utf-8")
    (corpus / "docs" / "oncall.html").write_text(HTML, encoding="utf-8")
    _pdf(corpus / "docs" / "storage.pdf")
    # a data file that is no OpenAPI spec: read by default, skipped with an info finding
    (corpus / "docs" / "settings.json").write_text(json.dumps({"theme": "dark"}), encoding="utf-8")

    cfg = Config()  # the default extension list
    assert {".html", ".htm", ".pdf"} <= set(cfg.corpus.extensions)
    cfg.chunking.chunk_size, cfg.chunking.overlap = 100, 0  # small chunks: each PDF page gets its own
    report = build_index(corpus, tmp_path / "index", cfg, progress=False)
    assert report.documents == 3
    assert ("docs/settings.json", "info", "not-openapi") in {(f.path, f.severity, f.code) for f in report.findings}

    chunks = open_snapshot(tmp_path / "index").chunks
    by_doc: dict[str, list] = {}
    for chunk in chunks:
        by_doc.setdefault(chunk.doc_id, []).append(chunk)
    assert set(by_doc) == {"docs/deploy.md", "docs/oncall.html", "docs/storage.pdf"}
    html_text = " ".join(c.text for c in by_doc["docs/oncall.html"])
    assert "handover note" in html_text and "<h2>" not in html_text
    assert by_doc["docs/oncall.html"][0].source == "https://docs.example.com/oncall"
    pdf_chunks = by_doc["docs/storage.pdf"]
    assert {c.page for c in pdf_chunks} == {1, 2}
    assert {c.page for c in pdf_chunks if "restore drill" in c.text} == {2}
    assert {c.page for c in pdf_chunks if "taken nightly" in c.text} == {1}
    assert all(c.page is None for c in by_doc["docs/deploy.md"] + by_doc["docs/oncall.html"])
