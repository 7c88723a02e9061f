"""Corpus rules: which documents may enter the index, and what ``hanrag lint`` reports.

Rules (each finding names the file):

* ``no-source`` (error): the document cites no source (no URL, no ``출처:``/``Source:``/``来源:``
  line; pattern ``corpus.source_pattern``). It is excluded from the index — and never
  deleted, moved or rewritten: hanrag only reads a user's files.
* ``long-file`` (info): more than ``corpus.max_lines_info`` lines.
* ``mixed-topics`` (warning): more than ``corpus.mixed_topic_lines`` lines and no ``---``
  separator line and no ``##`` (or deeper) heading: several topics in one file
  contaminate chunks.
* ``ai-draft`` (info): AI-written text; excluded from the index unless
  ``corpus.include_ai_draft``, and always tagged on its chunks when included.
* findings met while reading (encodings, binary, empty, too large) are passed through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hanrag.config import Config
from hanrag.records import Document, Finding
from hanrag.sources import read_corpus

_SEPARATOR = re.compile(r"^ {0,3}-{3,}[ \t]*$", re.MULTILINE)
_SUB_HEADING = re.compile(r"^ {0,3}#{2,6}[ \t]+\S", re.MULTILINE)
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class PreparedCorpus:
    """A corpus after reading and checking: what the index builder consumes."""

    documents: tuple[Document, ...]  # every document read
    indexable: tuple[Document, ...]  # the ones that go into the index
    findings: tuple[Finding, ...]  # reading findings + lint findings
    excluded: tuple[tuple[str, str], ...] = ()  # (doc_id, reason) of documents left out

    @property
    def has_errors(self) -> bool:
        return any(f.severity == "error" for f in self.findings)


def is_indexable(doc: Document, cfg: Config) -> tuple[bool, str]:
    """``(True, "")`` or ``(False, reason)``: no source, or ai-draft without ``include_ai_draft``."""
    if not doc.sources:
        return False, "no source cited"
    if doc.provenance == "ai-draft" and not cfg.corpus.include_ai_draft:
        return False, "ai-draft (set corpus.include_ai_draft = true to index it)"
    return True, ""


def _line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def lint_document(doc: Document, cfg: Config) -> list[Finding]:
    c = cfg.corpus
    findings: list[Finding] = []
    if not doc.sources:
        findings.append(
            Finding(doc.path, "error", "no-source",
                    "no source cited (a URL or a 출처:/Source:/来源: line); excluded from the index")
        )
    lines = _line_count(doc.text)
    if lines > c.max_lines_info:
        findings.append(Finding(doc.path, "info", "long-file", f"{lines} lines (over {c.max_lines_info})"))
    if lines > c.mixed_topic_lines and not _SEPARATOR.search(doc.text) and not _SUB_HEADING.search(doc.text):
        findings.append(
            Finding(doc.path, "warning", "mixed-topics",
                    f"mixed topics: {lines} lines with no '---' separator and no '##' heading; "
                    "split topics so chunks do not mix them")
        )
    if doc.provenance == "ai-draft":
        state = "included in the index, tagged ai-draft" if c.include_ai_draft else "excluded from the index"
        findings.append(Finding(doc.path, "info", "ai-draft", f"AI-written draft; {state}"))
    return findings


def lint(documents: list[Document] | tuple[Document, ...], read_findings: list[Finding] | tuple[Finding, ...],
         cfg: Config) -> list[Finding]:
    """Reading findings plus every rule's findings, sorted by path then severity."""
    findings = list(read_findings)
    try:
        re.compile(cfg.corpus.source_pattern)
    except re.error as exc:
        findings.append(Finding("<config>", "error", "bad-source-pattern", f"corpus.source_pattern: {exc}"))
    for doc in documents:
        findings.extend(lint_document(doc, cfg))
    return sorted(findings, key=lambda f: (f.path, _SEVERITY_ORDER.get(f.severity, 3), f.code))


def prepare_corpus(root: Path, cfg: Config) -> PreparedCorpus:
    """Read ``root``, lint it and choose the documents to index. Never touches the files."""
    documents, read_findings = read_corpus(Path(root), cfg)
    return prepare_documents(documents, read_findings, cfg)


def prepare_documents(documents: list[Document], read_findings: list[Finding], cfg: Config) -> PreparedCorpus:
    """Lint documents from any source (files, connectors) and choose the ones to index."""
    findings = lint(documents, read_findings, cfg)
    indexable: list[Document] = []
    excluded: list[tuple[str, str]] = []
    for doc in documents:
        ok, reason = is_indexable(doc, cfg)
        if ok:
            indexable.append(doc)
        else:
            excluded.append((doc.doc_id, reason))
    return PreparedCorpus(tuple(documents), tuple(indexable), tuple(findings), tuple(excluded))
