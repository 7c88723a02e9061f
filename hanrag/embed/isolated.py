"""Any embedder run in a child process (``[embedder] isolate = true``)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from hanrag.config import EmbedderConfig
from hanrag.embed.make import make_embedder
from hanrag.embed.text import EmbedderError


def _isolated_worker(conn: Any, cfg_fields: dict[str, Any]) -> None:
    """Child side of :class:`IsolatedEmbedder`: load the model, answer calls until the pipe closes."""
    try:
        embedder = make_embedder(EmbedderConfig(**cfg_fields))
        conn.send((True, {k: getattr(embedder, k) for k in ("dim", "max_tokens", "truncates", "backend")}))
    except Exception as exc:
        conn.send((False, f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            method, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            conn.send((True, getattr(embedder, method)(*args)))
        except Exception as exc:
            conn.send((False, f"{type(exc).__name__}: {exc}"))


class IsolatedEmbedder:
    """Any embedder run in a child process (``[embedder] isolate = true``).

    A crash in native code (an abort, a segfault) kills only the child: the call that was
    running raises :class:`EmbedderError` and the next call starts a fresh child, so a server
    answers that one request with an error and keeps serving. Costs one extra process holding
    the model and a pipe round trip per call.
    """

    def __init__(self, cfg: EmbedderConfig) -> None:
        import multiprocessing

        self._fields = {**dataclasses.asdict(cfg), "isolate": False}
        self._ctx = multiprocessing.get_context("spawn")  # never fork a threaded server
        self._lock = threading.Lock()
        self._proc: Any = None
        self._conn: Any = None
        self._identity: dict[str, Any] | None = None
        with self._lock:
            self._start()

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_isolated_worker, args=(child, self._fields), daemon=True)
        proc.start()
        child.close()
        try:
            ok, info = parent.recv()
        except (EOFError, OSError) as exc:
            proc.join(5)
            raise EmbedderError(
                f"the embedder process exited while loading the model (exit code {proc.exitcode})"
            ) from exc
        if not ok:
            proc.join(5)
            raise EmbedderError(str(info))
        self._proc, self._conn = proc, parent
        self.dim, self.max_tokens, self.truncates, self.backend = (
            info["dim"],
            info["max_tokens"],
            info["truncates"],
            info["backend"],
        )

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _call(self, method: str, *args: Any) -> Any:
        with self._lock:
            if self._proc is None or not self._proc.is_alive():
                self._start()
            try:
                self._conn.send((method, args))
                ok, value = self._conn.recv()
            except (EOFError, OSError) as exc:
                self._proc.join(5)
                code = self._proc.exitcode
                self._proc = None
                how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
                raise EmbedderError(
                    f"the embedder process died ({how}) during {method}; it is restarted on the next call"
                ) from exc
        if not ok:
            raise EmbedderError(value)
        return value

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._call("encode_passages", list(texts))

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._call("encode_queries", list(texts))

    def count_tokens(self, text: str) -> int:
        return self._call("count_tokens", text)

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            self._identity = self._call("identity")
        return dict(self._identity)

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._conn.close()
                self._proc.join(5)
                self._proc = None
