"""The LlamaIndex adapter through LlamaIndex's own entry point, ``retriever.retrieve(...)``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("llama_index.core", reason="needs the llamaindex extra: pip install 'hanrag[llamaindex]'")

from llama_index.core.schema import MetadataMode, NodeRelationship, NodeWithScore
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from hanrag.integrations import UnsupportedFilterError
from hanrag.integrations.llamaindex import HanragRetriever, filters_from_llamaindex
from hanrag.records import Filters


def test_retrieve_returns_nodes_with_scores(built, index) -> None:
    retriever = HanragRetriever.from_index(built["index_dir"], built["config"], top_k=3, explain=True)
    nodes = retriever.retrieve("갑목 용신")
    hits = index.search("갑목 용신", top_k=3, explain=True)
    assert all(isinstance(n, NodeWithScore) for n in nodes)
    assert [n.node.node_id for n in nodes] == [h.chunk.chunk_id for h in hits]
    assert [n.score for n in nodes] == pytest.approx([h.score for h in hits])
    node = nodes[0].node
    assert node.get_content() == hits[0].chunk.text
    assert node.metadata["doc_id"] == hits[0].chunk.doc_id and node.metadata["lang"] == "ko"
    assert node.metadata["explanation"]["final"] == pytest.approx(hits[0].score)
    assert node.relationships[NodeRelationship.SOURCE].node_id == hits[0].chunk.doc_id
    # what an LLM is shown: the text and the citation line, not ids or explanations
    llm_view = node.get_content(metadata_mode=MetadataMode.LLM)
    assert "https://example.org/saju/gapmok" in llm_view and "explanation" not in llm_view


def test_metadata_filters_are_applied_before_top_k(index) -> None:
    only_en = MetadataFilters(filters=[MetadataFilter(key="lang", value="en", operator=FilterOperator.EQ)])
    nodes = HanragRetriever(index, top_k=10, filters=only_en).retrieve("롤백 rollback")
    assert nodes and {n.node.metadata["lang"] for n in nodes} == {"en"}
    nested = MetadataFilters(filters=[
        MetadataFilter(key="lang", value=["ko", "zh"], operator=FilterOperator.IN),
        MetadataFilters(filters=[MetadataFilter(key="labels", value="saju", operator=FilterOperator.CONTAINS)]),
        MetadataFilter(key="tier", value=1, operator=FilterOperator.EQ),
    ], condition=FilterCondition.AND)
    assert filters_from_llamaindex(nested) == Filters(lang=("ko", "zh"), tier=(1,), labels=("saju",))
    nodes = HanragRetriever(index, top_k=10, filters=nested).retrieve("甲木")
    assert nodes and all(n.node.metadata["tier"] == 1 and "saju" in n.node.metadata["labels"] for n in nodes)
    glob = MetadataFilters(filters=[MetadataFilter(key="source", value="*k8s*")])
    assert {n.node.metadata["doc_id"] for n in HanragRetriever(index, filters=glob).retrieve("롤백")} == {
        HanragRetriever(index, top_k=1).retrieve("kubectl rollout undo 롤백")[0].node.metadata["doc_id"]}


@pytest.mark.parametrize("filters, message", [
    (MetadataFilters(filters=[MetadataFilter(key="tier", value=0, operator=FilterOperator.GT)]), "'tier' >"),
    (MetadataFilters(filters=[MetadataFilter(key="author", value="kim")]), "'author'"),
    (MetadataFilters(filters=[MetadataFilter(key="lang", value="ko"), MetadataFilter(key="lang", value="en")],
                     condition=FilterCondition.OR), "condition 'or'"),
    (MetadataFilters(filters=[MetadataFilter(key="lang", value="ko")], condition=FilterCondition.NOT),
     "condition 'not'"),
    (MetadataFilters(filters=[MetadataFilter(key="lang", value="fr")]), "lang"),
])
def test_unsupported_filters_fail_clearly(index, filters, message) -> None:
    with pytest.raises(UnsupportedFilterError, match=message):
        HanragRetriever(index, filters=filters)


def test_aretrieve_matches_retrieve(index) -> None:
    retriever = HanragRetriever(index, top_k=4, mode="bm25")
    sync = retriever.retrieve("롤백")
    got = asyncio.run(retriever.aretrieve("롤백"))
    assert [n.node.node_id for n in got] == [n.node.node_id for n in sync]


def test_retrieves_with_no_network(built) -> None:
    """llama-index-core downloads NLTK / tiktoken data when its bundled copies are missing: the adapter must
    never need them. Run in a fresh interpreter where every outgoing connection fails."""
    code = textwrap.dedent(f"""
        import json, socket, sys
        def refuse(*args, **kwargs):
            raise OSError("network access attempted")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from hanrag.integrations.llamaindex import HanragRetriever
        nodes = HanragRetriever.from_index({str(built["index_dir"])!r}, {str(built["config_path"])!r},
                                           top_k=2).retrieve("갑목 용신")
        print(json.dumps([n.node.node_id for n in nodes]))
    """)
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("NLTK_DATA", "TIKTOKEN_CACHE_DIR")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "network access attempted" not in out.stderr
    assert len(json.loads(out.stdout.strip().splitlines()[-1])) == 2
