"""HTML → Markdown, with page metadata and boilerplate removal for web articles.

Converter choice (measured by ``benchmarks/html_fidelity.py`` on a small realistic
sample with Korean text, GFM tables, fenced code and nested headings): markdownify
with the options below kept every heading, every table row and every code line
verbatim in a fenced block; html2text kept headings and table rows but turned code
into indented blocks (no fence, no language, so ``# comment`` lines inside code
look like headings) and wrote tables without leading pipes. Both leave ``|`` inside
a cell unescaped, which :class:`_Converter` fixes.

Web articles (``og:type=article``, an ``<article>`` element, or a ``<main>`` next to
``<nav>``/``<header>``/``<footer>``/``<aside>``) go through readability first to drop
navigation, sidebars and footers; other pages (exports, docs) are converted whole
minus scripts and styles.

Markup nested deeper than :data:`MAX_NESTING` (400 ``<div>`` s) would exhaust the converter's
recursion: such a page is read again with the tags below that level flattened into their text,
with a warning, so the document stays.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import markdownify
from bs4 import BeautifulSoup, Tag, UnicodeDammit

from hanrag.config import Config
from hanrag.records import Document, Finding
from hanrag.sources.document import make_document, read_bytes, relative_id

_DROP_TAGS = ("script", "style", "noscript", "template", "iframe", "svg", "form", "button")
_BOILERPLATE_TAGS = ("nav", "header", "footer", "aside")
_MODIFIED_META = ("article:modified_time", "og:updated_time", "last-modified", "dcterms.modified", "dc.date.modified")
_PUBLISHED_META = ("article:published_time", "date", "dcterms.created", "dc.date", "dcterms.date", "pubdate")
_BLANK_RUNS = re.compile(r"\n{3,}")
MAX_NESTING = 100  # element levels kept as markup; deeper ones become their text (see the module docstring)


class _Converter(markdownify.MarkdownConverter):
    """markdownify tuned for retrieval: ATX headings, fenced code with language, escaped cell pipes."""

    def __init__(self, **options: object) -> None:
        defaults: dict[str, object] = {
            "heading_style": markdownify.ATX,
            "bullets": "-",
            # escaping `_` and `*` would put backslashes into identifiers (snake_case, 2*3) and tokens
            "escape_underscores": False,
            "escape_asterisks": False,
            "table_infer_header": True,
            "code_language_callback": _code_language,
            "strip": ["img"],
        }
        defaults.update(options)
        super().__init__(**defaults)

    def convert_td(self, el, text, parent_tags):
        return super().convert_td(el, text.replace("|", r"\|"), parent_tags)

    def convert_th(self, el, text, parent_tags):
        return super().convert_th(el, text.replace("|", r"\|"), parent_tags)


def _code_language(el: Tag) -> str | None:
    """``<pre class="language-x">`` or ``<pre><code class="language-x">`` → ``x``."""
    candidates = [el]
    code = el.find("code")
    if isinstance(code, Tag):
        candidates.append(code)
    for node in candidates:
        for cls in node.get("class") or []:
            for prefix in ("language-", "lang-", "brush:"):
                if cls.startswith(prefix) and len(cls) > len(prefix):
                    return cls[len(prefix) :]
        lang = node.get("data-language") or node.get("data-lang")
        if lang:
            return str(lang)
    return None


def html_to_markdown(html: str | Tag) -> str:
    """Convert an HTML fragment or page to Markdown (no boilerplate removal)."""
    soup = html if isinstance(html, Tag) else BeautifulSoup(html, "lxml")
    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    for tag in soup.find_all(["head", "title"]):
        tag.decompose()
    md = _Converter().convert_soup(soup)
    return tidy_markdown(md)


def tidy_markdown(md: str) -> str:
    lines = [line.rstrip() for line in md.replace("\r\n", "\n").replace("\xa0", " ").split("\n")]
    return _BLANK_RUNS.sub("\n\n", "\n".join(lines)).strip() + "\n"


@dataclass(frozen=True)
class HtmlPage:
    """What an HTML page yields: Markdown body plus the metadata found in its head."""

    markdown: str
    title: str = ""
    canonical_url: str = ""
    published: str | None = None
    modified: str | None = None
    author: str | None = None
    lang: str | None = None
    is_article: bool = False
    keywords: tuple[str, ...] = field(default_factory=tuple)


def decode_html(data: bytes) -> str:
    """Decode HTML bytes honouring a BOM or ``<meta charset>``; UTF-8 then CP949 otherwise."""
    dammit = UnicodeDammit(data, ["utf-8", "cp949"], is_html=True)
    if dammit.unicode_markup is None:
        return data.decode("utf-8", errors="replace")
    return dammit.unicode_markup


def _meta(soup: BeautifulSoup, names: tuple[str, ...]) -> str | None:
    for name in names:
        for attr in ("property", "name", "http-equiv", "itemprop"):
            tag = soup.find("meta", attrs={attr: re.compile(f"^{re.escape(name)}$", re.I)})
            if isinstance(tag, Tag) and tag.get("content"):
                return str(tag["content"]).strip()
    return None


def _canonical(soup: BeautifulSoup) -> str:
    for link in soup.find_all("link", href=True):
        rel = link.get("rel") or []
        rels = rel if isinstance(rel, list) else str(rel).split()
        if any(r.lower() == "canonical" for r in rels):
            return str(link["href"]).strip()
    return _meta(soup, ("og:url",)) or ""


def _title(soup: BeautifulSoup) -> str:
    og = _meta(soup, ("og:title",))
    if og:
        return og
    if soup.title and soup.title.string and soup.title.string.strip():
        return soup.title.string.strip()
    h1 = soup.find("h1")
    return h1.get_text(" ", strip=True) if isinstance(h1, Tag) else ""


def _looks_like_article(soup: BeautifulSoup) -> bool:
    if (_meta(soup, ("og:type",)) or "").lower() == "article":
        return True
    if soup.find("article") is not None:
        return True
    return soup.find("main") is not None and soup.find(_BOILERPLATE_TAGS) is not None


def _article_html(html: str) -> str | None:
    """The main content of a web article by readability, or None when it finds too little."""
    try:
        from readability import Document as Readability  # lazy: only articles need it
    except ImportError:  # optional dependency: fall back to dropping nav/header/footer/aside
        return None
    try:
        summary = Readability(html).summary(html_partial=True)
    except Exception:
        return None
    text = BeautifulSoup(summary, "lxml").get_text(" ", strip=True)
    return summary if len(text) >= 80 else None


def _main_container(soup: BeautifulSoup) -> Tag | None:
    """The page's one ``<article>`` / ``<main>`` / ``role=main`` element, if it has exactly one."""
    for found in (soup.find_all("article"), soup.find_all("main"), soup.find_all(attrs={"role": "main"})):
        if len(found) == 1 and isinstance(found[0], Tag):
            return found[0]
    return None


