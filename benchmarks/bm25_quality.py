"""BM25 quality through hanrag's own tokenizers on every ../shared/eval set.

Prints nDCG@10, MRR@10, R@10 (and R@100) per set for:
  * ``plain``: the query's own tokens, no lexicon expansion (expansion_weight 0);
  * ``expand``: tokens + lexicon equivalents + Hanja readings at the configured weight;
  * ``stem`` / ``nostem`` variants on the English sets (cranfield_en, xquad_en);
  * ``readings`` / ``noreadings`` variants on the sets with Chinese documents;
next to the reference point of ../shared/eval/README.md for the same tokenizer family.

Document tokens are cached under .cache/tokens/<set>/<analyzer identity hash>.json
(JSON, keyed by the analyzer's identity, so any tokenizer or lexicon change re-tokenises).
Usage: nice -n 10 python benchmarks/bm25_quality.py [SET ...]
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path

from hanrag.config import Config
from hanrag.eval import evaluate_run, find_eval_root, load_eval_set
from hanrag.fsutil import atomic_write_text
from hanrag.index.sparse import SparseIndex
from hanrag.language import detect_lang
from hanrag.lexicon import load_lexicons
from hanrag.text import Analyzer
from hanrag.text.query import analyze_query

CACHE = Path(__file__).resolve().parent.parent / ".cache" / "tokens"
# README reference points (nDCG@10, MRR@10, R@10) for the matching tokenizer family
REFERENCE = {
    "korquad1_ko": (0.942, 0.927, 0.989),
    "korquad1_ko_chunks": (0.890, 0.866, 0.963),
    "cmrc2018_zh": (0.978, 0.972, 0.994),
    "cmrc2018_zh_chunks": (0.888, 0.865, 0.958),
    "xquad_en": (0.969, 0.961, 0.993),
    "xquad_en2zh": (0.176, 0.160, 0.229),
    "cranfield_en": (0.363, 0.520, 0.398),
}
METRICS = ("ndcg@10", "mrr@10", "recall@10", "recall@100")

_ANALYZERS: dict[str, Analyzer] = {}


def analyzer_for(**text_overrides: object) -> Analyzer:
    cfg = Config()
    cfg.text = dataclasses.replace(cfg.text, **text_overrides)
    key = json.dumps(dataclasses.asdict(cfg.text), sort_keys=True)
    if key not in _ANALYZERS:
        _ANALYZERS[key] = Analyzer(cfg.text, load_lexicons(cfg))
    return _ANALYZERS[key]


def doc_tokens(set_name: str, texts: list[str], analyzer: Analyzer) -> tuple[list[list[str]], float]:
    """Token lists of a set's documents, from the cache when the analyzer identity matches."""
    corpus_hash = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:12]
    path = CACHE / set_name / f"{analyzer.identity_hash()}-{corpus_hash}.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8")), 0.0
    t = time.perf_counter()
    langs = [detect_lang(x) for x in texts]
    toks: list[list[str]] = []
    for i in range(0, len(texts), 256):
        toks.extend(analyzer.tokenize_many(texts[i : i + 256], langs[i : i + 256]))
    elapsed = time.perf_counter() - t
    atomic_write_text(path, json.dumps(toks, ensure_ascii=False), mkdir=True)
    return toks, elapsed


def run_set(set_name: str, analyzer: Analyzer, expansion_weight: float) -> dict[str, float]:
    es = load_eval_set(find_eval_root() / set_name)
    toks, _ = doc_tokens(set_name, [d.text for d in es.docs], analyzer)
    index = SparseIndex.build(toks, Config().bm25)
    doc_ids = [d.doc_id for d in es.docs]
    run: dict[str, dict[str, float]] = {}
    for q in es.queries:
        qt = analyze_query(q.text, q.lang or detect_lang(q.text), analyzer, analyzer.lexicon, expansion_weight)
        idx, scores = index.top_k(qt.weights, 100)
        run[q.qid] = {doc_ids[i]: float(s) for i, s in zip(idx, scores, strict=True)}
    return evaluate_run(es.qrels, run, METRICS)


def variants(set_name: str) -> list[tuple[str, dict[str, object]]]:
    base = Config().text
    out = [("default", {})]
    if set_name in ("cranfield_en", "xquad_en"):
        out.append(("stem" if not base.en_stem else "nostem", {"en_stem": not base.en_stem}))
    if set_name.startswith("cmrc") or set_name == "xquad_en2zh":
        out.append(("noreadings" if base.hanja_readings else "readings", {"hanja_readings": not base.hanja_readings}))
    return out


def main(argv: list[str]) -> None:
    root = find_eval_root()
    sets = argv or sorted(p.name for p in root.iterdir() if (p / "qrels.tsv").is_file())
    weight = Config().lexicon.expansion_weight
    base = Config().text
    print(f"defaults: en_stem={base.en_stem} hanja_readings={base.hanja_readings} expansion_weight={weight}")
    print(f"{'set':<20} {'variant':<24} {'nDCG@10':>8} {'MRR@10':>8} {'R@10':>8} {'R@100':>8}   reference")
    for name in sets:
        ref = REFERENCE.get(name)
        ref_s = f"{ref[0]:.3f} {ref[1]:.3f} {ref[2]:.3f}" if ref else "-"
        for vname, overrides in variants(name):
            analyzer = analyzer_for(**overrides)
            for ename, w in (("plain", 0.0), ("expand", weight)):
                t = time.perf_counter()
                m = run_set(name, analyzer, w)
                label = f"{vname}/{ename}"
                print(
                    f"{name:<20} {label:<24} {m['ndcg@10']:>8.3f} {m['mrr@10']:>8.3f} {m['recall@10']:>8.3f} "
                    f"{m['recall@100']:>8.3f}   {ref_s}  ({time.perf_counter() - t:.0f}s)",
                    flush=True,
                )


if __name__ == "__main__":
    main(sys.argv[1:])
