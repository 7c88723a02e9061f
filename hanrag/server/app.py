"""The FastAPI app: :func:`create_app` wires the routes over one open :class:`hanrag.api.Index`.

Each group of routes is added by its own function (service, search, index reads, rebuild jobs,
inspector) over one :class:`AppContext`; the bodies are in :mod:`hanrag.server.models`, access
rules in :mod:`hanrag.server.access` / :mod:`hanrag.server.middleware`, jobs in
:mod:`hanrag.server.jobs`.

Loading: with ``background=True`` (what ``hanrag serve`` uses) the index is opened and warmed
(analyzers, embedder, a search per corpus language) in a thread while the server already
listens; ``/health`` answers 503 ``{"status": "loading"}`` until then and every index route 503,
so the first answered query runs as fast as the later ones.
"""

from __future__ import annotations

import gc
import hmac
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.security import APIKeyHeader
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

import hanrag
from hanrag.config import Config
from hanrag.records import HARD_MAX_TOP_K, SearchLimits
from hanrag.server.access import API_KEY_HEADER, allowed_hosts, api_key_for
from hanrag.server.discovery import search_fingerprint
from hanrag.server.jobs import Jobs, scrub_paths
from hanrag.server.middleware import BodyLimitMiddleware, LocalOnlyMiddleware
from hanrag.server.models import (
    ChunkOut,
    CliSearchIn,
    CliSearchOut,
    DocumentOut,
    ErrorBody,
    HealthOut,
    JobOut,
    RebuildIn,
    SearchOut,
    filters_model,
    search_model,
)
from hanrag.server.output import chunk_out, hide_absolute_paths, hit_out, jsonable

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
__all__ = ["HARD_MAX_TOP_K", "STATIC_DIR", "create_app"]  # HARD_MAX_TOP_K lives in hanrag.records
log = logging.getLogger("hanrag.server")

_ERRORS = {
    400: {"model": ErrorBody, "description": "malformed request"},
    408: {"model": ErrorBody, "description": "the request body did not arrive within server.read_timeout_s"},
    401: {"model": ErrorBody, "description": "missing or wrong X-API-Key"},
    413: {"model": ErrorBody, "description": "request body too large"},
    415: {"model": ErrorBody, "description": "no API key configured and the body is not sent as application/json"},
    421: {"model": ErrorBody, "description": "no API key configured and the Host header is not an allowed host"},
    422: {"model": ErrorBody, "description": "invalid field values"},
    503: {"model": ErrorBody, "description": "the server is still loading the index (retry after a second)"},
}


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    return {code: _ERRORS[code] for code in (*codes, 503)}


def _validation_message(errors: list[dict[str, Any]]) -> str:
    parts = []
    for err in errors[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "body") or "body"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


@dataclass
class AppContext:
    """What the routes share: the fixed folders, the key, the jobs and the loading state."""

    index_dir: Path
    cfg: Config
    corpus_root: Path | None
    api_key: str
    jobs: Jobs
    hidden: dict[str, str] = field(default_factory=dict)  # absolute path -> placeholder (<index>, <corpus>)
    ready: threading.Event = field(default_factory=threading.Event)
    load_error: str | None = None


def _hidden_paths(raw_index_dir: str, index_dir: Path, cfg: Config, corpus_root: Path | None) -> dict[str, str]:
    """Absolute paths responses must not contain -> their placeholders, longest first (the corpus may live
    inside the index folder's parent, or the other way round)."""
    hidden = {str(index_dir): "<index>", str(Path(raw_index_dir).absolute()): "<index>"}
    if corpus_root is not None:
        hidden.update({str(corpus_root): "<corpus>", str(cfg.resolve(cfg.server.corpus_root).absolute()): "<corpus>"})
    return dict(sorted(((k, v) for k, v in hidden.items() if len(k) > 1), key=lambda kv: -len(kv[0])))


