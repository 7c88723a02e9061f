"""hanrag as a LangChain retriever (pip install 'hanrag[langchain]'): documents, filters, a small chain."""

from __future__ import annotations

from _sample import CONFIG, sample_index
from langchain_core.documents import Document
from langchain_core.runnables import RunnableLambda

from hanrag.integrations.langchain import HanragRetriever


def context_block(docs: list[Document]) -> str:
    """What a prompt would receive: numbered passages, each with the line to cite."""
    return "\n\n".join(f"[{i}] {d.page_content}\n    ({d.metadata['citation']})" for i, d in enumerate(docs, 1))


def main() -> None:
    index_dir = sample_index(__doc__)
    retriever = HanragRetriever.from_index(index_dir, CONFIG, k=3, filters={"lang": "ko"})
    for doc in retriever.invoke("갑목 용신"):
        print(f"{doc.metadata['score']:.3f}  {doc.metadata['citation']}")
    # per-call arguments override the retriever's: English and Chinese hits for a Korean query
    for doc in retriever.invoke("롤백 절차", k=2, filters={"lang": ["en", "zh"]}):
        print(f"{doc.metadata['lang']}  {doc.metadata['citation']}")
    chain = retriever | RunnableLambda(context_block)  # an LLM prompt would come next
    print(chain.invoke("도화살이란?"))


if __name__ == "__main__":
    main()
