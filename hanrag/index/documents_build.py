"""Index a ready set of Documents (connectors such as the Confluence sync build this way).

The documents go through the same lint, indexable check and chunker as a corpus folder,
then :func:`hanrag.index.build.build_from_chunks`, whose embedding cache keyed by chunk
text hash embeds only chunks it has never seen: handing it the whole document set after
one page changed re-embeds only that page's changed chunks.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from hanrag.chunking import chunk_document
from hanrag.config import Config
from hanrag.embed import Embedder
from hanrag.index.build import BuildReport, build_from_chunks
from hanrag.records import Document, Finding
from hanrag.validate import prepare_documents


def build_from_documents(
    documents: Sequence[Document],
    index_dir: str | Path,
    cfg: Config,
    *,
    embedder: Embedder | None = None,
    findings: Sequence[Finding] = (),
    progress: bool = False,
) -> BuildReport:
    """Lint, chunk and index ``documents``; publish a new snapshot of exactly this document set."""
    t0 = time.perf_counter()
    prepared = prepare_documents(list(documents), list(findings), cfg)
    all_findings, indexable, excluded = list(prepared.findings), prepared.indexable, list(prepared.excluded)
    chunks = [c for doc in indexable for c in chunk_document(doc, cfg.chunking)]
    return build_from_chunks(
        chunks,
        index_dir,
        cfg,
        embedder=embedder,
        findings=all_findings,
        excluded=excluded,
        documents=len(indexable),
        progress=progress,
        _t_start=t0,
        _t_prepare=time.perf_counter() - t0,
    )


__all__ = ["build_from_documents"]
