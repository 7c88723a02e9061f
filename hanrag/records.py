"""Records passed between pipeline stages.

Every record is a frozen dataclass: a stage receives records, never mutates them,
and hands new ones on. ``to_dict``/``from_dict`` give the JSON form used on disk
(chunks.jsonl, findings in ``--json`` output, the HTTP API).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import operator
import reprlib
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
Provenance = Literal["human", "ai-draft"]
Lang = Literal["ko", "zh", "en"]
SearchMode = Literal["hybrid", "bm25", "dense"]
SEARCH_MODES: tuple[str, ...] = typing.get_args(SearchMode)
PROVENANCES: tuple[str, ...] = typing.get_args(Provenance)


# One set of search limits for every entry (CLI, Python API, /search, /cli/search, MCP): the HTTP models
# (hanrag/server/models.py) publish these bounds in the schema, :class:`SearchLimits` checks them everywhere else.
HARD_MAX_TOP_K = 100  # server.max_top_k is capped here: a bigger result list is a scan, not a search
MAX_TIER = 99  # tiers are the leading number of a top-level folder: 0 (own notes) to 99
MAX_GLOB_CHARS = 500  # a source glob longer than this is no path pattern, only matching work
MAX_FILTER_VALUES = 64  # tier / label values per filter
LANGS: tuple[str, ...] = typing.get_args(Lang)


def check_query(query: str, max_chars: int) -> str:
    """The CLI's check of the query limit that the HTTP server and MCP apply through their request model
    (``server.max_query_chars``): ValueError for a blank query or one longer than ``max_chars``."""
    if not isinstance(query, str):
        raise ValueError(f"the query must be a string, got {type(query).__name__}")
    if len(query) > max_chars:  # before strip(): a megabyte of blanks costs nothing to refuse
        raise ValueError(f"the query is {len(query):,} characters long; the limit is {max_chars:,} "
                         "(server.max_query_chars)")
    if not query.strip():
        raise ValueError("the query is blank")
    return query


def _integer(value: Any, what: str) -> int:
    """``value`` as an int (numpy integers too), never a bool or a float: ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{what} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise ValueError(f"{what} must be an integer, got {_short(value)}") from None


def _short(value: Any) -> str:
    """A repr that stays one short line, whatever a client sent."""
    text = reprlib.repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_top_k(top_k: Any, max_top_k: int = HARD_MAX_TOP_K) -> int:
    top_k = _integer(top_k, "top_k")
    if not 1 <= top_k <= max_top_k:
        raise ValueError(f"top_k must be in [1, {max_top_k}] (server.max_top_k), got {_short(top_k)}")
    return top_k


def check_tier(tier: Any) -> int:
    tier = _integer(tier, "tier")
    if not 0 <= tier <= MAX_TIER:
        raise ValueError(f"tier must be in [0, {MAX_TIER}] (the leading number of a top-level folder), "
                         f"got {_short(tier)}")
    return tier


def check_mode(mode: str) -> SearchMode:
    """``mode`` as a :data:`SearchMode`, or ValueError naming the choices (the one check every shell uses)."""
    if mode not in SEARCH_MODES:
        raise ValueError(f"mode must be {', '.join(SEARCH_MODES[:-1])} or {SEARCH_MODES[-1]}, got {mode!r}")
    return mode  # type: ignore[return-value]


def _to_jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_jsonable(v) for k, v in value.items()}
    return value


