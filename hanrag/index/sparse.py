"""BM25 sparse index, stored as NumPy + JSON (never pickle), scored with weighted query terms.

The score matrix is bm25s' (one column of precomputed ``idf · tf-part`` per token,
CSC layout: ``indptr[t]:indptr[t+1]`` slices ``indices`` (doc rows, ascending) and
``data`` (scores)), built here batch by batch (:class:`SparseBuilder`) so a large corpus
never holds all its tokens at once; tests check it against bm25s itself. Query scoring
is a weighted sum of those columns, which lets expansion tokens weigh less than the
query's own tokens — bm25s' own ``retrieve`` cannot weight query tokens.

Files written by :meth:`SparseIndex.save`: ``bm25_vocab.json`` (tokens in id order),
``bm25_data.npy``, ``bm25_indices.npy``, ``bm25_indptr.npy``, ``bm25_doc_lens.npy``,
``bm25_meta.json`` (n_docs, avg_len, k1, b, method). The math is exposed as
:func:`bm25_idf` and :func:`bm25_tf_part` so another backend (Milvus sparse vectors)
can compute identical scores.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from hanrag.config import Bm25Config, built_section
from hanrag.fsutil import atomic_save_npy, atomic_write_json, load_npy
from hanrag.records import Chunk

METHODS = ("lucene", "robertson", "atire")


def bm25_text(chunk: Chunk, headings: bool) -> str:
    """What BM25 indexes of a chunk: its text, after its title and heading path (each once) with ``headings``
    (``bm25.headings``). The build, a push to Milvus and a hit's explanation read the same text."""
    return chunk.headed_text() if headings else chunk.text


def indexed_headings(manifest: Mapping | None) -> bool:
    """Whether the index of this manifest was built with ``bm25.headings`` (an index built before it: no)."""
    return bool(built_section(manifest, "bm25").get("headings", False))


FORMAT_VERSION = 1
_ARRAYS = ("data", "indices", "indptr", "doc_lens")
# top_k prunes (MaxScore) only when the query's columns hold more entries than this: below it scoring them
# all is a few ms and simpler
PRUNE_MIN_POSTINGS = 200_000
BUILD_BATCH = 8192  # documents turned into postings at a time
LOOKUP_COST = 20  # a binary-search lookup of one row in a column costs about as much as this many += entries


def bm25_idf(df: int | np.ndarray, n_docs: int, method: str = "lucene") -> float | np.ndarray:
    """Inverse document frequency as bm25s 0.3 computes it for ``method`` (tests/test_sparse.py compares).

    robertson's log((N − df + 0.5)/(df + 0.5)) turns negative for a token in more than half the
    documents; bm25s clamps it at 0 (``allow_negative=False``), and so does this, so that every backend
    computing scores from it (Milvus) agrees with the embedded index."""
    df = np.asarray(df, dtype=np.float64)
    if method == "lucene":
        out = np.log1p((n_docs - df + 0.5) / (df + 0.5))
    elif method == "robertson":
        out = np.log(np.maximum((n_docs - df + 0.5) / (df + 0.5), 1.0))
    elif method == "atire":
        out = np.log(n_docs / df)
    else:
        raise ValueError(f"unknown BM25 method {method!r}; expected one of {', '.join(METHODS)}")
    return float(out) if out.ndim == 0 else out


def bm25_tf_part(
    tf: float | np.ndarray,
    doc_len: float | np.ndarray,
    avg_len: float,
    k1: float,
    b: float,
    method: str = "lucene",
) -> float | np.ndarray:
    """Term-frequency part: ``tf / (tf + k1·(1 − b + b·doc_len/avg_len))`` (lucene, robertson);
    atire multiplies it by ``k1 + 1``. The score of a token in a document is ``idf · tf_part``."""
    if method not in METHODS:
        raise ValueError(f"unknown BM25 method {method!r}; expected one of {', '.join(METHODS)}")
    tf = np.asarray(tf, dtype=np.float64)
    norm = k1 * ((1.0 - b) + b * np.asarray(doc_len, dtype=np.float64) / avg_len)
    out = tf / (tf + norm)
    if method == "atire":
        out = out * (k1 + 1.0)
    return float(out) if out.ndim == 0 else out