def _article_body(soup: BeautifulSoup, html: str) -> Tag:
    """Main content of an article: its semantic container, else readability, else the page minus boilerplate.

    Readability scores by text density and can drop short tables and code blocks, so its
    result is used only when it kept every table and ``<pre>`` of the page.
    """
    container = _main_container(soup)
    if container is not None:
        _strip_boilerplate(container)
        return container
    extracted = _article_html(html)
    if extracted is not None:
        candidate = BeautifulSoup(extracted, "lxml")
        kept = all(len(candidate.find_all(t)) >= len(soup.find_all(t)) for t in ("table", "pre"))
        if kept:
            return candidate
    _strip_boilerplate(soup)
    return soup.body or soup


def _strip_boilerplate(soup: Tag) -> None:
    for tag in soup.find_all(_BOILERPLATE_TAGS):
        tag.decompose()


def flatten_deep(soup: Tag, max_depth: int = MAX_NESTING) -> int:
    """Replace every element at ``max_depth`` levels by its text, in place; returns how many were flattened.

    Iterative, so a page nested thousands of levels deep is walked without recursion."""
    deep: list[Tag] = []
    stack: list[tuple[Tag, int]] = [(soup, 0)]
    while stack:
        tag, depth = stack.pop()
        for child in tag.children:
            if isinstance(child, Tag):
                if depth + 1 >= max_depth:
                    deep.append(child)
                else:
                    stack.append((child, depth + 1))
    for tag in deep:
        text = tag.get_text(" ")
        tag.clear()
        tag.append(text)
        tag.name = "span"  # no block semantics left to convert
    return len(deep)


