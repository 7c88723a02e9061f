"""Confluence (Cloud and Server/Data Center) through the v1 REST content API.

* :class:`ConfluenceClient` — httpx with a timeout on every request, basic auth
  (user + API token, Cloud) or a bearer personal access token (Server/DC) from
  ``HANRAG_CONFLUENCE_USER`` / ``HANRAG_CONFLUENCE_TOKEN`` or the config. Credentials
  never appear in a log line, an error message or ``repr``. HTTP 429 (honouring
  ``Retry-After``), 5xx and transport errors are retried with bounded exponential backoff.
* :func:`storage_to_markdown` — storage format (XHTML with ``ac:``/``ri:`` elements) to
  Markdown: code/noformat macros become fenced code, info/note/warning/tip/panel become
  quoted callouts, tables stay tables, links to pages and attachments keep their names,
  attachments are listed (never fetched), template placeholders are dropped.
* :func:`page_to_document` — one page JSON (as returned with :data:`PAGE_EXPAND`) to a
  :class:`Document` with ``doc_id = confluence:<id>``, the page URL as source, the
  ancestors + title as a top heading (breadcrumb), version, version author, labels.
  Empty pages and never-filled template pages yield a finding instead.
"""

from __future__ import annotations

import email.utils
import hashlib
import os
import random
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
from bs4 import BeautifulSoup, Tag

from hanrag.config import Config, ConfluenceConfig
from hanrag.records import Document, Finding
from hanrag.sources.html import html_to_markdown

PAGE_EXPAND = "body.storage,version,metadata.labels,ancestors,space,history,children.attachment"
STUB_EXPAND = "version,space"
_RETRY_STATUS = {429, 500, 502, 503, 504}
_CALLOUTS = {"info": "Info", "note": "Note", "warning": "Warning", "tip": "Tip", "panel": "Panel"}
_DROP_MACROS = {"toc", "children", "pagetree", "anchor", "recently-updated", "contentbylabel", "livesearch"}
_INCLUDE_MACROS = {"include", "excerpt-include"}
_INCLUDE_TOKEN = "HANRAGINCLUDEDPAGE"
_INCLUDE_LINE = re.compile(rf"^{_INCLUDE_TOKEN}(\d+)$", re.MULTILINE)
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$", re.MULTILINE)


