"""The CLI's side of a running server: send ``hanrag search`` to it, get back what in-process search gives.

Used only when :func:`hanrag.server.discovery.read_serve_file` names a live loopback server of the same
index with the same search settings and a key this client holds (or none needed). Any problem (refused
connection, timeout, a non-200 answer) returns None and the caller searches in-process, which gives the
same result, or the same error, itself. Standard library only, like discovery: this runs before any model.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from hanrag.config import Config
from hanrag.records import Chunk, Explanation, Filters, Hit, QueryPlan
from hanrag.server.access import API_KEY_HEADER, api_key_for
from hanrag.server.discovery import ServeInfo, key_sha256, read_serve_file, search_fingerprint

CONNECT_TIMEOUT_S = 0.5  # a local server accepts at once; anything slower is not worth waiting for
READ_TIMEOUT_S = 120.0  # a search of a large index on a busy machine
MAX_RESPONSE_BYTES = 64 * 1024 * 1024


def find_server(index_dir: Path, cfg: Config) -> ServeInfo | None:
    """The running server this client may use for ``index_dir`` under ``cfg``, or None."""
    info = read_serve_file(index_dir)
    if info is None or info.config != search_fingerprint(cfg):
        return None
    if info.key_sha256 and key_sha256(api_key_for(cfg)) != info.key_sha256:
        return None  # the server needs a key this client does not have
    return info


def _tuples(value: Any) -> Any:
    """JSON lists back to the tuples the records hold (so they compare and serialise like the originals)."""
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    return value


def _hit(data: dict[str, Any]) -> Hit:
    ex = data.get("explanation")
    return Hit(
        chunk=Chunk.from_dict(_tuples(data["chunk"])),
        score=data["score"],
        rank=data["rank"],
        also_in=tuple(data.get("also_in") or ()),
        explanation=Explanation.from_dict(_tuples(ex)) if ex is not None else None,
    )


def _filters_body(filters: Filters | None) -> dict[str, Any] | None:
    if filters is None or filters.is_empty():
        return None
    return {"lang": list(filters.lang), "tier": list(filters.tier), "provenance": list(filters.provenance),
            "source": filters.source_glob, "labels": list(filters.labels)}


def post_search(info: ServeInfo, key: str, body: dict[str, Any]) -> dict[str, Any] | None:
    """POST /search to the server; the JSON answer, or None on any failure.

    HTTP/1.1 over a plain socket, one request per connection: ``http.client`` would import ``ssl`` and
    ``email`` (a tenth of a second or more) to talk to a loopback server that sends one JSON body with a
    Content-Length."""
    payload = json.dumps(body).encode()
    host = info.host.strip("[]")
    head = [
        "POST /search HTTP/1.1",
        f"Host: {'[' + host + ']' if ':' in host else host}:{info.port}",
        "Content-Type: application/json",
        "Accept: application/json",
        f"Content-Length: {len(payload)}",
        "Connection: close",
    ]
    if key and info.key_sha256:
        head.append(f"{API_KEY_HEADER}: {key}")
    try:
        with socket.create_connection((host, info.port), timeout=CONNECT_TIMEOUT_S) as sock:
            sock.settimeout(READ_TIMEOUT_S)
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
            raw = _read_all(sock)
    except (OSError, UnicodeError):
        return None
    return _json_body(raw)


def _read_all(sock: socket.socket) -> bytes:
    parts = []
    size = 0
    while True:
        part = sock.recv(65536)
        if not part:
            return b"".join(parts)
        parts.append(part)
        size += len(part)
        if size > MAX_RESPONSE_BYTES:
            raise OSError("response too large")


def _json_body(raw: bytes) -> dict[str, Any] | None:
    """The JSON body of a complete 200 response with a Content-Length; None for anything else."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return None
    lines = head.decode("latin-1").split("\r\n")
    status = lines[0].split(" ", 2)
    if len(status) < 2 or status[1] != "200":
        return None
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    try:
        if "content-length" not in headers or int(headers["content-length"]) != len(body):
            return None  # chunked or cut short: not worth parsing here, search in-process instead
        data = json.loads(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def search_via_server(
    index_dir: Path, cfg: Config, query: str, top_k: int, mode: str, filters: Filters | None, explain: bool
) -> tuple[QueryPlan, list[Hit]] | None:
    """(plan, hits) from a running server of ``index_dir``, or None when there is none this client may use."""
    info = find_server(index_dir, cfg)
    if info is None:
        return None
    body = {"query": query, "top_k": top_k, "mode": mode, "filters": _filters_body(filters), "explain": explain,
            "plan": True}
    data = post_search(info, api_key_for(cfg), body)
    if data is None or data.get("plan") is None:
        return None
    try:
        return QueryPlan.from_dict(_tuples(data["plan"])), [_hit(h) for h in data["hits"]]
    except (KeyError, TypeError, ValueError):
        return None
