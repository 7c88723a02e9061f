"""Who may reach the server: the API key, the Host allow-list of a key-less server, the bind check.

No web framework here. The header's name is the relay client's (:mod:`hanrag.server.client`), which sends it
on every relayed ``hanrag search`` and imports nothing of the server.
"""

from __future__ import annotations

import ipaddress
import os
import re
from typing import TYPE_CHECKING

from hanrag.server.client import API_KEY_HEADER

if TYPE_CHECKING:
    from hanrag.config import Config

__all__ = ["API_KEY_HEADER", "LOOPBACK_HOSTS", "ServerError", "allowed_hosts", "api_key_for", "check_bind",
           "host_of", "is_loopback"]
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]", "::1")


class ServerError(RuntimeError):
    """A refusal to start (e.g. a public address without an API key); the message says why."""


def api_key_for(cfg: Config) -> str:
    """The configured key, surrounding whitespace removed (HTTP strips it from headers): a blank key is no key."""
    return (cfg.server.api_key or os.environ.get("HANRAG_API_KEY", "")).strip()


# A Host header is uri-host [":" port] (RFC 9110 7.2, RFC 3986 3.2.2): an IP literal in brackets or a name of
# letters, digits, "-", "_", "." (a trailing dot allowed); anything else ("localhost:80@evil.com", "[::1]evil",
# "a b") is no host, and a key-less server refuses it rather than guessing which part is meant
_HOST_HEADER = re.compile(r"(?P<host>\[[0-9a-f:.]+\]|[a-z0-9_](?:[a-z0-9_.-]{0,252}))(?::(?P<port>[0-9]{0,5}))?")


def host_of(header: str) -> str | None:
    """The host part of a Host header, lower case, without port or trailing dot ("[::1]:8000" -> "[::1]"); None
    when the value is not ``host[:port]``."""
    match = _HOST_HEADER.fullmatch(header.strip().lower())
    if match is None:
        return None
    host = match.group("host")
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return None
        return host
    return host.rstrip(".") or None


def _config_hosts(value: str) -> set[str]:
    """The Host names a configured host (``server.host``, ``server.allowed_hosts``) stands for: an IPv6 literal with
    and without brackets (a config may write either), a name as :func:`host_of` reads it."""
    bare = value.strip().strip("[]")
    try:
        if ipaddress.ip_address(bare).version == 6:
            return {bare.lower(), f"[{bare.lower()}]"}
    except ValueError:
        pass
    host = host_of(value)
    return {host} if host else set()


def allowed_hosts(cfg: Config, bind_host: str | None = None) -> frozenset[str]:
    """Host header values a key-less server answers: loopback names, the bound host, server.allowed_hosts."""
    names = set(LOOPBACK_HOSTS)
    for extra in [bind_host or "", cfg.server.host, *cfg.server.allowed_hosts]:
        if extra:
            names.update(_config_hosts(extra))
    return frozenset(names)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def check_bind(host: str, cfg: Config) -> None:
    """Refuse a non-loopback address unless an API key is configured."""
    if not is_loopback(host) and not api_key_for(cfg):
        blank = bool(cfg.server.api_key or os.environ.get("HANRAG_API_KEY", ""))
        raise ServerError(
            f"refusing to listen on {host}: a non-loopback address needs an API key"
            + (" (the configured one is blank)" if blank else "")
            + " (set server.api_key in hanrag.toml or the HANRAG_API_KEY environment variable)"
        )
