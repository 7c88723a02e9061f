"""Writing chunks: upserts and deletes that keep hanrag's BM25 statistics exact.

The statistics live in the terms collection (df per term; N, total length and the
avgdl the stored tf parts were computed with, ``avgdl_ref``, in the meta row). Every
write updates them from the rows' raw term counts, so a write works on its own as
well as under a push. A write never claims completeness it does not have: the meta
row says ``state = "writing"`` first and ``"complete"`` (with the new statistics and a
new ``generation``) last; a collection left "writing" is only repaired by a full
write (``full=True``: every chunk, statistics from scratch).

avgdl drift: while the current avgdl stays within ``milvus.avgdl_tolerance`` of
``avgdl_ref``, stored vectors are kept and new chunks are written with ``avgdl_ref``
too, so all chunks stay mutually consistent (every score within the tolerance of the
exact one: d ln(tfpart) / d ln(avgdl) lies in (0, 1)). Past it, or on
``renormalize``, every stored sparse vector is recomputed from its raw counts.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hanrag.backends.milvus.bm25 import tf_vector
from hanrag.backends.milvus.connection import MilvusConnection
from hanrag.backends.milvus.errors import MilvusError, MilvusIncomplete
from hanrag.backends.milvus.expressions import lit
from hanrag.backends.milvus.schema import (
    ALL_FIELDS,
    META_KEY,
    SCHEMA_VERSION,
    check_fits,
    check_term,
    chunk_row,
    term_row,
)
from hanrag.records import Chunk


@dataclass(frozen=True)
class PushReport:
    """What one write or push did (``unchanged``: chunks skipped because their content hash matched)."""

    upserted: int
    deleted: int
    unchanged: int
    renormalized: bool
    total: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Statistics:
    """The collection's BM25 statistics after a write, and how df moves to get there."""

    n_docs: int
    total_len: int
    avgdl_ref: float | None  # the avgdl stored tf parts were computed with (None: none yet)
    df_delta: Counter[str] = field(default_factory=Counter)
    delete: list[str] = field(default_factory=list)  # ids to delete that are stored

    @property
    def avgdl(self) -> float:
        return self.total_len / self.n_docs if self.n_docs and self.total_len else 1.0  # empty: a harmless 1.0


def write(
    conn: MilvusConnection,
    chunks: Sequence[Chunk],
    vectors: np.ndarray,
    tokens: Sequence[Sequence[str]],
    *,
    delete: Sequence[str] = (),
    dup_of: Mapping[str, str] | None = None,
    also_in: Mapping[str, Sequence[str]] | None = None,
    manifest: Mapping[str, Any] | None = None,
    snapshot: str | None = None,
    renormalize: bool = False,
    full: bool = False,
) -> PushReport:
    """Upsert ``chunks`` (with their dense vectors and index tokens) and delete ``delete`` by chunk id.

    ``full=True`` says ``chunks`` is the complete collection (``delete`` = every other stored
    id): statistics are recomputed from scratch — the repair after an interrupted write,
    whose partial df updates cannot be trusted.
    """
    t0 = time.perf_counter()
    vectors = check_input(chunks, vectors, tokens)
    exists, old_meta = open_for_write(conn, vectors, full)
    bm = conn.cfg.bm25
    want_bm = {"method": bm.method, "k1": bm.k1, "b": bm.b}
    if old_meta.get("bm25") and old_meta["bm25"] != want_bm:
        renormalize = True  # different BM25 parameters: every stored tf part is stale
    counts = [Counter(t) for t in tokens]
    if full:
        stats = full_statistics(conn, exists, counts, delete)
        renormalize = False  # every row is rewritten below with the new avgdl
    else:
        stats = incremental_statistics(conn, exists, old_meta, chunks, counts, delete)
    renormalize = choose_avgdl(stats, renormalize, conn.mcfg.avgdl_tolerance)

    meta = begin(conn, old_meta, vectors)  # from here on the collection says "incomplete" until finish()
    term_ids, next_id = update_vocabulary(conn, stats.df_delta, counts, int(old_meta.get("next_term_id", 0)))
    rows = chunk_rows(conn, chunks, vectors, counts, tokens, term_ids, stats.avgdl_ref, dup_of or {}, also_in or {})
    if stats.delete:
        conn._delete_ids(stats.delete)
    conn._upsert_rows(conn.collection, rows, conn.mcfg.batch_size)
    if renormalize:
        renormalize_rows(conn, stats.avgdl_ref, skip={c.chunk_id for c in chunks})
    finish(conn, meta, stats, next_id, want_bm, manifest, snapshot)
    return PushReport(len(chunks), len(stats.delete), 0, renormalize, stats.n_docs, time.perf_counter() - t0)