def create_app(
    index_dir: Path,
    cfg: Config,
    index: Any | None = None,
    bind_host: str | None = None,
    *,
    background: bool = False,
    on_ready: Callable[[], None] | None = None,
) -> FastAPI:
    """The ASGI app over the index in ``index_dir`` (opened here unless ``index`` is given).

    ``bind_host``: the address the server listens on; without an API key it is one of the allowed Host names.
    ``background``: open (unless given) and warm the index in a thread, answering 503 until it is ready;
    ``on_ready`` runs once it is warm, just before it reports ready. Without it the index is opened here and the
    app is ready at once.
    """
    raw_index_dir = str(index_dir)
    index_dir = Path(index_dir).resolve()
    corpus_root = cfg.resolve(cfg.server.corpus_root).resolve() if cfg.server.corpus_root else None
    hidden = _hidden_paths(raw_index_dir, index_dir, cfg, corpus_root)
    ctx = AppContext(index_dir, cfg, corpus_root, api_key_for(cfg), Jobs(lambda value: scrub_paths(value, hidden)),
                     hidden)
    app = FastAPI(
        title="hanrag",
        version=hanrag.__version__,
        description=(
            "Hybrid (BM25 + dense) search over a Korean / Chinese / English corpus, with explanations. "
            + (
                "Every endpoint but /health, the inspector page / and /static/* needs the X-API-Key header."
                if ctx.api_key
                else "No API key is configured: only loopback Host names and JSON POST bodies are answered."
            )
        ),
        docs_url=None,  # Swagger UI needs a CDN; the schema itself is at /openapi.json
        redoc_url=None,
        openapi_url=None,  # served below, behind the key
    )
    app.add_middleware(BodyLimitMiddleware, limit=cfg.server.max_body_bytes, timeout=cfg.server.read_timeout_s)
    if not ctx.api_key:
        app.add_middleware(LocalOnlyMiddleware, hosts=allowed_hosts(cfg, bind_host))
    app.state.jobs = ctx.jobs
    app.state.context = ctx
    auth = _auth_dependencies(ctx)
    _add_service_routes(app, ctx, auth)
    _add_search_route(app, ctx, auth)
    _add_index_routes(app, ctx, auth)
    _add_rebuild_routes(app, ctx, auth)
    _add_inspector(app)
    if background:
        app.state.index = index
        threading.Thread(target=_load, args=(app, ctx, index, on_ready), name="hanrag-load", daemon=True).start()
    else:
        app.state.index = index if index is not None else hanrag.open(index_dir, config=cfg)
        ctx.ready.set()
    return app


# ---------------------------------------------------------------------------- loading


def _load(app: FastAPI, ctx: AppContext, index: Any | None, on_ready: Callable[[], None] | None) -> None:
    """Open (unless given) and warm the index, then mark the app ready; a failure is reported by /health."""
    from hanrag.server.warm import warm_index

    try:
        index = index if index is not None else hanrag.open(ctx.index_dir, config=ctx.cfg)
        took = warm_index(index)
        from hanrag.commands.search import search_command

        search_command()  # what a relayed `hanrag search` runs: loaded before ready, like the rest
        app.state.index = index
        if on_ready is not None:  # before `ready`: its work (serve.json) must not slow the first query
            on_ready()
        ctx.ready.set()
        log.info("hanrag: ready (warmed in %.1f s)", took)
    except Exception as exc:
        ctx.load_error = f"{type(exc).__name__}: {exc}"
        log.error("hanrag: loading the index failed: %s", ctx.load_error)


def _swap(app: FastAPI) -> bool:
    """Re-open the index on its new snapshot; True when it swapped."""
    swapped = bool(app.state.index.reload())
    if swapped:
        gc.unfreeze()  # the warm-up froze the first index's objects (warm.py): the old one must stay collectable
    return swapped


def _auth_dependencies(ctx: AppContext) -> list[Any]:
    if not ctx.api_key:
        return []  # a key-less server asks for no header, and its schema says so (no security scheme)
    header_scheme = APIKeyHeader(name=API_KEY_HEADER, auto_error=False, description="set when the server has a key")

    def require_key(key: str | None = Depends(header_scheme)) -> None:
        if not key or not hmac.compare_digest(key.encode(), ctx.api_key.encode()):
            raise HTTPException(status_code=401, detail=f"missing or wrong {API_KEY_HEADER} header")

    return [Depends(require_key)]


