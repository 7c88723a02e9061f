"""One file into a :class:`~hanrag.records.Document`: decoding, binary checks, citations, tier and provenance, and the
record itself — the helpers every reader (text, HTML, PDF, OpenAPI, Confluence export) shares.

A reader gets ``(file, corpus_root, cfg)`` and returns ``(Document | None, findings)`` (:data:`Reader`); each
problem (bad encoding, binary, too large, empty, bad front matter) becomes a :class:`~hanrag.records.Finding`
that names the file. Files are only ever read. A module of its own so that the readers, which
:mod:`hanrag.sources.files` loads on first use, never import the walk back.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from hanrag.config import Config
from hanrag.front_matter import split_front_matter
from hanrag.records import Document, Finding, Provenance

Reader = Callable[[Path, Path, Config], tuple[Document | None, list[Finding]]]

_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
_URL = re.compile(r"https?://[^\s<>\"'`\])}|]+[^\s<>\"'`\])}|.,;:!?。，、]")
# a tier is 0-99 (records.MAX_TIER): "2024 notes" is a year, not a tier, and keeps the default
_TIER_NUMBER = re.compile(r"^\s*(\d{1,2})(?!\d)")
_AI_DRAFT = {"ai-draft", "ai_draft", "ai", "aidraft", "ai-generated", "generated"}
_HUMAN = {"human", "manual", "curated"}
# control characters that never occur in text files (tab, LF, CR, FF are fine)
_BINARY_BYTES = set(range(0x00, 0x09)) | {0x0B} | set(range(0x0E, 0x1A)) | set(range(0x1C, 0x20))
_BINARY_CHARS = "".join(map(chr, sorted(_BINARY_BYTES)))
# byte order marks, longest first: FF FE 00 00 (UTF-32LE) begins with FF FE (UTF-16LE)
_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
         (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))
_SURROGATE = re.compile("[\ud800-\udfff]")


def display_name(name: str) -> str:
    """``name`` with every byte that was not valid UTF-8 written as ``\\xNN``.

    Python hands undecodable file-name bytes over as lone surrogates (``surrogateescape``),
    which cannot be encoded (hashing, JSON, terminals). The escaped form is printable, stable
    and keeps every byte value; names that are valid UTF-8 come back unchanged.
    """
    if name.isascii() or not any("\udc80" <= c <= "\udcff" for c in name):
        return name
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def relative_id(path: Path, root: Path) -> str:
    """The stable document id: the path relative to the corpus root with ``/`` separators
    (undecodable name bytes escaped by :func:`display_name`)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        rel = Path(path.name)
    return display_name(PurePosixPath(*rel.parts).as_posix())


def decode_bytes(data: bytes, rel: str) -> tuple[str | None, list[Finding]]:
    """Bytes → text with ``\\n`` line ends, or ``None`` with the finding that says why.

    UTF-8 (with or without BOM) and UTF-32/UTF-16 with a BOM are read silently (the UTF-32LE BOM
    ``FF FE 00 00`` is tried before the UTF-16LE one it begins with); anything else is detected with
    charset-normalizer and converted with a warning naming the encoding. A NUL (or mostly control
    characters) marks the file binary in every encoding alike.
    """
    for bom, codec in _BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError:
                continue  # FF FE 00 00 may also be UTF-16LE text that starts with U+0000: try the next BOM
            if (binary := _binary_text_finding(text, rel)) is not None:
                return None, [binary]
            return _newlines(text), []
    if _looks_binary(data):
        nul = data.find(b"\x00")
        what = f"a NUL byte at offset {nul:,}" if nul >= 0 else "control bytes"
        return None, [Finding(rel, "warning", "binary-file", f"binary content ({what}); skipped")]
    try:
        return _newlines(data.decode("utf-8-sig")), []
    except UnicodeDecodeError as exc:
        first_error = exc
    from charset_normalizer import from_bytes  # lazy: only a file that is not UTF-8 needs the detector

    best = from_bytes(data).best()
    if best is None or best.encoding is None:
        return None, [
            Finding(
                rel,
                "error",
                "bad-encoding",
                f"not UTF-8 ({first_error.reason} at byte {first_error.start}) and no other encoding fits; "
                "skipped (convert it to UTF-8)",
            )
        ]
    text = str(best)
    return _newlines(text), [
        Finding(
            rel,
            "warning",
            "encoding",
            f"not UTF-8: read as {best.encoding} (detected); consider converting the file to UTF-8",
        )
    ]


