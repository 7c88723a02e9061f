"""The search pipeline: plan, fusion, rerank, diversity and the :class:`Searcher` that runs them."""

from hanrag.search.fusion import FUSIONS, fuse
from hanrag.search.plan import QueryPlanner, rules_for, select_rule
from hanrag.search.searcher import Searcher, SearchResult, StageTimes

__all__ = ["FUSIONS", "QueryPlanner", "SearchResult", "Searcher", "StageTimes", "fuse", "rules_for", "select_rule"]
