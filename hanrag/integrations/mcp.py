"""An MCP server over a hanrag index, for agents (``pip install 'hanrag[mcp]'``; ``hanrag mcp INDEX``).

Tools: ``search`` (ranked passages, each with a citation line ready to quote), ``get_chunk``,
``get_document`` and ``stats``, all answered by the open :class:`hanrag.api.Index` (no second search
path). Arguments are checked with the HTTP server's own request models and limits
(:mod:`hanrag.server`: ``server.max_query_chars``, ``server.max_top_k`` capped by ``HARD_MAX_TOP_K``,
the filters' value sets), so an agent meets the same bounds over MCP as over HTTP.

Transports and access:

* stdio (the default): the server talks only to the process that spawned it, over its pipes. An API
  key would add nothing there (whoever can spawn ``hanrag mcp`` can read the index folder itself), so
  none is asked for, even when one is configured.
* streamable HTTP (``--http``): bound to 127.0.0.1 only, at ``/mcp``. With an API key configured
  (``server.api_key`` / ``HANRAG_API_KEY``) every request needs the ``X-API-Key`` header, as on the
  HTTP server; without one, as on the HTTP server, only loopback ``Host`` names and JSON POSTs are
  answered (DNS rebinding, cross-site forms), and bodies over ``server.max_body_bytes`` are refused.

Hot reload: before answering, a tool checks (at most once a second) whether a build moved the index's
CURRENT pointer and swaps to the new snapshot with :meth:`hanrag.api.Index.reload`, the same swap the
HTTP server makes after ``POST /index/rebuild``; a call already running finishes on the old snapshot.
"""

# no `from __future__ import annotations`: the SDK reads the tools' annotations at run time, and they use
# the config-built limits and filters model local to create_server
from hanrag.integrations import require

require("mcp")

import hmac  # noqa: E402 - after the one-line missing-extra check
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Annotated, Any  # noqa: E402

import anyio  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp.server.mcpserver.exceptions import ToolError  # noqa: E402
from mcp_types import ToolAnnotations  # noqa: E402
from pydantic import Field, ValidationError  # noqa: E402
from starlette.types import ASGIApp, Receive, Scope, Send  # noqa: E402

import hanrag  # noqa: E402
from hanrag.api import Index  # noqa: E402
from hanrag.config import Config  # noqa: E402
from hanrag.integrations import chunk_citation, citation  # noqa: E402
from hanrag.records import Chunk, Hit, SearchLimits  # noqa: E402
from hanrag.server import (  # noqa: E402
    API_KEY_HEADER,
    BodyLimitMiddleware,
    LocalOnlyMiddleware,
    allowed_hosts,
    api_key_for,
    check_bind,
    check_port_free,
    scrub_paths,
)
from hanrag.server.middleware import send_json  # noqa: E402
from hanrag.server.models import filters_model as make_filters_model  # noqa: E402
from hanrag.server.models import search_model as make_search_model  # noqa: E402
from hanrag.server.output import hide_absolute_paths, jsonable  # noqa: E402

HTTP_HOST = "127.0.0.1"
MCP_PATH = "/mcp"
RELOAD_EVERY_S = 1.0

INSTRUCTIONS = (
    "hanrag searches a knowledge base of Korean, Chinese (Hanja) and English documents. Call `search` with "
    "the user's question (in any of those languages; the index matches across scripts) to get ranked "
    "passages; quote a passage's text with its `citation`. Use `get_document` for the context around a "
    "useful passage, `get_chunk` to re-read one passage by id, `stats` to learn what the index covers."
)


def _limits(cfg: Config) -> tuple[int, int, int]:
    """(max query chars, max top_k, max glob chars): every entry's (:class:`hanrag.records.SearchLimits`)."""
    limits = SearchLimits.of(cfg.server)
    return limits.max_query_chars, limits.max_top_k, limits.max_glob_chars


def _chunk_out(chunk: Chunk) -> dict[str, Any]:
    data = chunk.to_dict()
    data.pop("start", None)  # character offsets into the source document: noise for a model
    data.pop("end", None)
    return data


def _hit_out(hit: Hit) -> dict[str, Any]:
    c = hit.chunk
    return {
        "rank": hit.rank,
        "score": round(hit.score, 6),
        "citation": f"[{hit.rank}] {citation(hit)}",
        "text": c.text,
        "chunk_id": c.chunk_id,
        "doc_id": c.doc_id,
        "title": c.title,
        "headings": list(c.headings),
        "source": c.source,
        "path": c.path,
        "page": c.page,
        "lang": c.lang,
        "tier": c.tier,
        "provenance": c.provenance,
        "labels": list(c.labels),
        "also_in": list(hit.also_in),
    }


