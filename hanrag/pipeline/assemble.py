"""Chunks into a published snapshot: tokens (BM25), vectors (:mod:`hanrag.pipeline.vectors`), near-duplicate
folding, the corpus's glossary and sound keys, the chunk records, the ANN graph and the manifest, written
through :class:`hanrag.index.store.SnapshotWriter` under the index's build lock.

Change detection is per chunk by content hash: the index's embedding cache is keyed by (embedder identity,
sha256 of chunk text), so a rebuild embeds only texts it has never seen; tokens are cached the same way
(keyed by analyzer identity, language and text). Chunk ids are content hashes too, so "changed" means a new
chunk id in a document the previous snapshot already had, "added" a new chunk id in a new document,
"removed" a chunk id of the previous snapshot that is gone, "reused" one that is still there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.config import Config
from hanrag.embed import Embedder, identity_key
from hanrag.index import store
from hanrag.index.cache import CACHE_DIR, TokenCache, iter_tokens
from hanrag.index.dedup import folded_pairs_report, mark_duplicates
from hanrag.index.dense import ANN_FILE, build_ann
from hanrag.index.glossary import mine_glossary
from hanrag.index.links import sound_keys
from hanrag.index.snapshot import write_chunk_records
from hanrag.index.sparse import SparseBuilder, bm25_text
from hanrag.pipeline import vectors
from hanrag.pipeline.report import (
    BuildReport,
    BuildTimer,
    changes,
    previous_chunks,
    progress_bars,
    token_stats,
    token_warnings,
)
from hanrag.records import Chunk, Finding
from hanrag.text import get_analyzer
from hanrag.version import __version__

# the config sections a snapshot is built from: its manifest keeps them and their hash
BUILD_SECTIONS = ("chunking", "text", "lexicon", "bm25", "embedder", "index")


def tokenize_chunks(
    chunks: Sequence[Chunk], cfg: Config, cache_root: Path, analyzer: Any
) -> tuple[SparseBuilder, dict]:
    """Every chunk's index tokens, streamed batch by batch into the BM25 builder (never all held as strings)."""
    if analyzer is None:
        analyzer = get_analyzer(cfg)
    ident = analyzer.identity()
    cache = TokenCache(cache_root, identity_key(ident))
    builder = SparseBuilder()
    texts = [bm25_text(c, cfg.bm25.headings) for c in chunks]
    for part in iter_tokens(cache, analyzer, texts, [c.lang for c in chunks]):
        builder.add(part)
    return builder, ident


def find_duplicates(chunks: Sequence[Chunk], cfg: Config) -> tuple[dict[str, str], dict[str, Any], list[dict]]:
    """(dup chunk id -> kept chunk id, summary for the manifest, folded pairs by file) under ``cfg.index``."""
    if not cfg.index.dedup:
        return {}, {"duplicates": 0, "groups": 0, "threshold": None}, []
    t2s = None
    if cfg.text.opencc:
        import opencc  # lazy: only configs that fold traditional to simplified Chinese need it

        t2s = opencc.OpenCC(cfg.text.opencc).convert
    dedup = mark_duplicates(chunks, cfg.index.dedup_threshold, t2s=t2s, exclude=cfg.index.dedup_exclude)
    dup_map = {chunks[i].chunk_id: chunks[int(j)].chunk_id for i, j in enumerate(dedup.dup_of) if j >= 0}
    return dup_map, dedup.summary(), folded_pairs_report(chunks, dedup)


def duplicate_findings(chunks: Sequence[Chunk], cfg: Config) -> list[Finding]:
    """The folds a build would make, as info findings on the folded file (``hanrag lint``)."""
    _, _, folded = find_duplicates(chunks, cfg)
    return [
        Finding(f["dup_path"], "info", "near-duplicate",
                f"a chunk is the same text as one in {f['kept_path']} (Jaccard {f['jaccard']:.2f}) and is folded "
                "into it; to keep it on its own, add this path to [index] dedup_exclude")
        for f in folded
    ]


def _dup_rows(chunks: Sequence[Chunk], dup_map: dict[str, str]) -> np.ndarray:
    """dup_of per row (the kept row, -1 when kept): what the snapshot memory-maps instead of parsing the map."""
    out = np.full(len(chunks), -1, np.int64)
    if dup_map:
        wanted = set(dup_map) | set(dup_map.values())
        row_of = {c.chunk_id: i for i, c in enumerate(chunks) if c.chunk_id in wanted}
        for dup, kept in dup_map.items():
            out[row_of[dup]] = row_of[kept]
    return out


