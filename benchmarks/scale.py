"""A million chunks on one machine: build, open and search a synthetic index of N chunks.

    python benchmarks/scale.py --chunks 100000          # writes benchmarks/results/scale-100000.json
    python benchmarks/scale.py --chunks 10000 --queries 100

Texts are sentences of the shared eval corpora (../shared/eval: Korean, Chinese, English) sampled
and recombined into N chunks of 2-5 sentences of one language. Vectors come from a fixed random
projection of each text's character uni- and bigram counts (:class:`ProjectionEmbedder`): no model
runs, yet texts that share wording get close vectors, as with a real encoder. Like the default config's, they
are two encoders blended (384 + 512 numbers, :func:`projection_embedder`; ``--cross-lingual-weight 0``: 384,
as runs before the second encoder). The index is built by
the product's path (:func:`hanrag.pipeline.build_from_chunks`: tokenise, embedding cache, dedup,
BM25, snapshot with the HNSW graph) and then opened in a fresh process, so open time and RSS are what
a server pays: RSS after open, and its peak while answering every query (``rss_gb``), taken
before the benchmark's own exact reference scans, which map the whole vector matrix
(``rss_with_reference_gb``). Queries are sentences of the corpora (each the start of some chunk,
shortened); hybrid search is timed with the query vector given (``Searcher.run(qvec=...)``: query
embedding excluded), dense search exact vs ANN with recall@10 of the graph against exact, also under
a language filter (a third of the rows).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# HANRAG_SRC: another checkout's source (e.g. `git archive` of the previous release) for before/after runs
sys.path.insert(0, os.environ.get("HANRAG_SRC") or str(ROOT))

from hanrag.config import Config  # noqa: E402
from hanrag.index import dense  # noqa: E402
from hanrag.records import Chunk, Filters  # noqa: E402

EVAL = ROOT.parent / "shared" / "eval"
CORPORA = {"ko": "korquad1_ko_chunks", "zh": "cmrc2018_zh_chunks", "en": "xquad_en"}
EXTRA_EN = "cranfield_en"
RESULTS = ROOT / "benchmarks" / "results"
_SENT = re.compile(r"(?<=[.!?。！？])\s*")


class ProjectionEmbedder:
    """Deterministic fake encoder: hashed character 1- and 2-gram counts times a fixed Gaussian matrix."""

    max_tokens = 512
    truncates = True
    buckets = 1 << 14

    def __init__(self, seed: int = 17, dim: int = 384, model: str = "scale-projection") -> None:
        self.dim = dim
        self.model = model
        rng = np.random.default_rng(seed)
        self.proj = rng.standard_normal((self.buckets, self.dim)).astype(np.float32) / np.sqrt(self.dim)

    def _one(self, text: str) -> np.ndarray:
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)
        grams = np.concatenate([codes, codes[:-1] * 65599 + codes[1:]]) % self.buckets
        v = self.proj[grams].sum(axis=0)
        return v / (np.linalg.norm(v) + 1e-9)

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts]).astype(np.float32)

    encode_queries = encode_passages

    def count_tokens(self, text: str) -> int:
        return max(1, len(text) // 3)

    def identity(self) -> dict[str, Any]:
        return {"model": self.model, "dim": self.dim, "revision": "1", "pooling": "sum",
                "normalize": True, "max_seq_length": self.max_tokens, "query_prefix": "", "passage_prefix": ""}


def projection_embedder(weight: float):
    """The benchmark's encoder: vectors of the default's shape. With a second-encoder weight (the default's
    ``embedder.cross_lingual_weight``) a second projection of 512 numbers is blended in as the product blends USE
    (:class:`hanrag.embed.blend.BlendedEmbedder`), so the index stores, graphs and scores 384 + 512 numbers per
    vector and a search reads the second encoder's cosines (the ``second_gap`` feature) as the default's does."""
    from hanrag.embed.blend import BlendedEmbedder
    from hanrag.embed.use_m import USE_DIM

    main = ProjectionEmbedder()
    if weight <= 0:
        return main
    return BlendedEmbedder(main, ProjectionEmbedder(seed=18, dim=USE_DIM, model="scale-projection-second"), weight)


def sentences() -> dict[str, list[str]]:
    """Sentences (10-400 characters) of each language's corpora."""
    out: dict[str, list[str]] = {}
    for lang, name in [*CORPORA.items(), ("en", EXTRA_EN)]:
        with open(EVAL / name / "corpus.jsonl", encoding="utf-8") as fh:
            for line in fh:
                text = json.loads(line)["text"]
                out.setdefault(lang, []).extend(s.strip() for s in _SENT.split(text) if 10 <= len(s.strip()) <= 400)
    return out


