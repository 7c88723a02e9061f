"""Structure-aware chunking: atomic sections → paragraphs → sentences, packed to a size.

Level 1, sections: a line that is only ``---`` (three or more dashes) and a Markdown
ATX heading at level ≤ ``heading_level`` start a new section. Separator lines belong to
no section; a heading line is the first line of its section. Lines inside fenced code
blocks (``````` or ``~~~``) and a leading YAML front matter block never split. A section
is atomic: no chunk spans two sections and overlap never crosses one. A section that is
only heading lines (``# 스크랩 모음`` right above ``## 첫 글``) is not a section of its own:
it joins the section that follows, so a heading is never indexed without its text.

Pages: a document with ``page_starts`` (a PDF) has a hard chunk border at every page start
as well: a section that runs over a page break is cut there into parts that keep its index
and headings, no chunk or overlap crosses the break, and ``Chunk.page`` is the one page the
chunk's text comes from (a citation of page 1 never holds page-2 text).

Level 2, blocks: paragraphs separated by blank lines; a fenced code block, a table (lines
starting with ``|``) and a heading line are blocks of their own.

Level 3, only for a block too large for one chunk: sentences (after ``. ! ?`` followed by
whitespace, after ``。！？``, after Korean final endings ``다. 요. 음. 함. 임. 됨. 것.`` even
without a following space, and at line breaks); a sentence still too long is cut as a last
resort — at whitespace when there is some in the second half of the piece, else at the
size, never inside a surrogate pair or a combining sequence (combining marks, ZWJ,
variation selectors, conjoining Hangul jamo). Large code blocks and tables split at lines.

Packing: units are packed greedily while the chunk stays ≤ ``chunk_size`` characters. The
next chunk of the same section starts with the last ≤ ``overlap`` characters of the
previous one, snapped to a sentence start, else a word start, in that window. Prose units
are at most ``chunk_size - overlap`` long so there is always room for the overlap; a code
block or table that fits in ``chunk_size`` is kept whole (its chunk may carry less or no
overlap).

Language: a chunk's tag (``ko`` / ``zh`` / ``en``, :func:`hanrag.language.detect_lang`) is read from its prose
(:func:`prose_view`: fenced code, inline code, URLs, link targets and HTML tags blanked); a chunk that held code or
links and has too little prose left takes its document's language.

Bound: one document yields at most :data:`MAX_CHUNKS_PER_DOC` chunks; :func:`chunk_corpus` reports a
document cut there, or one that cannot be chunked, as a finding and chunks the rest.

Offsets: ``Chunk.text == doc.text[chunk.start:chunk.end]`` exactly (end exclusive). Two
consecutive chunks of one section overlap when ``next.start < prev.end``; the overlap is
``doc.text[next.start:prev.end]``, and the chunk's own new text is
``doc.text[max(next.start, prev.end):next.end]``. Between chunks only whitespace
(blank lines, separators are not in any section) is left out.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from hanrag.config import ChunkingConfig
from hanrag.front_matter import FRONT_MATTER_MAX_NODES, front_matter_end, load_yaml
from hanrag.language import Lang, detect_lang
from hanrag.records import Chunk, Document, Finding

# chunks one document may yield: far above what a 20 MB file of prose gives (~45,000 at the defaults),
# so only generated or degenerate text (a heading every other line) meets it; the rest of the document
# is left out with a finding (see chunk_corpus)
MAX_CHUNKS_PER_DOC = 50_000

_SEPARATOR = re.compile(r" {0,3}-{3,}[ \t]*")
_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*")
_FENCE_OPEN = re.compile(r" {0,3}(`{3,}|~{3,})")
_TABLE = re.compile(r"[ \t]*\|")
# a sentence ends after a Korean final ending + period (no space needed), after CJK full stops,
# after . ! ? followed by whitespace, or at a line break; closing quotes/brackets stay with it
_SENT_END = re.compile(r"(?:[다요음함임됨것]\.+|[。！？]+|[.!?]+(?=\s|$))[\"'”’」』)\]]*|\n")
_KO_ENDINGS = set("다요음함임됨것")
# what is not prose for the language tag: a fenced code block at any indent (a list item's; to its closing fence,
# or the end of the text), inline code, a bare URL, a Markdown link target and an HTML tag or autolink
_FENCED = re.compile(r"^[ \t]*(`{3,}|~{3,}).*?(?:^[ \t]*\1[`~]*[ \t]*$|\Z)", re.M | re.S)
# (a link target stops at the next bracket too: scanning to a line's end from every "](" of a long line without ")"
# was quadratic)
_NOT_PROSE = re.compile(r"(`+)[^`\n]+?\1|https?://\S+|\]\([^()\[\]\s]*(?:\s+\"[^\"\n]*\")?\)|<[^<>\n]+>")
# how much of a document's prose its language is read from (the default of its chunks with little prose)
DOC_LANG_WINDOW = 20_000


@dataclass(frozen=True)
class Section:
    """An atomic section: ``text[start:end]`` (trimmed of surrounding whitespace)."""

    index: int
    start: int
    end: int
    headings: tuple[str, ...]


@dataclass(frozen=True)
class _Block:
    start: int
    end: int
    kind: str  # "prose" | "code" | "table" | "heading"


def _lines(text: str, start: int, end: int) -> Iterable[tuple[int, int]]:
    """(line start, line end without the newline) for each line of ``text[start:end]``."""
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        line_end = end if nl == -1 else nl
        yield pos, line_end
        pos = line_end + 1


def _is_fence_close(line: str, fence: str) -> bool:
    stripped = line.strip()
    return len(line) - len(line.lstrip(" ")) <= 3 and stripped.startswith(fence) and set(stripped) == {fence[0]}


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _front_matter_end(text: str) -> int:
    """End of a leading front matter block, only when it is a YAML mapping with named keys (else ``---`` lines
    separate: a paragraph "?" between two rules parses as the mapping {None: None}, and must not vanish)."""
    end = front_matter_end(text)
    if not end:
        return 0
    try:
        data = load_yaml(re.sub(r"(?m)^(---|\.\.\.)[ \t]*$", "", text[:end]), max_nodes=FRONT_MATTER_MAX_NODES)
    except Exception:
        return 0
    return end if isinstance(data, dict) and data and all(isinstance(k, str) for k in data) else 0


def split_sections(text: str, heading_level: int = 2) -> list[Section]:
    """Atomic sections of ``text``; see the module docstring for the rules.

    ``headings`` is the heading path: every enclosing heading of a level ≤ ``heading_level``
    (the document's ``#`` title and the section's own ``##`` heading, for instance). A ``---``
    separator keeps the headings above ``heading_level`` and drops the section's own.
    """
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    cur_start = _front_matter_end(text)
    cur_headings: tuple[str, ...] = ()
    fence = ""
    carried: int | None = None  # start of heading-only lines waiting for the section under them
    carried_headings: tuple[str, ...] = ()

    def close(end: int, *, heading_follows: bool = False) -> None:
        nonlocal carried, carried_headings
        s, e = _trim(text, cur_start if carried is None else carried, end)
        if s >= e:
            return
        if heading_follows and _only_headings(text, s, e):
            if carried is None:
                carried_headings = cur_headings
            carried = s  # joins the next section (a separator or the end keeps it as it is)
            return
        # a carried heading stays first in the path even when the next heading is its sibling
        # (a Confluence breadcrumb "# A / B" above the page's own "# 개요")
        headings = cur_headings if carried is None else (
            carried_headings + tuple(h for h in cur_headings if h not in carried_headings))
        carried, carried_headings = None, ()
        sections.append(Section(len(sections), s, e, headings))

    for ls, le in _lines(text, cur_start, len(text)):
        line = text[ls:le]
        if fence:
            if _is_fence_close(line, fence):
                fence = ""
            continue
        opening = _FENCE_OPEN.match(line)
        if opening:
            fence = opening.group(1)
            continue
        if _SEPARATOR.fullmatch(line):
            close(ls)
            stack = [h for h in stack if h[0] < heading_level]
            cur_start, cur_headings = le + 1, tuple(h[1] for h in stack)
            continue
        heading = _HEADING.fullmatch(line)
        if heading and len(heading.group(1)) <= heading_level:
            level = len(heading.group(1))
            title = re.sub(r"[ \t]+#+$", "", (heading.group(2) or "")).strip()
            close(ls, heading_follows=True)
            stack = [h for h in stack if h[0] < level] + [(level, title)]
            cur_start, cur_headings = ls, tuple(h[1] for h in stack if h[1])
    close(len(text))
    return sections


def _only_headings(text: str, start: int, end: int) -> bool:
    """Every non-blank line of ``text[start:end]`` is an ATX heading."""
    lines = [text[ls:le] for ls, le in _lines(text, start, end)]
    return all(_HEADING.fullmatch(line) for line in lines if line.strip())


def _blocks(text: str, start: int, end: int) -> list[_Block]:
    blocks: list[_Block] = []
    cur: list[int] = []  # [start, end, kind-index] of the block being built
    kind = ""
    fence = ""

    def flush() -> None:
        nonlocal cur, kind
        if cur:
            s, e = _trim(text, cur[0], cur[1])
            if s < e:
                blocks.append(_Block(s, e, kind))
        cur, kind = [], ""

    for ls, le in _lines(text, start, end):
        line = text[ls:le]
        if fence:
            cur[1] = le
            if _is_fence_close(line, fence):
                fence = ""
                flush()
            continue
        opening = _FENCE_OPEN.match(line)
        if opening:
            flush()
            fence, cur, kind = opening.group(1), [ls, le], "code"
            continue
        if not line.strip():
            flush()
            continue
        if _HEADING.fullmatch(line):
            flush()
            cur, kind = [ls, le], "heading"
            flush()
            continue
        line_kind = "table" if _TABLE.match(line) else "prose"
        if cur and kind != line_kind:
            flush()
        if not cur:
            cur, kind = [ls, le], line_kind
        else:
            cur[1] = le
    flush()
    return blocks


def is_grapheme_boundary(text: str, i: int) -> bool:
    """False when cutting ``text`` at ``i`` would split a surrogate pair or a combining sequence."""
    if i <= 0 or i >= len(text):
        return True
    c, p = text[i], text[i - 1]
    oc, op = ord(c), ord(p)
    if 0xDC00 <= oc <= 0xDFFF and 0xD800 <= op <= 0xDBFF:
        return False
    if p == "\r" and c == "\n":
        return False
    if c == "\u200d" or p == "\u200d":  # zero-width joiner glues both neighbours
        return False
    if 0xFE00 <= oc <= 0xFE0F or 0xE0100 <= oc <= 0xE01EF or 0x1F3FB <= oc <= 0x1F3FF or 0xE0020 <= oc <= 0xE007F:
        return False  # variation selectors, emoji skin tones, tag characters
    if 0x1160 <= oc <= 0x11FF or 0xD7B0 <= oc <= 0xD7FF:  # conjoining vowel / final jamo
        return False
    if (0x1100 <= op <= 0x115F or 0xA960 <= op <= 0xA97F) and (0x1100 <= oc <= 0x11FF or 0xAC00 <= oc <= 0xD7A3):
        return False  # a leading jamo continues into the next jamo or syllable
    return not (unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Mc", "Me"))


def safe_cut(text: str, pos: int, lo: int) -> int:
    """The nearest grapheme boundary at or before ``pos`` and after ``lo``.

    A single cluster longer than ``pos - lo`` (only degenerate text) is cut at ``pos``
    anyway, though never inside a surrogate pair, so sizes always hold.
    """
    i = pos
    while i > lo + 1 and not is_grapheme_boundary(text, i):
        i -= 1
    if i > lo + 1 or is_grapheme_boundary(text, i):
        return i
    if 0xDC00 <= ord(text[pos]) <= 0xDFFF and pos - 1 > lo:
        return pos - 1
    return pos


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    pos = start
    for match in _SENT_END.finditer(text, start, end):
        s, e = _trim(text, pos, match.end())
        if s < e:
            spans.append((s, e))
        pos = match.end()
    s, e = _trim(text, pos, end)
    if s < e:
        spans.append((s, e))
    return spans


def _hard_cut(text: str, start: int, end: int, limit: int) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` into pieces ≤ ``limit``: at whitespace when possible, else grapheme-safe."""
    pieces: list[tuple[int, int]] = []
    s = start
    while end - s > limit:
        cut = s + limit
        space = max(text.rfind(" ", s + limit // 2, cut + 1), text.rfind("\t", s + limit // 2, cut + 1))
        if space > s:
            cut = space
        else:
            cut = safe_cut(text, cut, s)
        ps, pe = _trim(text, s, cut)
        if ps < pe:
            pieces.append((ps, pe))
        s = cut
        while s < end and text[s].isspace():
            s += 1
    if s < end:
        pieces.append(_trim(text, s, end))
    return pieces


def _units(text: str, block: _Block, size: int, overlap: int) -> list[tuple[int, int]]:
    limit = size - overlap
    length = block.end - block.start
    if block.kind in ("code", "table"):
        if length <= size:
            return [(block.start, block.end)]  # kept whole when it fits
        parts = [_trim(text, ls, le) for ls, le in _lines(text, block.start, block.end)]
        parts = [(s, e) for s, e in parts if s < e]
    elif length <= limit:
        return [(block.start, block.end)]
    else:
        parts = _sentences(text, block.start, block.end)
    units: list[tuple[int, int]] = []
    for s, e in parts:
        units.extend([(s, e)] if e - s <= limit else _hard_cut(text, s, e, limit))
    return units


def _is_sentence_start(text: str, p: int) -> bool:
    q = p - 1
    while q >= 0 and text[q] in " \t":
        q -= 1
    if q < 0 or text[q] == "\n":
        return True
    while q > 0 and text[q] in "\"'”’」』)]":
        q -= 1
    ch = text[q]
    if ch in "。！？":
        return True
    if ch == "." and q > 0 and text[q - 1] in _KO_ENDINGS:
        return True
    return ch in ".!?" and q < p - 1  # Latin sentence ends need the whitespace after them


def _overlap_start(text: str, cs: int, ce: int, next_end: int, size: int, overlap: int) -> int | None:
    """Where the next chunk starts inside the previous one ``[cs, ce)``, or None for no overlap."""
    lo = max(ce - overlap, next_end - size, cs + 1)
    if overlap <= 0 or lo >= ce:
        return None
    word = fallback = None
    for p in range(lo, ce):
        if text[p].isspace():
            continue
        if _is_sentence_start(text, p):
            return p
        if word is None and text[p - 1].isspace():
            word = p
        if fallback is None and is_grapheme_boundary(text, p):
            fallback = p
    return word if word is not None else fallback


def _spans(text: str, section: Section, cfg: ChunkingConfig) -> list[tuple[int, int]]:
    size, overlap = cfg.chunk_size, cfg.overlap
    units = [u for b in _blocks(text, section.start, section.end) for u in _units(text, b, size, overlap)]
    spans: list[tuple[int, int]] = []
    cs = ce = -1
    for s, e in units:
        if cs < 0:
            cs, ce = s, e
        elif e - cs <= size:
            ce = e
        else:
            spans.append((cs, ce))
            ov = _overlap_start(text, cs, ce, e, size, overlap)
            cs, ce = (s if ov is None else ov), e
    if cs >= 0:
        spans.append((cs, ce))
    return spans


def chunk_id(doc_id: str, section: int, text: str, occurrence: int = 0) -> str:
    """Stable id: sha256 of document id, section index and text (and the repeat count of identical text)."""
    key = f"{doc_id}\x1f{section}\x1f{text}" + (f"\x1f{occurrence}" if occurrence else "")
    # surrogatepass: a lone surrogate (undecodable file-name byte) must hash, not raise; other text is unchanged
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _page(doc: Document, start: int) -> int | None:
    if not doc.page_starts:
        return None
    return max(1, bisect.bisect_right(doc.page_starts, start))


def _page_parts(doc: Document, section: Section) -> list[Section]:
    """``section`` cut at every page start inside it (trimmed, empty parts dropped).

    The parts keep the section's index and headings: a chapter that runs onto the next page is
    still one section for its heading path and chunk ids, only its chunks stop at the page.
    """
    inner = [p for p in doc.page_starts if section.start < p < section.end]
    if not inner:
        return [section]
    parts: list[Section] = []
    for lo, hi in zip([section.start, *inner], [*inner, section.end], strict=True):
        s, e = _trim(doc.text, lo, hi)
        if s < e:
            parts.append(Section(section.index, s, e, section.headings))
    return parts


def _blank(m: re.Match[str]) -> str:
    return " " * len(m.group())


def prose_view(text: str) -> str:
    """``text`` with what is not prose (fenced code blocks, inline code, URLs, link targets, HTML tags) turned to
    spaces, at the same offsets: the text a chunk's language is read from. A Korean page's ``kubectl`` commands
    and links are not English prose, and tagged ``en`` by their letters such a chunk was centred and weighed as an
    English passage (:mod:`hanrag.search.widen`)."""
    return _NOT_PROSE.sub(_blank, _FENCED.sub(_blank, text))


def document_lang(prose: str, text: str) -> Lang:
    """A document's language, from its prose (:func:`prose_view`), however short (a sentence above a list of API
    links), or from all of its text when it has no prose at all (a Markdown file of code blocks)."""
    return detect_lang(prose, default=detect_lang(text), window=DOC_LANG_WINDOW, min_letters=1)


def _chunk_lang(piece: str, prose: str, doc_lang: Lang) -> Lang:
    """A chunk's language, read from its prose; a chunk that held code or links and has too little prose left to
    decide on takes its document's (a chunk of prose alone is decided by its own letters, however short)."""
    return detect_lang(prose, default=doc_lang if prose != piece else None)


def chunk_document(doc: Document, cfg: ChunkingConfig, findings: list[Finding] | None = None) -> list[Chunk]:
    """Cut one document into chunks (in document order); see the module docstring.

    At most :data:`MAX_CHUNKS_PER_DOC` chunks: the rest of a document past them is left out, with a
    ``too-many-chunks`` warning appended to ``findings`` when given."""
    if cfg.chunk_size < 1 or not 0 <= cfg.overlap < max(1, cfg.chunk_size // 2 + 1):
        raise ValueError(f"chunking: need chunk_size >= 1 and 0 <= overlap <= chunk_size/2, got {cfg}")
    text = doc.text
    prose = prose_view(text)
    doc_lang = document_lang(prose, text)
    chunks: list[Chunk] = []
    seen: dict[str, int] = {}
    for section in split_sections(text, cfg.heading_level):
        spans = [span for part in _page_parts(doc, section) for span in _spans(text, part, cfg)]
        cut = bool(spans) and len(chunks) + len(spans) > MAX_CHUNKS_PER_DOC
        if cut:
            spans = spans[: MAX_CHUNKS_PER_DOC - len(chunks)]
            if findings is not None:
                findings.append(Finding(doc.path, "warning", "too-many-chunks",
                                        f"over {MAX_CHUNKS_PER_DOC:,} chunks; the text after character "
                                        f"{spans[-1][1] if spans else section.start:,} is left out of the index "
                                        "(split the file)"))
        for start, end in spans:
            piece = text[start:end]
            cid = chunk_id(doc.doc_id, section.index, piece)
            seen[cid] = seen.get(cid, 0) + 1
            if seen[cid] > 1:
                cid = chunk_id(doc.doc_id, section.index, piece, seen[cid] - 1)
            chunks.append(
                Chunk(
                    chunk_id=cid,
                    doc_id=doc.doc_id,
                    text=piece,
                    start=start,
                    end=end,
                    source=doc.source,
                    path=doc.path,
                    title=doc.title,
                    tier=doc.tier,
                    provenance=doc.provenance,
                    lang=_chunk_lang(piece, prose[start:end], doc_lang),
                    headings=section.headings,
                    section=section.index,
                    labels=doc.labels,
                    page=_page(doc, start),
                )
            )
        if cut:
            break
    return chunks


def chunk_documents(docs: Iterable[Document], cfg: ChunkingConfig) -> list[Chunk]:
    return [chunk for doc in docs for chunk in chunk_document(doc, cfg)]


def chunk_corpus(docs: Iterable[Document], cfg: ChunkingConfig) -> tuple[list[Chunk], list[Finding]]:
    """Chunks of every document and the findings met on the way: one that yields too many chunks is cut
    (:func:`chunk_document`), and one that cannot be chunked at all is left out with an error naming it,
    so the rest of the corpus is still chunked."""
    chunks: list[Chunk] = []
    findings: list[Finding] = []
    for doc in docs:
        try:
            chunks.extend(chunk_document(doc, cfg, findings))
        except (ValueError, TypeError, RecursionError, UnicodeError, MemoryError) as exc:
            if isinstance(exc, ValueError) and str(exc).startswith("chunking:"):
                raise  # a bad [chunking] config is the config's error, not this document's
            findings.append(Finding(doc.path, "error", "chunk-failed",
                                    f"cannot be chunked ({type(exc).__name__}: {str(exc)[:200]}); left out"))
    return chunks, findings