def _looks_binary(data: bytes) -> bool:
    # a NUL anywhere (not only in the head) marks a binary or corrupted file: skipped, never
    # stripped, so a text with a damaged tail is not indexed half-right
    if b"\x00" in data:
        return True
    head = data[:8192]
    if not head:
        return False
    controls = sum(1 for b in head if b in _BINARY_BYTES)
    return controls / len(head) > 0.01


def _binary_text_finding(text: str, rel: str) -> Finding | None:
    """The binary-file finding for decoded UTF-16/32 text, by the same rule :func:`_looks_binary` applies
    to UTF-8 bytes: a NUL anywhere, or over 1% control characters in the head."""
    nul = text.find("\x00")
    if nul >= 0:
        what = f"a NUL character at character {nul:,}"
    else:
        head = text[:8192]
        if not head or sum(1 for c in head if c in _BINARY_CHARS) / len(head) <= 0.01:
            return None
        what = "control characters"
    return Finding(rel, "warning", "binary-file", f"binary content ({what}); skipped")


def _newlines(text: str) -> str:
    text = text.removeprefix("\ufeff")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def find_sources(text: str, pattern: str) -> list[str]:
    """Source references in ``text``, in order, without duplicates.

    A match that contains a URL yields the URL (``출처: 나무위키 https://…`` → the URL);
    a ``출처:``/``Source:`` line without one yields the text after the colon.
    """
    found: list[str] = []
    try:
        matches = list(re.finditer(pattern, text, re.MULTILINE))
    except re.error:  # an invalid corpus.source_pattern; lint reports it once, not per file
        matches = []
    for match in matches:
        value = match.group(0).strip()
        urls = _URL.findall(value)
        if urls:
            found.extend(urls)
            continue
        _, sep, rest = re.split(r"([:：])", value, maxsplit=1) if re.search(r"[:：]", value) else (value, "", "")
        found.append(rest.strip() if sep and rest.strip() else value)
    return _unique([s for s in found if s])


def _unique(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def tier_for(rel: str, cfg: Config) -> int:
    """Tier of a document: the config map for its top-level folder, else the folder's leading number."""
    parts = PurePosixPath(rel).parts
    if len(parts) < 2:
        return cfg.corpus.default_tier
    top = parts[0]
    if top in cfg.corpus.tiers:
        return cfg.corpus.tiers[top]
    number = _TIER_NUMBER.match(top)
    return int(number.group(1)) if number else cfg.corpus.default_tier


def _as_str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, _dt.date | _dt.datetime):
        return value.isoformat()
    return str(value).strip() or None


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, list | tuple):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    return [str(value)]


def provenance_for(rel: str, meta: dict[str, Any], cfg: Config) -> tuple[Provenance, list[Finding]]:
    raw = _as_str(meta.get("source_type"))
    findings: list[Finding] = []
    if raw is not None:
        key = raw.lower()
        if key in _AI_DRAFT:
            return "ai-draft", []
        if key not in _HUMAN:
            findings.append(
                Finding(rel, "warning", "unknown-source-type", f"source_type {raw!r} is neither human nor ai-draft")
            )
    if any(fnmatch.fnmatch(rel, glob) for glob in cfg.corpus.ai_draft_globs):
        return "ai-draft", findings
    return "human", findings


