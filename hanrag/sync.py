"""Incremental Confluence sync into an index.

State lives beside the index, in ``INDEX/confluence/``:

* ``state.json`` — per page id: version, SHA-256 of the rendered Markdown, title, space,
  the pages it includes; plus the last sync time, a sync counter and pages to retry.
* ``documents.jsonl`` — the rendered Documents of every synced page (the stable document
  set handed to the index builder; unchanged pages are not fetched again).

Both are written atomically (temp file + ``os.replace``) and only after the index
snapshot was published, so a sync killed half-way is simply repeated.

One incremental sync makes three kinds of requests:

1. an id listing of the scope (``type = page and space in (...)``, no expand, no bodies):
   ids that are in the state but not listed were deleted or moved out of scope → removed;
   listed ids that are not in the state (new, or moved into scope) → fetched;
2. the pages modified since the last sync (CQL ``lastmodified >= <last sync - overlap>``,
   ``expand=version``, still no bodies): those whose version differs from the state → fetched;
3. bodies only for the pages chosen above, in batches (``id in (...)``, storage format).

A no-change sync therefore fetches no body, builds nothing and embeds nothing.

**Content that changes without a version bump.** Included pages (``include`` /
``excerpt-include`` macros) and dynamic macros change what a page shows while its
version stays. hanrag keys change detection on the content hash of the *rendered*
Markdown, not on the version alone:

* included pages are inlined from the synced pages, and the state records who includes
  whom: when an included page changes (its version moves), every page including it is
  re-rendered too, and its new content hash marks it changed;
* other macros (Jira, dynamic lists) are caught by a full sync (``--full``, or
  automatically every ``confluence.full_every`` syncs): every page in scope is fetched and
  re-rendered, and only pages whose content hash differs from the state are handed on as
  changed. A full sync fetches bodies but, through the builder's chunk-hash embedding
  cache, still embeds only chunks whose text changed.

**One source per index folder.** A sync publishes a snapshot of exactly the synced pages,
and a corpus build one of exactly the corpus files, so running one over the other's index
would silently replace every document. :func:`index_source` tells them apart (the sync
state, else the current snapshot's document ids) and both refuse a foreign index with
:class:`IndexSourceError`; to search a file corpus and Confluence, build two index folders.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hanrag.config import Config
from hanrag.embed import Embedder
from hanrag.fsutil import atomic_write_bytes
from hanrag.index.store import (  # noqa: F401 - IndexSourceError and check_index_source are re-exported
    CONFLUENCE_STATE_DIR,
    CONFLUENCE_STATE_FILES,
    IndexSourceError,
    check_index_source,
    index_source,
)
from hanrag.pipeline import build_from_documents
from hanrag.records import Document, Finding
from hanrag.sources.confluence import (
    PAGE_EXPAND,
    STUB_EXPAND,
    ConfluenceClient,
    ConfluenceError,
    content_hash,
    page_to_document,
    space_cql,
)

STATE_DIR = CONFLUENCE_STATE_DIR
STATE_FILE, DOCS_FILE = CONFLUENCE_STATE_FILES
STATE_VERSION = 1


@dataclass
class PageState:
    version: int
    hash: str  # sha256 of the rendered text; "" for a page skipped (empty/template)
    title: str = ""
    space: str = ""
    includes: list[str] = field(default_factory=list)
    indexed: bool = True  # False for pages skipped with a finding (kept so they are not refetched)


@dataclass
class SyncState:
    url: str = ""
    scope: str = ""
    last_sync: str = ""  # ISO UTC time the last successful sync started
    syncs: int = 0
    pages: dict[str, PageState] = field(default_factory=dict)
    retry: list[str] = field(default_factory=list)  # page ids that failed to fetch last time

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": "hanrag-confluence-sync",
            "version": STATE_VERSION,
            "url": self.url,
            "scope": self.scope,
            "last_sync": self.last_sync,
            "syncs": self.syncs,
            "retry": sorted(self.retry),
            "pages": {pid: vars(p) for pid, p in sorted(self.pages.items())},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SyncState:
        pages = {str(k): PageState(**v) for k, v in (data.get("pages") or {}).items()}
        return cls(
            url=str(data.get("url", "")),
            scope=str(data.get("scope", "")),
            last_sync=str(data.get("last_sync", "")),
            syncs=int(data.get("syncs", 0)),
            pages=pages,
            retry=[str(r) for r in data.get("retry") or []],
        )


@dataclass
class ConfluenceSyncReport:
    full: bool = False
    listed: int = 0
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0  # fetched and re-rendered, same content hash
    removed: list[str] = field(default_factory=list)
    skipped: int = 0  # empty / template pages
    failed: list[str] = field(default_factory=list)
    bodies: int = 0
    requests: int = 0
    retries: int = 0
    built: bool = False
    build: dict[str, Any] | None = None
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in vars(self).items() if k != "findings"}
        data["findings"] = [f.to_dict() for f in self.findings]
        return data

    def summary_lines(self) -> list[str]:
        mode = "full" if self.full else "incremental"
        lines = [
            f"{mode} sync: {self.listed} pages in scope; {len(self.added)} added, {len(self.updated)} updated, "
            f"{len(self.removed)} removed, {self.unchanged} re-rendered unchanged, {self.skipped} skipped, "
            f"{len(self.failed)} failed",
            f"{self.requests} requests ({self.retries} retries), {self.bodies} page bodies, {self.seconds:.1f}s",
        ]
        if self.build:
            lines.append(
                f"index: {self.build.get('chunks')} chunks, {self.build.get('embedded')} embedded, "
                f"snapshot {self.build.get('snapshot')}"
            )
        elif not self.built:
            lines.append("index unchanged (nothing to build)")
        return lines


# --- state on disk ---------------------------------------------------------------------------


def state_dir(index_dir: str | Path) -> Path:
    return Path(index_dir) / STATE_DIR


def load_state(index_dir: str | Path) -> SyncState:
    path = state_dir(index_dir) / STATE_FILE
    if not path.is_file():
        return SyncState()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfluenceError(f"{path}: unreadable sync state ({exc}); delete it to resync from scratch") from None
    if data.get("format") != "hanrag-confluence-sync":
        raise ConfluenceError(f"{path}: not a hanrag Confluence sync state")
    return SyncState.from_dict(data)


def save_state(index_dir: str | Path, state: SyncState) -> None:
    blob = json.dumps(state.to_dict(), ensure_ascii=False, indent=1).encode("utf-8")
    atomic_write_bytes(state_dir(index_dir) / STATE_FILE, blob, mkdir=True)


def load_documents(index_dir: str | Path) -> dict[str, Document]:
    path = state_dir(index_dir) / DOCS_FILE
    docs: dict[str, Document] = {}
    if not path.is_file():
        return docs
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                doc = Document.from_dict(json.loads(line))
                docs[doc.doc_id] = doc
    return docs


def save_documents(index_dir: str | Path, docs: Iterable[Document]) -> None:
    lines = [json.dumps(d.to_dict(), ensure_ascii=False) for d in sorted(docs, key=lambda d: d.doc_id)]
    atomic_write_bytes(state_dir(index_dir) / DOCS_FILE, ("\n".join(lines) + "\n").encode("utf-8"), mkdir=True)


# --- the sync --------------------------------------------------------------------------------


def _cql_time(iso: str, overlap_s: int) -> str:
    when = _dt.datetime.fromisoformat(iso) - _dt.timedelta(seconds=max(0, overlap_s))
    return when.astimezone(_dt.UTC).strftime("%Y-%m-%d %H:%M")


def _page_id(doc_id: str) -> str:
    return doc_id.removeprefix("confluence:")


def _fetch_bodies(client: ConfluenceClient, ids: list[str], report: ConfluenceSyncReport) -> dict[str, dict[str, Any]]:
    """Bodies of ``ids``, batched by CQL ``id in (...)``; a failing batch is retried page by page."""
    pages: dict[str, dict[str, Any]] = {}
    batch = max(1, client.cfg.fetch_batch)
    for s in range(0, len(ids), batch):
        part = ids[s : s + batch]
        try:
            cql = f"id in ({', '.join(part)})"
            for page in client.search(cql, expand=PAGE_EXPAND, limit=len(part)):
                pages[str(page.get("id"))] = page
        except ConfluenceError:
            for pid in part:
                try:
                    pages[pid] = client.get_page(pid)
                except ConfluenceError as exc:
                    if exc.status == 404:
                        continue  # deleted between listing and fetching: the next listing removes it
                    report.failed.append(pid)
                    report.findings.append(Finding(f"confluence:{pid}", "error", "fetch-failed", f"{exc}; skipped"))
    return pages


def _resolver(by_title: dict[str, str]):
    def resolve(space: str, title: str) -> str | None:
        return by_title.get(f"{space}/{title}")

    return resolve


def _body_of(doc: Document) -> str:
    """A synced page's Markdown without its breadcrumb heading (what an including page inlines)."""
    first, _, rest = doc.text.partition("\n")
    return rest.strip() if first.startswith("# ") else doc.text


