"""BM25 speed on a ~10k-chunk mixed corpus (every ../shared/eval corpus merged: 9,335 chunks):
tokenisation throughput per language (chunks/s, not cached),
index build time, save/load time, and query latency p50/p95 (analyze_query + top-10) over the sets' queries.

Usage: nice -n 10 python benchmarks/bm25_speed.py [--limit N]   (N docs per set, default all)
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from hanrag.config import Config
from hanrag.eval import find_eval_root, load_eval_set
from hanrag.index.sparse import SparseIndex
from hanrag.language import detect_lang
from hanrag.text import get_analyzer
from hanrag.text.query import analyze_query

SETS = (
    "korquad1_ko_chunks",
    "cmrc2018_zh_chunks",
    "xquad_en2zh",
    "cranfield_en",
    "xquad_en",
    "korquad1_ko",
    "cmrc2018_zh",
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--queries", type=int, default=300, help="queries per set for latency")
    args = ap.parse_args()
    cfg = Config()
    t = time.perf_counter()
    analyzer = get_analyzer(cfg)
    analyzer.tokenize("갑목 甲木 warm-up", "ko")  # load Kiwi and jieba outside the timings
    print(f"analyzer load: {time.perf_counter() - t:.2f}s")
    texts: list[str] = []
    queries = []
    for name in SETS:
        es = load_eval_set(find_eval_root() / name)
        docs = es.docs[: args.limit] if args.limit else es.docs
        texts.extend(d.text for d in docs)
        queries.extend(es.queries[: args.queries])
    langs = [detect_lang(x) for x in texts]
    print(f"corpus: {len(texts)} chunks, {sum(map(len, texts)) / 1e6:.1f} M chars")
    tokens: list[list[str] | None] = [None] * len(texts)
    for lang in ("ko", "zh", "en"):
        idx = [i for i, g in enumerate(langs) if g == lang]
        t = time.perf_counter()
        for s in range(0, len(idx), 256):
            part = idx[s : s + 256]
            for i, toks in zip(part, analyzer.tokenize_many([texts[i] for i in part], [lang] * len(part)), strict=True):
                tokens[i] = toks
        dt = time.perf_counter() - t
        print(f"tokenise {lang}: {len(idx)} chunks in {dt:.1f}s = {len(idx) / max(dt, 1e-9):.0f} chunks/s")
    t = time.perf_counter()
    index = SparseIndex.build(tokens, cfg.bm25)  # type: ignore[arg-type]
    print(f"index build: {time.perf_counter() - t:.2f}s ({len(index.vocab)} tokens, {len(index.data)} postings)")
    with tempfile.TemporaryDirectory() as d:
        t = time.perf_counter()
        index.save(Path(d))
        ts = time.perf_counter() - t
        t = time.perf_counter()
        index = SparseIndex.load(Path(d), mmap=True)
        print(f"save: {ts:.2f}s  load (mmap): {time.perf_counter() - t:.3f}s")
        lat_an, lat_all = [], []
        for q in queries:
            t0 = time.perf_counter()
            qt = analyze_query(q.text, q.lang, analyzer, analyzer.lexicon, cfg.lexicon.expansion_weight)
            t1 = time.perf_counter()
            index.top_k(qt.weights, 10)
            t2 = time.perf_counter()
            lat_an.append(t1 - t0)
            lat_all.append(t2 - t0)
    a, b = np.array(lat_an) * 1000, np.array(lat_all) * 1000
    print(f"query analysis: p50 {np.percentile(a, 50):.2f} ms  p95 {np.percentile(a, 95):.2f} ms")
    print(
        f"query total (analysis + top-10 over {index.n_docs} chunks, {len(queries)} queries): "
        f"p50 {np.percentile(b, 50):.2f} ms  p95 {np.percentile(b, 95):.2f} ms"
    )


if __name__ == "__main__":
    main()