class ConfluenceError(RuntimeError):
    """A request to Confluence failed for good (after retries), or the server refused us."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


# --- HTTP client ------------------------------------------------------------------------------


def credentials(cfg: ConfluenceConfig) -> tuple[str, str]:
    """(user, token): environment first, then the config."""
    user = os.environ.get("HANRAG_CONFLUENCE_USER") or cfg.username
    token = os.environ.get("HANRAG_CONFLUENCE_TOKEN") or cfg.token
    return user, token


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP date
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


@dataclass
class RequestStats:
    requests: int = 0
    retries: int = 0
    bodies: int = 0  # page bodies received


class ConfluenceClient:
    """A small v1 content API client: CQL search with pagination, retries, no credential leaks."""

    def __init__(
        self,
        cfg: ConfluenceConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not cfg.url:
            raise ConfluenceError("confluence.url is not set (e.g. https://example.atlassian.net/wiki)")
        self.cfg = cfg
        self.base = cfg.url.rstrip("/")
        self._origin = urlsplit(self.base)._replace(path="", query="", fragment="").geturl()
        user, token = credentials(cfg)
        auth: httpx.Auth | None = None
        headers = {"Accept": "application/json", "User-Agent": "hanrag-confluence-sync"}
        if user and token:
            auth = httpx.BasicAuth(user, token)
        elif token:
            headers["Authorization"] = f"Bearer {token}"
        self._sleep = sleep
        self.stats = RequestStats()
        self._http = httpx.Client(
            auth=auth,
            headers=headers,
            timeout=httpx.Timeout(cfg.timeout_s, connect=min(10.0, cfg.timeout_s)),
            follow_redirects=False,
            transport=transport,
        )

    def __repr__(self) -> str:  # never show credentials
        return f"ConfluenceClient({self.base!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ConfluenceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _url(self, path_or_link: str) -> str:
        """Absolute URL for an API path or a ``_links.next`` link, always on the configured host."""
        if path_or_link.startswith(("http://", "https://")):
            parts = urlsplit(path_or_link)
            if f"{parts.scheme}://{parts.netloc}" != self._origin:
                # a next link to another host would receive our credentials: stay on ours
                path_or_link = parts.path + (f"?{parts.query}" if parts.query else "")
            else:
                return path_or_link
        context = urlsplit(self.base).path
        if context and path_or_link.startswith(context + "/"):
            return self._origin + path_or_link
        return self.base + path_or_link

    def get_json(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """GET with bounded retries on 429 / 5xx / transport errors; ConfluenceError when it keeps failing."""
        url = self._url(path)
        attempts = max(0, self.cfg.max_retries) + 1
        last = ""
        for attempt in range(attempts):
            self.stats.requests += 1
            try:
                response = self._http.get(url, params=params)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}"
                status = None
            else:
                status = response.status_code
                if status == 200:
                    try:
                        return response.json()
                    except ValueError:
                        raise ConfluenceError(f"GET {urlsplit(url).path}: response is not JSON", status) from None
                if status in (401, 403):
                    raise ConfluenceError(
                        f"GET {urlsplit(url).path}: HTTP {status}; check HANRAG_CONFLUENCE_USER / "
                        "HANRAG_CONFLUENCE_TOKEN (or confluence.username / confluence.token)",
                        status,
                    )
                if status not in _RETRY_STATUS:
                    raise ConfluenceError(f"GET {urlsplit(url).path}: HTTP {status}", status)
                last = f"HTTP {status}"
            if attempt == attempts - 1:
                break
            self.stats.retries += 1
            self._sleep(self._delay(attempt, response if status else None))
        raise ConfluenceError(f"GET {urlsplit(url).path}: still failing after {attempts} attempt(s) ({last})")

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        cap = self.cfg.max_backoff_s
        if response is not None and response.status_code == 429:
            after = _retry_after(response)
            if after is not None:
                return min(after, cap)
        # exponential backoff with jitter so parallel syncs do not retry in step
        return min(cap, self.cfg.backoff_s * (2**attempt)) * (0.5 + random.random() / 2)

    def search(self, cql: str, expand: str = "", limit: int | None = None) -> Iterator[dict[str, Any]]:
        """Every result of a CQL content search, following ``_links.next`` (cursor or start paging)."""
        params: dict[str, Any] | None = {"cql": cql, "limit": limit or self.cfg.page_limit}
        if expand:
            assert params is not None
            params["expand"] = expand
        path = "/rest/api/content/search"
        start = 0
        while True:
            data = self.get_json(path, params)
            results = data.get("results") or []
            if "body" in expand:
                self.stats.bodies += len(results)
            yield from results
            next_link = (data.get("_links") or {}).get("next")
            if next_link:
                path, params = next_link, None  # the link carries cql, expand, limit and cursor/start
                continue
            size = int(data.get("size", len(results)))
            page_limit = int(data.get("limit", limit or self.cfg.page_limit))
            if not results or size < page_limit or params is None:
                return
            start += size
            params["start"] = start

    def get_page(self, page_id: str, expand: str = PAGE_EXPAND) -> dict[str, Any]:
        data = self.get_json(f"/rest/api/content/{page_id}", {"expand": expand})
        if "body" in expand:
            self.stats.bodies += 1
        return data


def space_cql(cfg: ConfluenceConfig) -> str:
    """The CQL that defines the sync scope: pages of the configured spaces (and ``confluence.cql``)."""
    parts = ["type = page"]
    if cfg.spaces:
        quoted = ", ".join(f'"{s}"' for s in cfg.spaces)
        parts.append(f"space in ({quoted})")
    if cfg.cql.strip():
        parts.append(f"({cfg.cql.strip()})")
    return " and ".join(parts)


# --- storage format → Markdown ----------------------------------------------------------------


IncludeResolver = Callable[[str, str], str | None]


@dataclass
class Rendered:
    """A page body rendered to Markdown, with what the renderer saw on the way."""

    markdown: str
    placeholders: int = 0
    includes: list[str] = field(default_factory=list)  # "SPACE/Title" of included pages
    attachments: list[str] = field(default_factory=list)
    inlined: list[str] = field(default_factory=list)  # Markdown of included pages, by token number


def _param(macro: Tag, name: str) -> str:
    for p in macro.find_all("ac:parameter", recursive=False):
        if p.get("ac:name") == name:
            return p.get_text(" ", strip=True)
    return ""


def _new(soup: BeautifulSoup, name: str, text: str | None = None, **attrs: str) -> Tag:
    tag = soup.new_tag(name, attrs=attrs)
    if text is not None:
        tag.string = text
    return tag


def _render_macro(
    soup: BeautifulSoup, macro: Tag, rendered: Rendered, space: str, resolve: IncludeResolver | None
) -> None:
    name = (macro.get("ac:name") or "").lower()
    if name in ("code", "noformat"):
        body = macro.find("ac:plain-text-body")
        code = body.get_text() if body else ""
        pre = _new(soup, "pre")
        lang = _param(macro, "language")
        pre.append(_new(soup, "code", code, **({"class": f"language-{lang}"} if lang else {})))
        title = _param(macro, "title")
        if title:
            wrapper = _new(soup, "div")
            wrapper.append(_new(soup, "p", title))
            wrapper.append(pre)
            macro.replace_with(wrapper)
        else:
            macro.replace_with(pre)
    elif name in _CALLOUTS or name == "expand":
        quote = _new(soup, "blockquote" if name != "expand" else "div")
        label = _CALLOUTS.get(name, "")
        title = _param(macro, "title")
        head = f"{label}: {title}" if label and title else (label or title)
        if head:
            quote.append(_new(soup, "p", f"{head}"))
        body = macro.find("ac:rich-text-body")
        if body is not None:
            for child in list(body.contents):
                quote.append(child.extract())
        macro.replace_with(quote)
    elif name in _INCLUDE_MACROS:
        page = macro.find("ri:page")
        title = str(page.get("ri:content-title", "")) if page else ""
        key_space = str(page.get("ri:space-key", "")) if page and page.get("ri:space-key") else space
        if not title:
            macro.decompose()
            return
        rendered.includes.append(f"{key_space}/{title}")
        text = resolve(key_space, title) if resolve else None
        if text:
            # inlined after conversion (see storage_to_markdown), so the included page's own Markdown
            # is kept as is; its changes then change this page's content hash
            rendered.inlined.append(text)
            macro.replace_with(_new(soup, "p", f"{_INCLUDE_TOKEN}{len(rendered.inlined) - 1}"))
        else:
            macro.replace_with(_new(soup, "p", f"(included page: {title})"))
    elif name == "status":
        macro.replace_with(f"[{_param(macro, 'title') or _param(macro, 'colour')}]")
    elif name == "jira":
        macro.replace_with(f"Jira {_param(macro, 'key')}".strip())
    elif name in _DROP_MACROS:
        macro.decompose()
    else:
        # unknown macro: keep any body it has, drop its parameters
        for p in macro.find_all("ac:parameter", recursive=False):
            p.decompose()
        macro.unwrap()


def storage_to_markdown(storage: str, space: str = "", resolve: IncludeResolver | None = None) -> Rendered:
    """Render a storage-format body (XHTML with Confluence elements) to Markdown."""
    rendered = Rendered(markdown="")
    soup = BeautifulSoup(storage or "", "html.parser")  # html.parser keeps CDATA in code macros
    for ph in soup.find_all("ac:placeholder"):
        rendered.placeholders += 1
        ph.decompose()
    # innermost macros first, so a code macro inside an expand/panel is converted before its parent moves
    for macro in reversed(soup.find_all("ac:structured-macro")):
        _render_macro(soup, macro, rendered, space, resolve)
    for link in soup.find_all("ac:link"):
        target = link.find(["ri:page", "ri:attachment", "ri:user", "ri:space"])
        body = link.find(["ac:link-body", "ac:plain-text-link-body"])
        text = body.get_text(" ", strip=True) if body else ""
        if not text and target is not None:
            text = str(target.get("ri:content-title") or target.get("ri:filename") or target.get("ri:space-key") or "")
        link.replace_with(text)
    for image in soup.find_all("ac:image"):
        att = image.find("ri:attachment")
        image.replace_with(f"[image: {att.get('ri:filename')}]" if att and att.get("ri:filename") else "")
    for task in soup.find_all("ac:task"):
        status = task.find("ac:task-status")
        body = task.find("ac:task-body")
        mark = "[x]" if status and status.get_text(strip=True) == "complete" else "[ ]"
        li = _new(soup, "li", f"{mark} {body.get_text(' ', strip=True) if body else ''}")
        task.replace_with(li)
    for tasks in soup.find_all("ac:task-list"):
        tasks.name = "ul"
    for tag in soup.find_all(["ac:emoticon", "ac:inline-comment-marker", "at:var", "ac:layout-cell"]):
        if tag.name == "ac:emoticon" or tag.name == "at:var":
            tag.decompose()
        else:
            tag.unwrap()
    for tag in soup.find_all(re.compile(r"^(ac|ri|at):")):
        tag.unwrap()
    for t in soup.find_all("time"):
        if t.get("datetime") and not t.get_text(strip=True):
            t.replace_with(str(t["datetime"]))
    markdown = html_to_markdown(soup)
    rendered.markdown = _INCLUDE_LINE.sub(lambda m: _demote(rendered.inlined[int(m.group(1))]), markdown)
    return rendered


def _demote(markdown: str) -> str:
    """An included page's headings become bold lines: they must not split the including page's sections."""
    return _HEADING_LINE.sub(lambda m: f"**{m.group(1)}**", markdown.strip())


# --- page JSON → Document ---------------------------------------------------------------------


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def page_url(page: dict[str, Any], base: str) -> str:
    links = page.get("_links") or {}
    webui = links.get("webui")
    if webui:
        if webui.startswith("http"):
            return webui
        return (links.get("base") or base).rstrip("/") + webui
    return f"{base.rstrip('/')}/pages/viewpage.action?pageId={page.get('id')}"


def _body_text_only(markdown: str) -> str:
    """Markdown without headings, table rules and markup: what a reader would call content."""
    lines = []
    for line in markdown.splitlines():
        s = line.strip()
        if not s or s.startswith("#") or re.fullmatch(r"[|\-\s:]*", s):
            continue
        lines.append(re.sub(r"[|*_`>\[\]]", " ", s))
    return " ".join(" ".join(lines).split())


def page_to_document(
    page: dict[str, Any], cfg: Config, *, resolve: IncludeResolver | None = None
) -> tuple[Document | None, list[Finding], Rendered]:
    """One page (JSON with :data:`PAGE_EXPAND`) → Document, or None + finding for empty/template pages."""
    ccfg = cfg.confluence
    page_id = str(page.get("id"))
    title = str(page.get("title") or f"page {page_id}")
    space = str((page.get("space") or {}).get("key") or "")
    where = f"confluence:{page_id} ({space}/{title})"
    storage = ((page.get("body") or {}).get("storage") or {}).get("value") or ""
    rendered = storage_to_markdown(storage, space, resolve)
    attachments = [
        str(a.get("title"))
        for a in (((page.get("children") or {}).get("attachment") or {}).get("results") or [])
        if a.get("title")
    ]
    rendered.attachments = attachments
    content = _body_text_only(rendered.markdown)
    if not content:
        if rendered.placeholders:
            message = f"made from a template and never filled in ({rendered.placeholders} placeholder(s)); skipped"
            return None, [Finding(where, "info", "template-page", message)], rendered
        return None, [Finding(where, "info", "empty-page", "page has no content; skipped")], rendered
    if rendered.placeholders and len(content) < ccfg.template_min_chars:
        message = f"template placeholders left and only {len(content)} characters of content; skipped"
        return None, [Finding(where, "info", "template-page", message)], rendered
    ancestors = [str(a.get("title")) for a in page.get("ancestors") or [] if a.get("title")]
    breadcrumb = " / ".join([*ancestors, title])
    text = f"# {breadcrumb}\n\n{rendered.markdown}"
    if attachments:
        text += "\nAttachments: " + ", ".join(attachments) + "\n"
    version = page.get("version") or {}
    by = version.get("by") or {}
    history = page.get("history") or {}
    url = page_url(page, ccfg.url)
    labels = tuple(
        str(lab.get("name"))
        for lab in (((page.get("metadata") or {}).get("labels") or {}).get("results") or [])
        if lab.get("name")
    )
    doc = Document(
        doc_id=f"confluence:{page_id}",
        path=f"confluence/{space}/{page_id}",
        title=title,
        text=text,
        sources=(url,),
        tier=ccfg.tier,
        provenance="human",
        author=by.get("displayName") or by.get("publicName") or by.get("username"),
        version=str(version.get("number")) if version.get("number") is not None else None,
        modified=version.get("when") or (history.get("lastUpdated") or {}).get("when"),
        labels=labels,
        meta={
            "page_id": page_id,
            "space": space,
            "url": url,
            "ancestors": ancestors,
            "created": history.get("createdDate"),
            "attachments": attachments,
            "includes": rendered.includes,
        },
    )
    return doc, [], rendered
