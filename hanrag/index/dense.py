"""Dense retrieval: exact inner products (the reference, and small indexes) and an HNSW graph (usearch).

Vectors are L2-normalised, so the inner product is the cosine. Exact search is a
matrix-vector product over the memory-mapped embedding matrix; a float16 matrix is
converted to float32 block by block, because NumPy has no BLAS kernel for float16 and a
float16 product is several times slower than converting first.

Above :data:`ANN_MIN_ROWS` chunks the build also writes an HNSW graph (``dense.usearch``,
usearch, vectors stored as bfloat16 inside it) that the backend opens as a memory-mapped
view: opening costs milliseconds whatever its size and only the pages a search visits are
read. usearch was chosen over faiss (HNSWFlat) and hnswlib by measurement at 100k x 384
(clustered random vectors, M=16, ef 128, 2 shared cores): build 148 / 275 / 248 s, file 92 / 168 /
168 MB, open 26 ms (memory-mapped view) / 368 ms (IO_FLAG_MMAP) / 1283 ms (loaded), p50 0.7 / 1.0 /
0.5 ms; its recall@10 at equal ef was the lowest (.41 / .67 / .61), which a larger ef buys back,
while only usearch searches a saved index without loading it (bounded RSS, instant open).

Graph settings, measured at 100k on the same benchmark vectors (``/tmp`` probe, recall@10 of the
backend's path: graph candidates re-scored exactly): M=16/ef_add 64 stalls at .89 by ef 2048; M=32/ef_add
128 reaches .940 at ef 2048 and .957 at 4096, ef_add 256 .955 and .967 (M=48 adds nothing). At 1M
(ef_add 128) recall falls to .92 at ef 4096 and .946 at 8192 (43 ms): these vectors of recombined
sentences are full of near-ties. With ef_add 256, the 1M graph gives .948 at ef 4096 (24 ms p50) and .956 at
6144 (36 ms), hence 6144. Stored as bf16 the graph walks 1.7x faster than f16 at equal recall (this
CPU converts bf16 natively, f16 in software); i8 loses recall to quantisation (.90 at ef 4096). The
candidates are re-scored from ``embeddings.npy``, so bf16's coarser mantissa never reaches a score.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from hanrag.config import built_section
from hanrag.records import Chunk

ANN_FILE = "dense.usearch"
# below this many chunks exact search is as fast as the graph at ef 6144 (exact costs ~13 ms per 100k rows:
# 126 ms p50 at 1M; the graph ~11 ms at 100k, 36 ms at 1M; scale.py)
ANN_MIN_ROWS = 100_000
CONNECTIVITY = 32  # HNSW M: links per node
EXPANSION_ADD = 256  # ef at construction
EXPANSION_SEARCH = 6144  # ef at search (see the module notes)
GRAPH_DTYPE = "bf16"
_BLOCK = 32768  # rows converted to float32 at a time (12 MiB at d=384)


def embedded_text(chunk: Chunk, headings: bool) -> str:
    """What the encoder embeds of a chunk: its text, after its title and heading path with ``headings``
    (``embedder.headings``). The build, ``hanrag eval``'s warm-up and the doctor's re-embedding read the same text."""
    return chunk.headed_text() if headings else chunk.text


def embedded_headings(manifest: Mapping | None) -> bool:
    """Whether the index of this manifest embedded titles and heading paths (an index built before the setting:
    no)."""
    return bool(built_section(manifest, "embedder").get("headings", False))


def inner_products(matrix: np.ndarray, qvec: np.ndarray) -> np.ndarray:
    """Scores of every row (float32), also for a float16 matrix (converted block by block)."""
    q = np.asarray(qvec, dtype=np.float32).reshape(-1)
    if matrix.shape[0] == 0:
        return np.zeros(0, np.float32)
    if q.shape[0] != matrix.shape[1]:
        raise ValueError(f"query vector has dimension {q.shape[0]}, the index has {matrix.shape[1]}")
    # a plain ndarray view of the memmap: numpy's matmul on the np.memmap subclass skips BLAS (16 ms instead
    # of 0.03 ms for 3k x 384 here)
    matrix = np.asarray(matrix)
    if matrix.dtype == np.float32:
        return np.asarray(matrix @ q, dtype=np.float32)
    out = np.empty(matrix.shape[0], np.float32)
    for s in range(0, matrix.shape[0], _BLOCK):
        out[s : s + _BLOCK] = np.asarray(matrix[s : s + _BLOCK], dtype=np.float32) @ q
    return out


def row_products(matrix: np.ndarray, rows: np.ndarray, qvec: np.ndarray) -> np.ndarray:
    """Scores of the given rows only (exact re-scoring of a candidate or filtered set)."""
    q = np.asarray(qvec, dtype=np.float32).reshape(-1)
    rows = np.asarray(rows, dtype=np.int64)
    if rows.size == 0:
        return np.zeros(0, np.float32)
    matrix = np.asarray(matrix)
    out = np.empty(rows.size, np.float32)
    for s in range(0, rows.size, _BLOCK):
        out[s : s + _BLOCK] = np.asarray(matrix[rows[s : s + _BLOCK]], dtype=np.float32) @ q
    return out


def top_k_scores(scores: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Indices and scores of the k best entries, best first; ``mask`` (bool) excludes rows before selection."""
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
        available = int(mask.sum())
    else:
        available = scores.shape[0]
    k = min(k, available)
    if k <= 0:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    if k < scores.shape[0]:
        idx = np.argpartition(-scores, k - 1)[:k]
    else:
        idx = np.arange(scores.shape[0])
    # stable order: score descending, then row ascending (deterministic ties)
    order = np.lexsort((idx, -scores[idx]))
    idx = idx[order]
    return idx.astype(np.int64), scores[idx].astype(np.float32)


