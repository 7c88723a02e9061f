"""Retrieval quality as a user gets it: every eval set built by the product path, searched by ``Index``.

Each set is indexed standalone and all of them together in one MIXED index (``evalsets.MIXED_SETS``),
through ``build_from_documents`` (lint, chunking, near-duplicate folding, snapshot) with the default
config; every query runs through the index's searcher, once per row of the ablation table. A folded
near-duplicate is credited to the hit that carries it ("also in"), right after the hit's own document.

    python benchmarks/quality.py                          # every set, standalone + MIXED
    python benchmarks/quality.py --sets ko2hanja ko2en_tech --no-mixed
    python benchmarks/quality.py --json benchmarks/results/quality.json

Protocol (issue 11): the shared sets of ../shared/eval tuned the rule weights (two-fold, earlier releases);
the fusion default was chosen on the shared sets only (``--rows`` all fusions) and the cross-script sets in
eval/ (see their READMEs) are never fitted on; their figures have been read while defaults were decided, so
they are reported as seen, not held out (docs/evaluation.md). Vectors come from the machine-wide cache
(``benchmarks/embed_eval_cache.py`` fills it).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np
from evalsets import (
    CROSS_SETS,
    INDEX_ROOT,
    MIXED_SETS,
    SHARED_SETS,
    available,
    build,
    caching_embedder,
    first_queries,
    load,
    measured_what,
    pooled_judgments,
    tasks,
)

from hanrag.api import Index
from hanrag.config import Config, load_config
from hanrag.eval import ablation_configs, run_ablations

METRICS = ("ndcg@10", "mrr@10", "recall@10")


DEFAULT_ROWS = ("bm25", "dense", "minmax", "zscore", "rrf k=60", "ceiling", "calibrated",
                "calibrated, language background", "calibrated, corpus background", "hanrag default", "learned ranker")


def rows(cfg: Config, names: list[str] | None) -> dict[str, tuple[str, Config]]:
    """The ablation rows of ``hanrag eval`` (:func:`hanrag.eval.ablation_configs`) named here."""
    table = ablation_configs(cfg)
    return {k: table[k] for k in (names or DEFAULT_ROWS) if k in table}


def folded_docs(index: Index) -> dict[str, tuple[str, ...]]:
    """kept chunk id -> doc ids of the near-duplicates folded into it (from the open snapshot)."""
    snap = index.snapshot
    out: dict[str, list[str]] = {}
    for row in np.flatnonzero(snap.dup_of >= 0).tolist():
        out.setdefault(snap.chunks[int(snap.dup_of[row])].chunk_id, []).append(snap.chunks[row].doc_id)
    return {k: tuple(v) for k, v in out.items()}


def with_pooled(es):
    """``es`` under the name "<set> pooled", its judgments joined by ``eval/pooled/<set>.tsv`` (benchmarks/pool.py):
    the passages of the MIXED index judged by reading; None without such a file."""
    pooled = pooled_judgments(es.name)
    if not pooled:
        return None
    qrels = {q.qid: {**pooled.get(q.qid, {}), **es.qrels.get(q.qid, {})} for q in es.queries}
    return type(es)(f"{es.name} pooled", es.docs, es.queries, {k: v for k, v in qrels.items() if v})


def evaluate(name: str, set_names: list[str], cfg: Config, emb, row_names: list[str] | None, max_q: int,
             dedup: bool = True, pooled: bool = False, top_k: int = 100):
    sets = [first_queries(load(n), max_q) for n in set_names]
    t = time.perf_counter()
    name = name if dedup else f"{name}-nodedup"
    report = build(name, sets, cfg, emb, dedup=dedup)
    emb.save()
    index = Index(INDEX_ROOT / name, cfg, embedder=emb)
    todo = tasks(sets)
    if pooled:  # the same queries again, judged with the pooled judgments too (the original figures stay)
        todo += [dataclasses.replace(t, name=p.name, qrels=p.qrels)
                 for t, p in ((t, with_pooled(es)) for t, es in zip(todo, sets, strict=True)) if p is not None]
    res = run_ablations(index.backend, cfg, todo, embedder=emb, analyzer=index.analyzer,
                        lexicon=index.lexicon, configs=rows(cfg, row_names), also=folded_docs(index), top_k=top_k)
    emb.save()
    print(f"[{name}] {report.chunks} chunks ({report.dedup.get('duplicates')} folded), "
          f"{sum(len(es.queries) for es in sets)} queries, {time.perf_counter() - t:.0f}s", file=sys.stderr)
    return res


def table(title: str, results: dict[str, dict[str, dict[str, float]]], metric: str) -> str:
    sets = list(dict.fromkeys(s for r in results.values() for s in r))
    lines = [f"\n{title} — {metric}", "| | " + " | ".join(sets) + " |", "| --- |" + " ---: |" * len(sets)]
    for label, per in results.items():
        cells = [f"{per[s][metric]:.3f}".lstrip("0") if s in per else "—" for s in sets]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", nargs="*", default=None)
    ap.add_argument("--no-mixed", action="store_true")
    ap.add_argument("--mixed-sets", nargs="*", default=None,
                    help="the sets merged into the mixed index (default: evalsets.MIXED_SETS, index MIXED); e.g. "
                         "tune_ko2en_react tune_en2ko_react: a Korean/English documentation pair in one index, "
                         "each answer in one language only")
    ap.add_argument("--rows", nargs="*", default=None, help="ablation rows to run (default: all)")
    ap.add_argument("--max-queries", type=int, default=0, help="first N queries per set (0 = all)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--no-dedup", action="store_true", help="build without near-duplicate folding (to compare)")
    ap.add_argument("--pooled", action="store_true",
                    help="MIXED also with the pooled judgments of eval/pooled/ (benchmarks/pool.py), as '<set> pooled'")
    ap.add_argument("--config", type=Path, default=None,
                    help="evaluate this config file (hanrag.toml) instead of the defaults, e.g. a candidate rule table")
    ap.add_argument("--backend", default="", help="embedder backend to evaluate (indexes get a -BACKEND suffix)")
    ap.add_argument("--top-k", type=int, default=100,
                    help="hits per search (100: R@100 is read; each retriever draws max(20, 4 x top_k) candidates, so "
                         "10 runs the candidate pools of a search for ten hits)")
    args = ap.parse_args()
    measured = measured_what()  # before the run: a commit made while it runs is not what it measured
    cfg = load_config(args.config, env=False) if args.config else Config()
    suffix = ""
    if args.backend:
        cfg.embedder.backend, suffix = args.backend, f"-{args.backend}"
    emb = caching_embedder(cfg)
    names = available([*SHARED_SETS, *CROSS_SETS] if args.sets is None else args.sets)
    standalone: dict[str, dict[str, dict[str, float]]] = {}
    for n in names:
        for label, per in evaluate(n + suffix, [n], cfg, emb, args.rows, args.max_queries,
                                   not args.no_dedup, top_k=args.top_k).items():
            standalone.setdefault(label, {}).update(per)
    mixed: dict[str, dict[str, dict[str, float]]] = {}
    if not args.no_mixed:
        members = available(list(args.mixed_sets or MIXED_SETS))
        name = "MIXED" if args.mixed_sets is None else "MIXED-" + "+".join(members)
        mixed = evaluate(name + suffix, members, cfg, emb, args.rows, args.max_queries, not args.no_dedup,
                         args.pooled, args.top_k)
    for metric in ("ndcg@10", "mrr@10"):
        print(table("standalone", standalone, metric))
        if mixed:
            print(table("MIXED (one index, every corpus)", mixed, metric))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**measured, "command": " ".join(sys.argv),
                                         "metrics": "ranx, as hanrag eval: ndcg@10 (linear gain), mrr@10, recall@10",
                                         "standalone": standalone, "mixed": mixed}, indent=1))
    print(f"\n{emb.embedded} texts embedded in this run", file=sys.stderr)


if __name__ == "__main__":
    main()
