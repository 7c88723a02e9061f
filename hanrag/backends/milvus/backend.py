"""MilvusBackend: the search pipeline's IndexBackend on a Milvus collection, plus push/write/delete."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.backends.milvus import push
from hanrag.backends.milvus.errors import MilvusIncomplete
from hanrag.backends.milvus.search import SearchMixin
from hanrag.backends.milvus.write import PushReport, write
from hanrag.config import Config
from hanrag.records import Chunk


class MilvusBackend(SearchMixin):
    """:class:`~hanrag.backends.base.IndexBackend` over a Milvus collection (see :mod:`hanrag.backends.milvus`)."""

    name = "milvus"

    def __init__(self, cfg: Config, *, require_complete: bool = True, client: Any = None) -> None:
        super().__init__(cfg, client=client)
        self._qv_cache = None
        self._glob_cache = OrderedDict()
        self._glob_lock = threading.Lock()
        if require_complete:
            self._check_complete()

    def write(
        self,
        chunks: Sequence[Chunk],
        vectors: np.ndarray,
        tokens: Sequence[Sequence[str]],
        **kwargs: Any,
    ) -> PushReport:
        """Upsert chunks and delete ids, keeping BM25 statistics exact (:func:`.write.write`)."""
        return write(self, chunks, vectors, tokens, **kwargs)

    def delete(self, chunk_ids: Sequence[str]) -> PushReport:
        """Delete chunks by id. Ids not stored are ignored, so deleting from a collection that does not
        exist is a no-op (nothing to delete); a collection without its meta row (left by a push killed
        while creating it) is refused, naming the repair."""
        if not self.exists():
            return PushReport(0, 0, 0, False, 0, 0.0)
        meta = self._read_meta()
        if meta is None:
            raise MilvusIncomplete(
                f"Milvus collection {self.collection!r} at {self.shown_uri} has no hanrag meta row (a push was "
                "interrupted while creating it); rerun `hanrag milvus push INDEX`"
            )
        if not chunk_ids:
            return PushReport(0, 0, 0, False, int(meta.get("n_docs", 0)), 0.0)
        dim = int(meta.get("dim") or 0)
        return write(self, [], np.zeros((0, dim), np.float32), [], delete=chunk_ids)

    def sync(
        self, chunks: Sequence[Chunk], vectors: np.ndarray, tokens: Sequence[Sequence[str]], **kwargs: Any
    ) -> PushReport:
        """Make the collection mirror this full chunk set, writing only what changed (:func:`.push.sync`)."""
        return push.sync(self, chunks, vectors, tokens, **kwargs)

    def sync_from_snapshot(
        self, index_dir: str | Path, *, renormalize: bool = False, recreate: bool = False
    ) -> PushReport:
        """Push an embedded index's current snapshot (chunks, embeddings, tokens, duplicates), incrementally."""
        data = push.read_snapshot_for_push(self.cfg, index_dir)
        return push.sync(
            self,
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
