"""Running the server: the bind checks, uvicorn with the edge limits it lacks (:mod:`.edge`), and ``serve.json``
for the CLI (see :mod:`.discovery`)."""

from __future__ import annotations

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
from hanrag.server.edge import uvicorn_config


def check_port_free(host: str, port: int) -> None:
    """Fail early, with a clear message, when the address is taken."""
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]"), port))
        except OSError as exc:
            raise ServerError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


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
