"""hanrag: retrieval for RAG over mixed Korean, Chinese (Hanja) and English corpora.

Public API: :func:`open` an index and ``search`` it, :func:`build` one, and the
record types.

The names are imported on first use: ``hanrag search`` answered by a running server
(:mod:`hanrag.server.client`) imports this package and must not pay for the config module or NumPy.
"""

from __future__ import annotations

import importlib

from hanrag.version import __version__  # noqa: F401 - the public hanrag.__version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a few ms of every relayed search)

_EXPORTS = {
    "Index": "api", "build": "api", "open": "api",
    "Config": "config", "load_config": "config",
    "Chunk": "records", "Document": "records", "Explanation": "records", "Filters": "records",
    "Finding": "records", "Hit": "records", "QueryPlan": "records",
}

__all__ = sorted([*_EXPORTS, "__version__"])

if TYPE_CHECKING:
    from hanrag.api import Index, build, open  # noqa: F401 - hanrag.open is the public entry point
    from hanrag.config import Config, load_config  # noqa: F401
    from hanrag.records import Chunk, Document, Explanation, Filters, Finding, Hit, QueryPlan  # noqa: F401


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hanrag' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"hanrag.{module}"), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