def parse_html_page(html: str, *, flatten: bool = False) -> HtmlPage:
    """Metadata and Markdown of a full HTML page (boilerplate removed when it is an article).

    ``flatten``: elements nested deeper than :data:`MAX_NESTING` become their text first."""
    soup = BeautifulSoup(html, "lxml")
    if flatten:
        flatten_deep(soup)
    is_article = _looks_like_article(soup)
    html_tag = soup.find("html")
    lang = str(html_tag.get("lang")) if isinstance(html_tag, Tag) and html_tag.get("lang") else None
    keywords = tuple(k.strip() for k in (_meta(soup, ("keywords",)) or "").split(",") if k.strip())
    page = HtmlPage(
        markdown="",
        title=_title(soup),
        canonical_url=_canonical(soup),
        published=_meta(soup, _PUBLISHED_META),
        modified=_meta(soup, _MODIFIED_META),
        author=_meta(soup, ("author", "article:author", "dc.creator")),
        lang=lang,
        is_article=is_article,
        keywords=keywords,
    )
    body: Tag = soup.body or soup
    if is_article:
        body = _article_body(soup, html)
    markdown = html_to_markdown(body)
    if not page.modified:
        time_tag = soup.find("time", attrs={"datetime": True})
        if isinstance(time_tag, Tag):
            page = _replace(page, published=page.published or str(time_tag["datetime"]))
    return _replace(page, markdown=markdown)


def _replace(page: HtmlPage, **changes: object) -> HtmlPage:
    import dataclasses

    return dataclasses.replace(page, **changes)  # type: ignore[arg-type]


def read_html(path: Path, root: Path, cfg: Config) -> tuple[Document | None, list[Finding]]:
    """READERS entry for ``.html``/``.htm``: one Document whose first source is the canonical URL."""
    data, findings = read_bytes(path, root, cfg)
    if data is None:
        return None, findings
    doc, more = html_document(decode_html(data), relative_id(path, root), cfg, default_title=path.stem)
    return doc, findings + more


def html_document(
    html: str, rel: str, cfg: Config, *, default_title: str, extra_meta: dict[str, object] | None = None
) -> tuple[Document | None, list[Finding]]:
    """Document for an HTML page whose doc id and path are ``rel``."""
    findings: list[Finding] = []
    try:
        page = parse_html_page(html)
    except RecursionError:
        page = parse_html_page(html, flatten=True)
        findings.append(Finding(rel, "warning", "deep-html",
                                f"markup nested over {MAX_NESTING} levels deep; the elements below that level "
                                "were read as plain text"))
    if not page.markdown.strip():
        empty = Finding(rel, "warning", "empty-file", "HTML page has no text after conversion; skipped")
        return None, [*findings, empty]
    meta: dict[str, object] = {
        "title": page.title,
        "sources": [page.canonical_url] if page.canonical_url.startswith(("http://", "https://")) else [],
        "author": page.author,
        "modified": page.modified or page.published,
        "labels": list(page.keywords),
    }
    extra: dict[str, object] = {"format": "html", "article": page.is_article}
    if page.canonical_url:
        extra["url"] = page.canonical_url
    if page.published:
        extra["published"] = page.published
    if page.lang:
        extra["lang"] = page.lang
    extra.update(extra_meta or {})
    doc, more = make_document(rel, page.markdown, meta, cfg, default_title=default_title, extra_meta=extra)
    return doc, findings + more
