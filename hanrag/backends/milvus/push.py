"""Pushing an embedded index into Milvus: read its snapshot, diff by content hash, write what changed.

A rerun converges: rows are upserts keyed by chunk id and diffs by content hash, and
after an interrupted write (meta state not "complete") nothing stored is trusted for
statistics, so the whole chunk set is written again with statistics from scratch.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.backends.milvus.errors import MilvusError
from hanrag.backends.milvus.reads import ReadsMixin
from hanrag.backends.milvus.schema import row_hash
from hanrag.backends.milvus.write import PushReport, write
from hanrag.config import Config
from hanrag.embed import identity_key
from hanrag.index.cache import CACHE_DIR, TokenCache, token_key
from hanrag.index.snapshot import Snapshot, open_snapshot
from hanrag.index.sparse import bm25_text, indexed_headings
from hanrag.records import Chunk
from hanrag.text import get_analyzer


def sync(
    conn: ReadsMixin,
    chunks: Sequence[Chunk],
    vectors: np.ndarray,
    tokens: Sequence[Sequence[str]],
    *,
    dup_of: Mapping[str, str] | None = None,
    also_in: Mapping[str, Sequence[str]] | None = None,
    manifest: Mapping[str, Any] | None = None,
    snapshot: str | None = None,
    renormalize: bool = False,
    recreate: bool = False,
) -> PushReport:
    """Make the collection mirror this full chunk set, writing only what changed (by content hash)."""
    t0 = time.perf_counter()
    if recreate:
        conn.drop()
    dup_of, also_in = dup_of or {}, also_in or {}
    exists = conn.exists()
    old_meta = (conn._read_meta() or {}) if exists else {}
    check_same_embedder(conn, old_meta, manifest)
    # after an interrupted write nothing stored can be trusted for statistics: rewrite it all
    full = old_meta.get("state") != "complete"
    stored = conn.stored_hashes() if exists else {}
    want = [
        i for i, c in enumerate(chunks) if full or stored.get(c.chunk_id) != chunk_hash(c, tokens[i], dup_of, also_in)
    ]
    current = {c.chunk_id for c in chunks}
    gone = [cid for cid in stored if cid not in current]
    unchanged = len(chunks) - len(want)
    if not want and not gone and not renormalize:
        update_meta_only(conn, old_meta, manifest, snapshot)
        return PushReport(0, 0, unchanged, False, len(chunks), time.perf_counter() - t0)
    vectors = np.asarray(vectors, dtype=np.float32)
    report = write(
        conn,
        [chunks[i] for i in want],
        vectors[want] if want else np.zeros((0, vectors.shape[1]), np.float32),
        [tokens[i] for i in want],
        delete=gone,
        dup_of=dup_of,
        also_in=also_in,
        manifest=manifest,
        snapshot=snapshot,
        renormalize=renormalize,
        full=full,
    )
    return PushReport(
        report.upserted, report.deleted, unchanged, report.renormalized, report.total, time.perf_counter() - t0
    )


def chunk_hash(c: Chunk, tokens: Sequence[str], dup_of: Mapping[str, str], also_in: Mapping[str, Sequence[str]]) -> str:
    return row_hash(c, also_in.get(c.chunk_id, ()), dup_of.get(c.chunk_id, ""), tokens)


def check_same_embedder(conn: ReadsMixin, old_meta: Mapping[str, Any], manifest: Mapping[str, Any] | None) -> None:
    old_embedder = (old_meta.get("manifest") or {}).get("embedder")
    new_embedder = (manifest or {}).get("embedder")
    if old_embedder and new_embedder and old_embedder != new_embedder:
        raise MilvusError(
            f"collection {conn.collection!r} at {conn.shown_uri} was pushed with another embedder "
            f"({old_embedder}); push with --recreate to replace it"
        )


def update_meta_only(
    conn: ReadsMixin, old_meta: Mapping[str, Any], manifest: Mapping[str, Any] | None, snapshot: str | None
) -> None:
    """Nothing to write: record the manifest and snapshot name the collection now mirrors."""
    if manifest is None and snapshot is None:
        return
    meta = dict(old_meta)
    if manifest is not None:
        meta["manifest"] = dict(manifest)
    if snapshot is not None:
        meta["snapshot"] = snapshot
    conn._put_meta(meta)


def snapshot_tokens(cfg: Config, index_dir: str | Path, snap: Snapshot, analyzer: Any = None) -> list[list[str]]:
    """The index tokens of every snapshot row: from the build's token cache, else by re-tokenising.

    Re-tokenising needs an analyzer with the snapshot's identity (same settings, lexicons and
    library versions); either way each row's token count is checked against the BM25 index's
    stored document length, so a push never indexes tokens that differ from the embedded index.
    """
    ident = snap.manifest.get("analyzer") or {}
    cache = TokenCache(Path(index_dir) / CACHE_DIR, identity_key(ident)) if ident else None
    headings = indexed_headings(snap.manifest)  # as it was built
    texts = [bm25_text(c, headings) for c in snap.chunks]
    keys = [token_key(t, c.lang) for c, t in zip(snap.chunks, texts, strict=True)]
    tokens: list[list[str] | None] = [cache.get(k) if cache else None for k in keys]
    missing = [i for i, t in enumerate(tokens) if t is None]
    if missing:
        analyzer = analyzer or get_analyzer(cfg)
        if ident and analyzer.identity() != ident:
            raise MilvusError(
                f"{index_dir}: the token cache is gone and this config's analyzer differs from the index's "
                "(text/lexicon settings or library versions); push with the index's config or rebuild the index"
            )
        for i in missing:
            tokens[i] = list(analyzer.tokenize(texts[i], snap.chunks[i].lang))
    doc_lens = np.asarray(snap.sparse.doc_lens)
    for i, t in enumerate(tokens):
        if len(t or ()) != int(doc_lens[i]):
            raise MilvusError(
                f"{index_dir}: chunk {snap.chunks[i].chunk_id} has {len(t or ())} tokens but the BM25 index "
                f"counted {int(doc_lens[i])}; rebuild the index before pushing"
            )
    return [list(t or ()) for t in tokens]


def read_snapshot_for_push(cfg: Config, index_dir: str | Path, analyzer: Any = None) -> dict[str, Any]:
    """Everything a push needs from the embedded index at ``index_dir`` (its published snapshot)."""
    snap = open_snapshot(index_dir, verify=True)
    chunks = list(snap.chunks)
    dup_of = {chunks[i].chunk_id: chunks[int(j)].chunk_id for i, j in enumerate(snap.dup_of) if j >= 0}
    also_in = {chunks[r].chunk_id: list(snap.also_in(r)) for r in snap.folded}
    bm = snap.manifest.get("config", {}).get("bm25")
    want = {"method": cfg.bm25.method, "k1": cfg.bm25.k1, "b": cfg.bm25.b}
    if bm and {k: bm.get(k) for k in want} != want:
        raise MilvusError(f"{index_dir}: the index was built with bm25 {bm}, this config says {want}")
    return {
        "chunks": chunks,
        "vectors": np.asarray(snap.embeddings, dtype=np.float32),
        "tokens": snapshot_tokens(cfg, index_dir, snap, analyzer),
        "dup_of": dup_of,
        "also_in": also_in,
        "manifest": {k: v for k, v in snap.manifest.items() if k != "files"},
        "snapshot": snap.name,
    }
