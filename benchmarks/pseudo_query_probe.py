"""A probe for a channel not built yet: does the encoder find the answer better from the words the query's expansions
give in the other language than from the query itself?

    python benchmarks/pseudo_query_probe.py --json benchmarks/results/pseudo-query-probe.json

Each set is indexed alone through the product path (``evalsets.build``) and each query searched once with the
default config; the expansions that search added in a language other than the query's (corpus links, glossary
names, translations: ``QueryPlan.expansions``) become a second text. Three dense rows are scored with the metric code
``hanrag eval`` uses: the query's own vector (``dense``), the vector of the query followed by those words (``dense,
query + expansions``) and of the words alone (``dense, expansions alone``; a query without any keeps its own).
Nothing is fitted here: the probe decides whether such a channel is worth a ranker feature.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalsets import INDEX_ROOT, build, caching_embedder, load, measured_what, tasks
from quality import folded_docs

from hanrag.api import Index
from hanrag.config import Config
from hanrag.eval import evaluate_run, ranked_documents
from hanrag.language import detect_lang

SETS = ("ko2en_tech", "en2ko_tech", "tune_ko2en_react", "tune_en2ko_react", "tune_ko2en_vue", "tune_en2ko_vue",
        "tune_ko2zpzq", "korquad1_ko_chunks")


def other_language_words(plan, query_lang: str) -> list[str]:
    """The expansion tokens the search added that are not in the query's language (a Korean query's English words,
    an English query's Korean or Chinese words), in the order added."""
    out = []
    for tok, _weight in plan.expansions:
        lang = "en" if tok.isascii() else detect_lang(tok)
        if lang != query_lang and tok not in out:
            out.append(tok)
    return out


def probe(name: str, cfg: Config, emb) -> dict:
    es = load(name)
    build(name, [es], cfg, emb)
    emb.save()
    index = Index(INDEX_ROOT / name, cfg, embedder=emb)
    searcher, also = index.searcher, folded_docs(index)
    task = tasks([es])[0]
    own = np.asarray(emb.encode_queries([q.text for q in es.queries]), dtype=np.float32)
    words = []
    for q, vec in zip(es.queries, own, strict=True):
        plan = searcher.fused_candidates(q.text, qvec=vec)[0].plan  # the plan as widened: its expansions
        words.append(other_language_words(plan, plan.lang))
    joined = np.asarray(emb.encode_queries([f"{q.text} {' '.join(w)}".strip() for q, w in zip(es.queries, words,
                                                                                              strict=True)]))
    alone = np.asarray(emb.encode_queries([" ".join(w) if w else q.text for q, w in zip(es.queries, words,
                                                                                         strict=True)]))
    emb.save()
    rows = {"dense": own, "dense, query + expansions": joined, "dense, expansions alone": alone}
    out: dict = {"queries": len(es.queries), "with_expansions": sum(1 for w in words if w),
                 "mean_words": round(float(np.mean([len(w) for w in words])), 2),
                 "examples": [{"query": q.text, "words": w} for q, w in list(zip(es.queries, words, strict=True))[:5]]}
    for label, vecs in rows.items():
        run = {q.qid: ranked_documents(searcher.search(q.text, top_k=100, mode="dense", qvec=v), task.prefix, also)
               for q, v in zip(es.queries, vecs, strict=True)}
        out[label] = {k: round(v, 4) for k, v in evaluate_run(es.qrels, run).items()}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", nargs="*", default=list(SETS))
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args()
    cfg = Config()
    emb = caching_embedder(cfg)
    results = {name: probe(name, cfg, emb) for name in args.sets}
    for name, r in results.items():
        print(f"{name}: {r['with_expansions']}/{r['queries']} queries with other-language words "
              f"(mean {r['mean_words']})")
        for label in ("dense", "dense, query + expansions", "dense, expansions alone"):
            print(f"  {label:28s} ndcg@10 {r[label].get('ndcg@10', 0):.3f}  mrr@10 {r[label].get('mrr@10', 0):.3f}")
    if args.json:
        args.json.write_text(json.dumps({"sets": results, **measured_what()}, ensure_ascii=False, indent=1) + "\n",
                             encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
