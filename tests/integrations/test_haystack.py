"""The Haystack adapter in a real ``Pipeline``: run, YAML dumps/loads round trip, filters."""

from __future__ import annotations

import pytest

pytest.importorskip("haystack", reason="needs the haystack extra: pip install 'hanrag[haystack]'")

from haystack import Document, Pipeline
from haystack.components.builders import PromptBuilder

from hanrag.integrations import UnsupportedFilterError
from hanrag.integrations.haystack import HanragRetriever, filters_from_haystack
from hanrag.records import Filters

TEMPLATE = "{% for d in documents %}[{{ loop.index }}] {{ d.meta.citation }}\n{% endfor %}Q: {{ query }}"


def _pipeline(built: dict, **kwargs) -> Pipeline:
    pipe = Pipeline()
    pipe.add_component("retriever", HanragRetriever(str(built["index_dir"]), config=str(built["config_path"]),
                                                    **kwargs))
    pipe.add_component("prompt", PromptBuilder(template=TEMPLATE, required_variables=["documents", "query"]))
    pipe.connect("retriever.documents", "prompt.documents")
    return pipe


def _run(pipe: Pipeline, query: str, **retriever_inputs) -> tuple[list[Document], str]:
    out = pipe.run({"retriever": {"query": query, **retriever_inputs}, "prompt": {"query": query}},
                   include_outputs_from={"retriever"})
    return out["retriever"]["documents"], out["prompt"]["prompt"]


def test_pipeline_run_returns_documents(built, index) -> None:
    docs, prompt = _run(_pipeline(built, top_k=3, explain=True), "갑목 용신")
    hits = index.search("갑목 용신", top_k=3, explain=True)
    assert all(isinstance(d, Document) for d in docs)
    assert [d.id for d in docs] == [h.chunk.chunk_id for h in hits]
    assert docs[0].content == hits[0].chunk.text and docs[0].score == pytest.approx(hits[0].score)
    assert docs[0].meta["source"] == "https://example.org/saju/gapmok" and docs[0].meta["lang"] == "ko"
    assert docs[0].meta["explanation"]["final"] == pytest.approx(hits[0].score)
    assert prompt.startswith("[1] 갑목 인월 용신") and prompt.endswith("Q: 갑목 용신")
    # run-time top_k and filters (Haystack syntax) replace the component's own
    docs, _ = _run(_pipeline(built, top_k=3), "롤백 rollback", top_k=5,
                   filters={"field": "meta.lang", "operator": "==", "value": "en"})
    assert 0 < len(docs) <= 5 and {d.meta["lang"] for d in docs} == {"en"}


def test_yaml_round_trip(built) -> None:
    filters = {"operator": "AND", "conditions": [
        {"field": "meta.lang", "operator": "in", "value": ["ko", "zh"]},
        {"field": "meta.labels", "operator": "==", "value": "saju"},
    ]}
    pipe = _pipeline(built, top_k=4, mode="hybrid", filters=filters)
    yaml_text = pipe.dumps()
    assert "hanrag.integrations.haystack.HanragRetriever" in yaml_text and str(built["index_dir"]) in yaml_text
    # Haystack 3 refuses classes from modules not on its allowlist: trusting hanrag's is the caller's call
    loaded = Pipeline.loads(yaml_text, allowed_modules=["hanrag.integrations.haystack"])
    component = loaded.get_component("retriever")
    assert isinstance(component, HanragRetriever)
    assert component.to_dict() == pipe.get_component("retriever").to_dict()
    before, _ = _run(pipe, "甲木")
    after, _ = _run(loaded, "甲木")
    assert [d.id for d in after] == [d.id for d in before]
    assert after and all(d.meta["lang"] in ("ko", "zh") and "saju" in d.meta["labels"] for d in after)


def test_filter_mapping() -> None:
    assert filters_from_haystack({"operator": "AND", "conditions": [
        {"field": "meta.tier", "operator": "in", "value": [0, 1]},
        {"field": "meta.source", "operator": "==", "value": "*k8s*"},
    ]}) == Filters(tier=(0, 1), source_glob="*k8s*")
    assert filters_from_haystack({"lang": "ko"}) == Filters(lang=("ko",))  # hanrag's plain mapping
    for bad, message in [
        ({"operator": "OR", "conditions": [{"field": "meta.lang", "operator": "==", "value": "ko"}]}, "'OR'"),
        ({"field": "meta.tier", "operator": ">", "value": 0}, "'meta.tier' >"),
        ({"field": "meta.author", "operator": "==", "value": "kim"}, "'meta.author'"),
        ({"operator": "AND", "conditions": [{"field": "meta.lang", "operator": "==", "value": "ko"},
                                             {"field": "meta.lang", "operator": "==", "value": "en"}]}, "given twice"),
    ]:
        with pytest.raises(UnsupportedFilterError, match=message):
            filters_from_haystack(bad)


def test_from_index_opens_now(built) -> None:
    retriever = HanragRetriever.from_index(built["index_dir"], built["config_path"], top_k=2, mode="bm25")
    assert retriever._index is not None
    assert len(retriever.run("롤백")["documents"]) == 2
    with pytest.raises(ValueError, match="mode must be hybrid, bm25 or dense"):
        HanragRetriever(str(built["index_dir"]), mode="fuzzy")
