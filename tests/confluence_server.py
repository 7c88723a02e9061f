"""A small Confluence-compatible server for tests and benchmarks (real HTTP on loopback).

Serves the v1 endpoints hanrag uses, under a ``/wiki`` context path like Confluence Cloud:

* ``GET /wiki/rest/api/content/search?cql=&limit=&start=&expand=`` — CQL subset:
  ``type = page``, ``space in (...)``, ``lastmodified >= "yyyy-MM-dd HH:mm"`` (UTC),
  ``id in (...)``; paginated (``limit`` capped at :attr:`FakeConfluence.max_limit`) with a
  ``_links.next`` link relative to the context path;
* ``GET /wiki/rest/api/content/{id}?expand=``.

Only the expanded fields are returned, bodies in storage format. Basic auth is checked.
It counts requests and served bodies, can answer the next N requests with 429 +
``Retry-After``, and can fail given pages with 500 forever.
"""

from __future__ import annotations

import base64
import datetime as _dt
import re
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

USER = "bot@example.com"
TOKEN = "s3cret-token-do-not-log"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class FakePage:
    id: str
    title: str
    space: str
    body: str
    version: int = 1
    when: str = field(default_factory=_now)
    author: str = "김철수"
    labels: list[str] = field(default_factory=list)
    parent: str | None = None
    attachments: list[str] = field(default_factory=list)
    created: str = field(default_factory=_now)


@dataclass
class FakeConfluence:
    pages: dict[str, FakePage] = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)
    max_limit: int = 25
    fail_429: int = 0  # the next N requests get 429
    retry_after: str = "1"
    always_fail: set[str] = field(default_factory=set)  # page ids whose bodies always get 500
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self, other: FakeConfluence) -> None:
        """Take another site's pages; forget counts and failure settings (tests share one server)."""
        with self.lock:
            self.pages = other.pages
            self.counts.clear()
            self.fail_429 = 0
            self.always_fail = set()

    def add(self, page: FakePage) -> FakePage:
        self.pages[page.id] = page
        return page

    def bump(self, page_id: str, body: str | None = None, title: str | None = None) -> None:
        """A new version of a page (edited now)."""
        page = self.pages[page_id]
        if body is not None:
            page.body = body
        if title is not None:
            page.title = title
        page.version += 1
        page.when = _now()

    def delete(self, page_id: str) -> None:
        del self.pages[page_id]

    # --- rendering a page as the API does ------------------------------------------------------

    def page_json(self, page: FakePage, expand: set[str], base: str) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": page.id,
            "type": "page",
            "status": "current",
            "title": page.title,
            "_links": {"webui": f"/spaces/{page.space}/pages/{page.id}", "self": f"{base}/rest/api/content/{page.id}"},
            "_expandable": {},
        }
        if "space" in expand:
            data["space"] = {"key": page.space, "name": f"{page.space} space", "type": "global"}
        if "version" in expand:
            data["version"] = {
                "number": page.version,
                "when": page.when,
                "by": {"type": "known", "displayName": page.author, "accountId": "acc-1"},
            }
        if "history" in expand:
            data["history"] = {"createdDate": page.created, "latest": True}
        if "ancestors" in expand:
            chain = []
            parent = page.parent
            while parent and parent in self.pages:
                chain.append({"id": parent, "type": "page", "title": self.pages[parent].title})
                parent = self.pages[parent].parent
            data["ancestors"] = list(reversed(chain))
        if "metadata.labels" in expand:
            results = [{"prefix": "global", "name": n, "id": str(i)} for i, n in enumerate(page.labels)]
            data["metadata"] = {"labels": {"results": results, "size": len(results)}}
        if "body.storage" in expand:
            data["body"] = {"storage": {"value": page.body, "representation": "storage"}}
        if "children.attachment" in expand:
            results = [{"id": f"att{i}", "type": "attachment", "title": t} for i, t in enumerate(page.attachments)]
            data["children"] = {"attachment": {"results": results, "size": len(results)}}
        return data

    def matches(self, page: FakePage, cql: str) -> bool:
        for clause in re.split(r"\s+and\s+", cql, flags=re.I):
            clause = clause.strip().strip("()").strip()
            if m := re.fullmatch(r"type\s*=\s*\"?(\w+)\"?", clause):
                if m.group(1) != "page":
                    return False
            elif m := re.fullmatch(r"space\s+in\s+\(?(.*?)\)?", clause, flags=re.I):
                spaces = {s.strip().strip('"') for s in m.group(1).split(",")}
                if page.space not in spaces:
                    return False
            elif m := re.fullmatch(r"space\s*=\s*\"?(\w+)\"?", clause):
                if page.space != m.group(1):
                    return False
            elif m := re.fullmatch(r"lastmodified\s*>=\s*\"([^\"]+)\"", clause, flags=re.I):
                since = _dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=_dt.UTC)
                when = _dt.datetime.fromisoformat(page.when.replace("Z", "+00:00"))
                if when < since:
                    return False
            elif m := re.fullmatch(r"id\s+in\s+\(?(.*?)\)?", clause, flags=re.I):
                if page.id not in {s.strip().strip('"') for s in m.group(1).split(",")}:
                    return False
            else:
                raise ValueError(f"unsupported CQL clause: {clause!r}")
        return True