class _Record:
    def to_dict(self) -> dict[str, Any]:
        return {f.name: _to_jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        kwargs: dict[str, Any] = {}
        for name in _field_names(cls):
            if name not in data:
                continue
            value = data[name]
            if isinstance(value, list):
                value = tuple(value)
            kwargs[name] = value
        return cls(**kwargs)


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    # a snapshot decodes hundreds of records per search; dataclasses.fields rebuilds its tuple on every call
    return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Finding(_Record):
    """One problem or observation about one input (a file, a page, a config)."""

    path: str
    severity: Severity
    code: str  # short stable identifier, e.g. "no-source", "binary-file"
    message: str
    line: int | None = None


@dataclass(frozen=True)
class Document(_Record):
    """A source document after reading, before chunking.

    ``doc_id`` is stable across runs: the path relative to the corpus root (with
    ``/`` separators), or ``confluence:<page id>`` and the like for connectors.
    ``text`` is the body without front matter; offsets of chunks point into it.
    """

    doc_id: str
    path: str
    title: str
    text: str
    sources: tuple[str, ...] = ()
    tier: int = 0
    provenance: Provenance = "human"
    author: str | None = None
    version: str | None = None
    modified: str | None = None
    labels: tuple[str, ...] = ()
    # extra connector metadata (page id, space, url, ...); JSON-serialisable values only
    meta: dict[str, Any] = field(default_factory=dict)
    # PDF and similar: character offset in ``text`` where each page starts (page 1 first)
    page_starts: tuple[int, ...] = ()

    @property
    def source(self) -> str:
        return self.sources[0] if self.sources else ""


@dataclass(frozen=True)
class Chunk(_Record):
    """A piece of one document section, the unit that is indexed and returned."""

    chunk_id: str
    doc_id: str
    text: str
    start: int  # character offsets into Document.text
    end: int
    source: str = ""
    path: str = ""
    title: str = ""
    tier: int = 0
    provenance: Provenance = "human"
    lang: Lang = "en"
    headings: tuple[str, ...] = ()
    section: int = 0  # index of the atomic section within the document
    labels: tuple[str, ...] = ()
    page: int | None = None

    def headed_text(self) -> str:
        """The title and heading path (each once, one a line), then the text: what an index reads of the chunk
        when it is told to read a section's words with every chunk under it (``bm25.headings``,
        ``embedder.headings``)."""
        path = dict.fromkeys(h.strip() for h in (self.title, *self.headings) if h.strip())
        return "\n".join([*path, self.text]) if path else self.text


@dataclass(frozen=True)
class QueryPlan(_Record):
    """What the search pipeline decided about a query before retrieving anything."""

    query: str
    lang: Lang
    hanja_ratio: float
    terms: tuple[str, ...]  # domain terms found, longest-first, non-overlapping
    tokens: tuple[str, ...]  # the query's own tokens
    expansions: tuple[tuple[str, float], ...]  # (token, weight) added by lexicons/readings
    bm25_weight: float
    dense_weight: float
    rule: str  # name of the adaptive rule that chose the weights
    mode: SearchMode = "hybrid"
    # hybrid, once BM25 ran: the best chunk's BM25 (any script: readings and expansions are lexical evidence)
    # over the query's BM25 ceiling (search.xling_min_evidence decides "weak lexical evidence" from it);
    # None when not measured
    lexical_evidence: float | None = None
    # where each expansion token comes from: "reading" (a Hanja word of the query read in Hangul),
    # "lexicon:<term>", "lexicon:<term> (absent)" (the term occurs in no chunk: its equivalents weigh in
    # full), "glossary:<term>" (the corpus glosses the term with this form: 활성 프로브(liveness probe)),
    # "translation:<English word>"
    expansion_via: tuple[tuple[str, str], ...] = ()
    # the cross-encoder stage as it ran (None without a reranker, or with nothing to rerank): ``reranked`` of the
    # ``rerank_candidates`` at the head of the fused list (search.rerank.candidates, at least top_k) were scored, in
    # ``rerank_ms`` under ``rerank_budget_ms`` (search.rerank.budget_ms, 0 = none); fewer than all when the budget
    # ran out, and those keep their fused order below the reranked ones. The time is left out of plan equality
    reranked: int | None = None
    rerank_candidates: int | None = None
    rerank_ms: float | None = field(default=None, compare=False)
    rerank_budget_ms: int | None = None
    # the learned ranking stage as it ran (hybrid, search.ranker): the model ("bundled:lambdamart" or a file) and how
    # many candidates at the head of the fused list it reordered; "" / None when the rule table's order stands
    ranker: str = ""
    ranked: int | None = None
    # with search.language_neutral_query, how many language axes the query vector left out before the dense side
    # (0 in an index of one language); None when the setting is off or no dense side ran
    language_axes: int | None = None
    # the cross-lingual stage's centring, when other languages competed (hybrid): per other corpus language, what was
    # added to its chunks' cosines before fusion (its pool mean below the query language's, times the share) and the
    # share of the centring it got (1 on weak own-language evidence or, with search.xling_compete_by_evidence, for a
    # language whose passages match the query lexically; else search.xling_compete_share); () when none ran
    language_centring: tuple[tuple[str, float, float], ...] = ()
    # with search.xling_lexical_parity: per other language whose passages match the query lexically, less than its own
    # language's do, the factor its BM25 scores were multiplied by before fusion; () when none
    lexical_parity: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Explanation(_Record):
    """Every number behind one hit's final score."""

    bm25_raw: float | None
    bm25_norm: float | None
    dense_raw: float | None
    dense_norm: float | None
    bm25_weight: float
    dense_weight: float
    rule: str
    fusion: str
    fused: float
    rerank: float | None
    penalty: float  # multiplicative diversity factor, 1.0 = none
    final: float
    matched_tokens: tuple[str, ...] = ()
    matched_expansions: tuple[str, ...] = ()
    found_by: tuple[str, ...] = ()  # "bm25", "dense"
    # every matched token and how it matched: "as written", "reading" (the chunk's Hanja read in Hangul, or
    # the query's), "lexicon:<term>", "glossary:<term>", "translation:<English word>"
    matched_via: tuple[tuple[str, str], ...] = ()
    # what the cross-lingual centring added to this hit's cosine before fusion (dense_raw holds it): its language's
    # offset (QueryPlan.language_centring), times its script weight with search.xling_centring_by_script
    centring: float = 0.0
    # what the learned ranker (QueryPlan.ranker) added to ``fused``, per feature, ("base", …) first: fused plus these
    # is the score before rerank and diversity; empty when the hit was not in the head it reordered
    learned: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Hit(_Record):
    chunk: Chunk
    score: float
    rank: int
    also_in: tuple[str, ...] = ()  # sources of near-duplicate chunks folded into this hit
    explanation: Explanation | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "chunk": self.chunk.to_dict(),
            "score": self.score,
            "rank": self.rank,
            "also_in": list(self.also_in),
            "explanation": self.explanation.to_dict() if self.explanation else None,
        }


