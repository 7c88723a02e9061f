"""Fit the ``hanrag`` rule weights and the fusion method — on the tuning sets only, reported on sets they never saw.

Protocol (fixed, issue 11):
* tuning sets: the ../shared/eval sets (korquad1_ko_chunks, cmrc2018_zh_chunks, xquad_en, xquad_en2zh,
  cranfield_en) and the tuning sets of eval/ (``evalsets.TUNE_SETS``: tune_ko2zpzq, Korean queries over 子平真诠评注;
  tune_ko_tech, Korean queries over Korean Kubernetes docs; tune_en2ko_tech, the same queries in English;
  tune_ko2en_react / tune_en2ko_react, Korean queries over English React docs and the reverse; tune_ko2en_vue /
  tune_en2ko_vue, the same over Vue.js docs; tune_ko2en_ts / tune_en2ko_ts, over the TypeScript handbook), each
  standalone and in one mixed index (quality.py's MIXED corpora plus the tuning corpora, ``MIXED-FIT``);
* judged with each set's own judgments joined by its pooled ones (``eval/pooled/<set>.tsv``, judged by reading: the
  unjudged passages that the rule table or the learned ranker put in a top 10 here, ``benchmarks/pool_fit.py``), so
  a passage that answers is not counted wrong because the set's authors never read it;
* held out: the cross-script sets in eval/ (ko2hanja, hanja2ko, ko2en_tech, en2ko_tech): never read here;
  ``benchmarks/quality.py`` reports them with whatever this script chose.
* what is fitted: per rule cell (the rule the query takes: weak-lexical, translated, ko-term, ko, zh, en) the dense
  weight α ∈ {0.1 … 0.9} (the best mean nDCG@10 over the cell's queries; the nDCG of hanrag eval,
  :func:`hanrag.eval.query_metrics`), and the fusion method (minmax, calibrated,
  zscore, ceiling); settings that change candidates (``--dense-background``, ``--glossary-weight``,
  ``--expansion-weight``, ``--translate-weight``, ``--link-weight``) are compared by one run each, on the same mean
  leave-one-set-out nDCG@10. Each query
  runs once through the product path (``hanrag.build`` indexes, :meth:`Searcher.fused_candidates`, the pipeline
  up to rerank); the normalised BM25 and dense scores of every candidate are kept and re-weighted here, which is
  exact for the weights (they change no candidate) — the lexical-evidence threshold and translation weight change
  candidates and stay as they are.
* reported: leave-one-set-out — for each tuning set, the weights chosen on the other sets, scored on it —
  then the weights chosen on all tuning sets (the shipped defaults).

    python benchmarks/fit.py [--max-queries N]
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import typing
from pathlib import Path

import numpy as np
from evalsets import (
    INDEX_ROOT,
    MIXED_SETS,
    SHARED_SETS,
    TUNE_SETS,
    available,
    build,
    caching_embedder,
    first_queries,
    fit_judgments,
    load,
    measured_what,
)

from hanrag.api import Index
from hanrag.config import Config, DenseBackground, load_config
from hanrag.eval import query_metrics
from hanrag.search.candidates import Candidates
from hanrag.search.fusion import Fused, reweight
from hanrag.search.presets import HANRAG
from hanrag.search.ranker import FEATURES
from hanrag.search.searcher import Searcher

ALPHAS = tuple(round(0.1 * i, 1) for i in range(1, 10))
FUSIONS = ("minmax", "calibrated", "zscore", "ceiling")


def collect(index: Index, cfg: Config, sets, emb, fusion: str) -> list[dict]:
    """One record per query: its rule cell, its relevance, and (doc, bm25_norm, dense_norm) per candidate."""
    c = copy.deepcopy(cfg)
    c.search.fusion = fusion
    searcher = Searcher(index.backend, c, emb, index.analyzer, index.lexicon)
    out = []
    for es in sets:
        judged = fit_judgments(es)
        qvecs = emb.encode_queries([q.text for q in es.queries])
        for q, qvec in zip(es.queries, qvecs, strict=True):
            cand, fused = searcher.fused_candidates(q.text, 100, "hybrid", qvec=qvec)
            if fused is not None:
                out.append(record(searcher, es, q, judged.get(q.qid, {}), cand, fused))
    return out


def record(searcher: Searcher, es, q, judged: dict[str, int], cand: Candidates, fused: Fused) -> dict:
    """One query run: its rule cell, its judgments (the set's own and its pooled ones: ``fit_judgments``), and per
    candidate its document, normalised BM25 and dense scores and ranker features."""
    docs = [cand.chunks[i].doc_id.partition("/")[2] for i in cand.ids]
    return {"set": es.name, "qid": q.qid, "cell": cand.plan.rule, "rel": judged, "docs": docs,
            "bn": np.asarray(fused.bm25_norm), "dn": np.asarray(fused.dense_norm),
            "X": searcher.ranking_features(cand, fused)}


def _pairs(rec: dict, max_neg: int = 30) -> np.ndarray:
    """Feature differences (relevant minus not) of one query's candidates: its judged passages against the
    best-fused unjudged ones (the competitors that matter); empty without a relevant candidate."""
    rel = np.array([rec["rel"].get(d, 0) > 0 for d in rec["docs"]])
    if not rel.any() or rel.all():
        return np.zeros((0, rec["X"].shape[1]))
    order = np.argsort(-reweight(rec["bn"], rec["dn"], 1.0, 1.0), kind="stable")
    neg = [i for i in order if not rel[i]][:max_neg]
    pos = np.flatnonzero(rel)
    return (rec["X"][pos][:, None, :] - rec["X"][neg][None, :, :]).reshape(-1, rec["X"].shape[1])


def fit_ranker(records: list[dict], l2: float = 1e-2, steps: int = 400, lr: float = 0.5) -> np.ndarray:
    """Linear weights over the ranker's features minimising the pairwise logistic loss, every query weighing the
    same (gradient descent on standardised features, weights returned on the raw scale)."""
    per_query = [(d, 1.0 / len(d)) for d in (_pairs(r) for r in records) if len(d)]
    if not per_query:
        return np.zeros(records[0]["X"].shape[1]) if records else np.zeros(0)
    diffs = np.vstack([d for d, _ in per_query])
    weight = np.concatenate([np.full(len(d), w) for d, w in per_query]) / len(per_query)
    scale = np.vstack([r["X"] for r in records]).std(axis=0)
    scale[scale == 0] = 1.0
    z = diffs / scale
    w = np.zeros(z.shape[1])
    for _ in range(steps):
        margin = z @ w
        grad = -(z * (weight / (1.0 + np.exp(margin)))[:, None]).sum(axis=0) + l2 * w
        w -= lr * grad
    return w / scale


def model_score(rec: dict, w: np.ndarray) -> float:
    scores = rec["X"] @ w
    docs = list(dict.fromkeys(rec["docs"][i] for i in np.argsort(-scores, kind="stable")))
    return query_metrics(docs, rec["rel"])[0]


def ranking(rec: dict, alpha: float) -> list[str]:
    """The record's documents ranked by its candidates' scores fused with dense weight ``alpha`` (the fusion of a
    search whose rule gives that weight: :func:`hanrag.search.fusion.reweight`)."""
    fused = reweight(rec["bn"], rec["dn"], 1 - alpha, alpha)
    return list(dict.fromkeys(rec["docs"][i] for i in np.argsort(-fused, kind="stable")))


def score(rec: dict, alpha: float) -> float:
    return query_metrics(ranking(rec, alpha), rec["rel"])[0]


def choose(records: list[dict], cells: list[str]) -> dict[str, float]:
    """Per cell, the α with the best mean nDCG@10 over the cell's queries (every query weighs the same).

    Not the mean of per-set means: a set that sends 4 queries into a cell would weigh as much as one that
    sends 200 (xquad_en2zh's 4 English-cell queries outvoted cranfield's 196 that way)."""
    best = {}
    for cell in cells:
        recs = [r for r in records if r["cell"] == cell]
        if not recs:
            continue

        def objective(a: float, recs=recs) -> float:
            return float(np.mean([score(r, a) for r in recs]))

        best[cell] = max(ALPHAS, key=lambda a: (round(objective(a), 4), -abs(a - 0.5)))
    return best


JUDGMENTS = "each set's own, joined by its pooled judgments (eval/pooled/<set>.tsv: benchmarks/pool.py, pool_fit.py)"
SHIPPED = {r.name: r.dense for r in HANRAG}  # a cell the training sets never reach keeps the shipped weight


def evaluate(records: list[dict], alphas: dict[str, float]) -> float:
    if not records:
        return float("nan")
    return float(np.mean([score(r, alphas.get(r["cell"], SHIPPED.get(r["cell"], 0.6))) for r in records]))


def save_records(path: Path, records: list[dict], measured: dict) -> None:
    """The query runs as flat arrays in one .npz (no pickle): candidate rows carry their query's number."""
    rows = [len(r["docs"]) for r in records]
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        path, query=np.repeat(np.arange(len(records)), rows),
        X=np.vstack([r["X"] for r in records]), bn=np.concatenate([r["bn"] for r in records]),
        dn=np.concatenate([r["dn"] for r in records]),
        grade=np.concatenate([[r["rel"].get(d, 0) for d in r["docs"]] for r in records]).astype(np.int8),
        doc=np.array([d for r in records for d in r["docs"]]),
        set=np.array([r["set"] for r in records]), qid=np.array([r["qid"] for r in records]),
        cell=np.array([r["cell"] for r in records]),
        # the judged passages of each query, found or not (nDCG's ideal ranking counts the ones not retrieved)
        judged=np.array([json.dumps(r["rel"]) for r in records]), measured=np.array(json.dumps(measured)),
        # the columns of X by name: fit_ranker.py picks its columns by name, so records outlive a feature dropped
        # or moved since they were made
        features=np.array(FEATURES))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-queries", type=int, default=0)
    ap.add_argument("--sets", nargs="*", default=None, help="tuning sets (default: the shared and tuning sets)")
    ap.add_argument("--no-mixed", action="store_true")
    ap.add_argument("--fusions", nargs="*", default=list(FUSIONS), help="fusion methods to fit (default: all)")
    ap.add_argument("--dense-background", choices=typing.get_args(DenseBackground), default="corpus",
                    help="what calibrated fusion measures a cosine from (search.dense_background)")
    ap.add_argument("--glossary-weight", type=float, default=None, help="search.glossary_weight (to compare)")
    ap.add_argument("--expansion-weight", type=float, default=None, help="lexicon.expansion_weight (to compare)")
    ap.add_argument("--translate-weight", type=float, default=None,
                    help="search.xling_translate_weight (to compare)")
    ap.add_argument("--ranker", action="store_true",
                    help="also fit the learned linear ranker (first --fusions method) and report it the same way")
    ap.add_argument("--link-weight", type=float, default=None, help="search.link_weight (to compare)")
    ap.add_argument("--json", type=Path, default=None, help="write the figures here (with the commit measured)")
    ap.add_argument("--config", type=Path, default=None,
                    help="start from this config file (hanrag.toml) instead of the defaults (a setting to compare)")
    ap.add_argument("--records", type=Path, default=None,
                    help="write every query run's candidates and features (first --fusions method) to this .npz, "
                         "for benchmarks/fit_ranker.py")
    args = ap.parse_args()
    measured = measured_what()
    cfg = load_config(args.config, env=False) if args.config else Config()
    cfg.search.dense_background = args.dense_background
    # the protocol fits the rule table and records its candidates for benchmarks/fit_ranker.py: the learned ranker
    # (trained from those records, on by default) stays out of the runs it learns from
    cfg.search.ranker = ""
    if args.glossary_weight is not None:
        cfg.search.glossary_weight = args.glossary_weight
    if args.expansion_weight is not None:
        cfg.lexicon.expansion_weight = args.expansion_weight
    if args.translate_weight is not None:
        cfg.search.xling_translate_weight = args.translate_weight
    if args.link_weight is not None:
        cfg.search.link_weight = args.link_weight
    emb = caching_embedder(cfg)
    names = available(args.sets or [*SHARED_SETS, *TUNE_SETS])
    shared = {n: first_queries(load(n), args.max_queries) for n in names}
    indexes = []
    for n in names:
        build(n, [shared[n]], cfg, emb)
        indexes.append((n, Index(INDEX_ROOT / n, cfg, embedder=emb), [shared[n]]))
    if not args.no_mixed:
        # the MIXED index of quality.py plus the tuning corpora, and every tuning query runs there too: a cross-language
        # tuning query (tune_en2ko_tech) meets the same-language distractors it would meet in a mixed collection.
        # tune_en2ko_tech shares tune_ko_tech's corpus: near-duplicate folding keeps one copy of each passage, whose
        # doc id (without the set prefix) both sets' judgments name
        mixed_names = available([*MIXED_SETS, *(n for n in names if n in TUNE_SETS)])
        build("MIXED-FIT", [shared.get(n) or load(n) for n in mixed_names], cfg, emb)
        emb.save()
        mixed_idx = Index(INDEX_ROOT / "MIXED-FIT", cfg, embedder=emb)
        indexes.append(("MIXED", mixed_idx, [shared[n] for n in names if n in mixed_names]))

    results = {}
    held_by: dict[str, dict[str, float]] = {}
    records_by: dict[str, list[dict]] = {}
    for fusion in args.fusions:
        records = []
        for where, idx, sets in indexes:
            for r in collect(idx, cfg, sets, emb, fusion):
                r["set"] = f"{where}:{r['set']}" if where == "MIXED" else r["set"]
                records.append(r)
        records_by[fusion] = records
        cells = sorted({r["cell"] for r in records})
        # a set's queries run standalone and in MIXED: both leave together (no query is in train and test)
        base = {r["set"]: r["set"].removeprefix("MIXED:") for r in records}
        groups = sorted(set(base.values()))
        print(f"\n== fusion {fusion}: {len(records)} query runs, cells {cells}")
        held = {}
        for g in groups:
            train = [r for r in records if base[r["set"]] != g]
            test = [r for r in records if base[r["set"]] == g]
            alphas = choose(train, cells)
            held[g] = evaluate(test, alphas)
            print(f"  held out {g:<28} nDCG@10 {held[g]:.3f}  with α (dense weight) chosen on the rest: {alphas}")
        final = choose(records, cells)
        # in-sample (the weights saw these sets): only to compare configurations that choose the same weights
        print("  in-sample, weights chosen on all:", ", ".join(
            f"{g} {evaluate([r for r in records if base[r['set']] == g], final):.3f}" for g in groups))
        results[fusion] = (float(np.mean(list(held.values()))), final)
        held_by[fusion] = held
        print(f"  mean held-out nDCG@10 {results[fusion][0]:.4f}; chosen on all tuning sets: {final}")
    if args.records:
        save_records(args.records, records_by[args.fusions[0]], measured)
    ranker = None
    if args.ranker:
        fusion = args.fusions[0]
        records = records_by[fusion]
        base = {r["set"]: r["set"].removeprefix("MIXED:") for r in records}
        held_model = {}
        for g in sorted(set(base.values())):
            w = fit_ranker([r for r in records if base[r["set"]] != g])
            held_model[g] = float(np.mean([model_score(r, w) for r in records if base[r["set"]] == g]))
            print(f"  learned ranker, held out {g:<28} nDCG@10 {held_model[g]:.3f} "
                  f"(rule table {held_by[fusion][g]:.3f})")
        w_all = fit_ranker(records)
        ranker = {"mean_held_out_ndcg@10": float(np.mean(list(held_model.values()))), "held_out": held_model,
                  "weights": {f: round(float(x), 6) for f, x in zip(FEATURES, w_all, strict=True)}}
        print(f"  learned ranker: mean held-out nDCG@10 {ranker['mean_held_out_ndcg@10']:.4f} "
              f"(rule table, {fusion}: {results[fusion][0]:.4f}); weights on all: {ranker['weights']}")
    best = max(results, key=lambda f: results[f][0])
    print(f"\nfusion with the best mean held-out nDCG@10: {best} {results[best]}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            **measured, "command": " ".join(sys.argv), "metric": "mean leave-one-set-out nDCG@10 (hanrag.eval)",
            "judgments": JUDGMENTS,
            "settings": {"dense_background": cfg.search.dense_background,
                         "glossary_weight": cfg.search.glossary_weight,
                         "expansion_weight": cfg.lexicon.expansion_weight,
                         "xling_translate_weight": cfg.search.xling_translate_weight,
                         "link_weight": cfg.search.link_weight,
                         "language_neutral_query": cfg.search.language_neutral_query,
                         "xling_compete": cfg.search.xling_compete,
                         "xling_compete_share": cfg.search.xling_compete_share,
                         "xling_calibration": cfg.search.xling_calibration,
                         "xling_compete_by_evidence": cfg.search.xling_compete_by_evidence,
                         "xling_lexical_parity": cfg.search.xling_lexical_parity,
                         "xling_centring_by_script": cfg.search.xling_centring_by_script,
                         "bm25_headings": cfg.bm25.headings, "embed_headings": cfg.embedder.headings},
            "fusions": {f: {"mean_held_out_ndcg@10": m, "held_out": held_by[f], "chosen_on_all": final}
                        for f, (m, final) in results.items()},
            "learned_ranker": ranker,
        }, indent=1))


if __name__ == "__main__":
    main()
