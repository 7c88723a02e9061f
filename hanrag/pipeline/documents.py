"""Build from a ready set of Documents (connectors such as the Confluence sync build this way).

The documents go through the same lint, indexable check and chunker as a corpus folder, then
:func:`hanrag.pipeline.assemble.build_from_chunks`, whose embedding cache keyed by chunk text hash embeds only
chunks it has never seen: handing it the whole document set after one page changed re-embeds only that page's
changed chunks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hanrag.config import Config
from hanrag.embed import Embedder
from hanrag.pipeline.assemble import build_from_chunks
from hanrag.pipeline.prepare import chunk_documents
from hanrag.pipeline.report import BuildReport, BuildTimer
from hanrag.records import Document, Finding


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
    timer = BuildTimer()
    with timer.stage("prepare"):
        chunked = chunk_documents(documents, findings, cfg)
    return build_from_chunks(
        chunked.chunks,
        index_dir,
        cfg,
        embedder=embedder,
        findings=chunked.findings,
        excluded=chunked.excluded,
        documents=chunked.documents,
        progress=progress,
        timer=timer,
    )