def bm25_ceiling(
    weights: Mapping[str, float], df_of: Mapping[str, int], n_docs: int, k1: float, method: str = "lucene"
) -> float:
    """The highest BM25 score a document could reach for weighted query tokens: Σ weight · idf · the tf
    part's limit (1, or k1 + 1 for atire, as tf grows). A token the index lacks counts with df = 0 (the
    most informative a token can be): query words the corpus does not hold are evidence nobody matched.
    Dividing a real score by it gives a corpus-size-free measure of lexical evidence."""
    if method not in METHODS:
        raise ValueError(f"unknown BM25 method {method!r}; expected one of {', '.join(METHODS)}")
    toks = [t for t, w in weights.items() if w > 0]
    if not toks or n_docs <= 0:
        return 0.0
    df = np.array([min(max(int(df_of.get(t, 0)), 0), n_docs) for t in toks], dtype=np.float64)
    w = np.array([weights[t] for t in toks], dtype=np.float64)
    # atire's log(N/df) is undefined at df = 0: there a token in one document is the best it can be
    idf = np.maximum(np.asarray(bm25_idf(np.maximum(df, 1.0) if method == "atire" else df, n_docs, method)), 0.0)
    limit = k1 + 1.0 if method == "atire" else 1.0
    return float(np.sum(w * idf) * limit)


