"""Read a folder tree of text files into :class:`~hanrag.records.Document` records.

Files are only ever read: nothing here writes, moves or deletes a user's file.
Each problem (bad encoding, binary, too large, empty, bad front matter) becomes a
:class:`~hanrag.records.Finding` that names the file, and the walk goes on.

Only regular files are read (:func:`walk_corpus`): named pipes, sockets and devices,
unreadable files and folders, broken symlinks, symlink loops and symlinks that leave the
corpus root (unless ``[corpus] follow_symlinks = true``) are findings, never a hang or a
silent skip. A file name that is not valid UTF-8 (a CP949 name from an old zip) is read
under its escaped name (each undecodable byte as ``\\xNN``, see :func:`display_name`) with a
finding, so ids, chunk hashes and JSON never meet a lone surrogate (nor does text: see
:func:`make_document`). The walk keeps its own stack and stops :data:`MAX_FOLDER_DEPTH` folders
down with a finding. YAML goes through :func:`load_yaml`, which bounds nesting and alias expansion.

Readers are looked up by lower-case extension in :data:`READERS`; other modules add
theirs (``READERS[".html"] = read_html``). A reader gets ``(file, corpus_root, cfg)``
and returns ``(Document | None, findings)``. The helpers :func:`decode_bytes`,
:func:`split_front_matter` and :func:`make_document` are meant for those readers too.

Size (over 500 lines, on purpose): the folder walk and every per-file check (encoding, binary, size,
special files, symlinks, undecodable names, front matter) together: each check yields findings in the walk's order.
"""

from __future__ import annotations

import datetime as _dt
import errno
import fnmatch
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from hanrag.config import Config
from hanrag.records import Document, Finding, Provenance

Reader = Callable[[Path, Path, Config], tuple[Document | None, list[Finding]]]

_FM_OPEN = re.compile(r"\A---[ \t]*\n")
_FM_CLOSE = re.compile(r"^(---|\.\.\.)[ \t]*$", re.MULTILINE)
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
# YAML bounds. Aliases share one node, so a 600-byte "billion laughs" front matter expands to 10^9
# values once constructed and walked (str(), rendering): the expanded size is counted while the
# document is composed, and a document over the cap is refused before it is constructed. Nesting is
# capped too: libyaml parses each level in time proportional to the depth (quadratic overall) and its
# composer recurses in C (100,000 levels end the process).
FRONT_MATTER_MAX_NODES = 10_000
YAML_MAX_NODES = 1_000_000  # and at most YAML_ALIAS_FACTOR x the nodes written out, whichever is larger
YAML_ALIAS_FACTOR = 4
YAML_MAX_DEPTH = 200
# folders nested deeper than this below the corpus root are skipped with one finding
MAX_FOLDER_DEPTH = 100


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


def front_matter_end(text: str) -> int:
    """Offset just past a leading YAML front matter block (``---`` … ``---``), 0 when none."""
    opening = _FM_OPEN.match(text)
    if not opening:
        return 0
    closing = _FM_CLOSE.search(text, opening.end())
    if not closing:
        return 0
    end = closing.end()
    if end < len(text) and text[end] == "\n":
        end += 1
    return end


class YamlLimitError(yaml.YAMLError):
    """A YAML document over :data:`YAML_MAX_DEPTH` levels, over its node cap once aliases are expanded,
    or with an alias inside the node it names (a recursive structure)."""


class _BoundedLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The safe loader, with a value that looks like a date but is none (``2024-13-45``) kept as text
    and noted in :attr:`odd_values` instead of failing the whole document."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.odd_values: list[str] = []

    def construct_yaml_timestamp(self, node: Node) -> Any:
        try:
            return super().construct_yaml_timestamp(node)
        except ValueError:
            self.odd_values.append(f"{node.value!r} is not a valid date; kept as text")
            return self.construct_scalar(node)


_BoundedLoader.add_constructor("tag:yaml.org,2002:timestamp", _BoundedLoader.construct_yaml_timestamp)


def load_yaml(text: str, *, max_nodes: int = YAML_MAX_NODES, max_depth: int = YAML_MAX_DEPTH,
              notes: list[str] | None = None) -> Any:
    """One YAML document through the safe loader, bounded: :class:`YamlLimitError` (a ``yaml.YAMLError``)
    when it nests deeper than ``max_depth`` or expands (aliases counted at their full size) to more than
    ``max(max_nodes, YAML_ALIAS_FACTOR x nodes written)``. ``notes`` collects odd values kept as text."""
    loader = _BoundedLoader(text)
    try:
        root = _compose(loader, max_nodes, max_depth)
        data = None if root is None else loader.construct_document(root)
        if notes is not None:
            notes.extend(loader.odd_values)
        return data
    finally:
        loader.dispose()


