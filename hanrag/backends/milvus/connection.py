"""The client side of a hanrag collection: calls with a timeout and one clear error, batched id
queries, full scans, the meta row, term statistics, and creating/dropping the collections.

Every call runs with ``milvus.timeout_s``, so a misconfigured collection fails fast instead of
retrying for minutes; every failure becomes one :class:`MilvusError` naming the server (with
credentials redacted), the collection and the call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hanrag.backends.milvus import schema
from hanrag.backends.milvus.errors import MilvusError, MilvusIncomplete, classify, redact_uri, uri_secrets
from hanrag.backends.milvus.expressions import in_list
from hanrag.backends.milvus.schema import META_KEY, term_key
from hanrag.config import Config

# ids sent per query expression; keeps expressions well under Milvus' size limits
ID_BATCH = 1000
QUERY_LIMIT = 16384  # Milvus' cap on offset + limit


class MilvusConnection:
    """One hanrag collection pair (``<collection>``, ``<collection>__terms``) on one server."""

    def __init__(self, cfg: Config, *, client: Any = None) -> None:
        self.cfg = cfg
        self.mcfg = cfg.milvus
        if not self.mcfg.uri:
            raise MilvusError("milvus.uri is empty: set it in hanrag.toml [milvus] or HANRAG_MILVUS__URI")
        self.uri = self.mcfg.uri
        self.shown_uri = redact_uri(self.uri)  # what messages, logs and /stats show
        self._secrets = uri_secrets(self.uri, self.mcfg.token)
        self.collection = self.mcfg.collection
        self.terms_collection = f"{self.collection}__terms"
        quiet_pymilvus()
        self.client = client if client is not None else self._connect()
        self._meta: dict[str, Any] | None = None

    # -------------------------------------------------------------- calls

    def _connect(self) -> Any:
        try:
            from pymilvus import MilvusClient
        except ImportError as exc:  # pragma: no cover - the milvus extra is missing
            raise MilvusError(f"pymilvus is not installed ({exc}); pip install 'hanrag[milvus]'") from None
        try:
            return MilvusClient(
                uri=self.uri, token=self.mcfg.token, db_name=self.mcfg.db_name, timeout=self.mcfg.timeout_s
            )
        except Exception as exc:
            raise self._wrap(exc, "connect") from None

    def _wrap(self, exc: BaseException, what: str) -> MilvusError:
        return classify(exc, what, self.uri, self.collection, self._secrets)

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", self.mcfg.timeout_s)
        try:
            return fn(*args, **kwargs)
        except MilvusError:
            raise
        except Exception as exc:
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
                except Exception as exc:
                    raise self._wrap(exc, "query_iterator") from None
                if not batch:
                    break
                yield from batch
        finally:
            it.close()

    def _fetch(self, chunk_ids: Sequence[str], field_name: str) -> dict[str, Any]:
        """chunk id -> one field, for the known ids among ``chunk_ids``."""
        ids = list(dict.fromkeys(chunk_ids))
        rows = self._query_ids(self.collection, "chunk_id", ids, ["chunk_id", field_name])
        return {r["chunk_id"]: r[field_name] for r in rows}

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
                    f"Milvus at {self.shown_uri} has no hanrag collection {self.collection!r} "
                    "(push one with `hanrag milvus push INDEX`)"
                )
            self._meta = meta
        return self._meta

    def _check_complete(self) -> None:
        meta = self.meta(refresh=True)
        if meta.get("state") != "complete":
            raise MilvusIncomplete(
                f"Milvus collection {self.collection!r} at {self.shown_uri} was left incomplete by a push started "
                f"{meta.get('started_at', '?')} (state {meta.get('state')!r}); rerun `hanrag milvus push`"
            )

    def _term_rows(self, terms: Iterable[str]) -> dict[str, dict[str, Any]]:
        """term -> {"term_id", "df"} for the given terms that are known."""
        by_key = {term_key(t): t for t in terms}
        if not by_key:
            return {}
        rows = self._query_ids(self.terms_collection, "key", list(by_key), ["key", "term_id", "df"])
        return {by_key[r["key"]]: {"term_id": int(r["term_id"]), "df": int(r["df"])} for r in rows}

    def _term_stats(self, terms: Iterable[str]) -> tuple[int, dict[str, tuple[int, int]]]:
        """(N, {term: (term id, df)}) from the current statistics: the meta row and the terms' rows in
        one primary-key lookup, so a search always sees the df and N of one state of the collection."""
        keys = {term_key(t): t for t in terms}
        rows = self._query_ids(self.terms_collection, "key", [META_KEY, *keys], ["key", "term_id", "df", "info"])
        n_docs, stats = 0, {}
        for r in rows:
            if r["key"] == META_KEY:
                n_docs = int(r["info"].get("n_docs", 0))
            else:
                stats[keys[r["key"]]] = (int(r["term_id"]), int(r["df"]))
        return n_docs, stats

    def _method(self) -> str:
        return str(self.meta().get("bm25", {}).get("method", self.cfg.bm25.method))

    # -------------------------------------------------------------- writes and schema

    def _put_meta(self, meta: dict[str, Any]) -> None:
        self._call("upsert", self.client.upsert, self.terms_collection, [schema.meta_row(meta)])
        self._meta = meta

    def _upsert_rows(self, collection: str, rows: list[dict[str, Any]], batch: int) -> None:
        for start in range(0, len(rows), batch):
            self._call("upsert", self.client.upsert, collection, rows[start : start + batch])

    def _delete_ids(self, ids: Sequence[str]) -> None:
        for start in range(0, len(ids), ID_BATCH):
            expr = in_list("chunk_id", ids[start : start + ID_BATCH])
            self._call("delete", self.client.delete, self.collection, filter=expr)

    def _create(self, dim: int) -> None:
        # a push killed between the two creations left one behind: drop it, nothing in it is trusted
        self.drop()
        self._call(
            "create_collection",
            self.client.create_collection,
            self.collection,
            schema=schema.chunk_schema(dim),
            index_params=schema.chunk_index(self.client, self.mcfg),
            consistency_level=self.mcfg.consistency_level,
        )
        self._call(
            "create_collection",
            self.client.create_collection,
            self.terms_collection,
            schema=schema.terms_schema(),
            index_params=schema.terms_index(self.client),
            consistency_level=self.mcfg.consistency_level,
        )

    def drop(self) -> None:
        for name in (self.collection, self.terms_collection):
            if self._call("has_collection", self.client.has_collection, name):
                self._call("drop_collection", self.client.drop_collection, name)
        self._meta = None


def quiet_pymilvus() -> None:
    """pymilvus logs a full traceback per failed retry; hanrag reports one clear error instead."""
    for name in list(logging.root.manager.loggerDict):
        if name.startswith("pymilvus"):
            logger = logging.getLogger(name)
            if logger.level == logging.NOTSET or logger.level < logging.CRITICAL:
                logger.setLevel(logging.CRITICAL)
    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)
