"""Issue 30, findings 1, 4, 5 and 9: stored text is data wherever it is shown, every entry keeps the same limits
(the relayed ``hanrag search`` included), integers and config values stay in their ranges, and the HTTP edge has
deadlines, a connection cap, a strict Host parse, no absolute paths and a schema that says what the server does.

Real parts throughout: an index built from files, the CLI through typer, a uvicorn server on a loopback port
started with the configuration ``hanrag serve`` uses, raw sockets for the slow clients.
"""

from __future__ import annotations

import io
import json
import os
import socket
import threading
import time
import tracemalloc
from pathlib import Path

import httpx
import pytest
import uvicorn
from rich.console import Console
from typer.testing import CliRunner

import hanrag
from fixtures.hostile import DOCS
from fixtures.server import TEST_CONFIG, ThreadServer, build_test_index, free_port
from hanrag.cli import app
from hanrag.cli.demo import demo_corpus, render_corpus_summary
from hanrag.commands.search import relayed_search, render_hits
from hanrag.config import MAX_CONFIG_BYTES, ConfigError, from_dict, load_config
from hanrag.doctor import diagnose
from hanrag.records import Filters
from hanrag.server import create_app
from hanrag.server.discovery import search_fingerprint
from hanrag.server.edge import uvicorn_config

runner = CliRunner()
OSC8 = "\x1b]8;"  # the terminal escape that opens a hyperlink


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    built = build_test_index(tmp_path_factory.mktemp("edges"), DOCS)
    return {**built, "index": hanrag.open(built["index_dir"], built["config"])}


def cli(*args: str, env: dict[str, str] | None = None):
    return runner.invoke(app, list(args), env=env)


def assert_one_line_error(result, *words: str) -> None:
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    assert result.output.startswith("error:"), result.output
    line = " ".join(result.output.split("hint:")[0].split())
    for word in words:
        assert word in line, (word, result.output)


# ----------------------------------------------------------------------------- finding 1: stored text is data


def test_search_prints_markup_in_documents_and_file_names_as_text(built: dict, monkeypatch: pytest.MonkeyPatch
                                                                   ) -> None:
    # the console the search command renders on (hanrag search, as the CLI and the relay run it)
    monkeypatch.setattr("hanrag.commands.search.console", Console(width=400))  # wide: each cell on one line
    result = cli("search", str(built["index_dir"]), "zebracorn", "-c", str(built["config_path"]), "--explain")
    assert result.exit_code == 0, result.output  # was: MarkupError, exit 1
    assert "closes [/] a tag, [link=https://evil.example]click here[/link]" in result.output
    assert "\x1b" not in result.output
    assert "[link=https:__evil.example]x[_link].md" in result.output


def test_no_planted_links_or_escapes_on_a_colour_terminal(built: dict) -> None:
    res = built["index"].search_result("zebracorn", top_k=5, explain=True)
    assert {h.chunk.doc_id for h in res.hits} >= {"1. 자료/zebracorn.md", *[d for d in DOCS if "[link" in d]}
    buf = io.StringIO()
    render_hits(res.plan, res.hits, True, Console(file=buf, force_terminal=True, color_system="truecolor", width=900))
    out = buf.getvalue()
    assert OSC8 not in out and "\x1b]" not in out  # no hyperlink, from markup or from an escape in the text
    assert "click here[/link]" in out and "\ufffd]8;;https://evil.example\ufffd\\Esc link" in out


def test_relayed_search_renders_the_same_text_without_links(built: dict) -> None:
    cfg = built["config"]
    out = relayed_search([str(built["index_dir"]), "zebracorn", "--config", str(built["config_path"])],
                         str(built["root"]), {"FORCE_COLOR": "1", "TERM": "xterm-256color"},
                         {"tty": True, "width": 200, "height": 50}, built["index"], built["index_dir"].resolve(),
                         search_fingerprint(cfg))
    assert out is not None and "[/]" in out
    assert OSC8 not in out


