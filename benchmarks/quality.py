"""Retrieval quality of the real Searcher pipeline on every ../shared/eval set, standalone and MIXED.

Indexes are assembled in memory from cached embeddings (benchmarks/embed_eval_cache.py)
and cached analyzer tokens (one chunk per eval doc), then every query runs through
``hanrag.search.Searcher`` with each configuration of the ablation table.

    python benchmarks/quality.py              # ablation tables, standalone + MIXED
    python benchmarks/quality.py --fit        # also the two-fold fit of the hanrag rule table
    python benchmarks/quality.py --sets xquad_en cranfield_en --no-mixed

MIXED = korquad1_ko_chunks + cmrc2018_zh_chunks + xquad_en2zh + cranfield_en corpora in one index.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hanrag.config import Config, RuleConfig  # noqa: E402
from hanrag.eval import EMBED_CACHE as EMB  # noqa: E402
from hanrag.eval import EvalSet, cached_tokens, evaluate_run, find_eval_root, load_eval_set  # noqa: E402
from hanrag.records import Chunk  # noqa: E402
from hanrag.search.memory import MemoryBackend  # noqa: E402
from hanrag.search.searcher import Searcher  # noqa: E402

GOAL_SETS = ("korquad1_ko_chunks", "cmrc2018_zh_chunks", "xquad_en", "xquad_en2zh", "cranfield_en")
ALL_SETS = (*GOAL_SETS, "korquad1_ko", "cmrc2018_zh")
MIXED = ("korquad1_ko_chunks", "cmrc2018_zh_chunks", "xquad_en2zh", "cranfield_en")
GOALS = {"korquad1_ko_chunks": 0.906, "cmrc2018_zh_chunks": 0.922, "xquad_en": 0.985, "xquad_en2zh": 0.852,
         "cranfield_en": 0.392}


# -- data -------------------------------------------------------------------------------------------
class Prepared:
    """One eval set: chunks, tokens, doc vectors, query vectors (aligned with its queries)."""

    def __init__(self, es: EvalSet, chunks: list[Chunk], tokens: list[list[str]], vecs: np.ndarray,
                 qvecs: dict[str, np.ndarray]) -> None:
        self.es, self.chunks, self.tokens, self.vecs, self.qvecs = es, chunks, tokens, vecs, qvecs


def source_of(doc_id: str) -> str:
    """The source document of an eval doc, for the diversity stage.

    Eval corpora carry one dataset-wide ``source``; the doc ids encode the real one:
    ``…-c00`` chunk suffixes share a paragraph, ``xquad-zh-07-03`` is paragraph 3 of article 7.
    """
    if re.search(r"-c\d+$", doc_id):
        return re.sub(r"-c\d+$", "", doc_id)
    m = re.match(r"^(xquad-\w+-\d+)-\d+$", doc_id)
    return m.group(1) if m else doc_id


def prepare(name: str, analyzer) -> Prepared | None:
    from hanrag.language import detect_lang

    folder = EMB / name
    if not (folder / "queries.npy").is_file():
        print(f"[skip] {name}: no cached embeddings yet (run benchmarks/embed_eval_cache.py)", file=sys.stderr)
        return None
    es = load_eval_set(find_eval_root() / name)
    doc_ids = json.loads((folder / "doc_ids.json").read_text())
    vecs = np.load(folder / "docs.npy")
    by_id = {d.doc_id: d for d in es.docs}
    chunks = []
    for did in doc_ids:
        d = by_id[did]
        chunks.append(Chunk(chunk_id=did, doc_id=did, text=d.text, start=0, end=len(d.text),
                            source=f"{name}:{source_of(did)}", path=did, title=d.title, lang=detect_lang(d.text)))
    tokens = cached_tokens(analyzer, name, [c.text for c in chunks], [c.lang for c in chunks])
    qids = json.loads((folder / "qids.json").read_text())
    qarr = np.load(folder / "queries.npy")
    qvecs = dict(zip(qids, qarr, strict=True))
    return Prepared(es, chunks, tokens, vecs, qvecs)


def mixed(parts: dict[str, Prepared]) -> tuple[list[Chunk], list[list[str]], np.ndarray]:
    """Merge corpora; ids are prefixed with the set name so equal doc ids never collide."""
    chunks, tokens, vecs = [], [], []
    for name in MIXED:
        p = parts[name]
        for c, t in zip(p.chunks, p.tokens, strict=True):
            cid = f"{name}/{c.chunk_id}"
            chunks.append(Chunk(chunk_id=cid, doc_id=cid, text=c.text, start=0, end=c.end, source=c.source,
                                path=c.path, lang=c.lang))
            tokens.append(t)
        vecs.append(p.vecs)
    return chunks, tokens, np.concatenate(vecs)


# -- configurations ---------------------------------------------------------------------------------
def variant(**changes) -> Config:
    cfg = Config()
    for key, value in changes.items():
        setattr(cfg.search, key, value)
    return cfg


def fixed(alpha: float, **changes) -> Config:
    rules = [RuleConfig(name=f"fixed{alpha}", bm25=round(1 - alpha, 3), dense=alpha)]
    return variant(preset="custom", rules=rules, cross_lingual=False, **changes)


def ablations() -> dict[str, tuple[str, Config]]:
    """name -> (mode, config). The default (hanrag preset, min-max, fill, diversity, cross-lingual) is 'hanrag'."""
    return {
        "bm25": ("bm25", variant(diversity=False)),
        "dense": ("dense", variant(diversity=False)),
        "rrf k=60": ("hybrid", variant(fusion="rrf", rrf_k=60.0)),
        "rrf k=2": ("hybrid", variant(fusion="rrf", rrf_k=2.0)),
        "zscore": ("hybrid", variant(fusion="zscore")),
        "minmax α=.6 fixed": ("hybrid", fixed(0.6)),
        "minmax α=.6 zero-fill": ("hybrid", fixed(0.6, fill_missing=False)),
        "reference preset": ("hybrid", variant(preset="reference", cross_lingual=False)),
        "hanrag -xling": ("hybrid", variant(cross_lingual=False)),
        "hanrag -translate": ("hybrid", variant(xling_translate_weight=0.0)),
        "hanrag -centering": ("hybrid", variant(xling_calibration="none")),
        "hanrag -diversity": ("hybrid", variant(diversity=False)),
        "hanrag +diversity": ("hybrid", variant(diversity=True)),
        "hanrag": ("hybrid", variant()),
    }


# -- running ----------------------------------------------------------------------------------------
def run_searcher(searcher: Searcher, p: Prepared, mode: str, id_map: Callable[[str], str] = lambda x: x,
                 per_query: bool = False):
    run: dict[str, dict[str, float]] = {}
    plans = {}
    for q in p.es.queries:
        res = searcher.run(q.text, top_k=100, mode=mode, qvec=p.qvecs[q.qid])
        run[q.qid] = {id_map(h.chunk.chunk_id): float(h.score) for h in res.hits}
        plans[q.qid] = res.plan
    if per_query:
        return run, plans
    return evaluate_run(p.es.qrels, run)


def per_query_ndcg(qrels, run) -> dict[str, float]:
    from ranx import Qrels, Run, evaluate

    full = {qid: (run.get(qid) or {"__none__": 0.0}) for qid in qrels}
    scores = evaluate(Qrels(qrels), Run(full), "ndcg@10", return_mean=False, make_comparable=True)
    return dict(zip(list(Run(full).keys()), np.asarray(scores).tolist(), strict=True))


def table(title: str, rows: dict[str, dict[str, float]], cols: list[str], goals: dict[str, float] | None = None):
    print(f"\n### {title} (nDCG@10)\n")
    print("| config | " + " | ".join(cols) + " | mean |")
    print("| --- | " + " | ".join("---:" for _ in cols) + " | ---: |")
    for name, vals in rows.items():
        cells = [f"{vals[c]:.3f}" if c in vals else "—" for c in cols]
        known = [vals[c] for c in cols if c in vals]
        mean = f"{np.mean(known):.3f}" if len(known) == len(cols) else "—"
        print(f"| {name} | " + " | ".join(cells) + f" | {mean} |")
    if goals:
        print("| goal | " + " | ".join(f"{goals[c]:.3f}" if c in goals else "" for c in cols) + " | >.820 |")
    sys.stdout.flush()


def fit(parts: dict[str, Prepared], analyzer, searchers: dict[str, MemoryBackend]) -> None:
    """Two-fold fit of one dense weight per rule cell (language / weak lexical evidence).

    Per query: nDCG@10 for α in a grid under a table whose cells all share α (so the
    cell a query falls in is known from the rule name). Fold A chooses each cell's
    α, fold B reports it, and the other way round.
    """
    grid = [round(a, 2) for a in np.arange(0.0, 1.0001, 0.1)]
    ndcg: dict[tuple[str, str], dict[float, float]] = {}
    cell: dict[tuple[str, str], str] = {}
    for name, p in parts.items():
        if name not in GOAL_SETS:
            continue
        for a in grid:
            rules = [RuleConfig(name=n, bm25=round(1 - a, 2), dense=a, **cond) for n, cond in CELLS]
            cfg = variant(preset="custom", rules=rules)
            s = Searcher(searchers[name], cfg, analyzer=analyzer, lexicon=analyzer.lexicon)
            run, plans = run_searcher(s, p, "hybrid", per_query=True)
            for qid, v in per_query_ndcg(p.es.qrels, run).items():
                ndcg.setdefault((name, qid), {})[a] = v
                cell[(name, qid)] = plans[qid].rule if qid in plans else "default"
        print(f"[fit] {name} done", file=sys.stderr)
    keys = sorted(ndcg)
    rng = np.random.default_rng(20240613)
    fold = {k: int(rng.integers(2)) for k in keys}
    chosen: dict[int, dict[str, float]] = {}
    for f in (0, 1):
        best = {}
        for c in {cell[k] for k in keys}:
            ks = [k for k in keys if fold[k] == f and cell[k] == c]
            if ks:
                best[c] = max(grid, key=lambda a, ks=ks: (np.mean([ndcg[k][a] for k in ks]), -abs(a - 0.6)))
        chosen[f] = best
    print("\n### two-fold fit of the hanrag rule table (dense weight α per cell)\n")
    print("| cell | α fit on fold 0 | α fit on fold 1 | queries |")
    print("| --- | ---: | ---: | ---: |")
    for c in sorted({cell[k] for k in keys}):
        print(f"| {c} | {chosen[0].get(c, '—')} | {chosen[1].get(c, '—')} | {sum(cell[k] == c for k in keys)} |")
    print("\n| set | held-out nDCG@10 (two-fold) | α=.6 fixed (same queries) |")
    print("| --- | ---: | ---: |")
    for name in parts:
        ks = [k for k in keys if k[0] == name]
        if not ks:
            continue
        held = [ndcg[k][chosen[1 - fold[k]].get(cell[k], 0.6)] for k in ks]
        print(f"| {name} | {np.mean(held):.3f} | {np.mean([ndcg[k][0.6] for k in ks]):.3f} |")


def fit_evidence(parts: dict[str, Prepared], analyzer, backends: dict[str, MemoryBackend],
                 mixed_backend: MemoryBackend | None) -> None:
    """Two-fold fit of ``search.xling_min_evidence`` (one threshold for every set, never per query).

    Per query of every goal set (standalone) and of the MIXED index: nDCG@10 of the default pipeline
    with weak lexical evidence forced on and forced off, and the query's evidence ratio. A threshold τ
    gives each query the "on" score when its ratio < τ; fold A picks τ, fold B reports it.
    """
    grid = [0.0, *[round(x, 3) for x in np.arange(0.05, 1.0001, 0.025)]]
    rows: list[tuple[str, str, float, float, float]] = []  # (where, qid, evidence, ndcg weak, ndcg strong)
    jobs = [(n, backends[n], lambda c: c) for n in parts if n in GOAL_SETS]
    if mixed_backend is not None:
        jobs += [(f"MIXED:{n}", mixed_backend, lambda c, p=f"{n}/": c[len(p):] if c.startswith(p) else "other:" + c)
                 for n in MIXED]
    for where, backend, id_map in jobs:
        p = parts[where.split(":")[-1]]
        out = {}
        for forced, thr in (("weak", 1e9), ("strong", -1.0)):
            s = Searcher(backend, variant(xling_min_evidence=thr), analyzer=analyzer, lexicon=analyzer.lexicon)
            run, plans = run_searcher(s, p, "hybrid", id_map=id_map, per_query=True)
            out[forced] = (per_query_ndcg(p.es.qrels, run), plans)
        for qid, weak_v in out["weak"][0].items():
            ev = out["weak"][1][qid].lexical_evidence if qid in out["weak"][1] else 0.0
            rows.append((where, qid, float(ev or 0.0), weak_v, out["strong"][0][qid]))
        print(f"[fit-evidence] {where} done", file=sys.stderr)
    rng = np.random.default_rng(20240613)
    fold = [int(rng.integers(2)) for _ in rows]
    wheres = list(dict.fromkeys(r[0] for r in rows))

    def score(tau: float, f: int, where: str | None = None) -> float:
        # mean over sets of each set's mean: MIXED en2zh counts as much as a set with more queries
        per = {}
        for r, fo in zip(rows, fold, strict=True):
            if fo == f and (where is None or r[0] == where):
                per.setdefault(r[0], []).append(r[3] if r[2] < tau else r[4])
        return float(np.mean([np.mean(v) for v in per.values()])) if per else float("nan")

    def safe(tau: float, f: int) -> bool:
        # the switch exists for queries without lexical support: it must not cost any set (beyond noise)
        # what it scores with the switch never firing (τ = 0), on the fitting fold
        return all(score(tau, f, w) >= score(0.0, f, w) - 0.002 for w in wheres)

    free = {f: max(grid, key=lambda t, f=f: (round(score(t, f), 6), -t)) for f in (0, 1)}
    chosen = {f: max([t for t in grid if safe(t, f)], key=lambda t, f=f: (round(score(t, f), 6), -t)) for f in (0, 1)}
    print("\n### two-fold fit of search.xling_min_evidence\n")
    print(f"best mean over sets: τ = {free[0]} (fold 0), {free[1]} (fold 1); best with no set losing more than "
          f".002 against τ = 0 on the fitting fold: τ = {chosen[0]} (fold 0), {chosen[1]} (fold 1)\n")
    print("| set | weak share at τ(fold) | held-out nDCG@10 | all weak | none weak |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for where in wheres:
        held, share = [], []
        for r, fo in zip(rows, fold, strict=True):
            if r[0] != where:
                continue
            weak = r[2] < chosen[1 - fo]
            share.append(weak)
            held.append(r[3] if weak else r[4])
        sub = [r for r in rows if r[0] == where]
        print(f"| {where} | {np.mean(share):.2f} | {np.mean(held):.3f} | {np.mean([r[3] for r in sub]):.3f} | "
              f"{np.mean([r[4] for r in sub]):.3f} |")
    print("\n| τ | " + " | ".join(wheres) + " |\n| ---: | " + " | ".join("---:" for _ in wheres) + " |")
    for tau in grid:
        cells = []
        for where in wheres:
            sub = [r for r in rows if r[0] == where]
            cells.append(f"{np.mean([r[3] if r[2] < tau else r[4] for r in sub]):.3f}")
        print(f"| {tau} | " + " | ".join(cells) + " |")


CELLS = [
    ("hanja", {"min_hanja_ratio": 0.3, "lang": "ko"}),
    ("weak-lexical", {"weak_lexical": True}),
    ("ko", {"lang": "ko"}),
    ("zh", {"lang": "zh"}),
    ("en", {"lang": "en"}),
    ("default", {}),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", nargs="*", default=list(ALL_SETS))
    ap.add_argument("--no-mixed", action="store_true")
    ap.add_argument("--fit", action="store_true", help="two-fold fit of the rule table")
    ap.add_argument("--fit-evidence", action="store_true", help="two-fold fit of search.xling_min_evidence")
    ap.add_argument("--only", nargs="*", help="ablation names to run (default all)")
    ap.add_argument("--json", type=Path, help="write all numbers here")
    args = ap.parse_args()

    from hanrag.text import get_analyzer

    analyzer = get_analyzer(Config())
    names = list(dict.fromkeys([*args.sets, *([] if args.no_mixed else MIXED)]))
    parts = {n: p for n in names if (p := prepare(n, analyzer)) is not None}
    abl = ablations()
    if args.only:
        abl = {k: v for k, v in abl.items() if k in args.only}
    backends = {n: MemoryBackend(p.chunks, p.tokens, p.vecs) for n, p in parts.items()}
    results: dict[str, dict[str, dict[str, float]]] = {"standalone": {}, "mixed": {}}
    t0 = time.perf_counter()
    standalone = {k: {} for k in abl}
    for name in args.sets:
        if name not in parts:
            continue
        for label, (mode, cfg) in abl.items():
            if name not in GOAL_SETS and label not in ("bm25", "dense", "hanrag"):
                continue  # paragraph sets are regression checks: the three main rows only
            s = Searcher(backends[name], cfg, analyzer=analyzer, lexicon=analyzer.lexicon)
            m = run_searcher(s, parts[name], mode)
            standalone[label][name] = m["ndcg@10"]
            results["standalone"].setdefault(label, {})[name] = m
        print(f"[{time.perf_counter() - t0:.0f}s] {name} standalone done", file=sys.stderr)
    cols = [n for n in args.sets if n in parts]
    table("standalone", standalone, cols, GOALS)

    if not args.no_mixed and all(n in parts for n in MIXED):
        chunks, tokens, vecs = mixed(parts)
        mb = MemoryBackend(chunks, tokens, vecs)
        mixed_rows = {k: {} for k in abl}
        for name in MIXED:
            prefix = f"{name}/"
            for label, (mode, cfg) in abl.items():
                s = Searcher(mb, cfg, analyzer=analyzer, lexicon=analyzer.lexicon)
                m = run_searcher(s, parts[name], mode, id_map=lambda c, p=prefix: c[len(p):] if c.startswith(p)
                                 else "other:" + c)
                mixed_rows[label][name] = m["ndcg@10"]
                results["mixed"].setdefault(label, {})[name] = m
            print(f"[{time.perf_counter() - t0:.0f}s] {name} mixed done", file=sys.stderr)
        table("MIXED index", mixed_rows, list(MIXED))
        if "hanrag" in standalone:
            print("\n| set | standalone hanrag | MIXED hanrag | Δ |\n| --- | ---: | ---: | ---: |")
            for name in MIXED:
                a, b = standalone["hanrag"].get(name), mixed_rows["hanrag"].get(name)
                if a is not None and b is not None:
                    print(f"| {name} | {a:.3f} | {b:.3f} | {b - a:+.3f} |")
    if args.fit:
        fit({n: p for n, p in parts.items() if n in GOAL_SETS}, analyzer, backends)
    if args.fit_evidence:
        mb = MemoryBackend(*mixed(parts)) if all(n in parts for n in MIXED) else None
        fit_evidence(parts, analyzer, backends, mb)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    print(f"\n(total {time.perf_counter() - t0:.0f}s)")


if __name__ == "__main__":
    main()
