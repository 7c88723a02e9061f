"""A Confluence HTML space export (zip) as a file source: one Document per page.

The zip is read in memory, never extracted. Each page file (``SPACE/Title_12345.html``)
has the page title in ``#title-text``, the breadcrumb in ``#breadcrumbs``, author and
date in ``.page-metadata`` and the body in ``#main-content``; the body goes through the
HTML converter, the breadcrumb becomes the top heading as for synced pages. The export
carries no page URLs: with ``confluence.url`` set, the page's ``viewpage.action?pageId=``
URL is its source; otherwise the usual source rules apply (a URL or Source: line in the text).
A zip that is not a Confluence export yields an info finding and no documents.
"""

from __future__ import annotations

import re
import zipfile
import zlib
from pathlib import Path, PurePosixPath

from bs4 import BeautifulSoup, Tag

from hanrag.config import Config
from hanrag.records import Document, Finding
from hanrag.sources.document import make_document, relative_id
from hanrag.sources.html import decode_html, html_to_markdown

_PAGE_ID = re.compile(r"_(\d+)\.html?$")
_MAX_TOTAL = 20  # total uncompressed bytes may be this many times corpus.max_file_bytes (zip bombs)
_BLOCK = 1 << 16


class _TooLarge(Exception):
    """A member decompressed past its limit (whatever its header said)."""


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """A member's bytes, decompressed block by block and counted as they come: the sizes in a zip's headers
    are the writer's claim, so the limit holds on the bytes actually produced. Raises :class:`_TooLarge`."""
    out = bytearray()
    with archive.open(info) as fh:
        while block := fh.read(min(_BLOCK, limit + 1 - len(out))):
            out += block
            if len(out) > limit:
                raise _TooLarge
    return bytes(out)


def _page(html: str) -> tuple[str, list[str], str | None, str | None, Tag | None]:
    """(title, breadcrumb titles, author, modified text, main content) of one exported page."""
    soup = BeautifulSoup(html, "lxml")
    title_tag = soup.select_one("#title-text") or soup.find("title")
    title = title_tag.get_text(" ", strip=True) if title_tag else ""
    if " : " in title:
        title = title.split(" : ", 1)[1].strip()  # "Space name : Page title"
    crumbs = [a.get_text(" ", strip=True) for a in soup.select("#breadcrumbs li a")]
    meta = soup.select_one(".page-metadata")
    author = None
    modified = None
    if meta is not None:
        who = meta.select_one(".author, .editor")
        author = who.get_text(" ", strip=True) if who else None
        m = re.search(r"(?:last (?:modified|updated) (?:by .*? )?on|on) (.+?)$", meta.get_text(" ", strip=True))
        modified = m.group(1).strip() if m else None
    main = soup.select_one("#main-content")
    return title, crumbs, author, modified, main if isinstance(main, Tag) else None


def read_confluence_export(path: Path, root: Path, cfg: Config) -> tuple[list[Document] | None, list[Finding]]:
    """READERS entry for ``.zip``: the pages of a Confluence HTML export, or None when it is not one."""
    rel = relative_id(path, root)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        return None, [Finding(rel, "warning", "bad-zip", f"cannot open zip: {exc}; skipped")]
    findings: list[Finding] = []
    documents: list[Document] = []
    budget = _MAX_TOTAL * cfg.corpus.max_file_bytes
    with archive:
        members = [i for i in archive.infolist() if i.filename.lower().endswith((".html", ".htm")) and not i.is_dir()]
        pages = [i for i in members if _PAGE_ID.search(i.filename)]
        if not pages:
            return None, [Finding(rel, "info", "not-confluence-export", "zip has no Confluence page files; skipped")]
        for info in sorted(pages, key=lambda i: i.filename):
            where = f"{rel}/{info.filename}"
            if info.file_size > cfg.corpus.max_file_bytes or info.file_size > budget:
                findings.append(
                    Finding(where, "warning", "too-large", f"{info.file_size:,} bytes uncompressed; skipped")
                )
                continue
            limit = min(cfg.corpus.max_file_bytes, budget)
            try:
                raw = _read_member(archive, info, limit)
            except _TooLarge:
                findings.append(Finding(where, "warning", "too-large", f"decompresses past {limit:,} bytes though "
                                        f"its header says {info.file_size:,}; skipped"))
                budget -= limit  # what was decompressed counts against the zip's total
                continue
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError) as exc:
                findings.append(Finding(where, "warning", "bad-zip-member", f"cannot read it from the zip: {exc}; "
                                        "skipped"))
                continue
            budget -= len(raw)
            title, crumbs, author, modified, main = _page(decode_html(raw))
            if main is None or not main.get_text(strip=True):
                findings.append(Finding(where, "info", "empty-page", "exported page has no content; skipped"))
                continue
            body = html_to_markdown(main)
            page_id = _PAGE_ID.search(info.filename).group(1)  # type: ignore[union-attr]
            space = PurePosixPath(info.filename).parts[0] if "/" in info.filename else ""
            text = f"# {' / '.join([*crumbs, title])}\n\n{body}"
            url = (
                f"{cfg.confluence.url.rstrip('/')}/pages/viewpage.action?pageId={page_id}" if cfg.confluence.url else ""
            )
            fields = {"title": title, "sources": [url] if url else [], "author": author, "modified": modified}
            extra = {"format": "confluence-export", "page_id": page_id, "space": space, "ancestors": crumbs}
            doc, more = make_document(where, text, fields, cfg, default_title=title or info.filename, extra_meta=extra)
            documents.append(doc)
            findings.extend(more)
    return documents, findings
