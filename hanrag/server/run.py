"""Running the server: the bind checks, uvicorn with the edge limits it lacks, and ``serve.json`` for the CLI (see
:mod:`.discovery`).

uvicorn reads a request's head for as long as a client takes and accepts every connection: :func:`edge_protocol`
adds a deadline for the head (``server.read_timeout_s``; the body's deadline is :class:`.BodyLimitMiddleware`'s) and
a cap on open connections (``server.max_connections``), so slow or idle clients cannot hold the server's sockets.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import hanrag
from hanrag.config import Config
from hanrag.server.access import ServerError, api_key_for, check_bind
from hanrag.server.discovery import ServeInfo, connect_host, key_sha256, remove_serve_file, search_fingerprint


def check_port_free(host: str, port: int) -> None:
    """Fail early, with a clear message, when the address is taken."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]"), port))
        except OSError as exc:
            raise ServerError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


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


def _announce(index_dir: Path, cfg: Config, host: str, port: int, holder: dict[str, Any]) -> None:
    """Write serve.json once uvicorn listens (the index is warm by the time this runs)."""
    from hanrag.server.discovery import write_serve_file

    target = connect_host(host)
    if target is None or cfg.backend.kind != "embedded":
        return  # no loopback route to it, or a remote index that has no folder of its own to announce in
    while "server" not in holder:  # warming may finish before serve() has made the uvicorn server
        time.sleep(0.02)
    server = holder["server"]
    while not server.started and not server.should_exit:
        time.sleep(0.02)
    if server.should_exit:
        return
    info = ServeInfo(host=target, port=port, pid=os.getpid(), key_sha256=key_sha256(api_key_for(cfg)),
                     config=search_fingerprint(cfg), version=hanrag.__version__)
    try:
        write_serve_file(index_dir, info)
    except OSError:
        pass  # a read-only index folder: the CLI simply searches in-process


def serve(
    index_dir: Path,
    cfg: Config,
    host: str | None = None,
    port: int | None = None,
    log_level: str = "info",
    index: Any | None = None,
) -> None:
    """Run the server until interrupted. Raises :class:`ServerError` for a refused bind.

    The server listens at once and answers ``/health`` with ``loading`` (503) while the index is opened
    and warmed in a thread; then ``ready``, and ``serve.json`` in the index folder tells a local
    ``hanrag search`` where it is. The file is removed when the server stops.
    """
    import uvicorn

    from hanrag.server.app import create_app

    host = host or cfg.server.host
    port = cfg.server.port if port is None else port
    check_bind(host, cfg)
    check_port_free(host, port)
    holder: dict[str, Any] = {}

    def on_ready() -> None:
        # announced before /health says ready (and at most 10 s later), so a first query measured right
        # after `ready` does not share the process with the announcement's imports, hashing and fsyncs
        # (45 ms against 11 ms steady on the sample index); a CLI that finds serve.json a moment early
        # gets 503 and searches in-process
        announce = threading.Thread(target=_announce, args=(Path(index_dir), cfg, host, port, holder),
                                    name="hanrag-announce", daemon=True)
        announce.start()
        announce.join(timeout=10)

    app = create_app(index_dir, cfg, index=index, bind_host=host, background=True, on_ready=on_ready)
    holder["server"] = server = uvicorn.Server(uvicorn_config(app, cfg, host, port, log_level))
    try:
        server.run()
    finally:
        remove_serve_file(Path(index_dir), os.getpid())
