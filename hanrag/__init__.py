"""hanrag: retrieval for RAG over mixed Korean, Chinese (Hanja) and English corpora.

Public API: :func:`open` an index and ``search`` it, :func:`build` one, and the
record types.
"""

from hanrag.api import Index, build, open  # noqa: A004 - hanrag.open is the public entry point
from hanrag.config import Config, load_config
from hanrag.records import Chunk, Document, Explanation, Filters, Finding, Hit, QueryPlan

__version__ = "0.1.0"

__all__ = [
    "Chunk",
    "Config",
    "Document",
    "Explanation",
    "Filters",
    "Finding",
    "Hit",
    "Index",
    "QueryPlan",
    "__version__",
    "build",
    "load_config",
    "open",
]