def test_file_names_with_markup_in_the_corpus_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "x[").mkdir()  # the folder and the file name make the doc_id "x[/]y.md"
    (corpus / "x[" / "]y [link=https:__evil.example]z.md").write_text("# no source here\n\ntext\n", encoding="utf-8")
    (corpus / "ok.md").write_text("---\nsource: https://example.org/a\n---\n# A\n\ntext\n", encoding="utf-8")
    _, _, summary = demo_corpus(corpus, load_config(None, env=False))
    assert summary["excluded"], summary
    buf = io.StringIO()
    monkeypatch.setattr("hanrag.cli.demo.console", Console(file=buf, force_terminal=True, width=300))
    render_corpus_summary(summary)  # was: MarkupError on "[/]"
    assert "x[/]y [link=https:__evil.example]z.md" in buf.getvalue() and OSC8 not in buf.getvalue()


# ----------------------------------------------------------------------------- finding 4: the relay's limits


@pytest.fixture(scope="module")
def server(built: dict):
    cfg = load_config(built["config_path"], env=False)
    with ThreadServer(create_app(built["index_dir"], cfg, index=built["index"])) as srv:
        yield srv


def _relay(srv: ThreadServer, built: dict, *args: str, env: dict[str, str] | None = None,
           config: Path | None = None) -> httpx.Response:
    argv = [str(built["index_dir"]), *args, "--config", str(config or built["config_path"])]
    body = {"argv": argv, "cwd": str(built["root"]), "env": env or {}, "terminal": {"tty": False}}
    return httpx.post(srv.url + "/cli/search", json=body, timeout=120)


def test_the_relay_answers_a_plain_search(server: ThreadServer, built: dict) -> None:
    r = _relay(server, built, "zebracorn")
    assert r.status_code == 200 and "[/]" in r.json()["stdout"]


@pytest.mark.parametrize("args", [
    ("가" * 20_000,),
    ("zebracorn", "--source", "*a" * 15_000),
    ("zebracorn", "--top-k", "1000"),
    ("zebracorn", "--tier", "99999999999999999999"),
    ("zebracorn", "--tier", str(2**63)),
    ("zebracorn", "--label", "x" * 5000),
])
def test_the_relay_keeps_the_servers_limits(server: ThreadServer, built: dict, args: tuple[str, ...]) -> None:
    t0 = time.monotonic()
    r = _relay(server, built, *args)
    assert r.status_code == 409, (r.status_code, r.text[:300])  # the client runs it and reports the problem
    assert time.monotonic() - t0 < 5


