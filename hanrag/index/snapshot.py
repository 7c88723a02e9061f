"""A published snapshot, loaded read-only: what the embedded backend searches."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.index.store import (
    POINTER,
    IndexLoadError,
    current_snapshot_dir,
    read_manifest,
    read_pointer_full,
    verify_files,
)
from hanrag.records import Chunk


@dataclass
class Snapshot:
    path: Path
    manifest: dict[str, Any]
    chunks: list[Chunk]
    row_of: dict[str, int]
    embeddings: np.ndarray  # (n, d) float32/float16, memory-mapped
    sparse: Any  # hanrag.index.sparse.SparseIndex
    dup_of: np.ndarray  # int64 per row: kept row, -1 when the row is kept itself
    doc_rows: dict[str, list[int]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.name

    def __len__(self) -> int:
        return len(self.chunks)

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
        try:
            return np.array([self.row_of[c] for c in chunk_ids], dtype=np.int64)
        except KeyError as exc:
            raise KeyError(f"unknown chunk id {exc.args[0]!r} in index {self.path}") from None


def _load_chunks(path: Path) -> list[Chunk]:
    chunks = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    chunks.append(Chunk.from_dict(json.loads(line)))
                except (json.JSONDecodeError, TypeError) as exc:
                    raise IndexLoadError(f"{path}:{n}: bad chunk record ({exc}); rebuild the index") from None
    return chunks


def load_snapshot(path: Path, *, verify: bool = True, manifest_sha256: str | None = None) -> Snapshot:
    """Load one snapshot folder (file checksums verified unless ``verify=False``; the manifest's own
    checksum, its file list and ``manifest_sha256`` from ``CURRENT`` always are)."""
    from hanrag.index.sparse import SparseIndex

    path = Path(path)
    if not path.is_dir():
        raise IndexLoadError(f"{path}: snapshot folder missing")
    manifest = read_manifest(path, manifest_sha256)
    if verify:
        verify_files(path, manifest)
    chunks = _load_chunks(path / "chunks.jsonl")
    row_of = {c.chunk_id: i for i, c in enumerate(chunks)}
    try:
        embeddings = np.load(path / "embeddings.npy", mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError) as exc:
        raise IndexLoadError(f"{path / 'embeddings.npy'}: unreadable ({exc}); rebuild the index") from None
    if embeddings.ndim != 2 or embeddings.shape[0] != len(chunks):
        raise IndexLoadError(
            f"{path}: {embeddings.shape} embeddings for {len(chunks)} chunks (corrupt index); rebuild the index"
        )
    dim = (manifest.get("embedder") or {}).get("dim")
    if dim is not None and embeddings.shape[1] != dim:
        raise IndexLoadError(f"{path}: embeddings have dimension {embeddings.shape[1]}, manifest says {dim}")
    try:
        dups = json.loads((path / "duplicates.json").read_text(encoding="utf-8"))
        links = dups.get("dup_of", {})
        if not isinstance(links, dict):
            raise ValueError("dup_of is not an object")
    except (ValueError, AttributeError) as exc:
        raise IndexLoadError(f"{path / 'duplicates.json'}: unreadable ({exc}); rebuild the index") from None
    dup_of = np.full(len(chunks), -1, dtype=np.int64)
    for dup, kept in links.items():
        if dup in row_of and kept in row_of:
            dup_of[row_of[dup]] = row_of[kept]
    try:
        sparse = SparseIndex.load(path / "sparse")
    except Exception as exc:  # noqa: BLE001 - any failure here means an unusable index
        raise IndexLoadError(f"{path / 'sparse'}: cannot load the BM25 index ({exc}); rebuild the index") from None
    doc_rows: dict[str, list[int]] = {}
    for i, c in enumerate(chunks):
        doc_rows.setdefault(c.doc_id, []).append(i)
    for rows in doc_rows.values():
        rows.sort(key=lambda r: (chunks[r].start, r))
    return Snapshot(path, manifest, chunks, row_of, embeddings, sparse, dup_of, doc_rows)


def open_snapshot(index_dir: str | Path, *, verify: bool = True) -> Snapshot:
    """Open whatever snapshot the index's pointer names.

    A build may publish (and remove an old snapshot) between reading the pointer and
    opening the folder; then the pointer is read again.
    """
    last: IndexLoadError | None = None
    for attempt in range(5):
        path = current_snapshot_dir(Path(index_dir))
        pointer = read_pointer_full(Path(index_dir))
        digest = pointer[1] if pointer and pointer[0] == path.name else None
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