class _Reloader:
    """Swap to a newer snapshot before a call, checking the CURRENT pointer at most every ``every`` seconds."""

    def __init__(self, index: Index, every: float = RELOAD_EVERY_S) -> None:
        self.index = index
        self.every = every
        self._checked = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            now = time.monotonic()
            if now - self._checked < self.every:
                return
            self._checked = now
        self.index.reload()


def create_server(index: Index, cfg: Config, *, reload_every: float = RELOAD_EVERY_S) -> MCPServer:
    """The MCP server answering from ``index``; limits come from ``cfg.server`` (as for the HTTP server)."""
    max_chars, max_top_k, max_glob = _limits(cfg)
    filters_model = make_filters_model(max_glob=max_glob)
    search_model = make_search_model(max_chars, max_top_k, filters_model)
    filters_schema = {"anyOf": [filters_model.model_json_schema(), {"type": "null"}]}
    reload = _Reloader(index, reload_every)
    hidden = {str(Path(index.index_dir).resolve()): "<index>", str(Path(index.index_dir).absolute()): "<index>"}
    # WARNING: the SDK logs every refused tool call at INFO; stderr is the only channel an stdio server has
    server = MCPServer("hanrag", version=hanrag.__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

    async def fresh(work, *args: Any) -> Any:
        """Reload if a build published a new snapshot, then run ``work`` off the event loop."""
        def run() -> Any:
            reload()
            return work(*args)

        return await anyio.to_thread.run_sync(run)

    @server.tool(
        name="search",
        title="Search the knowledge base",
        annotations=read_only,
        structured_output=True,
        description=(
            "Find the passages that answer a question in the indexed documents (Korean, Chinese/Hanja and "
            "English; a query in one script also finds the others). Use this first for any question about "
            "the documents' content. Returns up to top_k passages, best first, each with its full text and a "
            "`citation` line ('[rank] title › heading — source URL or path') to quote alongside the text, "
            "plus chunk_id / doc_id for get_chunk and get_document. Optional filters narrow the search "
            "before ranking: lang (ko, zh, en), tier (0 = the team's own notes, higher = less curated), "
            "provenance (human, ai-draft), source (a glob over the source URL or path), labels (all must match)."
        ),
    )
    # The bounds are published in the tool's schema but checked here, by the HTTP server's request model: the
    # SDK's own check of the signature answers a bad argument with a multi-line pydantic report and a URL,
    # where an agent (and the person reading its log) needs one line naming the argument.
    async def search(
        query: Annotated[str, Field(json_schema_extra={"minLength": 1, "maxLength": max_chars},
                                    description="the question or keywords, in Korean, Chinese or English")],
        top_k: Annotated[Any, Field(json_schema_extra={"type": "integer", "minimum": 1, "maximum": max_top_k},
                                    description="how many passages to return")] = 10,
        mode: Annotated[Any, Field(json_schema_extra={"type": "string", "enum": ["hybrid", "bm25", "dense"]},
                                   description="hybrid (default, best in general); bm25 for exact words, codes "
                                               "and names; dense for paraphrases")] = "hybrid",
        filters: Annotated[Any, Field(json_schema_extra=filters_schema,
                                      description="optional: only passages matching all given fields")] = None,
    ) -> dict[str, Any]:
        try:  # the HTTP server's own request model: the same bounds and checks (e.g. a blank query)
            body = search_model.model_validate(
                {"query": query, "top_k": top_k, "mode": mode, "explain": False, "filters": filters})
        except ValidationError as exc:
            raise ToolError(_validation_line(exc)) from None
        flt = body.filters.to_filters() if body.filters is not None else None
        try:
            hits = await fresh(lambda: index.search(body.query, top_k=body.top_k, mode=body.mode, filters=flt))
        except ValueError as exc:  # the pipeline's own input checks (e.g. a bad glob)
            raise ToolError(str(exc)) from None
        return {"query": body.query, "mode": body.mode, "top_k": body.top_k, "hits": [_hit_out(h) for h in hits]}

    @server.tool(
        name="get_chunk",
        title="Read one passage",
        annotations=read_only,
        structured_output=True,
        description=(
            "Return one passage by its chunk_id (from search results): its full text, title, headings, "
            "source and a citation line. Use it to re-read a passage exactly before quoting it; use "
            "get_document instead for the text around it."
        ),
    )
    async def get_chunk(
        chunk_id: Annotated[str, Field(min_length=1, max_length=max_chars, description="a chunk_id from search")],
    ) -> dict[str, Any]:
        def lookup() -> dict[str, Any]:
            try:
                chunk = index.chunk(chunk_id)
            except (KeyError, IndexError):
                chunk = None
            if chunk is None:
                raise ToolError(f"no chunk {chunk_id!r} in the index (ids come from search results)")
            return {**_chunk_out(chunk), "citation": chunk_citation(chunk)}

        return await fresh(lookup)

    @server.tool(
        name="get_document",
        title="Read a whole document",
        annotations=read_only,
        structured_output=True,
        description=(
            "Return every passage of one document, in reading order, by its doc_id (from search results). "
            "Use it when a search hit is relevant and you need the surrounding context or the whole text."
        ),
    )
    async def get_document(
        doc_id: Annotated[str, Field(min_length=1, max_length=max_chars, description="a doc_id from search")],
    ) -> dict[str, Any]:
        def lookup() -> dict[str, Any]:
            try:
                chunks = index.document(doc_id)
            except KeyError:
                chunks = []
            if not chunks:
                raise ToolError(f"no document {doc_id!r} in the index (ids come from search results)")
            first = chunks[0]
            return {"doc_id": doc_id, "title": first.title, "source": first.source,
                    "citation": f"{first.title or doc_id} — {first.source or first.path}",
                    "chunks": [_chunk_out(c) for c in chunks]}

        return await fresh(lookup)

    @server.tool(
        name="stats",
        title="Describe the index",
        annotations=read_only,
        structured_output=True,
        description=(
            "Describe the knowledge base: number of documents and passages, passages per language and tier, "
            "the embedding model, when it was built and which snapshot is served. Use it to learn what the "
            "index covers; it does not answer questions about content (use search)."
        ),
    )
    async def stats() -> dict[str, Any]:
        data = await fresh(index.stats)
        # as on the HTTP server: no absolute paths of the machine leave the server
        return hide_absolute_paths(scrub_paths(jsonable(data), hidden))

    return server


def _validation_line(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{loc}: {' '.join(str(err.get('msg', 'invalid')).split())}")
    return "invalid arguments: " + "; ".join(parts)


class ApiKeyMiddleware:
    """Every HTTP request needs the configured key in the ``X-API-Key`` header (compared in constant time)."""

    def __init__(self, app: ASGIApp, key: str) -> None:
        self.app = app
        self.key = key.encode()
        self.header = API_KEY_HEADER.lower().encode("latin-1")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers", [])).get(self.header, b"")
            if not given or not hmac.compare_digest(given, self.key):
                await send_json(send, 401, {"error": f"missing or wrong {API_KEY_HEADER} header"})
                return
        await self.app(scope, receive, send)


def http_app(server: MCPServer, cfg: Config, port: int) -> ASGIApp:
    """The streamable-HTTP ASGI app with the HTTP server's access rules and body limit around it."""
    app: ASGIApp = server.streamable_http_app(streamable_http_path=MCP_PATH, host=HTTP_HOST)
    key = api_key_for(cfg)
    if key:
        app = ApiKeyMiddleware(app, key)
    else:
        app = LocalOnlyMiddleware(app, hosts=allowed_hosts(cfg, HTTP_HOST))
    return BodyLimitMiddleware(app, limit=cfg.server.max_body_bytes, timeout=cfg.server.read_timeout_s)


def serve(index_dir: str | Path, cfg: Config, *, http: bool = False, port: int | None = None,
          index: Index | None = None, log_level: str = "warning") -> None:
    """Serve the index over stdio (default) or streamable HTTP on 127.0.0.1 until interrupted."""
    index = index if index is not None else hanrag.open(index_dir, config=cfg)
    server = create_server(index, cfg)
    if not http:
        server.run("stdio")
        return
    import uvicorn

    from hanrag.server.edge import uvicorn_config

    port = cfg.server.port if port is None else port
    check_bind(HTTP_HOST, cfg)
    check_port_free(HTTP_HOST, port)
    # the HTTP server's edge: deadlines for a request's head and body, a cap on open connections
    uvicorn.Server(uvicorn_config(http_app(server, cfg, port), cfg, HTTP_HOST, port, log_level)).run()


__all__ = ["INSTRUCTIONS", "MCP_PATH", "create_server", "http_app", "serve"]
