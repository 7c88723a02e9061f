"""Build from a corpus folder: ``hanrag build``, ``hanrag.build()`` and the server's rebuild."""

from __future__ import annotations

from pathlib import Path

from hanrag.config import Config
from hanrag.embed import Embedder
from hanrag.index import store
from hanrag.pipeline.assemble import build_from_chunks
from hanrag.pipeline.prepare import chunk_folder
from hanrag.pipeline.report import BuildReport, BuildTimer
from hanrag.validate import PreparedCorpus


def build_index(
    corpus: str | Path,
    index_dir: str | Path,
    cfg: Config,
    *,
    embedder: Embedder | None = None,
    progress: bool = True,
    prepared: PreparedCorpus | None = None,
    allow_empty: bool = False,
) -> BuildReport:
    """Read, check and chunk a corpus folder, then index it incrementally and publish a snapshot.

    ``prepared``: the corpus as :func:`hanrag.validate.prepare_corpus` already read it (the demo
    lints first), so it is not read twice. A corpus without one indexable document raises
    :class:`~hanrag.pipeline.prepare.EmptyCorpusError` (a wrong path, or a folder emptied by mistake, would
    otherwise publish an empty index over a good one) unless ``allow_empty``."""
    timer = BuildTimer()
    with timer.stage("prepare"):
        corpus = Path(corpus)
        if not corpus.exists():
            raise FileNotFoundError(f"{corpus}: no such corpus folder")
        store.check_index_source(index_dir, "files")  # never replace a Confluence-synced index with a corpus
        chunked = chunk_folder(corpus, cfg, prepared=prepared, allow_empty=allow_empty)
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
