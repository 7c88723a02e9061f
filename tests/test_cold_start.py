"""Cold start: a search loads only what it needs, with the same tokens; the CLI uses a running server.

Each "cold" check runs in a fresh interpreter (``sys.modules`` is the evidence of what was loaded),
against real indexes built here with the bundled embedder, and the server tests start a real
``hanrag serve`` subprocess.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import hanrag
from fixtures.server import TEST_CONFIG, ThreadServer, free_port, write_corpus
from hanrag.config import load_config
from hanrag.server import create_app
from hanrag.server.discovery import SERVE_FILE, read_serve_file

HEAVY = ("kiwipiepy", "jieba", "torch", "transformers", "sentence_transformers", "bm25s", "numba", "scipy",
         "fastapi", "pymilvus", "opencc", "hanja")

EN_CORPUS = {
    "deploy.md": "Source: https://example.org/deploy\n\n# Deployment\n\n## Rolling update\n\nA rolling update "
    "replaces pods one at a time and stops when a readiness probe fails.\n",
    "cache.md": "Source: https://example.org/cache\n\n# Caching\n\n## Eviction\n\nThe least recently used entry "
    "is evicted when the cache is full; warm caches cut the latency of repeated queries.\n",
}

# what a fresh process prints: the plan's tokens and expansions, and the heavy modules it loaded
PROBE = """
import json, sys
import hanrag
from hanrag.config import load_config
cfg = load_config(sys.argv[2], env=False)
idx = hanrag.open(sys.argv[1], cfg)
if sys.argv[4] == "warm":  # every analyzer loaded first, by texts of every script
    idx.analyzer.tokenize_many(["한국어 문장입니다", "甲木生於寅月", "plain English"], ["ko", "zh", "en"])
res = idx.search_result(sys.argv[3], top_k=5, preload=sys.argv[4] == "cold")
print(json.dumps({
    "tokens": list(res.plan.tokens), "expansions": [list(e) for e in res.plan.expansions],
    "hits": [h.chunk.chunk_id for h in res.hits],
    "loaded": sorted(m for m in sys.argv[5].split(",") if m in sys.modules),
}, ensure_ascii=False))
"""


# a relayed search in a fresh process: did the server answer, and which of the CLI's modules got imported
RELAY_PROBE = """
import json, sys
from hanrag.server.client import relay_search
out = relay_search(sys.argv[1:])
heavy = ("typer", "click", "rich", "numpy", "hanrag.config", "hanrag.cli", "hanrag.commands", "hanrag.records",
         "pydantic")
print(json.dumps({"answered": out is not None, "loaded": [m for m in heavy if m in sys.modules]}))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONWARNINGS": "ignore"}


def _build(root: Path, docs: dict[str, str] | None) -> tuple[Path, Path]:
    corpus = write_corpus(root / "corpus", docs)
    config = root / "hanrag.toml"
    config.write_text(TEST_CONFIG, encoding="utf-8")
    index = root / "index"
    hanrag.build(corpus, index, load_config(config, env=False), progress=False)
    return index, config


@pytest.fixture(scope="module")
def en_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _build(tmp_path_factory.mktemp("en"), EN_CORPUS)


@pytest.fixture(scope="module")
def mixed_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _build(tmp_path_factory.mktemp("mixed"), None)


