"""The request and response bodies of the HTTP API (pydantic): what ``/openapi.json`` documents.

The search body's limits come from the config (``[server]``), so :func:`filters_model` and
:func:`search_model` build those two classes per app; every other model is fixed.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, field_validator, model_validator

from hanrag.records import MAX_FILTER_VALUES, MAX_TIER, Filters, SearchMode


def _integral(value: Any) -> Any:
    """A JSON number without a fraction (``11.0``) as the integer it is: JSON Schema's ``integer`` takes it, so the
    server does too. A bool, a string or ``11.5`` still meet the strict integer check after this."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# strict (no "5", no true) but as JSON Schema reads "integer" (11.0 is one)
JsonInt = Annotated[int, BeforeValidator(_integral)]
Tier = Annotated[JsonInt, Field(ge=0, le=MAX_TIER)]


class ErrorBody(BaseModel):
    error: str = Field(description="one line saying what was wrong")
    detail: list[dict[str, Any]] | None = Field(default=None, description="per-field problems (validation errors)")


class ChunkOut(BaseModel):
    chunk_id: str
    doc_id: str
    text: str
    start: int
    end: int
    source: str
    path: str
    title: str
    tier: int
    provenance: str
    lang: str
    headings: list[str]
    section: int
    labels: list[str]
    page: int | None = None


class ExplanationOut(BaseModel):
    bm25_raw: float | None
    bm25_norm: float | None
    dense_raw: float | None
    dense_norm: float | None
    bm25_weight: float
    dense_weight: float
    rule: str = Field(description="the adaptive rule that chose the weights")
    fusion: str
    fused: float
    rerank: float | None
    penalty: float = Field(description="multiplicative diversity factor, 1.0 = none")
    final: float
    matched_tokens: list[str]
    matched_expansions: list[str]
    found_by: list[str]
    matched_via: list[tuple[str, str]] = Field(
        default_factory=list,
        description="every matched token and how: as written, reading, lexicon:<term>, glossary:<term>, "
        "link:<word> (<channel>), translation:<word>",
    )
    centring: float = Field(0.0, description="what the cross-lingual centring added to this hit's cosine before "
                            "fusion (dense_raw holds it): its language's offset, times its script weight with "
                            "search.xling_centring_by_script")
    learned: list[tuple[str, float]] = Field(
        default_factory=list,
        description="what the learned ranker (plan.ranker) added to fused, per feature, [\"base\", …] first: fused "
                    "plus these is the score before rerank and diversity (empty when the hit was not in the head it "
                    "reordered, or no ranker ran)")


class Highlight(BaseModel):
    start: int = Field(description="character offset into chunk.text")
    end: int
    term: str
    kind: Literal["token", "expansion"] = Field(description="a query token, or a cross-script expansion of one")


class HitOut(BaseModel):
    rank: int
    score: float
    chunk: ChunkOut
    also_in: list[str] = Field(description="sources of near-duplicate chunks folded into this hit")
    explanation: ExplanationOut | None = None
    highlights: list[Highlight] = Field(default_factory=list, description="matched terms in chunk.text (explain)")


class PlanOut(BaseModel):
    query: str
    lang: str
    hanja_ratio: float
    terms: list[str]
    tokens: list[str]
    expansions: list[tuple[str, float]]
    bm25_weight: float
    dense_weight: float
    rule: str
    mode: str
    expansion_via: list[tuple[str, str]] = Field(
        default_factory=list,
        description="each expansion token's origin: reading, lexicon:<term>, glossary:<term>, link:<word> (<channel>), "
                    "translation:<word>",
    )
    lexical_evidence: float | None = Field(
        default=None, description="best chunk's BM25 (any script) / the query's BM25 ceiling (hybrid; null when unused)"
    )
    reranked: int | None = Field(
        default=None, description="hits the cross-encoder scored (null without a reranker); below rerank_candidates "
                                  "when search.rerank.budget_ms ran out, the rest keeping their fused order below"
    )
    rerank_candidates: int | None = Field(
        default=None, description="the fused head given to the reranker (search.rerank.candidates, at least top_k)"
    )
    rerank_ms: float | None = Field(default=None, description="milliseconds the rerank stage took")
    rerank_budget_ms: int | None = Field(
        default=None, description="search.rerank.budget_ms the stage ran under (0 = no budget)"
    )
    ranker: str = Field(default="", description="the learned ranker that reordered the fused head (search.ranker: "
                        "\"bundled:lambdamart\", the default, or a model file); empty when the rule table's order "
                        "stands")
    ranked: int | None = Field(default=None, description="candidates at the head of the fused list the learned "
                               "ranker reordered (null when none ran)")
    language_axes: int | None = Field(
        default=None, description="language axes the query vector left out (search.language_neutral_query; null "
                                  "when off or no dense side ran)"
    )
    language_centring: list[tuple[str, float, float]] = Field(
        default_factory=list,
        description="per other corpus language: what the cross-lingual stage added to its chunks' cosines before "
                    "fusion, and the share of the centring it got (empty when other languages did not compete)",
    )
    lexical_parity: list[tuple[str, float]] = Field(
        default_factory=list,
        description="search.xling_lexical_parity: per other language matching the query lexically, less than its own "
                    "language, the factor its BM25 scores were multiplied by before fusion",
    )