def top_k(
    matrix: np.ndarray, qvec: np.ndarray, k: int, mask: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Exact inner-product top-k of one query vector over ``matrix`` rows, mask applied before top-k."""
    return top_k_scores(inner_products(matrix, qvec), k, mask)


def top_k_rows(
    matrix: np.ndarray, rows: np.ndarray, qvec: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k among ``rows`` only (a selective filter: scoring the allowed rows beats searching the graph)."""
    rows = np.asarray(rows, dtype=np.int64)
    idx, scores = top_k_scores(row_products(matrix, rows, qvec), k)
    return rows[idx], scores


# --- the HNSW graph -----------------------------------------------------------------------------


def usearch_index():
    """``usearch.index``, imported after onnxruntime when that is installed.

    ``import usearch.compiled`` followed by ``import onnxruntime`` segfaults (usearch 2.26.6, onnxruntime 1.32;
    the other order works), and a process that opens a graph goes on to load the default (onnx) embedder:
    search, serve, doctor. So onnxruntime is imported first (0.2-0.3 s that its embedder pays anyway)."""
    import importlib
    import importlib.util
    import sys

    if "usearch.compiled" not in sys.modules and "onnxruntime" not in sys.modules:
        try:
            if importlib.util.find_spec("onnxruntime") is not None:
                importlib.import_module("onnxruntime")
        except Exception:
            pass
    return importlib.import_module("usearch.index")


def _threads() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def build_ann(vectors: np.ndarray, path: Path, *, min_rows: int | None = None) -> dict[str, object]:
    """Write the HNSW graph of ``vectors`` (row number = key) to ``path``; an empty graph below ``min_rows``
    (exact search serves those). Returns the manifest entry describing it."""
    Index = usearch_index().Index

    min_rows = ANN_MIN_ROWS if min_rows is None else min_rows
    n = int(vectors.shape[0])
    dim = int(vectors.shape[1]) if vectors.ndim == 2 else 0
    index = Index(ndim=max(dim, 1), metric="ip", dtype=GRAPH_DTYPE, connectivity=CONNECTIVITY,
                  expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)
    rows = n if n >= min_rows and dim else 0
    # added in blocks: the float32 copy usearch needs exists for one block at a time
    for s in range(0, rows, 65536):
        block = np.ascontiguousarray(vectors[s : s + 65536], dtype=np.float32)
        index.add(np.arange(s, s + block.shape[0], dtype=np.uint64), block, threads=_threads())
    index.save(str(path))
    return {"kind": "hnsw" if rows else "exact", "library": "usearch", "rows": rows, "connectivity": CONNECTIVITY,
            "expansion_add": EXPANSION_ADD, "dtype": GRAPH_DTYPE}


_MATRIX_HEADER = 8  # usearch's saved file: rows and bytes per row (two uint32), then the vectors
_META_BYTES = 64  # then its metadata block (magic, version, kinds, counts, dimensions)
_HNSW_HEADER = 40  # then the graph's header: size, connectivity, connectivity at level 0, max level, entry slot
_NODE_MIN_BYTES = 8 + 2 + 4  # key, level, neighbour count; plus 4 bytes per level-0 neighbour slot


def check_graph_file(path: Path, rows: int, dim: int) -> None:
    """The saved graph's headers against what the manifest claims, before usearch maps it.

    usearch's view trusts the file: a header claiming more vectors or nodes than the file holds makes it read
    past the mapping (a segfault, not an exception). So the counts, dimensions and kinds are read here and
    the file must be at least as long as they require. Raises ValueError (one line)."""
    import struct

    mod = usearch_index()
    Index, MetricKind, ScalarKind = mod.Index, mod.MetricKind, mod.ScalarKind

    size = Path(path).stat().st_size
    if size < _MATRIX_HEADER + _META_BYTES + _HNSW_HEADER:
        raise ValueError(f"{size} bytes, too short for a usearch graph")
    with open(path, "rb") as fh:
        m_rows, m_cols = struct.unpack("<II", fh.read(_MATRIX_HEADER))
        matrix = m_rows * m_cols
        if _MATRIX_HEADER + matrix + _META_BYTES + _HNSW_HEADER > size:
            raise ValueError(f"its header claims {m_rows} vectors, more than its {size} bytes hold")
        fh.seek(_MATRIX_HEADER + matrix + _META_BYTES)
        count, conn, conn_base, max_level, entry = struct.unpack("<QQQqq", fh.read(_HNSW_HEADER))
    meta = Index.metadata(str(path))
    if not meta or not meta.get("matrix_included") or meta.get("matrix_uses_64_bit_dimensions"):
        raise ValueError("not a usearch graph saved with its vectors")
    if meta.get("kind_metric") != MetricKind.IP or meta.get("kind_scalar") != ScalarKind.BF16:
        raise ValueError(f"metric {meta.get('kind_metric')} / scalar {meta.get('kind_scalar')}, expected IP / BF16")
    if meta.get("dimensions") != dim or m_cols != dim * 2:
        raise ValueError(f"vectors of dimension {meta.get('dimensions')}, the embeddings have {dim}")
    if not meta.get("count_present") == m_rows == count == rows or meta.get("count_deleted"):
        raise ValueError(f"holds {meta.get('count_present')} vectors / {count} nodes, the manifest says {rows}")
    if not (2 <= conn <= 1024 and conn <= conn_base <= 4096 and -1 <= max_level < 64 and -1 <= entry < max(rows, 1)):
        raise ValueError("implausible graph header (connectivity, levels or entry point)")
    need = _MATRIX_HEADER + matrix + _META_BYTES + _HNSW_HEADER + rows * (_NODE_MIN_BYTES + 4 * conn_base)
    if size < need:
        raise ValueError(f"{size} bytes, fewer than the {need} its {rows} nodes need")


class AnnIndex:
    """A saved HNSW graph opened as a read-only memory-mapped view."""

    def __init__(self, path: Path, rows: int, dim: int | None = None) -> None:
        Index = usearch_index().Index

        if dim is not None:
            check_graph_file(path, rows, dim)
        self.path = Path(path)
        self.index = Index.restore(str(path), view=True)
        if self.index is None:
            raise ValueError(f"{path}: not a usearch index")
        if len(self.index) != rows:
            raise ValueError(f"{path}: holds {len(self.index)} vectors, the manifest says {rows}")
        self.index.expansion_search = EXPANSION_SEARCH

    def __len__(self) -> int:
        return len(self.index)

    def search(self, qvec: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        """(rows, approximate cosine) of about ``count`` nearest rows, best first."""
        q = np.asarray(qvec, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.index.ndim:
            raise ValueError(f"query vector has dimension {q.shape[0]}, the index has {self.index.ndim}")
        count = min(count, len(self.index))
        if count <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        # ef must be at least the number of results asked for, or the graph walk stops early
        self.index.expansion_search = max(EXPANSION_SEARCH, count)
        m = self.index.search(q, count, threads=1)
        return np.asarray(m.keys, dtype=np.int64), (1.0 - np.asarray(m.distances, dtype=np.float32))
