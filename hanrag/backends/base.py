"""The interface between the search pipeline and the place an index lives.

The search pipeline (plan, expansion, fusion, rerank, diversity, explain) is
written against :class:`IndexBackend` only, so it runs unchanged on the embedded
snapshot store and on Milvus. Ids are ``chunk_id`` strings throughout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from hanrag.records import Chunk, Filters


class IndexBackend(Protocol):
    name: str  # "embedded" | "milvus"

    def manifest(self) -> dict[str, Any]:
        """The index manifest: embedder identity, tokenizer settings, counts, build time."""
        ...

    def count(self) -> int: ...

    def get_chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Chunks in the order asked; unknown ids raise KeyError."""
        ...

    def doc_chunks(self, doc_id: str) -> list[Chunk]:
        """All chunks of one document in text order."""
        ...

    def sparse_search(
        self, query: Mapping[str, float], k: int, filters: Filters | None = None
    ) -> list[tuple[str, float]]:
        """BM25 top-k for weighted query tokens (token -> weight), best first, filters applied first."""
        ...

    def sparse_scores(self, query: Mapping[str, float], chunk_ids: Sequence[str]) -> np.ndarray:
        """Exact BM25 scores of the given chunks (0 where no token matches)."""
        ...

    def sparse_ceiling(self, query: Mapping[str, float]) -> float:
        """The highest BM25 score any chunk could reach for the weighted query tokens (Σ weight · idf ·
        the tf part's limit; tokens the index lacks count with df = 0), from the index's current df / N.
        A score divided by it is lexical evidence on a scale that does not grow with the corpus."""
        ...

    def dense_search(self, qvec: np.ndarray, k: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        """Inner-product top-k for one L2-normalised query vector, best first, filters applied first."""
        ...

    def dense_scan_shared(self) -> bool:
        """Whether :meth:`dense_search_each` costs about one search however many filters it is given (it scores
        every row once for all of them); when not, separate searches may as well run side by side."""
        ...

    def dense_search_each(self, qvec: np.ndarray, k: int, filters: Sequence[Filters | None]
                          ) -> list[list[tuple[str, float]]]:
        """:meth:`dense_search` of one query vector under each of ``filters``, one list per filter, each exactly
        what ``dense_search`` gives; a backend that scans every row scores them once for all."""
        ...

    def dense_scores(self, qvec: np.ndarray, chunk_ids: Sequence[str]) -> np.ndarray:
        """Exact inner products of the given chunks with the query vector."""
        ...

    def duplicates_of(self, chunk_ids: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """For kept chunks: the sources of near-duplicate chunks folded into them ("also in")."""
        ...