def _compose(loader: Any, max_nodes: int, max_depth: int) -> Node | None:
    """PyYAML's composer without recursion, counting every node at its expanded size as it goes."""
    ev = yaml.events
    loader.get_event()  # StreamStart
    if loader.check_event(ev.StreamEndEvent):
        return None
    loader.get_event()  # DocumentStart
    anchors: dict[str, tuple[Node, int | None]] = {}  # size None: still open (an alias to it recurses)
    stack: list[list[Any]] = []  # [node, expanded size so far, anchor, pending mapping key]
    written = 0
    root: Node | None = None
    while root is None:
        event = loader.get_event()
        done: tuple[Node, int] | None = None
        if isinstance(event, ev.AliasEvent):
            node, size = anchors.get(event.anchor, (None, None))
            if node is None:
                raise yaml.composer.ComposerError(None, None, f"found undefined alias {event.anchor!r}",
                                                  event.start_mark)
            if size is None:
                raise YamlLimitError(f"recursive alias *{event.anchor} (a structure that contains itself)")
            done = (node, size)
        elif isinstance(event, ev.ScalarEvent):
            tag = event.tag if event.tag not in (None, "!") else loader.resolve(ScalarNode, event.value,
                                                                                 event.implicit)
            done = (ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style), 1)
            if event.anchor is not None:
                anchors[event.anchor] = done
        elif isinstance(event, ev.SequenceStartEvent | ev.MappingStartEvent):
            is_seq = isinstance(event, ev.SequenceStartEvent)
            kind = SequenceNode if is_seq else MappingNode
            tag = event.tag if event.tag not in (None, "!") else loader.resolve(kind, None, event.implicit)
            node = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
            if event.anchor is not None:
                anchors[event.anchor] = (node, None)
            stack.append([node, 1, event.anchor, None])
            if len(stack) > max_depth:
                raise YamlLimitError(f"nested more than {max_depth} levels deep")
        elif isinstance(event, ev.SequenceEndEvent | ev.MappingEndEvent):
            node, size, anchor, _ = stack.pop()
            node.end_mark = event.end_mark
            if anchor is not None:
                anchors[anchor] = (node, size)
            done = (node, size)
        if done is None:
            continue
        written += 1
        node, size = done
        if not stack:
            root = node
            break
        frame = stack[-1]
        frame[1] += size
        if frame[1] > max_nodes and frame[1] > YAML_ALIAS_FACTOR * written:
            raise YamlLimitError(f"over {max(max_nodes, YAML_ALIAS_FACTOR * written):,} values once its "
                                 "aliases are expanded (an alias bomb?)")
        if isinstance(frame[0], SequenceNode):
            frame[0].value.append(node)
        elif frame[3] is None:
            frame[3] = (node,)
        else:
            frame[0].value.append((frame[3][0], node))
            frame[3] = None
    loader.get_event()  # DocumentEnd
    if not loader.check_event(ev.StreamEndEvent):
        event = loader.get_event()
        raise yaml.composer.ComposerError("expected a single document in the stream", root.start_mark,
                                          "but found another document", event.start_mark)
    return root


def split_front_matter(text: str, rel: str) -> tuple[dict[str, Any], str, list[Finding]]:
    """``(front matter mapping, body, findings)``; the body keeps everything after the block.

    Front matter that is not valid YAML, not a mapping, or over the YAML bounds (:func:`load_yaml`)
    is ignored with a warning; a value that cannot be what it looks like (``date: 2024-13-45``) is kept
    as text with a warning. Either way the document is read."""
    end = front_matter_end(text)
    if not end:
        return {}, text, []
    opening = _FM_OPEN.match(text)
    assert opening is not None
    raw = text[opening.end() : end]
    raw = _FM_CLOSE.sub("", raw)
    notes: list[str] = []
    try:
        data = load_yaml(raw, max_nodes=FRONT_MATTER_MAX_NODES, notes=notes)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError, RecursionError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        why = "over hanrag's YAML limits" if isinstance(exc, YamlLimitError) else "not valid YAML"
        return (
            {},
            text[end:],
            [
                Finding(
                    rel,
                    "warning",
                    "bad-front-matter",
                    f"front matter is {why}: {exc}; ignored".splitlines()[0],
                    line=None if line is None else line + 2,
                )
            ],
        )
    findings = [Finding(rel, "warning", "bad-front-matter", f"front matter: {note}") for note in notes]
    if data is None:
        return {}, text[end:], findings
    if not isinstance(data, dict):
        return {}, text[end:], [Finding(rel, "warning", "bad-front-matter", "front matter is not a mapping; ignored")]
    return {str(k): v for k, v in data.items()}, text[end:], findings


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
                return None, [_special_finding(rel, st.st_mode)]
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


