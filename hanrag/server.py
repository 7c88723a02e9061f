"""The HTTP service: a thin FastAPI shell over :func:`hanrag.open` and the incremental build.

``create_app(index_dir, cfg)`` gives the ASGI app; ``serve(...)`` runs it with uvicorn.
Search requests run in the worker thread pool against the open :class:`hanrag.api.Index`;
``POST /index/rebuild`` runs :func:`hanrag.index.build.build_index` (or, with
``{"source": "confluence"}``, :func:`hanrag.sync.sync_confluence`; an index folder holds one
of the two sources and the other is refused with 409) in a background thread,
which publishes a new snapshot atomically, then swaps the open index to it with
``Index.reload()`` — requests in flight finish on the old snapshot, later ones see the new
one, none fails. The web inspector (``hanrag/static``) is served at ``/``.

Paths: requests never name a file. Chunk and document ids are only keys looked up in the
open index; the only folders the server reads or writes are the index folder and the
configured corpus root (``server.corpus_root``), both fixed at start-up; responses never
contain their absolute paths (job results and errors name them ``<index>`` / ``<corpus>``).

Access: with an API key every endpoint but ``/health``, the inspector page ``/`` and its
assets ``/static/*`` (shipped files, no index data) needs the ``X-API-Key`` header, the
schema ``/openapi.json`` included. Without a key the server listens on loopback only and,
against DNS rebinding and cross-site forms, answers only requests whose ``Host`` header names
a loopback address, the bound host or one of ``server.allowed_hosts`` (421 otherwise), and
only JSON ``POST`` requests (``Content-Type: application/json``, 415 otherwise).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, Literal

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.security import APIKeyHeader
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, field_validator, model_validator
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import hanrag
from hanrag.config import Config
from hanrag.records import Chunk, Filters, Hit

STATIC_DIR = Path(__file__).resolve().parent / "static"
API_KEY_HEADER = "X-API-Key"
HARD_MAX_TOP_K = 100
MAX_JOBS_KEPT = 50
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")


class ServerError(RuntimeError):
    """A refusal to start (e.g. a public address without an API key); the message says why."""


# ---------------------------------------------------------------------------- models


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
        description="every matched token and how: as written, reading, lexicon:<term>, translation:<word>",
    )


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
        default_factory=list, description="each expansion token's origin: reading, lexicon:<term>, translation:<word>"
    )
    lexical_evidence: float | None = Field(
        default=None, description="best chunk's BM25 (any script) / the query's BM25 ceiling (hybrid; null when unused)"
    )


class SearchOut(BaseModel):
    query: str
    mode: str
    top_k: int
    took_ms: float
    plan: PlanOut | None = Field(default=None, description="the query plan (when explain is true)")
    hits: list[HitOut]


class DocumentOut(BaseModel):
    doc_id: str
    chunks: list[ChunkOut] = Field(description="the document's chunks in text order")


class HealthOut(BaseModel):
    status: Literal["ok"]
    version: str


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


def _filters_model(max_glob: int) -> type[BaseModel]:
    class FiltersIn(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        lang: list[Literal["ko", "zh", "en"]] = Field(default_factory=list, max_length=3)
        tier: list[int] = Field(default_factory=list, max_length=64)
        provenance: list[Literal["human", "ai-draft"]] = Field(default_factory=list, max_length=2)
        source: str = Field(default="", max_length=max_glob, description="glob over chunk source or path")
        labels: list[str] = Field(default_factory=list, max_length=64, description="a chunk must carry all")

        def to_filters(self) -> Filters:
            return Filters(
                lang=tuple(self.lang),
                tier=tuple(self.tier),
                provenance=tuple(self.provenance),
                source_glob=self.source,
                labels=tuple(self.labels),
            )

    return FiltersIn


def _search_model(max_query_chars: int, max_top_k: int, filters_model: type[BaseModel]) -> type[BaseModel]:
    class SearchIn(BaseModel):
        # strict: "top_k": "5" or true, "explain": 0 are refused, as the schema's integer / boolean say
        model_config = ConfigDict(extra="forbid", strict=True)

        query: str = Field(min_length=1, max_length=max_query_chars)
        top_k: StrictInt = Field(default=10, ge=1, le=max_top_k)
        mode: Literal["hybrid", "bm25", "dense"] = "hybrid"
        filters: filters_model | None = None  # type: ignore[valid-type]
        explain: StrictBool = False

        @field_validator("query")
        @classmethod
        def _not_blank(cls, value: str) -> str:
            if not value.strip():
                raise ValueError("query is blank")
            return value

    return SearchIn


# ---------------------------------------------------------------------------- helpers


def _chunk_out(chunk: Chunk) -> dict[str, Any]:
    return chunk.to_dict()


def highlights(text: str, tokens: tuple[str, ...] | list[str], expansions: tuple[str, ...] | list[str]) -> list[dict]:
    """Non-overlapping spans of ``text`` where query tokens or expansions occur.

    Index tokens are normalized (lower case, simplified Chinese); the text is searched
    case-insensitively and, when the OpenCC conversion keeps its length, in its
    converted form too, so offsets still point into the original text. Longer terms
    win where spans overlap; a term that is both a token and an expansion counts as a token.
    """
    views = [text.lower()]
    converted = _to_simplified(text).lower()
    if len(converted) == len(text) and converted != views[0]:
        views.append(converted)
    kinds: dict[str, str] = {}
    for term in expansions:
        kinds[term] = "expansion"
    for term in tokens:
        kinds[term] = "token"
    taken = [False] * len(text)
    spans: list[dict] = []
    for term in sorted(kinds, key=lambda t: (-len(t), t)):
        needle = term.lower().strip()
        if not needle or (len(needle) == 1 and needle.isascii()):
            continue  # one Latin letter would light up everywhere
        for view in views:
            pos = view.find(needle)
            while pos >= 0:
                end = pos + len(needle)
                if not any(taken[pos:end]):
                    for i in range(pos, end):
                        taken[i] = True
                    spans.append({"start": pos, "end": end, "term": term, "kind": kinds[term]})
                pos = view.find(needle, end)
    spans.sort(key=lambda s: s["start"])
    return spans


_OPENCC: list[Any] = []


def _to_simplified(text: str) -> str:
    if not _OPENCC:
        try:
            import opencc

            _OPENCC.append(opencc.OpenCC("t2s"))
        except Exception:  # noqa: BLE001 - highlighting degrades to exact matches
            _OPENCC.append(None)
    conv = _OPENCC[0]
    return conv.convert(text) if conv is not None else text


def _hit_out(hit: Hit, explain: bool) -> dict[str, Any]:
    data = hit.to_dict()
    data["highlights"] = []
    if explain and hit.explanation is not None:
        ex = hit.explanation
        data["highlights"] = highlights(hit.chunk.text, ex.matched_tokens, ex.matched_expansions)
    if not explain:
        data["explanation"] = None
    return data


def _jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        to_dict = getattr(value, "to_dict", None)
        return _jsonable(to_dict() if callable(to_dict) else asdict(value))
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def api_key_for(cfg: Config) -> str:
    """The configured key, surrounding whitespace removed (HTTP strips it from headers): a blank key is no key."""
    return (cfg.server.api_key or os.environ.get("HANRAG_API_KEY", "")).strip()


def host_of(header: str) -> str:
    """The host part of a Host header, lower case, without port or trailing dot ("[::1]:8000" -> "[::1]")."""
    value = header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end > 0 else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def allowed_hosts(cfg: Config, bind_host: str | None = None) -> frozenset[str]:
    """Host header values a key-less server answers: loopback names, the bound host, server.allowed_hosts."""
    names = set(LOOPBACK_HOSTS)
    for extra in [bind_host or "", cfg.server.host, *cfg.server.allowed_hosts]:
        host = host_of(extra) if extra else ""
        if host:
            names.add(host)
            if ":" in host.strip("[]"):  # an IPv6 literal: with and without brackets
                names.update({host.strip("[]"), f"[{host.strip('[]')}]"})
    return frozenset(names)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def check_bind(host: str, cfg: Config) -> None:
    """Refuse a non-loopback address unless an API key is configured."""
    if not is_loopback(host) and not api_key_for(cfg):
        blank = bool(cfg.server.api_key or os.environ.get("HANRAG_API_KEY", ""))
        raise ServerError(
            f"refusing to listen on {host}: a non-loopback address needs an API key"
            + (" (the configured one is blank)" if blank else "")
            + " (set server.api_key in hanrag.toml or the HANRAG_API_KEY environment variable)"
        )


# ---------------------------------------------------------------------------- key-less guard


class LocalOnlyMiddleware:
    """Without an API key: answer only loopback Host names (DNS rebinding) and only JSON POSTs (cross-site forms).

    A browser sends a cross-site HTML form or a "simple" fetch without a CORS preflight, but only with
    a form or text content type (or none); ``application/json`` needs a preflight, which this server
    never grants. A rebinding page reaches the server under its own host name, which is not allowed.
    """

    def __init__(self, app: ASGIApp, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))
        host = headers.get(b"host")
        if host is not None:
            name = host_of(host.decode("latin-1"))
            if name not in self.hosts:
                await _send_json(send, 421, {
                    "error": f"Host {name[:100]!r} is not allowed without an API key "
                    "(use localhost, or add it to server.allowed_hosts)"
                })
                return
        if scope.get("method") == "POST":
            ctype = headers.get(b"content-type", b"").decode("latin-1").split(";", 1)[0].strip().lower()
            if ctype != "application/json" and not ctype.endswith("+json"):
                await _send_json(send, 415, {
                    "error": "POST needs Content-Type: application/json (send {} for the defaults)"
                })
                return
        await self.app(scope, receive, send)


# ---------------------------------------------------------------------------- body-size limit


class BodyLimitMiddleware:
    """Answer 413 to request bodies over ``limit`` bytes, declared or streamed, before parsing."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _send_json(send, 400, {"error": "invalid Content-Length header"})
                    return
                if declared > self.limit:
                    await _send_json(send, 413, self._too_large())
                    return
        # chunked bodies declare no length: read up to the limit, then replay
        messages: list[Message] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                messages.append(message)
                break
            size += len(message.get("body", b""))
            if size > self.limit:
                await _send_json(send, 413, self._too_large())
                return
            messages.append(message)
            more = message.get("more_body", False)

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    def _too_large(self) -> dict[str, str]:
        return {"error": f"request body larger than {self.limit} bytes (server.max_body_bytes)"}


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = json.dumps(body, ensure_ascii=False).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})


