"""An index is data: the structural checks a snapshot passes before anything searches it.

Checksums say the bytes are the ones the build wrote (or that whoever rewrote them also rewrote the
checksums); these checks say the bytes make a usable index: dtypes and shapes, finite vectors and BM25
weights, row numbers and BM25 postings in range, a monotone ``indptr`` and offsets index, a vocabulary of
unique tokens the size the BM25 meta says, a language column of known languages that matches the manifest's
counts, ``dup_of`` a forest in range with no cycles, the HNSW graph's header against the manifest's claim.
Each failure is one line (:class:`~hanrag.index.store.IndexLoadError`).

Open stays cheap: an array up to :data:`~hanrag.index.store.FULL_VERIFY_MAX_BYTES` (hashed in full at open
anyway) is checked element by element; a bigger one (vectors, BM25 postings, records of a large index) by
its dtype and shape and the values of its first and last MiB, plus a sample of records decoded and compared
with the id and filter columns. ``hanrag doctor`` (``full=True``) checks every element and every record.
BM25 columns not checked at open are checked the first time a search reads them
(:meth:`hanrag.index.sparse.SparseIndex.check_column`).
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.index.store import EDGE_BYTES, FULL_VERIFY_MAX_BYTES, IndexLoadError
from hanrag.records import Lang, Provenance

LANGS = frozenset(typing.get_args(Lang))
PROVENANCES = frozenset(typing.get_args(Provenance))
SAMPLE_ROWS = 64  # records decoded at open and compared with the columns


def bad(path: Path, what: str) -> IndexLoadError:
    return IndexLoadError(f"{path}: {what} (corrupt index); rebuild the index")


def parts(arr: np.ndarray, full: bool) -> list[np.ndarray]:
    """The whole array, or its first and last :data:`EDGE_BYTES` worth of rows (what open reads of a big one)."""
    n = len(arr)
    row_bytes = max(1, arr.itemsize * int(np.prod(arr.shape[1:], dtype=np.int64)))
    edge = max(1, EDGE_BYTES // row_bytes)
    if full or n <= 2 * edge:
        return [np.asarray(arr)]
    return [np.asarray(arr[:edge]), np.asarray(arr[n - edge :])]


def is_small(manifest: dict[str, Any], rel: str) -> bool:
    info = (manifest.get("files") or {}).get(rel) or {}
    return int(info.get("bytes", 0)) <= FULL_VERIFY_MAX_BYTES


def check_offsets(path: Path, offsets: np.ndarray, size: int) -> None:
    """Record byte offsets: int64, from 0 to the file's size, strictly increasing (every record is a line)."""
    if offsets.dtype != np.int64:
        raise bad(path, f"offsets of dtype {offsets.dtype}, expected int64")
    if len(offsets) == 0 or int(offsets[0]) != 0 or int(offsets[-1]) != size:
        raise bad(path, "offsets do not run from 0 to the records' size")
    if len(offsets) > 1 and not bool(np.all(np.diff(offsets) > 0)):
        raise bad(path, "offsets are not increasing")