def build_from_chunks(
    chunks: Sequence[Chunk],
    index_dir: str | Path,
    cfg: Config,
    *,
    embedder: Embedder | None = None,
    analyzer: Any = None,
    findings: Sequence[Finding] = (),
    excluded: Sequence[tuple[str, str]] = (),
    documents: int | None = None,
    progress: bool = True,
    timer: BuildTimer | None = None,
) -> BuildReport:
    """Index ready-made chunks (benchmarks index eval corpora this way) and publish a snapshot.

    ``timer``: the caller's :class:`~hanrag.pipeline.report.BuildTimer` when it did work before (reading and
    chunking, timed as ``prepare``); the report's timings and ``total`` then include it."""
    timer = timer if timer is not None else BuildTimer()
    timer.add("prepare", 0.0)  # the caller's reading and chunking (none for ready-made chunks)
    index_dir = Path(index_dir)
    seen: set[str] = set()
    for c in chunks:
        if c.chunk_id in seen:
            raise store.IndexBuildError(f"duplicate chunk id {c.chunk_id!r} (document {c.doc_id})")
        seen.add(c.chunk_id)
    loading = vectors.load_in_background(cfg.embedder) if embedder is None else None
    with store.build_lock(index_dir):
        store.clean_leftovers(index_dir)
        cache_root = index_dir / CACHE_DIR
        diff = changes(chunks, previous_chunks(index_dir))

        writer = store.SnapshotWriter(index_dir)
        try:
            with progress_bars(progress) as task:
                with timer.stage("tokenize"):
                    postings, analyzer_identity = tokenize_chunks(chunks, cfg, cache_root, analyzer)
                dtype = np.float16 if cfg.embedder.dtype == "float16" else np.float32
                if loading is not None:
                    embedder = loading.result()
                try:
                    vec = vectors.embed_chunks(chunks, embedder, cache_root, vectors.call_size(cfg.embedder), task,
                                               writer.path / "embeddings.npy", dtype, cfg.embedder.headings)
                except BaseException:
                    # interrupted: the machine cache keeps what was embedded too (its atexit flush may find the
                    # embedder already collected)
                    if hasattr(embedder, "save"):
                        with contextlib.suppress(Exception):
                            embedder.save()
                    raise
                timer.add("embedding", vec.seconds)
                if hasattr(embedder, "save"):  # the machine cache: new vectors are shared with every index now
                    embedder.save()
            with timer.stage("dedup"):
                dup_map, dedup_info, folded = find_duplicates(chunks, cfg)
            with timer.stage("glossary"):
                # Kiwi tells a term's words from 파드의 or 그리고 (loaded only for a Hangul gloss)
                glossary = mine_glossary((c.text for c in chunks), (analyzer or get_analyzer(cfg)).is_nominal_word)
            with timer.stage("sparse"):
                sparse = postings.build(cfg.bm25)
                del postings
                sparse.save(writer.path / "sparse")
            with timer.stage("links"):
                keys = sound_keys(sparse.vocab, np.diff(sparse.indptr), (c.text for c in chunks))
                del sparse
            with timer.stage("write"):
                write_chunk_records(writer.path, chunks)  # streamed, with the offsets and id lookup
                writer.write_npy("dup_of.npy", _dup_rows(chunks, dup_map))
                writer.write_json("duplicates.json", {"dup_of": dup_map, **dedup_info})
            with timer.stage("ann"):
                # HNSW above ANN_MIN_ROWS chunks, read from the written matrix a block at a time
                dense_index = build_ann(vectors.NpyRows(writer.path / "embeddings.npy"), writer.path / ANN_FILE)
            with timer.stage("publish"):
                tok = token_stats(vec.tokens, embedder.max_tokens, embedder.truncates)
                warnings = token_warnings(tok)
                n_docs = documents if documents is not None else len({c.doc_id for c in chunks})
                counts = {"documents": n_docs, "chunks": len(chunks), "duplicates": len(dup_map),
                          "kept": len(chunks) - len(dup_map)}
                manifest = {
                    "hanrag_version": __version__,
                    "config_hash": cfg.hash(*BUILD_SECTIONS),
                    "config": {k: cfg.to_dict()[k] for k in BUILD_SECTIONS},
                    "embedder": {"identity": embedder.identity(), "dim": int(embedder.dim),
                                 "dtype": cfg.embedder.dtype, "max_tokens": int(embedder.max_tokens)},
                    "analyzer": analyzer_identity,
                    "counts": counts,
                    # chunks per language: the searcher's per-language dense stage visits only languages present
                    "langs": {lang: sum(1 for c in chunks if c.lang == lang)
                              for lang in sorted({c.lang for c in chunks})},
                    # mean chunk vector: q · mean = the query's mean cosine to the corpus, the background the
                    # "calibrated" fusion measures dense scores from
                    "dense_mean": [round(float(x), 6) for x in vec.mean] if vec.mean is not None else None,
                    # per language: a candidate's cosine is measured from the background of its own language
                    # (multilingual encoders put every same-language pair higher; see search/fusion.py)
                    "dense_mean_by_lang": {g: [round(float(x), 6) for x in m] for g, m in vec.lang_means.items()},
                    # the Korean <-> English pairs the corpus glosses itself (활성 프로브(liveness probe)): query
                    # expansion
                    "glossary": glossary,
                    # the corpus's English words and Korean loanwords by sound, to link across them
                    # (오토베큠 = autovacuum)
                    "sound_keys": keys,
                    "tokens": tok,
                    "dense_index": dense_index,
                    "dedup": dedup_info,
                    "warnings": warnings,
                    "build": {"added": diff.added, "changed": diff.changed, "removed": diff.removed,
                              "reused": diff.reused, "embedded": vec.embedded},
                }
                final = writer.publish(manifest)
        except BaseException:
            writer.abort()
            raise
        store.remove_old_snapshots(index_dir, cfg.index.keep_snapshots)
    return BuildReport(
        index_dir=str(index_dir),
        snapshot=final.name,
        documents=n_docs,
        chunks=len(chunks),
        added=diff.added,
        changed=diff.changed,
        removed=diff.removed,
        reused=diff.reused,
        embedded=vec.embedded,
        from_machine_cache=vec.from_machine,
        distinct_texts=vec.distinct,
        timings=timer.timings(),
        tokens=tok,
        dedup={**dedup_info, "folded": folded},
        findings=tuple(findings),
        warnings=tuple(warnings),
        excluded=tuple(excluded),
        files=diff.files,
    )
