"""A published snapshot, opened read-only: what the embedded backend searches.

Nothing proportional to the corpus is parsed at open (format 3): chunk records stay in
``chunks.jsonl`` and are decoded when a row is asked for (``chunks_offsets.npy`` holds each
record's byte range), chunk ids are found by binary search in ``chunk_ids_sorted.npy``,
vectors, BM25 arrays, near-duplicate links and the HNSW graph are memory-mapped. So opening a
million-chunk index takes well under a second and RSS grows only with the pages searches touch.
"""

from __future__ import annotations

import functools
import json
import mmap
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.fsutil import load_npy
from hanrag.index import integrity
from hanrag.index.dense import ANN_FILE, AnnIndex
from hanrag.index.store import (
    POINTER,
    POINTER_SUM,
    IndexLoadError,
    check_snapshot_tree,
    current_snapshot_dir,
    index_key,
    read_manifest,
    read_pointer_full,
    verify_files,
)
from hanrag.records import Chunk

# --- chunk records: written streaming, read by row ----------------------------------------------

# the filterable fields of every row as columns: a lang / tier / provenance filter becomes a vectorised
# comparison instead of decoding every record (seconds at 1M chunks, and the cross-lingual stage filters
# by language on every search until the mask is cached)
META_DTYPE = np.dtype([("lang", "S8"), ("tier", "<i4"), ("provenance", "S16")])


def write_chunk_records(directory: Path, chunks: Iterable[Chunk]) -> int:
    """Write ``chunks.jsonl`` one record at a time, with its byte offsets and the sorted id lookup.

    Holds only the ids and offsets in memory (not the records), so a million-chunk build streams."""
    offsets = [0]
    ids: list[bytes] = []
    meta: list[tuple[str, int, str]] = []
    with open(directory / "chunks.jsonl", "wb") as fh:
        for c in chunks:
            line = (json.dumps(c.to_dict(), ensure_ascii=False) + "\n").encode("utf-8")
            fh.write(line)
            offsets.append(offsets[-1] + len(line))
            ids.append(c.chunk_id.encode("utf-8"))
            meta.append((c.lang, c.tier, c.provenance))
    np.save(directory / "chunk_meta.npy", np.array(meta, dtype=META_DTYPE), allow_pickle=False)
    width = max((len(i) for i in ids), default=1)
    id_arr = np.array(ids, dtype=f"S{width}") if ids else np.zeros(0, "S1")
    order = np.argsort(id_arr, kind="stable")
    np.save(directory / "chunks_offsets.npy", np.asarray(offsets, np.int64), allow_pickle=False)
    np.save(directory / "chunk_ids.npy", id_arr, allow_pickle=False)
    np.save(directory / "chunk_ids_sorted.npy", id_arr[order], allow_pickle=False)
    np.save(directory / "chunk_ids_rows.npy", order.astype(np.int64), allow_pickle=False)
    return len(ids)


class ChunkRecords(Sequence[Chunk]):
    """The snapshot's chunks as a read-only sequence, each record decoded from the mapped file on access."""

    def __init__(self, path: Path, offsets: np.ndarray) -> None:
        self.path = path
        self.offsets = offsets
        # the map holds its own handle on the file (mmap duplicates the descriptor), so the file is closed here:
        # an index no longer leaves an open file object for the collector to warn about
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size != int(offsets[-1]):
                raise IndexLoadError(f"{path}: {size} bytes, the offsets index says {int(offsets[-1])}; "
                                     "rebuild the index")
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        # decoded records of recent hits: a search reads its candidates' records more than once (ids, texts,
        # then the hits), and popular chunks recur across searches; 8192 records are a few MB
        self._cached = functools.lru_cache(maxsize=8192)(self._decode)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def _one(self, row: int) -> Chunk:
        return self._cached(row)

    def _decode(self, row: int) -> Chunk:
        s, e = int(self.offsets[row]), int(self.offsets[row + 1])
        try:
            return Chunk.from_dict(json.loads(self._map[s:e]))
        except (json.JSONDecodeError, UnicodeDecodeError, TypeError) as exc:
            raise IndexLoadError(f"{self.path}:{row + 1}: bad chunk record ({exc}); rebuild the index") from None

    def __getitem__(self, row):
        if isinstance(row, slice):
            return [self._one(r) for r in range(*row.indices(len(self)))]
        row = int(row)
        if row < 0:
            row += len(self)
        if not 0 <= row < len(self):
            raise IndexError(f"chunk row {row} out of range ({len(self)} chunks)")
        return self._one(row)

    def __iter__(self) -> Iterator[Chunk]:
        for r in range(len(self)):
            yield self._one(r)

    def many(self, rows: np.ndarray) -> list[Chunk]:
        """The records of rows already checked (:meth:`Snapshot.rows`): a search reads hundreds per stage, and the
        per-row checks of ``self[row]`` cost more than the cached records."""
        cached = self._cached
        return [cached(r) for r in rows.tolist()]


