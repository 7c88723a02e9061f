"""Per-stage search latency (p50/p95) on the MIXED index, plus cross-encoder cost per candidate.

The MIXED index (korquad1_ko_chunks + cmrc2018_zh_chunks + xquad_en2zh + cranfield_en, one chunk
per eval doc) is built once with the real builder into .cache/latency_index; passage vectors come
from the eval embedding cache (benchmarks/embed_eval_docs.py), queries are embedded live with
the real embedder. Search runs through hanrag's Searcher on the EmbeddedBackend.

    python benchmarks/search_latency.py [--queries 200] [--rerank-sizes tiny,minilm,large]

Rerank: no real cross-encoder can be downloaded here, so its cost per candidate is measured
with randomly initialised models of real architectures (weights do not change the compute):
a tiny 2-layer BERT, MiniLM-L6-H384 (the ms-marco-MiniLM-L-6-v2 shape) and XLM-R large (the
bge-reranker-v2-m3 shape). Scores from them are meaningless; only the timing is reported.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hanrag.config import Config  # noqa: E402
from hanrag.eval import EMBED_CACHE as EMB  # noqa: E402

MIXED = ("korquad1_ko_chunks", "cmrc2018_zh_chunks", "xquad_en2zh", "cranfield_en")
STAGES = ("plan", "bm25", "embed", "dense", "fusion", "rerank", "total")


class CachedPassages:
    """The real embedder, except that passages come from the eval cache (same model, same vectors)."""

    def __init__(self, real, table: dict[str, np.ndarray]) -> None:
        self._real, self._table = real, table

    def __getattr__(self, name: str):
        return getattr(self._real, name)

    def encode_passages(self, texts):
        return np.stack([self._table[t] for t in texts])


def build_mixed(embedder, cfg: Config) -> tuple[Path, list[str]]:
    from hanrag.eval import eval_chunks, find_eval_root, load_eval_set
    from hanrag.pipeline import build_from_chunks

    names = [n for n in MIXED if (EMB / n / "queries.npy").is_file()]
    missing = [n for n in MIXED if n not in names]
    if missing:
        print(f"[warn] not cached yet, left out of MIXED: {', '.join(missing)}", file=sys.stderr)
    index_dir = ROOT / ".cache" / "latency_index" / "-".join(names)
    queries: list[str] = []
    chunks, table = [], {}
    for name in names:
        es = load_eval_set(find_eval_root() / name)
        ids = json.loads((EMB / name / "doc_ids.json").read_text())
        vecs = dict(zip(ids, np.load(EMB / name / "docs.npy"), strict=True))
        for d, c in zip(es.docs, eval_chunks(es, f"{name}/"), strict=True):
            chunks.append(c)
            table[d.text] = vecs[d.doc_id]
        queries += [q.text for q in es.queries]
    if not (index_dir / "CURRENT").exists() and not any(index_dir.glob("snapshots/*")):
        t = time.perf_counter()
        build_from_chunks(chunks, index_dir, cfg, embedder=CachedPassages(embedder, table), progress=False)
        print(f"[build] {len(chunks)} chunks in {time.perf_counter() - t:.0f}s", file=sys.stderr)
    return index_dir, queries


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000 if values else float("nan")


def stage_table(title: str, rows: dict[str, list[float]]) -> None:
    print(f"\n### {title} (ms)\n\n| stage | p50 | p95 |\n| --- | ---: | ---: |")
    for stage in STAGES:
        if rows.get(stage):
            print(f"| {stage} | {pct(rows[stage], 50):.2f} | {pct(rows[stage], 95):.2f} |")


def make_random_cross_encoder(path: Path, size: str) -> Path:
    """A randomly initialised cross-encoder of a real architecture's size (timing only)."""
    from fixtures.tiny_models import make_tiny_bert

    if size == "tiny":
        return make_tiny_bert(path, max_position_embeddings=512, cross_encoder=True)
    import torch
    from transformers import (
        BertConfig,
        BertForSequenceClassification,
        XLMRobertaConfig,
        XLMRobertaForSequenceClassification,
    )

    make_tiny_bert(path, max_position_embeddings=514, cross_encoder=True)  # tokenizer files
    from transformers import AutoTokenizer

    vocab = len(AutoTokenizer.from_pretrained(path))
    torch.manual_seed(0)
    if size == "minilm":
        model = BertForSequenceClassification(BertConfig(
            vocab_size=vocab, hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536,
            max_position_embeddings=512, num_labels=1))
    else:  # XLM-R large shape (bge-reranker-v2-m3); vocabulary cut to the tiny tokenizer's
        model = XLMRobertaForSequenceClassification(XLMRobertaConfig(
            vocab_size=vocab, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
            max_position_embeddings=514, num_labels=1, pad_token_id=0))
    model.save_pretrained(path)
    return path


