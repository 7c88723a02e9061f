"""Learned rankers against the rule table, under ``benchmarks/fit.py``'s protocol (leave one tuning set out).

Reads the query runs ``fit.py --records`` wrote (every candidate's features from
:meth:`hanrag.search.searcher.Searcher.ranking_features`, its normalised BM25 and dense scores, its judgment) and
compares, per held-out tuning set, nDCG@10 (:func:`hanrag.eval.query_metrics`, the metric of ``hanrag eval``) of:

* the rule table: per rule cell the dense weight chosen on the other sets (``fit.choose``);
* ``linear``: the pairwise-logistic linear model of ``fit.py --ranker``;
* ``lambdarank``: LightGBM's LambdaMART (gradient-boosted trees optimising nDCG@10), small and regularised;
* ``lambdarank-residual``: the same trees started from the rule table's score (LightGBM ``init_score``), so they
  learn corrections to the table rather than a ranking from nothing;
* ``lambdarank-residual, language order kept``: those trees as a search runs them, the candidates in the query's
  language keeping the rule table's order among themselves (:func:`hanrag.search.ranker.keep_language_order`).

The rule table's fused score is a feature of both models; in each fold it is recomputed with the weights chosen
on that fold's training sets, so no model sees weights chosen on the set it is scored on.

    python benchmarks/fit.py --fusions calibrated --dense-background language --records R.npz
    python benchmarks/fit_ranker.py R.npz --json benchmarks/results/fit-ranker.json \
        --export hanrag/rankers/lambdamart.json

``--export`` trains ``lambdarank-residual`` once more on every tuning set, the rule column from the shipped rule
table (what a search computes), and writes it as hanrag's JSON model (:func:`hanrag.search.ranker.from_lightgbm`):
the bundled ``search.ranker = "lambdamart"``. The model says how a search runs it: as trained when the protocol
prefers that row to the kept order (a higher mean, within the guard), else with the language order kept. LightGBM
is needed only here (the ``test`` extra), not by hanrag.

``--seed`` is LightGBM's draw of the features each tree sees; ``--ensemble K`` makes the residual trees the mean of
K boosters (seeds ``--seed`` … ``--seed + K - 1``; each also reported alone as ``lambdarank-residual, seed S``),
exported as one model of K times the trees. Records name their feature columns (``fit.py``) and are read by name,
so records made with a feature since dropped or moved still load.

``--train-without SET …`` keeps those tuning sets out of every fold's training and out of ``--export``, while each
is still scored held out: against a run without the option, on the same records, it says what a set's data adds
to the trees (the TypeScript pair's, docs/evaluation.md).

``--score-also B.npz …`` scores other versions' records (the same queries, fit.py run on other code) with each
fold's rule weights and trees, trained on the first records only. Two versions then meet the same model, so the
difference is the change's alone, not the trees' draw (which moves a retrained mean by about ±.001, more than a
change to a few dozen queries' evidence does); ``also`` in the JSON holds, per version, its held-out rows and, per
set, how many queries the change moved and by how much on average.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from evalsets import fit_judgments, load
from fit import JUDGMENTS, SHIPPED, choose, fit_ranker

from hanrag.eval import query_metrics
from hanrag.search.ranker import FEATURES, from_lightgbm, keep_language_order

RULE_COLUMN = FEATURES.index("rule_fused")
SAME_COLUMN = FEATURES.index("same_language")
MAX_SET_LOSS = 0.01  # nDCG@10 a held-out tuning set may lose to a ranker that replaces the rule table
KEPT = "lambdarank-residual, language order kept"  # the residual trees, the query language keeping the table's order
HEAD = 50  # candidates a learned ranker reorders (the rule table's top 50; nDCG@10 reads the top 10)
RULE_SCALE = 10.0  # the residual trees start from this times the rule table's score (LightGBM init_score)


def load_records(path: Path) -> tuple[list[dict], dict]:
    with np.load(path, allow_pickle=False) as npz:
        z = {k: npz[k] for k in npz.files}  # each npz[k] decompresses its array again: read every one once
    z["X"] = feature_columns(z["X"], [str(f) for f in z["features"]] if "features" in z else None, path)
    starts = np.searchsorted(z["query"], np.arange(len(z["set"]) + 1))
    records = []
    for q in range(len(z["set"])):
        a, b = starts[q], starts[q + 1]
        records.append({"set": str(z["set"][q]), "cell": str(z["cell"][q]), "rel": json.loads(str(z["judged"][q])),
                        "docs": [str(d) for d in z["doc"][a:b]], "X": z["X"][a:b].copy(), "bn": z["bn"][a:b],
                        "dn": z["dn"][a:b], "grade": z["grade"][a:b]})
        if "qid" in z:
            records[-1]["qid"] = str(z["qid"][q])
    return rejudged(records), json.loads(str(z["measured"]))


def feature_columns(X: np.ndarray, names: list[str] | None, path: Path) -> np.ndarray:
    """The records' feature matrix with :data:`FEATURES`' columns in order: picked by name from records that name
    them (``fit.py`` since the feature names were stored), so records made with one feature more or in another order
    are read; records without names must have exactly this hanrag's columns."""
    if names is None:
        if X.shape[1] != len(FEATURES):
            raise SystemExit(f"{path}: records of {X.shape[1]} features without their names, this hanrag has "
                             f"{len(FEATURES)}: run fit.py again")
        return X
    missing = [f for f in FEATURES if f not in names]
    if missing:
        raise SystemExit(f"{path}: records without the features {', '.join(missing)}: run fit.py again")
    return X[:, [names.index(f) for f in FEATURES]]


