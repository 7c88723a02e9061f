"""ASGI middleware: the key-less guard (Host allow-list, JSON-only POSTs) and the request body limit.

Both answer before FastAPI parses anything, with the same one-line ``{"error": ...}`` body as the routes.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hanrag.server.access import host_of


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
                await send_json(send, 421, {
                    "error": f"Host {name[:100]!r} is not allowed without an API key "
                    "(use localhost, or add it to server.allowed_hosts)"
                })
                return
        if scope.get("method") == "POST":
            ctype = headers.get(b"content-type", b"").decode("latin-1").split(";", 1)[0].strip().lower()
            if ctype != "application/json" and not ctype.endswith("+json"):
                await send_json(send, 415, {
                    "error": "POST needs Content-Type: application/json (send {} for the defaults)"
                })
                return
        await self.app(scope, receive, send)


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
                    await send_json(send, 400, {"error": "invalid Content-Length header"})
                    return
                if declared > self.limit:
                    await send_json(send, 413, self._too_large())
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
                await send_json(send, 413, self._too_large())
                return
            messages.append(message)
            more = message.get("more_body", False)

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    def _too_large(self) -> dict[str, str]:
        return {"error": f"request body larger than {self.limit} bytes (server.max_body_bytes)"}


async def send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = json.dumps(body, ensure_ascii=False).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": payload})