def _lazy_reader(module: str, name: str) -> Reader:
    """A reader imported on first use: converters pull in heavy libraries (pdfium, lxml)
    and import this module themselves, so importing them here would be circular."""

    def reader(path: Path, root: Path, cfg: Config) -> tuple[Document | None, list[Finding]]:
        import importlib  # the reader module is imported on its first file (see above: a cycle otherwise)

        return getattr(importlib.import_module(module), name)(path, root, cfg)

    reader.__name__ = name
    return reader


READERS: dict[str, Reader] = {
    ".md": read_text_file,
    ".markdown": read_text_file,
    ".txt": read_text_file,
    ".html": _lazy_reader("hanrag.sources.html", "read_html"),
    ".htm": _lazy_reader("hanrag.sources.html", "read_html"),
    ".pdf": _lazy_reader("hanrag.sources.pdf", "read_pdf"),
    ".json": _lazy_reader("hanrag.sources.openapi", "read_openapi"),
    ".yaml": _lazy_reader("hanrag.sources.openapi", "read_openapi"),
    ".yml": _lazy_reader("hanrag.sources.openapi", "read_openapi"),
    # a Confluence HTML space export; its reader returns a list of Documents (one per page)
    ".zip": _lazy_reader("hanrag.sources.confluence_export", "read_confluence_export"),
}


_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


def _special_finding(rel: str, mode: int) -> Finding:
    kind = next((label for test, label in _KINDS if test(mode)), "not a regular file")
    return Finding(rel, "warning", "special-file", f"{kind}, not a regular file; skipped (only regular files are read)")


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _bad_name_finding(rel: str, name: str) -> Finding | None:
    if display_name(name) == name:
        return None
    raw = os.fsencode(name)
    guess = ""
    for enc in ("cp949", "gb18030", "big5", "shift_jis"):
        try:
            guess = f"; as {enc.upper()} it reads {raw.decode(enc)!r}"
            break
        except UnicodeDecodeError:
            continue
    return Finding(
        rel,
        "warning",
        "non-utf8-name",
        f"the name is not valid UTF-8; read under the escaped name {display_name(name)!r}{guess}. "
        "Rename it to UTF-8 to get a readable id",
    )