def _probe(index: Path, config: Path, query: str, state: str) -> dict:
    out = subprocess.run([sys.executable, "-c", PROBE, str(index), str(config), query, state, ",".join(HEAVY)],
                         capture_output=True, text=True, timeout=600, env=_env(), check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_english_search_of_an_english_index_loads_no_korean_or_chinese_analyzer(en_index) -> None:
    index, config = en_index
    # "rolling update" expands to the IT lexicon's Korean 롤링업데이트: its Kiwi tokens come from the lexicon
    # table in the cache folder (written by the first search that needed them, possibly this one)
    first = _probe(index, config, "rolling update readiness", "cold")
    cold = _probe(index, config, "rolling update readiness", "cold")
    assert cold["hits"] and "롤링업데이트" in [t for t, _ in cold["expansions"]], cold
    assert (first["tokens"], first["expansions"], first["hits"]) == (cold["tokens"], cold["expansions"], cold["hits"])
    # no Kiwi, no jieba, no torch, no bm25s/numba/scipy, no web framework, no Milvus client
    assert cold["loaded"] == [], cold["loaded"]
    warm = _probe(index, config, "rolling update readiness", "warm")
    assert (warm["tokens"], warm["expansions"], warm["hits"]) == (cold["tokens"], cold["expansions"], cold["hits"])


@pytest.mark.slow
@pytest.mark.parametrize("query", ["rollback deployment", "롤백 절차", "甲木 용신", "how do I undo a release"])
def test_tokens_and_hits_are_the_same_whichever_analyzers_are_loaded(mixed_index, query: str) -> None:
    index, config = mixed_index
    cold = _probe(index, config, query, "cold")
    warm = _probe(index, config, query, "warm")
    assert {"kiwipiepy", "jieba"} <= set(warm["loaded"])
    assert (cold["tokens"], cold["expansions"], cold["hits"]) == (warm["tokens"], warm["expansions"], warm["hits"])
    assert not {"torch", "bm25s", "numba", "fastapi", "pymilvus"} & set(cold["loaded"])
    if query == "甲木 용신":
        assert cold["tokens"]  # a query that has tokens at all (the comparison is not of two empty lists)


def test_jieba_is_quiet_and_caches_in_hanrags_cache_dir(tmp_path: Path) -> None:
    code = ("from hanrag.text.chinese import ChineseTokenizer; t = ChineseTokenizer(); "
            "print(t.analyze('甲木生於寅月')[0])")
    env = {**_env(), "HANRAG_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300,
                         check=True)
    assert "甲木" in out.stdout
    assert "Prefix dict" not in out.stderr and "Building" not in out.stderr and "pkg_resources" not in out.stderr
    assert (tmp_path / "cache" / "jieba" / "jieba.cache").is_file()


def test_xdg_cache_home_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hanrag.text.chinese import cache_dir

    monkeypatch.delenv("HANRAG_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "hanrag" and cache_dir().is_dir()


# ----------------------------------------------------------------------------- the warm server


def test_health_says_loading_then_ready_and_the_server_is_warm(en_index) -> None:
    index, config = en_index
    cfg = load_config(config, env=False)
    seen: list[tuple[int, str]] = []
    app = create_app(index, cfg, background=True)
    with _LoadingServer(app) as srv, httpx.Client(base_url=srv.url, timeout=60) as c:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            r = c.get("/health")
            seen.append((r.status_code, r.json()["status"]))
            if r.status_code == 200:
                break
            assert (r.status_code, r.json()["status"]) == (503, "loading")
            # refused while loading (unless loading finished between the two requests)
            searched = c.post("/search", json={"query": "cache"})
            assert searched.status_code == 503 or app.state.context.ready.is_set()
            if searched.status_code == 503:
                assert searched.json()["error"] == "the index is still loading"
            time.sleep(0.05)
        assert seen[-1] == (200, "ready")
        analyzer = app.state.index.analyzer
        assert "_ko" in analyzer.__dict__ and "_zh" in analyzer.__dict__  # loaded before ready
        assert c.post("/search", json={"query": "cache eviction"}).json()["hits"]


class _LoadingServer(ThreadServer):
    """ThreadServer without its /health check on entry (a loading server answers 503)."""

    check_health = False


# ----------------------------------------------------------------------------- the CLI through a server


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "hanrag.cli", *args], capture_output=True, text=True,
                          timeout=600, env=env or _env())


def _start_server(index: Path, config: Path, env: dict[str, str]) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "hanrag.cli", "serve", str(index), "--port", str(port),
                             "--config", str(config)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    deadline = time.monotonic() + 300
    while read_serve_file(index) is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"hanrag serve did not become ready: {proc.communicate()[0][-2000:]}")
        time.sleep(0.1)
    return proc, port


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        out, _ = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return out