class RowLookup:
    """chunk id -> row by binary search over the memory-mapped sorted ids (a dict of 1M ids costs ~150 MB
    and a second to build at every open)."""

    def __init__(self, sorted_ids: np.ndarray, rows: np.ndarray, n: int | None = None) -> None:
        self.ids, self.rows = sorted_ids, rows
        self.n = len(rows) if n is None else n

    def __len__(self) -> int:
        return len(self.rows)

    def get(self, chunk_id: str, default: int | None = None) -> int | None:
        row = int(self.many([chunk_id])[0])
        return default if row < 0 else row

    def __getitem__(self, chunk_id: str) -> int:
        row = self.get(chunk_id)
        if row is None:
            raise KeyError(chunk_id)
        return row

    def many(self, chunk_ids: Sequence[str]) -> np.ndarray:
        """The rows of many ids in one binary search (a search looks up hundreds of candidates: one call each cost
        more than the rest of the fusion); -1 for an id the index does not hold."""
        out = np.full(len(chunk_ids), -1, dtype=np.int64)
        if not len(self.ids) or not len(chunk_ids):
            return out
        size = self.ids.dtype.itemsize
        encoded = [c.encode("utf-8") for c in chunk_ids]
        fits = np.array([len(k) <= size for k in encoded], dtype=bool)  # a longer key would be cut, then match
        keys = np.array([k if len(k) <= size else b"" for k in encoded], dtype=self.ids.dtype)
        at = np.minimum(np.searchsorted(self.ids, keys), len(self.ids) - 1)
        found = fits & (self.ids[at] == keys)
        rows = np.asarray(self.rows[at], dtype=np.int64)
        bad = found & ((rows < 0) | (rows >= self.n))
        if bad.any():  # checked at open; this guards a file changed since
            cid = chunk_ids[int(np.flatnonzero(bad)[0])]
            raise IndexLoadError(f"chunk id {cid!r} maps to a row out of range (corrupt index); rebuild the index")
        out[found] = rows[found]
        return out

    def __contains__(self, chunk_id: object) -> bool:
        return isinstance(chunk_id, str) and self.get(chunk_id) is not None


@dataclass
class Snapshot:
    path: Path
    manifest: dict[str, Any]
    chunks: Sequence[Chunk]  # ChunkRecords: decoded on access
    row_of: RowLookup
    chunk_ids: np.ndarray  # chunk id (bytes) per row, memory-mapped: ids of hits without decoding records
    embeddings: np.ndarray  # (n, d) float32/float16, memory-mapped
    sparse: Any  # hanrag.index.sparse.SparseIndex
    dup_of: np.ndarray  # int64 per row: kept row, -1 when the row is kept itself (memory-mapped)
    meta: np.ndarray | None = None  # META_DTYPE per row (memory-mapped): the columns filters test
    ann: AnnIndex | None = None  # the HNSW graph; None when the index is small enough for exact search
    _doc_rows: dict[str, list[int]] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.path.name

    def __len__(self) -> int:
        return len(self.chunks)

    @property
    def doc_rows(self) -> dict[str, list[int]]:
        """doc id -> its rows in text order; built on first use (it reads every record)."""
        if self._doc_rows is None:
            doc_rows: dict[str, list[int]] = {}
            starts: list[int] = []
            for i, c in enumerate(self.chunks):
                doc_rows.setdefault(c.doc_id, []).append(i)
                starts.append(c.start)
            for rows in doc_rows.values():
                rows.sort(key=lambda r: (starts[r], r))
            self._doc_rows = doc_rows
        return self._doc_rows

    @cached_property
    def kept(self) -> np.ndarray:
        """Rows that may be returned on their own (near-duplicates are folded into their kept copy)."""
        return self.dup_of < 0

    @cached_property
    def folded(self) -> dict[int, tuple[int, ...]]:
        """kept row -> rows of its near-duplicates."""
        out: dict[int, list[int]] = {}
        for row in np.flatnonzero(self.dup_of >= 0).tolist():
            out.setdefault(int(self.dup_of[row]), []).append(row)
        return {k: tuple(v) for k, v in out.items()}

    def rows_of_doc(self, doc_id: str) -> list[int]:
        return self.doc_rows.get(doc_id, [])

    def also_in(self, row: int) -> tuple[str, ...]:
        """Sources (or paths) of the near-duplicates folded into ``row``, without repeats."""
        own = self.chunks[row].source or self.chunks[row].path
        names = []
        for r in self.folded.get(row, ()):
            c = self.chunks[r]
            name = c.source or c.path or c.doc_id
            if name != own and name not in names:
                names.append(name)
        return tuple(names)

    def rows(self, chunk_ids: Sequence[str]) -> np.ndarray:
        rows = self.row_of.many(chunk_ids)
        if (rows < 0).any():
            raise KeyError(f"unknown chunk id {chunk_ids[int(np.flatnonzero(rows < 0)[0])]!r} in index {self.path}")
        return rows