def make_document(
    rel: str,
    body: str,
    meta: dict[str, Any],
    cfg: Config,
    *,
    default_title: str,
    path: str | None = None,
    extra_meta: dict[str, Any] | None = None,
    page_starts: tuple[int, ...] = (),
) -> tuple[Document, list[Finding]]:
    """Build a Document from a body and its front matter (shared by every file reader).

    Lone surrogates (a JSON ``"\\ud800"`` escape, a YAML one) are not text: they cannot be encoded for
    hashing, tokenising or writing, so each becomes U+FFFD, with one warning naming the file."""
    rel = display_name(rel)
    default_title = display_name(default_title)
    path = display_name(path) if path is not None else None
    replaced = [0]
    body = _text_only(body, replaced)
    meta = _text_only(meta, replaced)
    extra_meta = _text_only(extra_meta, replaced)
    provenance, findings = provenance_for(rel, meta, cfg)
    if replaced[0]:
        findings.append(
            Finding(rel, "warning", "unencodable-text",
                    f"{replaced[0]:,} lone surrogate code point(s) (U+D800-U+DFFF: not encodable text) "
                    "replaced with U+FFFD")
        )
    title = _as_str(meta.get("title"))
    if not title:
        heading = _HEADING.search(body)
        title = heading.group(1).strip() if heading else default_title
    front_sources = _as_list(meta.get("source")) + _as_list(meta.get("sources"))
    sources = _unique(front_sources + find_sources(body, cfg.corpus.source_pattern))
    labels = _unique(_as_list(meta.get("labels")) + _as_list(meta.get("tags")))
    doc = Document(
        doc_id=rel,
        path=path if path is not None else rel,
        title=title,
        text=body,
        sources=tuple(sources),
        tier=tier_for(rel, cfg),
        provenance=provenance,
        author=_as_str(meta.get("author")),
        version=_as_str(meta.get("version")),
        modified=_as_str(meta.get("modified") or meta.get("date")),
        labels=tuple(labels),
        meta=dict(extra_meta or {}),
        page_starts=page_starts,
    )
    return doc, findings


def _text_only(value: Any, replaced: list[int]) -> Any:
    """``value`` with every lone surrogate in its strings (nested in lists, tuples and dicts) replaced
    by U+FFFD; ``replaced[0]`` counts them. Strings that encode are returned as they are."""
    if isinstance(value, str):
        if value.isascii() or not _SURROGATE.search(value):
            return value
        cleaned, n = _SURROGATE.subn("\ufffd", value)
        replaced[0] += n
        return cleaned
    if isinstance(value, list | tuple):
        return type(value)(_text_only(v, replaced) for v in value)
    if isinstance(value, dict):
        return {_text_only(k, replaced): _text_only(v, replaced) for k, v in value.items()}
    return value


def read_bytes(path: Path, root: Path, cfg: Config) -> tuple[bytes | None, list[Finding]]:
    """The file's bytes, or None with a finding (unreadable, too large, empty)."""
    rel = relative_id(path, root)
    try:
        # O_NONBLOCK: a FIFO swapped in after the walk must not hang the open; fstat then
        # refuses anything that is not a regular file before a byte is read
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None, [special_file_finding(rel, st.st_mode)]
            size = st.st_size
            if size > cfg.corpus.max_file_bytes:
                return None, [
                    Finding(
                        rel,
                        "warning",
                        "too-large",
                        f"{size:,} bytes is over corpus.max_file_bytes ({cfg.corpus.max_file_bytes:,}); skipped",
                    )
                ]
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(cfg.corpus.max_file_bytes + 1)
        finally:
            os.close(fd)
    except OSError as exc:
        return None, [Finding(rel, "error", "unreadable", f"cannot read: {exc.strerror or exc}")]
    if len(data) > cfg.corpus.max_file_bytes:  # grew while being read
        return None, [Finding(rel, "warning", "too-large", "over corpus.max_file_bytes; skipped")]
    if not data.strip():
        return None, [Finding(rel, "warning", "empty-file", "empty file; skipped")]
    return data, []


def read_text_file(path: Path, root: Path, cfg: Config) -> tuple[Document | None, list[Finding]]:
    """Reader for .md, .markdown and .txt: decode, strip front matter, build the Document."""
    rel = relative_id(path, root)
    data, findings = read_bytes(path, root, cfg)
    if data is None:
        return None, findings
    text, decode_findings = decode_bytes(data, rel)
    findings += decode_findings
    if text is None:
        return None, findings
    meta, body, fm_findings = split_front_matter(text, rel)
    findings += fm_findings
    if not body.strip():
        findings.append(Finding(rel, "warning", "empty-file", "no text after the front matter; skipped"))
        return None, findings
    doc, doc_findings = make_document(rel, body, meta, cfg, default_title=path.stem)
    return doc, findings + doc_findings


_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


def special_file_finding(rel: str, mode: int) -> Finding:
    """The finding for a path that is not a regular file (a FIFO, socket, device or folder)."""
    kind = next((label for test, label in _KINDS if test(mode)), "not a regular file")
    return Finding(rel, "warning", "special-file", f"{kind}, not a regular file; skipped (only regular files are read)")
