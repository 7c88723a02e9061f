"""PDF → text per page (pypdfium2, Apache/BSD licensed; no AGPL dependency).

* Each page's text layer is extracted; the Document's ``page_starts`` records where
  every page begins in ``text``. The chunker treats each page start as a hard chunk
  border, so every chunk's ``page`` is the one page its text comes from.
* Running headers and footers (a line among the first or last lines of most pages,
  compared with digits masked so "Page 3 of 9" matches "Page 4 of 9") are dropped, unless
  that would leave a page without text (slides or a deck whose pages are one line each:
  there the repeated line is the content).
* A word broken by a hyphen at a line end ("implemen-\\ntation") is joined again.
* A PDF whose pages carry no text at all (a scan) yields a "no-text-layer" finding,
  never an empty document.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

from hanrag.config import Config
from hanrag.records import Document, Finding
from hanrag.sources.document import make_document, read_bytes, relative_id

# lines at the top/bottom of a page that may be a running header/footer
_EDGE_LINES = 3
# share of pages a line must repeat on to count as header/footer
_REPEAT_SHARE = 0.6
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"[ \t]+")
# lower-case letter, hyphen, line break, lower-case letter: a word split across lines
_HYPHEN_BREAK = re.compile(r"([^\W\d_])-\n[ \t]*([a-zà-ÿ])")
_URL = re.compile(r"https?://\S+")


def _page_texts(data: bytes) -> tuple[list[str], dict[str, str]]:
    import pypdfium2 as pdfium  # lazy: only PDFs need it

    pdf = pdfium.PdfDocument(data)
    try:
        meta = {k: v for k, v in pdf.get_metadata_dict(skip_empty=True).items() if isinstance(v, str)}
        pages: list[str] = []
        for i in range(len(pdf)):
            page = pdf[i]
            textpage = page.get_textpage()
            try:
                pages.append(textpage.get_text_range())
            finally:
                textpage.close()
                page.close()
        return pages, meta
    finally:
        pdf.close()


def _lines(text: str) -> list[str]:
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    # pdfium reports a hyphen that ends a line as U+FFFE (or U+0002) and already joins the two
    # lines; dropping the marker repairs the word. U+00AD is an invisible soft hyphen.
    text = text.replace("\ufffe", "").replace("\x02", "").replace("\xad", "")
    return [_SPACES.sub(" ", line).strip() for line in text.split("\n")]


def _edge_keys(lines: list[str]) -> set[str]:
    content = [line for line in lines if line]
    edges = content[:_EDGE_LINES] + content[-_EDGE_LINES:]
    return {_DIGITS.sub("#", line) for line in edges}


def drop_running_lines(pages: list[list[str]]) -> list[list[str]]:
    """Remove lines that repeat at the top or bottom of most pages (digits masked)."""
    if len(pages) < 2:
        return pages
    counts: Counter[str] = Counter()
    for lines in pages:
        counts.update(_edge_keys(lines))
    need = max(2, math.ceil(_REPEAT_SHARE * len(pages)))
    running = {key for key, n in counts.items() if n >= need}
    if not running:
        return pages
    cleaned: list[list[str]] = []
    for lines in pages:
        content_idx = [i for i, line in enumerate(lines) if line]
        edge_idx = set(content_idx[:_EDGE_LINES] + content_idx[-_EDGE_LINES:])
        kept = [line for i, line in enumerate(lines) if not (i in edge_idx and _DIGITS.sub("#", line) in running)]
        # a page whose every line looks like a running line has no header: it is all content
        cleaned.append(kept if any(kept) or not content_idx else lines)
    return cleaned


def repair_hyphenation(text: str) -> str:
    """Join words hyphenated at a line end: "implemen-\\ntation" → "implementation"."""
    return _HYPHEN_BREAK.sub(r"\1\2", text)


def _page_text(lines: list[str]) -> str:
    text = "\n".join(lines).strip()
    text = re.sub(r"\n{3,}", "\n\n", text)
    return repair_hyphenation(text)


def pdf_pages(data: bytes) -> tuple[list[str], dict[str, str]]:
    """Cleaned text of every page (headers/footers dropped, hyphenation repaired) and metadata."""
    raw, meta = _page_texts(data)
    pages = drop_running_lines([_lines(t) for t in raw])
    return [_page_text(lines) for lines in pages], meta


def _join_pages(pages: list[str]) -> tuple[str, tuple[int, ...]]:
    parts: list[str] = []
    starts: list[int] = []
    pos = 0
    for text in pages:
        starts.append(pos)
        chunk = text + "\n\n"
        parts.append(chunk)
        pos += len(chunk)
    return "".join(parts).rstrip() + "\n", tuple(starts)


def _metadata_sources(meta: dict[str, str]) -> list[str]:
    found: list[str] = []
    for key in ("Subject", "Keywords", "Creator"):
        value = meta.get(key, "")
        found += _URL.findall(value)
        # a "Source: Book title" subject names a source that is not a URL
        label, sep, rest = value.partition(":")
        if sep and not found and label.strip().lower() in {"source", "출처", "来源", "來源"} and rest.strip():
            found.append(rest.strip())
    return found


def read_pdf(path: Path, root: Path, cfg: Config) -> tuple[Document | None, list[Finding]]:
    """READERS entry for ``.pdf``: text per page, ``page_starts`` set, source from metadata or text."""
    rel = relative_id(path, root)
    data, findings = read_bytes(path, root, cfg)
    if data is None:
        return None, findings
    import pypdfium2 as pdfium

    try:
        pages, meta = pdf_pages(data)
    except pdfium.PdfiumError as exc:
        return None, findings + [Finding(rel, "error", "bad-pdf", f"cannot open PDF: {exc}; skipped")]
    if not any(pages):
        message = f"no text layer on any of its {len(pages)} page(s) (a scan?); skipped, run OCR first"
        return None, findings + [Finding(rel, "error", "no-text-layer", message)]
    blank = [str(i + 1) for i, text in enumerate(pages) if not text]
    if blank:
        findings.append(Finding(rel, "warning", "no-text-layer", f"page(s) {', '.join(blank)} have no text layer"))
    text, starts = _join_pages(pages)
    first_line = next((line.strip() for line in text.split("\n") if line.strip()), "")
    fields = {
        "title": meta.get("Title", "").strip() or first_line[:120],
        "sources": _metadata_sources(meta),
        "author": meta.get("Author"),
        "modified": _pdf_date(meta.get("ModDate") or meta.get("CreationDate")),
    }
    doc, more = make_document(
        rel,
        text,
        fields,
        cfg,
        default_title=path.stem,
        extra_meta={"format": "pdf", "pages": len(pages)},
        page_starts=starts,
    )
    return doc, findings + more


def _pdf_date(value: str | None) -> str | None:
    """PDF date "D:20240305091500+09'00'" → ISO "2024-03-05T09:15:00+09:00"."""
    if not value:
        return None
    m = re.match(r"D?:?(\d{4})(\d{2})?(\d{2})?(\d{2})?(\d{2})?(\d{2})?([Zz]|[+-]\d{2}'?\d{2}'?)?", value.strip())
    if not m:
        return None
    y, mo, d, h, mi, s, tz = m.groups()
    iso = f"{y}-{mo or '01'}-{d or '01'}"
    if h:
        iso += f"T{h}:{mi or '00'}:{s or '00'}"
        if tz:
            iso += "Z" if tz in "Zz" else f"{tz[:3]}:{tz.replace(chr(39), '')[3:5]}"
    return iso