def test_the_relay_refuses_deep_configs_and_variables(server: ThreadServer, built: dict, tmp_path: Path) -> None:
    deep_array = tmp_path / "deep-array.toml"
    deep_array.write_text("[search]\ndiversity_factors = " + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    deep_tables = tmp_path / "deep-tables.toml"
    deep_tables.write_text("[search]\nrerank = " + "{a = " * 20_000 + "1" + "}" * 20_000 + "\n", encoding="utf-8")
    for config in (deep_array, deep_tables):
        r = _relay(server, built, "zebracorn", config=config)
        assert r.status_code == 409, (config.name, r.status_code, r.text[:300])  # was: 500 (RecursionError)
    deep_env = {"HANRAG_SEARCH__DIVERSITY_FACTORS": "[" * 5000 + "]" * 5000}
    r = _relay(server, built, "zebracorn", env=deep_env)
    assert r.status_code == 409, (r.status_code, r.text[:300])


def test_the_relay_never_reads_a_big_config(built: dict, tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    with big.open("wb") as fh:
        fh.truncate(64 * 1024 * 1024)  # sparse: 64 MiB that cost no disk
    tracemalloc.start()
    try:
        out = relayed_search([str(built["index_dir"]), "zebracorn", "--config", str(big)], str(tmp_path), {}, {},
                             built["index"], built["index_dir"].resolve(), search_fingerprint(built["config"]))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out is None
    assert peak < 4 * 1024 * 1024, peak  # was: the whole file read into memory, twice
    with pytest.raises(ConfigError, match="larger than"):
        load_config(big)
    result = cli("search", str(built["index_dir"]), "zebracorn", "-c", str(big))
    assert_one_line_error(result, "big.toml", "larger than")


def test_a_fifo_config_is_refused_not_waited_on(built: dict, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    done: list[object] = []
    reader = threading.Thread(target=lambda: done.append(relayed_search(
        [str(built["index_dir"]), "zebracorn", "--config", str(fifo)], str(tmp_path), {}, {}, built["index"],
        built["index_dir"].resolve(), search_fingerprint(built["config"]))), daemon=True)
    reader.start()
    reader.join(10)
    assert done == [None]


@pytest.mark.parametrize(("args", "words"), [
    (("--top-k", "1000"), ("--top-k", "at most 100")),
    (("--source", "*a" * 15_000), ("--source", "glob")),
    (("--tier", "99999999999999999999"), ("--tier", "0-99")),
    (("--tier", "100"), ("--tier", "0-99")),
])
def test_the_cli_has_the_same_limits(built: dict, args: tuple[str, ...], words: tuple[str, ...]) -> None:
    result = cli("search", str(built["index_dir"]), "zebracorn", "-c", str(built["config_path"]), *args)
    assert_one_line_error(result, *words)


# ----------------------------------------------------------------------------- finding 5: integer ranges


@pytest.mark.parametrize("tier", [10**30, 2**63, -(2**63) - 1, 100, -1])
def test_tier_out_of_range_is_a_value_error_in_the_python_api(built: dict, tier: int) -> None:
    with pytest.raises(ValueError, match="tier must be in"):  # was: OverflowError
        built["index"].search("zebracorn", filters=Filters(tier=(tier,)))
    with pytest.raises(ValueError, match="top_k"):
        built["index"].search("zebracorn", top_k=1000)
    with pytest.raises(ValueError, match="glob"):
        built["index"].search("zebracorn", filters=Filters(source_glob="*a" * 1000))


@pytest.mark.parametrize("tier", [10**30, 2**63, -(2**63) - 1, 100])
def test_tier_out_of_range_is_422_over_http(server: ThreadServer, tier: int) -> None:
    r = httpx.post(server.url + "/search", json={"query": "zebracorn", "filters": {"tier": [tier]}}, timeout=60)
    assert r.status_code == 422 and "tier" in r.json()["error"], r.text  # was: 500


def test_tier_out_of_range_is_a_tool_error_over_mcp(built: dict) -> None:
    pytest.importorskip("mcp.server.mcpserver", reason="needs the mcp extra")
    import anyio
    from mcp.client import Client

    from hanrag.integrations.mcp import create_server

    server = create_server(built["index"], built["config"])

    async def call() -> None:
        async with Client(server) as client:
            result = await client.call_tool("search", {"query": "zebracorn", "filters": {"tier": [10**30]}})
            assert result.is_error and "tier" in result.content[0].text, result.content[0].text

    anyio.run(call)


@pytest.mark.parametrize(("section", "key", "value"), [
    ("chunking", "chunk_size", 2**63 - 1),
    ("chunking", "chunk_size", 10**26),
    ("corpus", "max_file_bytes", 10**26),
    ("corpus", "default_tier", 10**30),
    ("corpus", "tiers", {"docs": 2**63}),
    ("embedder", "threads", 100_000),
    ("embedder", "batch_size", 10**12),
    ("server", "max_body_bytes", 10**20),
    ("server", "read_timeout_s", 1e300),
    ("confluence", "overlap_s", 10**30),
    ("corpus", "source_pattern", "^(a+)+$"),
    ("corpus", "source_pattern", r"(\w+\s?)*$"),
])
def test_config_values_past_the_machine_are_one_line_errors(section: str, key: str, value: object) -> None:
    with pytest.raises(ConfigError) as err:
        from_dict({section: {key: value}}, "hanrag.toml")
    message = str(err.value)
    assert message.startswith("hanrag.toml: ") and f"{section}.{key}" in message and "\n" not in message, message
    assert len(message) < 400, message


def test_catastrophic_regex_and_huge_sizes_in_a_file_end_the_command_in_one_line(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("a" * 40 + "!\n", encoding="utf-8")
    for body, words in [
        ('[corpus]\nsource_pattern = "^(a+)+$"\n', ("corpus.source_pattern", "backtrack")),
        ("[chunking]\nchunk_size = 9223372036854775807\n", ("chunking.chunk_size",)),
        ("[corpus]\nmax_file_bytes = 100000000000000000000000000\n", ("corpus.max_file_bytes",)),
        ("[embedder]\nthreads = 100000\n", ("embedder.threads", "cores")),
        ("[search]\ndiversity_factors = " + "[" * 5000 + "]" * 5000 + "\n", ("nested deeper",)),
    ]:
        config = tmp_path / "hanrag.toml"
        config.write_text(body, encoding="utf-8")
        for command in (("lint", str(corpus)), ("doctor", str(tmp_path / "index"))):
            t0 = time.monotonic()
            result = cli(*command, "-c", str(config))
            assert time.monotonic() - t0 < 30
            assert_one_line_error(result, *words)


def test_deep_environment_list_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="HANRAG_SEARCH__DIVERSITY_FACTORS.*nested deeper"):
        load_config(None, environ={"HANRAG_SEARCH__DIVERSITY_FACTORS": "[" * 5000 + "]" * 5000})


def test_a_file_that_is_not_a_lexicon_is_one_line(built: dict, tmp_path: Path) -> None:
    binary = tmp_path / "model.bin"
    binary.write_bytes(bytes(range(256)) * 64)
    prose = tmp_path / "notes.txt"
    prose.write_text("this is a note, not a lexicon\n", encoding="utf-8")
    for lexicon, words in ((binary, "not a lexicon"), (prose, "no TAB")):
        config = tmp_path / "lex.toml"
        config.write_text(TEST_CONFIG + f'\n[lexicon]\npaths = ["{lexicon}"]\n', encoding="utf-8")
        assert_one_line_error(cli("search", str(built["index_dir"]), "zebracorn", "-c", str(config)), words)
        assert_one_line_error(cli("build", str(built["corpus"]), "--index", str(tmp_path / "ix"), "-q",
                                  "-c", str(config)), words)
        problems = diagnose(built["index_dir"], load_config(config, env=False))
        assert any(p.code == "lexicon-invalid" and words in p.message for p in problems), problems


def test_a_missing_rerank_model_is_one_line(built: dict, tmp_path: Path) -> None:
    config = tmp_path / "rerank.toml"
    config.write_text(TEST_CONFIG + '\n[search.rerank]\nmodel = "/nonexistent/cross-encoder"\n', encoding="utf-8")
    result = cli("search", str(built["index_dir"]), "zebracorn", "-c", str(config))
    assert_one_line_error(result)
    assert "search.rerank.model" in result.output or "cross-encoder" in result.output, result.output


# ----------------------------------------------------------------------------- finding 9: the HTTP edge


class EdgeServer(ThreadServer):
    """A uvicorn server in a thread with the configuration `hanrag serve` runs (:func:`uvicorn_config`)."""

    def __init__(self, app, cfg) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = uvicorn.Server(uvicorn_config(app, cfg, "127.0.0.1", self.port, "warning"))
        self.thread = threading.Thread(target=self.server.run, name=f"uvicorn-{self.port}", daemon=True)


@pytest.fixture(scope="module")
def edge(built: dict):
    cfg = load_config(built["config_path"], env=False)
    cfg.server.read_timeout_s = 1.5
    cfg.server.max_connections = 4
    with EdgeServer(create_app(built["index_dir"], cfg, index=built["index"]), cfg) as srv:
        yield srv


def _read_until_closed(sock: socket.socket, limit_s: float) -> tuple[bytes, float]:
    """What the server sends until it closes the connection, and when it closed (socket.timeout: it did not)."""
    t0 = time.monotonic()
    sock.settimeout(limit_s)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data, time.monotonic() - t0


def test_half_sent_headers_are_answered_408_and_closed(edge: EdgeServer) -> None:
    with socket.create_connection(("127.0.0.1", edge.port)) as sock:
        sock.sendall(b"POST /search HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
        data, took = _read_until_closed(sock, 10)  # was: held open until the client gave up
    assert data.startswith(b"HTTP/1.1 408") and took < 5, (data, took)


def test_an_idle_connection_is_closed(edge: EdgeServer) -> None:
    with socket.create_connection(("127.0.0.1", edge.port)) as sock:
        data, took = _read_until_closed(sock, 10)
    assert data == b"" and took < 5


def test_a_trickled_body_is_answered_408_and_closed(edge: EdgeServer) -> None:
    with socket.create_connection(("127.0.0.1", edge.port)) as sock:
        sock.sendall(b"POST /search HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"query\": ")
        data, took = _read_until_closed(sock, 10)
    assert data.startswith(b"HTTP/1.1 408") and b"read_timeout_s" in data and took < 5, (data, took)


def test_a_kept_alive_connection_gets_the_deadline_again(edge: EdgeServer) -> None:
    with socket.create_connection(("127.0.0.1", edge.port)) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
        sock.settimeout(10)
        first = b""
        while b"ready" not in first:
            first += sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 200")
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: loc")  # the second request's head, trickled
        data, took = _read_until_closed(sock, 10)
    assert data.startswith(b"HTTP/1.1 408") and took < 5, (data, took)


def test_connections_past_the_cap_are_refused(edge: EdgeServer) -> None:
    held = [socket.create_connection(("127.0.0.1", edge.port)) for _ in range(4)]
    try:
        time.sleep(0.3)  # accepted by the server before the next one
        with socket.create_connection(("127.0.0.1", edge.port)) as extra:
            data, took = _read_until_closed(extra, 10)
        assert data.startswith(b"HTTP/1.1 503") and b"max_connections" in data and took < 1, (data, took)
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.3)
    assert httpx.get(edge.url + "/health", timeout=10).status_code == 200


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(request)
        return _read_until_closed(sock, 10)[0]


@pytest.mark.parametrize("host", [b"localhost:80@evil.com", b"[::1]evil", b"localhost evil.com", b"127.0.0.1:80:80",
                                  b"[zz::1]", b"localhost:999999"])
def test_host_header_is_parsed_strictly(edge: EdgeServer, host: bytes) -> None:
    data = _raw(edge.port, b"GET /stats HTTP/1.1\r\nHost: " + host + b"\r\nConnection: close\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 421"), data[:200]  # was: 200 with the index's stats


def test_http10_without_host_is_refused_without_a_key(edge: EdgeServer) -> None:
    data = _raw(edge.port, b"GET /stats HTTP/1.0\r\n\r\n")
    assert data.startswith(b"HTTP/1.1 421") and b"Host" in data, data[:200]
    ok = _raw(edge.port, b"GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n")
    assert ok.startswith(b"HTTP/1.1 200"), ok[:200]


def test_stats_name_no_absolute_path(edge: EdgeServer, built: dict) -> None:
    r = httpx.get(edge.url + "/stats", timeout=30)
    assert r.status_code == 200
    data = r.json()
    assert "index_dir" not in data and data["chunks"] > 0

    def strings(value: object):
        if isinstance(value, dict):
            for k, v in value.items():
                yield str(k)
                yield from strings(v)
        elif isinstance(value, list):
            for v in value:
                yield from strings(v)
        elif isinstance(value, str):
            yield value

    assert not [s for s in strings(data) if s.startswith("/") or str(built["root"]) in s]


def test_the_schema_says_what_a_keyless_server_does(edge: EdgeServer) -> None:
    with httpx.Client(base_url=edge.url, timeout=60) as c:
        spec = c.get("/openapi.json").json()
        assert "securitySchemes" not in spec.get("components", {})
        for path in spec["paths"].values():
            for op in path.values():
                assert "security" not in op  # was: X-API-Key required on every route
                assert not any(p.get("name") == "X-API-Key" for p in op.get("parameters", []))
        assert spec["components"]["schemas"]["SearchIn"]["properties"]["top_k"]["type"] == "integer"
        r = c.post("/search", json={"query": "zebracorn", "top_k": 3.0, "filters": {"tier": [1.0]}})
        assert r.status_code == 200 and r.json()["top_k"] == 3, r.text  # 3.0 is an integer to JSON Schema
        assert c.post("/search", json={"query": "zebracorn", "top_k": 3.5}).status_code == 422
        assert c.post("/search", json={"query": "zebracorn", "top_k": True}).status_code == 422
        # the rebuild body is optional in the schema, and the server takes a POST without one (409: no corpus
        # root here) unless a browser page of another site sent it
        rebuild = spec["paths"]["/index/rebuild"]["post"]
        assert not rebuild["requestBody"].get("required", False)
        r = c.post("/index/rebuild")
        assert r.status_code == 409 and "corpus root" in r.json()["error"], r.text  # was: 415
        for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
            assert c.post("/index/rebuild", headers=headers).status_code == 415, headers
        assert c.post("/index/rebuild", headers={"Origin": f"http://localhost:{edge.port}"}).status_code == 409


def test_the_relay_client_reads_no_big_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hanrag.server.client import _api_key

    monkeypatch.delenv("HANRAG_SERVER__API_KEY", raising=False)
    monkeypatch.delenv("HANRAG_API_KEY", raising=False)
    big = tmp_path / "big.toml"
    big.write_text('[server]\napi_key = "k"\n' + "#" * MAX_CONFIG_BYTES, encoding="utf-8")
    assert _api_key(str(big)) == ""
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    assert _api_key(str(deep)) == ""  # was: RecursionError before the CLI could say what is wrong
    ok = tmp_path / "ok.toml"
    ok.write_text('[server]\napi_key = "k"\n', encoding="utf-8")
    assert _api_key(str(ok)) == "k"


# --- found by benchmarks/fuzz_report.py ------------------------------------------------------------------------


def test_a_lone_surrogate_beside_hangul_is_searched_not_a_crash(built: dict) -> None:
    # "\udcff" is how Python reads a byte of an argv that is not UTF-8; Kiwi's term finder got it raw and failed
    for query in ("\udcff롤백", "\ud800갑목 인월"):
        assert isinstance(built["index"].search(query, top_k=3), list)


def test_the_relay_refuses_output_json_cannot_carry(server: ThreadServer, built: dict) -> None:
    # the CLI echoes the query; a lone surrogate cannot go into the JSON answer: 409, the client runs it itself
    argv = [str(built["index_dir"]), "\udda9zebracorn", "--json", "--config", str(built["config_path"])]
    body = json.dumps({"argv": argv, "cwd": str(built["root"]), "env": {}, "terminal": {"tty": False}})  # "\udda9"
    r = httpx.post(server.url + "/cli/search", content=body, headers={"content-type": "application/json"},
                   timeout=120)
    assert r.status_code == 409, r.text


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="no /proc/self/mem here")
def test_a_config_that_cannot_be_read_is_one_line() -> None:
    with pytest.raises(ConfigError, match="cannot read it"):
        load_config(Path("/proc/self/mem"))
