"""The CLI's side of a running server: ``hanrag search`` handed to it before anything heavy is imported.

``python -m hanrag`` / the ``hanrag`` command calls :func:`relay_search` first. When the index folder named
on the command line holds a ``serve.json`` of a live loopback server (:mod:`hanrag.server.discovery`) and
this client holds the key it needs (or none is needed), the command line goes to ``POST /cli/search``
with the working folder, the ``HANRAG_<SECTION>__…`` variables that shape a search and what the terminal
is like. The server parses it with the CLI's own ``search`` command (:mod:`hanrag.commands.search`), loads
the config as this process would (same folder, same variables), answers only when that config gives the
server's search settings, and sends back the text the command prints
(:func:`hanrag.commands.search.relayed_search`). Anything else (no server, a refused connection, a timeout,
settings that differ, an error to report) returns None and the full CLI runs here,
which gives the same output, or the same error, itself.

Standard library only, and little of it: this is the whole cost of a search a server answers (typer, rich,
the config module and numpy are not imported).
"""

from __future__ import annotations

import json
import os
import socket
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (every import here is paid per search)
if TYPE_CHECKING:
    from typing import Any

API_KEY_HEADER = "X-API-Key"
SERVE_FILE = "serve.json"  # in the index folder, written by `hanrag serve` (hanrag.server.discovery)
# the config sections that decide a search's result (server, confluence: not; milvus: where a remote index lives):
# what the server's search fingerprint covers and which HANRAG_<SECTION>__ variables a relayed search sends
SEARCH_SECTIONS = ("corpus", "chunking", "text", "lexicon", "bm25", "embedder", "index", "search", "backend")

CONNECT_TIMEOUT_S = 0.5  # a local server accepts at once; anything slower is not worth waiting for
READ_TIMEOUT_S = 120.0  # a search of a large index on a busy machine
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
_MAX_CONFIG_BYTES = 256 * 1024  # hanrag.config.MAX_CONFIG_BYTES (not imported: this module stays standard library)
# `hanrag search` options that take a value (tests/test_cold_start.py checks this against the command)
VALUE_OPTIONS = frozenset({"--top-k", "-k", "--mode", "--lang", "--tier", "--provenance", "--source", "--label",
                           "--config", "-c", "--backend"})
