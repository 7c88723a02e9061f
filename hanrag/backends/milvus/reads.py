"""IndexBackend reads that are not searches: manifest, counts, records, exact scores of given chunks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hanrag.backends.milvus.connection import MilvusConnection
from hanrag.backends.milvus.expressions import lit
from hanrag.backends.milvus.schema import CHUNK_FIELDS, chunk_from_row
from hanrag.records import Chunk


class ReadsMixin(MilvusConnection):
    def manifest(self) -> dict[str, Any]:
        meta = self.meta(refresh=True)
        manifest = dict(meta.get("manifest") or {})
        manifest["backend"] = {
            "kind": "milvus",
            "uri": self.shown_uri,  # never the credentials (this reaches `hanrag milvus status` and /stats)
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
        rows = {r["chunk_id"]: r for r in self._query_ids(self.collection, "chunk_id", ids, CHUNK_FIELDS)}
        missing = [c for c in ids if c not in rows]
        if missing:
            raise KeyError(f"unknown chunk id(s) in Milvus collection {self.collection!r}: {missing[:5]}")
        return [chunk_from_row(rows[c]) for c in chunk_ids]

    def doc_chunks(self, doc_id: str) -> list[Chunk]:
        rows = self._query(self.collection, f"doc_id == {lit(doc_id)}", CHUNK_FIELDS)
        # text order; chunks of one document start at distinct offsets, the rest is a stable tie-break
        return sorted((chunk_from_row(r) for r in rows), key=lambda c: (c.start, c.end, c.chunk_id))

    def stored_hashes(self) -> dict[str, str]:
        if not self.exists():
            return {}
        return {r["chunk_id"]: r["content_hash"] for r in self._scan(self.collection, ["chunk_id", "content_hash"])}

    def sparse_scores_with(self, qvec: Mapping[int, float], chunk_ids: Sequence[str]) -> np.ndarray:
        """BM25 of given chunks for a query vector: the stored tf parts dotted with it in hanrag (float32,
        as Milvus computes its sums)."""
        out = np.zeros(len(chunk_ids), dtype=np.float32)
        if not chunk_ids or not qvec:
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
