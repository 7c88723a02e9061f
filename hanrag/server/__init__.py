"""The HTTP service: a thin FastAPI shell over :func:`hanrag.open` and the incremental build.

``create_app(index_dir, cfg)`` gives the ASGI app; ``serve(...)`` runs it with uvicorn.
Search requests run in the worker thread pool against the open :class:`hanrag.api.Index`;
``POST /index/rebuild`` runs :func:`hanrag.pipeline.build_index` (or, with
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

Modules: :mod:`.app` (routes), :mod:`.models` (request/response bodies), :mod:`.access` (key, Host
allow-list, bind check), :mod:`.middleware`, :mod:`.jobs` (rebuilds), :mod:`.output` (records to JSON),
:mod:`.warm` (loading before ready), :mod:`.run` (uvicorn), :mod:`.discovery` and :mod:`.client`
(``hanrag search`` through a running server).

The names below are imported on first use: the CLI's client reaches :mod:`.discovery` without FastAPI.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (~8 ms of every relayed `hanrag search`)
if TYPE_CHECKING:
    from typing import Any

_EXPORTS = {
    "create_app": "app",
    "STATIC_DIR": "app",
    "HARD_MAX_TOP_K": "app",
    "serve": "run",
    "check_port_free": "run",
    "ServerError": "access",
    "API_KEY_HEADER": "access",
    "LOOPBACK_HOSTS": "access",
    "api_key_for": "access",
    "allowed_hosts": "access",
    "check_bind": "access",
    "host_of": "access",
    "is_loopback": "access",
    "BodyLimitMiddleware": "middleware",
    "LocalOnlyMiddleware": "middleware",
    "Jobs": "jobs",
    "MAX_JOBS_KEPT": "jobs",
    "scrub_paths": "jobs",
    "highlights": "output",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hanrag.server' has no attribute {name!r}")
    return getattr(importlib.import_module(f"hanrag.server.{module}"), name)
