"""The LangChain adapter through LangChain's own entry points: the standard retriever suite, invoke/ainvoke."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("langchain_core", reason="needs the langchain extra: pip install 'hanrag[langchain]'")
pytest.importorskip("langchain_tests", reason="needs langchain-tests (the test extra)")

from langchain_core.documents import Document
from langchain_tests.integration_tests import RetrieversIntegrationTests

from hanrag.integrations.langchain import HanragRetriever
from hanrag.records import Filters

_OPEN: dict = {}


@pytest.fixture(autouse=True)
def _index(index) -> None:
    _OPEN["index"] = index


class TestHanragRetrieverStandard(RetrieversIntegrationTests):
    """LangChain's standard retriever suite (k as constructor and invoke argument, sync and async)."""

    @property
    def retriever_constructor(self) -> type[HanragRetriever]:
        return HanragRetriever

    @property
    def retriever_constructor_params(self) -> dict:
        return {"index": _OPEN["index"], "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return "롤백"


def test_documents_carry_chunk_text_and_metadata(built, index) -> None:
    retriever = HanragRetriever.from_index(built["index_dir"], built["config"], top_k=3, explain=True)
    docs = retriever.invoke("갑목 용신")
    hits = index.search("갑목 용신", top_k=3, explain=True)
    assert [d.metadata["chunk_id"] for d in docs] == [h.chunk.chunk_id for h in hits]
    first, hit = docs[0], hits[0]
    assert isinstance(first, Document)
    assert first.page_content == hit.chunk.text
    assert first.id == hit.chunk.chunk_id
    meta = first.metadata
    assert meta["doc_id"] == hit.chunk.doc_id and meta["source"] == "https://example.org/saju/gapmok"
    assert meta["title"] == "갑목 인월 용신" and meta["headings"] and meta["lang"] == "ko"
    assert meta["tier"] == 0 and meta["provenance"] == "human" and "page" in meta
    assert meta["score"] == pytest.approx(hit.score) and meta["rank"] == 1
    assert meta["explanation"]["final"] == pytest.approx(hit.score)
    assert meta["citation"].endswith("https://example.org/saju/gapmok")
    # without explain the metadata carries no explanation
    assert "explanation" not in HanragRetriever(index=index, k=1).invoke("갑목 용신")[0].metadata


def test_filters_from_search_kwargs(index) -> None:
    by_dict = HanragRetriever(index=index, k=10, filters={"lang": "en"}).invoke("rollback 롤백")
    assert by_dict and {d.metadata["lang"] for d in by_dict} == {"en"}
    by_filters = HanragRetriever(index=index, k=10, filters=Filters(lang=("en",))).invoke("rollback 롤백")
    assert [d.id for d in by_filters] == [d.id for d in by_dict]
    # per call: filters and mode override the retriever's own
    labelled = HanragRetriever(index=index, k=10).invoke("롤백", filters={"labels": ["k8s"]}, mode="bm25")
    assert labelled and all("k8s" in d.metadata["labels"] for d in labelled)
    unfiltered = HanragRetriever(index=index, k=10).invoke("롤백", mode="bm25")
    assert len(unfiltered) > len(labelled)


def test_bad_arguments_fail_clearly(index) -> None:
    with pytest.raises(ValueError, match="unsupported filter key 'colour'"):
        HanragRetriever(index=index, filters={"colour": "red"})
    with pytest.raises(TypeError, match="unknown search argument"):
        HanragRetriever(index=index).invoke("롤백", kk=3)
    with pytest.raises(ValueError, match="mode must be hybrid, bm25 or dense"):
        HanragRetriever(index=index).invoke("롤백", mode="fuzzy")


def test_async_matches_sync(index) -> None:
    retriever = HanragRetriever(index=index, k=4)
    sync = retriever.invoke("甲木")

    async def both() -> list[list[Document]]:
        return await asyncio.gather(retriever.ainvoke("甲木"), retriever.ainvoke("rollback", k=2))

    got, other = asyncio.run(both())
    assert [d.id for d in got] == [d.id for d in sync]
    assert len(other) == 2
