"""LangChain retriever over a hanrag index (``pip install 'hanrag[langchain]'``).

    from hanrag.integrations.langchain import HanragRetriever
    retriever = HanragRetriever.from_index("index/demo", "hanrag.toml", k=5, filters={"lang": "ko"})
    docs = retriever.invoke("갑목 용신")          # list[langchain_core.documents.Document]

``page_content`` is the chunk text; ``metadata`` carries the chunk and document ids, source, title,
headings, page, tier, provenance, lang, score, a citation line and, with ``explain=True``, the
explanation. ``k``, ``mode``, ``filters`` and ``explain`` can also be given per call:
``retriever.invoke(query, k=3, filters={"tier": 0})``. Async calls run the search in a worker thread.
"""

from __future__ import annotations

from hanrag.integrations import require

require("langchain")

import asyncio  # noqa: E402 - after the one-line missing-extra check
from collections.abc import Mapping  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import TYPE_CHECKING, Any, Literal  # noqa: E402

from langchain_core.callbacks import (  # noqa: E402
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from pydantic import ConfigDict, Field, field_validator  # noqa: E402

from hanrag.integrations import filters_from, hit_metadata, open_index, search  # noqa: E402
from hanrag.records import Filters  # noqa: E402

if TYPE_CHECKING:
    from hanrag.config import Config

_CALL_KEYS = {"k", "top_k", "mode", "filters", "explain"}


class HanragRetriever(BaseRetriever):
    """Hybrid (BM25 + dense) retrieval from a hanrag index, as a LangChain retriever."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Any = Field(description="an open hanrag.Index (hanrag.open(...))")
    k: int = Field(default=10, ge=1, description="hits to return")
    mode: Literal["hybrid", "bm25", "dense"] = "hybrid"
    # Any, not a union: pydantic would coerce a dict into the Filters dataclass and drop the aliases
    filters: Any = Field(default=None, description="hanrag.Filters or {lang, tier, provenance, source, labels}")
    explain: bool = Field(default=False, description="attach each hit's score explanation to its metadata")

    @field_validator("filters")
    @classmethod
    def _check_filters(cls, value: Any) -> Filters | None:
        return filters_from(value)  # a bad filter fails at construction, not at the first query

    @classmethod
    def from_index(cls, index_dir: str | Path, config: Config | str | Path | None = None,
                   **search_kwargs: Any) -> HanragRetriever:
        """Open ``index_dir`` (with ``config``: a Config or a hanrag.toml path) and retrieve with ``search_kwargs``
        (``k`` or ``top_k``, ``mode``, ``filters``, ``explain``)."""
        if "top_k" in search_kwargs:
            search_kwargs["k"] = search_kwargs.pop("top_k")
        return cls(index=open_index(index_dir, config), **search_kwargs)

    def _search(self, query: str, kwargs: Mapping[str, Any]) -> list[Document]:
        kwargs = {key: value for key, value in kwargs.items() if key != "verbose"}  # LangChain passes it through
        unknown = set(kwargs) - _CALL_KEYS
        if unknown:
            raise TypeError(f"unknown search argument(s) {sorted(unknown)}: use {sorted(_CALL_KEYS)}")
        explain = kwargs.get("explain", self.explain)
        hits = search(
            self.index,
            query,
            top_k=kwargs.get("k", kwargs.get("top_k", self.k)),
            mode=kwargs.get("mode", self.mode),
            filters=kwargs.get("filters", self.filters),
            explain=explain,
        )
        return [Document(page_content=h.chunk.text, metadata=hit_metadata(h, explain), id=h.chunk.chunk_id)
                for h in hits]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return self._search(query, kwargs)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        # the search is CPU-bound, thread-safe in hanrag: keep the event loop free
        return await asyncio.to_thread(self._search, query, kwargs)


__all__ = ["HanragRetriever"]
