"""How ``hanrag search`` finds a running ``hanrag serve`` of the same index: ``serve.json`` in the index folder.

The server writes the file (atomically) once it is loaded and warm and removes it on a clean exit. It
holds where to connect (a loopback address), the server's pid, a SHA-256 of its API key (never the key)
and a fingerprint of the search settings, so a client uses the server only when it would get the same
results as searching in-process. A file whose pid is gone is stale and ignored; a refused connection is
the client's business (it falls back to in-process search).

The file is read by :func:`hanrag.server.client.read_serve` (the relay client, which a cold ``hanrag search``
imports on its own); :func:`read_serve_file` gives its fields as a ``ServeInfo``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

# the file name and the sections of the search fingerprint live with the relay client, which reads them on every
# `hanrag search` and must not import this module (dataclasses alone cost it ~6 ms)
from hanrag.server.client import SEARCH_SECTIONS, SERVE_FILE, pid_alive, read_serve

__all__ = ["SEARCH_SECTIONS", "SERVE_FILE", "ServeInfo", "connect_host", "key_sha256", "pid_alive", "read_serve_file",
           "remove_serve_file", "search_fingerprint", "write_serve_file"]

if TYPE_CHECKING:
    from hanrag.config import Config


@dataclass(frozen=True)
class ServeInfo:
    host: str  # the loopback address to connect to
    port: int
    pid: int
    key_sha256: str  # "" when the server needs no key
    config: str  # search_fingerprint() of the server's config
    version: str

    @property
    def url(self) -> str:
        return f"http://[{self.host}]:{self.port}" if ":" in self.host else f"http://{self.host}:{self.port}"


def key_sha256(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest() if key else ""


def search_fingerprint(cfg: Config) -> str:
    """A hash of every setting that changes what a search returns, and of the folder relative paths are read
    from (a lexicon named relatively may be another file); secrets are left out."""
    data = cfg.to_dict()
    milvus = {k: v for k, v in data["milvus"].items() if k != "token"}
    blob = json.dumps({"sections": {s: data[s] for s in SEARCH_SECTIONS}, "milvus": milvus,
                       "base_dir": cfg.base_dir}, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def connect_host(bind_host: str) -> str | None:
    """The loopback address a local client reaches a server bound to ``bind_host`` on; None when it has none
    (a server bound to one public address is not used by the CLI)."""
    host = bind_host.strip("[]").lower()
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    if host == "localhost":
        return "127.0.0.1"
    import ipaddress

    try:
        return host if ipaddress.ip_address(host).is_loopback else None
    except ValueError:
        return None


def write_serve_file(index_dir: Path, info: ServeInfo) -> Path:
    """Publish ``info`` as ``serve.json`` (write to a temporary file, then rename: a reader never sees half).

    Not :func:`hanrag.fsutil.atomic_write_json`: that one fsyncs file and folder for durability, which a
    file that only lives as long as the server process does not need."""
    target = Path(index_dir) / SERVE_FILE
    fd, tmp = tempfile.mkstemp(prefix=f".{SERVE_FILE}.", suffix=".tmp", dir=index_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(asdict(info), fh)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target


def remove_serve_file(index_dir: Path, pid: int) -> None:
    """Remove ``serve.json`` if it is this process's (another server may have replaced it since)."""
    info = read_serve_file(index_dir, check_pid=False)
    if info is not None and info.pid == pid:
        with contextlib.suppress(OSError):
            (Path(index_dir) / SERVE_FILE).unlink()


def read_serve_file(index_dir: Path, check_pid: bool = True) -> ServeInfo | None:
    """The running server of ``index_dir``, or None: no file, an unreadable or malformed one, a dead pid."""
    data = read_serve(index_dir, check_pid)
    return ServeInfo(**data) if data is not None else None
