"""Named adaptive-weight rule tables (data, not branches).

Rules are tried in order; the first whose conditions all hold chooses the
BM25/dense weights. ``search.preset = "custom"`` uses ``search.rules`` from the
config file instead.

* ``reference`` — the rules of the reference implementation, kept for comparison.
* ``hanrag`` — the default, fitted by ``benchmarks/fit.py``: per rule cell the dense weight (and the fusion
  method) chosen on the tuning sets only — ../shared/eval (standalone and in the MIXED index) and the
  tuning sets eval/tune_ko2zpzq (Korean → classical Chinese) and eval/tune_ko_tech (Korean → Korean technical
  docs) — leave-one-set-out for the reported figures; the held-out
  cross-script sets in ``eval/`` never choose anything. Weights depend on the query language and on the
  lexical evidence the query has in any script (readings, lexicon stand-ins and translations included), and
  on whether a Korean query names a lexicon term; query length, which the reference rules lean on, predicted
  the best weight worse.
"""

from __future__ import annotations

from hanrag.config import RuleConfig

REFERENCE = [
    RuleConfig(name="ref:hanja", bm25=0.6, dense=0.4, min_hanja_ratio=0.3),
    RuleConfig(name="ref:short-term", bm25=0.5, dense=0.5, max_chars=8, has_term=True),
    RuleConfig(name="ref:long-no-term", bm25=0.25, dense=0.75, min_chars=21, has_term=False),
    RuleConfig(name="ref:default", bm25=0.4, dense=0.6),
]

# fitted table (see module docstring): `python benchmarks/fit.py --max-queries 300` (300 queries per tuning set: the
# shared sets and the tuning sets eval/tune_ko2zpzq, eval/tune_ko_tech, eval/tune_en2ko_tech, each standalone and in
# one mixed index), with the default (onnx) embedder. Mean leave-one-set-out nDCG@10: calibrated with the language
# background .743; with the corpus background .726, zscore .715, minmax .715, ceiling .707 -> search.fusion =
# "calibrated", search.dense_background = "language" (`--fusions calibrated --dense-background language`). Dense weight
# chosen per cell on all tuning sets (the α with the best mean nDCG@10 over the cell's queries), for calibrated fusion
# (its dense scores span a narrower range than min-max, hence the larger dense weights): translated .9, weak-lexical
# .8, en .9, ko-term .6, ko .7, zh .8. The weights sum to 1. Refitted in a later release with hanrag eval's nDCG
# (linear gain) and every tuning query (benchmarks/results/fit-translate-weight-6.json: weak-lexical .9, ko-term .4,
# ko .6); measured, that table lowered the seen cross-script sets and MIXED korquad (quality-*-refit.json), so
# this one stays. Refitted again with the React tuning pair (fit-react-tuning.json: ko .6, weak-lexical .9): it lost
# .02-.03 on three seen cross-script sets (quality-react-refit.json against quality-react-shipped.json), so this
# one stays (docs/evaluation.md).
HANRAG = [
    RuleConfig(name="hanja", bm25=0.6, dense=0.4, min_hanja_ratio=0.3, lang="ko"),  # no eval data: reference
    # a weak English query whose dictionary translations match (issue 11)
    RuleConfig(name="translated", bm25=0.1, dense=0.9, weak_lexical=True, translated=True),
    RuleConfig(name="weak-lexical", bm25=0.2, dense=0.8, weak_lexical=True),
    # a Korean query naming a lexicon term (배포, 롤백, 용신): the reference design's domain-term rule, fitted
    RuleConfig(name="ko-term", bm25=0.4, dense=0.6, lang="ko", has_term=True),
    RuleConfig(name="ko", bm25=0.3, dense=0.7, lang="ko"),
    RuleConfig(name="zh", bm25=0.2, dense=0.8, lang="zh"),
    RuleConfig(name="en", bm25=0.1, dense=0.9, lang="en"),
    RuleConfig(name="default", bm25=0.4, dense=0.6),
]

PRESETS: dict[str, list[RuleConfig]] = {"reference": REFERENCE, "hanrag": HANRAG}
