"""hanrag in a Haystack pipeline (pip install 'hanrag[haystack]'): retriever -> prompt, saved and loaded as YAML."""

from __future__ import annotations

from _sample import CONFIG, sample_index
from haystack import Pipeline
from haystack.components.builders import PromptBuilder

from hanrag.integrations.haystack import HanragRetriever

TEMPLATE = """Answer from these passages and cite them by number.
{% for d in documents %}[{{ loop.index }}] {{ d.content }}
    ({{ d.meta.citation }})
{% endfor %}Question: {{ query }}"""


def main() -> None:
    index_dir = sample_index(__doc__)
    pipe = Pipeline()
    pipe.add_component("retriever", HanragRetriever(str(index_dir), config=str(CONFIG), top_k=3))
    pipe.add_component("prompt", PromptBuilder(template=TEMPLATE, required_variables=["documents", "query"]))
    pipe.connect("retriever.documents", "prompt.documents")
    yaml_text = pipe.dumps()  # the pipeline as YAML: the retriever is saved as its index folder and settings
    loaded = Pipeline.loads(yaml_text, allowed_modules=["hanrag.integrations.haystack"])
    query = "kubernetes rollback"
    out = loaded.run({"retriever": {"query": query, "filters": {"field": "meta.lang", "operator": "in",
                                                                "value": ["en", "ko"]}},
                      "prompt": {"query": query}})
    print(out["prompt"]["prompt"])


if __name__ == "__main__":
    main()
