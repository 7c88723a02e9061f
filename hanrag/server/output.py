"""Records to JSON bodies: chunks, hits with highlight spans, and any report (dataclasses, paths)."""

from __future__ import annotations

import re
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from hanrag.records import Chunk, Hit


def chunk_out(chunk: Chunk) -> dict[str, Any]:
    return chunk.to_dict()


def highlights(text: str, tokens: tuple[str, ...] | list[str], expansions: tuple[str, ...] | list[str]) -> list[dict]:
    """Non-overlapping spans of ``text`` where query tokens or expansions occur.

    Index tokens are normalized (lower case, simplified Chinese); the text is searched
    case-insensitively and, when the OpenCC conversion keeps its length, in its
    converted form too, so offsets still point into the original text. Longer terms
    win where spans overlap; a term that is both a token and an expansion counts as a token.
    """
    views = [text.lower()]
    converted = _to_simplified(text).lower()
    if len(converted) == len(text) and converted != views[0]:
        views.append(converted)
    kinds: dict[str, str] = {}
    for term in expansions:
        kinds[term] = "expansion"
    for term in tokens:
        kinds[term] = "token"
    taken = [False] * len(text)
    spans: list[dict] = []
    for term in sorted(kinds, key=lambda t: (-len(t), t)):
        needle = term.lower().strip()
        if not needle or (len(needle) == 1 and needle.isascii()):
            continue  # one Latin letter would light up everywhere
        for view in views:
            pos = view.find(needle)
            while pos >= 0:
                end = pos + len(needle)
                if not any(taken[pos:end]):
                    for i in range(pos, end):
                        taken[i] = True
                    spans.append({"start": pos, "end": end, "term": term, "kind": kinds[term]})
                pos = view.find(needle, end)
    spans.sort(key=lambda s: s["start"])
    return spans


_OPENCC: list[Any] = []


def _to_simplified(text: str) -> str:
    if not _OPENCC:
        try:
            import opencc

            _OPENCC.append(opencc.OpenCC("t2s"))
        except Exception:
            _OPENCC.append(None)
    conv = _OPENCC[0]
    return conv.convert(text) if conv is not None else text


def hit_out(hit: Hit, explain: bool) -> dict[str, Any]:
    data = hit.to_dict()
    data["highlights"] = []
    if explain and hit.explanation is not None:
        ex = hit.explanation
        data["highlights"] = highlights(hit.chunk.text, ex.matched_tokens, ex.matched_expansions)
    if not explain:
        data["explanation"] = None
    return data


_ABSOLUTE = re.compile(r"^(/|~/|[A-Za-z]:[\\/]|\\\\)")  # POSIX, home, drive letter, UNC


def hide_absolute_paths(value: Any, keep: tuple[str, ...] = ("glossary",)) -> Any:
    """``value`` (JSON-able) with every string that is an absolute path of this machine shortened to
    ``<path>/NAME`` (e.g. a local model folder in the embedder's identity): a response names no folder of the
    server's, whatever a manifest holds. Call it after the index and corpus folders became ``<index>`` /
    ``<corpus>`` (:func:`hanrag.server.jobs.scrub_paths`). ``keep``: top-level keys holding corpus text, left
    as they are."""
    if isinstance(value, dict):
        return {k: v if k in keep else hide_absolute_paths(v, ()) for k, v in value.items()}
    if isinstance(value, list):
        return [hide_absolute_paths(v, ()) for v in value]
    if isinstance(value, str) and _ABSOLUTE.match(value):
        name = value.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
        return f"<path>/{name}" if name else "<path>"
    return value


def jsonable(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        to_dict = getattr(value, "to_dict", None)
        return jsonable(to_dict() if callable(to_dict) else asdict(value))
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)
