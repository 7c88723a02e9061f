"""Pool the unjudged top-10 passages of the fitting protocol's runs on the tuning sets, for judging by reading.

``fit_ranker.py`` decides between the rule table and a learned ranker on the tuning sets' judgments. Those were
found by grepping each set's own corpus, so a passage that answers but was never read counts as wrong, standalone
and more so in fit.py's MIXED-FIT index, where a Korean Kubernetes question of tune_ko_tech meets the Korean and
English Kubernetes pages of the other sets. A ranker that lifts such passages would be scored down for it. This
script takes the records of ``fit.py --records`` and, for every tuning set of eval/ (``evalsets.TUNE_SETS``) held
out in turn as ``fit_ranker.py`` holds it out, the top 10 of the rule table (weights chosen on the other sets) and
of ``lambdarank-residual`` (trained on the other sets; as trained, and as a search runs it, the query language's
order kept), standalone and in MIXED-FIT; every passage there that the
set's judgments (its own and its pooled ones) do not name joins ``eval/pooled/pool-<set>.jsonl`` (qid, query, doc as
the pooled judgments name it, the whole passage, the rows that ranked it) for a reader to judge into
``eval/pooled/<set>.tsv``, as ``benchmarks/pool.py`` does for the product path. Both rows are pooled to the same
depth, so the comparison is then made on judgments complete for either.

    python benchmarks/pool_fit.py R.npz [--sets tune_ko_tech ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalsets import MIXED_SETS, TUNE_SETS, available, load, read_pool, write_pool
from fit import choose
from fit_ranker import (
    _head,
    language_order_kept,
    load_records,
    ranked_docs,
    reordered,
    score_model,
    train_lambdarank,
    with_rule,
)

DEPTH = 10


def owners(names: list[str]) -> dict[str, tuple[str, str]]:
    """doc id -> (the first set holding it, its text), over every set fit.py's indexes hold."""
    out: dict[str, tuple[str, str]] = {}
    for n in names:
        for d in load(n).docs:
            out.setdefault(d.doc_id, (n, d.text))
    return out


def pooled_name(doc: str, own: set[str], owner: dict[str, tuple[str, str]]) -> str:
    """The passage as ``eval/pooled/<set>.tsv`` names it: its bare id in the set's own corpus, else
    ``other:<set>/<id>`` (as :func:`hanrag.eval.run_doc_id` names it in a merged index)."""
    return doc if doc in own else f"other:{owner[doc][0]}/{doc}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", type=Path)
    ap.add_argument("--sets", nargs="*", default=None, help="tuning sets to pool (default: evalsets.TUNE_SETS)")
    args = ap.parse_args()
    records, _ = load_records(args.records)
    cells = sorted({r["cell"] for r in records})
    base = {r["set"]: r["set"].removeprefix("MIXED:") for r in records}
    wanted = [g for g in (args.sets or TUNE_SETS) if g in set(base.values())]
    owner = owners(available([*MIXED_SETS, *sorted(set(base.values()))]))
    for g in wanted:
        es = load(g)
        own = {d.doc_id for d in es.docs}
        queries = {q.qid: q.text for q in es.queries}
        train = [r for r in records if base[r["set"]] != g]
        alphas = choose(train, cells)
        train, test = with_rule(train, alphas), with_rule([r for r in records if base[r["set"]] == g], alphas)
        model = train_lambdarank([_head(r) for r in train], residual=True)
        pool = read_pool(g)
        before = len(pool)
        for r in test:
            where = "MIXED-FIT" if r["set"].startswith("MIXED:") else "alone"
            trees = score_model(model, _head(r), True)
            runs = {"rule table": r["fused"], "learned ranker": reordered(r, trees),
                    "learned ranker, language order kept": reordered(r, language_order_kept(_head(r), trees))}
            for label, scores in runs.items():
                for doc in ranked_docs(r, scores)[:DEPTH]:
                    if doc in r["rel"]:
                        continue
                    name = pooled_name(doc, own, owner)
                    entry = pool.setdefault((r["qid"], name), {"qid": r["qid"], "query": queries[r["qid"]],
                                                              "doc": name, "text": owner[doc][1], "rows": []})
                    if (row := f"fit {where}: {label}") not in entry["rows"]:
                        entry["rows"].append(row)
        path = write_pool(g, pool)
        print(f"{g}: {len(pool) - before} new unjudged passages in the top {DEPTH} of the rule table and the "
              f"learned ranker (held out, alone and in MIXED-FIT) -> {path} ({len(pool)} in all)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