def sync_confluence(
    index_dir: str | Path,
    cfg: Config,
    *,
    client: ConfluenceClient | None = None,
    embedder: Embedder | None = None,
    full: bool = False,
    progress: bool = False,
) -> ConfluenceSyncReport:
    """Bring the index's Confluence pages up to date; build a new snapshot only when something changed."""
    t0 = time.perf_counter()
    index_dir = Path(index_dir)
    check_index_source(index_dir, "confluence")
    ccfg = cfg.confluence
    started = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
    state = load_state(index_dir)
    scope = space_cql(ccfg)
    if state.pages and (state.url != ccfg.url.rstrip("/") or state.scope != scope):
        full = True  # another site or scope: the state says nothing reliable about it
    if ccfg.full_every > 0 and (state.syncs + 1) % ccfg.full_every == 0:
        full = True
    if not state.pages:
        full = True
    report = ConfluenceSyncReport(full=full)
    own_client = client is None
    client = client or ConfluenceClient(ccfg)
    stats0 = (client.stats.requests, client.stats.retries, client.stats.bodies)
    try:
        stored = load_documents(index_dir)
        if full:
            pages = {str(p.get("id")): p for p in client.search(scope, expand=PAGE_EXPAND)}
            listed = set(pages)
            to_fetch: set[str] = set()
        else:
            listed = {str(p.get("id")) for p in client.search(scope)}
            since = _cql_time(state.last_sync, ccfg.overlap_s) if state.last_sync else "1970-01-01 00:00"
            modified = client.search(f'{scope} and lastmodified >= "{since}"', expand=STUB_EXPAND)
            to_fetch = {
                str(p.get("id"))
                for p in modified
                if str(p.get("id")) not in state.pages
                or state.pages[str(p.get("id"))].version != (p.get("version") or {}).get("number")
            }
            to_fetch |= listed - set(state.pages)
            to_fetch |= set(state.retry) & listed
            pages = {}
        report.listed = len(listed)
        # pages that include a changed page must be re-rendered although their own version did not move
        changed_keys = {f"{state.pages[p].space}/{state.pages[p].title}" for p in to_fetch if p in state.pages}
        to_fetch |= {pid for pid, ps in state.pages.items() if pid in listed and changed_keys & set(ps.includes)}
        to_fetch &= listed
        pages.update(_fetch_bodies(client, sorted(to_fetch, key=_int_key), report))
        _apply(pages, listed, state, stored, cfg, report)
    finally:
        report.requests = client.stats.requests - stats0[0]
        report.retries = client.stats.retries - stats0[1]
        report.bodies = client.stats.bodies - stats0[2]
        if own_client:
            client.close()

    changed = bool(report.added or report.updated or report.removed)
    current_exists = (index_dir / "CURRENT").is_file()
    if changed or not current_exists:
        build = build_from_documents(
            list(stored.values()), index_dir, cfg, embedder=embedder, findings=report.findings, progress=progress
        )
        report.built = True
        report.build = {k: v for k, v in build.to_dict().items() if k not in ("findings", "excluded")}
    if changed or not current_exists or report.unchanged:
        save_documents(index_dir, stored.values())  # re-rendered pages may carry a new version or date
    state.url = ccfg.url.rstrip("/")
    state.scope = scope
    state.last_sync = started
    state.syncs += 1
    state.retry = sorted(set(report.failed))
    save_state(index_dir, state)
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def _indexed_fields(doc: Document) -> tuple:
    """What of a Document reaches its chunks; version/author/dates alone do not need a rebuild."""
    return (doc.text, doc.title, doc.path, doc.sources, doc.labels, doc.tier, doc.provenance)


