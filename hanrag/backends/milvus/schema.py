"""The two collections and the mapping between a :class:`Chunk` and its row.

``<collection>``: one row per chunk — ``chunk_id`` (primary key), the dense vector,
the sparse BM25 vector (tf parts over hanrag term ids), text and metadata, the content
hash, duplicate links, and the raw term counts (``tf``, ``n_tokens``) that keep df
upkeep and re-normalisation possible without the index folder.

``<collection>__terms``: one row per term (hash key, term, term id, df) plus the
``meta`` row (N, total length, avgdl_ref, manifest, write state) in ``info``.

pymilvus (the optional ``[milvus]`` extra) is imported where a schema is built, not at the top:
the rest of this package, and everything importing it for its errors, works without it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hanrag.backends.milvus.errors import MilvusError
from hanrag.backends.milvus.expressions import lit
from hanrag.config import MilvusConfig
from hanrag.records import Chunk

META_KEY = "meta"
SCHEMA_VERSION = 1
MAX_TEXT_BYTES = 65535
MAX_LABELS = 256
MAX_TERM_BYTES = 8192

CHUNK_FIELDS = [
    "chunk_id", "doc_id", "text", "source", "path", "title", "lang", "tier", "provenance",
    "labels", "headings", "extra",
]  # fmt: skip
# everything a row holds: what a re-normalisation reads back and writes again
ALL_FIELDS = [*CHUNK_FIELDS, "dense", "content_hash", "dup_of", "also_in", "tf", "n_tokens"]


def term_key(term: str) -> str:
    """Primary key of a term row: a hash, so any token is safe inside an expression."""
    return hashlib.blake2b(term.encode("utf-8"), digest_size=16).hexdigest()


def row_hash(chunk: Chunk, also_in: Sequence[str], dup_of: str, tokens: Sequence[str]) -> str:
    """Content hash of everything stored for a chunk except the vectors' BM25 normalisation."""
    blob = json.dumps(
        [chunk.to_dict(), list(also_in), dup_of, list(tokens)], ensure_ascii=False, sort_keys=True
    ).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def check_fits(chunk: Chunk) -> None:
    """Refuse, naming the chunk, what the schema cannot hold (before anything is written)."""
    lit(chunk.chunk_id)  # raises on control characters
    if len(chunk.text.encode("utf-8")) > MAX_TEXT_BYTES:
        raise MilvusError(f"chunk {chunk.chunk_id}: text is over {MAX_TEXT_BYTES} bytes (Milvus VARCHAR limit)")
    if len(chunk.labels) > MAX_LABELS:
        raise MilvusError(f"chunk {chunk.chunk_id}: {len(chunk.labels)} labels, at most {MAX_LABELS} fit")


def check_term(term: str) -> None:
    size = len(term.encode("utf-8"))
    if size > MAX_TERM_BYTES:
        raise MilvusError(f"token of {size} bytes is too long for the vocabulary (at most {MAX_TERM_BYTES})")


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


def chunk_row(
    c: Chunk,
    vector: np.ndarray,
    sparse: dict[int, float],
    counts: Mapping[str, int],
    *,
    dup_of: str,
    also_in: Sequence[str],
    tokens: Sequence[str],
) -> dict[str, Any]:
    """The collection row of one chunk (``sparse``: its BM25 tf parts by term id)."""
    return {
        "chunk_id": c.chunk_id,
        "dense": np.asarray(vector, dtype=np.float32).tolist(),
        "sparse": sparse,
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
        "n_tokens": int(sum(counts.values())),
    }


def meta_row(meta: dict[str, Any]) -> dict[str, Any]:
    return {"key": META_KEY, "term": "", "term_id": -1, "df": 0, "info": meta, "v": [0.0, 0.0]}


def term_row(term: str, term_id: int, df: int) -> dict[str, Any]:
    # "v": Milvus wants a vector field in every collection; the terms collection never searches it
    return {"key": term_key(term), "term": term, "term_id": term_id, "df": max(0, df), "info": {}, "v": [0.0, 0.0]}


def chunk_schema(dim: int) -> Any:
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
    schema.add_field("labels", DataType.ARRAY, element_type=DataType.VARCHAR, max_capacity=MAX_LABELS, max_length=1024)
    schema.add_field("headings", DataType.JSON)
    schema.add_field("extra", DataType.JSON)  # start, end, section, page
    schema.add_field("content_hash", DataType.VARCHAR, max_length=64)
    schema.add_field("dup_of", DataType.VARCHAR, max_length=2048)  # "" = kept (searchable)
    schema.add_field("also_in", DataType.JSON)  # sources of the duplicates folded into this chunk
    schema.add_field("tf", DataType.JSON)  # raw term counts {term: n}, for re-normalisation and df upkeep
    schema.add_field("n_tokens", DataType.INT64)
    return schema


def chunk_index(client: Any, mcfg: MilvusConfig) -> Any:
    """Index parameters: the configured dense index (IP), the exact sparse inverted index (IP)."""
    index = client.prepare_index_params()
    kind = mcfg.dense_index.upper()
    params: dict[str, Any] = {}
    if kind == "HNSW":
        params = {"M": mcfg.hnsw_m, "efConstruction": mcfg.hnsw_ef_construction}
    elif kind == "IVF_FLAT":
        params = {"nlist": mcfg.ivf_nlist}
    index.add_index("dense", index_type=kind, metric_type="IP", params=params)
    index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
    return index


def terms_schema() -> Any:
    from pymilvus import DataType, MilvusClient

    terms = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    terms.add_field("key", DataType.VARCHAR, is_primary=True, max_length=64)
    terms.add_field("term", DataType.VARCHAR, max_length=MAX_TERM_BYTES)
    terms.add_field("term_id", DataType.INT64)
    terms.add_field("df", DataType.INT64)
    terms.add_field("info", DataType.JSON)
    terms.add_field("v", DataType.FLOAT_VECTOR, dim=2)
    return terms


def terms_index(client: Any) -> Any:
    tindex = client.prepare_index_params()
    tindex.add_index("v", index_type="FLAT", metric_type="L2")
    return tindex
