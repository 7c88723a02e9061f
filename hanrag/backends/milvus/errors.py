"""Milvus errors, and the redaction that keeps credentials out of them.

A Milvus URI may carry credentials (``https://user:password@host:19530``) and the
config a token; neither may reach an error message, a log line or ``/stats``. Every
message this package builds names the server through :func:`redact_uri`, and text
that comes back from pymilvus is passed through :func:`scrub` first.
"""

from __future__ import annotations

import re

# scheme://userinfo@ : userinfo is everything up to the "@" that ends the authority
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^:/@\s]*)(?P<secret>:[^/@\s]*)?@")


class MilvusError(RuntimeError):
    """A Milvus problem, with a message naming the server and collection."""


class MilvusUnavailable(MilvusError):
    """The Milvus server cannot be reached."""


class MilvusIncomplete(MilvusError):
    """The collection was left by an interrupted push and is not complete."""


def redact_uri(text: str) -> str:
    """Every ``scheme://user:password@`` in ``text`` as ``scheme://user:***@``; a bare ``scheme://secret@``
    (a token as the user part) as ``scheme://***@``. Text without credentials comes back unchanged."""

    def repl(m: re.Match[str]) -> str:
        if m["secret"] is None:
            return f"{m['scheme']}***@"
        return f"{m['scheme']}{m['user']}:***@"

    return _USERINFO.sub(repl, text)


def scrub(text: str, *secrets: str) -> str:
    """``text`` with URI credentials redacted and every occurrence of each non-empty secret replaced by ***."""
    out = redact_uri(text)
    for secret in sorted({s for s in secrets if s}, key=len, reverse=True):
        out = out.replace(secret, "***")
    return out


def uri_secrets(uri: str, token: str = "") -> tuple[str, ...]:
    """The strings that must never be shown: the token and the URI's password (and a token used as the
    user part), in the forms pymilvus might echo them."""
    found = [token] if token else []
    if token and ":" in token:
        found.append(token.split(":", 1)[1])  # "user:password" tokens: the password alone
    m = _USERINFO.search(uri)
    if m:
        found.append(m["secret"][1:] if m["secret"] else m["user"])
    return tuple(s for s in found if len(s) >= 3)  # a 1-2 character "secret" would shred the message


def classify(exc: BaseException, what: str, uri: str, collection: str, secrets: tuple[str, ...]) -> MilvusError:
    """A pymilvus exception as one MilvusError naming the (redacted) server, the collection and the call."""
    msg = scrub(str(getattr(exc, "message", "") or exc), *secrets)
    shown = redact_uri(uri)
    code = getattr(exc, "code", None)
    unavailable = code == 2 or any(
        s in msg.lower() for s in ("unavailable", "connection refused", "fail connecting", "deadline")
    )
    if unavailable:
        return MilvusUnavailable(
            f"Milvus at {shown} is unavailable ({what}: {msg}); is the server running and milvus.uri right?"
        )
    return MilvusError(f"Milvus at {shown}, collection {collection!r}: {what} failed: {msg}")