def _index(app: FastAPI) -> Any:
    """The open index, or 503 while it is still loading."""
    ctx: AppContext = app.state.context
    if not ctx.ready.is_set():
        detail = f"loading the index failed: {ctx.load_error}" if ctx.load_error else "the index is still loading"
        raise HTTPException(status_code=503, detail=detail, headers={"Retry-After": "1"})
    return app.state.index


# ---------------------------------------------------------------------------- routes


def _add_service_routes(app: FastAPI, ctx: AppContext, auth: list[Any]) -> None:
    @app.get("/openapi.json", include_in_schema=False, dependencies=auth)
    def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{k: jsonable(v) for k, v in err.items() if k in {"type", "loc", "msg"}} for err in exc.errors()]
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

    @app.get(
        "/health",
        response_model=HealthOut,
        tags=["service"],
        responses={503: {"model": HealthOut, "description": "still loading (or loading failed: see error)"}},
    )
    def health() -> JSONResponse:
        """Readiness: ``ready`` (200) once the index is loaded and warm, ``loading`` (503) before; no API key,
        no index access."""
        if ctx.ready.is_set():
            return JSONResponse({"status": "ready", "version": hanrag.__version__})
        body = {"status": "loading", "version": hanrag.__version__}
        if ctx.load_error:
            body["error"] = ctx.load_error
        return JSONResponse(body, 503, headers={"Retry-After": "1"})


def _add_search_route(app: FastAPI, ctx: AppContext, auth: list[Any]) -> None:
    cfg = ctx.cfg
    limits = SearchLimits.of(cfg.server)  # the bounds every entry applies (hanrag.records), published in the schema
    body_model = search_model(limits.max_query_chars, limits.max_top_k, filters_model(max_glob=limits.max_glob_chars))

    def search(body) -> dict[str, Any]:
        """Top hits for a query; with ``explain`` every score behind each hit and the query plan."""
        index = _index(app)
        filters = body.filters.to_filters() if body.filters is not None else None
        t0 = time.perf_counter()
        try:
            # the plan comes back with the hits: the one this search used, whatever runs beside it
            result = index.search_result(
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
            "plan": result.plan.to_dict() if body.explain or body.plan else None,
            "hits": [hit_out(h, body.explain) for h in result.hits],
        }

    # the body model is built from the config (limits), so its annotation is set here, not in the source
    search.__annotations__ = {"body": body_model, "return": dict[str, Any]}
    app.post("/search", response_model=SearchOut, dependencies=auth, tags=["search"],
             responses=_errors(400, 401, 408, 413, 415, 421, 422))(search)

    fingerprint = search_fingerprint(cfg)

    @app.post("/cli/search", response_model=CliSearchOut, dependencies=auth, include_in_schema=False)
    def cli_search(body: CliSearchIn) -> dict[str, Any]:
        """``hanrag search`` relayed by the CLI: the text it prints; 409 when the CLI must run it itself (another
        index or other settings than this server's, or an error it reports in its own words)."""
        from hanrag.commands.search import relayed_search

        index = _index(app)
        try:
            out = relayed_search(body.argv, body.cwd, body.env, body.terminal.model_dump(), index, ctx.index_dir,
                                 fingerprint)
        except Exception:
            log.exception("hanrag: a relayed search failed; the client runs it in its own process")
            out = None
        if out is not None and not out.isascii():
            try:
                out.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate from the client's argv (a byte that is not UTF-8): JSON
                out = None  # cannot carry it; the client prints it itself, as its own stdout writes such bytes
        if out is None:
            raise HTTPException(status_code=409, detail="run this search in the CLI's own process")
        return {"stdout": out}


