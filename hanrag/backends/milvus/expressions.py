"""Milvus boolean expressions: literals, id lists, and hanrag's filters pushed down to the server.

Milvus' LIKE knows ``%`` (any run of bytes) and ``_`` (exactly one *byte*, so one
Hangul or Hanja character is three ``_``) and no escapes that survive its parser (a
backslash inside a pattern crashed the milvus-lite 2.5.1 server in a trial). A source
glob therefore becomes either

* an exact LIKE — the glob holds only ``*`` and literal characters other than ``%``,
  ``_`` and backslash (``runbooks/*``, ``*.md``, ``docs/*/api*``): pushed down as
  is, nothing left for hanrag to do (a prefix glob is a prefix LIKE, which Milvus
  answers from its index); or
* a superset LIKE (``?``, ``[...]`` and backslash become ``%``; literal ``%``/``_`` stay
  wildcards) that the search side narrows to the exact glob once per collection
  version (:mod:`hanrag.backends.milvus.search`).
"""

from __future__ import annotations

from collections.abc import Iterable

from hanrag.records import Filters

_LIKE_INEXACT = frozenset("?[\\%_")


def lit(value: str) -> str:
    """A Milvus string literal. Control characters are refused (they crash some servers' parsers)."""
    if any(ord(ch) < 0x20 and ch not in "\t\n\r" for ch in value):
        raise ValueError(f"control character in {value!r}: not allowed in Milvus ids or filters")
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return '"' + escaped.replace("\t", "\\t") + '"'


def in_list(field_name: str, values: Iterable[str | int]) -> str:
    items = [lit(v) if isinstance(v, str) else str(int(v)) for v in values]
    return f"{field_name} in [{', '.join(items)}]"


def and_expr(*parts: str) -> str:
    return " and ".join(f"({p})" for p in parts if p)


def glob_is_exact(glob: str) -> bool:
    """Whether :func:`glob_to_like` matches exactly what ``fnmatch`` matches (see the module docstring)."""
    return not (_LIKE_INEXACT & set(glob))


def glob_to_like(glob: str) -> str:
    """A LIKE pattern matching a superset of what ``fnmatch`` matches for ``glob`` (exactly it when
    :func:`glob_is_exact`). ``*``, ``?``, ``[...]`` and a backslash all become ``%``: ``_`` would match
    one byte, not one character."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        ch = glob[i]
        if ch in "*?\\":
            ch = "%"
        elif ch == "[":
            close = glob.find("]", i + 2 if glob[i + 1 : i + 2] in ("!", "]") else i + 1)
            ch = "%"
            if close != -1:
                i = close
        if ch != "%" or not out or out[-1] != "%":
            out.append(ch)
        i += 1
    return "".join(out)


def glob_expr(glob: str) -> str:
    """The LIKE part of a source-glob filter: a chunk matches on its source or its path."""
    like = lit(glob_to_like(glob))
    return f"(source like {like} or path like {like})"


def filters_to_expr(filters: Filters | None) -> str:
    """The Milvus boolean expression for the filters; the source glob as :func:`glob_expr` (a superset
    unless :func:`glob_is_exact`)."""
    if filters is None or filters.is_empty():
        return ""
    parts: list[str] = []
    if filters.lang:
        parts.append(in_list("lang", filters.lang))
    if filters.tier:
        parts.append(in_list("tier", [int(t) for t in filters.tier]))
    if filters.provenance:
        parts.append(in_list("provenance", filters.provenance))
    if filters.labels:
        parts.append(f"array_contains_all(labels, [{', '.join(lit(x) for x in filters.labels)}])")
    if filters.source_glob:
        parts.append(glob_expr(filters.source_glob))
    return " and ".join(f"({p})" for p in parts)