class SearchOut(BaseModel):
    query: str
    mode: str
    top_k: int
    took_ms: float
    plan: PlanOut | None = Field(default=None, description="the query plan (when explain is true)")
    hits: list[HitOut]


class TerminalIn(BaseModel):
    tty: StrictBool = False
    width: int = Field(default=80, ge=1, le=10_000)
    height: int = Field(default=25, ge=1, le=10_000)


class CliSearchIn(BaseModel):
    """``hanrag search`` relayed by the CLI (:mod:`hanrag.server.client`); not part of the documented API."""

    model_config = ConfigDict(extra="forbid")
    argv: list[str] = Field(max_length=256, description="the arguments after `search`")
    cwd: str = Field(max_length=4096, description="the folder the command runs in (relative paths)")
    env: dict[str, str] = Field(default_factory=dict, description="config overrides and terminal variables")
    terminal: TerminalIn = Field(default_factory=TerminalIn)


class CliSearchOut(BaseModel):
    stdout: str = Field(description="what the command prints")


class DocumentOut(BaseModel):
    doc_id: str
    chunks: list[ChunkOut] = Field(description="the document's chunks in text order")


class HealthOut(BaseModel):
    status: Literal["loading", "ready"] = Field(description="ready: the index is loaded and warm (200); loading: 503")
    version: str
    error: str | None = Field(default=None, description="why loading failed (the server then stays at loading)")


class RebuildIn(BaseModel):
    """What ``POST /index/rebuild`` rebuilds; the body is optional (an incremental file rebuild)."""

    # the schema says what the validator enforces: "full": true needs "source": "confluence"
    model_config = ConfigDict(
        extra="forbid",
        strict=True,
        json_schema_extra={
            "if": {"properties": {"full": {"const": True}}, "required": ["full"]},
            "then": {"properties": {"source": {"const": "confluence"}}, "required": ["source"]},
        },
    )

    source: Literal["files", "confluence"] = Field(
        default="files",
        description="files: the configured corpus root; confluence: an incremental sync of the [confluence] spaces",
    )
    full: StrictBool = Field(
        default=False, description="confluence only (needs source confluence): re-fetch and re-render every page"
    )

    @model_validator(mode="after")
    def _full_needs_confluence(self) -> RebuildIn:
        if self.full and self.source != "confluence":
            raise ValueError("full applies to source confluence only (a file rebuild is always incremental)")
        return self


class JobOut(BaseModel):
    id: str
    kind: Literal["rebuild"]
    source: Literal["files", "confluence"] = Field(default="files", description="what the job rebuilds from")
    status: Literal["queued", "running", "succeeded", "failed"]
    created: float = Field(description="unix time")
    started: float | None = None
    finished: float | None = None
    elapsed_s: float | None = None
    progress: str = Field(default="", description="the step the job is in")
    swapped: bool = Field(default=False, description="the server now answers from the new snapshot")
    result: dict[str, Any] | None = Field(
        default=None, description="the build report (files) or the sync report (confluence)"
    )
    error: str | None = None


def filters_model(max_glob: int) -> type[BaseModel]:
    class FiltersIn(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        lang: list[Literal["ko", "zh", "en"]] = Field(default_factory=list, max_length=3)
        tier: list[Tier] = Field(default_factory=list, max_length=MAX_FILTER_VALUES,
                                 description=f"tiers 0-{MAX_TIER} (the leading number of a top-level folder)")
        provenance: list[Literal["human", "ai-draft"]] = Field(default_factory=list, max_length=2)
        source: str = Field(default="", max_length=max_glob, description="glob over chunk source or path")
        labels: list[str] = Field(default_factory=list, max_length=MAX_FILTER_VALUES,
                                  description="a chunk must carry all")

        def to_filters(self) -> Filters:
            return Filters(
                lang=tuple(self.lang),
                tier=tuple(self.tier),
                provenance=tuple(self.provenance),
                source_glob=self.source,
                labels=tuple(self.labels),
            )

    return FiltersIn


def search_model(max_query_chars: int, max_top_k: int, filters_model: type[BaseModel]) -> type[BaseModel]:
    class SearchIn(BaseModel):
        # strict: "top_k": "5" or true, "explain": 0 are refused, as the schema's integer / boolean say (5.0 is an
        # integer to JSON Schema, and to this model)
        model_config = ConfigDict(extra="forbid", strict=True)

        query: str = Field(min_length=1, max_length=max_query_chars)
        top_k: JsonInt = Field(default=10, ge=1, le=max_top_k)
        mode: SearchMode = "hybrid"
        filters: filters_model | None = None  # type: ignore[valid-type]
        explain: StrictBool = False
        plan: StrictBool = Field(default=False, description="return the query plan even without explain")

        @field_validator("query")
        @classmethod
        def _not_blank(cls, value: str) -> str:
            if not value.strip():
                raise ValueError("query is blank")
            return value

    return SearchIn