def create_app(store: FakeConfluence) -> FastAPI:
    app = FastAPI()
    expected = "Basic " + base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()

    def guard(request: Request) -> JSONResponse | None:
        with store.lock:
            store.counts["requests"] += 1
            if request.headers.get("authorization") != expected:
                store.counts["unauthorized"] += 1
                return JSONResponse({"message": "unauthorized"}, status_code=401)
            if store.fail_429 > 0:
                store.fail_429 -= 1
                store.counts["429"] += 1
                return JSONResponse({"message": "rate limited"}, 429, headers={"Retry-After": store.retry_after})
        return None

    @app.get("/wiki/rest/api/content/search")
    def search(request: Request, cql: str, limit: int = 25, start: int = 0, expand: str = "") -> JSONResponse:
        if (refused := guard(request)) is not None:
            return refused
        wanted = {e for e in expand.split(",") if e}
        try:
            hits = sorted((p for p in store.pages.values() if store.matches(p, cql)), key=lambda p: int(p.id))
        except ValueError as exc:
            return JSONResponse({"message": str(exc)}, status_code=400)
        limit = max(1, min(limit, store.max_limit))
        part = hits[start : start + limit]
        if "body.storage" in wanted and any(p.id in store.always_fail for p in part):
            store.counts["500"] += 1
            return JSONResponse({"message": "internal error"}, status_code=500)
        base = str(request.base_url).rstrip("/") + "/wiki"
        results = [store.page_json(p, wanted, base) for p in part]
        with store.lock:
            store.counts["search"] += 1
            if "body.storage" in wanted:
                store.counts["bodies"] += len(results)
        links: dict[str, str] = {"base": base, "context": "/wiki"}
        if start + limit < len(hits):
            query = {"cql": cql, "limit": limit, "start": start + limit}
            if expand:
                query["expand"] = expand
            links["next"] = "/rest/api/content/search?" + urlencode(query)
        return JSONResponse({"results": results, "start": start, "limit": limit, "size": len(results), "_links": links})

    @app.get("/wiki/rest/api/content/{page_id}")
    def get_page(request: Request, page_id: str, expand: str = "") -> JSONResponse:
        if (refused := guard(request)) is not None:
            return refused
        wanted = {e for e in expand.split(",") if e}
        if page_id in store.always_fail:
            store.counts["500"] += 1
            return JSONResponse({"message": "internal error"}, status_code=500)
        page = store.pages.get(page_id)
        if page is None:
            return JSONResponse({"message": "not found"}, status_code=404)
        with store.lock:
            store.counts["get"] += 1
            if "body.storage" in wanted:
                store.counts["bodies"] += 1
        return JSONResponse(store.page_json(page, wanted, str(request.base_url).rstrip("/") + "/wiki"))

    return app


