"""Sources into chunks: read a corpus folder (or take a connector's documents), lint them, keep the indexable
ones and cut them into chunks, with the findings met on the way."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hanrag.chunking import chunk_corpus, chunk_document
from hanrag.config import Config
from hanrag.index.store import IndexBuildError
from hanrag.records import Chunk, Document, Finding
from hanrag.validate import PreparedCorpus, prepare_corpus, prepare_documents


@dataclass(frozen=True)
class Chunked:
    """What the index is built from: the chunks of the indexable documents, and what the report tells of the
    rest."""

    chunks: tuple[Chunk, ...]
    findings: tuple[Finding, ...]  # reading, lint and chunking findings
    excluded: tuple[tuple[str, str], ...]  # (doc_id, reason) of documents left out
    documents: int  # indexable documents


class EmptyCorpusError(IndexBuildError):
    """A corpus folder with no indexable document; nothing was built."""

    def __init__(self, corpus: Path, prepared: PreparedCorpus, extensions: Sequence[str]) -> None:
        if prepared.documents:
            why = (f"{len(prepared.documents)} read, none indexable ({len(prepared.excluded)} excluded: "
                   f"see `hanrag lint {corpus}`)")
        else:
            why = f"no readable file of the types in corpus.extensions: {' '.join(extensions)}"
        super().__init__(f"{corpus}: no documents found ({why}); nothing was built")
        self.prepared = prepared


def chunk_folder(corpus: Path, cfg: Config, *, prepared: PreparedCorpus | None = None,
                 allow_empty: bool = False) -> Chunked:
    """Read, lint and chunk a corpus folder (``prepared``: as :func:`hanrag.validate.prepare_corpus` already
    read it). No indexable document raises :class:`EmptyCorpusError` unless ``allow_empty``."""
    if prepared is None:
        prepared = prepare_corpus(corpus, cfg)
    if not prepared.indexable and not allow_empty:
        raise EmptyCorpusError(corpus, prepared, cfg.corpus.extensions)
    # a document that cannot be chunked, or is cut at the chunk cap, is a finding; the rest still builds
    chunks, chunk_findings = chunk_corpus(prepared.indexable, cfg.chunking)
    return Chunked(tuple(chunks), (*prepared.findings, *chunk_findings), tuple(prepared.excluded),
                   len(prepared.indexable))


def chunk_documents(documents: Sequence[Document], findings: Sequence[Finding], cfg: Config) -> Chunked:
    """Lint and chunk documents from a connector (``findings``: the connector's own)."""
    prepared = prepare_documents(list(documents), list(findings), cfg)
    chunks = tuple(c for doc in prepared.indexable for c in chunk_document(doc, cfg.chunking))
    return Chunked(chunks, tuple(prepared.findings), tuple(prepared.excluded), len(prepared.indexable))
