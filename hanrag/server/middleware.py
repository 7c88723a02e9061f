"""ASGI middleware: the key-less guard (Host allow-list, JSON-only POSTs) and the request body limit and deadline.

Both answer before FastAPI parses anything, with the same one-line ``{"error": ...}`` body as the routes.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hanrag.server.access import host_of


class LocalOnlyMiddleware:
    """Without an API key: answer only loopback Host names (DNS rebinding) and only JSON POSTs (cross-site forms).

    A browser sends a cross-site HTML form or a "simple" fetch without a CORS preflight, but only with
    a form or text content type (or none); ``application/json`` needs a preflight, which this server
    never grants. A rebinding page reaches the server under its own host name, which is not allowed.
    The Host header is parsed strictly (one header, ``host[:port]``): a request without one (HTTP/1.0)
    or with one that is not a host name is refused like a foreign host.

    A POST without a body and without a content type (``POST /index/rebuild``, whose body is optional) is
    answered when no browser page sent it: browsers send ``Origin`` with every POST, so one is accepted
    only without ``Origin`` or from an allowed host, and never with ``Sec-Fetch-Site: cross-site``.
    """

    def __init__(self, app: ASGIApp, hosts: frozenset[str]) -> None:
        self.app = app
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        raw = scope.get("headers", [])
        host_headers = [value for name, value in raw if name == b"host"]
        if len(host_headers) != 1:
            await send_json(send, 421, {
                "error": "one Host header is required without an API key "
                "(use localhost, or add a name to server.allowed_hosts)"
            })
            return
        name = host_of(host_headers[0].decode("latin-1"))
        if name is None or name not in self.hosts:
            shown = name if name is not None else host_headers[0].decode("latin-1")
            await send_json(send, 421, {
                "error": f"Host {shown[:100]!r} is not allowed without an API key "
                "(use localhost, or add it to server.allowed_hosts)"
            })
            return
        headers = dict(raw)
        if scope.get("method") == "POST":
            ctype = headers.get(b"content-type", b"").decode("latin-1").split(";", 1)[0].strip().lower()
            is_json = ctype == "application/json" or ctype.endswith("+json")
            if not is_json and not (not ctype and _no_body(headers) and self._not_cross_site(headers)):
                await send_json(send, 415, {
                    "error": "POST needs Content-Type: application/json (send {} for the defaults)"
                })
                return
        await self.app(scope, receive, send)

    def _not_cross_site(self, headers: dict[bytes, bytes]) -> bool:
        """No browser page of another site sent this: no ``Origin`` (or one of an allowed host) and no
        ``Sec-Fetch-Site`` saying cross-site or same-site."""
        site = headers.get(b"sec-fetch-site", b"").decode("latin-1").strip().lower()
        if site not in ("", "same-origin", "none"):
            return False
        origin = headers.get(b"origin")
        if origin is None:
            return True
        parts = urlsplit(origin.decode("latin-1").strip())
        return parts.scheme in ("http", "https") and host_of(parts.netloc) in self.hosts


def _no_body(headers: dict[bytes, bytes]) -> bool:
    """The request declares no body: no chunked transfer and no Content-Length, or 0 (HTTP/1.1 3.3.3)."""
    return b"transfer-encoding" not in headers and headers.get(b"content-length", b"0").strip() == b"0"


class BodyLimitMiddleware:
    """Answer 413 to request bodies over ``limit`` bytes, declared or streamed, before parsing, and 408 to a body
    that has not fully arrived ``timeout`` seconds after the request's head (a client trickling its body holds
    a connection and a task no longer than that)."""

    def __init__(self, app: ASGIApp, limit: int, timeout: float = 10.0) -> None:
        self.app = app
        self.limit = limit
        self.timeout = timeout

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
        try:
            async with asyncio.timeout(self.timeout):
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
        except TimeoutError:
            await send_json(send, 408, {
                "error": f"the request body did not arrive within {self.timeout:g} s (server.read_timeout_s)"
            }, close=True)
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)

    def _too_large(self) -> dict[str, str]:
        return {"error": f"request body larger than {self.limit} bytes (server.max_body_bytes)"}


async def send_json(send: Send, status: int, body: dict[str, Any], close: bool = False) -> None:
    """One JSON response; ``close``: and end the connection (the request was not read to its end)."""
    payload = json.dumps(body, ensure_ascii=False).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
