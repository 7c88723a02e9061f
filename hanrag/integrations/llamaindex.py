"""LlamaIndex retriever over a hanrag index (``pip install 'hanrag[llamaindex]'``).

    from hanrag.integrations.llamaindex import HanragRetriever
    retriever = HanragRetriever.from_index("index/demo", "hanrag.toml", top_k=5)
    nodes = retriever.retrieve("갑목 용신")          # list[NodeWithScore]

Each hit is a ``NodeWithScore`` whose ``TextNode`` has the chunk id as ``id_``, the chunk text, the
metadata of :func:`hanrag.integrations.hit_metadata` and its document as SOURCE relationship; an LLM
sees only the ``citation`` metadata line next to the text (the rest is excluded from LLM and embed
views). ``filters`` takes LlamaIndex ``MetadataFilters`` (mapped below), hanrag ``Filters`` or a plain
mapping.

LlamaIndex and offline use: llama-index-core ships the NLTK stopwords/punkt data and the tiktoken
files it uses (``llama_index/core/_static``) and only downloads when those are missing; this adapter
touches neither (no text splitting, no token counting), so it runs without network access.
"""

from __future__ import annotations

from hanrag.integrations import require

require("llamaindex")

import asyncio  # noqa: E402 - after the one-line missing-extra check
from collections.abc import Mapping  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Any  # noqa: E402

from llama_index.core.callbacks import CallbackManager  # noqa: E402
from llama_index.core.retrievers import BaseRetriever  # noqa: E402
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode  # noqa: E402
from llama_index.core.vector_stores.types import (  # noqa: E402
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from hanrag.integrations import (  # noqa: E402
    UnsupportedFilterError,
    check_mode,
    check_top_k,
    filters_from,
    hit_metadata,
    open_index,
    search,
)
from hanrag.records import Filters, Hit  # noqa: E402

if TYPE_CHECKING:
    from hanrag.api import Index
    from hanrag.config import Config

# LlamaIndex key -> hanrag field; which operators each accepts
_SET_KEYS = {"lang": "lang", "tier": "tier", "provenance": "provenance"}
_GLOB_KEYS = {"source": "source_glob", "source_glob": "source_glob"}
_LABEL_KEYS = {"labels": "labels", "label": "labels"}
SUPPORTED = (
    "lang / tier / provenance with == or in; source (a glob over source or path) with ==; "
    "labels with contains or all; combined with AND"
)


def _leaves(filters: MetadataFilters) -> list[MetadataFilter]:
    """The filters of an AND tree; anything else (OR over several, NOT) cannot become one hanrag Filters."""
    condition = filters.condition or FilterCondition.AND
    if condition != FilterCondition.AND and len(filters.filters) > 1:
        raise UnsupportedFilterError(f"unsupported filter condition {condition.value!r}: hanrag supports {SUPPORTED}")
    if condition == FilterCondition.NOT:
        raise UnsupportedFilterError(f"unsupported filter condition 'not': hanrag supports {SUPPORTED}")
    leaves: list[MetadataFilter] = []
    for item in filters.filters:
        leaves.extend(_leaves(item) if isinstance(item, MetadataFilters) else [item])
    return leaves


def _as_tuple(value: Any) -> tuple:
    return tuple(value) if isinstance(value, list | tuple) else (value,)


def filters_from_llamaindex(filters: MetadataFilters | Filters | Mapping[str, Any] | None) -> Filters | None:
    """hanrag Filters from LlamaIndex ``MetadataFilters``; an operator or key hanrag cannot apply before
    top-K raises :class:`UnsupportedFilterError` naming it (never silently ignored)."""
    if not isinstance(filters, MetadataFilters):
        return filters_from(filters)
    fields: dict[str, Any] = {}
    for leaf in _leaves(filters):
        op = FilterOperator(leaf.operator)
        if leaf.key in _SET_KEYS and op in (FilterOperator.EQ, FilterOperator.IN):
            name = _SET_KEYS[leaf.key]
            if name in fields:
                raise UnsupportedFilterError(f"filter {leaf.key!r} given twice: use one 'in' filter with every value")
            fields[name] = _as_tuple(leaf.value)
        elif leaf.key in _GLOB_KEYS and op == FilterOperator.EQ and isinstance(leaf.value, str):
            if "source" in fields:
                raise UnsupportedFilterError("filter 'source' given twice: hanrag takes one source glob")
            fields["source"] = leaf.value
        elif leaf.key in _LABEL_KEYS and op in (FilterOperator.CONTAINS, FilterOperator.ALL):
            fields["labels"] = tuple(fields.get("labels", ())) + _as_tuple(leaf.value)
        else:
            raise UnsupportedFilterError(
                f"unsupported filter {leaf.key!r} {op.value} {leaf.value!r}: hanrag supports {SUPPORTED}")
    return filters_from(fields)  # checks the values (known languages, integer tiers ...)


class HanragRetriever(BaseRetriever):
    """Hybrid (BM25 + dense) retrieval from a hanrag index, as a LlamaIndex retriever."""

    def __init__(
        self,
        index: Index,
        top_k: int = 10,
        mode: str = "hybrid",
        filters: MetadataFilters | Filters | Mapping[str, Any] | None = None,
        explain: bool = False,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
    ) -> None:
        self.index = index
        self.top_k = check_top_k(top_k)
        self.mode = check_mode(mode)
        self.filters = filters_from_llamaindex(filters)  # a bad filter fails here, not at the first query
        self.explain = explain
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    @classmethod
    def from_index(cls, index_dir: str | Path, config: Config | str | Path | None = None,
                   **search_kwargs: Any) -> HanragRetriever:
        """Open ``index_dir`` (with ``config``: a Config or a hanrag.toml path) and retrieve with ``search_kwargs``
        (``top_k``, ``mode``, ``filters``, ``explain``)."""
        return cls(open_index(index_dir, config), **search_kwargs)

    def _node(self, hit: Hit) -> NodeWithScore:
        meta = hit_metadata(hit, self.explain)
        node = TextNode(
            id_=hit.chunk.chunk_id,
            text=hit.chunk.text,
            metadata=meta,
            # the LLM reads the text and where it comes from; ids, scores and explanations are for code
            excluded_llm_metadata_keys=[key for key in meta if key != "citation"],
            excluded_embed_metadata_keys=list(meta),
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=hit.chunk.doc_id)},
        )
        return NodeWithScore(node=node, score=hit.score)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        hits = search(self.index, query_bundle.query_str, top_k=self.top_k, mode=self.mode, filters=self.filters,
                      explain=self.explain)
        return [self._node(h) for h in hits]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # the search is CPU-bound and thread-safe in hanrag: keep the event loop free
        return await asyncio.to_thread(self._retrieve, query_bundle)


__all__ = ["HanragRetriever", "filters_from_llamaindex"]