def rejudged(records: list[dict]) -> list[dict]:
    """The records judged with the judgments in force now (``evalsets.fit_judgments``: a set's own and its pooled
    ones), so passages judged after ``fit.py`` ran count. A set's runs alone and in MIXED share its judgments."""
    judged: dict[str, dict[str, dict[str, int]]] = {}
    for r in records:
        if "qid" not in r:
            raise SystemExit(f"{r['set']}: records without qids (written before fit.py stored them): run fit.py again")
        base = r["set"].removeprefix("MIXED:")
        if base not in judged:
            judged[base] = fit_judgments(load(base))
        r["rel"] = judged[base].get(r["qid"], {})
        r["grade"] = np.array([r["rel"].get(d, 0) for d in r["docs"]], dtype=np.int8)
    return records


def ranked_docs(rec: dict, scores: np.ndarray) -> list[str]:
    """The record's documents, best score first, each once (a document's best chunk places it)."""
    return list(dict.fromkeys(rec["docs"][i] for i in np.argsort(-scores, kind="stable")))


def ndcg(rec: dict, scores: np.ndarray) -> float:
    return query_metrics(ranked_docs(rec, scores), rec["rel"])[0]


def with_rule(records: list[dict], alphas: dict[str, float]) -> list[dict]:
    """The records with the rule-table column recomputed from the given per-cell dense weights."""
    out = []
    for r in records:
        a = alphas.get(r["cell"], SHIPPED.get(r["cell"], 0.6))
        fused = (1 - a) * r["bn"] + a * r["dn"]
        X = r["X"].copy()
        X[:, RULE_COLUMN] = fused
        out.append({**r, "X": X, "fused": fused})
    return out


def _head(rec: dict, n: int = HEAD) -> dict:
    """The rule table's top ``n`` candidates: what a ranker is trained on and reorders. Not "the top n and every
    judged one": judged passages from the tail would teach a model that a low rule score means relevant (every
    negative it saw was in the head), and it would then lift the whole unjudged tail at search time."""
    keep = np.argsort(-rec["fused"], kind="stable")[:n]
    return {**rec, "X": rec["X"][keep], "grade": rec["grade"][keep], "fused": rec["fused"][keep],
            "bn": rec["bn"][keep], "dn": rec["dn"][keep], "docs": [rec["docs"][i] for i in keep]}


