"""uvicorn with the edge limits it lacks, for every hanrag server (``hanrag serve``, ``hanrag mcp --http``).

uvicorn reads a request's head for as long as a client takes and accepts every connection: :func:`edge_protocol`
adds a deadline for the head (``server.read_timeout_s``; the body's deadline is :class:`.BodyLimitMiddleware`'s) and
a cap on open connections (``server.max_connections``), so slow or idle clients cannot hold the server's sockets.
A module of its own so that the MCP server reaches it without reaching the HTTP app.
"""

from __future__ import annotations

import json
from typing import Any

from hanrag.config import Config


def _raw_response(status: bytes, error: str, *extra: bytes) -> bytes:
    """A whole JSON error response as bytes, written to a connection that is closed right after."""
    body = json.dumps({"error": error}).encode()
    head = [b"HTTP/1.1 " + status, b"content-type: application/json", b"connection: close", *extra,
            b"content-length: " + str(len(body)).encode()]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


_REFUSED = _raw_response(b"503 Service Unavailable", "too many open connections (server.max_connections)",
                         b"retry-after: 1")
_TIMED_OUT = _raw_response(b"408 Request Timeout", "the request head did not arrive in time (server.read_timeout_s)")


def edge_protocol(read_timeout: float, max_connections: int) -> type:
    """uvicorn's h11 protocol with a deadline for each request's head and a cap on open connections.

    The deadline runs from the connection (and again from each answered request of a kept-alive connection)
    until the next request's head is complete: a client that sends nothing, or trickles its header lines, is
    closed after ``read_timeout`` seconds (with 408 when it sent part of a head). A connection beyond
    ``max_connections`` open ones is answered 503 and closed before anything is read from it.
    """
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class EdgeH11Protocol(H11Protocol):
        _deadline: Any = None
        _partial = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.write(_REFUSED)
                transport.close()
                return
            self._arm()

        def data_received(self, data: bytes) -> None:
            self._partial = True
            cycle = self.cycle
            super().data_received(data)
            if self.cycle is not cycle:  # a new request's head is complete: the app (and the body deadline) take over
                self._disarm()

        def on_response_complete(self) -> None:
            cycle = self.cycle
            super().on_response_complete()
            if self.cycle is cycle and not self.transport.is_closing():  # waiting for the next request's head
                self._partial = False
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            self._deadline = self.loop.call_later(read_timeout, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if self.transport.is_closing():
                return
            if self._partial:
                self.transport.write(_TIMED_OUT)
            self.transport.close()

    return EdgeH11Protocol


def uvicorn_config(app: Any, cfg: Config, host: str, port: int, log_level: str = "info") -> Any:
    """The uvicorn configuration every hanrag server runs with (``hanrag serve``, ``hanrag mcp --http``)."""
    import uvicorn

    return uvicorn.Config(app, host=host.strip("[]"), port=port, log_level=log_level, server_header=False,
                          http=edge_protocol(cfg.server.read_timeout_s, cfg.server.max_connections))