class ServerThread:
    """uvicorn serving an app on a free loopback port in a daemon thread."""

    def __init__(self, app: FastAPI) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
        self.server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self._sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/wiki"

    def __enter__(self) -> ServerThread:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("confluence test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()


# --- realistic content ---------------------------------------------------------------------

DEPLOY_GUIDE = """<h1>개요</h1>
<p>이 문서는 <strong>프로덕션 배포</strong> 절차를 설명합니다. 모든 배포는 승인 후 진행합니다.</p>
<ac:structured-macro ac:name="info" ac:schema-version="1"><ac:parameter ac:name="title">주의</ac:parameter>
<ac:rich-text-body><p>금요일 오후에는 배포하지 않습니다.</p></ac:rich-text-body></ac:structured-macro>
<h2>롤링 업데이트</h2>
<p>쿠버네티스 Deployment의 <code>maxSurge</code>와 <code>maxUnavailable</code>을 설정합니다.</p>
<ac:structured-macro ac:name="code" ac:schema-version="1"><ac:parameter ac:name="language">bash</ac:parameter>
<ac:plain-text-body><![CDATA[kubectl rollout status deployment/api -n prod
# 문제가 있으면 되돌린다
kubectl rollout undo deployment/api -n prod]]></ac:plain-text-body></ac:structured-macro>
<h2>설정 값</h2>
<table><tbody><tr><th>필드</th><th>기본값</th><th>설명</th></tr>
<tr><td>maxSurge</td><td>25%</td><td>추가로 생성할 파드 수</td></tr>
<tr><td>maxUnavailable</td><td>25%</td><td>동시에 내려갈 수 있는 파드 수</td></tr></tbody></table>
<p>관련 문서: <ac:link><ri:page ri:content-title="API 오류 코드" /></ac:link>, 첨부
<ac:link><ri:attachment ri:filename="rollout.png" /></ac:link></p>"""

ONBOARDING = """<h2>First week</h2>
<p>Welcome to the platform team. Read the <a href="https://example.com/handbook">handbook</a> first.</p>
<ac:task-list><ac:task><ac:task-id>1</ac:task-id><ac:task-status>complete</ac:task-status>
<ac:task-body>Get a laptop</ac:task-body></ac:task><ac:task><ac:task-id>2</ac:task-id>
<ac:task-status>incomplete</ac:task-status><ac:task-body>Request VPN access</ac:task-body></ac:task></ac:task-list>
<ac:structured-macro ac:name="note"><ac:rich-text-body><p>Never share your VPN token.</p></ac:rich-text-body>
</ac:structured-macro>
<h2>Tools</h2>
<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">python</ac:parameter>
<ac:parameter ac:name="title">check.py</ac:parameter><ac:plain-text-body><![CDATA[def check(host: str) -> bool:
    return ping(host) < 100  # ms]]></ac:plain-text-body></ac:structured-macro>
<ac:structured-macro ac:name="toc" />"""

ERROR_CODES = """<h2>HTTP 오류 코드</h2>
<table><tbody><tr><th>코드</th><th>의미</th><th>조치</th></tr>
<tr><td>E1001</td><td>인증 토큰 만료</td><td>토큰을 재발급한다</td></tr>
<tr><td>E1002</td><td>요청 한도 초과 (429)</td><td>Retry-After 만큼 기다린다</td></tr>
<tr><td>E2001</td><td>잘못된 파라미터 | 형식</td><td>요청 본문을 확인한다</td></tr></tbody></table>"""

RUNBOOK = """<h2>장애 대응</h2><p>오류 코드는 아래 표를 따른다.</p>
<ac:structured-macro ac:name="include"><ac:parameter ac:name=""><ac:link><ri:page ri:content-title="API 오류 코드" />
</ac:link></ac:parameter></ac:structured-macro>
<ac:structured-macro ac:name="warning"><ac:parameter ac:name="title">Escalation</ac:parameter>
<ac:rich-text-body><p>Page the on-call engineer after 15 minutes.</p></ac:rich-text-body></ac:structured-macro>"""

TEMPLATE = """<h2>Goals</h2><p><ac:placeholder>List the goals of this meeting</ac:placeholder></p>
<h2>Discussion items</h2><table><tbody><tr><th>Time</th><th>Item</th><th>Who</th></tr>
<tr><td><br /></td><td><br /></td><td><br /></td></tr></tbody></table>
<h2>Action items</h2><ac:task-list><ac:task><ac:task-id>1</ac:task-id><ac:task-status>incomplete</ac:task-status>
<ac:task-body><ac:placeholder>Type your task here</ac:placeholder></ac:task-body></ac:task></ac:task-list>"""


def bulk_body(i: int) -> str:
    """A realistic generated page (Korean + English, heading, table, code)."""
    return (
        f"<h2>서비스 {i} 개요</h2><p>서비스 {i}는 주문 처리 파이프라인의 {i % 7}단계를 담당합니다. "
        f"Service {i} owns stage {i % 7} of the order pipeline and publishes events to topic orders-{i % 11}.</p>"
        f"<h2>설정</h2><table><tbody><tr><th>키</th><th>값</th></tr><tr><td>replicas</td><td>{1 + i % 5}</td></tr>"
        f"<tr><td>timeout_ms</td><td>{100 * (1 + i % 9)}</td></tr></tbody></table>"
        '<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">yaml</ac:parameter>'
        f"<ac:plain-text-body><![CDATA[service: svc-{i}\nreplicas: {1 + i % 5}]]></ac:plain-text-body>"
        "</ac:structured-macro>"
    )


def make_store(bulk: int = 0, space: str = "DEV") -> FakeConfluence:
    """The realistic test site: 5 content pages, an empty page, a template page, ``bulk`` generated pages."""
    store = FakeConfluence()
    store.add(FakePage("100", "Engineering", space, "<h2>Engineering home</h2><p>Start here for all team docs.</p>"))
    store.add(
        FakePage("101", "배포 가이드", space, DEPLOY_GUIDE, labels=["deploy", "k8s"], parent="100",
                 attachments=["rollout.png", "checklist.pdf"])
    )
    store.add(FakePage("102", "Onboarding", space, ONBOARDING, author="Jane Doe", labels=["onboarding"], parent="100"))
    store.add(FakePage("103", "API 오류 코드", space, ERROR_CODES, parent="101"))
    store.add(FakePage("104", "Runbook", space, RUNBOOK, parent="100"))
    store.add(FakePage("105", "Empty page", space, "<p><br /></p>"))
    store.add(FakePage("106", "2024-05-01 Meeting notes", space, TEMPLATE))
    store.add(FakePage("900", "Other space page", "HR", "<p>Vacation policy: 25 days.</p>"))
    for i in range(bulk):
        store.add(FakePage(str(1000 + i), f"서비스 {i}", space, bulk_body(i), parent="100"))
    return store