@pytest.mark.slow
def test_cli_search_through_a_running_server_prints_what_in_process_search_prints(mixed_index) -> None:
    index, config = mixed_index
    key = "cold-start-key"
    env = {**_env(), "HANRAG_API_KEY": key}
    proc, port = _start_server(index, config, env)
    try:
        info = json.loads((index / SERVE_FILE).read_text())
        assert info["host"] == "127.0.0.1" and info["port"] == port and info["pid"] == proc.pid
        assert key not in (index / SERVE_FILE).read_text()  # a hash of the key, never the key
        cases = [["롤백 절차", "--json"], ["how do I undo a release", "--json", "--explain"],
                 ["甲木", "--lang", "zh", "-k", "3"], ["rollback", "--mode", "bm25", "--json"]]
        for args in cases:
            common = ["search", str(index), *args, "--config", str(config)]
            via = _cli(*common, env=env)
            here = _cli(*common, "--no-server", env=env)
            assert via.returncode == here.returncode == 0, via.stderr + here.stderr
            assert via.stdout == here.stdout, args
            assert via.stderr == "" or "error" not in via.stderr
        # a client without the key cannot use the server: it searches in-process, silently, with the same output
        nokey = {k: v for k, v in env.items() if k != "HANRAG_API_KEY"}
        plain = _cli("search", str(index), "롤백 절차", "--json", "--config", str(config), env=nokey)
        assert plain.returncode == 0 and plain.stdout == _cli("search", str(index), "롤백 절차", "--json",
                                                             "--config", str(config), "--no-server").stdout
        # other search settings than the server's (a variable of this client): the server declines (409), the
        # CLI searches here and says what its own settings give
        other = {**env, "HANRAG_SEARCH__FUSION": "rrf"}
        own = _cli("search", str(index), "롤백 절차", "--json", "--config", str(config), env=other)
        assert own.returncode == 0 and own.stdout == _cli("search", str(index), "롤백 절차", "--json", "--config",
                                                         str(config), "--no-server", env=other).stdout
        # the relayed search imports none of the CLI's stack: only the standard library and the relay client
        relayed = subprocess.run([sys.executable, "-c", RELAY_PROBE, "search", str(index), "롤백 절차", "--json",
                                  "--config", str(config)], capture_output=True, text=True, timeout=60, env=env)
        probe = json.loads(relayed.stdout.splitlines()[-1])
        assert probe["answered"] and probe["loaded"] == [], probe
    finally:
        log = _stop(proc)
    # the server answered exactly the searches relayed to it: one per case with the key and the probe's;
    # none without the key; the one with other settings declined
    assert log.count('"POST /cli/search HTTP/1.1" 200') == 5, log[-3000:]
    assert log.count('"POST /cli/search HTTP/1.1" 409') == 1, log[-3000:]
    assert not (index / SERVE_FILE).exists()  # removed on a clean exit


def test_a_stale_serve_file_is_ignored(en_index) -> None:
    index, config = en_index
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    cfg = load_config(config, env=False)
    from hanrag.server.discovery import ServeInfo, search_fingerprint, write_serve_file

    write_serve_file(index, ServeInfo("127.0.0.1", free_port(), int(dead.stdout), "",
                                      search_fingerprint(cfg), hanrag.__version__))
    try:
        assert read_serve_file(index) is None  # the pid is gone
        out = _cli("search", str(index), "cache eviction", "--json", "--config", str(config))
        assert out.returncode == 0 and json.loads(out.stdout)["hits"]
        # a live pid (this test) but nothing listening: refused, in-process search, same answer
        write_serve_file(index, ServeInfo("127.0.0.1", free_port(), os.getpid(), "", search_fingerprint(cfg),
                                          hanrag.__version__))
        again = _cli("search", str(index), "cache eviction", "--json", "--config", str(config))
        assert again.returncode == 0 and again.stdout == out.stdout
        # a file naming a non-loopback address is never used
        (index / SERVE_FILE).write_text(json.dumps({"host": "192.0.2.1", "port": 80, "pid": os.getpid(),
                                                    "key_sha256": "", "config": "x", "version": "0"}))
        assert read_serve_file(index) is None
    finally:
        (index / SERVE_FILE).unlink(missing_ok=True)


# ----------------------------------------------------------------------------- the relay, in process


def test_the_relay_client_knows_which_search_options_take_a_value() -> None:
    from hanrag.commands.search import search_command
    from hanrag.server.client import VALUE_OPTIONS

    takes_value = {opt for p in search_command().params if p.param_type_name == "option" and not p.is_flag
                   for opt in (*p.opts, *p.secondary_opts)}
    assert takes_value == VALUE_OPTIONS


def test_the_server_parses_a_search_as_the_cli_does() -> None:
    # the relay's command is built from the search function alone (hanrag.commands.search); `hanrag search` is
    # the same function in the CLI's app: the same options, and none the CLI lacks (--install-completion)
    import typer

    from hanrag.cli import app
    from hanrag.commands.search import search_command

    group = typer.main.get_command(app)
    in_cli = group.get_command(typer.Context(group), "search")

    def options(command) -> list[tuple]:
        return [(p.name, p.opts, p.secondary_opts, p.multiple, p.required, p.default) for p in command.params]

    assert options(search_command()) == options(in_cli)


