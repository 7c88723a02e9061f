"""Issue 13, items 4, 5, 7, 10 and 11 (summary counts): a tampered index never answers, a malformed
CURRENT is one line, the key-less server refuses rebinding hosts and form posts, the API keeps to its
schema and the README."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import jsonschema
import pytest
from typer.testing import CliRunner

import hanrag
from fixtures.server import ThreadServer, build_test_index
from fixtures.tamper import copy_index, make_chunks, reverse_embeddings, rewrite_manifest
from hanrag.cli import app
from hanrag.config import Config, load_config
from hanrag.doctor import diagnose
from hanrag.index import store
from hanrag.index.snapshot import open_snapshot
from hanrag.pipeline import build_from_chunks, build_index
from hanrag.server import ServerError, check_bind, create_app

KEY = "hostile-test-key"
runner = CliRunner()


@pytest.fixture(scope="module")
def small_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    index = tmp_path_factory.mktemp("hostile") / "index"
    build_from_chunks(make_chunks(), index, Config(), progress=False)
    return index


def cli(*args: str):
    return runner.invoke(app, list(args))


def assert_one_line_error(result, *words: str) -> None:
    assert result.exit_code != 0
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    # the one error line (Rich wraps it at the test terminal's 80 columns), then the hint
    assert result.output.startswith("error:"), result.output
    line = " ".join(result.output.split("hint:")[0].split())
    for w in words:
        assert w in line.replace("/ ", "/"), (w, result.output)


# ----------------------------------------------------------------------------- item 4: integrity


def test_reversed_embeddings_with_empty_files_map_refused(small_index: Path, tmp_path: Path) -> None:
    index, snap = copy_index(small_index, tmp_path / "ix")
    reverse_embeddings(snap)
    rewrite_manifest(snap, lambda m: m.update(files={}))
    with pytest.raises(store.IndexLoadError, match="does not list"):
        open_snapshot(index)
    result = cli("search", str(index), "파드 재시작")
    assert_one_line_error(result, "manifest.json", "does not list")
    problems = diagnose(index, Config())
    assert any(p.code == "index-unreadable" and "does not list" in p.message for p in problems)
    assert cli("doctor", str(index)).exit_code == 1


def test_partial_files_map_and_unexpected_entries_refused(small_index: Path, tmp_path: Path) -> None:
    index, snap = copy_index(small_index, tmp_path / "ix")
    reverse_embeddings(snap)
    rewrite_manifest(snap, lambda m: m["files"].pop("embeddings.npy"))
    with pytest.raises(store.IndexLoadError, match="does not list embeddings.npy"):
        open_snapshot(index)
    index2, snap2 = copy_index(small_index, tmp_path / "ix2")
    rewrite_manifest(snap2, lambda m: m["files"].update({"../../etc/passwd": {"sha256": "0" * 64, "bytes": 1}}))
    with pytest.raises(store.IndexLoadError, match="unexpected"):
        open_snapshot(index2)


def test_manifest_edit_without_resigning_refused(small_index: Path, tmp_path: Path) -> None:
    index, snap = copy_index(small_index, tmp_path / "ix")
    path = snap / store.MANIFEST
    m = json.loads(path.read_text(encoding="utf-8"))
    m["embedder"]["identity"] = "something-else"
    path.write_text(json.dumps(m), encoding="utf-8")
    with pytest.raises(store.IndexLoadError, match="own checksum"):
        open_snapshot(index)
    # re-signed manifest, but CURRENT still names the published manifest's sha256
    m[store.MANIFEST_SUM] = store.manifest_digest(m)
    path.write_text(json.dumps(m), encoding="utf-8")
    with pytest.raises(store.IndexLoadError, match="CURRENT recorded"):
        open_snapshot(index)
    # a CURRENT with only the name would skip that check: refused (issue 30, finding 6)
    (index / store.POINTER).write_text(snap.name + "\n")
    with pytest.raises(store.IndexLoadError, match="without its 'manifest-sha256' line"):
        open_snapshot(index)


def test_old_format_and_reversed_rows_with_stale_checksums(small_index: Path, tmp_path: Path) -> None:
    index, snap = copy_index(small_index, tmp_path / "ix")
    reverse_embeddings(snap)  # rows reversed, manifest untouched
    with pytest.raises(store.IndexLoadError, match="checksum differs"):
        open_snapshot(index)
    index2, snap2 = copy_index(small_index, tmp_path / "ix2")
    rewrite_manifest(snap2, lambda m: m.update(format_version=1))
    with pytest.raises(store.IndexLoadError, match="rebuild the index"):
        open_snapshot(index2)


def test_doctor_reports_corrupt_old_snapshot_and_extra_files(tmp_path: Path) -> None:
    index = tmp_path / "ix"
    cfg = Config()
    build_from_chunks(make_chunks()[:3], index, cfg, progress=False)
    build_from_chunks(make_chunks(), index, cfg, progress=False)
    old, current = store.list_snapshots(index)
    reverse_embeddings(store.snapshots_dir(index) / old)
    (store.snapshots_dir(index) / current / "stray.bin").write_bytes(b"x")
    codes = {p.code: p for p in diagnose(index, cfg)}
    assert "checksum differs" in codes["old-snapshot-corrupt"].message
    assert "stray.bin" in codes["snapshot-extra-files"].message
    assert open_snapshot(index).name == current  # the published snapshot is fine


# ----------------------------------------------------------------------------- item 7: malformed CURRENT


@pytest.mark.parametrize("kind", ["invalid-utf8", "directory", "garbage", "traversal"])
def test_malformed_current_is_one_line(small_index: Path, tmp_path: Path, kind: str) -> None:
    index, _ = copy_index(small_index, tmp_path / "ix")
    pointer = index / store.POINTER
    pointer.unlink()
    if kind == "invalid-utf8":
        pointer.write_bytes(b"\xff\xfe\x80snap\n")
    elif kind == "directory":
        pointer.mkdir()
    elif kind == "garbage":
        pointer.write_bytes(b"\x00\x01 garbage; rm -rf /\n")
    else:
        pointer.write_text("../../../etc\n")
    with pytest.raises(store.IndexLoadError, match="CURRENT"):
        open_snapshot(index)
    assert_one_line_error(cli("search", str(index), "파드"), "CURRENT")
    result = cli("doctor", str(index))
    assert result.exit_code == 1 and "Traceback" not in result.output and "CURRENT" in result.output
    problems = diagnose(index, Config())
    assert problems[0].code == "index-unreadable" and "CURRENT" in problems[0].message
    assert "\n" not in problems[0].message


# ----------------------------------------------------------------------------- item 11: summary counts


def test_rebuild_summary_counts_after_deleting_2_and_editing_10(tmp_path: Path) -> None:
    corpus, index = tmp_path / "corpus", tmp_path / "index"
    corpus.mkdir()
    for i in range(14):
        (corpus / f"doc{i:02d}.md").write_text(
            f"---\nsource: https://example.org/{i}\n---\n# Note {i}\n\nThe rollback runbook number {i} says "
            f"to check dashboards {i} times.\n",
            encoding="utf-8",
        )
    cfg = Config()
    first = build_index(corpus, index, cfg, progress=False)
    assert first.added == first.chunks == 14
    for i in (0, 1):
        (corpus / f"doc{i:02d}.md").unlink()
    for i in range(2, 12):
        path = corpus / f"doc{i:02d}.md"
        path.write_text(path.read_text(encoding="utf-8").replace("dashboards", "latency graphs"), encoding="utf-8")
    second = build_index(corpus, index, cfg, progress=False)
    assert (second.added, second.changed, second.removed, second.reused) == (0, 10, 2, 2)
    lines = "\n".join(second.summary_lines())
    # the summary names the files, then the chunk counts with what "replaced" means
    assert "files: 10 changed, 2 removed, 2 unchanged" in lines
    assert "  removed: doc00.md, doc01.md" in lines and "  changed: doc02.md, doc03.md" in lines
    assert "chunks: 10 replaced, 0 added, 2 removed, 2 unchanged" in lines
    assert second.files is not None and second.files.changed == tuple(f"doc{i:02d}.md" for i in range(2, 12))


# ----------------------------------------------------------------------------- server fixtures


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    built = build_test_index(tmp_path_factory.mktemp("hostile-server"))
    return {**built, "index": hanrag.open(built["index_dir"], built["config"])}


@pytest.fixture(scope="module")
def open_server(built: dict):
    cfg = load_config(built["config_path"], env=False)
    cfg.server.allowed_hosts = ["docs.internal"]
    with ThreadServer(create_app(built["index_dir"], cfg, index=built["index"])) as srv:
        yield srv


@pytest.fixture(scope="module")
def key_server(built: dict):
    cfg = load_config(built["config_path"], env=False)
    cfg.server.api_key = KEY
    with ThreadServer(create_app(built["index_dir"], cfg, index=built["index"])) as srv:
        yield srv


# ----------------------------------------------------------------------------- item 5: rebinding, forms


def test_foreign_host_header_refused_without_key(open_server: ThreadServer) -> None:
    port = open_server.port
    with httpx.Client(base_url=open_server.url, timeout=60) as c:
        for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example", "attacker.localhost.com"):
            for method, path, body in (
                ("post", "/search", {"query": "롤백"}),
                ("get", "/stats", None),
                ("get", "/chunks/x", None),
                ("get", "/documents/x", None),
                ("get", "/", None),
            ):
                r = c.request(method, path, json=body, headers={"Host": host})
                assert r.status_code == 421, (host, path, r.status_code)
                assert "Host" in r.json()["error"]
        for host in (
            f"127.0.0.1:{port}",
            f"localhost:{port}",
            "localhost",
            f"[::1]:{port}",
            "LOCALHOST.",
            f"docs.internal:{port}",
        ):
            r = c.post("/search", json={"query": "롤백"}, headers={"Host": host})
            assert r.status_code == 200, (host, r.text)


def test_form_posts_refused_without_key(open_server: ThreadServer, built: dict, tmp_path: Path) -> None:
    with httpx.Client(base_url=open_server.url, timeout=60) as c:
        forms = [
            (b"source=files", "application/x-www-form-urlencoded"),
            (
                b'--x\r\nContent-Disposition: form-data; name="source"\r\n\r\nfiles\r\n--x--\r\n',
                "multipart/form-data; boundary=x",
            ),
            (b'{"source": "files"}', "text/plain"),
        ]
        for body, ctype in forms:
            for path in ("/index/rebuild", "/search"):
                r = c.post(path, content=body, headers={"content-type": ctype})
                assert r.status_code == 415 and "application/json" in r.json()["error"], (path, ctype)
        # a body-less "simple" cross-site fetch: a browser sends Origin (or Sec-Fetch-Site) with it
        for headers in ({"Origin": "http://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
            assert c.post("/index/rebuild", headers=headers).status_code == 415
    # with a corpus root configured, no job was started by any of them
    cfg = load_config(built["config_path"], env=False)
    cfg.server.corpus_root = str(built["corpus"])
    index_dir = tmp_path / "index"
    shutil.copytree(built["index_dir"], index_dir)
    with ThreadServer(create_app(index_dir, cfg)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        r = c.post(
            "/index/rebuild", content=b"source=files", headers={"content-type": "application/x-www-form-urlencoded"}
        )
        assert r.status_code == 415
        r = c.post("/index/rebuild", headers={"Origin": "http://evil.example"})
        assert r.status_code == 415
        assert c.get("/stats").json()["rebuild_running"] is None


def test_with_key_the_key_is_the_token(key_server: ThreadServer) -> None:
    with httpx.Client(base_url=key_server.url, timeout=60) as c:
        # the Host allow-list applies only without a key; the key itself is what a rebinding page lacks
        r = c.post("/search", json={"query": "롤백"}, headers={"X-API-Key": KEY, "Host": "search.example"})
        assert r.status_code == 200
        r = c.post("/index/rebuild", content=b"source=files", headers={"content-type": "text/plain"})
        assert r.status_code == 401


# ----------------------------------------------------------------------------- item 10: API vs README


def test_public_paths_with_key_are_exactly_the_documented_ones(key_server: ThreadServer) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "internals.md").read_text(encoding="utf-8")
    assert "`/health`, the inspector page `/` and its assets `/static/*`" in " ".join(doc.split())
    with httpx.Client(base_url=key_server.url, timeout=60) as c:
        for path in ("/health", "/", "/static/app.js", "/static/style.css"):
            assert c.get(path).status_code == 200, path
        assert c.get("/openapi.json").status_code == 401
        spec = c.get("/openapi.json", headers={"X-API-Key": KEY}).json()
        assert spec["info"]["title"] == "hanrag"
        for path in spec["paths"]:
            if path == "/health":
                continue
            for method in spec["paths"][path]:
                r = c.request(
                    method,
                    path.replace("{chunk_id}", "x").replace("{doc_id}", "x").replace("{job_id}", "x"),
                    json={} if method == "post" else None,
                )
                assert r.status_code == 401, (method, path)


def test_job_does_not_return_absolute_index_path(built: dict, tmp_path: Path) -> None:
    import time

    cfg = load_config(built["config_path"], env=False)
    corpus = tmp_path / "corpus"
    shutil.copytree(built["corpus"], corpus)
    cfg.server.corpus_root = str(corpus)
    index_dir = tmp_path / "index"
    shutil.copytree(built["index_dir"], index_dir)
    with ThreadServer(create_app(index_dir, cfg)) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        job = c.post("/index/rebuild", json={}).json()
        deadline = time.monotonic() + 300
        while job["status"] in ("queued", "running"):
            assert time.monotonic() < deadline
            time.sleep(0.2)
            r = c.get(f"/jobs/{job['id']}")
            job = r.json()
        assert job["status"] == "succeeded", job
        assert str(index_dir.resolve()) not in r.text and str(tmp_path) not in r.text
        assert "index_dir" not in job["result"]


@pytest.mark.parametrize(
    "body",
    [
        {"query": "롤백", "top_k": "5"},
        {"query": "롤백", "top_k": True},
        {"query": "롤백", "top_k": 5.5},  # 5.0 is an integer to JSON Schema, and accepted (test_edges.py)
        {"query": "롤백", "explain": 0},
        {"query": "롤백", "explain": "true"},
        {"query": "롤백", "filters": {"tier": ["0"]}},
    ],
)
def test_strict_request_types(open_server: ThreadServer, body: dict) -> None:
    with httpx.Client(base_url=open_server.url, timeout=60) as c:
        r = c.post("/search", json=body)
        assert r.status_code == 422, (body, r.text)
        assert r.json()["error"]


def test_rebuild_schema_matches_validation(open_server: ThreadServer) -> None:
    with httpx.Client(base_url=open_server.url, timeout=60) as c:
        spec = c.get("/openapi.json").json()
        ref = spec["paths"]["/index/rebuild"]["post"]["requestBody"]["content"]["application/json"]["schema"]
        schema = {**ref, "components": spec["components"]}
        validator = jsonschema.Draft202012Validator(schema)
        for body in ({}, {"source": "files"}, {"source": "confluence", "full": True}, {"full": False}):
            validator.validate(body)
        for body in ({"full": True}, {"source": "files", "full": True}, {"full": "yes"}, {"full": 1}):
            assert not validator.is_valid(body), body
            r = c.post("/index/rebuild", json=body)
            assert r.status_code == 422, (body, r.text)


@pytest.mark.parametrize("key", ["   ", "\t\n", ""])
def test_blank_api_key_refused_for_public_bind(built: dict, key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HANRAG_API_KEY", raising=False)
    cfg = load_config(built["config_path"], env=False)
    cfg.server.api_key = key
    with pytest.raises(ServerError, match="non-loopback"):
        check_bind("0.0.0.0", cfg)
    cfg.server.api_key = ""
    monkeypatch.setenv("HANRAG_API_KEY", key)
    with pytest.raises(ServerError, match="non-loopback"):
        check_bind("0.0.0.0", cfg)