def rerank_cost(sizes: list[str], passages: list[str], query: str, max_length: int, batch: int) -> None:
    from hanrag.config import RerankConfig
    from hanrag.search.rerank import Reranker

    print(f"\n### cross-encoder cost per candidate (CPU, batch {batch}, max_length {max_length}, random weights)\n")
    print("| model shape | params | candidates | seconds | ms / candidate |\n| --- | ---: | ---: | ---: | ---: |")
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            path = make_random_cross_encoder(Path(tmp) / size, size)
            rr = Reranker(RerankConfig(model=str(path), batch_size=batch, max_length=max_length))
            n = len(passages)
            rr.score(query, passages[:batch])  # warm-up
            t = time.perf_counter()
            rr.score(query, passages)
            dt = time.perf_counter() - t
            params = sum(p.numel() for p in rr.model.model.parameters())
            print(f"| {size} | {params / 1e6:.1f}M | {n} | {dt:.2f} | {1000 * dt / n:.1f} |")
            sys.stdout.flush()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rerank-sizes", default="tiny,minilm,large")
    ap.add_argument("--rerank-candidates", type=int, default=30)
    args = ap.parse_args()

    from hanrag.backends.embedded import EmbeddedBackend
    from hanrag.embed import load_embedder
    from hanrag.index.snapshot import open_snapshot
    from hanrag.search.searcher import Searcher
    from hanrag.text import get_analyzer

    cfg = Config()
    embedder = load_embedder(cfg.embedder)
    index_dir, queries = build_mixed(embedder, cfg)
    backend = EmbeddedBackend(open_snapshot(index_dir))
    analyzer = get_analyzer(cfg)
    searcher = Searcher(backend, cfg, embedder=embedder, analyzer=analyzer, lexicon=analyzer.lexicon)
    rng = np.random.default_rng(0)
    sample = [queries[i] for i in rng.choice(len(queries), size=min(args.queries, len(queries)), replace=False)]
    for q in sample[:5]:
        searcher.search(q)  # warm-up: Kiwi, jieba, caches
    rows: dict[str, dict[str, list[float]]] = {}
    for mode in ("hybrid", "bm25", "dense"):
        r: dict[str, list[float]] = {s: [] for s in STAGES}
        for q in sample:
            t = searcher.run(q, top_k=10, mode=mode).times
            for s in STAGES:
                r[s].append(getattr(t, s))
        rows[mode] = r
    print(f"MIXED index: {backend.count()} chunks, {len(sample)} queries, top_k=10, K=40 per retriever")
    for mode, r in rows.items():
        stage_table(f"{mode}, no rerank", r)
    h = rows["hybrid"]
    ratio = np.median(h["total"]) / np.median(h["embed"])
    print(f"\nhybrid total p50 / query-embedding p50 = {ratio:.2f} (goal ≤ 1.5)")
    sizes = [s for s in args.rerank_sizes.split(",") if s]
    if sizes:
        hits = searcher.search(sample[0], top_k=args.rerank_candidates)
        rerank_cost(sizes, [hit.chunk.text for hit in hits], sample[0], 512, 16)


if __name__ == "__main__":
    main()
