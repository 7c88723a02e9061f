"""Build-time near-duplicate marking: the same text, not the same topic.

Two chunks of different documents are near-duplicates when the Jaccard similarity of
their character 5-gram sets, taken over *normalised* text, is at least the threshold.
Normalisation folds what a copy changes without changing the text: NFKC, case,
whitespace, punctuation and symbols, traditional → simplified Chinese. So a paragraph
copied into two files, a page exported twice, a quote with a changed punctuation mark
or a template that differs in a date fold; two different sentences about one topic do
not, however close their embeddings are (contrastive encoders put short texts of one
genre above 0.95 cosine of each other without a shared clause, which is why the
embedding space no longer decides anything here).

Candidates come from MinHash + LSH banding (near-linear in the number of chunks); each
candidate is then verified with the exact Jaccard of the two shingle sets, so the
threshold means what it says. The kept copy is the first in priority order: better
(lower) tier first, then the earlier document, then position in the document.

Linear on repetitive text: a bucket remembers only kept chunks, at most :data:`_PER_DOC` of
one document and :data:`_BUCKET_CAP` in all (a file of one repeated line puts thousands of
its own chunks in one bucket), a chunk is never compared with its own document's chunks,
and at most :data:`_MAX_VERIFY` candidates are verified per chunk. Ordinary corpora never
reach these caps (a bucket holds a handful of chunks), so their result is the exhaustive one.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from hanrag.records import Chunk

SHINGLE = 5  # characters per shingle; 5-grams of normalised text are rare enough to mean "shared wording"
NUM_PERM = 128
BANDS, ROWS = 32, 4  # LSH: P(candidate) = 1 - (1 - J^4)^32 -> .9998 at J=.7, .23 at J=.3 (then verified)
_MASK = np.uint64(0xFFFFFFFFFFFFFFFF)
_NON_WORD = re.compile(r"[\W_]+")  # punctuation, symbols and whitespace in every script
_SURROGATE = re.compile("[\ud800-\udfff]")
_PRIME = np.uint64(1099511628211)
_PER_DOC = 4  # kept chunks of one document a bucket remembers (the earliest: the ones a copy folds into)
_BUCKET_CAP = 64  # kept chunks a bucket remembers in all
_MAX_VERIFY = 32  # candidates verified per chunk, highest priority first


@dataclass(frozen=True)
class FoldedPair:
    dup: int  # row of the folded chunk
    kept: int  # row of the chunk it folds into
    jaccard: float


@dataclass(frozen=True)
class DedupResult:
    dup_of: np.ndarray  # int64 per chunk row: row of the kept chunk, -1 when kept itself
    duplicates: int
    groups: int  # kept chunks that have at least one duplicate
    threshold: float
    pairs: tuple[FoldedPair, ...] = field(default=())
    candidates: int = 0  # LSH candidate pairs verified

    def summary(self) -> dict[str, float | int | str]:
        return {"duplicates": self.duplicates, "groups": self.groups, "threshold": self.threshold,
                "method": f"jaccard of character {SHINGLE}-grams"}


def normalise(text: str, t2s: Callable[[str], str] | None = None) -> str:
    """The text a copy shares with its original: NFKC, casefolded, simplified, letters and digits only."""
    t = unicodedata.normalize("NFKC", text).casefold()
    if t2s is not None:
        # OpenCC encodes its input: a lone surrogate (readers replace them, a connector might not) would
        # raise UnicodeEncodeError and stop the build; text without one is unchanged
        t = t2s(_SURROGATE.sub("\ufffd", t))
    return _NON_WORD.sub("", t)


def shingles(norm: str, k: int = SHINGLE) -> np.ndarray:
    """Sorted unique 64-bit hashes of the character k-grams (the whole text when shorter than k)."""
    if not norm:
        return np.zeros(0, np.uint64)
    # surrogatepass: a lone surrogate (readers replace them, connectors might not) is a code point like any
    # other here, never an UnicodeEncodeError that stops the build; other text encodes as before
    codes = np.frombuffer(norm.encode("utf-32-le", "surrogatepass"), dtype=np.uint32).astype(np.uint64)
    if len(codes) < k:
        k = len(codes)
    n = len(codes) - k + 1
    h = np.zeros(n, np.uint64)
    with np.errstate(over="ignore"):
        for j in range(k):  # polynomial rolling hash, wrapping at 2^64
            h = h * _PRIME + codes[j : j + n] + np.uint64(1)
        h ^= np.uint64(len(codes) < SHINGLE) << np.uint64(63)  # a short text never equals a k-gram of a long one
    return np.unique(h)


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    if a.size == 0 or b.size == 0:
        return 0.0
    inter = np.intersect1d(a, b, assume_unique=True).size
    return inter / (a.size + b.size - inter)


class MinHasher:
    """Multiply-shift hash family: ``(a*x + b) >> 32`` with odd 64-bit ``a``, fixed seed (reproducible builds)."""

    def __init__(self, num_perm: int = NUM_PERM, seed: int = 20261130) -> None:
        rng = np.random.default_rng(seed)
        self.a = (rng.integers(0, 2**63, num_perm, dtype=np.uint64) << np.uint64(1)) | np.uint64(1)
        self.b = rng.integers(0, 2**63, num_perm, dtype=np.uint64)

    def signature(self, sh: np.ndarray) -> np.ndarray:
        if sh.size == 0:
            return np.full(len(self.a), np.iinfo(np.uint32).max, np.uint32)
        with np.errstate(over="ignore"):
            hv = (self.a[:, None] * sh[None, :] + self.b[:, None]) >> np.uint64(32)
        return hv.min(axis=1).astype(np.uint32)


def priority_order(chunks: Sequence[Chunk]) -> np.ndarray:
    """Rows sorted by (tier, first appearance of the document, row)."""
    doc_rank: dict[str, int] = {}
    for c in chunks:
        doc_rank.setdefault(c.doc_id, len(doc_rank))
    keys = [(c.tier, doc_rank[c.doc_id], i) for i, c in enumerate(chunks)]
    return np.array([k[2] for k in sorted(keys)], dtype=np.int64)


def _band_buckets(sigs: np.ndarray) -> list[dict[int, list[int]]]:
    """Per band: bucket key -> positions (ascending) of the signatures that share the band."""
    out = []
    for band in range(BANDS):
        part = sigs[:, band * ROWS : (band + 1) * ROWS].astype(np.uint64)
        key = np.zeros(len(sigs), np.uint64)
        with np.errstate(over="ignore"):
            for j in range(ROWS):
                key = key * _PRIME + part[:, j]
        _, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        shared = np.flatnonzero(counts[inverse] > 1)  # only positions that share the band with someone
        buckets: dict[int, list[int]] = {}
        for pos in shared.tolist():
            buckets.setdefault(int(inverse[pos]), []).append(pos)
        out.append(buckets)
    return out


def excluded_rows(chunks: Sequence[Chunk], globs: Sequence[str]) -> np.ndarray:
    """Rows whose path matches one of the ``[index] dedup_exclude`` globs: never folded, and nothing folds
    into them (the user said the file stands on its own)."""
    out = np.zeros(len(chunks), dtype=bool)
    if globs:
        for i, c in enumerate(chunks):
            path = c.path or c.doc_id
            out[i] = any(fnmatch.fnmatch(path, g) for g in globs)
    return out


def mark_duplicates(
    chunks: Sequence[Chunk],
    threshold: float = 0.85,
    *,
    t2s: Callable[[str], str] | None = None,
    exclude: Sequence[str] = (),
) -> DedupResult:
    """Fold every chunk whose text is a near-copy of a higher-priority kept chunk of another document."""
    n = len(chunks)
    dup_of = np.full(n, -1, dtype=np.int64)
    if n < 2:
        return DedupResult(dup_of, 0, 0, threshold)
    order = priority_order(chunks)
    hasher = MinHasher()
    # signatures in one pass without keeping the shingle sets: at 1M chunks those are ~2 GB, and only
    # positions that share an LSH bucket are ever verified; their sets are recomputed (and kept) on demand
    sigs = np.empty((n, NUM_PERM), np.uint32)
    empty = np.zeros(n, dtype=bool)
    for pos, r in enumerate(order):
        sh = shingles(normalise(chunks[r].text, t2s))
        empty[pos] = not sh.size
        sigs[pos] = hasher.signature(sh)
    buckets = _band_buckets(sigs)
    del sigs
    band_keys = _position_keys(buckets, n)
    del buckets
    shingle_sets = _LazyShingles(chunks, order, t2s)
    docs = [chunks[r].doc_id for r in order]
    never = excluded_rows(chunks, exclude)[order]
    kept = np.ones(n, dtype=bool)
    target = np.full(n, -1, dtype=np.int64)
    pairs: list[FoldedPair] = []
    verified = 0
    # per shared bucket, the kept chunks processed so far that a later one may fold into (see _remember)
    members: dict[tuple[int, int], _Bucket] = {}
    for pos in range(n):
        if never[pos] or empty[pos] or pos not in band_keys:
            continue
        keys = band_keys[pos]
        earlier: set[int] = set()
        for key in keys:
            bucket = members.get(key)
            if bucket is not None:
                earlier.update(bucket.others(docs[pos]))
        checked = 0
        for other in sorted(earlier):  # highest priority first: fold into the most authoritative copy
            if checked >= _MAX_VERIFY:
                break
            checked += 1
            verified += 1
            j = jaccard(shingle_sets[pos], shingle_sets[other])
            if j >= threshold:
                kept[pos] = False
                target[pos] = other
                pairs.append(FoldedPair(int(order[pos]), int(order[other]), round(j, 4)))
                break
        if kept[pos]:
            for key in keys:
                members.setdefault(key, _Bucket()).remember(pos, docs[pos])
    dup_positions = np.flatnonzero(~kept)
    dup_of[order[dup_positions]] = order[target[dup_positions]]
    groups = len(set(dup_of[dup_of >= 0].tolist()))
    return DedupResult(dup_of, int(dup_positions.size), groups, threshold, tuple(pairs), verified)


class _Bucket:
    """The kept chunks of one LSH bucket that later chunks are compared with, bounded.

    Only kept chunks are remembered (a folded one is never a fold target), at most ``_PER_DOC`` per
    document (the earliest, which a copy would fold into first) and ``_BUCKET_CAP`` in all, so a bucket
    full of one file's repeated chunks, or of 20,000 identical notes, costs constant work per chunk.
    """

    __slots__ = ("by_doc", "size")

    def __init__(self) -> None:
        self.by_doc: dict[str, list[int]] = {}
        self.size = 0

    def remember(self, pos: int, doc: str) -> None:
        mine = self.by_doc.setdefault(doc, [])
        if len(mine) < _PER_DOC and self.size < _BUCKET_CAP:
            mine.append(pos)
            self.size += 1

    def others(self, doc: str) -> list[int]:
        """Remembered chunks of every document but ``doc`` (a document is never compared with itself)."""
        return [p for d, ps in self.by_doc.items() if d != doc for p in ps]


class _LazyShingles:
    """Shingle sets by priority position, computed on first use (candidates only)."""

    def __init__(self, chunks: Sequence[Chunk], order: np.ndarray, t2s: Callable[[str], str] | None) -> None:
        self.chunks, self.order, self.t2s = chunks, order, t2s
        self.cache: dict[int, np.ndarray] = {}

    def __getitem__(self, pos: int) -> np.ndarray:
        hit = self.cache.get(pos)
        if hit is None:
            hit = self.cache[pos] = shingles(normalise(self.chunks[int(self.order[pos])].text, self.t2s))
        return hit


def _position_keys(buckets: list[dict[int, list[int]]], n: int) -> dict[int, list[tuple[int, int]]]:
    """position -> (band, bucket key) of every shared bucket it sits in (in band order)."""
    out: dict[int, list[tuple[int, int]]] = {}
    for band, b in enumerate(buckets):
        for key, members in b.items():
            for pos in members:
                out.setdefault(pos, []).append((band, key))
    return out


def folded_pairs_report(chunks: Sequence[Chunk], result: DedupResult) -> list[dict[str, object]]:
    """The folded pairs by file, for the build summary, ``--json`` and ``hanrag lint``."""
    out = []
    for p in result.pairs:
        d, k = chunks[p.dup], chunks[p.kept]
        out.append({"dup": d.chunk_id, "dup_path": d.path or d.doc_id, "kept": k.chunk_id,
                    "kept_path": k.path or k.doc_id, "jaccard": p.jaccard})
    return out
