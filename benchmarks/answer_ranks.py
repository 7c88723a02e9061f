"""Where a mixed index puts each question's judged answer, and what outranks it (a diagnostic, issue 26).

For every query of the named sets, searched in the index ``quality.py --mixed-sets`` builds (default config,
top 50 with explanations): the rank band of the best judged answer (top 3, 4-10, 11-50, not in 50), the rule the
query took, and for an answer below rank 3 whether the top hit is in the question's own language and whether the
answer's normalised BM25 / dense score is below the top hit's. Original judgments only.

    python benchmarks/answer_ranks.py --mixed-sets tune_ko2en_react tune_en2ko_react \
        --json benchmarks/results/answer-ranks-react.json
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

from evalsets import INDEX_ROOT, available, build, caching_embedder, load, measured_what

from hanrag.api import Index
from hanrag.config import Config


def band(rank: int | None) -> str:
    if rank is None:
        return "not in 50"
    return "top 3" if rank < 3 else "4-10" if rank < 10 else "11-50"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mixed-sets", nargs="+", required=True)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    measured = measured_what()
    cfg = Config()
    emb = caching_embedder(cfg)
    members = available(args.mixed_sets)
    name = "MIXED-" + "+".join(members)
    sets = [load(n) for n in members]
    build(name, sets, cfg, emb)
    emb.save()
    index = Index(INDEX_ROOT / name, cfg, embedder=emb)
    report: dict[str, dict] = {}
    for es in sets:
        bands: collections.Counter[str] = collections.Counter()
        rules: collections.Counter[str] = collections.Counter()
        below: collections.Counter[str] = collections.Counter()
        for q in es.queries:
            relevant = {f"{es.name}/{d}" for d, g in es.qrels.get(q.qid, {}).items() if g > 0}
            res = index.search_result(q.text, top_k=50, explain=True)
            rules[res.plan.rule] += 1
            rank = next((i for i, h in enumerate(res.hits) if h.chunk.doc_id in relevant), None)
            bands[band(rank)] += 1
            if rank is not None and rank >= 3:
                top, ans = res.hits[0], res.hits[rank]
                below["answers below rank 3"] += 1
                below["top hit in the question's language"] += top.chunk.lang == res.plan.lang
                below["answer's BM25 below the top hit's"] += (ans.explanation.bm25_norm or 0) < (
                    top.explanation.bm25_norm or 0)
                below["answer's dense below the top hit's"] += (ans.explanation.dense_norm or 0) < (
                    top.explanation.dense_norm or 0)
        report[es.name] = {"queries": len(es.queries), "answer_rank": dict(bands), "rules": dict(rules),
                           "below_rank_3": dict(below)}
        print(es.name, json.dumps(report[es.name], ensure_ascii=False))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**measured, "command": " ".join(sys.argv), "index": name,
                                         "sets": report}, indent=1) + "\n")


if __name__ == "__main__":
    main()