# what rich reads from the environment to decide colours and terminal behaviour
TERMINAL_VARS = ("TERM", "COLORTERM", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


def relayed(argv: list[str]) -> bool:
    """True when a running server answered ``hanrag ARGV`` and its output is printed."""
    out = relay_search(argv)
    if out is None:
        return False
    sys.stdout.write(out)
    sys.stdout.flush()
    return True


def relay_search(argv: list[str]) -> str | None:
    """What ``hanrag ARGV`` prints, answered by a running server of the index it names; None when there is none
    this client may use (the caller then runs the command itself)."""
    if len(argv) < 2 or argv[0] != "search" or {"--no-server", "--help"} & set(argv):
        return None
    index, config = _index_and_config(argv[1:])
    if index is None:
        return None
    info = read_serve(index)
    if info is None:
        return None
    key = ""
    if info["key_sha256"]:
        key = _api_key(config)
        import hashlib  # only for a server with a key (OpenSSL's hashlib is a few ms to import)

        if not key or hashlib.sha256(key.encode()).hexdigest() != info["key_sha256"]:
            return None  # the server needs a key this client does not have
    body = {"argv": argv[1:], "cwd": os.getcwd(), "env": search_env(os.environ), "terminal": terminal()}
    data = post_json(info["host"].strip("[]"), info["port"], "/cli/search", body, key)
    out = data.get("stdout") if data is not None else None
    return out if isinstance(out, str) else None


def _index_and_config(args: list[str]) -> tuple[str | None, str | None]:
    """The INDEX argument and the --config value of ``search`` arguments (None when absent)."""
    positional: list[str] = []
    config = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            positional += args[i + 1 :]
            break
        name, eq, value = arg.partition("=")
        if arg.startswith("-") and len(arg) > 1:
            if name in VALUE_OPTIONS and not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
                i += 1
            if name in ("--config", "-c"):
                config = value
        else:
            positional.append(arg)
        i += 1
    if config is None and os.path.isfile("hanrag.toml"):
        config = "hanrag.toml"  # the CLI's default
    return (positional[0] if positional else None), config


def read_serve(index: str | os.PathLike, check_pid: bool = True) -> dict[str, Any] | None:
    """The fields of ``index``'s ``serve.json`` (host, port, pid, key_sha256, config, version) when it names a
    loopback server whose pid is alive; None for no file, an unreadable or malformed one, another address or a dead
    pid. The one reader of the file (:func:`hanrag.server.discovery.read_serve_file` wraps it in a ``ServeInfo``)."""
    try:
        with open(os.path.join(index, SERVE_FILE), encoding="utf-8") as fh:
            data = json.load(fh)
        info = {"host": str(data["host"]), "port": int(data["port"]), "pid": int(data["pid"]),
                "key_sha256": str(data.get("key_sha256") or ""), "config": str(data["config"]),
                "version": str(data["version"])}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not _loopback_address(info["host"].strip("[]")) or not 0 < info["port"] < 65536:
        return None  # loopback only, whatever the file says
    if check_pid and not pid_alive(info["pid"]):
        return None
    return info


def _loopback_address(host: str) -> bool:
    import ipaddress  # ~1 ms; a name such as "localhost" is not an address (the server writes addresses)

    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True


def _api_key(config: str | None) -> str:
    """The key the full CLI would send (``api_key_for``: [server] api_key, its variable, else HANRAG_API_KEY)."""
    key = os.environ.get("HANRAG_SERVER__API_KEY")
    if key is None and config is not None:
        import tomllib

        try:
            if not os.path.isfile(config):
                return ""  # a FIFO or a device: never opened here; the full CLI refuses it
            with open(config, "rb") as fh:
                raw = fh.read(_MAX_CONFIG_BYTES + 1)  # hanrag.config.MAX_CONFIG_BYTES: no more is ever read
            if len(raw) > _MAX_CONFIG_BYTES:
                return ""
            data = tomllib.loads(raw.decode("utf-8-sig"))
            key = data.get("server", {}).get("api_key")
        except (OSError, ValueError, AttributeError, RecursionError):
            return ""  # the full CLI will report the config's problem
    if not isinstance(key, str) or not key.strip():
        key = os.environ.get("HANRAG_API_KEY", "")
    return key.strip()


def search_env(environ: Any) -> dict[str, str]:
    """The variables that may change a search (config overrides of the search sections) and those that decide
    how the terminal output looks; never a secret (keys, tokens)."""
    out = {k: environ[k] for k in TERMINAL_VARS if k in environ}
    for name, value in environ.items():
        upper = name.upper()
        if not upper.startswith("HANRAG_") or "__" not in upper or upper.endswith("TOKEN"):
            continue
        if upper[len("HANRAG_") :].split("__", 1)[0].lower() in (*SEARCH_SECTIONS, "milvus"):
            out[name] = value
    return out


def terminal() -> dict[str, Any]:
    """Whether stdout is a terminal and its size as rich measures it (any standard stream's terminal,
    COLUMNS/LINES over it, 80x25 when none)."""
    try:
        tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        tty = False
    width = height = 0
    for fd in (0, 1, 2):
        try:
            width, height = os.get_terminal_size(fd)
            break
        except (AttributeError, ValueError, OSError):
            continue
    columns, lines = os.environ.get("COLUMNS", ""), os.environ.get("LINES", "")
    width = int(columns) if columns.isdigit() else width
    height = int(lines) if lines.isdigit() else height
    if tty and os.environ.get("TERM", "").lower() in ("dumb", "unknown"):
        width, height = 80, 25
    return {"tty": tty, "width": width or 80, "height": height or 25}


def post_json(host: str, port: int, path: str, body: dict[str, Any], key: str = "") -> dict[str, Any] | None:
    """POST ``body`` as JSON to a loopback server; the JSON answer of a 200, or None on any failure.

    HTTP/1.1 over a plain socket, one request per connection: ``http.client`` would import ``ssl`` and
    ``email`` to talk to a loopback server that sends one JSON body with a Content-Length."""
    payload = json.dumps(body).encode()
    head = [
        f"POST {path} HTTP/1.1",
        f"Host: {'[' + host + ']' if ':' in host else host}:{port}",
        "Content-Type: application/json",
        "Accept: application/json",
        f"Content-Length: {len(payload)}",
        "Connection: close",
    ]
    if key:
        head.append(f"{API_KEY_HEADER}: {key}")
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S) as sock:
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