def query_ndcgs(test: list[dict], head_scores: list[np.ndarray]) -> list[float]:
    """Each held-out query's nDCG@10 with its head in the order of its scores (:func:`reordered`)."""
    return [ndcg(r, reordered(r, s)) for r, s in zip(test, head_scores, strict=True)]


def mean_ndcg(test: list[dict], head_scores: list[np.ndarray]) -> float:
    """The held-out set's mean nDCG@10 with each query's head in the order of its scores."""
    return float(np.mean(query_ndcgs(test, head_scores)))


def reordered(rec: dict, head_scores: np.ndarray) -> np.ndarray:
    """Scores for every candidate: the head in the model's order, above the tail in the rule table's order."""
    order = np.argsort(-rec["fused"], kind="stable")
    out = np.empty(len(order))
    n = len(head_scores)
    rank_in_head = np.argsort(np.argsort(-head_scores, kind="stable"), kind="stable")
    out[order[:n]] = 2.0 * len(order) - rank_in_head
    out[order[n:]] = len(order) - np.arange(len(order) - n)
    return out


# the bundled trees' size (--leaves, --min-leaf, --rounds)
TREES = {"num_leaves": 7, "min_data_in_leaf": 40, "rounds": 150}


def train_lambdarank(records: list[dict], residual: bool, seed: int = 0, trees: dict[str, int] = TREES):
    import lightgbm as lgb

    usable = [r for r in records if r["grade"].any()]
    X = np.vstack([r["X"] for r in usable])
    y = np.concatenate([r["grade"] for r in usable]).astype(int)
    group = [len(r["grade"]) for r in usable]
    init = np.concatenate([r["fused"] for r in usable]) * RULE_SCALE if residual else None
    data = lgb.Dataset(X, y, group=group, init_score=init, feature_name=list(FEATURES), free_raw_data=False)
    params = {"objective": "lambdarank", "metric": "ndcg", "ndcg_eval_at": [10], "lambdarank_truncation_level": 20,
              "num_leaves": trees["num_leaves"], "min_data_in_leaf": trees["min_data_in_leaf"], "learning_rate": 0.05,
              "feature_fraction": 0.9, "lambda_l2": 1.0, "verbose": -1, "seed": seed, "num_threads": 2,
              "deterministic": True}
    return lgb.train(params, data, num_boost_round=trees["rounds"])


class Ensemble:
    """Boosters trained alike under different seeds, predicting their mean: the draw of features each tree sees
    (``feature_fraction``) averaged out rather than one draw shipped."""

    def __init__(self, models: list) -> None:
        self.models = models

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.mean([m.predict(X) for m in self.models], axis=0)

    def dump_model(self) -> dict:
        """One dump holding every booster's trees, each value over their number: a model predicts the sum of its
        trees, so the sum of these is the mean of the boosters (as :func:`from_lightgbm` reads a dump)."""
        dumps = [m.dump_model() for m in self.models]
        k = float(len(dumps))

        def scaled(node: dict) -> dict:
            out = dict(node)
            for key in ("leaf_value", "internal_value"):
                if key in out:
                    out[key] = out[key] / k
            for child in ("left_child", "right_child"):
                if child in out:
                    out[child] = scaled(out[child])
            return out

        return {**dumps[0], "tree_info": [{**t, "tree_structure": scaled(t["tree_structure"])}
                                          for d in dumps for t in d["tree_info"]]}


def train_ensemble(records: list[dict], residual: bool, seed: int = 0, size: int = 1,
                   trees: dict[str, int] = TREES):
    """:func:`train_lambdarank` under seeds ``seed`` … ``seed + size - 1``; one booster when ``size`` is 1."""
    if size == 1:
        return train_lambdarank(records, residual, seed, trees)
    return Ensemble([train_lambdarank(records, residual, seed + i, trees) for i in range(size)])