def check_input(chunks: Sequence[Chunk], vectors: np.ndarray, tokens: Sequence[Sequence[str]]) -> np.ndarray:
    """The vectors as float32, once chunks, tokens and vectors are aligned and every chunk fits the schema."""
    vectors = np.asarray(vectors, dtype=np.float32)
    if len(chunks) != len(tokens) or len(chunks) != vectors.shape[0]:
        raise ValueError(f"{len(chunks)} chunks, {len(tokens)} token lists, {vectors.shape[0]} vectors")
    for c in chunks:
        check_fits(c)
    return vectors


def open_for_write(conn: MilvusConnection, vectors: np.ndarray, full: bool) -> tuple[bool, dict[str, Any]]:
    """(whether the collection existed, its meta row): creates it when missing, refuses another
    dimension, and refuses an incremental write to a collection an interrupted write left behind."""
    if not conn.exists():
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise MilvusError("cannot create the collection without vectors (their dimension sets the schema)")
        conn._create(int(vectors.shape[1]))
        return False, {}
    old_meta = conn._read_meta() or {}
    dim = old_meta.get("dim")
    if vectors.size and dim and vectors.shape[1] != dim:
        raise MilvusError(
            f"collection {conn.collection!r} at {conn.shown_uri} holds {dim}-d vectors, got {vectors.shape[1]}-d "
            "(another embedder?); push with --recreate"
        )
    if not full and old_meta.get("state") != "complete":
        raise MilvusIncomplete(
            f"Milvus collection {conn.collection!r} at {conn.shown_uri} was left incomplete by an interrupted "
            "write; its statistics cannot be updated incrementally: rerun `hanrag milvus push INDEX`"
        )
    return True, old_meta


def full_statistics(
    conn: MilvusConnection, exists: bool, counts: Sequence[Counter[str]], delete: Sequence[str]
) -> Statistics:
    """Statistics of exactly these chunks; every stored term's df is reset through the delta, and every
    id in ``delete`` (the stored ids not among the chunks) goes."""
    df_delta: Counter[str] = Counter()
    for c in counts:
        df_delta.update(c.keys())
    if exists:
        for r in conn._scan(conn.terms_collection, ["term", "df"], f"key != {lit(META_KEY)}"):
            df_delta[r["term"]] -= int(r["df"])
    total_len = sum(sum(c.values()) for c in counts)
    return Statistics(n_docs=len(counts), total_len=total_len, avgdl_ref=None, df_delta=df_delta, delete=list(delete))


def incremental_statistics(
    conn: MilvusConnection,
    exists: bool,
    old_meta: Mapping[str, Any],
    chunks: Sequence[Chunk],
    counts: Sequence[Counter[str]],
    delete: Sequence[str],
) -> Statistics:
    """Rows being replaced or deleted take their counts out, new rows put theirs in."""
    touched = list(dict.fromkeys([c.chunk_id for c in chunks] + list(delete)))
    old_rows = {}
    if exists and touched:
        rows = conn._query_ids(conn.collection, "chunk_id", touched, ["chunk_id", "tf", "n_tokens"])
        old_rows = {r["chunk_id"]: r for r in rows}
    stats = Statistics(
        n_docs=int(old_meta.get("n_docs", 0)),
        total_len=int(old_meta.get("total_len", 0)),
        avgdl_ref=old_meta.get("avgdl_ref"),
        delete=[cid for cid in delete if cid in old_rows],
    )
    for row in old_rows.values():
        stats.df_delta.subtract(row["tf"].keys())
        stats.n_docs -= 1
        stats.total_len -= int(row["n_tokens"])
    for c in counts:
        stats.df_delta.update(c.keys())
        stats.total_len += sum(c.values())
    stats.n_docs += len(chunks)
    return stats


def choose_avgdl(stats: Statistics, renormalize: bool, tolerance: float) -> bool:
    """Keep ``avgdl_ref`` while the current avgdl is within the tolerance of it, else move it to the
    current avgdl; returns whether stored rows must be re-normalised (only when there was a reference)."""
    ref = stats.avgdl_ref
    if renormalize or not ref or abs(stats.avgdl / ref - 1.0) > tolerance:
        stats.avgdl_ref = stats.avgdl
        return renormalize or bool(ref)
    return False