# ---------------------------------------------------------------------------- rebuild jobs


class Jobs:
    """Background rebuilds: one at a time, their states kept in memory (newest MAX_JOBS_KEPT)."""

    def __init__(self, scrub=lambda value: value) -> None:  # noqa: ANN001 - callable(jsonable) -> jsonable
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._running: str | None = None
        self._scrub = scrub  # results and errors leave the server without its absolute paths

    def get(self, job_id: str) -> dict[str, Any] | None:
        with self._lock:
            job = self._jobs.get(job_id)
            return dict(job) if job else None

    def running(self) -> str | None:
        with self._lock:
            return self._running

    def start(self, work, source: str = "files") -> dict[str, Any] | None:  # noqa: ANN001 - callable(job_update)
        """Start ``work`` in a thread; None when a job is already running. ``work`` returns (result, swapped)."""
        with self._lock:
            if self._running is not None:
                return None
            job_id = uuid.uuid4().hex
            job = {"id": job_id, "kind": "rebuild", "source": source, "status": "queued", "created": time.time(),
                   "progress": ""}
            self._jobs[job_id] = job
            while len(self._jobs) > MAX_JOBS_KEPT:
                self._jobs.popitem(last=False)
            self._running = job_id
        thread = threading.Thread(target=self._run, args=(job_id, work), name=f"hanrag-job-{job_id[:8]}", daemon=True)
        thread.start()
        return dict(job)

    def _update(self, job_id: str, **changes: Any) -> None:
        with self._lock:
            if job_id in self._jobs:
                self._jobs[job_id].update(changes)

    def _run(self, job_id: str, work) -> None:  # noqa: ANN001
        started = time.time()
        self._update(job_id, status="running", started=started, progress="building")
        try:
            result, swapped = work(lambda step: self._update(job_id, progress=str(step)))
            self._update(job_id, status="succeeded", result=self._scrub(_jsonable(result)), swapped=swapped,
                         progress="done")
        except Exception as exc:  # noqa: BLE001 - the job reports any failure; the server keeps serving
            self._update(job_id, status="failed", error=self._scrub(f"{type(exc).__name__}: {exc}"),
                         progress="failed")
        finally:
            finished = time.time()
            self._update(job_id, finished=finished, elapsed_s=round(finished - started, 3))
            with self._lock:
                self._running = None