def score_model(model, rec: dict, residual: bool) -> np.ndarray:
    s = model.predict(rec["X"])
    return s + rec["fused"] * RULE_SCALE if residual else s


def language_order_kept(rec: dict, head_scores: np.ndarray) -> np.ndarray:
    """The head's scores as a search uses them: the query-language candidates keep the rule table's order among
    themselves (:func:`hanrag.search.ranker.keep_language_order`)."""
    return keep_language_order(head_scores, rec["fused"], rec["X"][:, SAME_COLUMN] > 0.5)


def preferred(model: dict[str, float], table: dict[str, float]) -> bool:
    """The protocol's test for a new default: better on the mean and not much worse on any set (a mean can rise
    on a few sets' gains while the users of another lose; the same guard chose search.xling_translate_weight)."""
    worst = min(model[g] - table[g] for g in table)
    return float(np.mean(list(model.values()))) > float(np.mean(list(table.values()))) and worst >= -MAX_SET_LOSS


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", type=Path)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--export", type=Path, default=None,
                    help="write lambdarank-residual trained on every tuning set as hanrag's JSON model")
    ap.add_argument("--without", nargs="*", default=[], choices=FEATURES, metavar="FEATURE",
                    help="train with these features held constant (the trees never read them): a variant to compare")
    ap.add_argument("--leaves", type=int, default=TREES["num_leaves"], help="leaves per tree")
    ap.add_argument("--min-leaf", type=int, default=TREES["min_data_in_leaf"], help="candidates a leaf holds at least")
    ap.add_argument("--rounds", type=int, default=TREES["rounds"], help="trees")
    ap.add_argument("--seed", type=int, default=0,
                    help="LightGBM's seed (which features and rows each tree sees): another seed measures how much "
                         "of a difference between two runs is the draw")
    ap.add_argument("--train-without", nargs="*", default=[], metavar="SET",
                    help="tuning sets no fold (nor --export) trains on, still each scored held out: what the trees "
                         "gain from a set's data is this run against one without the option")
    ap.add_argument("--ensemble", type=int, default=1,
                    help="the residual trees as the mean of this many boosters, seeds --seed, --seed + 1, …")
    ap.add_argument("--score-also", type=Path, nargs="*", default=[], metavar="B.npz",
                    help="other versions' records of the same queries, scored held out by the same folds' "
                         "weights and trees (trained on RECORDS only): a change measured without the trees' draw")
    args = ap.parse_args()
    if args.ensemble < 1:
        ap.error(f"--ensemble must be at least 1, got {args.ensemble}")
    trees = {"num_leaves": args.leaves, "min_data_in_leaf": args.min_leaf, "rounds": args.rounds}
    for path in (args.records, *args.score_also):
        if not path.is_file():
            ap.error(f"no records file {path} (fit.py --records writes one)")
    records, measured = load_records_without(args.records, args.without)
    cells = sorted({r["cell"] for r in records})
    base = {r["set"]: r["set"].removeprefix("MIXED:") for r in records}
    try:
        trainable = training_records(records, args.train_without)
    except ValueError as e:
        ap.error(f"--train-without: {e}")
    versions: list[tuple[list[dict], dict]] = []  # --score-also: (records, what the JSON says of them)
    for path in args.score_also:
        other, other_measured = load_records_without(path, args.without)
        try:
            same_queries(records, other)
        except ValueError as e:
            ap.error(f"--score-also {path}: {e}")
        versions.append((other, {"records": str(path), "commit": other_measured.get("commit"),
                                 "uncommitted_changes": other_measured.get("uncommitted_changes"),
                                 "held_out": {}, "moved": {}}))
    rows: dict[str, dict[str, float]] = {"rule table": {}, "linear": {}, "lambdarank": {}, "lambdarank-residual": {},
                                         KEPT: {}}
    for g in sorted(set(base.values())):
        t0 = time.perf_counter()
        train = [r for r in trainable if base[r["set"]] != g]
        alphas = choose(train, cells)
        train, test = with_rule(train, alphas), with_rule([r for r in records if base[r["set"]] == g], alphas)
        rows["rule table"][g] = float(np.mean([ndcg(r, r["fused"]) for r in test]))
        heads = [_head(r) for r in train]
        w = fit_ranker(heads)
        test_heads = [_head(r) for r in test]
        rows["linear"][g] = mean_ndcg(test, [h["X"] @ w for h in test_heads])
        plain = train_lambdarank(heads, False, args.seed, trees)
        rows["lambdarank"][g] = mean_ndcg(test, [score_model(plain, h, False) for h in test_heads])
        model = train_ensemble(heads, True, args.seed, args.ensemble, trees)
        scores = [score_model(model, h, True) for h in test_heads]
        per_query = query_ndcgs(test, scores)
        rows["lambdarank-residual"][g] = float(np.mean(per_query))
        # an ensemble's boosters one by one: the single draws its mean is compared with, from the same run
        for i, member in enumerate(getattr(model, "models", [])):
            rows.setdefault(f"lambdarank-residual, seed {args.seed + i}", {})[g] = mean_ndcg(
                test, [score_model(member, h, True) for h in test_heads])
        # the residual trees' scores as a search uses them
        rows[KEPT][g] = mean_ndcg(test, [language_order_kept(h, sc) for h, sc in zip(test_heads, scores, strict=True)])
        for other, also in versions:
            held, moved = scored_alike(model, per_query, with_rule([r for r in other if base[r["set"]] == g], alphas))
            for k, v in held.items():
                also["held_out"].setdefault(k, {})[g] = v
            also["moved"][g] = moved
            print(f"  {Path(also['records']).name}: " + "  ".join(f"{k} {v:.3f}" for k, v in held.items())
                  + f"  ({moved['queries']} queries moved, {moved['mean_change']:+.3f} each)", flush=True)
        print(f"held out {g:<24} " + "  ".join(f"{k} {v[g]:.3f}" for k, v in rows.items())
              + f"  ({time.perf_counter() - t0:.0f} s)", flush=True)
    means = {k: float(np.mean(list(v.values()))) for k, v in rows.items()}
    print("mean held-out nDCG@10: " + ", ".join(f"{k} {m:.4f}" for k, m in means.items()))
    verdict = {k: preferred(rows[k], rows["rule table"]) for k in rows if k != "rule table"}
    print("replaces the rule table (higher mean, no set losing more than "
          f"{MAX_SET_LOSS}): " + ", ".join(f"{k} {v}" for k, v in verdict.items()))
    for _, also in versions:
        also["mean_held_out_ndcg@10"] = {k: float(np.mean(list(v.values()))) for k, v in also["held_out"].items()}
        print(f"{Path(also['records']).name}, the same folds' models: " + ", ".join(
            f"{k} {m:.4f}" for k, m in also["mean_held_out_ndcg@10"].items()))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            **measured, "command": " ".join(sys.argv), "records": str(args.records), "without": args.without,
            "metric": "mean leave-one-set-out nDCG@10 (hanrag.eval), every query of a set weighing the same",
            "trees": trees, "seed": args.seed, "ensemble": args.ensemble, "train_without": args.train_without,
            "judgments": JUDGMENTS,
            "mean_held_out_ndcg@10": means, "held_out": rows,
            "rule": "a ranker replaces the rule table when its mean is higher and no set loses more than "
                    f"{MAX_SET_LOSS}",
            "replaces_rule_table": verdict, **({"also": [a for _, a in versions]} if versions else {})}, indent=1))
    if args.export:
        export(trainable, measured, means, args.export, keep_order(means, verdict), trees, args.seed, args.ensemble)