def synthetic_chunks(n: int, seed: int = 0) -> list[Chunk]:
    """N chunks of 2-5 sentences of one language; 20 chunks per document, a third of the rows per language."""
    rng = random.Random(seed)
    pool = sentences()
    langs = sorted(pool)
    chunks = []
    for i in range(n):
        lang = langs[i % len(langs)]
        text = " ".join(rng.choice(pool[lang]) for _ in range(rng.randint(2, 5)))
        doc = f"doc-{i // 20:07d}"
        chunks.append(Chunk(chunk_id=f"c{i:09d}", doc_id=doc, text=text, start=(i % 20) * 1000,
                            end=(i % 20) * 1000 + len(text), source=f"{doc}.md", path=f"{doc}.md", lang=lang,
                            section=i % 20))
    return chunks


def rss_gb() -> tuple[float, float]:
    """(current RSS, peak RSS) of this process in GB."""
    vals = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(("VmRSS:", "VmHWM:")):
                vals[line.split(":")[0]] = int(line.split()[1]) / 1e6
    return round(vals.get("VmRSS", 0.0), 3), round(vals.get("VmHWM", 0.0), 3)


def pct(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2), "p95_ms": round(float(np.percentile(ms, 95)), 2)}


def _measured() -> dict[str, object]:
    """The commit this checkout is at, and whether it had uncommitted changes."""
    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=Path(__file__).resolve().parent, capture_output=True,
                              text=True).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "uncommitted_changes": bool(git("status", "--porcelain"))}


def build(n: int, index_dir: Path, weight: float) -> dict[str, Any]:
    from hanrag.pipeline import build_from_chunks

    t = time.perf_counter()
    chunks = synthetic_chunks(n)
    gen_s = time.perf_counter() - t
    cfg = Config()
    embedder = projection_embedder(weight)
    report = build_from_chunks(chunks, index_dir, cfg, embedder=embedder, progress=False)
    snap = index_dir / "snapshots" / report.snapshot
    files = {p.relative_to(snap).as_posix(): p.stat().st_size for p in snap.rglob("*") if p.is_file()}
    cache = sum(p.stat().st_size for p in (index_dir / "cache").rglob("*") if p.is_file())
    return {"generate_s": round(gen_s, 2), "timings": report.timings, "build_s": report.timings.get("total"),
            "duplicates": report.dedup.get("duplicates"), "index_bytes": sum(files.values()),
            "files_bytes": files, "cache_bytes": cache, "build_rss_peak_gb": rss_gb()[1], "vector_dim": embedder.dim}


def queries(n: int, count: int, seed: int = 1) -> list[tuple[str, str]]:
    """(language, query text): the first sentence of random chunks, cut to 60 characters."""
    rng = random.Random(seed)
    chunks = synthetic_chunks(min(n, 3000), seed=0)  # the same generator: the first rows of the index
    out = []
    for c in rng.sample(chunks, min(count, len(chunks))):
        first = _SENT.split(c.text)[0]
        out.append((c.lang, first[:60]))
    return out


