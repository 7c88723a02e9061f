"""Haystack 2.x component over a hanrag index (``pip install 'hanrag[haystack]'``).

    from haystack import Pipeline
    from hanrag.integrations.haystack import HanragRetriever
    pipe = Pipeline()
    pipe.add_component("retriever", HanragRetriever("index/demo", config="hanrag.toml", top_k=5))
    docs = pipe.run({"retriever": {"query": "갑목 용신"}})["retriever"]["documents"]

``run(query, top_k, filters)`` returns ``{"documents": [haystack.Document]}``: ``id`` the chunk id,
``content`` the chunk text, ``meta`` the fields of :func:`hanrag.integrations.hit_metadata`, ``score``
the hanrag score. The component serialises to its init parameters (index folder, hanrag.toml path,
top_k, mode, filters, explain), so it lives in a YAML pipeline (``Pipeline.dumps`` / ``loads``); the
index is opened in ``warm_up`` (or at the first run), not at construction. Haystack 3 loads classes
only from trusted modules: ``Pipeline.loads(text, allowed_modules=["hanrag.integrations.haystack"])``
(this module does not add itself to the allowlist; trusting a YAML file is the caller's decision).

Filters: Haystack's syntax (``{"field": "meta.lang", "operator": "==", "value": "ko"}``, combined with
``{"operator": "AND", "conditions": [...]}``) or hanrag's plain mapping (``{"lang": "ko", "tier": [0]}``).
Supported: ``meta.lang`` / ``meta.tier`` / ``meta.provenance`` with ``==`` or ``in``, ``meta.source``
with ``==`` (a glob over source or path), ``meta.labels`` with ``==`` (the chunk carries that label),
under AND. Anything else raises :class:`hanrag.integrations.UnsupportedFilterError`. Filters given to
``run`` replace the component's own (Haystack's default filter policy).
"""

from __future__ import annotations

from hanrag.integrations import require

require("haystack")

import threading  # noqa: E402 - after the one-line missing-extra check
from collections.abc import Mapping  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

from haystack import Document, component, default_from_dict, default_to_dict  # noqa: E402

from hanrag.integrations import (  # noqa: E402
    UnsupportedFilterError,
    check_mode,
    check_top_k,
    filters_from,
    hit_metadata,
    open_index,
    search,
)
from hanrag.records import Filters  # noqa: E402

if TYPE_CHECKING:
    from hanrag.api import Index

_FIELDS = {"lang", "tier", "provenance", "source", "labels"}
SUPPORTED = ("meta.lang / meta.tier / meta.provenance with == or in, meta.source with == (a glob), "
             "meta.labels with ==, combined with AND")


def _conditions(filters: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    if "conditions" in filters:
        if filters.get("operator") != "AND":
            raise UnsupportedFilterError(
                f"unsupported filter operator {filters.get('operator')!r} over conditions: hanrag supports {SUPPORTED}")
        out: list[Mapping[str, Any]] = []
        for cond in filters["conditions"]:
            out.extend(_conditions(cond))
        return out
    return [filters]


def filters_from_haystack(filters: Mapping[str, Any] | Filters | None) -> Filters | None:
    """hanrag Filters from Haystack filter syntax (or hanrag's plain mapping); what cannot be applied before
    top-K raises :class:`UnsupportedFilterError` naming it."""
    if filters is None or isinstance(filters, Filters) or "operator" not in filters:
        return filters_from(filters)  # None, Filters or hanrag's plain mapping
    fields: dict[str, Any] = {}
    for cond in _conditions(filters):
        field, op, value = str(cond.get("field", "")), cond.get("operator"), cond.get("value")
        name = field.removeprefix("meta.")
        if name in ("lang", "tier", "provenance") and op in ("==", "in") and name not in fields:
            fields[name] = value
        elif name == "source" and op == "==" and "source" not in fields:
            fields["source"] = value
        elif name == "labels" and op == "==":
            fields["labels"] = [*fields.get("labels", []), value]
        else:
            repeated = " (given twice)" if name in fields and name != "labels" else ""
            raise UnsupportedFilterError(f"unsupported filter {field!r} {op} {value!r}{repeated}: "
                                         f"hanrag supports {SUPPORTED}")
    return filters_from(fields)


@component
class HanragRetriever:
    """Hybrid (BM25 + dense) retrieval from a hanrag index, as a Haystack component."""

    def __init__(
        self,
        index_dir: str,
        config: str | None = None,
        top_k: int = 10,
        mode: str = "hybrid",
        filters: dict[str, Any] | None = None,
        explain: bool = False,
    ) -> None:
        """``index_dir``: the index folder; ``config``: its hanrag.toml (None: defaults). Both are kept as
        paths so the component serialises; the index opens in :meth:`warm_up`."""
        self.index_dir = str(index_dir)
        self.config = None if config is None else str(config)
        self.top_k = check_top_k(top_k)
        self.mode = check_mode(mode)
        self.filters = filters
        self._filters = filters_from_haystack(filters)  # a bad filter fails here, not at the first query
        self.explain = explain
        self._index: Index | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_index(cls, index_dir: str | Path, config: str | Path | None = None,
                   **search_kwargs: Any) -> HanragRetriever:
        """Open ``index_dir`` now (with ``config``, a hanrag.toml path) and retrieve with ``search_kwargs``
        (``top_k``, ``mode``, ``filters``, ``explain``)."""
        retriever = cls(str(index_dir), None if config is None else str(config), **search_kwargs)
        retriever.warm_up()
        return retriever

    def warm_up(self) -> None:
        """Open the index (model, analyzer, snapshot) once; Haystack calls this before a pipeline runs."""
        with self._lock:
            if self._index is None:
                self._index = open_index(self.index_dir, self.config)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, index_dir=self.index_dir, config=self.config, top_k=self.top_k, mode=self.mode,
                               filters=self.filters, explain=self.explain)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HanragRetriever:
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, query: str, top_k: int | None = None, filters: dict[str, Any] | None = None) -> dict[str, Any]:
        """The top ``top_k`` (default: the component's) chunks for ``query`` as Documents, best first;
        ``filters`` replace the component's own."""
        self.warm_up()
        hits = search(
            self._index,
            query,
            top_k=self.top_k if top_k is None else top_k,
            mode=self.mode,
            filters=self._filters if filters is None else filters_from_haystack(filters),
            explain=self.explain,
        )
        docs = [Document(id=h.chunk.chunk_id, content=h.chunk.text, meta=hit_metadata(h, self.explain), score=h.score)
                for h in hits]
        return {"documents": docs}


__all__ = ["HanragRetriever", "filters_from_haystack"]