def begin(conn: MilvusConnection, old_meta: Mapping[str, Any], vectors: np.ndarray) -> dict[str, Any]:
    """Mark the collection as being written (the first write of every push)."""
    meta = dict(old_meta)
    meta.update(
        state="writing",
        started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        schema_version=SCHEMA_VERSION,
        dim=int(vectors.shape[1]) if vectors.ndim == 2 and vectors.size else old_meta.get("dim"),
    )
    conn._put_meta(meta)
    return meta


def update_vocabulary(
    conn: MilvusConnection, df_delta: Counter[str], counts: Sequence[Counter[str]], next_id: int
) -> tuple[dict[str, int], int]:
    """Write ids for new terms and df for changed ones; returns (term -> id for every term the chunks
    use, the next free term id)."""
    changed = [t for t, d in df_delta.items() if d]
    known = conn._term_rows(changed)
    term_ids: dict[str, int] = {}
    rows = []
    for term in changed:
        check_term(term)
        if term in known:
            tid, df = known[term]["term_id"], known[term]["df"] + df_delta[term]
        else:
            tid, df = next_id, df_delta[term]
            next_id += 1
        rows.append(term_row(term, tid, df))
        term_ids[term] = tid
    # ids of unchanged terms that the new chunks use
    need = {t for c in counts for t in c} - set(term_ids)
    term_ids.update({t: r["term_id"] for t, r in conn._term_rows(need).items()})
    conn._upsert_rows(conn.terms_collection, rows, conn.mcfg.batch_size * 4)
    return term_ids, next_id


def chunk_rows(
    conn: MilvusConnection,
    chunks: Sequence[Chunk],
    vectors: np.ndarray,
    counts: Sequence[Counter[str]],
    tokens: Sequence[Sequence[str]],
    term_ids: Mapping[str, int],
    avgdl: float | None,
    dup_of: Mapping[str, str],
    also_in: Mapping[str, Sequence[str]],
) -> list[dict[str, Any]]:
    bm = conn.cfg.bm25
    return [
        chunk_row(
            c, v, tf_vector(cnt, term_ids, avgdl or 1.0, bm.k1, bm.b, bm.method), cnt,
            dup_of=dup_of.get(c.chunk_id, ""), also_in=also_in.get(c.chunk_id, ()), tokens=toks,
        )
        for c, v, cnt, toks in zip(chunks, vectors, counts, tokens, strict=True)
    ]  # fmt: skip


def renormalize_rows(conn: MilvusConnection, avgdl: float | None, skip: set[str]) -> int:
    """Recompute every stored sparse vector with ``avgdl`` (from the raw counts kept per chunk)."""
    bm = conn.cfg.bm25
    ids = [r["chunk_id"] for r in conn._scan(conn.collection, ["chunk_id"]) if r["chunk_id"] not in skip]
    batch = conn.mcfg.batch_size
    for start in range(0, len(ids), batch):
        rows = conn._query_ids(conn.collection, "chunk_id", ids[start : start + batch], ALL_FIELDS)
        term_ids = {t: r["term_id"] for t, r in conn._term_rows({t for r in rows for t in r["tf"]}).items()}
        for r in rows:
            r["sparse"] = tf_vector(r["tf"], term_ids, avgdl or 1.0, bm.k1, bm.b, bm.method)
            r["dense"] = [float(x) for x in r["dense"]]
        conn._upsert_rows(conn.collection, rows, batch)
    return len(ids)


def finish(
    conn: MilvusConnection,
    meta: dict[str, Any],
    stats: Statistics,
    next_id: int,
    bm25: Mapping[str, Any],
    manifest: Mapping[str, Any] | None,
    snapshot: str | None,
) -> None:
    """The build marker, written last: the new statistics and ``state = "complete"``."""
    meta.update(
        state="complete",
        finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        generation=int(meta.get("generation", 0)) + 1,  # names this state (caches keyed on it)
        n_docs=stats.n_docs,
        n_chunks=stats.n_docs,
        total_len=stats.total_len,
        avgdl_ref=stats.avgdl_ref,
        next_term_id=next_id,
        bm25=dict(bm25),
    )
    if manifest is not None:
        meta["manifest"] = dict(manifest)
    if snapshot is not None:
        meta["snapshot"] = snapshot
    conn._put_meta(meta)
