"""Pool the MIXED index's unjudged top-10 passages for judging by reading (pooled judgments, issue 26).

In the MIXED index (every corpus in one collection, ``quality.py``) a query meets passages of other sets, some of
which answer it: a Korean question of ko2en_tech over English Kubernetes pages also finds the Korean Kubernetes
pages of en2ko_tech. The original judgments count them wrong. This script runs the named rows over the named sets
in MIXED and writes, per set, every passage in any row's top 10 that the set's judgments do not name —
``eval/pooled/pool-<set>.jsonl`` (qid, query, doc as the run names it, the whole passage's text; joined to the
passages pooled before, which the file keeps) — for a reader to judge
into ``eval/pooled/<set>.tsv`` (``qid  doc  grade  reason``; grade 0 = does not answer). ``quality.py --pooled``
then reports MIXED with the original judgments and with the pooled ones.

    python benchmarks/pool.py --sets ko2en_tech en2ko_tech [--rows bm25 dense "hanrag default"]
    python benchmarks/pool.py --sets tune_ko2en_react tune_en2ko_react --mixed-sets tune_ko2en_react tune_en2ko_react

``--mixed-sets`` names the sets merged into the mixed index, as ``quality.py --mixed-sets`` does (index
"MIXED-" + "+".join(sets); default ``evalsets.MIXED_SETS``, index "MIXED"), so both scripts run the same index.
"""

from __future__ import annotations

import argparse
import sys

from evalsets import INDEX_ROOT, MIXED_SETS, available, build, caching_embedder, load, read_pool, tasks, write_pool
from quality import rows

from hanrag.api import Index
from hanrag.config import Config
from hanrag.eval import run_doc_id
from hanrag.search.searcher import Searcher


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", nargs="+", required=True)
    ap.add_argument("--rows", nargs="*", default=["bm25", "dense", "hanrag default"])
    ap.add_argument("--depth", type=int, default=10)
    ap.add_argument("--mixed-sets", nargs="*", default=None,
                    help="the sets merged into the mixed index, as in quality.py (default: evalsets.MIXED_SETS, "
                         "index MIXED; else index MIXED-<set>+<set>...)")
    args = ap.parse_args()
    cfg = Config()
    emb = caching_embedder(cfg)
    members = available(list(args.mixed_sets or MIXED_SETS))
    name = "MIXED" if args.mixed_sets is None else "MIXED-" + "+".join(members)  # the index quality.py uses
    mixed = [load(n) for n in members]
    build(name, mixed, cfg, emb)
    emb.save()
    index = Index(INDEX_ROOT / name, cfg, embedder=emb)
    # the whole passage as its set holds it (the unit judged): the index may cut one passage into several chunks,
    # and a chunk's text alone can leave out the part that answers
    texts = {f"{es.name}/{d.doc_id}": d.text for es in mixed for d in es.docs}
    wanted = [t for t in tasks(mixed) if t.name in args.sets]
    if missing := sorted(set(args.sets) - {t.name for t in wanted}):
        ap.error(f"not in the mixed index {name}: {', '.join(missing)}")
    for task in wanted:
        pool = read_pool(task.name)  # every passage pooled so far: judged work that this pool joins
        before = len(pool)
        qvecs = emb.encode_queries([q.text for q in task.queries])
        for label, (mode, c) in rows(cfg, args.rows).items():
            searcher = Searcher(index.backend, c, emb, index.analyzer, index.lexicon)
            for q, qvec in zip(task.queries, qvecs, strict=True):
                judged = task.qrels.get(q.qid, {})
                for hit in searcher.search(q.text, top_k=args.depth, mode=mode, qvec=qvec):
                    doc = run_doc_id(hit.chunk.doc_id, task.prefix)
                    if doc not in judged:
                        entry = pool.setdefault((q.qid, doc), {"qid": q.qid, "query": q.text, "doc": doc,
                                                               "text": texts.get(hit.chunk.doc_id, ""), "rows": []})
                        if label not in entry.setdefault("rows", []):
                            entry["rows"].append(label)
        out = write_pool(task.name, pool)
        print(f"{task.name}: {len(pool) - before} new unjudged passages in the top {args.depth} of "
              f"{', '.join(args.rows)} in {name} -> {out} ({len(pool)} in all)", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
