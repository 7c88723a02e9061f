"""The index on Milvus: the same search pipeline, a distributed engine underneath.

One Milvus collection holds every chunk (dense vector, sparse BM25 vector, text and
metadata); ``<collection>__terms`` holds hanrag's BM25 vocabulary and statistics.
Korean and Chinese tokenisation stays in hanrag (Kiwi, jieba, readings, lexicons):
Milvus only sees numbers, and its sparse inner product computes the same BM25 as the
embedded index. Fusion stays in hanrag too: ``sparse_search`` and ``dense_search``
return candidate lists the shared searcher fuses as on the embedded index, so
explanations hold.

One concern per module:

=================  ==============================================================
``errors``         the exceptions; URI credentials and tokens redacted from messages
``expressions``    string literals, id lists, filters → Milvus expressions, globs → LIKE
``schema``         the two collections, Chunk ↔ row, content hashes, size limits
``bm25``           the stored half (tf parts) and the query half (weight · idf) of BM25
``connection``     calls with a timeout and one clear error, scans, meta row, term stats
``reads``          manifest, counts, records, exact scores of given chunks
``search``         top-k with filters before the cut, glob resolution per version, ceiling
``write``          upserts/deletes keeping df, N and avgdl exact; the writing → complete marker
``push``           an embedded snapshot → the collection, diffed by content hash
``backend``        :class:`MilvusBackend`, tying them together
=================  ==============================================================
"""

from hanrag.backends.milvus.backend import MilvusBackend
from hanrag.backends.milvus.errors import MilvusError, MilvusIncomplete, MilvusUnavailable, redact_uri
from hanrag.backends.milvus.expressions import filters_to_expr, glob_is_exact, glob_to_like, lit
from hanrag.backends.milvus.push import read_snapshot_for_push, snapshot_tokens
from hanrag.backends.milvus.write import PushReport

__all__ = [
    "MilvusBackend",
    "MilvusError",
    "MilvusIncomplete",
    "MilvusUnavailable",
    "PushReport",
    "filters_to_expr",
    "glob_is_exact",
    "glob_to_like",
    "lit",
    "read_snapshot_for_push",
    "redact_uri",
    "snapshot_tokens",
]
