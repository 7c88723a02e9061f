"""hanrag inside RAG frameworks: LangChain, LlamaIndex, Haystack retrievers and an MCP server.

Each adapter module (``hanrag.integrations.langchain`` ...) is a thin shell over
:meth:`hanrag.api.Index.search`: no second search path. This package itself imports no
framework, so ``import hanrag`` and the core commands stay light; an adapter whose
framework is missing fails at import with one line naming the extra to install.

The helpers here are shared by the adapters: the framework-neutral filter mapping,
the metadata every adapter attaches to a hit, and a quotable citation line.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hanrag.records import Chunk, Filters, Hit, check_mode

if TYPE_CHECKING:
    from types import ModuleType

    from hanrag.api import Index
    from hanrag.config import Config

# extra name -> (the module the adapter needs, the distribution that provides it)
EXTRAS: dict[str, tuple[str, str]] = {
    "langchain": ("langchain_core", "langchain-core"),
    "llamaindex": ("llama_index.core", "llama-index-core"),
    "haystack": ("haystack", "haystack-ai"),
    "mcp": ("mcp.server.mcpserver", "mcp"),
}

LANGS = ("ko", "zh", "en")
PROVENANCES = ("human", "ai-draft")
# the keys a framework-neutral filter mapping may use (aliases on the right)
FILTER_KEYS = {"lang": "lang", "tier": "tier", "provenance": "provenance", "source": "source_glob",
               "source_glob": "source_glob", "labels": "labels", "label": "labels"}


class UnsupportedFilterError(ValueError):
    """A framework filter hanrag's :class:`~hanrag.records.Filters` cannot express; the message says which."""


def missing_extra_message(extra: str) -> str:
    module, dist = EXTRAS[extra]
    return f"hanrag.integrations.{extra} needs {dist} ({module} is not importable): pip install 'hanrag[{extra}]'"


def require(extra: str) -> ModuleType:
    """Import the framework behind ``extra`` or raise ImportError with one line naming the extra to install."""
    module = EXTRAS[extra][0]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(missing_extra_message(extra)) from None


def open_index(index_dir: str | Path, config: Config | str | Path | None = None) -> Index:
    import hanrag

    return hanrag.open(index_dir, config=config)


def check_top_k(top_k: Any) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be a positive integer, got {top_k!r}")
    return top_k


def _values(key: str, value: Any) -> tuple:
    items = (value,) if isinstance(value, str | int) else tuple(value) if isinstance(value, Iterable) else (value,)
    if key == "lang" and any(v not in LANGS for v in items):
        raise UnsupportedFilterError(f"filter lang: values must be among {', '.join(LANGS)}, got {list(items)!r}")
    if key == "provenance" and any(v not in PROVENANCES for v in items):
        raise UnsupportedFilterError(
            f"filter provenance: values must be among {', '.join(PROVENANCES)}, got {list(items)!r}")
    if key == "tier" and any(isinstance(v, bool) or not isinstance(v, int) for v in items):
        raise UnsupportedFilterError(f"filter tier: values must be integers, got {list(items)!r}")
    if key == "labels" and any(not isinstance(v, str) for v in items):
        raise UnsupportedFilterError(f"filter labels: values must be strings, got {list(items)!r}")
    return items


def filters_from(value: Filters | Mapping[str, Any] | None) -> Filters | None:
    """hanrag :class:`Filters` from a Filters, None, or a plain mapping such as
    ``{"lang": "ko", "tier": [0, 1], "provenance": "human", "source": "runbooks/*", "labels": ["k8s"]}``.

    A scalar stands for a one-value list; lang, tier and provenance match any listed value, labels must
    all be present, source is a glob over a chunk's source or path. Unknown keys are refused.
    """
    if value is None or isinstance(value, Filters):
        return None if value is None or value.is_empty() else value
    if not isinstance(value, Mapping):
        raise UnsupportedFilterError(f"filters must be a mapping or hanrag.Filters, got {type(value).__name__}")
    fields: dict[str, Any] = {}
    for key, raw in value.items():
        name = FILTER_KEYS.get(key)
        if name is None:
            raise UnsupportedFilterError(
                f"unsupported filter key {key!r}: hanrag filters on {', '.join(sorted(set(FILTER_KEYS)))}")
        if name == "source_glob":
            if not isinstance(raw, str):
                raise UnsupportedFilterError(f"filter {key}: a glob string, got {raw!r}")
            fields[name] = raw
        else:
            fields[name] = fields.get(name, ()) + _values(name, raw)
    filters = Filters(**fields)
    return None if filters.is_empty() else filters


def hit_metadata(hit: Hit, explain: bool = False) -> dict[str, Any]:
    """What every adapter attaches to a hit: ids, where it comes from, its place in the document, the score."""
    c = hit.chunk
    meta: dict[str, Any] = {
        "chunk_id": c.chunk_id,
        "doc_id": c.doc_id,
        "source": c.source,
        "path": c.path,
        "title": c.title,
        "headings": list(c.headings),
        "section": c.section,
        "page": c.page,
        "tier": c.tier,
        "provenance": c.provenance,
        "lang": c.lang,
        "labels": list(c.labels),
        "score": hit.score,
        "rank": hit.rank,
        "also_in": list(hit.also_in),
        "citation": citation(hit),
    }
    if explain and hit.explanation is not None:
        meta["explanation"] = hit.explanation.to_dict()
    return meta


def citation(hit: Hit) -> str:
    """One quotable line naming where a hit comes from: ``title › heading — source, p. N``."""
    return chunk_citation(hit.chunk)


def chunk_citation(c: Chunk) -> str:
    where = " › ".join([c.title, *[h for h in c.headings if h and h != c.title]]) if c.title else " › ".join(c.headings)
    origin = c.source or c.path
    page = f", p. {c.page}" if c.page is not None else ""
    return f"{where or c.doc_id} — {origin}{page}"


def search(index: Index, query: str, *, top_k: int = 10, mode: str = "hybrid",
           filters: Filters | Mapping[str, Any] | None = None, explain: bool = False) -> list[Hit]:
    """The one search call every adapter makes: checked arguments, then :meth:`hanrag.api.Index.search`."""
    return index.search(query, top_k=check_top_k(top_k), mode=check_mode(mode), filters=filters_from(filters),
                        explain=explain)


__all__ = [
    "EXTRAS",
    "UnsupportedFilterError",
    "chunk_citation",
    "citation",
    "filters_from",
    "hit_metadata",
    "missing_extra_message",
    "open_index",
    "require",
    "search",
]
