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
* ``long-line`` (info): a line over :data:`LONG_LINE` characters (minified or generated text):
  the chunker cuts it at sentence ends and spaces, or anywhere when it has none.
* ``long-token`` (info): a run of over :data:`LONG_TOKEN` characters without whitespace (base64,
  a hash list, a glued table): it is cut mid-token and no query matches its pieces.
* findings met while reading (encodings, binary, empty, too large) are passed through.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hanrag.config import Config
from hanrag.records import Document, Finding
from hanrag.sources import read_corpus

_SEPARATOR = re.compile(r"^ {0,3}-{3,}[ \t]*$", re.MULTILINE)
_SUB_HEADING = re.compile(r"^ {0,3}#{2,6}[ \t]+\S", re.MULTILINE)
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
LONG_LINE = 20_000  # characters; a long paragraph of prose is a few thousand
LONG_TOKEN = 5_000  # characters without whitespace; well above a URL or a long CJK sentence
_WHITESPACE = np.array([c for c in range(0x3001) if chr(c).isspace()], dtype=np.uint32)


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


def _longest_run(codes: np.ndarray, breaks: np.ndarray) -> tuple[int, int]:
    """(length, 0-based index) of the longest run of ``codes`` between positions where ``breaks`` holds."""
    edges = np.concatenate(([-1], np.flatnonzero(breaks), [len(codes)]))
    lengths = np.diff(edges) - 1
    i = int(np.argmax(lengths))
    return int(lengths[i]), i


def _code_points(text: str) -> np.ndarray:
    # vectorised: a 20 MB file of one-character lines is ten million lines, too many to loop over
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


def _longest_line(text: str) -> tuple[int, int]:
    """(length, 1-based line number) of the longest line."""
    codes = _code_points(text)
    length, index = _longest_run(codes, codes == 10)
    return length, index + 1


def _longest_token(text: str) -> int:
    """Length of the longest run without whitespace (``str.isspace``, as ``str.split`` sees it)."""
    codes = _code_points(text)
    return _longest_run(codes, np.isin(codes, _WHITESPACE))[0]


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
    longest, at = _longest_line(doc.text) if len(doc.text) > LONG_LINE else (0, 0)
    if longest > LONG_LINE:
        findings.append(Finding(doc.path, "info", "long-line",
                                f"a line of {longest:,} characters (over {LONG_LINE:,}; line {at:,} of the text read, "
                                "after front matter or conversion); it is cut into chunks at sentence ends and "
                                "spaces, or anywhere when it has none"))
    token = _longest_token(doc.text) if len(doc.text) > LONG_TOKEN else 0
    if token > LONG_TOKEN:
        findings.append(Finding(doc.path, "info", "long-token",
                                f"{token:,} characters without a space or line break (over {LONG_TOKEN:,}: base64, "
                                "a hash, glued text?); it is cut mid-token and its pieces match no query"))
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