def check_ids(path: Path, chunk_ids: np.ndarray, sorted_ids: np.ndarray, id_rows: np.ndarray, full: bool) -> None:
    """The id lookup: sorted ids strictly increasing (unique, binary-searchable), each row id in range and
    naming the row that holds that id."""
    n = len(chunk_ids)
    if sorted_ids.dtype != chunk_ids.dtype or id_rows.dtype != np.int64:
        raise bad(path, f"id arrays of dtypes {chunk_ids.dtype}, {sorted_ids.dtype}, {id_rows.dtype}")
    if n == 0:
        return
    rows_all = np.asarray(id_rows)
    if int(rows_all.min()) < 0 or int(rows_all.max()) >= n:  # 8 bytes a row: always in full
        raise bad(path / "chunk_ids_rows.npy", f"row ids out of range 0..{n - 1}")
    edge = max(1, EDGE_BYTES // max(1, sorted_ids.itemsize))
    spans = [(0, n)] if full or n <= 2 * edge else [(0, edge), (n - edge, n)]
    for s, e in spans:
        part = np.asarray(sorted_ids[s:e])
        if len(part) > 1 and not bool(np.all(part[1:] > part[:-1])):
            raise bad(path / "chunk_ids_sorted.npy", "chunk ids not sorted or not unique")
        if not bool(np.array_equal(np.asarray(chunk_ids)[rows_all[s:e]], part)):
            raise bad(path / "chunk_ids_rows.npy", "row ids do not name the rows of their chunk ids")


def check_dup_of(path: Path, dup_of: np.ndarray) -> None:
    """Near-duplicate links: -1 (kept) or a row in range, forming a forest (no row folded into itself or a
    cycle). Pointer doubling: a link leads to a kept row within log2(n) jumps, or never (a cycle)."""
    n = len(dup_of)
    if dup_of.dtype != np.int64:
        raise bad(path, f"dup_of of dtype {dup_of.dtype}, expected int64")
    d = np.asarray(dup_of)
    if n == 0:
        return
    if int(d.min()) < -1 or int(d.max()) >= n:
        raise bad(path, f"near-duplicate links out of range -1..{n - 1}")
    linked = np.flatnonzero(d >= 0)
    if linked.size == 0:
        return
    root = np.arange(n, dtype=np.int64)
    root[linked] = d[linked]
    for _ in range(max(1, int(n).bit_length()) + 1):
        nxt = root[root]
        if np.array_equal(nxt, root):
            break
        root = nxt
    if not bool(np.all(d[root] < 0)):  # a row whose links never reach a kept row: a cycle
        raise bad(path, "near-duplicate links form a cycle")


def check_meta(path: Path, meta: np.ndarray, manifest: dict[str, Any]) -> None:
    """The filter columns: known languages and provenances, the language counts the manifest recorded."""
    langs = np.asarray(meta["lang"])
    counts = {g: int(np.count_nonzero(langs == g.encode())) for g in sorted(LANGS)}
    if sum(counts.values()) != len(meta):
        raise bad(path, f"language column holds values other than {', '.join(sorted(LANGS))}")
    recorded = manifest.get("langs")
    if isinstance(recorded, dict) and {g: c for g, c in counts.items() if c} != recorded:
        raise bad(path, f"language column counts {counts} differ from the manifest's {recorded}")
    prov = np.asarray(meta["provenance"])
    known = sum(int(np.count_nonzero(prov == p.encode())) for p in PROVENANCES)
    if known != len(meta):
        raise bad(path, f"provenance column holds values other than {', '.join(sorted(PROVENANCES))}")


def check_embeddings(path: Path, embeddings: np.ndarray, manifest: dict[str, Any], full: bool) -> None:
    """Vectors of the dtype the manifest names (float32 unless float16), every value finite."""
    dtype = (manifest.get("embedder") or {}).get("dtype") or "float32"
    want = np.float16 if dtype == "float16" else np.float32
    if embeddings.dtype != want:
        raise bad(path, f"embeddings of dtype {embeddings.dtype}, the manifest says {dtype}")
    for part in parts(embeddings, full):
        if part.size and not bool(np.isfinite(part).all()):
            raise bad(path, "embeddings hold NaN or infinite values")


def check_records(path: Path, chunks: Any, chunk_ids: np.ndarray, meta: np.ndarray, full: bool) -> None:
    """Records decoded and compared with the id and filter columns: every one (doctor) or a sample (open)."""
    n = len(chunks)
    if n == 0:
        return
    rows = range(n) if full else sorted({int(r) for r in np.linspace(0, n - 1, min(n, SAMPLE_ROWS))})
    for row in rows:
        c = chunks._decode(row)  # not the LRU: doctor reads every record once
        m = meta[row]
        if c.chunk_id.encode("utf-8") != chunk_ids[row]:
            raise bad(path, f"record {row + 1} holds chunk {c.chunk_id!r}, the id column says "
                            f"{chunk_ids[row].decode('utf-8', 'replace')!r}")
        if (c.lang.encode(), int(c.tier), c.provenance.encode()) != (m["lang"], int(m["tier"]), m["provenance"]):
            raise bad(path, f"record {row + 1} (lang {c.lang}, tier {c.tier}, {c.provenance}) differs from the "
                            "filter columns in chunk_meta.npy")
        if c.lang not in LANGS:
            raise bad(path, f"record {row + 1} has unknown language {c.lang!r}")


def check_dense_index(path: Path, manifest: dict[str, Any], n: int) -> str:
    """The manifest's claim about the graph: ``hnsw`` over exactly the n rows, or ``exact`` (no graph)."""
    info = manifest.get("dense_index") or {}
    kind = info.get("kind", "exact")
    if kind not in ("hnsw", "exact"):
        raise bad(path, f"unknown dense index kind {kind!r}")
    if kind == "hnsw" and info.get("rows") != n:
        raise bad(path, f"the manifest's HNSW graph holds {info.get('rows')!r} rows for {n} chunks")
    return kind


__all__ = ["LANGS", "SAMPLE_ROWS", "check_dense_index", "check_dup_of", "check_embeddings", "check_ids",
           "check_meta", "check_offsets", "check_records", "is_small", "parts"]
