"""hanrag as a LlamaIndex retriever (pip install 'hanrag[llamaindex]'): nodes with scores, metadata filters."""

from __future__ import annotations

from _sample import CONFIG, sample_index
from llama_index.core.schema import MetadataMode
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from hanrag.integrations.llamaindex import HanragRetriever


def main() -> None:
    index_dir = sample_index(__doc__)
    curated = MetadataFilters(filters=[MetadataFilter(key="tier", value=[0, 1], operator=FilterOperator.IN)])
    retriever = HanragRetriever.from_index(index_dir, CONFIG, top_k=3, filters=curated)
    nodes = retriever.retrieve("甲木 用神")
    for n in nodes:
        print(f"{n.score:.3f}  tier {n.node.metadata['tier']}  {n.node.metadata['citation']}")
    # what an LLM is shown for the best node: its citation line, then the text
    print(nodes[0].node.get_content(metadata_mode=MetadataMode.LLM))


if __name__ == "__main__":
    main()
