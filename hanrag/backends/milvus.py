"""The index on Milvus: the same search pipeline, a distributed engine underneath.

One Milvus collection holds every chunk: ``chunk_id`` (primary key), the dense vector,
a sparse BM25 vector, the chunk's text and metadata (doc id, source, path, lang, tier,
provenance, labels, headings, content hash, duplicate links). A second small
collection, ``<collection>__terms``, holds hanrag's BM25 vocabulary and statistics.
The client always runs with a timeout (``milvus.timeout_s``), so a misconfigured
collection fails fast instead of retrying for minutes.

BM25 without Milvus' analysers
------------------------------
Korean and Chinese tokenisation stays in hanrag (Kiwi, jieba, readings, lexicons);
Milvus only sees numbers. BM25 (Lucene variant, as the embedded index) factors as

    score(q, d) = sum_t  w_q(t) * idf(t) * tfpart(t, d)
    tfpart(t, d) = tf / (tf + k1 * (1 - b + b * |d| / avgdl))        (bm25s "lucene")

so each chunk stores ``tfpart`` as a sparse vector over hanrag term ids, and the query
vector carries ``w_q(t) * idf(t)``: Milvus' sparse inner product (SPARSE_INVERTED_INDEX,
IP, exact) is then the BM25 score. Both parts come from :mod:`hanrag.index.sparse`
(``bm25_tf_part``, ``bm25_idf``), the functions behind the embedded index, so the two
backends compute the same numbers.

IDF as the collection changes: hanrag keeps the statistics itself, in the terms
collection — one row per term (term id, document frequency) plus one ``meta`` row
(N, total token count, the avgdl the stored tf parts were computed with, the manifest,
the write state). Every upsert/delete updates df and N, and the query side reads the
current df, N at query time (one primary-key lookup), so IDF is always exact.

avgdl drift: ``tfpart`` depends on avgdl, which moves as chunks come and go, and the
stored tf parts were computed with ``avgdl_ref`` (the meta row). While the current
avgdl stays within ``milvus.avgdl_tolerance`` (relative, default 2 %) of ``avgdl_ref``,
stored vectors are kept and new chunks are written with ``avgdl_ref`` too, so all
chunks stay mutually consistent (BM25 with a slightly stale avgdl). The error this
allows is bounded: d ln(tfpart) / d ln(avgdl) lies in (0, 1), so every chunk's BM25
score is within the tolerance (relative) of the exact score, and only chunks whose
exact scores are that close can swap ranks. Past the tolerance — or on
``push --renormalize`` — every sparse vector is recomputed from the raw term counts
stored per chunk (``tf`` field) with the new avgdl. A fresh push is always exact.

Writes never claim completeness they do not have: the meta row is set to
``state = "writing"`` first and to ``"complete"`` (with the new statistics) last;
opening a collection whose state is not complete raises :class:`MilvusIncomplete`
naming the interrupted push, and the next push redoes the work (rows are upserts
keyed by chunk id, diffs by content hash, so a rerun converges).

Fusion stays in hanrag: ``sparse_search`` and ``dense_search`` return candidate lists
and the shared searcher fuses them exactly as on the embedded index (so explanations
hold). ``hybrid_search_server`` (Milvus ``hybrid_search`` + ``WeightedRanker``) exists
for the benchmark that compared the two (``benchmarks/milvus_vs_embedded.py``).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.config import Config
from hanrag.records import Chunk, Filters

META_KEY = "meta"
SCHEMA_VERSION = 1
MAX_TEXT_BYTES = 65535
MAX_LABELS = 256
# ids sent per query expression; keeps expressions well under Milvus' size limits
ID_BATCH = 1000
QUERY_LIMIT = 16384  # Milvus' cap on offset + limit


class MilvusError(RuntimeError):
    """A Milvus problem, with a message naming the server and collection."""


class MilvusUnavailable(MilvusError):
    """The Milvus server cannot be reached."""


class MilvusIncomplete(MilvusError):
    """The collection was left by an interrupted push and is not complete."""


@dataclass(frozen=True)
class SyncReport:
    upserted: int
    deleted: int
    unchanged: int
    renormalized: bool
    total: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# --------------------------------------------------------------------- expressions


def lit(value: str) -> str:
    """A Milvus string literal. Control characters are refused (they crash some servers' parsers)."""
    if any(ord(ch) < 0x20 and ch not in "\t\n\r" for ch in value):
        raise ValueError(f"control character in {value!r}: not allowed in Milvus ids or filters")
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return '"' + escaped.replace("\t", "\\t") + '"'


def in_list(field_name: str, values: Iterable[str | int]) -> str:
    items = [lit(v) if isinstance(v, str) else str(int(v)) for v in values]
    return f"{field_name} in [{', '.join(items)}]"


def glob_to_like(glob: str) -> str:
    """A LIKE pattern matching a superset of what ``fnmatch`` matches for ``glob``.

    Milvus' LIKE knows ``%`` (any run) and ``_`` (one character) and no escapes, so
    ``*``→``%``, ``?``/``[...]``/backslash→``_``, and a literal ``%`` or ``_`` stays a
    wildcard (a superset); the exact glob is applied in hanrag afterwards.
    """
    out: list[str] = []
    i = 0
    while i < len(glob):
        ch = glob[i]
        if ch == "*":
            if not out or out[-1] != "%":
                out.append("%")
        elif ch == "?" or ch == "\\":
            out.append("_")
        elif ch == "[":
            close = glob.find("]", i + 2 if glob[i + 1 : i + 2] in ("!", "]") else i + 1)
            out.append("_")
            if close != -1:
                i = close
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def filters_to_expr(filters: Filters | None) -> str:
    """The Milvus boolean expression for every filter except the exact glob (see ``glob_to_like``)."""
    if filters is None or filters.is_empty():
        return ""
    parts: list[str] = []
    if filters.lang:
        parts.append(in_list("lang", filters.lang))
    if filters.tier:
        parts.append(in_list("tier", [int(t) for t in filters.tier]))
    if filters.provenance:
        parts.append(in_list("provenance", filters.provenance))
    if filters.labels:
        parts.append(f"array_contains_all(labels, [{', '.join(lit(x) for x in filters.labels)}])")
    if filters.source_glob:
        like = lit(glob_to_like(filters.source_glob))
        parts.append(f"(source like {like} or path like {like})")
    return " and ".join(f"({p})" for p in parts)


def and_expr(*parts: str) -> str:
    return " and ".join(f"({p})" for p in parts if p)


# --------------------------------------------------------------------- rows


def term_key(term: str) -> str:
    """Primary key of a term row: a hash, so any token is safe inside an expression."""
    return hashlib.blake2b(term.encode("utf-8"), digest_size=16).hexdigest()


def row_hash(chunk: Chunk, also_in: Sequence[str], dup_of: str, tokens: Sequence[str]) -> str:
    """Content hash of everything stored for a chunk except the vectors' BM25 normalisation."""
    blob = json.dumps(
        [chunk.to_dict(), list(also_in), dup_of, list(tokens)], ensure_ascii=False, sort_keys=True
    ).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def _check_fits(chunk: Chunk) -> None:
    lit(chunk.chunk_id)  # raises on control characters
    if len(chunk.text.encode("utf-8")) > MAX_TEXT_BYTES:
        raise MilvusError(f"chunk {chunk.chunk_id}: text is over {MAX_TEXT_BYTES} bytes (Milvus VARCHAR limit)")
    if len(chunk.labels) > MAX_LABELS:
        raise MilvusError(f"chunk {chunk.chunk_id}: {len(chunk.labels)} labels, at most {MAX_LABELS} fit")


def chunk_from_row(row: Mapping[str, Any]) -> Chunk:
    extra = row.get("extra") or {}
    return Chunk(
        chunk_id=row["chunk_id"],
        doc_id=row["doc_id"],
        text=row["text"],
        start=int(extra.get("start", 0)),
        end=int(extra.get("end", 0)),
        source=row["source"],
        path=row["path"],
        title=row["title"],
        tier=int(row["tier"]),
        provenance=row["provenance"],
        lang=row["lang"],
        headings=tuple(row.get("headings") or ()),
        section=int(extra.get("section", 0)),
        labels=tuple(row.get("labels") or ()),
        page=extra.get("page"),
    )


def _bm25_parts() -> tuple[Callable[..., Any], Callable[..., Any]]:
    from hanrag.index.sparse import bm25_idf, bm25_tf_part

    return bm25_idf, bm25_tf_part


# --------------------------------------------------------------------- backend

_CHUNK_FIELDS = [
    "chunk_id", "doc_id", "text", "source", "path", "title", "lang", "tier", "provenance",
    "labels", "headings", "extra",
]  # fmt: skip


class MilvusBackend:
    """:class:`~hanrag.backends.base.IndexBackend` over a Milvus collection (see the module docstring)."""

    name = "milvus"

    def __init__(self, cfg: Config, *, require_complete: bool = True, client: Any = None) -> None:
        self.cfg = cfg
        self.mcfg = cfg.milvus
        if not self.mcfg.uri:
            raise MilvusError("milvus.uri is empty: set it in hanrag.toml [milvus] or HANRAG_MILVUS__URI")
        self.uri = self.mcfg.uri
        self.collection = self.mcfg.collection
        self.terms_collection = f"{self.collection}__terms"
        _quiet_pymilvus()
        self.client = client if client is not None else self._connect()
        self._meta: dict[str, Any] | None = None
        self._qv_cache: tuple[tuple, float, dict[int, float]] | None = None
        if require_complete:
            self._check_complete()

    # -------------------------------------------------------------- plumbing

    def _connect(self) -> Any:
        try:
            from pymilvus import MilvusClient
        except ImportError as exc:  # pragma: no cover - the milvus extra is missing
            raise MilvusError(f"pymilvus is not installed ({exc}); pip install 'hanrag[milvus]'") from None
        try:
            return MilvusClient(
                uri=self.uri, token=self.mcfg.token, db_name=self.mcfg.db_name, timeout=self.mcfg.timeout_s
            )
        except Exception as exc:  # noqa: BLE001 - pymilvus raises several kinds
            raise self._wrap(exc, "connect") from None

    def _wrap(self, exc: BaseException, what: str) -> MilvusError:
        msg = str(getattr(exc, "message", "") or exc)
        code = getattr(exc, "code", None)
        unavailable = code == 2 or any(
            s in msg.lower() for s in ("unavailable", "connection refused", "fail connecting", "deadline")
        )
        if unavailable:
            return MilvusUnavailable(
                f"Milvus at {self.uri} is unavailable ({what}: {msg}); is the server running and milvus.uri right?"
            )
        return MilvusError(f"Milvus at {self.uri}, collection {self.collection!r}: {what} failed: {msg}")

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", self.mcfg.timeout_s)
        try:
            return fn(*args, **kwargs)
        except MilvusError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise self._wrap(exc, what) from None

    def _query(self, collection: str, expr: str, fields: Sequence[str]) -> list[dict[str, Any]]:
        return list(
            self._call(
                "query",
                self.client.query,
                collection,
                filter=expr,
                output_fields=list(fields),
                limit=QUERY_LIMIT,
                consistency_level=self.mcfg.consistency_level,
            )
        )

    def _query_ids(self, collection: str, pk: str, ids: Sequence[str], fields: Sequence[str]) -> list[dict]:
        rows: list[dict[str, Any]] = []
        for start in range(0, len(ids), ID_BATCH):
            rows.extend(self._query(collection, in_list(pk, ids[start : start + ID_BATCH]), fields))
        return rows

    def _scan(self, collection: str, fields: Sequence[str], expr: str = "") -> Iterable[dict[str, Any]]:
        """Every row (chunked with query_iterator, so collections above 16384 rows work)."""
        it = self._call(
            "query_iterator",
            self.client.query_iterator,
            collection,
            batch_size=2000,
            filter=expr,
            output_fields=list(fields),
            consistency_level=self.mcfg.consistency_level,
        )
        try:
            while True:
                try:
                    batch = it.next()
                except Exception as exc:  # noqa: BLE001
                    raise self._wrap(exc, "query_iterator") from None
                if not batch:
                    break
                yield from batch
        finally:
            it.close()

    def exists(self) -> bool:
        return bool(self._call("has_collection", self.client.has_collection, self.collection)) and bool(
            self._call("has_collection", self.client.has_collection, self.terms_collection)
        )

    # -------------------------------------------------------------- meta and terms

    def _read_meta(self) -> dict[str, Any] | None:
        rows = self._query(self.terms_collection, in_list("key", [META_KEY]), ["info"])
        return dict(rows[0]["info"]) if rows else None

    def meta(self, refresh: bool = False) -> dict[str, Any]:
        if self._meta is None or refresh:
            meta = self._read_meta() if self.exists() else None
            if meta is None:
                raise MilvusError(
                    f"Milvus at {self.uri} has no hanrag collection {self.collection!r} "
                    "(push one with `hanrag milvus push INDEX`)"
                )
            self._meta = meta
        return self._meta

    def _check_complete(self) -> None:
        meta = self.meta(refresh=True)
        if meta.get("state") != "complete":
            raise MilvusIncomplete(
                f"Milvus collection {self.collection!r} at {self.uri} was left incomplete by a push started "
                f"{meta.get('started_at', '?')} (state {meta.get('state')!r}); rerun `hanrag milvus push`"
            )

    def _term_rows(self, terms: Iterable[str]) -> dict[str, dict[str, Any]]:
        """term -> {"term_id", "df"} for the given terms that are known."""
        by_key = {term_key(t): t for t in terms}
        if not by_key:
            return {}
        rows = self._query_ids(self.terms_collection, "key", list(by_key), ["key", "term_id", "df"])
        return {by_key[r["key"]]: {"term_id": int(r["term_id"]), "df": int(r["df"])} for r in rows}

    def _query_vector(self, query: Mapping[str, float]) -> dict[int, float]:
        """Sparse query vector {term id: weight * idf} from the current statistics (one lookup).

        The last one is reused for 2 s: the searcher asks for the same weights twice per
        query (top-k, then scores of the dense-only candidates); statistics change only
        on pushes, and a search racing a push may see either side of it anyway.
        """
        key = tuple(sorted(query.items()))
        cached = self._qv_cache
        if cached is not None and cached[0] == key and time.monotonic() - cached[1] < 2.0:
            return cached[2]
        vec = self._query_vector_uncached(query)
        self._qv_cache = (key, time.monotonic(), vec)
        return vec

    def _query_vector_uncached(self, query: Mapping[str, float]) -> dict[int, float]:
        bm25_idf, _ = _bm25_parts()
        terms = [t for t, w in query.items() if w]
        keys = {term_key(t): t for t in terms}
        rows = self._query_ids(self.terms_collection, "key", [META_KEY, *keys], ["key", "term_id", "df", "info"])
        n_docs = 0
        stats: dict[str, tuple[int, int]] = {}
        for r in rows:
            if r["key"] == META_KEY:
                n_docs = int(r["info"].get("n_docs", 0))
            else:
                stats[keys[r["key"]]] = (int(r["term_id"]), int(r["df"]))
        vec: dict[int, float] = {}
        for term in terms:
            if term in stats and stats[term][1] > 0:
                tid, df = stats[term]
                vec[tid] = vec.get(tid, 0.0) + float(query[term]) * float(bm25_idf(df, n_docs, self._method()))
        return vec

    def sparse_ceiling(self, query: Mapping[str, float]) -> float:
        """The highest BM25 score any chunk could reach (``bm25_ceiling``) from the current df / N (one lookup)."""
        from hanrag.index.sparse import bm25_ceiling

        terms = [t for t, w in query.items() if w > 0]
        if not terms:
            return 0.0
        keys = {term_key(t): t for t in terms}
        rows = self._query_ids(self.terms_collection, "key", [META_KEY, *keys], ["key", "df", "info"])
        n_docs, df_of = 0, {}
        for r in rows:
            if r["key"] == META_KEY:
                n_docs = int(r["info"].get("n_docs", 0))
            else:
                df_of[keys[r["key"]]] = int(r["df"])
        bm = self.meta().get("bm25", {})
        return bm25_ceiling(query, df_of, n_docs, float(bm.get("k1", self.cfg.bm25.k1)), self._method())

    def _method(self) -> str:
        return str(self.meta().get("bm25", {}).get("method", self.cfg.bm25.method))

    # -------------------------------------------------------------- IndexBackend: reads

    def manifest(self) -> dict[str, Any]:
        meta = self.meta(refresh=True)
        manifest = dict(meta.get("manifest") or {})
        manifest["backend"] = {
            "kind": "milvus",
            "uri": self.uri,
            "collection": self.collection,
            "state": meta.get("state"),
            "n_docs": meta.get("n_docs"),
            "avgdl": meta.get("total_len", 0) / max(1, meta.get("n_docs", 0) or 1),
            "avgdl_ref": meta.get("avgdl_ref"),
            "pushed_at": meta.get("finished_at"),
            "snapshot": meta.get("snapshot"),
        }
        return manifest

    def count(self) -> int:
        return int(self.meta(refresh=True).get("n_chunks", 0))

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        ids = list(dict.fromkeys(chunk_ids))
        rows = {r["chunk_id"]: r for r in self._query_ids(self.collection, "chunk_id", ids, _CHUNK_FIELDS)}
        missing = [c for c in ids if c not in rows]
        if missing:
            raise KeyError(f"unknown chunk id(s) in Milvus collection {self.collection!r}: {missing[:5]}")
        return [chunk_from_row(rows[c]) for c in chunk_ids]

    def doc_chunks(self, doc_id: str) -> list[Chunk]:
        rows = self._query(self.collection, f"doc_id == {lit(doc_id)}", _CHUNK_FIELDS)
        # text order; chunks of one document start at distinct offsets, the rest is a stable tie-break
        return sorted((chunk_from_row(r) for r in rows), key=lambda c: (c.start, c.end, c.chunk_id))

    def _search_filter(self, filters: Filters | None) -> str | None:
        """The expression for a search: filters plus 'not a folded duplicate'; None = nothing can match."""
        base = and_expr('dup_of == ""', filters_to_expr(filters))
        if filters is None or not filters.source_glob:
            return base
        # LIKE matched a superset of the glob: resolve the exact set in hanrag, before top-K
        rows = self._scan(self.collection, ["chunk_id", "source", "path"], base)
        glob = filters.source_glob
        ids = [r["chunk_id"] for r in rows if fnmatch.fnmatch(r["source"], glob) or fnmatch.fnmatch(r["path"], glob)]
        if not ids:
            return None
        return and_expr(base, in_list("chunk_id", ids))

    def _search(self, field_name: str, vector: Any, k: int, expr: str, params: dict[str, Any]) -> list[tuple]:
        res = self._call(
            "search",
            self.client.search,
            self.collection,
            data=[vector],
            anns_field=field_name,
            limit=min(k, QUERY_LIMIT),
            filter=expr,
            search_params=params,
            output_fields=[],
            consistency_level=self.mcfg.consistency_level,
        )
        hits = [(str(h["id"]), float(h["distance"])) for h in res[0]]
        # deterministic order for equal scores (Milvus does not promise one)
        return sorted(hits, key=lambda h: (-h[1], h[0]))

    def sparse_search(
        self, query: Mapping[str, float], k: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        qvec = self._query_vector(query)
        if not qvec:
            return []
        expr = self._search_filter(filters)
        if expr is None:
            return []
        params = {"metric_type": "IP", "params": {"drop_ratio_search": 0.0}}
        return [(cid, s) for cid, s in self._search("sparse", qvec, k, expr, params) if s > 0]

    def dense_search(self, qvec: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        expr = self._search_filter(filters)
        if expr is None:
            return []
        vec = np.asarray(qvec, dtype=np.float32).reshape(-1).tolist()
        return self._search("dense", vec, k, expr, self._dense_params(k))

    def _dense_params(self, k: int) -> dict[str, Any]:
        params: dict[str, Any] = {}
        if self.mcfg.dense_index.upper() == "HNSW":
            params["ef"] = max(k, self.mcfg.hnsw_ef)
        elif self.mcfg.dense_index.upper() == "IVF_FLAT":
            params["nprobe"] = self.mcfg.ivf_nprobe
        return {"metric_type": "IP", "params": params}

    def _fetch(self, chunk_ids: Sequence[str], field_name: str) -> dict[str, Any]:
        ids = list(dict.fromkeys(chunk_ids))
        return {
            r["chunk_id"]: r[field_name]
            for r in self._query_ids(self.collection, "chunk_id", ids, ["chunk_id", field_name])
        }

    def sparse_scores(self, query: Mapping[str, float], chunk_ids: Sequence[str]) -> np.ndarray:
        """BM25 of given chunks: the stored tf parts dotted with the query vector, in hanrag (float32 as Milvus)."""
        out = np.zeros(len(chunk_ids), dtype=np.float32)
        if not chunk_ids:
            return out
        qvec = self._query_vector(query)
        if not qvec:
            return out
        vecs = self._fetch(chunk_ids, "sparse")
        for i, cid in enumerate(chunk_ids):
            sv = vecs.get(cid)
            if sv is None:
                raise KeyError(f"unknown chunk id in Milvus collection {self.collection!r}: {cid}")
            common = [t for t in sv if int(t) in qvec]
            if common:
                a = np.array([sv[t] for t in common], dtype=np.float32)
                b = np.array([qvec[int(t)] for t in common], dtype=np.float32)
                out[i] = float(np.dot(a, b))
        return out

    def dense_scores(self, qvec: np.ndarray, chunk_ids: Sequence[str]) -> np.ndarray:
        if not chunk_ids:
            return np.zeros(0, dtype=np.float32)
        vecs = self._fetch(chunk_ids, "dense")
        missing = [c for c in chunk_ids if c not in vecs]
        if missing:
            raise KeyError(f"unknown chunk id(s) in Milvus collection {self.collection!r}: {missing[:5]}")
        matrix = np.array([vecs[c] for c in chunk_ids], dtype=np.float32)
        return np.asarray(matrix @ np.asarray(qvec, dtype=np.float32).reshape(-1), dtype=np.float32)

    def duplicates_of(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        found = self._fetch(chunk_ids, "also_in")
        return {cid: tuple(v) for cid, v in found.items() if v}

    def hybrid_search_server(
        self,
        query: Mapping[str, float],
        qvec: np.ndarray,
        k: int,
        bm25_weight: float,
        dense_weight: float,
        filters: Filters | None = None,
        candidates: int | None = None,
    ) -> list[tuple[str, float]]:
        """Milvus-side fusion (hybrid_search + WeightedRanker), for comparison with fusion in hanrag."""
        from pymilvus import AnnSearchRequest, WeightedRanker

        expr = self._search_filter(filters)
        sparse_q = self._query_vector(query)
        if expr is None:
            return []
        n = candidates or max(20, 4 * k)
        reqs = []
        weights = []
        if sparse_q:
            reqs.append(AnnSearchRequest([sparse_q], "sparse", {"metric_type": "IP"}, n, expr=expr))
            weights.append(bm25_weight)
        reqs.append(
            AnnSearchRequest(
                [np.asarray(qvec, dtype=np.float32).reshape(-1).tolist()], "dense", self._dense_params(n), n, expr=expr
            )
        )
        weights.append(dense_weight)
        res = self._call(
            "hybrid_search",
            self.client.hybrid_search,
            self.collection,
            reqs,
            WeightedRanker(*weights),
            limit=k,
            output_fields=[],
            consistency_level=self.mcfg.consistency_level,
        )
        return [(str(h["id"]), float(h["distance"])) for h in res[0]]

    # -------------------------------------------------------------- schema

    def _create(self, dim: int) -> None:
        from pymilvus import DataType, MilvusClient

        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("chunk_id", DataType.VARCHAR, is_primary=True, max_length=2048)
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_field("text", DataType.VARCHAR, max_length=MAX_TEXT_BYTES)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=4096)
        schema.add_field("source", DataType.VARCHAR, max_length=8192)
        schema.add_field("path", DataType.VARCHAR, max_length=4096)
        schema.add_field("title", DataType.VARCHAR, max_length=8192)
        schema.add_field("lang", DataType.VARCHAR, max_length=16)
        schema.add_field("tier", DataType.INT64)
        schema.add_field("provenance", DataType.VARCHAR, max_length=32)
        schema.add_field(
            "labels", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=MAX_LABELS, max_length=1024
        )
        schema.add_field("headings", DataType.JSON)
        schema.add_field("extra", DataType.JSON)  # start, end, section, page
        schema.add_field("content_hash", DataType.VARCHAR, max_length=64)
        schema.add_field("dup_of", DataType.VARCHAR, max_length=2048)  # "" = kept (searchable)
        schema.add_field("also_in", DataType.JSON)  # sources of the duplicates folded into this chunk
        schema.add_field("tf", DataType.JSON)  # raw term counts {term: n}, for re-normalisation and df upkeep
        schema.add_field("n_tokens", DataType.INT64)
        index = self.client.prepare_index_params()
        kind = self.mcfg.dense_index.upper()
        params: dict[str, Any] = {}
        if kind == "HNSW":
            params = {"M": self.mcfg.hnsw_m, "efConstruction": self.mcfg.hnsw_ef_construction}
        elif kind == "IVF_FLAT":
            params = {"nlist": self.mcfg.ivf_nlist}
        index.add_index("dense", index_type=kind, metric_type="IP", params=params)
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
        # a push killed between the two creations left one behind: drop it, nothing in it is trusted
        for name in (self.collection, self.terms_collection):
            if self._call("has_collection", self.client.has_collection, name):
                self._call("drop_collection", self.client.drop_collection, name)
        self._call(
            "create_collection",
            self.client.create_collection,
            self.collection,
            schema=schema,
            index_params=index,
            consistency_level=self.mcfg.consistency_level,
        )
        terms = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        terms.add_field("key", DataType.VARCHAR, is_primary=True, max_length=64)
        terms.add_field("term", DataType.VARCHAR, max_length=8192)
        terms.add_field("term_id", DataType.INT64)
        terms.add_field("df", DataType.INT64)
        terms.add_field("info", DataType.JSON)
        terms.add_field("v", DataType.FLOAT_VECTOR, dim=2)  # Milvus wants a vector field in every collection
        tindex = self.client.prepare_index_params()
        tindex.add_index("v", index_type="FLAT", metric_type="L2")
        self._call(
            "create_collection",
            self.client.create_collection,
            self.terms_collection,
            schema=terms,
            index_params=tindex,
            consistency_level=self.mcfg.consistency_level,
        )

    def drop(self) -> None:
        for name in (self.collection, self.terms_collection):
            if self._call("has_collection", self.client.has_collection, name):
                self._call("drop_collection", self.client.drop_collection, name)
        self._meta = None

    # -------------------------------------------------------------- writes

    def _put_meta(self, meta: dict[str, Any]) -> None:
        self._qv_cache = None
        row = {"key": META_KEY, "term": "", "term_id": -1, "df": 0, "info": meta, "v": [0.0, 0.0]}
        self._call("upsert", self.client.upsert, self.terms_collection, [row])
        self._meta = meta

    def _upsert_rows(self, collection: str, rows: list[dict[str, Any]], batch: int) -> None:
        for start in range(0, len(rows), batch):
            self._call("upsert", self.client.upsert, collection, rows[start : start + batch])

    def _delete_ids(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), ID_BATCH):
            expr = in_list("chunk_id", ids[start : start + ID_BATCH])
            self._call("delete", self.client.delete, self.collection, filter=expr)

    def write(
        self,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        tokens: Sequence[Sequence[str]],
        *,
        delete: Sequence[str] = (),
        dup_of: Mapping[str, str] | None = None,
        also_in: Mapping[str, Sequence[str]] | None = None,
        manifest: Mapping[str, Any] | None = None,
        snapshot: str | None = None,
        renormalize: bool = False,
        full: bool = False,
    ) -> SyncReport:
        """Upsert ``chunks`` (with their dense vectors and index tokens) and delete ``delete`` by chunk id.

        Statistics (df, N, total length) are updated from the rows' stored raw term
        counts, so this works on its own as well as under :meth:`sync_from_snapshot`.
        ``full=True`` says ``chunks`` is the complete collection (``delete`` = every other
        stored id): statistics are recomputed from scratch — the repair after an
        interrupted write, whose partial df updates cannot be trusted.
        """
        t0 = time.perf_counter()
        vectors = np.asarray(vectors, dtype=np.float32)
        if len(chunks) != len(tokens) or len(chunks) != vectors.shape[0]:
            raise ValueError(f"{len(chunks)} chunks, {len(tokens)} token lists, {vectors.shape[0]} vectors")
        for c in chunks:
            _check_fits(c)
        dup_of = dup_of or {}
        also_in = also_in or {}
        exists = self.exists()
        if not exists:
            if vectors.ndim != 2 or vectors.shape[1] == 0:
                raise MilvusError("cannot create the collection without vectors (their dimension sets the schema)")
            self._create(int(vectors.shape[1]))
            old_meta: dict[str, Any] = {}
        else:
            old_meta = self._read_meta() or {}
            dim = old_meta.get("dim")
            if vectors.size and dim and vectors.shape[1] != dim:
                raise MilvusError(
                    f"collection {self.collection!r} at {self.uri} holds {dim}-d vectors, got {vectors.shape[1]}-d "
                    "(another embedder?); push with --recreate"
                )
        bm = self.cfg.bm25
        old_bm = old_meta.get("bm25")
        want_bm = {"method": bm.method, "k1": bm.k1, "b": bm.b}
        if old_bm and old_bm != want_bm:
            renormalize = True  # different BM25 parameters: every stored tf part is stale

        counts = [Counter(t) for t in tokens]
        if exists and not full and old_meta.get("state") != "complete":
            raise MilvusIncomplete(
                f"Milvus collection {self.collection!r} at {self.uri} was left incomplete by an interrupted write; "
                "its statistics cannot be updated incrementally: rerun `hanrag milvus push INDEX`"
            )
        if full:
            # ``chunks`` is the whole collection: statistics from scratch, every stored term reset
            df_delta: Counter[str] = Counter()
            for c in counts:
                df_delta.update(c.keys())
            if exists:
                for r in self._scan(self.terms_collection, ["term", "df"], f"key != {lit(META_KEY)}"):
                    df_delta[r["term"]] -= int(r["df"])
            n_docs, total_len = len(chunks), sum(len(t) for t in tokens)
            renormalize, avgdl_ref = False, None  # every row is rewritten below with the new avgdl
        else:
            # rows being replaced or deleted take their counts out, new rows put theirs in
            touched = list(dict.fromkeys([c.chunk_id for c in chunks] + list(delete)))
            fields = ["chunk_id", "tf", "n_tokens"]
            old_rows = (
                {r["chunk_id"]: r for r in self._query_ids(self.collection, "chunk_id", touched, fields)}
                if exists and touched
                else {}
            )
            df_delta = Counter()
            n_docs = int(old_meta.get("n_docs", 0))
            total_len = int(old_meta.get("total_len", 0))
            for row in old_rows.values():
                df_delta.subtract(row["tf"].keys())
                n_docs -= 1
                total_len -= int(row["n_tokens"])
            for c in counts:
                df_delta.update(c.keys())
            n_docs += len(chunks)
            total_len += sum(len(t) for t in tokens)
            avgdl_ref = old_meta.get("avgdl_ref")
            delete = [cid for cid in delete if cid in old_rows]
        avgdl = total_len / n_docs if n_docs and total_len else 1.0  # an empty index keeps a harmless 1.0
        if renormalize or not avgdl_ref or abs(avgdl / avgdl_ref - 1.0) > self.mcfg.avgdl_tolerance:
            renormalize = renormalize or bool(avgdl_ref)
            avgdl_ref = avgdl

        meta = dict(old_meta)
        meta.update(
            state="writing",
            started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            schema_version=SCHEMA_VERSION,
            dim=int(vectors.shape[1]) if vectors.ndim == 2 and vectors.size else old_meta.get("dim"),
        )
        self._put_meta(meta)  # from here on the collection says "incomplete" until the last write

        # vocabulary: ids for new terms, df for changed ones
        changed_terms = [t for t, d in df_delta.items() if d]
        known = self._term_rows(changed_terms)
        next_id = int(old_meta.get("next_term_id", 0))
        term_rows = []
        for term in changed_terms:
            if len(term.encode("utf-8")) > 8192:
                raise MilvusError(f"token of {len(term.encode('utf-8'))} bytes is too long for the vocabulary")
            if term in known:
                tid, df = known[term]["term_id"], known[term]["df"] + df_delta[term]
            else:
                tid, df = next_id, df_delta[term]
                next_id += 1
            term_rows.append({"key": term_key(term), "term": term, "term_id": tid, "df": max(0, df), "info": {},
                              "v": [0.0, 0.0]})  # fmt: skip
            known[term] = {"term_id": tid, "df": df}
        # ids of unchanged terms that the new chunks use
        need = {t for c in counts for t in c} - set(known)
        known.update(self._term_rows(need))
        self._upsert_rows(self.terms_collection, term_rows, self.mcfg.batch_size * 4)

        _, tf_part = _bm25_parts()
        rows = [
            self._row(
                c, v, cnt, known, avgdl_ref, dup_of.get(c.chunk_id, ""), also_in.get(c.chunk_id, ()), toks, tf_part
            )
            for c, v, cnt, toks in zip(chunks, vectors, counts, tokens, strict=True)
        ]
        deleted = list(delete)
        if deleted:
            self._delete_ids(deleted)
        self._upsert_rows(self.collection, rows, self.mcfg.batch_size)
        n_renormalized = 0
        if renormalize:
            n_renormalized = self._renormalize(avgdl_ref, skip={c.chunk_id for c in chunks}, tf_part=tf_part)

        meta.update(
            state="complete",
            finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            n_docs=n_docs,
            n_chunks=n_docs,
            total_len=total_len,
            avgdl_ref=avgdl_ref,
            next_term_id=next_id,
            bm25=want_bm,
        )
        if manifest is not None:
            meta["manifest"] = dict(manifest)
        if snapshot is not None:
            meta["snapshot"] = snapshot
        self._put_meta(meta)  # the build marker, written last
        return SyncReport(
            upserted=len(chunks),
            deleted=len(deleted),
            unchanged=0,
            renormalized=bool(n_renormalized) or renormalize,
            total=n_docs,
            seconds=time.perf_counter() - t0,
        )

    def _row(
        self,
        c: Chunk,
        vector: np.ndarray,
        counts: Counter[str],
        terms: Mapping[str, Mapping[str, int]],
        avgdl: float,
        dup_of: str,
        also_in: Sequence[str],
        tokens: Sequence[str],
        tf_part: Callable[..., Any],
    ) -> dict[str, Any]:
        bm = self.cfg.bm25
        dl = sum(counts.values())
        sparse = {terms[t]["term_id"]: float(tf_part(n, dl, avgdl, bm.k1, bm.b, bm.method)) for t, n in counts.items()}
        return {
            "chunk_id": c.chunk_id,
            "dense": np.asarray(vector, dtype=np.float32).tolist(),
            "sparse": {k: v for k, v in sparse.items() if v > 0} or {0: 0.0},
            "text": c.text,
            "doc_id": c.doc_id,
            "source": c.source,
            "path": c.path,
            "title": c.title,
            "lang": c.lang,
            "tier": int(c.tier),
            "provenance": c.provenance,
            "labels": list(c.labels),
            "headings": list(c.headings),
            "extra": {"start": c.start, "end": c.end, "section": c.section, "page": c.page},
            "content_hash": row_hash(c, also_in, dup_of, tokens),
            "dup_of": dup_of,
            "also_in": list(also_in),
            "tf": dict(counts),
            "n_tokens": dl,
        }

    def _renormalize(self, avgdl: float, skip: set[str], tf_part: Callable[..., Any]) -> int:
        """Recompute every stored sparse vector with ``avgdl`` (from the raw counts kept per chunk)."""
        bm = self.cfg.bm25
        ids = [r["chunk_id"] for r in self._scan(self.collection, ["chunk_id"]) if r["chunk_id"] not in skip]
        fields = [*_CHUNK_FIELDS, "dense", "content_hash", "dup_of", "also_in", "tf", "n_tokens"]
        done = 0
        for start in range(0, len(ids), self.mcfg.batch_size):
            rows = self._query_ids(self.collection, "chunk_id", ids[start : start + self.mcfg.batch_size], fields)
            terms = self._term_rows({t for r in rows for t in r["tf"]})
            for r in rows:
                dl = int(r["n_tokens"])
                sparse = {
                    terms[t]["term_id"]: float(tf_part(n, dl, avgdl, bm.k1, bm.b, bm.method))
                    for t, n in r["tf"].items()
                }
                r["sparse"] = {k: v for k, v in sparse.items() if v > 0} or {0: 0.0}
                r["dense"] = [float(x) for x in r["dense"]]
            self._upsert_rows(self.collection, rows, self.mcfg.batch_size)
            done += len(rows)
        return done

    def delete(self, chunk_ids: Sequence[str]) -> SyncReport:
        return self.write([], np.zeros((0, int(self._read_meta().get("dim") or 0)), np.float32), [], delete=chunk_ids)

    def stored_hashes(self) -> dict[str, str]:
        if not self.exists():
            return {}
        return {r["chunk_id"]: r["content_hash"] for r in self._scan(self.collection, ["chunk_id", "content_hash"])}

    # -------------------------------------------------------------- sync

    def sync(
        self,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        tokens: Sequence[Sequence[str]],
        *,
        dup_of: Mapping[str, str] | None = None,
        also_in: Mapping[str, Sequence[str]] | None = None,
        manifest: Mapping[str, Any] | None = None,
        snapshot: str | None = None,
        renormalize: bool = False,
        recreate: bool = False,
    ) -> SyncReport:
        """Make the collection mirror this full chunk set, writing only what changed (by content hash)."""
        t0 = time.perf_counter()
        if recreate:
            self.drop()
        dup_of = dup_of or {}
        also_in = also_in or {}
        if self.exists():
            meta = self._read_meta() or {}
            old_embedder = (meta.get("manifest") or {}).get("embedder")
            new_embedder = (manifest or {}).get("embedder")
            if old_embedder and new_embedder and old_embedder != new_embedder:
                raise MilvusError(
                    f"collection {self.collection!r} at {self.uri} was pushed with another embedder "
                    f"({old_embedder}); push with --recreate to replace it"
                )
        exists = self.exists()
        meta_state = (self._read_meta() or {}).get("state") if exists else None
        # after an interrupted write nothing stored can be trusted for statistics: rewrite it all
        full = meta_state != "complete"
        stored = self.stored_hashes() if exists else {}
        want: list[int] = []
        for i, c in enumerate(chunks):
            h = row_hash(c, also_in.get(c.chunk_id, ()), dup_of.get(c.chunk_id, ""), tokens[i])
            if full or stored.get(c.chunk_id) != h:
                want.append(i)
        current = {c.chunk_id for c in chunks}
        gone = [cid for cid in stored if cid not in current]
        unchanged = len(chunks) - len(want)
        if not want and not gone and not renormalize:
            if manifest is not None or snapshot is not None:
                meta = self._read_meta() or {}
                if manifest is not None:
                    meta["manifest"] = dict(manifest)
                if snapshot is not None:
                    meta["snapshot"] = snapshot
                self._put_meta(meta)
            return SyncReport(0, 0, unchanged, False, len(chunks), time.perf_counter() - t0)
        report = self.write(
            [chunks[i] for i in want],
            np.asarray(vectors, dtype=np.float32)[want] if want else np.zeros((0, np.asarray(vectors).shape[1])),
            [tokens[i] for i in want],
            delete=gone,
            dup_of=dup_of,
            also_in=also_in,
            manifest=manifest,
            snapshot=snapshot,
            renormalize=renormalize,
            full=full,
        )
        return SyncReport(
            report.upserted, report.deleted, unchanged, report.renormalized, report.total, time.perf_counter() - t0
        )

    def sync_from_snapshot(
        self, index_dir: str | Path, *, renormalize: bool = False, recreate: bool = False
    ) -> SyncReport:
        """Push an embedded index's current snapshot (chunks, embeddings, tokens, duplicates), incrementally."""
        data = read_snapshot_for_push(self.cfg, index_dir)
        return self.sync(
            data["chunks"],
            data["vectors"],
            data["tokens"],
            dup_of=data["dup_of"],
            also_in=data["also_in"],
            manifest=data["manifest"],
            snapshot=data["snapshot"],
            renormalize=renormalize,
            recreate=recreate,
        )


def snapshot_tokens(cfg: Config, index_dir: str | Path, snap: Any, analyzer: Any = None) -> list[list[str]]:
    """The index tokens of every snapshot row: from the build's token cache, else by re-tokenising.

    Re-tokenising needs an analyzer with the snapshot's identity (same settings, lexicons and
    library versions); either way each row's token count is checked against the BM25 index's
    stored document length, so a push never indexes tokens that differ from the embedded index.
    """
    from hanrag.embed import identity_key
    from hanrag.index.build import CACHE_DIR, TokenCache, text_hash

    ident = snap.manifest.get("analyzer") or {}
    cache = TokenCache(Path(index_dir) / CACHE_DIR, identity_key(ident)) if ident else None
    keys = [f"{c.lang}:{text_hash(c.text)}" for c in snap.chunks]
    tokens: list[list[str] | None] = [cache.data.get(k) if cache else None for k in keys]
    missing = [i for i, t in enumerate(tokens) if t is None]
    if missing:
        if analyzer is None:
            from hanrag.text import get_analyzer

            analyzer = get_analyzer(cfg)
        if ident and analyzer.identity() != ident:
            raise MilvusError(
                f"{index_dir}: the token cache is gone and this config's analyzer differs from the index's "
                "(text/lexicon settings or library versions); push with the index's config or rebuild the index"
            )
        for i in missing:
            tokens[i] = list(analyzer.tokenize(snap.chunks[i].text, snap.chunks[i].lang))
    doc_lens = np.asarray(snap.sparse.doc_lens)
    for i, t in enumerate(tokens):
        if len(t or ()) != int(doc_lens[i]):
            raise MilvusError(
                f"{index_dir}: chunk {snap.chunks[i].chunk_id} has {len(t or ())} tokens but the BM25 index "
                f"counted {int(doc_lens[i])}; rebuild the index before pushing"
            )
    return [list(t or ()) for t in tokens]


def read_snapshot_for_push(cfg: Config, index_dir: str | Path, analyzer: Any = None) -> dict[str, Any]:
    """Everything a push needs from the embedded index at ``index_dir`` (its published snapshot)."""
    from hanrag.index.snapshot import open_snapshot

    snap = open_snapshot(index_dir, verify=True)
    chunks = list(snap.chunks)
    dup_of = {chunks[i].chunk_id: chunks[int(j)].chunk_id for i, j in enumerate(snap.dup_of) if j >= 0}
    also_in = {chunks[r].chunk_id: list(snap.also_in(r)) for r in snap.folded}
    bm = snap.manifest.get("config", {}).get("bm25")
    want = {"method": cfg.bm25.method, "k1": cfg.bm25.k1, "b": cfg.bm25.b}
    if bm and {k: bm.get(k) for k in want} != want:
        raise MilvusError(f"{index_dir}: the index was built with bm25 {bm}, this config says {want}")
    return {
        "chunks": chunks,
        "vectors": np.asarray(snap.embeddings, dtype=np.float32),
        "tokens": snapshot_tokens(cfg, index_dir, snap, analyzer),
        "dup_of": dup_of,
        "also_in": also_in,
        "manifest": {k: v for k, v in snap.manifest.items() if k != "files"},
        "snapshot": snap.name,
    }


def _quiet_pymilvus() -> None:
    """pymilvus logs a full traceback per failed retry; hanrag reports one clear error instead."""
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("pymilvus"):
            logger = logging.getLogger(name)
            if logger.level == logging.NOTSET or logger.level < logging.CRITICAL:
                logger.setLevel(logging.CRITICAL)
    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)