def serve(index_dir: Path, n: int, count: int, weight: float) -> dict[str, Any]:
    """Open the index in this (fresh) process and time searches."""
    from hanrag.api import Index

    emb = projection_embedder(weight)
    rss0 = rss_gb()[0]
    t = time.perf_counter()
    index = Index(index_dir, embedder=emb)
    searcher = index.searcher
    open_s = time.perf_counter() - t
    rss_open = rss_gb()[0]
    backend = searcher.backend
    qs = queries(n, count)
    qvecs = emb.encode_queries([q for _, q in qs])
    out: dict[str, Any] = {"open_s": round(open_s, 3), "rss_before_open_gb": rss0, "rss_after_open_gb": rss_open}
    # one warm-up of each path (first Kiwi / jieba use loads their dictionaries)
    for lang in ("ko", "zh", "en"):
        q = next(q for g, q in qs if g == lang)
        searcher.run(q, mode="bm25")
        searcher.run(q, mode="hybrid", qvec=qvecs[0])
    times: dict[str, list[float]] = {k: [] for k in ("bm25", "hybrid", "hybrid_graph", "dense_exact", "dense_ann",
                                                       "dense_exact_filtered", "dense_ann_filtered")}
    recall, recall_f = [], []
    no_filter = backend.mask(None)
    lang_masks = {g: backend.mask(Filters(lang=(g,))) for g in ("ko", "zh", "en")}
    has_ann = getattr(backend.snapshot, "ann", None) is not None
    if not hasattr(backend, "dense_top_k"):  # a release before the graph: exact search only
        backend.dense_top_k = lambda qv, k, mask, exact=False: dense.top_k(backend.snapshot.embeddings, qv, k, mask)
    # below SHARED_SCAN_MAX_ROWS a hybrid search scans every vector once for its own dense search and its
    # language pools (a release before it: it walks the graph once per pool); with a graph there, the hybrid search
    # is also timed walking it (hybrid_graph), query by query
    from hanrag.backends import embedded

    shared_below = getattr(embedded, "SHARED_SCAN_MAX_ROWS", 0)
    walks = has_ann and shared_below > n

    def hybrid_walking(q: str, qv: np.ndarray) -> None:
        embedded.SHARED_SCAN_MAX_ROWS = 0
        try:
            searcher.run(q, mode="hybrid", qvec=qv)
        finally:
            embedded.SHARED_SCAN_MAX_ROWS = shared_below
    # serving first: what a server does (BM25, hybrid, the graph), and its RSS before any reference scan
    answers: list[tuple[np.ndarray, np.ndarray]] = []
    for (lang, q), qv in zip(qs, qvecs, strict=True):
        t = time.perf_counter()
        searcher.run(q, mode="bm25")
        times["bm25"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        searcher.run(q, mode="hybrid", qvec=qv)
        times["hybrid"].append((time.perf_counter() - t) * 1000)
        if walks:
            t = time.perf_counter()
            hybrid_walking(q, qv)
            times["hybrid_graph"].append((time.perf_counter() - t) * 1000)
        pair = []
        for tag, mask in (("", no_filter), ("_filtered", lang_masks[lang])):
            t = time.perf_counter()
            an, _ = backend.dense_top_k(qv, 10, mask)
            times["dense_ann" + tag].append((time.perf_counter() - t) * 1000)
            pair.append(an)
        answers.append((pair[0], pair[1]))
    rss_serving, rss_serving_peak = rss_gb()
    # then the reference: exact scans of the whole matrix (they map every vector page into this process)
    for (lang, _q), qv, (an, an_f) in zip(qs, qvecs, answers, strict=True):
        for tag, mask, got, rec in (("", no_filter, an, recall), ("_filtered", lang_masks[lang], an_f, recall_f)):
            t = time.perf_counter()
            ex, _ = backend.dense_top_k(qv, 10, mask, exact=True)
            times["dense_exact" + tag].append((time.perf_counter() - t) * 1000)
            rec.append(len(set(ex.tolist()) & set(got.tolist())) / max(1, len(ex)))
    rss_now, rss_peak = rss_gb()
    out.update({f"{k}_{m}": v for k, ms in times.items() if ms for m, v in pct(ms).items()})
    out.update({"ann": has_ann, "shared_scan_max_rows": shared_below,
                "ann_recall_at_10": round(float(np.mean(recall)), 4),
                "ann_recall_at_10_filtered": round(float(np.mean(recall_f)), 4),
                "rss_serving_gb": rss_serving, "rss_serving_peak_gb": rss_serving_peak,
                "rss_with_reference_gb": rss_now, "rss_peak_gb": rss_peak, "queries": len(qs)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--index", type=Path, help="index folder (default: a temporary one, removed after)")
    ap.add_argument("--serve-only", action="store_true", help="(internal) open --index and time searches")
    ap.add_argument("--ef", type=int, help="HNSW ef at search (default: hanrag.index.dense.EXPANSION_SEARCH)")
    ap.add_argument("--serve-again", action="store_true", help="time searches of an existing --index, no build")
    ap.add_argument("--tag", default="", help="suffix of the results file (scale-N-TAG.json)")
    ap.add_argument("--no-write", action="store_true", help="do not write benchmarks/results/scale-N.json")
    ap.add_argument("--cross-lingual-weight", type=float, default=Config().embedder.cross_lingual_weight,
                    help="the second encoder's weight in the vectors (default: the default config's; 0: one "
                         "encoder of 384 numbers, as the runs before the second encoder)")
    args = ap.parse_args()
    if args.serve_only:
        if args.ef:
            dense.EXPANSION_SEARCH = args.ef
        print(json.dumps(serve(args.index, args.chunks, args.queries, args.cross_lingual_weight)))
        return
    with tempfile.TemporaryDirectory(dir=ROOT / ".cache" if (ROOT / ".cache").is_dir() else None) as tmp:
        index_dir = args.index or Path(tmp) / "index"
        build_file = index_dir / "scale-build.json"  # the build's figures, for --serve-again
        if args.serve_again:
            if not args.index or not build_file.is_file():
                sys.exit("--serve-again needs --index of a folder this script built")
            b = json.loads(build_file.read_text(encoding="utf-8"))
        else:
            b = build(args.chunks, index_dir, args.cross_lingual_weight)
            build_file.write_text(json.dumps(b), encoding="utf-8")
            print(f"build {args.chunks} chunks: {b['build_s']:.1f}s {b['timings']}", flush=True)
        # one BLAS thread per search: on this shared 2-core machine OpenBLAS' worker threads wait for a core,
        # and a 3k x 384 product took 16-58 ms instead of 0.06 ms (a server runs queries side by side anyway)
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        proc = subprocess.run([sys.executable, __file__, "--serve-only", "--index", str(index_dir),
                               "--chunks", str(args.chunks), "--queries", str(args.queries),
                               "--cross-lingual-weight", str(args.cross_lingual_weight),
                               *(["--ef", str(args.ef)] if args.ef else [])],
                              capture_output=True, text=True, check=False, env=env)
        if proc.returncode:
            sys.exit(f"serving failed:\n{proc.stderr[-4000:]}")
        s = json.loads(proc.stdout.strip().splitlines()[-1])
    t = b["timings"]
    result = {
        "chunks": args.chunks,
        "vector_dim": b.get("vector_dim"),  # the index's (a --serve-again of an index built before: unknown)
        "cross_lingual_weight": args.cross_lingual_weight,
        "build_s": b["build_s"],
        "build_stages_s": {k: t.get(k) for k in ("tokenize", "embedding", "dedup", "sparse", "write", "ann",
                                                 "publish")},
        "build_rss_peak_gb": b["build_rss_peak_gb"],
        "index_gb": round(b["index_bytes"] / 1e9, 3),
        "cache_gb": round(b["cache_bytes"] / 1e9, 3),
        "files_mb": {k: round(v / 1e6, 1) for k, v in sorted(b["files_bytes"].items())},
        "open_s": s["open_s"],
        # serving: the peak of the process that opened the index and answered every query, before the
        # benchmark's own exact reference scans
        "rss_gb": s["rss_serving_peak_gb"],
        **s,
        "hybrid_p50_ms": s["hybrid_p50_ms"],
        "hybrid_p95_ms": s["hybrid_p95_ms"],
        "serve_blas_threads": 1,
        "ann_ef": args.ef or dense.EXPANSION_SEARCH,
        "hanrag_src": os.environ.get("HANRAG_SRC") or "this checkout",
        **_measured(),
        # settings given through the environment (HANRAG_SEARCH__XLING_COMPETE=weak, ...): what this run changed
        "search_env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("HANRAG_SEARCH__")},
        "cpus": os.cpu_count(),
        "load_avg": os.getloadavg()[0],
    }
    rows = [("build (s)", result["build_s"]), *((f"  {k}", v) for k, v in result["build_stages_s"].items()),
            ("index on disk (GB)", result["index_gb"]), ("open (s)", result["open_s"]),
            ("RSS after open (GB)", s["rss_after_open_gb"]), ("RSS serving, peak (GB)", s["rss_serving_peak_gb"]),
            ("RSS with exact reference scans (GB)", s["rss_with_reference_gb"]),
            ("bm25 p50/p95 (ms)", f"{s['bm25_p50_ms']} / {s['bm25_p95_ms']}"),
            ("dense exact p50/p95 (ms)", f"{s['dense_exact_p50_ms']} / {s['dense_exact_p95_ms']}"),
            ("dense ANN p50/p95 (ms)", f"{s['dense_ann_p50_ms']} / {s['dense_ann_p95_ms']}"),
            ("ANN recall@10", s["ann_recall_at_10"]),
            ("dense filtered exact/ANN p50 (ms)", f"{s['dense_exact_filtered_p50_ms']} / "
                                                  f"{s['dense_ann_filtered_p50_ms']}"),
            ("ANN recall@10 filtered", s["ann_recall_at_10_filtered"]),
            ("hybrid p50/p95 (ms, no query embedding)", f"{s['hybrid_p50_ms']} / {s['hybrid_p95_ms']}")]
    if "hybrid_graph_p50_ms" in s:
        rows.append(("hybrid walking the graph p50/p95 (ms)",
                     f"{s['hybrid_graph_p50_ms']} / {s['hybrid_graph_p95_ms']}"))
    for k, v in rows:
        print(f"{k:42s} {v}")
    if not args.no_write:
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"scale-{args.chunks}{'-' + args.tag if args.tag else ''}.json"
        path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