# ---------------------------------------------------------------------------- the app

_ERRORS = {
    400: {"model": ErrorBody, "description": "malformed request"},
    401: {"model": ErrorBody, "description": "missing or wrong X-API-Key"},
    413: {"model": ErrorBody, "description": "request body too large"},
    415: {"model": ErrorBody, "description": "no API key configured and the body is not sent as application/json"},
    421: {"model": ErrorBody, "description": "no API key configured and the Host header is not an allowed host"},
    422: {"model": ErrorBody, "description": "invalid field values"},
}


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: _ERRORS[code] for code in codes}


def _validation_message(errors: list[dict[str, Any]]) -> str:
    parts = []
    for err in errors[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def scrub_paths(value: Any, paths: dict[str, str]) -> Any:
    """``value`` with every occurrence of the given absolute paths replaced by their placeholders."""
    if isinstance(value, dict):
        return {k: scrub_paths(v, paths) for k, v in value.items() if k != "index_dir"}
    if isinstance(value, list):
        return [scrub_paths(v, paths) for v in value]
    if isinstance(value, str):
        for path, name in paths.items():
            value = value.replace(path, name)
        return value
    return value


def create_app(
    index_dir: Path, cfg: Config, index: Any | None = None, bind_host: str | None = None
) -> FastAPI:
    """The ASGI app over the index in ``index_dir`` (opened here unless ``index`` is given).

    ``bind_host``: the address the server listens on; without an API key it is one of the allowed Host names.
    """
    raw_index_dir = str(index_dir)
    index_dir = Path(index_dir).resolve()
    index = index if index is not None else hanrag.open(index_dir, config=cfg)
    api_key = api_key_for(cfg)
    max_top_k = max(1, min(cfg.server.max_top_k, HARD_MAX_TOP_K))
    corpus_root = cfg.resolve(cfg.server.corpus_root).resolve() if cfg.server.corpus_root else None
    # longest first: the corpus may live inside the index folder's parent, or the other way round
    hidden = {str(index_dir): "<index>", str(Path(raw_index_dir).absolute()): "<index>"}
    if corpus_root is not None:
        hidden.update({str(corpus_root): "<corpus>", str(cfg.resolve(cfg.server.corpus_root).absolute()): "<corpus>"})
    hidden = dict(sorted(((k, v) for k, v in hidden.items() if len(k) > 1), key=lambda kv: -len(kv[0])))
    jobs = Jobs(lambda value: scrub_paths(value, hidden))

    filters_model = _filters_model(max_glob=min(cfg.server.max_query_chars, 500))
    search_model = _search_model(cfg.server.max_query_chars, max_top_k, filters_model)

    app = FastAPI(
        title="hanrag",
        version=hanrag.__version__,
        description=(
            "Hybrid (BM25 + dense) search over a Korean / Chinese / English corpus, with explanations. "
            + (
                "Every endpoint but /health, the inspector page / and /static/* needs the X-API-Key header."
                if api_key
                else "No API key is configured: only loopback Host names and JSON POST bodies are answered."
            )
        ),
        docs_url=None,  # Swagger UI needs a CDN; the schema itself is at /openapi.json
        redoc_url=None,
        openapi_url=None,  # served below, behind the key
    )
    app.add_middleware(BodyLimitMiddleware, limit=cfg.server.max_body_bytes)
    if not api_key:
        app.add_middleware(LocalOnlyMiddleware, hosts=allowed_hosts(cfg, bind_host))
    app.state.index = index
    app.state.jobs = jobs

    header_scheme = APIKeyHeader(name=API_KEY_HEADER, auto_error=False, description="set when the server has a key")

    def require_key(key: str | None = Depends(header_scheme)) -> None:
        if not api_key:
            return
        if not key or not hmac.compare_digest(key.encode(), api_key.encode()):
            raise HTTPException(status_code=401, detail=f"missing or wrong {API_KEY_HEADER} header")

    auth = [Depends(require_key)]

    @app.get("/openapi.json", include_in_schema=False, dependencies=auth)
    def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{k: _jsonable(v) for k, v in err.items() if k in {"type", "loc", "msg"}} for err in exc.errors()]
        if any(err.get("type") == "json_invalid" for err in errors):
            return JSONResponse({"error": "malformed JSON body: " + _validation_message(errors), "detail": errors}, 400)
        if any(err.get("loc") == ["body"] and err.get("type") == "model_attributes_type" for err in errors):
            # a body that is not a JSON object (or was sent without Content-Type: application/json)
            return JSONResponse(
                {"error": "the request body must be a JSON object sent as Content-Type: application/json",
                 "detail": errors},
                400,
            )
        return JSONResponse({"error": _validation_message(errors), "detail": errors}, 422)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail)}, exc.status_code, headers=getattr(exc, "headers", None))

    @app.get("/health", response_model=HealthOut, tags=["service"])
    def health() -> dict[str, Any]:
        """Liveness: answers without an API key and without touching the index."""
        return {"status": "ok", "version": hanrag.__version__}

    def search(body) -> dict[str, Any]:  # noqa: ANN001 - annotated below with the config-built model
        """Top hits for a query; with ``explain`` every score behind each hit and the query plan."""
        filters = body.filters.to_filters() if body.filters is not None else None
        t0 = time.perf_counter()
        try:
            # the plan comes back with the hits: the one this search used, whatever runs beside it
            result = app.state.index.search_result(
                body.query, top_k=body.top_k, mode=body.mode, filters=filters, explain=body.explain
            )
        except ValueError as exc:  # the pipeline's own input checks (e.g. a bad glob)
            raise HTTPException(status_code=400, detail=str(exc)) from None
        took = (time.perf_counter() - t0) * 1000
        return {
            "query": body.query,
            "mode": body.mode,
            "top_k": body.top_k,
            "took_ms": round(took, 3),
            "plan": result.plan.to_dict() if body.explain else None,
            "hits": [_hit_out(h, body.explain) for h in result.hits],
        }

    # the body model is built from the config (limits), so its annotation is set here, not in the source
    search.__annotations__ = {"body": search_model, "return": dict[str, Any]}
    app.post("/search", response_model=SearchOut, dependencies=auth, tags=["search"],
             responses=_errors(400, 401, 413, 415, 421, 422))(search)

    @app.get(
        "/chunks/{chunk_id:path}",
        response_model=ChunkOut,
        dependencies=auth,
        tags=["index"],
        responses={**_errors(401), 404: {"model": ErrorBody, "description": "no such chunk"}},
    )
    def get_chunk(chunk_id: str) -> dict[str, Any]:
        """One chunk by id (ids are index keys, never file paths)."""
        try:
            chunk = app.state.index.chunk(chunk_id)
        except KeyError:
            chunk = None
        if chunk is None:
            raise HTTPException(status_code=404, detail=f"no chunk {chunk_id!r} in the index")
        return _chunk_out(chunk)

    @app.get(
        "/documents/{doc_id:path}",
        response_model=DocumentOut,
        dependencies=auth,
        tags=["index"],
        responses={**_errors(401), 404: {"model": ErrorBody, "description": "no such document"}},
    )
    def get_document(doc_id: str) -> dict[str, Any]:
        """A document's chunks in text order (the inspector's neighbouring chunks)."""
        try:
            chunks = app.state.index.document(doc_id)
        except KeyError:
            chunks = []
        if not chunks:
            raise HTTPException(status_code=404, detail=f"no document {doc_id!r} in the index")
        return {"doc_id": doc_id, "chunks": [_chunk_out(c) for c in chunks]}

    @app.get("/stats", response_model=dict[str, Any], dependencies=auth, tags=["index"], responses=_errors(401))
    def stats() -> dict[str, Any]:
        """Index size, model, build time, counts per language and tier, and the rebuild state."""
        data = _jsonable(app.state.index.stats())
        data["rebuild_running"] = jobs.running()
        data["corpus_root_configured"] = corpus_root is not None
        return data

    @app.post(
        "/index/rebuild",
        response_model=JobOut,
        status_code=202,
        dependencies=auth,
        tags=["index"],
        responses={
            **_errors(400, 401, 413, 415, 421, 422),
            409: {
                "model": ErrorBody,
                "description": "no corpus root (files) or no [confluence] url configured, the index holds the "
                "other source, or a rebuild already runs",
            },
        },
    )
    def rebuild(body: RebuildIn | None = None) -> dict[str, Any]:
        """Start a background rebuild; poll ``GET /jobs/{id}``. No body: an incremental rebuild of the corpus root.

        ``{"source": "confluence"}`` runs an incremental Confluence sync instead (``full``: every page).
        An index folder holds one source: a file rebuild of a Confluence-synced index, or a sync of
        a file-built index, is refused (409) rather than replacing every document of the other.
        """
        from hanrag.sync import IndexSourceError, check_index_source

        body = body or RebuildIn()
        if body.source == "files" and corpus_root is None:
            raise HTTPException(
                status_code=409, detail="no corpus root configured (server.corpus_root, or `hanrag serve --corpus`)"
            )
        if body.source == "confluence" and not cfg.confluence.url:
            raise HTTPException(
                status_code=409, detail="no Confluence site configured: set [confluence] url and spaces in hanrag.toml"
            )
        try:
            check_index_source(index_dir, body.source)
        except IndexSourceError as exc:
            raise HTTPException(status_code=409, detail=str(exc)) from None

        def rebuild_files(progress) -> tuple[Any, bool]:  # noqa: ANN001
            from hanrag.index.build import build_index

            if not corpus_root.is_dir():
                raise FileNotFoundError(f"corpus root {corpus_root} is not a folder")
            report = build_index(corpus_root, index_dir, cfg, progress=False)
            progress("swapping")
            swapped = bool(app.state.index.reload())
            return report, swapped

        def sync_confluence(progress) -> tuple[Any, bool]:  # noqa: ANN001
            from hanrag.sync import sync_confluence as run_sync

            progress("syncing confluence" + (" (full)" if body.full else ""))
            # the open index's embedder: the sync embeds only changed chunks, no second model load
            report = run_sync(index_dir, cfg, embedder=app.state.index.embedder, full=body.full)
            progress("swapping")
            swapped = bool(app.state.index.reload())  # False when nothing changed (no new snapshot)
            return report, swapped

        job = jobs.start(sync_confluence if body.source == "confluence" else rebuild_files, source=body.source)
        if job is None:
            raise HTTPException(status_code=409, detail=f"a rebuild is already running (job {jobs.running()})")
        return job

    @app.get(
        "/jobs/{job_id}",
        response_model=JobOut,
        dependencies=auth,
        tags=["index"],
        responses={**_errors(401), 404: {"model": ErrorBody, "description": "no such job"}},
    )
    def get_job(job_id: str) -> dict[str, Any]:
        """A background job's state, progress and (when finished) result or error."""
        job = jobs.get(job_id)
        if job is None:
            raise HTTPException(status_code=404, detail=f"no job {job_id!r}")
        return job

    @app.get("/", include_in_schema=False)
    def inspector() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html; charset=utf-8")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    return app


def check_port_free(host: str, port: int) -> None:
    """Fail early, with a clear message, when the address is taken."""
    import socket

    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]"), port))
        except OSError as exc:
            raise ServerError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def serve(
    index_dir: Path,
    cfg: Config,
    host: str | None = None,
    port: int | None = None,
    log_level: str = "info",
    index: Any | None = None,
) -> None:
    """Run the server until interrupted. Raises :class:`ServerError` for a refused bind."""
    import uvicorn

    host = host or cfg.server.host
    port = cfg.server.port if port is None else port
    check_bind(host, cfg)
    check_port_free(host, port)
    app = create_app(index_dir, cfg, index=index, bind_host=host)
    uvicorn.run(app, host=host.strip("[]"), port=port, log_level=log_level, server_header=False)