def _add_index_routes(app: FastAPI, ctx: AppContext, auth: list[Any]) -> None:
    @app.get(
        "/chunks/{chunk_id:path}",
        response_model=ChunkOut,
        dependencies=auth,
        tags=["index"],
        responses={**_errors(401), 404: {"model": ErrorBody, "description": "no such chunk"}},
    )
    def get_chunk(chunk_id: str) -> dict[str, Any]:
        """One chunk by id (ids are index keys, never file paths)."""
        index = _index(app)
        try:
            chunk = index.chunk(chunk_id)
        except KeyError:
            chunk = None
        if chunk is None:
            raise HTTPException(status_code=404, detail=f"no chunk {chunk_id!r} in the index")
        return chunk_out(chunk)

    @app.get(
        "/documents/{doc_id:path}",
        response_model=DocumentOut,
        dependencies=auth,
        tags=["index"],
        responses={**_errors(401), 404: {"model": ErrorBody, "description": "no such document"}},
    )
    def get_document(doc_id: str) -> dict[str, Any]:
        """A document's chunks in text order (the inspector's neighbouring chunks)."""
        index = _index(app)
        try:
            chunks = index.document(doc_id)
        except KeyError:
            chunks = []
        if not chunks:
            raise HTTPException(status_code=404, detail=f"no document {doc_id!r} in the index")
        return {"doc_id": doc_id, "chunks": [chunk_out(c) for c in chunks]}

    @app.get("/stats", response_model=dict[str, Any], dependencies=auth, tags=["index"], responses=_errors(401))
    def stats() -> dict[str, Any]:
        """Index size, model, build time, counts per language and tier, and the rebuild state (no absolute paths:
        the index folder is not named, and paths under it or the corpus root read ``<index>`` / ``<corpus>``)."""
        data = hide_absolute_paths(scrub_paths(jsonable(_index(app).stats()), ctx.hidden))
        data["rebuild_running"] = ctx.jobs.running()
        data["corpus_root_configured"] = ctx.corpus_root is not None
        return data


def _rebuild_work(app: FastAPI, ctx: AppContext, body: RebuildIn) -> Callable[[Callable[[str], None]], Any]:
    """The job body of a rebuild: (progress) -> (report, swapped)."""
    cfg, index_dir, corpus_root = ctx.cfg, ctx.index_dir, ctx.corpus_root

    def rebuild_files(progress: Callable[[str], None]) -> tuple[Any, bool]:
        from hanrag.pipeline import build_index

        if not corpus_root.is_dir():
            raise FileNotFoundError(f"corpus root {corpus_root} is not a folder")
        report = build_index(corpus_root, index_dir, cfg, progress=False)
        progress("swapping")
        swapped = _swap(app)
        return report, swapped

    def sync_confluence(progress: Callable[[str], None]) -> tuple[Any, bool]:
        from hanrag.sync import sync_confluence as run_sync

        progress("syncing confluence" + (" (full)" if body.full else ""))
        # the open index's embedder: the sync embeds only changed chunks, no second model load
        report = run_sync(index_dir, cfg, embedder=app.state.index.embedder, full=body.full)
        progress("swapping")
        swapped = _swap(app)  # False when nothing changed (no new snapshot)
        return report, swapped

    return sync_confluence if body.source == "confluence" else rebuild_files


def _add_rebuild_routes(app: FastAPI, ctx: AppContext, auth: list[Any]) -> None:
    @app.post(
        "/index/rebuild",
        response_model=JobOut,
        status_code=202,
        dependencies=auth,
        tags=["index"],
        responses={
            **_errors(400, 401, 408, 413, 415, 421, 422),
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

        _index(app)
        body = body or RebuildIn()
        if body.source == "files" and ctx.corpus_root is None:
            raise HTTPException(
                status_code=409, detail="no corpus root configured (server.corpus_root, or `hanrag serve --corpus`)"
            )
        if body.source == "confluence" and not ctx.cfg.confluence.url:
            raise HTTPException(
                status_code=409, detail="no Confluence site configured: set [confluence] url and spaces in hanrag.toml"
            )
        try:
            check_index_source(ctx.index_dir, body.source)
        except IndexSourceError as exc:
            raise HTTPException(status_code=409, detail=str(exc)) from None
        job = ctx.jobs.start(_rebuild_work(app, ctx, body), source=body.source)
        if job is None:
            raise HTTPException(status_code=409, detail=f"a rebuild is already running (job {ctx.jobs.running()})")
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
        job = ctx.jobs.get(job_id)
        if job is None:
            raise HTTPException(status_code=404, detail=f"no job {job_id!r}")
        return job


def _add_inspector(app: FastAPI) -> None:
    @app.get("/", include_in_schema=False)
    def inspector() -> FileResponse:
        return FileResponse(STATIC_DIR / "index.html", media_type="text/html; charset=utf-8")

    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