def _npy(path: Path, *, ndim: int, kind: str) -> np.ndarray:
    """A memory-mapped array of the snapshot, its shape and dtype kind checked."""
    try:
        arr = load_npy(path, "r")
    except (ValueError, OSError) as exc:
        raise IndexLoadError(f"{path}: unreadable ({exc}); rebuild the index") from None
    if arr.ndim != ndim or arr.dtype.kind not in kind:
        raise IndexLoadError(f"{path}: unexpected array {arr.dtype}{arr.shape} (corrupt index); rebuild the index")
    return arr


def load_snapshot(path: Path, *, verify: bool | str = True, manifest_sha256: str | None = None) -> Snapshot:
    """Open one snapshot folder. ``verify``: True checks every file's size and the sha256 of small files
    (big ones by their first/last MiB, :func:`~hanrag.index.store.verify_files`), ``"full"`` the sha256 of
    every file (``hanrag doctor``), False none; the manifest's own checksum, its file list and
    ``manifest_sha256`` from ``CURRENT`` always are, and so is the folder's shape (real folders, regular
    files). The contents are checked as data (:mod:`hanrag.index.integrity`): in full with ``"full"``, else
    cheaply. With ``HANRAG_INDEX_KEY`` set the seal is checked and every file hashed in full."""
    from hanrag.index.sparse import SparseIndex

    path = Path(path)
    if not path.is_dir():
        raise IndexLoadError(f"{path}: snapshot folder missing")
    check_snapshot_tree(path)
    key = index_key(IndexLoadError)
    manifest = read_manifest(path, manifest_sha256, key)
    if manifest.get("snapshot") != path.name:
        raise IndexLoadError(f"{path}: the manifest names snapshot {str(manifest.get('snapshot'))[:80]!r}, not "
                             "this folder; rebuild the index")
    if key is not None:
        verify = "full"  # a seal over checksums only the edges of big files were compared with would seal little
    if verify:
        verify_files(path, manifest, full=verify == "full")
    full = verify == "full"

    def deep(rel: str) -> bool:  # every element of this file: doctor, or a file open hashes in full anyway
        return full or integrity.is_small(manifest, rel)

    offsets = _npy(path / "chunks_offsets.npy", ndim=1, kind="i")
    if len(offsets) == 0 or int(offsets[0]) != 0:
        raise IndexLoadError(f"{path / 'chunks_offsets.npy'}: corrupt offsets index; rebuild the index")
    integrity.check_offsets(path / "chunks_offsets.npy", offsets, (path / "chunks.jsonl").stat().st_size)
    chunks = ChunkRecords(path / "chunks.jsonl", offsets)
    n = len(chunks)
    chunk_ids = _npy(path / "chunk_ids.npy", ndim=1, kind="S")
    sorted_ids = _npy(path / "chunk_ids_sorted.npy", ndim=1, kind="S")
    id_rows = _npy(path / "chunk_ids_rows.npy", ndim=1, kind="i")
    dup_of = _npy(path / "dup_of.npy", ndim=1, kind="i")
    meta = _npy(path / "chunk_meta.npy", ndim=1, kind="V")
    if meta.dtype != META_DTYPE:
        raise IndexLoadError(f"{path / 'chunk_meta.npy'}: unexpected columns {meta.dtype}; rebuild the index")
    if not len(chunk_ids) == len(sorted_ids) == len(id_rows) == len(dup_of) == len(meta) == n:
        raise IndexLoadError(f"{path}: chunk id / duplicate arrays do not match {n} chunks; rebuild the index")
    integrity.check_ids(path, chunk_ids, sorted_ids, id_rows, deep("chunk_ids_sorted.npy") and deep("chunk_ids.npy"))
    integrity.check_dup_of(path / "dup_of.npy", dup_of)
    integrity.check_meta(path / "chunk_meta.npy", meta, manifest)
    row_of = RowLookup(sorted_ids, id_rows, n)
    embeddings = _npy(path / "embeddings.npy", ndim=2, kind="f")
    if embeddings.shape[0] != n:
        raise IndexLoadError(
            f"{path}: {embeddings.shape} embeddings for {n} chunks (corrupt index); rebuild the index"
        )
    dim = (manifest.get("embedder") or {}).get("dim")
    if dim is not None and embeddings.shape[1] != dim:
        raise IndexLoadError(f"{path}: embeddings have dimension {embeddings.shape[1]}, manifest says {dim}")
    integrity.check_embeddings(path / "embeddings.npy", embeddings, manifest, deep("embeddings.npy"))
    ann = None
    if integrity.check_dense_index(path / "manifest.json", manifest, n) == "hnsw":
        try:
            ann = AnnIndex(path / ANN_FILE, n, int(embeddings.shape[1]))
        except (ValueError, RuntimeError, OSError) as exc:
            raise IndexLoadError(f"{path / ANN_FILE}: cannot open the HNSW graph ({exc}); rebuild the index") from None
        if len(ann) != n:
            raise IndexLoadError(f"{path / ANN_FILE}: {len(ann)} vectors for {n} chunks; rebuild the index")
    try:
        sparse = SparseIndex.load(path / "sparse")
    except Exception as exc:
        raise IndexLoadError(f"{path / 'sparse'}: cannot load the BM25 index ({exc}); rebuild the index") from None
    if sparse.n_docs != n:
        raise IndexLoadError(f"{path / 'sparse'}: BM25 index of {sparse.n_docs} documents for {n} chunks; "
                             "rebuild the index")
    sparse.check(path / "sparse", full=deep("sparse/bm25_data.npy") and deep("sparse/bm25_indices.npy"),
                 meta=sparse.meta)
    integrity.check_records(path / "chunks.jsonl", chunks, chunk_ids, meta, full)
    return Snapshot(path, manifest, chunks, row_of, chunk_ids, embeddings, sparse, dup_of, meta, ann)


