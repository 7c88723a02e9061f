"""How far any fusion weight could take the hybrid: upper bounds over the candidates the product retrieves.

For each query the product path (``hanrag.build`` index, :meth:`Searcher.fused_candidates`: plan, BM25 ∪ dense,
the cross-lingual stage, each fusion's normalised scores) gives its ~100 candidates. Then, per set:

* ``default``: the shipped rule weights and fusion over these candidates (drawn for a top 100, as ``fit.py``
  draws them; ``quality.py`` asks for 10, so its BM25 min-max and its figures differ a little);
* ``best α for the set``: one dense weight for every query of the set, the best of 0, .05 … 1 (default fusion);
* ``per-query oracle``: each query's best dense weight *and* fusion method (minmax, calibrated, zscore,
  ceiling), chosen by looking at its judgments — no rule that decides from the query and its candidates
  can do better with these two scores;
* ``pool ideal``: the judged-relevant candidates first — what a perfect reranker of the same pool would reach;
* ``pool recall``: the share of judged-relevant documents among the candidates.

These are bounds, not results: they read the judgments, so nothing is ever chosen from them. They answer
whether a goal is within reach of the fusion rule or needs a better ordering signal (a reranker, an encoder).

    python benchmarks/fusion_bound.py                        # held-out cross-script sets, MIXED index
    python benchmarks/fusion_bound.py --standalone --sets ko2en_tech en2ko_tech
"""

from __future__ import annotations

import argparse

import numpy as np
from evalsets import CROSS_SETS, INDEX_ROOT, MIXED_SETS, available, build, caching_embedder, first_queries, load
from fit import FUSIONS, SHIPPED, collect, ranking

from hanrag.api import Index
from hanrag.config import Config
from hanrag.eval import query_metrics

GRID = tuple(i / 20 for i in range(21))


def metrics(ranked: list[str], rel: dict[str, int]) -> np.ndarray:
    return np.array(query_metrics(ranked, rel))


def bounds(per_fusion: dict[str, list[dict]], default_fusion: str) -> dict[str, np.ndarray]:
    """Mean (nDCG@10, MRR@10) of each bound over one set's queries (records aligned across fusions)."""
    base = per_fusion[default_fusion]
    default = np.mean([metrics(ranking(r, SHIPPED.get(r["cell"], 0.6)), r["rel"]) for r in base], axis=0)
    per_alpha = {a: np.mean([metrics(ranking(r, a), r["rel"]) for r in base], axis=0) for a in GRID}
    best_alpha = max(GRID, key=lambda a: per_alpha[a][0])
    # each metric's own best per query (the weight that maximises nDCG@10 need not maximise MRR@10)
    oracle = np.mean([
        np.max([metrics(ranking(recs[i], a), recs[i]["rel"]) for recs in per_fusion.values() for a in GRID], axis=0)
        for i in range(len(base))], axis=0)
    relevant = [{d for d, g in r["rel"].items() if g > 0} for r in base]
    # a perfect reranker: the judged candidates, the most relevant first
    pool = np.mean([metrics(sorted((d for d in dict.fromkeys(r["docs"]) if d in rel), key=lambda d: -r["rel"][d]),
                            r["rel"])
                    for r, rel in zip(base, relevant, strict=True)], axis=0)
    recall = np.mean([len(rel & set(r["docs"])) / len(rel) for r, rel in zip(base, relevant, strict=True) if rel])
    return {"default": default, f"best α for the set ({best_alpha:.2f})": per_alpha[best_alpha],
            "per-query oracle (α × fusion)": oracle, "pool ideal": pool, "pool recall": np.array([recall, recall])}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", nargs="*", default=list(CROSS_SETS))
    ap.add_argument("--standalone", action="store_true", help="each set in its own index (default: the MIXED one)")
    ap.add_argument("--max-queries", type=int, default=300, help="first N queries per set, as quality.py")
    args = ap.parse_args()
    cfg = Config()
    emb = caching_embedder(cfg)
    names = available(args.sets)
    if args.standalone:
        where = [(n, [first_queries(load(n), args.max_queries)]) for n in names]
    else:
        where = [("MIXED", [first_queries(load(n), args.max_queries) for n in available(list(MIXED_SETS))])]
    for name, sets in where:
        build(name, sets, cfg, emb)
        emb.save()
        index = Index(INDEX_ROOT / name, cfg, embedder=emb)
        wanted = [es for es in sets if es.name in names]
        per_fusion = {f: collect(index, cfg, wanted, emb, f) for f in FUSIONS}
        for es in wanted:
            recs = {f: [r for r in rs if r["set"] == es.name] for f, rs in per_fusion.items()}
            print(f"\n{es.name} ({name}, {len(recs[cfg.search.fusion])} queries) — nDCG@10 / MRR@10")
            for label, (nd, mr) in bounds(recs, cfg.search.fusion).items():
                print(f"  {label:<34} {nd:.3f} / {mr:.3f}")


if __name__ == "__main__":
    main()