class SparseIndex:
    def __init__(
        self,
        vocab: list[str],
        data: np.ndarray,
        indices: np.ndarray,
        indptr: np.ndarray,
        doc_lens: np.ndarray,
        *,
        k1: float,
        b: float,
        method: str,
        rows_sorted: bool = False,
    ) -> None:
        if len(indptr) != len(vocab) + 1:
            raise ValueError(f"indptr has {len(indptr)} entries for a vocabulary of {len(vocab)}")
        self.vocab = vocab
        self.token_ids = {t: i for i, t in enumerate(vocab)}
        self.data, self.indices, self.indptr, self.doc_lens = data, indices, indptr, doc_lens
        self.k1, self.b, self.method = k1, b, method
        # rows ascending within every token's column: lets row_scores binary-search a posting list
        self.rows_sorted = rows_sorted
        self.n_docs = int(len(doc_lens))
        self.avg_len = float(doc_lens.mean()) if self.n_docs else 0.0
        # columns whose postings are known to be in range and finite: all of them for an index built here or
        # checked in full at open (:meth:`check`); else each is checked the first time a search reads it
        self._column_ok: np.ndarray | None = None
        self.path: Path | None = None
        self.meta: dict | None = None  # bm25_meta.json as loaded

    # -- integrity -------------------------------------------------------------------------
    def check(self, directory: Path, *, full: bool, meta: Mapping[str, object] | None = None) -> None:
        """The loaded index as data (raises IndexLoadError, one line): the vocabulary unique and as long as
        ``indptr`` says, dtypes, ``indptr`` monotone from 0 to the postings' count, document lengths, and the
        postings (rows in range, ascending within a column, finite non-negative weights) in full when
        ``full``, else their first and last MiB at once and each column when a search first reads it."""
        from hanrag.index.integrity import bad, parts

        self.path = directory = Path(directory)
        if not set(map(type, self.vocab)) <= {str} or len(self.token_ids) != len(self.vocab):
            raise bad(directory / "bm25_vocab.json", "the vocabulary is not a list of distinct tokens")
        if meta is not None and meta.get("vocab_size", len(self.vocab)) != len(self.vocab):
            raise bad(directory / "bm25_vocab.json", f"{len(self.vocab)} tokens, bm25_meta.json says "
                                                     f"{meta.get('vocab_size')}")
        if meta is not None and meta.get("n_docs", self.n_docs) != self.n_docs:
            raise bad(directory / "bm25_doc_lens.npy", f"{self.n_docs} documents, bm25_meta.json says "
                                                       f"{meta.get('n_docs')}")
        k1, b = self.k1, self.b
        if (self.method not in METHODS or not isinstance(k1, (int, float)) or not isinstance(b, (int, float))
                or not 0 <= k1 < 1e6 or not 0 <= b <= 1):
            raise bad(directory / "bm25_meta.json", f"implausible parameters (k1 {k1!r}, b {b!r}, {self.method!r})")
        arrays = {"data": (self.data, "f"), "indices": (self.indices, "i"), "indptr": (self.indptr, "i"),
                  "doc_lens": (self.doc_lens, "i")}
        for name, (arr, kind) in arrays.items():
            if arr.ndim != 1 or arr.dtype.kind != kind:
                raise bad(directory / f"bm25_{name}.npy", f"unexpected array {arr.dtype}{arr.shape}")
        if self.data.dtype != np.float32:
            raise bad(directory / "bm25_data.npy", f"weights of dtype {self.data.dtype}, expected float32")
        indptr = np.asarray(self.indptr)
        nnz = len(self.indices)
        if int(indptr[0]) != 0 or int(indptr[-1]) != nnz or len(self.data) != nnz:
            raise bad(directory / "bm25_indptr.npy", f"indptr does not run from 0 to the {nnz} postings")
        if not bool(np.all(indptr[1:] >= indptr[:-1])):
            raise bad(directory / "bm25_indptr.npy", "indptr is not monotone")
        if self.n_docs and int(np.asarray(self.doc_lens).min()) < 0:
            raise bad(directory / "bm25_doc_lens.npy", "negative document lengths")
        for part in parts(self.data, full):
            if part.size and not (bool(np.isfinite(part).all()) and float(part.min()) >= 0):
                raise bad(directory / "bm25_data.npy", "BM25 weights that are NaN, infinite or negative")
        for part in parts(self.indices, full):
            if part.size and (int(part.min()) < 0 or int(part.max()) >= self.n_docs):
                raise bad(directory / "bm25_indices.npy", f"document rows out of range 0..{self.n_docs - 1}")
        if full:
            if self.rows_sorted and nnz > 1:
                ascending = np.diff(np.asarray(self.indices)) > 0
                starts = indptr[1:-1]
                ascending[starts[(starts > 0) & (starts < nnz)] - 1] = True  # a new column may start lower
                if not bool(ascending.all()):
                    raise bad(directory / "bm25_indices.npy", "rows not ascending within a token's postings")
            self._column_ok = None
        else:
            self._column_ok = np.zeros(len(self.vocab), dtype=bool)

    def check_column(self, tid: int) -> None:
        """One token's postings, checked before their first use when :meth:`check` did not read them all: an
        out-of-range row would raise IndexError (or, negative, score another document) mid-search."""
        ok = self._column_ok
        if ok is None or ok[tid]:
            return
        from hanrag.index.integrity import bad

        s, e = int(self.indptr[tid]), int(self.indptr[tid + 1])
        rows = np.asarray(self.indices[s:e])
        data = np.asarray(self.data[s:e])
        where = self.path or Path("sparse")
        if rows.size and (int(rows.min()) < 0 or int(rows.max()) >= self.n_docs
                          or (self.rows_sorted and not bool(np.all(rows[1:] > rows[:-1])))):
            raise bad(where / "bm25_indices.npy", f"the postings of token {self.vocab[tid]!r} hold rows out of "
                                                  "range or out of order")
        if data.size and not (bool(np.isfinite(data).all()) and float(data.min()) >= 0):
            raise bad(where / "bm25_data.npy", f"the weights of token {self.vocab[tid]!r} are NaN, infinite or "
                                               "negative")
        ok[tid] = True  # set only once checked: threads racing here check the same column twice, harmlessly

    # -- build ---------------------------------------------------------------------------
    @classmethod
    def build(cls, corpus_tokens: Iterable[Sequence[str]], cfg: Bm25Config) -> SparseIndex:
        """The index of every document's tokens (a list or any iterable, read once, a batch at a time)."""
        builder = SparseBuilder()
        batch: list[Sequence[str]] = []
        for doc in corpus_tokens:
            batch.append(doc)
            if len(batch) >= BUILD_BATCH:
                builder.add(batch)
                batch = []
        builder.add(batch)
        return builder.build(cfg)

    # -- disk ----------------------------------------------------------------------------
    def files(self) -> list[str]:
        return ["bm25_vocab.json", "bm25_meta.json", *(f"bm25_{n}.npy" for n in _ARRAYS)]

    def save(self, directory: Path) -> list[str]:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for name in _ARRAYS:
            atomic_save_npy(directory / f"bm25_{name}.npy", np.ascontiguousarray(getattr(self, name)))
        atomic_write_json(directory / "bm25_vocab.json", self.vocab, indent=None)
        meta = {
            "format": FORMAT_VERSION,
            "n_docs": self.n_docs,
            "avg_len": self.avg_len,
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "vocab_size": len(self.vocab),
            "rows_sorted": self.rows_sorted,
        }
        atomic_write_json(directory / "bm25_meta.json", meta, indent=None)
        return self.files()

    @classmethod
    def load(cls, directory: Path, mmap: bool = True) -> SparseIndex:
        directory = Path(directory)
        meta_path = directory / "bm25_meta.json"
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            vocab = json.loads((directory / "bm25_vocab.json").read_text(encoding="utf-8"))
            arrays = {
                n: load_npy(directory / f"bm25_{n}.npy", "r" if mmap else None)
                for n in _ARRAYS
            }
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{directory}: incomplete BM25 index ({Path(exc.filename).name} missing)") from None
        except (json.JSONDecodeError, ValueError) as exc:
            raise ValueError(f"{directory}: corrupt BM25 index ({exc})") from None
        if meta.get("format") != FORMAT_VERSION:
            raise ValueError(
                f"{meta_path}: BM25 index format {meta.get('format')} (expected {FORMAT_VERSION}); rebuild"
            )
        if not isinstance(meta, dict) or not isinstance(vocab, list):
            raise ValueError(f"{directory}: corrupt BM25 index (meta or vocabulary of the wrong type)")
        index = cls(vocab, **arrays, k1=meta["k1"], b=meta["b"], method=meta["method"],
                    rows_sorted=bool(meta.get("rows_sorted")))
        index.meta = meta
        return index

    # -- scoring -------------------------------------------------------------------------
    def scores(self, weights: Mapping[str, float]) -> np.ndarray:
        """BM25 score of every document: Σ weight(token) · score(token, doc); shape (n_docs,)."""
        return self._accumulate(self._terms(weights))

    def row_scores(self, weights: Mapping[str, float], rows: np.ndarray) -> np.ndarray:
        """BM25 scores of the given rows only, as :meth:`scores` gives them.

        Fusion asks for the BM25 scores of the dense search's candidates; scoring every document for a
        hundred rows cost a full pass over each query token's column (tens of ms at a million chunks).
        With rows sorted within each column a binary search per row and token does it."""
        rows = np.asarray(rows, dtype=np.int64)
        if not self.rows_sorted:  # an index written before rows were kept sorted
            return self.scores(weights)[rows]
        out = np.zeros(rows.size, dtype=np.float32)
        if rows.size == 0:
            return out
        for tok, w in weights.items():
            tid = self.token_ids.get(tok)
            if tid is None or w == 0.0:
                continue
            self.check_column(tid)
            s, e = int(self.indptr[tid]), int(self.indptr[tid + 1])
            if s == e:
                continue
            posting = np.asarray(self.indices[s:e])
            pos = np.minimum(np.searchsorted(posting, rows), e - s - 1)
            found = posting[pos] == rows
            out[found] += np.float32(w) * np.asarray(self.data[s:e])[pos[found]]
        return out

    def top_k(
        self, weights: Mapping[str, float], k: int, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Indices and scores of the best ``k`` documents with a positive score, best first.

        ``mask`` (bool, shape (n_docs,)) marks the rows allowed (filters) before the cut. Exact; on a large
        index the long columns of common tokens are skipped when they cannot change the result (below).
        """
        if mask is not None and mask.shape != (self.n_docs,):
            raise ValueError(f"mask has shape {mask.shape}, expected ({self.n_docs},)")
        terms = self._terms(weights)
        if k <= 0 or not terms:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        postings = sum(e - s for _, _, s, e in terms)
        if postings < PRUNE_MIN_POSTINGS or not self.rows_sorted or any(w < 0 for _, w, _, _ in terms):
            return self._best(self._accumulate(terms), None, k, mask)
        return self._top_k_pruned(terms, k, mask)

    def _terms(self, weights: Mapping[str, float]) -> list[tuple[int, float, int, int]]:
        """(token id, weight, column start, column end) of the weighted tokens the index holds."""
        out = []
        for tok, w in weights.items():
            tid = self.token_ids.get(tok)
            if tid is not None and w != 0.0:
                self.check_column(tid)
                out.append((tid, float(w), int(self.indptr[tid]), int(self.indptr[tid + 1])))
        return out

    def _accumulate(self, terms: list[tuple[int, float, int, int]], out: np.ndarray | None = None) -> np.ndarray:
        out = np.zeros(self.n_docs, dtype=np.float32) if out is None else out
        for _, w, s, e in terms:
            # rows within one token's column are unique, so fancy-index += is exact
            out[self.indices[s:e]] += np.float32(w) * self.data[s:e]
        return out

    def _top_k_pruned(self, terms: list[tuple[int, float, int, int]], k: int, mask: np.ndarray | None
                      ) -> tuple[np.ndarray, np.ndarray]:
        """MaxScore: score tokens from the highest possible contribution down; once the k-th best score so
        far exceeds what all the remaining tokens together could add, no document they alone match can
        enter the top k, so their columns are only looked up (binary search) for the documents that still
        can. The same documents and scores as scoring every column (up to float rounding order)."""
        limit = (self.k1 + 1.0) if self.method == "atire" else 1.0
        df = np.array([e - s for _, _, s, e in terms], dtype=np.float64)
        idf = np.maximum(np.asarray(bm25_idf(df, self.n_docs, self.method), dtype=np.float64).reshape(-1), 0.0)
        # the tf part stays below its limit; the slack covers float32 rounding of the stored scores
        bound = np.array([w for _, w, _, _ in terms]) * idf * limit * (1 + 1e-4) + 1e-6
        order = np.argsort(-bound, kind="stable")
        terms = [terms[i] for i in order]
        rest = np.concatenate([np.cumsum(bound[order][::-1])[::-1][1:], [0.0]])  # bound of the tokens after i
        rest_postings = np.concatenate([np.cumsum(df[order][::-1])[::-1][1:], [0.0]])
        scores = np.zeros(self.n_docs, dtype=np.float32)
        for i, term in enumerate(terms):
            self._accumulate([term], scores)
            if rest_postings[i] < PRUNE_MIN_POSTINGS:
                continue  # what is left is cheap to score in full
            cand = np.flatnonzero(scores)
            if mask is not None:
                cand = cand[mask[cand]]
            if cand.size < k:
                continue
            theta = float(np.partition(scores[cand], cand.size - k)[cand.size - k])
            if theta <= rest[i]:
                continue  # a document none of the tokens so far matched could still reach the top k
            alive = cand[scores[cand] + np.float32(rest[i]) >= np.float32(theta)]
            if alive.size * (len(terms) - i - 1) * LOOKUP_COST > rest_postings[i]:
                continue  # too many documents still in the race: scoring the columns is cheaper
            final = scores[alive].copy()
            final += self.row_scores({self.vocab[tid]: w for tid, w, _, _ in terms[i + 1:]}, alive)
            return self._best(final, alive, k, None)
        return self._best(scores, None, k, mask)

    @staticmethod
    def _best(scores: np.ndarray, rows: np.ndarray | None, k: int, mask: np.ndarray | None
              ) -> tuple[np.ndarray, np.ndarray]:
        """The k best positive entries of ``scores`` (for ``rows``, or for every row), best first, ties by row."""
        cand = np.flatnonzero(scores > 0)
        if mask is not None:
            cand = cand[mask[cand]]
        if cand.size == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if cand.size > k:
            # ties at the cut go to the lower rows (cand and rows ascend), so the result does not depend on
            # which path scored it
            kth = np.partition(scores[cand], cand.size - k)[cand.size - k]
            above, tied = cand[scores[cand] > kth], cand[scores[cand] == kth]
            cand = np.concatenate([above, tied[: k - above.size]])
        ids = cand if rows is None else rows[cand]
        order = np.lexsort((ids, -scores[cand]))
        return ids[order].astype(np.int64), scores[cand[order]].astype(np.float32)

    def doc_term_weights(self, row: int) -> dict[str, float]:
        """Token → BM25 score in one document (the document's sparse vector); O(nnz), for export/explain."""
        if not 0 <= row < self.n_docs:
            raise IndexError(f"row {row} out of range (n_docs={self.n_docs})")
        hits = np.flatnonzero(np.asarray(self.indices) == row)
        token_of = np.searchsorted(np.asarray(self.indptr), hits, side="right") - 1
        return {self.vocab[int(t)]: float(self.data[h]) for t, h in zip(token_of, hits, strict=True)}

    def ceiling(self, weights: Mapping[str, float]) -> float:
        """The highest score any document could reach for ``weights`` (:func:`bm25_ceiling`)."""
        df_of = {}
        for tok in weights:
            tid = self.token_ids.get(tok)
            if tid is not None:
                df_of[tok] = int(self.indptr[tid + 1]) - int(self.indptr[tid])
        return bm25_ceiling(weights, df_of, self.n_docs, self.k1, self.method)


class SparseBuilder:
    """Collects documents' tokens a batch at a time as (row, token id, tf) postings, then scores them.

    A million-chunk build held every token of every chunk as a Python string (several GB) until bm25s
    indexed them; here each batch becomes three int32 arrays at once, so memory is ~12 bytes per distinct
    token of a document, and the tokens can be dropped (or never all exist: the build streams them).
    Scores are :func:`bm25_idf` x :func:`bm25_tf_part`, the functions the Milvus backend also uses;
    tests/index/test_sparse.py checks them against bm25s, the reference implementation."""

    def __init__(self) -> None:
        self.vocab: dict[str, int] = {}
        self._rows: list[np.ndarray] = []
        self._toks: list[np.ndarray] = []
        self._tfs: list[np.ndarray] = []
        self._lens: list[np.ndarray] = []
        self.n_docs = 0

    def add(self, docs: Sequence[Sequence[str]]) -> None:
        """Append documents (their rows follow the ones added before)."""
        if not docs:
            return
        vocab = self.vocab
        lens = np.fromiter((len(d) for d in docs), np.int64, count=len(docs))
        ids = np.fromiter((vocab.setdefault(t, len(vocab)) for d in docs for t in d), np.int64,
                          count=int(lens.sum()))
        width = max(len(vocab), 1)
        local = np.repeat(np.arange(len(docs), dtype=np.int64), lens)
        # one sort of (row, token) keys gives each document's distinct tokens and their counts
        keys, tf = np.unique(local * width + ids, return_counts=True)
        self._rows.append((keys // width + self.n_docs).astype(np.int32))
        self._toks.append((keys % width).astype(np.int32))
        self._tfs.append(tf.astype(np.int32))
        self._lens.append(lens.astype(np.int32))
        self.n_docs += len(docs)

    def build(self, cfg: Bm25Config) -> SparseIndex:
        if cfg.method not in METHODS:
            raise ValueError(f"bm25.method must be one of {', '.join(METHODS)}, got {cfg.method!r}")
        vocab = list(self.vocab)
        doc_lens = np.concatenate(self._lens) if self._lens else np.zeros(0, np.int32)
        toks = np.concatenate(self._toks) if self._toks else np.zeros(0, np.int32)
        if not vocab or not toks.size:
            # nothing to score: an index that returns no hits
            return SparseIndex(vocab, np.zeros(0, np.float32), np.zeros(0, np.int32),
                               np.zeros(len(vocab) + 1, np.int64), doc_lens, k1=cfg.k1, b=cfg.b, method=cfg.method,
                               rows_sorted=True)
        rows = np.concatenate(self._rows)
        tfs = np.concatenate(self._tfs)
        self._rows, self._toks, self._tfs = [], [], []
        df = np.bincount(toks, minlength=len(vocab))
        idf = np.asarray(bm25_idf(df, self.n_docs, cfg.method), dtype=np.float64)
        avg_len = float(doc_lens.mean())
        # CSC: postings grouped by token; a stable sort keeps each column's rows ascending (rows were added
        # in order), which row_scores' binary search relies on
        order = np.argsort(toks, kind="stable")
        del toks
        indices = rows[order]
        data = np.empty(order.size, np.float32)
        step = 1 << 22  # float64 temporaries for a slice at a time
        col = np.repeat(np.arange(len(vocab), dtype=np.int32), df)
        for s in range(0, order.size, step):
            part = order[s : s + step]
            tf_part = bm25_tf_part(tfs[part], doc_lens[indices[s : s + step]], avg_len, cfg.k1, cfg.b, cfg.method)
            data[s : s + step] = idf[col[s : s + step]] * tf_part
        indptr = np.zeros(len(vocab) + 1, np.int64)
        np.cumsum(df, out=indptr[1:])
        return SparseIndex(vocab, data, indices, indptr, doc_lens, k1=cfg.k1, b=cfg.b, method=cfg.method,
                           rows_sorted=True)
