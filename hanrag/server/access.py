"""Who may reach the server: the API key, the Host allow-list of a key-less server, the bind check.

No web framework here. The header's name is the relay client's (:mod:`hanrag.server.client`), which sends it
on every relayed ``hanrag search`` and imports nothing of the server.
"""

from __future__ import annotations

import ipaddress
import os
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


def host_of(header: str) -> str:
    """The host part of a Host header, lower case, without port or trailing dot ("[::1]:8000" -> "[::1]")."""
    value = header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end > 0 else value
    if value.count(":") == 1:
        value = value.split(":", 1)[0]
    return value.rstrip(".")


def allowed_hosts(cfg: Config, bind_host: str | None = None) -> frozenset[str]:
    """Host header values a key-less server answers: loopback names, the bound host, server.allowed_hosts."""
    names = set(LOOPBACK_HOSTS)
    for extra in [bind_host or "", cfg.server.host, *cfg.server.allowed_hosts]:
        host = host_of(extra) if extra else ""
        if host:
            names.add(host)
            if ":" in host.strip("[]"):  # an IPv6 literal: with and without brackets
                names.update({host.strip("[]"), f"[{host.strip('[]')}]"})
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
