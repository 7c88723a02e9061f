"""``hanrag serve`` (the HTTP API and the search inspector) and ``hanrag mcp`` (the index as tools for agents,
hanrag[mcp]): the index opened here, then handed to :mod:`hanrag.server` or :mod:`hanrag.integrations.mcp`."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Annotated

import typer

from hanrag.commands.common import ConfigOpt, console, data, err_console, fail, load, open_index


def serve(
    index: Annotated[Path, typer.Argument(help="index folder (from `hanrag build`)")],
    host: Annotated[str | None, typer.Option("--host", help="address to bind (default: server.host)")] = None,
    port: Annotated[
        int | None, typer.Option("--port", help="TCP port (default: server.port)", min=1, max=65535)
    ] = None,
    corpus: Annotated[
        Path | None, typer.Option("--corpus", help="corpus folder POST /index/rebuild re-indexes (server.corpus_root)")
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Serve the HTTP API (/search, /chunks, /documents, /stats, /index/rebuild) and the web inspector at /."""
    from hanrag.server import ServerError, api_key_for, check_bind, check_port_free
    from hanrag.server import serve as run_server

    cfg = load(config)
    if corpus is not None:
        if not corpus.is_dir():
            fail(f"{corpus}: no such corpus folder", "give the folder the index was built from")
        cfg.server.corpus_root = str(corpus.resolve())
    host = host or cfg.server.host
    port = cfg.server.port if port is None else port
    try:
        check_bind(host, cfg)
        check_port_free(host, port)
    except ServerError as exc:
        fail(str(exc), "bind 127.0.0.1 (the default), or set an API key" if "non-loopback" in str(exc)
             else "choose another --port")
    idx = open_index(index, cfg)
    shown = f"[{host}]" if ":" in host else host
    console.print(data(f"hanrag: {idx!r}"))
    console.print(data(f"search inspector: http://{shown}:{port}/   API schema: http://{shown}:{port}/openapi.json"))
    console.print("API key: " + ("required (X-API-Key header)" if api_key_for(cfg) else "none (loopback only)"))
    if not cfg.server.corpus_root:
        console.print("[dim]POST /index/rebuild is off: no corpus root (--corpus or server.corpus_root)[/]")
    try:
        run_server(index, cfg, host=host, port=port, index=idx)
    except ServerError as exc:
        fail(str(exc), "choose another --port")


def mcp_cmd(
    index: Annotated[Path, typer.Argument(help="index folder (from `hanrag build`)")],
    http: Annotated[bool, typer.Option("--http", help="streamable HTTP on 127.0.0.1 instead of stdio")] = False,
    port: Annotated[
        int | None, typer.Option("--port", help="TCP port for --http (default: server.port)", min=1, max=65535)
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Serve the index to agents over MCP: tools search, get_chunk, get_document, stats (needs hanrag[mcp]).

    stdio by default: only the process that spawned it talks to it, so no API key is asked for. --http
    serves http://127.0.0.1:PORT/mcp with the HTTP server's rules (X-API-Key when a key is configured).
    """
    try:
        from hanrag.integrations import mcp as mcp_server
    except ImportError as exc:
        fail(str(exc))
    from hanrag.server import ServerError, api_key_for

    if port is not None and not http:
        fail("--port applies to --http only (stdio has no port)")
    cfg = load(config)
    # stdout is the stdio transport's wire: whatever loading prints goes to stderr
    with contextlib.redirect_stdout(sys.stderr):
        idx = open_index(index, cfg)
    if http:
        port = cfg.server.port if port is None else port
        err_console.print(data(f"hanrag mcp: {idx!r}\nstreamable HTTP: http://127.0.0.1:{port}{mcp_server.MCP_PATH}   "
                               + ("API key: required (X-API-Key header)" if api_key_for(cfg) else "API key: none")))
    try:
        mcp_server.serve(index, cfg, http=http, port=port, index=idx)
    except ServerError as exc:
        fail(str(exc), "choose another --port")