@pytest.mark.parametrize("args, expected", [
    (["idx", "q"], ("idx", None)),
    (["-k", "3", "idx", "q", "--config=x.toml"], ("idx", "x.toml")),
    (["--lang", "zh", "--config", "c.toml", "--json", "idx", "q"], ("idx", "c.toml")),
    (["--", "-idx", "q"], ("-idx", None)),
    (["--json"], (None, None)),
])
def test_the_relay_client_finds_the_index_and_config_arguments(args, expected, tmp_path, monkeypatch) -> None:
    from hanrag.server.client import _index_and_config

    monkeypatch.chdir(tmp_path)  # no ./hanrag.toml here
    assert _index_and_config(args) == expected


def test_the_relay_sends_search_settings_and_terminal_variables_but_no_secret() -> None:
    from hanrag.server.client import search_env

    env = {"HANRAG_SEARCH__FUSION": "rrf", "HANRAG_EMBEDDER__BACKEND": "onnx", "HANRAG_API_KEY": "k1",
           "HANRAG_SERVER__API_KEY": "k2", "HANRAG_MILVUS__TOKEN": "t", "HANRAG_MILVUS__URI": "http://m",
           "HANRAG_CONFLUENCE__TOKEN": "t2", "TERM": "xterm-256color", "HOME": "/root", "AWS_SECRET": "s"}
    assert search_env(env) == {"HANRAG_SEARCH__FUSION": "rrf", "HANRAG_EMBEDDER__BACKEND": "onnx",
                               "HANRAG_MILVUS__URI": "http://m", "TERM": "xterm-256color"}


def test_a_relayed_search_prints_what_the_command_prints_here_and_declines_what_is_not_the_servers(
        en_index, tmp_path) -> None:
    from hanrag.commands.search import relayed_search
    from hanrag.server.discovery import search_fingerprint

    index, config = en_index
    cfg = load_config(config, env=False)
    idx = hanrag.open(index, cfg)
    fp = search_fingerprint(cfg)
    where = index.resolve()

    def relay(*args: str, env: dict[str, str] | None = None, tty: bool = False, width: int = 80) -> str | None:
        return relayed_search([str(index), *args, "--config", str(config)], str(tmp_path), env or {},
                              {"tty": tty, "width": width, "height": 25}, idx, where, fp)

    plain = relay("cache eviction")
    here = _cli("search", str(index), "cache eviction", "--config", str(config), "--no-server",
                env={**_env(), "COLUMNS": "80"})
    assert plain == here.stdout and "\x1b[" not in plain
    # a terminal of the client's width, styled as the client's TERM allows
    narrow = relay("cache eviction", "--explain", env={"TERM": "xterm-256color"}, tty=True, width=60)
    assert "\x1b[" in narrow
    assert max(len(_strip_ansi(line)) for line in narrow.splitlines()) == 60
    assert relay("cache eviction", env={"TERM": "xterm", "NO_COLOR": "1"}, tty=True) is not None
    # what must come from the CLI itself: --no-server, another index, other settings, an error to report
    assert relay("cache eviction", "--no-server") is None
    assert relay("cache eviction", env={"HANRAG_SEARCH__FUSION": "rrf"}) is None
    assert relay("cache eviction", "--mode", "nope") is None
    assert relay("cache eviction", "--lang", "xx") is None
    assert relay("cache eviction", "--top-k", "0") is None
    assert relayed_search(["elsewhere", "q"], str(tmp_path), {}, {}, idx, where, fp) is None
    assert relay("cache eviction", "--backend", "milvus") is None


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@pytest.mark.parametrize("host, usable", [("127.0.0.1", True), ("127.0.0.5", True), ("::1", True), ("[::1]", True),
                                          ("localhost", False), ("192.0.2.1", False), ("", False)])
def test_one_reader_of_serve_json_for_the_relay_and_the_server(host, usable, tmp_path) -> None:
    from hanrag.server.client import read_serve

    data = {"host": host, "port": 8123, "pid": os.getpid(), "key_sha256": "", "config": "x", "version": "0"}
    (tmp_path / SERVE_FILE).write_text(json.dumps(data))
    assert (read_serve(tmp_path) is not None) is usable
    info = read_serve_file(tmp_path)
    assert (info is not None) is usable
    if usable:
        assert info.host == host and info.port == 8123 and info.pid == os.getpid()
    (tmp_path / SERVE_FILE).write_text('{"host": "127.0.0.1", "port": "x"')  # cut short
    assert read_serve(tmp_path) is None and read_serve_file(tmp_path) is None