def open_snapshot(index_dir: str | Path, *, verify: bool | str = True) -> Snapshot:
    """Open whatever snapshot the index's pointer names.

    A build may publish (and remove an old snapshot) between reading the pointer and
    opening the folder; then the pointer is read again.
    """
    last: IndexLoadError | None = None
    for attempt in range(5):
        path = current_snapshot_dir(Path(index_dir))
        pointer = read_pointer_full(Path(index_dir))
        digest = pointer[1] if pointer and pointer[0] == path.name else None
        if pointer and pointer[0] == path.name and digest is None:
            # without it a manifest edited and re-checksummed in place would be opened as published
            raise IndexLoadError(
                f"{Path(index_dir) / POINTER}: names {path.name} without its '{POINTER_SUM}' line (the sha256 of "
                f"its {path.name}/manifest.json); to roll back by hand write both lines, or rebuild the index")
        if path.is_dir():
            try:
                return load_snapshot(path, verify=verify, manifest_sha256=digest)
            except (IndexLoadError, OSError) as exc:
                if path.is_dir():  # really corrupt, not removed under our feet
                    if isinstance(exc, IndexLoadError):
                        raise
                    raise IndexLoadError(f"{path}: unreadable snapshot ({exc}); rebuild the index") from None
                last = IndexLoadError(str(exc))
        else:
            last = IndexLoadError(f"{path}: the snapshot named by {Path(index_dir) / POINTER} is missing")
        time.sleep(0.05 * (attempt + 1))
    assert last is not None
    raise last
