"""The MCP server through the ``mcp`` SDK's own client: ``hanrag mcp INDEX`` spawned over stdio (and
streamable HTTP), tools listed and called, hits compared with ``hanrag search --json``, hot reload."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest

pytest.importorskip("mcp.server.mcpserver", reason="needs the mcp extra: pip install 'hanrag[mcp]'")

from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

import hanrag
from fixtures.server import NEW_DOC, build_test_index, free_port
from hanrag.integrations.mcp import MCP_PATH, create_server, http_app

HANRAG = str(Path(sys.executable).with_name("hanrag"))  # the console script of this environment
TOOLS = {"search", "get_chunk", "get_document", "stats"}


def _cli_search_ids(built: dict, query: str, *args: str) -> list[str]:
    out = subprocess.run([HANRAG, "search", str(built["index_dir"]), query, "--json", "--no-server", "-c",
                          str(built["config_path"]),
                          *args], capture_output=True, text=True, timeout=300, check=True)
    return [hit["chunk"]["chunk_id"] for hit in json.loads(out.stdout)["hits"]]


def _data(result) -> dict:
    assert not result.is_error, result.content[0].text
    return result.structured_content


@pytest.mark.slow
def test_stdio_session_lists_tools_searches_and_reloads(tmp_path: Path) -> None:
    built = build_test_index(tmp_path)  # its own index: the test rebuilds it
    expected = _cli_search_ids(built, "갑목 용신", "--lang", "ko", "-k", "5")
    params = StdioServerParameters(command=HANRAG, args=["mcp", str(built["index_dir"]), "--config",
                                                         str(built["config_path"])], env=dict(os.environ))

    async def session() -> None:
        async with Client(params) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == TOOLS
            assert all(len(t.description) > 80 for t in tools.values())  # written for a model to choose by
            assert tools["search"].input_schema["properties"]["top_k"]["maximum"] == 100

            found = _data(await client.call_tool(
                "search", {"query": "갑목 용신", "top_k": 5, "filters": {"lang": ["ko"]}}))
            assert [h["chunk_id"] for h in found["hits"]] == expected and expected
            first = found["hits"][0]
            assert first["citation"].startswith("[1] 갑목 인월 용신") and "https://example.org/saju/gapmok" in \
                first["citation"]
            assert first["text"] and {h["lang"] for h in found["hits"]} == {"ko"}

            chunk = _data(await client.call_tool("get_chunk", {"chunk_id": first["chunk_id"]}))
            assert chunk["text"] == first["text"] and chunk["citation"]
            doc = _data(await client.call_tool("get_document", {"doc_id": first["doc_id"]}))
            assert first["chunk_id"] in [c["chunk_id"] for c in doc["chunks"]]
            stats = _data(await client.call_tool("stats", {}))
            assert stats["documents"] == 4 and str(tmp_path) not in json.dumps(stats, ensure_ascii=False)

            bad = await client.call_tool("get_chunk", {"chunk_id": "no-such-chunk"})
            assert bad.is_error and "no chunk 'no-such-chunk'" in bad.content[0].text

            # a rebuild publishes a new snapshot: the running server answers from it, no restart
            before = _data(await client.call_tool("search", {"query": "zebracorn quarantine", "top_k": 3}))
            assert NEW_DOC[0] not in [h["doc_id"] for h in before["hits"]]
            new = built["corpus"] / NEW_DOC[0]
            new.write_text(NEW_DOC[1], encoding="utf-8")
            await anyio.to_thread.run_sync(
                lambda: hanrag.build(built["corpus"], built["index_dir"], built["config"], progress=False))
            await anyio.sleep(1.1)  # the server checks the CURRENT pointer at most once a second
            after = _data(await client.call_tool("search", {"query": "zebracorn quarantine", "top_k": 3}))
            assert after["hits"][0]["doc_id"] == NEW_DOC[0]

    anyio.run(session)


def test_limits_are_the_http_servers(built, index) -> None:
    cfg = built["config"]
    server = create_server(index, cfg)

    async def calls() -> None:
        async with Client(server) as client:
            too_long = "가" * (cfg.server.max_query_chars + 1)
            for args, message in [
                ({"query": too_long}, "query"),
                ({"query": "   "}, "query is blank"),
                ({"query": "롤백", "top_k": 0}, "top_k"),
                ({"query": "롤백", "top_k": cfg.server.max_top_k + 1}, "top_k"),
                ({"query": "롤백", "mode": "fuzzy"}, "mode"),
                ({"query": "롤백", "filters": {"lang": ["fr"]}}, "lang"),
                ({"query": "롤백", "filters": {"colour": "red"}}, "colour"),
            ]:
                result = await client.call_tool("search", args)
                assert result.is_error and message in result.content[0].text, (args, result.content[0].text)
                # one line naming the argument: not the SDK's multi-line pydantic report with its URL
                text = result.content[0].text
                assert "\n" not in text and "http" not in text, (args, text)
            ok = _data(await client.call_tool("search", {"query": "롤백", "top_k": 2, "mode": "bm25",
                                                         "filters": {"labels": ["k8s"]}}))
            assert ok["hits"] and all("k8s" in h["labels"] for h in ok["hits"])

    anyio.run(calls)


def test_http_access_rules(built, index) -> None:
    """The HTTP server's rules around the MCP endpoint: key-less = loopback Host names and JSON only;
    with a key, every request needs X-API-Key."""
    cfg = built["config"]

    async def requests() -> None:
        open_app = http_app(create_server(index, cfg), cfg, 8123)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=open_app), base_url="http://evil.example") as c:
            assert (await c.post(MCP_PATH, json={})).status_code == 421
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=open_app), base_url="http://127.0.0.1") as c:
            assert (await c.post(MCP_PATH, content="x=1", headers={"content-type": "text/plain"})).status_code == 415
        keyed = cfg.__class__(**{**cfg.__dict__})
        keyed.server = cfg.server.__class__(**{**cfg.server.__dict__, "api_key": "s3cret"})
        key_app = http_app(create_server(index, keyed), keyed, 8123)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=key_app), base_url="http://127.0.0.1") as c:
            assert (await c.post(MCP_PATH, json={})).status_code == 401
            assert (await c.post(MCP_PATH, json={}, headers={"X-API-Key": "wrong"})).status_code == 401

    anyio.run(requests)


@pytest.mark.slow
def test_streamable_http_session_with_key(built) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    env = {**os.environ, "HANRAG_API_KEY": "s3cret"}
    proc = subprocess.Popen([HANRAG, "mcp", str(built["index_dir"]), "-c", str(built["config_path"]), "--http",
                             "--port", str(port)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}{MCP_PATH}"
    try:
        deadline = time.monotonic() + 120
        while True:  # up once the port answers (the key-less request is refused, which proves it listens)
            try:
                if httpx.post(url, json={}, timeout=2).status_code == 401:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "hanrag mcp --http did not start"
            time.sleep(0.3)

        async def session() -> list[str]:
            # the SDK's own transport timeouts (a response stream may stay open), plus the key header
            timeout = httpx2.Timeout(30, read=120)
            async with httpx2.AsyncClient(headers={"X-API-Key": "s3cret"}, timeout=timeout) as http:
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                    found = _data(await client.call_tool("search", {"query": "롤백", "top_k": 3}))
                    return [h["chunk_id"] for h in found["hits"]]

        assert anyio.run(session) == _cli_search_ids(built, "롤백", "-k", "3")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
