"""``hanrag doctor INDEX``: check the configuration against the index and the models.

Each problem comes with its fix. The checks are the mistakes the reference system
made silently: an embedder that cuts chunks (max_seq_length below the chunk size in
tokens, or above what the model can take), a model other than the one the index was
built with, lexicons that do not exist, a reranker that cannot be loaded; for a local model (a
sentence-transformers embedder, a cross-encoder) also its runtime's packages, its token positions against
the configured length, and a tokenizer that does not know Korean, Chinese or English. The index itself
is verified completely: the pointer, the manifest's own checksum, the fixed file set and every
file's sha256 in the published snapshot and in each older one kept for rollback; then its contents as
data, every element and record (:mod:`hanrag.index.integrity`, where opening for search reads the first and
last MiB of a big file), and a sample of chunks re-tokenised and re-embedded against their stored postings
and vectors (what a rewrite with recomputed checksums leaves consistent). A check that fails unexpectedly
is reported as a problem; doctor itself never ends in a traceback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.config import Config, built_section
from hanrag.embed import EmbedderError, EmbedderMismatchError, check_embedder, load_embedder
from hanrag.index.dense import embedded_headings, embedded_text
from hanrag.index.snapshot import Snapshot, open_snapshot
from hanrag.index.sparse import bm25_text, indexed_headings
from hanrag.index.store import (
    MANIFEST,
    SNAPSHOT_FILES,
    IndexLoadError,
    check_snapshot_tree,
    list_snapshots,
    read_manifest,
    snapshots_dir,
    verify_files,
)
from hanrag.lexicon import LexiconError, parse_lexicon, resolve_lexicon_path
from hanrag.search.ranker import RankerError, load_ranker
from hanrag.text import get_analyzer


@dataclass(frozen=True)
class Problem:
    severity: str  # "error" | "warning"
    code: str
    message: str
    fix: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _index_checks(index_dir: Path, cfg: Config, problems: list[Problem], opened: list[Snapshot] | None = None
                  ) -> dict[str, Any] | None:
    try:
        # every byte hashed and every element checked: opening for search checks big files cheaply
        snap = open_snapshot(index_dir, verify="full")
    except (IndexLoadError, OSError, ValueError, MemoryError) as exc:
        fix = f"rebuild: hanrag build CORPUS --index {index_dir}"
        problems.append(Problem("error", "index-unreadable", " ".join(str(exc).split()), fix))
        return None
    if opened is not None:
        opened.append(snap)
    _snapshot_checks(index_dir, snap.path, problems)
    manifest = snap.manifest
    tok = manifest.get("tokens") or {}
    if tok.get("over_max"):
        cut = f", {tok.get('cut_share', 0):.0%} of their tokens cut" if tok.get("truncates") else " (windowed)"
        problems.append(
            Problem(
                "warning" if not tok.get("truncates") else "error",
                "chunks-over-max-tokens",
                f"{tok['over_max']} chunks exceed the embedder's {tok.get('max_tokens')} tokens "
                f"(p95 {tok.get('p95')}, max {tok.get('max')}){cut}",
                "lower chunking.chunk_size, or raise embedder.max_seq_length up to the model's limit, then rebuild",
            )
        )
    built_chunking = built_section(manifest, "chunking")
    if built_chunking and built_chunking != asdict(cfg.chunking):
        problems.append(
            Problem("warning", "chunking-changed",
                    "the [chunking] config differs from the one the index was built with",
                    "rebuild the index so search and index agree")
        )
    _analyzer_check(manifest.get("analyzer"), cfg, problems)
    return manifest


def _analyzer_check(built: dict[str, Any] | None, cfg: Config, problems: list[Problem]) -> None:
    """The index's tokens and this config's query tokens come from the same analyzer (settings, lexicon and
    tokenizer library versions): an upgraded Kiwi, jieba, OpenCC, PyStemmer or hanja cuts queries differently."""
    if not built:
        return
    try:
        now = get_analyzer(cfg).identity()
    except LexiconError:
        return  # the lexicon check reports it; without the lexicon there is no analyzer to compare
    diff = sorted(k for k in built.keys() | now.keys() if built.get(k) != now.get(k))
    if diff:
        shown = ", ".join(f"{k}: {built.get(k, '—')} -> {now.get(k, '—')}" for k in diff[:6])
        problems.append(
            Problem("error", "analyzer-changed",
                    f"the index was tokenised by another analyzer than this config and install give ({shown})",
                    "rebuild the index (its token cache is keyed by the analyzer, so all text is re-tokenised)")
        )


def _snapshot_checks(index_dir: Path, current: Path, problems: list[Problem]) -> None:
    """Files in the published snapshot that the format does not know, and corrupt older snapshots."""
    extra = sorted(
        p.relative_to(current).as_posix()
        for p in current.rglob("*")
        if not p.is_dir() and p.relative_to(current).as_posix() not in SNAPSHOT_FILES | {MANIFEST}
    )
    if extra:
        problems.append(
            Problem("warning", "snapshot-extra-files",
                    f"{current}: files that are not part of a snapshot: {', '.join(extra[:10])}",
                    "remove them (nothing reads them), or rebuild the index")
        )
    for name in list_snapshots(index_dir):
        if name == current.name:
            continue
        old = snapshots_dir(index_dir) / name
        try:
            check_snapshot_tree(old)  # a symlinked or pipe file is refused before anything reads it
            verify_files(old, read_manifest(old))
        except (IndexLoadError, OSError) as exc:
            problems.append(
                Problem("warning", "old-snapshot-corrupt", f"older snapshot {name} (kept for rollback): {exc}",
                        f"remove {old}, it cannot be rolled back to")
            )


def _model_checks(model: str, section: str, runtime: str, precision: str, length_key: str, length: int,
                  who: str, problems: list[Problem]) -> bool:
    """Checks of a local model (a sentence-transformers embedder or a cross-encoder) before it is loaded: its
    runtime's packages, its token positions against the configured length, and whether its tokenizer knows
    Korean, Chinese and English (more than a third of a sample sentence's tokens unknown: that language is
    hardly read). False when loading it would only fail again."""
    from hanrag.embed.model_folder import ModelRuntimeError, missing_package

    if runtime != "torch" and (missing := missing_package(runtime, precision, convert=True)):
        problems.append(Problem("error", f"{who}-runtime-missing", f"{section}.runtime = {runtime!r}: {missing}",
                                f"install it, or set {section}.runtime = \"torch\""))
        return False
    try:
        from hanrag.embed.runtime import coverage_warnings, model_positions

        positions = model_positions(model, f"{section}.model")
        weak = coverage_warnings(model, f"{section}.model")
    except ModelRuntimeError as exc:
        problems.append(Problem("error", f"{who}-unloadable", str(exc), f"fix {section}.model"))
        return False
    except Exception:  # not a transformers folder (a torch-only layout, a test double): loading reports it
        return True
    if positions and length > positions:
        problems.append(Problem("error", f"{who}-length-over-positions",
                                f"{section}.{length_key} = {length} is more than model {model!r} can take "
                                f"({positions} token positions)", f"set {section}.{length_key} = {positions} or less"))
        return False
    if weak:
        problems.append(Problem("warning", f"{who}-language-coverage",
                                f"{section}.model = {model!r}: its tokenizer does not know {', '.join(weak)}; "
                                "text in that language is barely read",
                                "choose a multilingual model (docs/models.md)"))
    return True


def _embedder_checks(cfg: Config, manifest: dict[str, Any] | None, problems: list[Problem]) -> None:
    e = cfg.embedder
    if e.backend == "sentence-transformers" and not _model_checks(
        e.model, "embedder", e.runtime, e.precision, "max_seq_length", e.max_seq_length, "embedder", problems
    ):
        return
    try:
        embedder = load_embedder(cfg.embedder)
    except EmbedderError as exc:
        problems.append(Problem("error", "embedder-unloadable", str(exc), "fix the [embedder] section of the config"))
        return
    positions = getattr(embedder, "max_positions", 0)
    if positions and cfg.embedder.max_seq_length < positions and manifest and (manifest.get("tokens") or {}).get(
        "over_max"
    ):
        problems.append(
            Problem("warning", "max-seq-length-low",
                    f"embedder.max_seq_length = {cfg.embedder.max_seq_length} but the model takes {positions} tokens",
                    f"set embedder.max_seq_length = {positions} and rebuild")
        )
    # chunk size in tokens: a chunk of chunk_size characters of dense CJK text is about that many tokens
    estimate = embedder.count_tokens("가" * cfg.chunking.chunk_size)
    if embedder.truncates and estimate > embedder.max_tokens:
        problems.append(
            Problem("warning", "chunk-size-over-max-tokens",
                    f"a {cfg.chunking.chunk_size}-character Korean chunk is about {estimate} tokens, over the "
                    f"embedder's {embedder.max_tokens}",
                    "lower chunking.chunk_size or raise embedder.max_seq_length")
        )
    if manifest is not None:
        try:
            check_embedder(manifest, embedder)
        except EmbedderMismatchError as exc:
            problems.append(Problem("error", "embedder-mismatch", str(exc),
                                    "use the embedder config the index was built with, or rebuild"))


def _lexicon_checks(cfg: Config, problems: list[Problem]) -> None:
    for name in cfg.lexicon.paths:
        try:
            path = resolve_lexicon_path(name, cfg.base_dir or None)
        except LexiconError as exc:
            problems.append(Problem("error", "lexicon-missing", str(exc), "fix lexicon.paths in the config"))
            continue
        if not path.is_file():
            problems.append(Problem("error", "lexicon-missing", f"{path}: lexicon file not found",
                                    "create the file or remove it from lexicon.paths"))
            continue
        try:
            parse_lexicon(path)
        except LexiconError as exc:  # a file that is not a lexicon: every build and search would stop on it
            problems.append(Problem("error", "lexicon-invalid", str(exc),
                                    "fix the file (UTF-8, term<TAB>equivalent... a line) or remove it from "
                                    "lexicon.paths"))


def _ranker_checks(cfg: Config, problems: list[Problem]) -> None:
    try:
        load_ranker(cfg.search.ranker)
    except RankerError as exc:  # every hybrid search would stop on it
        problems.append(Problem("error", "ranker-unloadable", str(exc),
                                "give the path of a model benchmarks/fit_ranker.py wrote, \"lambdamart\" (bundled), "
                                "or search.ranker = '' for the rule table alone"))


def _rerank_checks(cfg: Config, problems: list[Problem]) -> None:
    r = cfg.search.rerank
    model = r.model
    if not model:
        return
    if not _model_checks(model, "search.rerank", r.runtime, r.precision, "max_length", r.max_length, "reranker",
                         problems):
        return
    try:
        if r.runtime != "torch":  # converted into the machine cache on the first load (once)
            from hanrag.embed.runtime import RuntimeCrossEncoder

            RuntimeCrossEncoder(model, r.max_length, runtime=r.runtime, precision=r.precision)
        else:
            from sentence_transformers import CrossEncoder  # lazy: torch, only when a reranker is configured

            CrossEncoder(model, device="cpu", max_length=r.max_length, local_files_only=True)
    except Exception as exc:
        problems.append(
            Problem("error", "reranker-unloadable", f"search.rerank.model = {model!r} cannot be loaded: {exc}",
                    "give a local path of a cross-encoder (models are never downloaded) "
                    "or set search.rerank.model = ''")
        )


CONTENT_SAMPLE = 16  # chunks re-tokenised and re-embedded by doctor
MIN_COSINE = 0.95  # a stored vector against its text embedded again (batch effects stay above .99)


def _content_checks(snap: Snapshot, cfg: Config, problems: list[Problem]) -> None:
    """A sample of chunks against their stored BM25 postings and vectors: a consistent rewrite (a shuffled
    vocabulary, vectors moved to other rows, with every checksum recomputed) passes every structural check
    but not this. Skipped where the analyzer or the embedder differs from the build's (reported above)."""
    n = len(snap)
    if n == 0:
        return
    rows = sorted({int(r) for r in np.linspace(0, n - 1, min(n, CONTENT_SAMPLE))})
    chunks = [snap.chunks[r] for r in rows]
    fix = "rebuild the index (its files were rewritten consistently: restore it from a trusted copy, or set "
    fix += "HANRAG_INDEX_KEY to seal it)"
    analyzer = get_analyzer(cfg)
    if analyzer.identity() == snap.manifest.get("analyzer"):
        bm25_headings = indexed_headings(snap.manifest)
        for row, c in zip(rows, chunks, strict=True):
            tokens = analyzer.tokenize(bm25_text(c, bm25_headings), c.lang)
            stored = snap.sparse.doc_term_weights(row)
            if set(tokens) != set(stored) or int(snap.sparse.doc_lens[row]) != len(tokens):
                problems.append(Problem("error", "index-content-mismatch",
                                        f"chunk {c.chunk_id} (row {row}): its BM25 postings are not its text's "
                                        "tokens (the vocabulary or postings were rewritten)", fix))
                break
    try:
        embedder = load_embedder(cfg.embedder)
        check_embedder(snap.manifest, embedder)
    except (EmbedderError, EmbedderMismatchError):
        return  # reported by the embedder checks
    headings = embedded_headings(snap.manifest)
    fresh = np.asarray(embedder.encode_passages([embedded_text(c, headings) for c in chunks]), dtype=np.float32)
    stored = np.asarray(snap.embeddings[rows], dtype=np.float32)
    norms = np.linalg.norm(fresh, axis=1) * np.linalg.norm(stored, axis=1)
    cosine = np.sum(fresh * stored, axis=1) / np.where(norms > 0, norms, 1.0)
    worst = int(np.argmin(cosine))
    if float(cosine[worst]) < MIN_COSINE:
        problems.append(Problem("error", "index-content-mismatch",
                                f"chunk {chunks[worst].chunk_id} (row {rows[worst]}): its stored vector is not "
                                f"its text's (cosine {float(cosine[worst]):.3f}; rows moved or rewritten)", fix))


def _guarded(problems: list[Problem], name: str, check: Callable[..., Any], *args: Any) -> Any:
    """Run one group of checks; an unexpected failure becomes a problem, never a traceback."""
    try:
        return check(*args)
    except Exception as exc:
        message = " ".join(f"{name}: {type(exc).__name__}: {exc}".split())[:500]
        problems.append(Problem("error", "doctor-check-failed", message,
                                "rebuild the index; if it persists, report it with this message"))
        return None


def diagnose(index_dir: str | Path, cfg: Config) -> list[Problem]:
    """Every problem found, errors first."""
    problems: list[Problem] = []
    opened: list[Snapshot] = []
    manifest = _guarded(problems, "index", _index_checks, Path(index_dir), cfg, problems, opened)
    if opened:
        _guarded(problems, "contents", _content_checks, opened[0], cfg, problems)
    _embedder_checks(cfg, manifest, problems)
    _lexicon_checks(cfg, problems)
    _ranker_checks(cfg, problems)
    _rerank_checks(cfg, problems)
    return sorted(problems, key=lambda p: p.severity != "error")
