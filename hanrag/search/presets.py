"""Named adaptive-weight rule tables (data, not branches).

Rules are tried in order; the first whose conditions all hold chooses the
BM25/dense weights. ``search.preset = "custom"`` uses ``search.rules`` from the
config file instead.

* ``reference`` — the rules of the reference implementation, kept for comparison.
* ``hanrag`` — the default, fitted by ``benchmarks/quality.py --fit`` (two-fold: the
  weights of each cell are chosen on one half of every eval set's queries and
  reported on the other half). Weights depend on the query language and on
  whether the query's own language has lexical evidence at all; query length,
  which the reference rules lean on, predicted the best weight worse.
"""

from __future__ import annotations

from hanrag.config import RuleConfig

REFERENCE = [
    RuleConfig(name="ref:hanja", bm25=0.6, dense=0.4, min_hanja_ratio=0.3),
    RuleConfig(name="ref:short-term", bm25=0.5, dense=0.5, max_chars=8, has_term=True),
    RuleConfig(name="ref:long-no-term", bm25=0.25, dense=0.75, min_chars=21, has_term=False),
    RuleConfig(name="ref:default", bm25=0.4, dense=0.6),
]

# fitted table (see module docstring); the weights sum to 1. Two-fold fit, α = dense weight chosen per cell
# on each half (fold 0 / fold 1): weak-lexical .8/.8, ko .5/.6, zh .6/.7, en .5/.6 -> the mean of both folds
HANRAG = [
    RuleConfig(name="hanja", bm25=0.6, dense=0.4, min_hanja_ratio=0.3, lang="ko"),  # no eval data: reference
    # a weak English query whose translations match (issue 11): fitted by benchmarks/fit.py
    RuleConfig(name="translated", bm25=0.5, dense=0.5, weak_lexical=True, translated=True),
    RuleConfig(name="weak-lexical", bm25=0.2, dense=0.8, weak_lexical=True),
    RuleConfig(name="ko", bm25=0.45, dense=0.55, lang="ko"),
    RuleConfig(name="zh", bm25=0.35, dense=0.65, lang="zh"),
    RuleConfig(name="en", bm25=0.45, dense=0.55, lang="en"),
    RuleConfig(name="default", bm25=0.4, dense=0.6),
]

PRESETS: dict[str, list[RuleConfig]] = {"reference": REFERENCE, "hanrag": HANRAG}