@dataclass(frozen=True)
class Filters(_Record):
    """Metadata filters, applied before top-K (never after)."""

    lang: tuple[str, ...] = ()
    tier: tuple[int, ...] = ()
    provenance: tuple[str, ...] = ()
    source_glob: str = ""
    labels: tuple[str, ...] = ()  # a chunk must carry all of them

    def is_empty(self) -> bool:
        return not (self.lang or self.tier or self.provenance or self.source_glob or self.labels)

    def accepts(self, chunk: Chunk) -> bool:
        if self.lang and chunk.lang not in self.lang:
            return False
        if self.tier and chunk.tier not in self.tier:
            return False
        if self.provenance and chunk.provenance not in self.provenance:
            return False
        if self.source_glob and not (
            fnmatch.fnmatch(chunk.source, self.source_glob) or fnmatch.fnmatch(chunk.path, self.source_glob)
        ):
            return False
        return all(label in chunk.labels for label in self.labels)


@dataclass(frozen=True)
class SearchLimits:
    """The bounds of one search, the same at every entry: the CLI, the Python API, ``POST /search``, the relayed
    ``hanrag search`` and MCP (the HTTP models publish the same numbers in the schema). ValueError names the
    argument that is out of bounds, in one line."""

    max_query_chars: int = 1000
    max_top_k: int = HARD_MAX_TOP_K

    @classmethod
    def of(cls, server: Any) -> SearchLimits:
        """The limits of a ``[server]`` section (:class:`hanrag.config.ServerConfig`); top_k capped at
        :data:`HARD_MAX_TOP_K`."""
        return cls(server.max_query_chars, max(1, min(server.max_top_k, HARD_MAX_TOP_K)))

    @property
    def max_glob_chars(self) -> int:
        return min(self.max_query_chars, MAX_GLOB_CHARS)

    def check(self, query: Any, top_k: Any, mode: Any, filters: Filters | None) -> None:
        check_query(query, self.max_query_chars)
        check_top_k(top_k, self.max_top_k)
        check_mode(mode)
        if filters is not None:
            self.check_filters(filters)

    def check_filters(self, filters: Any) -> None:
        if not isinstance(filters, Filters):
            raise ValueError(f"filters must be a hanrag Filters, got {type(filters).__name__}")
        for name in ("lang", "tier", "provenance", "labels"):
            values = getattr(filters, name)
            if not isinstance(values, tuple | list) or len(values) > MAX_FILTER_VALUES:
                raise ValueError(f"filter {name}: at most {MAX_FILTER_VALUES} values in a tuple, got {_short(values)}")
        for lang in filters.lang:
            if lang not in LANGS:
                raise ValueError(f"filter lang must be {', '.join(LANGS)}, got {_short(lang)}")
        for tier in filters.tier:
            check_tier(tier)
        for pv in filters.provenance:
            if pv not in PROVENANCES:
                raise ValueError(f"filter provenance must be {' or '.join(PROVENANCES)}, got {_short(pv)}")
        for label in filters.labels:
            if not isinstance(label, str) or len(label) > self.max_query_chars:
                raise ValueError(f"filter labels: each a string of at most {self.max_query_chars} characters")
        glob = filters.source_glob
        if not isinstance(glob, str) or len(glob) > self.max_glob_chars:
            raise ValueError(f"the source glob must be a string of at most {self.max_glob_chars} characters, "
                             f"got {len(glob) if isinstance(glob, str) else _short(glob)}")
