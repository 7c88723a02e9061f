"""Query planning: language, Hanja ratio, domain terms, tokens, expansions, weights.

The first plan comes from the query text alone, before anything is retrieved. The searcher then
widens and re-plans it from the index: a lexicon term no chunk holds lets its equivalents stand in,
corpus links, glossary pairs and translations are added, and the ``weak_lexical`` and ``translated``
rules are chosen once BM25 has run (:func:`select_rule` with ``weak_lexical=``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from hanrag.config import Config, RuleConfig
from hanrag.language import detect_lang, hanja_ratio
from hanrag.records import QueryPlan, check_mode
from hanrag.search.presets import PRESETS
from hanrag.text.normalize import HANGUL
from hanrag.text.query import analyze_query

# question markers; a query that ends in ? or starts/contains one of these reads as a question
_EN_Q = re.compile(
    r"^\s*(what|who|whom|whose|when|where|why|how|which|is|are|was|were|do|does|did|can|could|should|would|will)\b",
    re.IGNORECASE,
)
_KO_Q = re.compile(r"(무엇|뭐|누구|누가|언제|어디|어떻게|어떤|어느|왜|몇|얼마|인가|인가요|나요|습니까|까\s*$)")
_ZH_Q = re.compile(r"(什么|甚麼|谁|誰|哪|几|幾|多少|怎么|怎樣|怎样|为什么|為什麼|吗|嗎|呢|何)")


# English words that only an English sentence holds: a Korean query's Latin words are names (kubectl, DiskPressure)
_EN_FUNCTION = re.compile(
    r"\b(a|an|the|is|are|was|were|be|do|does|did|to|of|in|on|at|for|with|from|and|or|not|what|who|how|why|when|"
    r"where|which|can|should|my|your|it|this|that)\b",
    re.IGNORECASE,
)


def query_lang(query: str) -> str:
    """The query's language: Korean when it holds Hangul and its Latin words are names rather than an English
    sentence (노드 컨디션 DiskPressure PIDPressure, kubectl autoscale 명령 hold more Latin letters than Hangul, yet
    are Korean questions); else :func:`~hanrag.language.detect_lang` of its letters (what is 갑목 stays with them)."""
    if HANGUL.search(query) and not _EN_FUNCTION.search(query):
        return "ko"
    return detect_lang(query)


def is_question(text: str, lang: str) -> bool:
    t = text.strip()
    if t.endswith(("?", "？")):
        return True
    if lang == "ko":
        return bool(_KO_Q.search(t))
    if lang == "zh":
        return bool(_ZH_Q.search(t))
    return bool(_EN_Q.search(t))


def char_count(text: str) -> int:
    """Non-space characters: the length measure of the rules (CJK-fair, unlike words)."""
    return sum(1 for ch in text if not ch.isspace())


@dataclass(frozen=True)
class QueryFeatures:
    lang: str
    hanja_ratio: float
    chars: int
    has_term: bool
    question: bool


def rule_matches(rule: RuleConfig, f: QueryFeatures, weak_lexical: bool | None = None,
                 translated: bool | None = None) -> bool:
    """All of a rule's set conditions hold (None = condition not used).

    ``min_hanja_ratio`` is strict (ratio > value, as in "Hanja ratio > 0.3");
    ``max_chars``/``min_chars`` are inclusive. A ``weak_lexical`` rule only
    matches once the lexical evidence is known (``weak_lexical`` not None).
    """
    if rule.lang and rule.lang != f.lang:
        return False
    if rule.min_hanja_ratio is not None and not f.hanja_ratio > rule.min_hanja_ratio:
        return False
    if rule.max_chars is not None and f.chars > rule.max_chars:
        return False
    if rule.min_chars is not None and f.chars < rule.min_chars:
        return False
    if rule.has_term is not None and rule.has_term != f.has_term:
        return False
    if rule.question is not None and rule.question != f.question:
        return False
    if rule.weak_lexical is not None and (weak_lexical is None or rule.weak_lexical != weak_lexical):
        return False
    if rule.translated is not None and (translated is None or rule.translated != translated):
        return False
    return True


_FALLBACK = RuleConfig(name="fallback", bm25=0.4, dense=0.6)


def select_rule(rules: Sequence[RuleConfig], f: QueryFeatures, weak_lexical: bool | None = None,
                translated: bool | None = None) -> RuleConfig:
    for rule in rules:
        if rule_matches(rule, f, weak_lexical, translated):
            return rule
    return _FALLBACK


def rules_for(cfg: Config) -> list[RuleConfig]:
    """The active rule table: a named preset, or ``search.rules`` when preset = "custom"."""
    preset = cfg.search.preset
    if preset == "custom":
        if not cfg.search.rules:
            raise ValueError("search.preset = 'custom' needs at least one [[search.rules]] entry")
        return list(cfg.search.rules)
    if preset not in PRESETS:
        raise ValueError(f"unknown search.preset {preset!r}; expected one of {', '.join([*PRESETS, 'custom'])}")
    return list(PRESETS[preset])


class QueryPlanner:
    """Turns a query into a :class:`QueryPlan` (analyzer and lexicon are loaded once, by the caller)."""

    def __init__(self, cfg: Config, analyzer, lexicon, rules: Sequence[RuleConfig] | None = None) -> None:
        self.cfg = cfg
        self.analyzer = analyzer
        self.lexicon = lexicon
        self.rules = list(rules) if rules is not None else rules_for(cfg)

    def features(self, query: str, lang: str, hanja: float, terms: Sequence[str]) -> QueryFeatures:
        return QueryFeatures(lang, hanja, char_count(query), bool(terms), is_question(query, lang))

    def plan(self, query: str, mode: str = "hybrid") -> tuple[QueryPlan, dict[str, float]]:
        """The plan and the weighted BM25 query (token -> weight, expansions included)."""
        mode = check_mode(mode)
        lang = query_lang(query)
        hanja = hanja_ratio(query)
        qt = analyze_query(query, lang, self.analyzer, self.lexicon, self.cfg.lexicon.expansion_weight)
        feats = self.features(query, lang, hanja, qt.terms)
        rule = select_rule(self.rules, feats)
        bw, dw = _mode_weights(rule, mode)
        plan = QueryPlan(
            query=query,
            lang=lang,
            hanja_ratio=round(hanja, 4),
            terms=tuple(qt.terms),
            tokens=tuple(qt.tokens),
            expansions=tuple((t, float(w)) for t, w in qt.expansions),
            bm25_weight=bw,
            dense_weight=dw,
            rule=rule.name if mode == "hybrid" else mode,
            mode=mode,
            expansion_via=tuple(
                (t, "reading" if src == "hanja reading" else f"lexicon:{src}")
                for t, src in qt.expansion_sources.items() if t in qt.weights
            ),
        )
        return plan, dict(qt.weights)

    def replan(self, plan: QueryPlan, weak_lexical: bool, translated: bool | None = None) -> QueryPlan:
        """Re-select the rule once the lexical evidence (and, after translation, the translated one) is known
        (hybrid only)."""
        if plan.mode != "hybrid":
            return plan
        feats = self.features(plan.query, plan.lang, plan.hanja_ratio, plan.terms)
        rule = select_rule(self.rules, feats, weak_lexical, translated)
        return dataclasses.replace(plan, bm25_weight=rule.bm25, dense_weight=rule.dense, rule=rule.name)


def promote_absent_terms(plan: QueryPlan, weights: Mapping[str, float], expansion_weight: float,
                         absent: Callable[[str, QueryPlan], bool]) -> tuple[QueryPlan, Mapping[str, float]]:
    """A domain term that occurs in no chunk (쿠버네티스 in a corpus that writes Kubernetes; ``absent`` asks the
    index) can only match through its equivalents: they stand in for it at full weight instead of
    ``expansion_weight``. A new plan and weights when a term is absent; else the ones given."""
    ew = expansion_weight
    if ew <= 0 or not plan.terms:
        return plan, weights
    gone = [term for term in plan.terms if absent(term, plan)]
    if not gone:
        return plan, weights
    via = dict(plan.expansion_via)
    weights = dict(weights)
    for tok, src in via.items():
        term = src.partition(":")[2]
        if src.startswith("lexicon:") and term in gone and tok in weights and tok not in plan.tokens:
            weights[tok] = min(1.0, weights[tok] / ew)  # a multi-word equivalent still shares one weight
            via[tok] = f"lexicon:{term} (absent)"
    expansions = tuple((t, weights.get(t, w)) for t, w in plan.expansions)
    return dataclasses.replace(plan, expansions=expansions, expansion_via=tuple(via.items())), weights


def _mode_weights(rule: RuleConfig, mode: str) -> tuple[float, float]:
    if mode == "bm25":
        return 1.0, 0.0
    if mode == "dense":
        return 0.0, 1.0
    return float(rule.bm25), float(rule.dense)