def load_records_without(path: Path, without: list[str]) -> tuple[list[dict], dict]:
    """:func:`load_records`, the ``--without`` features zeroed in every candidate (each version alike)."""
    records, measured = load_records(path)
    for r in records:
        r["X"][:, [FEATURES.index(f) for f in without]] = 0.0
    return records, measured


def same_queries(records: list[dict], other: list[dict]) -> None:
    """Two versions' records are comparable query by query: the same (set, qid) runs in the same order."""
    a, b = [(r["set"], r["qid"]) for r in records], [(r["set"], r["qid"]) for r in other]
    if a != b:
        diff = next((x, y) for x, y in zip(a, b, strict=False) if x != y) if len(a) == len(b) else None
        raise ValueError(f"not the same query runs ({len(a)} and {len(b)}" + (f"; first apart: {diff}" if diff else "")
                         + "): run fit.py with the same sets on both versions")


def scored_alike(model, mine: list[float], other: list[dict]) -> tuple[dict[str, float], dict[str, float]]:
    """The held-out rows of ``other`` (another version's records of the held-out queries, its rule column
    recomputed with the fold's weights) under the fold's model, and what the change did to the residual trees per
    query against ``mine`` (each query's nDCG@10 on the first records): how many queries it moved and their mean
    change (0 when none moved)."""
    heads = [_head(r) for r in other]
    scores = [score_model(model, h, True) for h in heads]
    theirs = query_ndcgs(other, scores)
    held = {"rule table": float(np.mean([ndcg(r, r["fused"]) for r in other])),
            "lambdarank-residual": float(np.mean(theirs)),
            KEPT: mean_ndcg(other, [language_order_kept(h, sc) for h, sc in zip(heads, scores, strict=True)])}
    changes = [b - a for a, b in zip(mine, theirs, strict=True) if b != a]
    return held, {"queries": len(changes), "mean_change": float(np.mean(changes)) if changes else 0.0}


