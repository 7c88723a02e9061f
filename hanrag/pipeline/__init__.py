"""The build pipeline, above the storage it writes (:mod:`hanrag.index`; data flows one way, never back):

- :mod:`~hanrag.pipeline.prepare`: sources → linted documents → chunks, with the findings
- :mod:`~hanrag.pipeline.vectors`: every chunk's vector (the index's cache, the machine cache, the model)
- :mod:`~hanrag.pipeline.assemble`: tokens → near-duplicate folding → BM25, glossary, sound keys, ANN →
  the published snapshot (:func:`build_from_chunks`)
- :mod:`~hanrag.pipeline.report`: :class:`BuildReport`, :class:`BuildTimer` (the stage timings), the changes
  against the previous snapshot, the progress bars
- :mod:`~hanrag.pipeline.corpus` (:func:`build_index`, a corpus folder) and :mod:`~hanrag.pipeline.documents`
  (:func:`build_from_documents`, a connector's documents): the entry points
"""

from hanrag.pipeline.assemble import build_from_chunks, duplicate_findings, find_duplicates
from hanrag.pipeline.corpus import build_index
from hanrag.pipeline.documents import build_from_documents
from hanrag.pipeline.prepare import EmptyCorpusError
from hanrag.pipeline.report import BuildReport, BuildTimer, FileChanges

__all__ = ["BuildReport", "BuildTimer", "EmptyCorpusError", "FileChanges", "build_from_chunks",
           "build_from_documents", "build_index", "duplicate_findings", "find_duplicates"]