def walk_corpus(root: Path, cfg: Config) -> tuple[list[Path], list[Finding]]:
    """Regular files under ``root`` (sorted, hidden entries skipped) whose extension has a reader,
    and a finding for every entry that cannot be read safely.

    Nothing is opened here: entries are classified by ``lstat``/``stat``. Symlinks are followed
    when their target stays inside the corpus root (files; folders only with
    ``follow_symlinks``); a target outside the root needs ``[corpus] follow_symlinks = true``.
    Followed folders are tracked by (device, inode), so a loop is reported once, not walked.
    Folders more than :data:`MAX_FOLDER_DEPTH` levels down are skipped with a ``too-deep`` finding.
    """
    wanted = {e.lower() if e.startswith(".") else f".{e.lower()}" for e in cfg.corpus.extensions}
    follow = bool(getattr(cfg.corpus, "follow_symlinks", False))
    root = Path(root)
    findings: list[Finding] = []
    files: list[Path] = []

    def want(name: str) -> bool:
        suffix = Path(name).suffix.lower()
        return suffix in wanted and suffix in READERS

    try:
        root_st = os.stat(root)
    except OSError as exc:
        return [], [Finding(display_name(str(root)), "error", "unreadable", f"cannot read: {exc.strerror or exc}")]
    if not stat.S_ISDIR(root_st.st_mode):
        if not stat.S_ISREG(root_st.st_mode):
            return [], [_special_finding(display_name(root.name), root_st.st_mode)]
        return ([root] if want(root.name) else []), []
    base = root
    root_real = os.path.realpath(root)
    visited: set[tuple[int, int]] = {(root_st.st_dev, root_st.st_ino)}

    def listing(folder: Path) -> list[os.DirEntry[str]] | None:
        try:
            with os.scandir(folder) as it:
                return sorted(it, key=lambda e: e.name)
        except OSError as exc:
            rel = relative_id(folder, base) if folder != base else "."
            findings.append(
                Finding(rel, "error", "unreadable", f"cannot list folder: {exc.strerror or exc}; its files are skipped")
            )
            return None

    # depth first in name order, with an explicit stack (a corpus 1,200 folders deep must not reach
    # Python's recursion limit): one frame per folder being listed, with the (device, inode) that marks
    # it visited while its subtree is walked
    top = listing(root)
    stack: list[tuple[Path, Any, tuple[int, int] | None]] = [] if top is None else [(root, iter(top), None)]
    while stack:
        folder, entries, folder_key = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            if folder_key is not None:
                visited.discard(folder_key)
            continue
        name = entry.name
        if name.startswith("."):
            continue
        path = folder / name
        rel = relative_id(path, base)
        try:
            lst = entry.stat(follow_symlinks=False)
        except OSError as exc:
            findings.append(Finding(rel, "error", "unreadable", f"cannot stat: {exc.strerror or exc}"))
            continue
        is_link = stat.S_ISLNK(lst.st_mode)
        st = lst
        if is_link:
            target = os.path.realpath(path)
            try:
                st = os.stat(path)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    findings.append(Finding(rel, "warning", "symlink-loop", "symlink loop; skipped"))
                elif want(name):
                    why = exc.strerror or exc
                    msg = f"symlink to {target}: {why}; skipped"
                    findings.append(Finding(rel, "warning", "broken-symlink", msg))
                continue
            if stat.S_ISDIR(st.st_mode) and _within(os.path.realpath(folder), target):
                findings.append(
                    Finding(rel, "warning", "symlink-loop", f"folder symlink to {target} (contains it); skipped")
                )
                continue
            inside = _within(target, root_real)
            if not inside and not follow:
                if stat.S_ISDIR(st.st_mode) or want(name):
                    findings.append(
                        Finding(
                            rel,
                            "warning",
                            "symlink-outside",
                            f"symlink to {target}, outside the corpus root; skipped "
                            "(set [corpus] follow_symlinks = true to read it)",
                        )
                    )
                continue
            if stat.S_ISDIR(st.st_mode) and not follow:
                findings.append(
                    Finding(
                        rel,
                        "info",
                        "symlink-dir",
                        f"folder symlink to {target}; skipped, its files are read where they live "
                        "(set [corpus] follow_symlinks = true to follow it)",
                    )
                )
                continue
        if stat.S_ISDIR(st.st_mode):
            key = (st.st_dev, st.st_ino)
            if key in visited:
                findings.append(
                    Finding(rel, "warning", "symlink-loop", "folder is its own ancestor (a loop); skipped")
                )
                continue
            if bad := _bad_name_finding(rel, name):
                findings.append(bad)
            if len(stack) > MAX_FOLDER_DEPTH:
                findings.append(
                    Finding(rel, "warning", "too-deep",
                            f"folder nested more than {MAX_FOLDER_DEPTH} levels below the corpus root; "
                            "skipped with everything under it")
                )
                continue
            sub = listing(path)
            if sub is not None:
                visited.add(key)  # the folders being walked (this one and its ancestors): a loop is a revisit
                stack.append((path, iter(sub), key))
            continue
        if not want(name):
            continue
        if not stat.S_ISREG(st.st_mode):
            findings.append(_special_finding(rel, st.st_mode))
            continue
        if not os.access(path, os.R_OK):
            findings.append(Finding(rel, "error", "unreadable", "cannot read: permission denied; skipped"))
            continue
        if bad := _bad_name_finding(rel, name):
            findings.append(bad)
        files.append(path)
    return files, findings


def iter_corpus_files(root: Path, cfg: Config) -> list[Path]:
    """Regular files under ``root`` that :func:`walk_corpus` would read (its findings dropped)."""
    return walk_corpus(root, cfg)[0]


def read_corpus(root: Path, cfg: Config) -> tuple[list[Document], list[Finding]]:
    """Read every configured file under ``root`` (a folder, or one file) into Documents.

    Returns the documents in path order and every finding met on the way; one bad file
    never stops the walk.
    """
    root = Path(root)
    if not root.exists():
        return [], [Finding(display_name(str(root)), "error", "not-found", "corpus path does not exist")]
    base = root if root.is_dir() else root.parent
    documents: list[Document] = []
    paths, findings = walk_corpus(root, cfg)
    for path in paths:
        reader = READERS[path.suffix.lower()]
        try:
            doc, file_findings = reader(path, base, cfg)
        except Exception as exc:
            doc, file_findings = (
                None,
                [Finding(relative_id(path, base), "error", "read-failed", f"{type(exc).__name__}: {exc}")],
            )
        findings.extend(file_findings)
        if isinstance(doc, list):  # a container (Confluence export zip) yields several documents
            documents.extend(doc)
        elif doc is not None:
            documents.append(doc)
    return documents, findings