def training_records(records: list[dict], without: list[str]) -> list[dict]:
    """The records a fold may train on: all but those of the tuning sets named (alone and in MIXED-FIT); a name
    with no records is an error, since a misspelt set would silently measure nothing."""
    sets = {r["set"].removeprefix("MIXED:") for r in records}
    unknown = sorted(set(without) - sets)
    if unknown:
        raise ValueError(f"no records of {', '.join(unknown)}")
    return [r for r in records if r["set"].removeprefix("MIXED:") not in without]


def keep_order(means: dict[str, float], verdict: dict[str, bool]) -> bool:
    """How the exported trees are run: with the query language's order kept unless the protocol prefers them as
    trained (the plain residual row passes the guard and its mean is higher)."""
    plain = "lambdarank-residual"
    return not (verdict[plain] and means[plain] > means[KEPT])


def export(records: list[dict], measured: dict, means: dict[str, float], path: Path, keep: bool,
           trees: dict[str, int], seed: int = 0, ensemble: int = 1) -> None:
    """Train the residual trees on every tuning set's head, the rule column from the shipped weights (the rule
    table a search runs), and write them as hanrag's model, run with the query language's order kept or not."""
    heads = [_head(r) for r in with_rule(records, {})]
    model = train_ensemble(heads, True, seed, ensemble, trees)
    trained = {**{k: measured[k] for k in ("commit", "uncommitted_changes", "date") if k in measured},
               "command": " ".join(sys.argv), "sets": sorted({r["set"] for r in records}),
               "queries": len(records), "objective": "LightGBM lambdarank, init score = rule_scale x rule_fused",
               "mean_held_out_ndcg@10": {k: round(v, 4) for k, v in means.items()},
               "run": KEPT if keep else "lambdarank-residual", "trees": trees, "seed": seed,
               "ensemble": ensemble}
    out = from_lightgbm(model.dump_model(), FEATURES, RULE_SCALE, HEAD, trained, keep_language_order=keep)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {path}: {len(out['trees'])} trees, {path.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