def _int_key(pid: str) -> tuple[int, str]:
    return (int(pid), pid) if pid.isdigit() else (0, pid)


def _apply(
    pages: dict[str, dict[str, Any]],
    listed: set[str],
    state: SyncState,
    stored: dict[str, Document],
    cfg: Config,
    report: ConfluenceSyncReport,
) -> None:
    """Render fetched pages, update ``stored`` and ``state`` in place, fill the report."""
    for pid in sorted(set(state.pages) - listed, key=_int_key):
        del state.pages[pid]
        if stored.pop(f"confluence:{pid}", None) is not None:
            report.removed.append(pid)
    for doc_id in [d for d in stored if _page_id(d) not in state.pages and _page_id(d) not in pages]:
        stored.pop(doc_id)  # documents without a state entry (an interrupted earlier sync)
    # pass 1 renders without includes, so pass 2 can inline any page of this sync or of earlier ones
    by_title = {f"{d.meta.get('space', '')}/{d.title}": _body_of(d) for d in stored.values()}
    first: dict[str, tuple[Document | None, list[Finding], Any]] = {}
    for pid, page in pages.items():
        doc, findings, rendered = page_to_document(page, cfg)
        first[pid] = (doc, findings, rendered)
        if doc is not None:
            by_title[f"{doc.meta.get('space', '')}/{doc.title}"] = _body_of(doc)
    resolve = _resolver(by_title)
    for pid in sorted(pages, key=_int_key):
        doc, findings, rendered = first[pid]
        if rendered.includes:
            doc, findings, rendered = page_to_document(pages[pid], cfg, resolve=resolve)
        page = pages[pid]
        version = int((page.get("version") or {}).get("number") or 0)
        title = str(page.get("title") or "")
        space = str((page.get("space") or {}).get("key") or "")
        old = state.pages.get(pid)
        if doc is None:
            report.skipped += 1
            report.findings.extend(findings)
            state.pages[pid] = PageState(version, "", title, space, rendered.includes, indexed=False)
            if stored.pop(f"confluence:{pid}", None) is not None:
                report.removed.append(pid)
            continue
        digest = content_hash(doc.text)
        state.pages[pid] = PageState(version, digest, title, space, rendered.includes)
        if old is None or not old.indexed or doc.doc_id not in stored:
            report.added.append(pid)
        elif old.hash != digest or _indexed_fields(stored[doc.doc_id]) != _indexed_fields(doc):
            # new text, or same text with new metadata that chunks carry (title, labels, source)
            report.updated.append(pid)
        else:
            report.unchanged += 1
        stored[doc.doc_id] = doc
