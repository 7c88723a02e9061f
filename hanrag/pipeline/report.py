"""What a build reports: counts, the changes against the previous snapshot, token statistics, the seconds
each stage took (:class:`BuildTimer`), and the progress bars drawn meanwhile."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from hanrag.index import store
from hanrag.records import Chunk, Finding


@dataclass
class BuildTimer:
    """Seconds per build stage, counted from one start: what :attr:`BuildReport.timings` holds.

    A caller that works before :func:`hanrag.pipeline.build_from_chunks` (reading and chunking a corpus
    folder) makes the timer first, times that work as ``with timer.stage("prepare"):`` and hands the timer
    on (``timer=``), so the report's ``total`` counts from the caller's start."""

    started: float = field(default_factory=time.perf_counter)
    seconds: dict[str, float] = field(default_factory=dict)

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block as stage ``name`` (added to what the stage already took)."""
        t = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def timings(self) -> dict[str, float]:
        """Each stage in the order first timed, then ``total`` (since ``started``); seconds to the millisecond."""
        total = time.perf_counter() - self.started
        return {**{k: round(v, 3) for k, v in self.seconds.items()}, "total": round(total, 3)}


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
    timings: dict[str, float]  # seconds: total, prepare, tokenize, embedding, dedup, sparse, publish (BuildTimer)
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


# --- changes against the published snapshot --------------------------------------------------------


@dataclass(frozen=True)
class Changes:
    """The chunks and documents of a build against the published snapshot's (chunk ids are content hashes)."""

    added: int
    changed: int
    removed: int
    reused: int
    files: FileChanges


def previous_chunks(index_dir: Path) -> dict[str, str]:
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


def changes(chunks: Sequence[Chunk], previous: dict[str, str]) -> Changes:
    """``chunks`` against ``previous`` (:func:`previous_chunks`)."""
    prev_docs = set(previous.values())
    seen = {c.chunk_id for c in chunks}
    added, changed, removed = _chunk_changes(chunks, previous, prev_docs, seen)
    return Changes(added=added, changed=changed, removed=removed,
                   reused=sum(1 for c in chunks if c.chunk_id in previous),
                   files=_file_changes(chunks, previous, prev_docs))


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


# --- tokens per chunk -------------------------------------------------------------------------------


def token_stats(counts: np.ndarray, max_tokens: int, truncates: bool) -> dict[str, Any]:
    """The embedder's tokens per chunk: percentiles, how many exceed its limit and the share it cuts."""
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


def token_warnings(tok: dict[str, Any]) -> list[str]:
    """What :func:`token_stats` says the user should know (chunks past the embedder's limit)."""
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


# --- progress ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def progress_bars(enabled: bool) -> Iterator[Callable[[str, int], Callable[[int], None]]]:
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
