"""Fuzz report (issues 13 and 30): hostile inputs against every surface, counted, never hidden.

    nice -n 10 python benchmarks/fuzz_report.py [--quick] [--surfaces chunker,...] [--json PATH]

About 9 minutes on 2 busy cores (``--quick``: about 4); every case has a deadline, every subprocess a timeout.

Each surface prints: cases, tracebacks (an exception that escaped, in the output or in a server's log), crashes (a
process killed by a signal), hangs (a case over ``--hang-s``, 30 s), 5xx (unexpected ones: the designed 503 for
a connection over ``server.max_connections`` is counted as the intended answer) and wrong (a result that is not
what the design says: a document dropped, a finding missing, a limit bypassed, a corruption served, a changed
user file). The work runs in worker processes (one JSON job a line each way), so a native abort or a hang costs
one case and a restarted worker, not the report.

Surfaces, each built from what ``tests/hostile`` builds (``fixtures/``, shared with the tests, not re-invented):

* chunker, tokenizers: generated Unicode (every general category, lone surrogates, NFKC expanders, long runs,
  mixed scripts) through ``chunk_document`` and the ko / zh / en analyzers;
* embedder: the default embedder (``Config().embedder``, the onnx backend): finite vectors, token counts, and a
  text's vector the same alone as in its batch (issue 30, finding 7);
* search: the generated texts as queries through the Python API (``hanrag.open(...).search``, bm25 / dense /
  hybrid) on the shared index: hits, or a ValueError only for a blank or over-long query;
* http: ``POST /search`` (bm25 / dense / hybrid) and ``GET /chunks|/documents/<id>`` with the generated texts
  against a real ``hanrag serve``, started only after ``/health`` says ready (it answers 503 while loading);
* corpora: ``lint --json``, ``chunk`` and ``build`` on generated hostile corpora (markup in text and names, lone
  surrogates, a FIFO / symlinks / a CP949 name, 1,200 folders, YAML alias bombs, a huge line, a huge token,
  repeated lines, thousands of identical notes, nested ``$ref`` and ``oneOf`` OpenAPI, wrong-typed OpenAPI
  fields, a bad date, deep HTML, UTF-32, a NUL in UTF-16, one-line PDF pages): every other document is indexed,
  each hostile file gets its finding, no user file changes;
* index: re-sealed corruptions (a snapshot file edited, its sha256 recomputed in the manifest) and a hostile
  pointer or folder layout, then ``open_snapshot``, ``hanrag search`` and ``hanrag doctor --json``: refused in
  one line naming the file (or, for consistent rewrites, flagged by doctor);
* relay: ``POST /cli/search`` with a huge ``--top-k``, long queries, globs and labels, out-of-range tiers, deep,
  huge, FIFO and device configs, deep variables, malformed bodies and generated argument lists: 409 (the CLI runs
  it and reports the problem), 422 for a malformed body, 200 only for what the CLI itself would answer;
* config: out-of-range values (the lists of tests/hostile/test_config.py and test_edges.py), deep, huge and
  special-file TOML, deep or bad ``HANRAG_…`` variables and generated hostile values for every key, through
  ``lint``, ``search`` and ``doctor``: a one-line error or a run, never a traceback;
* slow: half-sent heads, trickled bodies, idle and slowloris connections, a second head trickled on a kept-alive
  connection, connections past the cap and a search among held sockets, against a real ``hanrag serve``
  (its default ``read_timeout_s`` and ``max_connections``); afterwards the server's open files are back.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import os
import random
import re
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import traceback
import unicodedata
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(1, str(ROOT))  # fixtures.* (the hostile inputs are built as the tests build them)
ENV = {k: v for k, v in os.environ.items() if k != "HANRAG_INDEX_KEY"}
ENV.update(HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT), HANRAG_NO_SERVER="1", COLUMNS="200")
HANRAG = [sys.executable, "-m", "hanrag"]
HANG_S = 30.0
EXPANDERS = ["\ufdfa", "\ufdfb", "\u3300", "\u3316", "\u33ff", "\u2474", "\u00bd", "\ufb03", "\u0385", "\u1e9b\u0323"]
WORDS = [
    "갑목",
    "인월",
    "용신",
    "쿠버네티스",
    "甲木",
    "用神",
    "沖",
    "寶鑑",
    "deployment",
    "rollback",
    "K8s",
    "C++",
    "﷽",
    "e\u0301\u0302",
    "👩‍👩‍👧",
    "\u202e",
    "\u200b",
    "ｱｲｳ",
    "\t",
    "\n",
    " ",
    "。",
    "---",
    "##",
    "```",
    "[/]",
    "[link=https://evil.example]x[/link]",
    "\x1b]8;;https://evil.example\x1b\\",
]


def _pools() -> dict[str, list[str]]:
    pools: dict[str, list[str]] = {}
    for cp in range(0x110000):
        pools.setdefault(unicodedata.category(chr(cp)), []).append(chr(cp))
    return pools


def generate(n: int, seed: int, max_run: int) -> list[str]:
    rng = random.Random(seed)
    pools = _pools()
    cats = sorted(pools)
    every = [c for cat in cats for c in rng.sample(pools[cat], min(len(pools[cat]), 400))]
    out: list[str] = []
    for i in range(n):
        kind = i % 5
        if kind == 0:  # one general category (all 30 in turn)
            pool = pools[cats[(i // 5) % len(cats)]]
            text = "".join(rng.choice(pool) for _ in range(rng.randint(1, 40)))
        elif kind == 1:  # anything
            text = "".join(rng.choice(every) for _ in range(rng.randint(0, 60)))
        elif kind == 2:  # NFKC expanders, alone or mixed
            text = "".join(rng.choice(EXPANDERS + WORDS) for _ in range(rng.randint(1, 40)))
        elif kind == 3:  # a long run
            piece = rng.choice(EXPANDERS + WORDS + [rng.choice(every)])
            text = piece * rng.randint(1, max(1, max_run // max(1, len(piece))))
        else:  # mixed scripts and categories
            text = "".join(
                rng.choice(WORDS) if rng.random() < 0.6 else rng.choice(every) for _ in range(rng.randint(1, 30))
            )
        out.append(text)
    return out


# ----------------------------------------------------------------------------------------------- worker side
class _Checkers:
    """The text surfaces, built once per worker."""

    def __init__(self) -> None:
        self.cache: dict[str, Callable[[list[str]], list[str]]] = {}

    def get(self, surface: str, **kw: Any) -> Callable[[list[str]], list[str]]:
        if surface not in self.cache:
            self.cache[surface] = getattr(self, "_" + surface)(**kw)
        return self.cache[surface]

    @staticmethod
    def _each(check: Callable[[str], None]) -> Callable[[list[str]], list[str]]:
        def run(texts: list[str]) -> list[str]:
            failures = []
            for text in texts:
                try:
                    check(text)
                except Exception as exc:
                    failures.append(f"{type(exc).__name__}: {exc} on {text[:40]!r}"[:300])
            return failures

        return run

    def _chunker(self) -> Callable[[list[str]], list[str]]:
        from hanrag.chunking import chunk_document
        from hanrag.config import ChunkingConfig
        from hanrag.records import Document

        cfg = ChunkingConfig()

        def check(text: str) -> None:
            for c in chunk_document(Document(doc_id="f.md", path="f.md", title="t", text=text), cfg):
                assert 0 <= c.start <= c.end <= len(text), (c.start, c.end)

        return self._each(check)

    def _tokenizers(self) -> Callable[[list[str]], list[str]]:
        from hanrag.config import Config
        from hanrag.language import detect_lang
        from hanrag.text import get_analyzer

        analyzer = get_analyzer(Config())

        def check(text: str) -> None:
            analyzer.tokenize(text, detect_lang(text))
            for lang in ("ko", "zh", "en"):
                assert all(isinstance(t, str) for t in analyzer.tokenize(text, lang))

        return self._each(check)

    def _search(self, index: str, config: str) -> Callable[[list[str]], list[str]]:
        import hanrag
        from hanrag.config import load_config

        cfg = load_config(Path(config), env=False)
        ix = hanrag.open(Path(index), cfg)
        limit = cfg.server.max_query_chars
        modes = ["bm25", "dense", "hybrid"]

        def run(texts: list[str]) -> list[str]:
            failures = []
            for i, text in enumerate(texts):
                try:
                    hits = ix.search(text, top_k=5, mode=modes[i % 3])
                    if len(hits) > 5:
                        failures.append(f"wrong: {len(hits)} hits for top_k 5 for {text[:40]!r}")
                except ValueError as exc:  # the designed refusal of a blank or over-long query; nothing else
                    if text.strip() and len(text) <= limit:
                        lone = " (it holds a lone surrogate)" if any(0xD800 <= ord(c) < 0xE000 for c in text) else ""
                        failures.append(f"wrong: refused ({type(exc).__name__}: {str(exc)[:120]}) "
                                        f"index.search({text[:40]!r}, mode={modes[i % 3]!r}){lone}")
                except Exception as exc:
                    failures.append(f"{type(exc).__name__}: {exc} on index.search({text[:40]!r})"[:300])
            return failures

        return run

    def _embedder(self) -> Callable[[list[str]], list[str]]:
        import numpy as np

        from hanrag.config import Config
        from hanrag.embed import load_embedder

        emb = load_embedder(Config().embedder)  # the default: the onnx backend

        def run(texts: list[str]) -> list[str]:
            failures = []
            try:
                queries, passages = emb.encode_queries(texts), emb.encode_passages(texts)
            except Exception as exc:
                return [f"{type(exc).__name__}: {exc}"[:300]] * len(texts)
            for vecs in (queries, passages):
                for row, text in zip(vecs, texts, strict=True):
                    if not np.isfinite(row).all() or abs(float(np.linalg.norm(row)) - 1) > 1e-3:
                        failures.append(f"wrong: a non-finite or unnormalised vector for {text[:40]!r}")
            for i in range(min(2, len(texts))):  # finding 7: a text's vector does not depend on its batch-mates
                alone = emb.encode_passages([texts[i]])[0]
                if not np.array_equal(alone, passages[i]):
                    diff = float(np.abs(alone - passages[i]).max())
                    failures.append(f"wrong: vector differs alone and in a batch (max |diff| {diff:.2g}) "
                                    f"for {texts[i][:40]!r}")
            for t in texts[:4]:
                try:
                    if emb.count_tokens(t) < 2:
                        failures.append(f"wrong: count_tokens < 2 for {t[:40]!r}")
                except Exception as exc:
                    failures.append(f"{type(exc).__name__}: {exc}"[:300])
            return failures

        return run


def _set_env(env: dict[str, str | None]) -> dict[str, str | None]:
    saved = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    return saved


def _job(job: dict, checkers: _Checkers) -> dict:
    op = job["op"]
    saved = _set_env(job.get("env") or {})
    try:
        if op == "texts":
            return {"failures": checkers.get(job["surface"], **job.get("setup", {}))(job["texts"])}
        if op == "warm":
            from hanrag.config import Config
            from hanrag.embed import load_embedder

            load_embedder(Config().embedder).encode_queries(["warm"])
            return {}
        if op == "cli":
            from typer.testing import CliRunner

            from hanrag.cli import app

            res = CliRunner().invoke(app, job["args"])
            exc = res.exception
            tb = None
            if exc is not None and not isinstance(exc, SystemExit):
                tb = "".join(traceback.format_exception(exc))[-2000:]
            return {"exit": res.exit_code, "traceback": tb, "stdout": res.stdout[-4_000_000:],
                    "stderr": res.stderr[-20_000:]}
        if op == "open":
            from hanrag.index.snapshot import open_snapshot
            from hanrag.index.store import IndexLoadError

            try:
                return {"rows": len(open_snapshot(Path(job["index"])))}
            except IndexLoadError as exc:
                return {"refused": str(exc)}
        if op == "build_chunks":
            from fixtures.tamper import make_chunks
            from hanrag.config import Config
            from hanrag.pipeline import build_from_chunks

            for n in job.get("sizes", [4]):
                build_from_chunks(make_chunks()[:n], Path(job["index"]), Config(), progress=False)
            return {}
        raise ValueError(f"unknown op {op}")
    except Exception as exc:
        return {"traceback": "".join(traceback.format_exception(exc))[-2000:]}
    finally:
        _set_env(saved)


def _worker() -> None:
    checkers = _Checkers()
    for line in sys.stdin:
        print(json.dumps(_job(json.loads(line), checkers)), flush=True)


# ----------------------------------------------------------------------------------------------- parent side
class Tally:
    """One surface's counts and the first few failures (each with what reproduces it)."""

    FIELDS = ("cases", "tracebacks", "crashes", "hangs", "5xx", "wrong")

    def __init__(self, name: str) -> None:
        self.name = name
        self.counts = dict.fromkeys(self.FIELDS, 0)
        self.samples: list[str] = []
        self.notes: list[str] = []
        self.seconds = 0.0
        self.slowest = (0.0, "")

    def timed(self, label: str, secs: float) -> None:
        if secs > self.slowest[0]:
            self.slowest = (secs, label)

    def case(self, label: str, *, tb: str | None = None, crash: str | None = None, hang: str | None = None,
             fivexx: str | None = None, wrong: str | None = None, n: int = 1) -> bool:
        self.counts["cases"] += n
        ok = True
        for key, what in (("tracebacks", tb), ("crashes", crash), ("hangs", hang), ("5xx", fivexx), ("wrong", wrong)):
            if what:
                self.counts[key] += 1
                ok = False
                if len(self.samples) < 8:
                    self.samples.append(f"{key}: {label}: {' '.join(str(what).split())[:400]}")
        return ok

    def row(self) -> dict[str, Any]:
        return {"surface": self.name, **self.counts, "seconds": round(self.seconds, 1),
                "slowest_case": {"seconds": round(self.slowest[0], 1), "case": self.slowest[1]},
                "samples": self.samples, "notes": self.notes}


class Worker:
    """A child running jobs; a job over the hang limit kills it, a dead child is restarted on the next job."""

    def __init__(self, cwd: Path, warm: bool = False, env: dict[str, str] | None = None) -> None:
        self.cwd = cwd
        self.warm = warm
        self.env = {**ENV, **(env or {})}
        self.proc: subprocess.Popen[str] | None = None
        self.log_path = Path(tempfile.mkstemp(prefix="hanrag-fuzz-worker-", suffix=".log")[1])
        self.log = self.log_path.open("a")

    def _start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True, env=self.env, cwd=self.cwd,
                                     start_new_session=True)
        if self.warm:
            self.call({"op": "warm"}, 300)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(30)
        self.proc = None

    def call(self, job: dict, limit: float | None = None) -> tuple[str, dict, str, float]:
        """(status, result, what the worker logged meanwhile, seconds); status: ok, hang or crash."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
            if self.proc is None:  # its warm-up hung or crashed
                return "crash", {"rc": None}, "the worker's warm-up failed", 0.0
        assert self.proc.stdin and self.proc.stdout
        self.log.flush()
        pos = self.log_path.stat().st_size
        t0 = time.monotonic()
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([self.proc.stdout], [], [], limit or HANG_S)
        secs = time.monotonic() - t0
        if not ready:
            self.kill()
            return "hang", {}, self._log_since(pos), secs
        line = self.proc.stdout.readline()
        secs = time.monotonic() - t0
        if not line:
            rc = self.proc.wait(30)
            self.proc = None
            return "crash", {"rc": rc}, self._log_since(pos), secs
        return "ok", json.loads(line), self._log_since(pos), secs

    def _log_since(self, pos: int) -> str:
        with self.log_path.open("rb") as fh:
            fh.seek(pos)
            return fh.read().decode("utf-8", "replace")

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            assert self.proc.stdin
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        self.log.close()
        self.log_path.unlink(missing_ok=True)


def _tb(res: dict, log: str) -> str | None:
    """A traceback in the result, in the output or logged by the worker."""
    if res.get("traceback"):
        return res["traceback"].strip().splitlines()[-1]
    for text in (res.get("stdout", ""), res.get("stderr", ""), log):
        if "Traceback" in text:
            return text[text.index("Traceback"):][-300:]
    return None


def cli_case(t: Tally, w: Worker, label: str, args: list[str], *, env: dict | None = None, limit: float = HANG_S,
             check: Callable[[dict], str | None] | None = None) -> dict:
    """Run ``hanrag ARGS`` in the worker (typer's runner, as the tests do) and count it."""
    status, res, log, secs = w.call({"op": "cli", "args": args, "env": env or {}}, limit)
    repro = f"hanrag {' '.join(a if len(a) < 60 else a[:40] + '…' for a in args)}"
    t.timed(label, secs)
    if status == "hang":
        t.case(label, hang=f"over {limit:.0f} s: {repro}")
    elif status == "crash":
        t.case(label, crash=f"worker died rc={res.get('rc')}: {repro}: {log[-300:]}")
    else:
        tb = _tb(res, log)
        wrong = None
        if not tb and check:
            try:
                wrong = check(res)
            except Exception as exc:  # the output was not what the check could read: that is the finding
                wrong = f"unreadable output ({type(exc).__name__}: {exc}): {res.get('stdout', '')[:200]!r}"

        if not tb and not wrong and secs > HANG_S:
            t.case(label, hang=f"{secs:.0f} s: {repro}")
        else:
            t.case(label, tb=tb and f"{repro}: {tb}", wrong=wrong and f"{repro}: {wrong}")
    return res


def one_line_error(res: dict, *words: str) -> str | None:
    """None when the command ended with exit 2 and one ``error:`` line naming ``words``."""
    err = res.get("stderr", "")
    if res.get("exit") != 2 or not err.startswith("error:"):
        return f"exit {res.get('exit')}, not one error line: {(err or res.get('stdout', ''))[:200]!r}"
    line = err.split("\n", 1)[0]
    missing = [w for w in words if w not in line]
    return f"error line lacks {missing}: {line[:200]!r}" if missing else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(args: list[str], timeout: float, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=ENV, **kw)


class Serve:
    """A real ``hanrag serve`` subprocess on a loopback port; ready only when ``/health`` says so."""

    def __init__(self, index: Path, config: Path, log: Path) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log
        self._log = log.open("a")
        self.proc = subprocess.Popen([*HANRAG, "serve", str(index), "--port", str(self.port), "-c", str(config)],
                                     stdout=subprocess.DEVNULL, stderr=self._log, env=ENV, cwd=config.parent,
                                     start_new_session=True)

    def wait_ready(self, limit: float = 300) -> str | None:
        """None once /health answers 200 ready; the reason otherwise (a load error, an exit, the limit)."""
        import httpx

        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return f"server exited rc={self.proc.returncode}: {self.log_since(0)[-300:]}"
            try:
                r = httpx.get(self.url + "/health", timeout=10)
                body = r.json()
                if r.status_code == 200 and body.get("status") == "ready":
                    return None
                if body.get("error"):  # 503 with the reason: it will never be ready
                    return f"loading failed: {body['error']}"
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.3)
        return f"not ready after {limit:.0f} s"

    def log_pos(self) -> int:
        self._log.flush()
        return self.log_path.stat().st_size

    def log_since(self, pos: int) -> str:
        with self.log_path.open("rb") as fh:
            fh.seek(pos)
            return fh.read().decode("utf-8", "replace")

    def open_fds(self) -> int:
        try:
            return len(os.listdir(f"/proc/{self.proc.pid}/fd"))
        except OSError:
            return -1

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(15)
        self._log.close()


# ----------------------------------------------------------------------------------------------- file helpers
def _walk(root: Path) -> list[Path]:
    """Every entry under root, without recursion (a corpus can be 1,200 folders deep) or following links."""
    out, stack = [], [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for e in entries:
            p = Path(e.path)
            out.append(p)
            if e.is_dir(follow_symlinks=False):
                stack.append(p)
    return out


def _rmtree(root: Path) -> None:
    if not root.exists() and not root.is_symlink():
        return
    entries = _walk(root)
    for p in sorted(entries, key=lambda p: len(p.parts), reverse=True):
        try:
            if p.is_dir() and not p.is_symlink():
                os.chmod(p, 0o755)
                p.rmdir()
            else:
                p.unlink()
        except OSError:
            pass
    shutil.rmtree(root, ignore_errors=True)


def _hashes(root: Path) -> dict[str, str]:
    """sha256 of every regular file (a FIFO is never opened), and each link's target."""
    out = {}
    for p in _walk(root):
        st = p.lstat()
        if stat.S_ISREG(st.st_mode):
            out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
        elif stat.S_ISLNK(st.st_mode):
            out[str(p)] = "-> " + os.readlink(p)
    return out


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {_toml(v)}" for k, v in value.items()) + "}"
    raise TypeError(type(value))


def _config_text(entries: list[tuple[str, str, Any]]) -> str:
    tables: dict[str, list[str]] = {}
    for section, key, value in entries:
        tables.setdefault(section, []).append(f"{key} = {_toml(value)}")
    return "".join(f"[{s}]\n" + "\n".join(lines) + "\n" for s, lines in tables.items())


# ----------------------------------------------------------------------------------------------- text surfaces
def run_texts(surface: str, texts: list[str], batch: int, tmp: Path, setup: dict | None = None) -> Tally:
    t = Tally(surface)
    w = Worker(tmp, warm=surface in ("embedder", "search"))
    try:
        for at in range(0, len(texts), batch):
            part = texts[at : at + batch]
            job = {"op": "texts", "surface": surface, "texts": part, "setup": setup or {}}
            status, res, log, secs = w.call(job, HANG_S * len(part) + (120 if at == 0 else 0))
            if status != "ok":
                kind = {"hang": "hang", "crash": "crash"}[status]
                t.case(f"batch at {at}", n=len(part), **{kind: f"{status} on a batch starting {part[0][:40]!r}"})
                continue
            if res.get("traceback"):
                t.case(f"batch at {at}", n=len(part), tb=res["traceback"].splitlines()[-1])
                continue
            failures = res["failures"]
            t.case(f"batch at {at}", n=len(part) - len(failures))
            for f in failures:
                if f.startswith("wrong:"):
                    t.case(surface, wrong=f[7:])
                else:
                    t.case(surface, tb=f)
    finally:
        w.close()
    return t


# ----------------------------------------------------------------------------------------------- the shared server
class Stage:
    """The index and server the http, relay and slow surfaces share: the test server's corpus with the markup
    documents of tests/hostile/test_edges.py and the fuzz report's own (U+FDFA), TEST_CONFIG's settings."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.serve: Serve | None = None
        self.error: str | None = None

    def build(self) -> bool:
        if hasattr(self, "index") or self.error is not None:
            return self.error is None
        from fixtures.hostile import DOCS
        from fixtures.server import TEST_CONFIG, write_corpus

        root = self.tmp / "stage"
        docs = {**DOCS, "c.md": "# 寶鑑\n来源: https://e.org/c\n" + "\ufdfa" * 30 + " 甲木用神。\n"}
        self.corpus = write_corpus(root / "corpus", docs)
        self.config = root / "hanrag.toml"
        self.config.write_text(TEST_CONFIG, encoding="utf-8")
        self.index = root / "index"
        try:
            b = _run([*HANRAG, "build", str(self.corpus), "--index", str(self.index), "-q", "-c", str(self.config)],
                     600, cwd=root)
            if b.returncode != 0:
                self.error = f"hanrag build of the stage corpus failed: {b.stderr[-400:]}"
        except subprocess.TimeoutExpired:
            self.error = "hanrag build of the stage corpus ran past 600 s"
        return self.error is None

    def start(self) -> Serve | None:
        if self.serve is not None or not self.build():
            return self.serve
        self.serve = Serve(self.index, self.config, self.tmp / "stage" / "serve.log")
        self.error = self.serve.wait_ready()
        if self.error:
            self.serve.close()
            self.serve = None
        return self.serve

    def close(self) -> None:
        if self.serve is not None:
            self.serve.close()


def run_http(texts: list[str], stage: Stage) -> Tally:
    import urllib.parse

    import httpx

    t = Tally("http")
    srv = stage.start()
    if srv is None:
        t.case("server start", wrong=stage.error)
        return t
    pos = srv.log_pos()
    modes = ["bm25", "dense", "hybrid"]
    statuses: dict[str, int] = {}
    with httpx.Client(timeout=HANG_S + 5) as client:
        for i, text in enumerate(texts):
            if i % 5 == 4:  # a lookup by a hostile id: 404, never 5xx
                path = ("/chunks/" if i % 10 == 4 else "/documents/") + urllib.parse.quote(
                    text.encode("utf-8", "surrogatepass"), safe="")
                method, body = "GET", None
            else:
                path, method = "/search", "POST"
                body = json.dumps({"query": text, "top_k": 5, "mode": modes[i % 3]})  # surrogates as \ud8xx
            label = f"{method} {path[:50]} {text[:40]!r}"
            try:
                r = client.request(method, srv.url + path, content=body,
                                   headers={"content-type": "application/json"} if body else None)
            except httpx.TimeoutException:
                t.case(label, hang=f"no answer in {HANG_S + 5:.0f} s")
                continue
            except httpx.TransportError as exc:
                crash = f"server exited rc={srv.proc.returncode}" if srv.proc.poll() is not None else None
                t.case(label, crash=crash, wrong=None if crash else f"{type(exc).__name__}")
                if crash:
                    break
                continue
            key = f"{method} {path.split('/')[1]} {r.status_code}"
            statuses[key] = statuses.get(key, 0) + 1
            five = f"{r.status_code}: {r.text[:150]}" if r.status_code >= 500 else None
            wrong = None
            if r.status_code == 200 and path == "/search":
                hits = r.json().get("hits", [])
                wrong = f"{len(hits)} hits for top_k 5" if len(hits) > 5 else None
            elif r.status_code == 400 and path == "/search":  # no filters here: nothing the design refuses with 400
                wrong = f"400: {r.text[:150]}"
            elif r.status_code in (401, 403, 421) or r.status_code < 200 or 300 <= r.status_code < 400:
                wrong = f"{r.status_code}: {r.text[:150]}"  # a refusal meant for another client, or a redirect
            t.case(label, fivexx=five, wrong=wrong)
    t.notes.append("answers: " + ", ".join(f"{k} x{v}" for k, v in sorted(statuses.items()))
                   + " (422: a query over max_query_chars, or one holding a lone surrogate)")
    _server_log(t, srv, pos, 0)
    return t


def _server_log(t: Tally, srv: Serve, pos: int, counted: int) -> None:
    """Tracebacks the server logged since ``pos`` beyond the ``counted`` ones (a log line can follow its answer)."""
    time.sleep(1.0)
    log = srv.log_since(pos)
    extra = log.count("Traceback") - counted
    if extra > 0:
        t.case(f"server log ({extra} more)", tb=log[log.rindex("Traceback"):][-400:], n=0)


# ----------------------------------------------------------------------------------------------- corpora
@dataclasses.dataclass
class Corpus:
    name: str
    make: Callable[[Path], None]
    codes: dict[str, set[str]] = dataclasses.field(default_factory=dict)  # lint findings each file must get
    kept: set[str] = dataclasses.field(default_factory=set)  # doc_ids that must be chunked and built (+ ok.md)
    absent: set[str] = dataclasses.field(default_factory=set)  # doc_ids that must not be
    contains: dict[str, str] = dataclasses.field(default_factory=dict)  # doc_id -> text one of its chunks holds
    never: tuple[str, ...] = ()  # text no chunk may hold (an outside file's)
    max_chunks: int | None = None  # per hostile document
    search: tuple[str, str] | None = None  # (query, text the printed hits show literally)


def corpora(quick: bool) -> list[Corpus]:
    from fixtures.hostile import CP949_NAME, LAUGHS, MARKUP_DOC, NAME_DOC, SOURCE, nested_ref_spec
    from fixtures.pdf import write_pdf

    # sizes: quick, or those that took minutes (or crashed) before issue 30's fixes (4 MB line, 5 MB of one line)
    line, tok, reps, n_notes = (1_000_000, 20_000, 40_000, 1000) if quick else (4_000_000, 60_000, 100_000, 5000)

    def w(rel: str, text: str, **kw: Any) -> Callable[[Path], None]:
        def make(c: Path) -> None:
            (c / rel).parent.mkdir(parents=True, exist_ok=True)
            (c / rel).write_text(text, encoding=kw.get("encoding", "utf-8"))

        return make

    def markup(c: Path) -> None:
        w("1. 자료/zebracorn.md", MARKUP_DOC)(c)
        w("1. 자료/[link=https:__evil.example]x[_link].md", NAME_DOC)(c)
        (c / "x[").mkdir()
        w("x[/]y [link=https:__evil.example]z.md", "# no source here\n\ntext\n")(c)

    def specials(c: Path) -> None:  # tests/hostile/test_inputs.py's `hostile` fixture
        (c / "sub").mkdir()
        outside = c.parent / "outside"
        outside.mkdir(exist_ok=True)
        (outside / "secret.md").write_text("# secret\n출처: https://example.org/secret\nsecret 본문입니다.\n")
        os.mkfifo(c / "pipe.md")
        (c / "link.md").symlink_to(outside / "secret.md")
        (c / "passwd.txt").symlink_to("/etc/passwd")
        (c / "sub" / "loop").symlink_to("..")
        (c / "self.md").symlink_to("self.md")
        with open(os.fsencode(c) + b"/" + CP949_NAME, "wb") as fh:
            fh.write("# 한글\n출처: https://example.org/ko\n한글 이름의 문서입니다.\n".encode())

    def deep(c: Path) -> None:  # tests/hostile/test_corpora.py: 1,200 folders, a file at 10 and at 1,200
        folder = c
        for depth in range(1, 1201):
            folder = folder / "d"
            folder.mkdir()
            if depth in (10, 1200):
                (folder / f"at{depth}.md").write_text(f"# 깊이 {depth}\n{SOURCE}깊은 곳의 문서입니다.\n")

    def notes(c: Path) -> None:
        note = "똑같은 메모 본문입니다. an identical note body, copied into many notes.\n"
        for i in range(n_notes):
            (c / f"n{i:05d}.md").write_text(f"---\nsource: https://example.org/n{i}\n---\n{note}")

    def surrogate(c: Path) -> None:
        (c / "api.json").write_text(
            '{"openapi": "3.0.0", "info": {"title": "T\\ud800", "version": "1"},'
            ' "servers": [{"url": "https://api.example.org"}],'
            ' "paths": {"/a": {"get": {"summary": "bad \\ud800 here", "responses": {"200": {"description": "ok"}}}}}}'
        )

    def oneof(c: Path) -> None:
        schemas: dict[str, Any] = {f"S{i}": {"oneOf": [{"$ref": f"#/components/schemas/S{i + 1}"}] * 8}
                                   for i in range(10)}
        schemas["S10"] = {"type": "string"}
        ok = {"200": {"description": "ok",
                      "content": {"application/json": {"schema": {"$ref": "#/components/schemas/S0"}}}}}
        (c / "oneof.json").write_text(json.dumps({
            "openapi": "3.0.0", "info": {"title": "oneof", "version": "1"}, "servers": [{"url": "https://e.org"}],
            "paths": {"/a": {"get": {"responses": ok}}}, "components": {"schemas": schemas}}))

    wrong_types = {"swagger": "2.0", "info": {"title": "W", "version": 1}, "host": "api.example.org",
                   "schemes": "https", "consumes": 5, "externalDocs": "nope", "servers": [{"url": 7}],
                   "paths": {"/a": {"parameters": 3, "post": {"summary": "S", "tags": 5, "parameters": 7,
                                                               "responses": {"200": {"description": "ok"}}}}}}
    u32 = f"# 유티에프 삼십이\n{SOURCE}본문 ✓\n"
    deep_html = ("<html><body><h1>깊은 페이지</h1>" + "<div>" * 400 + "<p>깊은 곳의 본문 https://example.org/deep</p>"
                 + "</div>" * 400 + "</body></html>")
    very_deep_html = ("<html><body><h1>아주 깊은 페이지</h1>" + "<div>" * 20_000
                      + "<p>아주 깊은 본문 https://example.org/deeper</p>" + "</div>" * 20_000 + "</body></html>")
    rng = random.Random(30)
    token = "".join(rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/")
                    for _ in range(tok))
    return [
        Corpus("markup in text and names", markup,
               kept={"1. 자료/zebracorn.md", "1. 자료/[link=https:__evil.example]x[_link].md"},
               search=("zebracorn", "closes [/] a tag")),
        Corpus("lone surrogate in OpenAPI JSON", surrogate, codes={"api.json": {"unencodable-text"}},
               kept={"api.json"}),
        Corpus("FIFO, outside links, loops, CP949 name", specials,
               codes={"pipe.md": {"special-file"}, "link.md": {"symlink-outside"}, "passwd.txt": {"symlink-outside"},
                      "sub/loop": {"symlink-loop"}, "self.md": {"symlink-loop"}},
               absent={"pipe.md", "link.md", "passwd.txt"}, never=("secret 본문", "root:")),
        Corpus("1,200 folders deep", deep, kept={"d/" * 10 + "at10.md"}, absent={"d/" * 1200 + "at1200.md"}),
        Corpus("YAML alias bomb in front matter",
               w("laughs.md", f"---\n{LAUGHS}title: *i\ntags: *i\n---\n# 웃음\n{SOURCE}본문.\n"),
               codes={"laughs.md": {"bad-front-matter"}}, kept={"laughs.md"}),
        Corpus("YAML alias bomb in OpenAPI YAML",
               w("api.yaml", LAUGHS + "openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n"
                 "      summary: hi\n      tags: *i\n      responses: {'200': {description: ok}}\n"),
               codes={"api.yaml": {"parse-error"}}, absent={"api.yaml"}),
        Corpus("deep YAML nesting in front matter",
               w("nest.md", "---\ntitle: " + "[" * 100_000 + "]" * 100_000 + f"\n---\n# 중첩\n{SOURCE}본문.\n"),
               codes={"nest.md": {"bad-front-matter"}}, kept={"nest.md"}),
        Corpus(f"a line of {line:,} characters", w("x.md", f"# x\n{SOURCE}" + "x" * line + "\n"),
               codes={"x.md": {"long-line", "long-token"}}, kept={"x.md"}),
        Corpus(f"a random token of {tok:,} characters", w("tok.md", f"# tok\n{SOURCE}{token}\n"),
               codes={"tok.md": {"long-token"}}, kept={"tok.md"}),
        Corpus(f"one line repeated {reps:,} times",
               w("rep.md", f"# r\n{SOURCE}" + "같은 줄이 반복됩니다. the same line again.\n" * reps),
               kept={"rep.md"}),
        Corpus(f"{n_notes:,} identical notes", notes, kept={"n00000.md", "n00001.md"}),
        Corpus("nested $ref OpenAPI", w("api.json", json.dumps(nested_ref_spec())),
               codes={"api.json": {"schema-truncated"}}, kept={"api.json"}, max_chunks=1000),
        Corpus("oneOf chains in OpenAPI", oneof, kept={"oneof.json"}, max_chunks=1000),
        Corpus("OpenAPI fields of the wrong type", w("api.json", json.dumps(wrong_types)), kept={"api.json"},
               contains={"api.json": "POST /a"}),
        Corpus("an impossible date",
               w("date.md", f"---\ntitle: 날짜\ndate: 2024-13-45\ntags: [a]\n---\n본문.\n{SOURCE}"), kept={"date.md"}),
        Corpus("HTML 400 deep", w("deep.html", deep_html), codes={"deep.html": {"deep-html"}}, kept={"deep.html"},
               contains={"deep.html": "깊은 곳의 본문"}),
        Corpus("HTML 20,000 deep", w("deeper.html", very_deep_html), codes={"deeper.html": {"deep-html"}},
               kept={"deeper.html"}, contains={"deeper.html": "아주 깊은 본문"}),
        Corpus("UTF-32 with a BOM", lambda c: [(c / f"{n}.md").write_bytes(d) for n, d in (
            ("u32le", ("\ufeff" + u32).encode("utf-32-le")), ("u32be", ("\ufeff" + u32).encode("utf-32-be")),
            ("u32", u32.encode("utf-32")))],
               kept={"u32le.md", "u32be.md", "u32.md"}, contains={"u32le.md": "유티에프", "u32be.md": "유티에프"}),
        Corpus("a NUL in UTF-16",
               lambda c: (c / "nul.md").write_bytes("\ufeff# 제목\n본문\x00끝\n".encode("utf-16-le")),
               codes={"nul.md": {"binary-file"}}, absent={"nul.md"}),
        Corpus("PDF pages of one line", lambda c: write_pdf(c / "slides.pdf", [f"Slide {i}" for i in range(1, 6)],
                                                            source="https://example.org/slides"),
               kept={"slides.pdf"}, contains={"slides.pdf": "Slide 3"}),
    ]


def run_corpora(tmp: Path, quick: bool) -> Tally:
    t = Tally("corpora")
    # without the machine's vector cache: every run embeds what it builds (a second run is not a cache read)
    w = Worker(tmp, warm=True, env={"HANRAG_EMBEDDER__CACHE": "false"})
    ok_doc = "# 정상 문서\n출처: https://example.org/doc\n이 문서는 멀쩡합니다.\n"
    try:
        for i, spec in enumerate(corpora(quick)):
            base = tmp / f"corpus-{i}"
            c = base / "corpus"
            c.mkdir(parents=True)
            (c / "ok.md").write_text(ok_doc, encoding="utf-8")
            spec.make(c)
            before = _hashes(c)
            kept = spec.kept | {"ok.md"}

            def lint_check(res: dict, spec: Corpus = spec) -> str | None:
                if res["exit"] not in (0, 1):
                    return f"exit {res['exit']}: {res['stderr'][:200]!r}"
                report = json.loads(res["stdout"])
                got: dict[str, set[str]] = {}
                for f in report["findings"]:
                    got.setdefault(f["path"], set()).add(f["code"])
                missing = {p: sorted(want - got.get(p, set())) for p, want in spec.codes.items()
                           if want - got.get(p, set())}
                return f"findings missing: {missing} (got {dict(list(got.items())[:6])})" if missing else None

            def chunks_check(ids: dict[str, list[str]], spec: Corpus = spec, kept: set[str] = kept) -> str | None:
                problems = []
                if lost := sorted(kept - set(ids)):
                    problems.append(f"dropped {lost}")
                if there := sorted(spec.absent & set(ids)):
                    problems.append(f"indexed {there}")
                for doc, text in spec.contains.items():
                    if not any(text in x for x in ids.get(doc, [])):
                        problems.append(f"{doc} lacks {text!r}")
                for text in spec.never:
                    if any(text in x for xs in ids.values() for x in xs):
                        problems.append(f"a chunk holds {text!r}")
                if spec.max_chunks:
                    big = {d: len(xs) for d, xs in ids.items() if len(xs) > spec.max_chunks}
                    if big:
                        problems.append(f"over {spec.max_chunks} chunks: {big}")
                return "; ".join(problems) or None

            def read_chunks(path: Path) -> dict[str, list[str]]:
                ids: dict[str, list[str]] = {}
                with path.open(encoding="utf-8") as fh:
                    for line in fh:
                        rec = json.loads(line)
                        ids.setdefault(rec["doc_id"], []).append(rec["text"])
                return ids

            def chunk_check(res: dict, out: Path = base / "chunks.jsonl") -> str | None:
                if res["exit"] != 0:
                    return f"exit {res['exit']}: {res['stderr'][:200]!r}"
                return chunks_check(read_chunks(out))

            def build_check(res: dict, index: Path = base / "index") -> str | None:
                if res["exit"] != 0:
                    return f"exit {res['exit']}: {res['stderr'][:200]!r}"
                files = list(index.glob("snapshots/*/chunks.jsonl"))
                return chunks_check(read_chunks(files[0])) if len(files) == 1 else f"{len(files)} snapshots"

            label = spec.name
            cli_case(t, w, f"lint: {label}", ["lint", str(c), "--json"], check=lint_check)
            cli_case(t, w, f"chunk: {label}", ["chunk", str(c), "-o", str(base / "chunks.jsonl")], check=chunk_check)
            cli_case(t, w, f"build: {label}", ["build", str(c), "--index", str(base / "index"), "--json"],
                     check=build_check)
            if spec.search:
                query, shown = spec.search

                def search_check(res: dict, shown: str = shown) -> str | None:
                    out = res["stdout"]
                    if res["exit"] != 0:
                        return f"exit {res['exit']}: {res['stderr'][:200]!r}"
                    if "\x1b]" in out:
                        return "a terminal escape (a planted link) in the printed hits"
                    plain = " ".join(re.sub(r"\x1b\[[0-9;]*m", "", out).split())  # colours off, wrapping undone
                    return None if shown in plain else f"{shown!r} not printed as text"

                # a real process: rich reads FORCE_COLOR when the console is made (at import)
                cmd = ["search", str(base / "index"), query, "--explain", "--no-server"]
                try:
                    t0 = time.monotonic()
                    out = subprocess.run([*HANRAG, *cmd], capture_output=True, text=True, timeout=120, cwd=tmp,
                                         env={**ENV, "FORCE_COLOR": "1", "TERM": "xterm-256color"})
                    secs = time.monotonic() - t0
                    res = {"exit": out.returncode, "stdout": out.stdout, "stderr": out.stderr}
                    tb = _tb(res, "")
                    t.case(f"search (colour terminal): {label}", tb=tb, wrong=None if tb else search_check(res),
                           crash=f"signal {-out.returncode}" if out.returncode < 0 else None,
                           hang=f"{secs:.0f} s" if secs > HANG_S else None)
                except subprocess.TimeoutExpired:
                    t.case(f"search (colour terminal): {label}", hang=f"hanrag {' '.join(cmd)}: past 120 s")
            if _hashes(c) != before:
                t.case(f"user files: {label}", wrong="a file in the corpus changed", n=0)
            _rmtree(base)
    finally:
        w.close()
    return t


# ----------------------------------------------------------------------------------------------- index
def index_cases() -> list[tuple[str, Callable[[Path, Path], None], tuple[str, ...], str]]:
    """(name, corrupt(index, snapshot), words, kind): kind 'refused' (open, search and doctor refuse in one line
    naming the words) or 'doctor' (consistent data: open serves it, doctor flags it with the words)."""
    import numpy as np

    from fixtures.tamper import (
        RESEALED,
        edit_npy,
        replace_text_same_length,
        reseal,
        reverse_embeddings,
        rewrite_manifest,
    )
    from hanrag.index import store

    cases: list[tuple[str, Callable[[Path, Path], None], tuple[str, ...], str]] = []
    for name in sorted(RESEALED):
        rel, edit, word = RESEALED[name]
        cases.append((f"resealed {name}", lambda i, s, rel=rel, edit=edit: edit_npy(s, rel, edit),
                      (rel.split("/")[-1], word), "refused"))

    def vocab(i: Path, s: Path, how: str) -> None:
        p = s / "sparse" / "bm25_vocab.json"
        v = json.loads(p.read_text(encoding="utf-8"))
        v = v[::-1] if how == "reverse" else [v[0], *v[:-1]] if how == "repeat" else v
        p.write_text(json.dumps(v, ensure_ascii=False), encoding="utf-8")
        reseal(s, "sparse/bm25_vocab.json")

    def graph(i: Path, s: Path, header: bool) -> None:
        reseal(s, change=lambda m: m.update(dense_index={**m["dense_index"], "kind": "hnsw", "rows": 4}))
        if header:
            import struct

            g = s / "dense.usearch"
            raw = bytearray(g.read_bytes())
            raw[0:4] = struct.pack("<I", 4)
            g.write_bytes(bytes(raw))
            reseal(s, "dense.usearch")

    def pointer(i: Path, s: Path, how: str) -> None:
        p = i / store.POINTER
        if how == "name-only":
            p.write_text(s.name + "\n")
            return
        if how == "outside-link":
            shutil.move(p, i.parent / "pointer")
            p.symlink_to(i.parent / "pointer")
            return
        p.unlink()
        if how == "fifo":
            os.mkfifo(p)
        elif how == "dev-zero":
            p.symlink_to("/dev/zero")
        elif how == "directory":
            p.mkdir()
        elif how == "invalid-utf8":
            p.write_bytes(b"\xff\xfe\x80snap\n")
        elif how == "garbage":
            p.write_bytes(b"\x00\x01 garbage; rm -rf /\n")
        elif how == "traversal":
            p.write_text("../../../etc\n")
        elif how == "huge":
            with p.open("wb") as fh:
                fh.truncate(64 * 1024 * 1024)

    def linked(i: Path, s: Path, what: str) -> None:
        target = {"snapshot": s, "snapshots": s.parent, "sparse": s / "sparse", "manifest": s / store.MANIFEST,
                  "file": s / "sparse" / "bm25_vocab.json"}[what]
        elsewhere = i.parent / "elsewhere"
        shutil.move(target, elsewhere)
        target.symlink_to(elsewhere, target_is_directory=elsewhere.is_dir())

    def manifest_fifo(i: Path, s: Path) -> None:
        (s / store.MANIFEST).unlink()
        os.mkfifo(s / store.MANIFEST)

    def unsigned(i: Path, s: Path, resign: bool) -> None:
        path = s / store.MANIFEST
        m = json.loads(path.read_text(encoding="utf-8"))
        m["embedder"]["identity"] = "something-else"
        if resign:
            m[store.MANIFEST_SUM] = store.manifest_digest(m)
        path.write_text(json.dumps(m), encoding="utf-8")

    def files_map(i: Path, s: Path, how: str) -> None:
        if how != "unexpected":
            reverse_embeddings(s)
        change = {"empty": lambda m: m.update(files={}), "partial": lambda m: m["files"].pop("embeddings.npy"),
                  "unexpected": lambda m: m["files"].update({"../../etc/passwd": {"sha256": "0" * 64, "bytes": 1}})}
        rewrite_manifest(s, change[how])

    def truncated(i: Path, s: Path, rel: str) -> None:
        p = s / rel
        p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
        reseal(s, rel)

    def flipped(i: Path, s: Path) -> None:
        p = s / "embeddings.npy"
        raw = bytearray(p.read_bytes())
        raw[-7] ^= 0x10
        p.write_bytes(bytes(raw))

    def jsonl_garbage(i: Path, s: Path) -> None:
        p = s / "chunks.jsonl"
        lines = p.read_bytes().split(b"\n")
        lines[1] = b"{not json" + b" " * max(0, len(lines[1]) - 9)
        p.write_bytes(b"\n".join(lines))
        reseal(s, "chunks.jsonl")

    def object_npy(i: Path, s: Path) -> None:  # a pickle inside an .npy (never loaded: allow_pickle=False)
        np.save(s / "dup_of.npy", np.array([{"x": 1}, None, 3, "four"], dtype=object), allow_pickle=True)
        reseal(s, "dup_of.npy")

    cases += [
        ("resealed vocabulary with a repeated token", lambda i, s: vocab(i, s, "repeat"),
         ("bm25_vocab.json", "distinct tokens"), "refused"),
        ("manifest claims a graph over the placeholder", lambda i, s: graph(i, s, False),
         ("dense.usearch", "the manifest says 4"), "refused"),
        ("graph claim with the placeholder's header edited", lambda i, s: graph(i, s, True),
         ("dense.usearch", "more than its 112 bytes hold"), "refused"),
        ("manifest names another snapshot",
         lambda i, s: reseal(s, change=lambda m: m.update(snapshot="20000101T000000-000000000-1")),
         ("names snapshot",), "refused"),
        ("manifest edited, not re-signed", lambda i, s: unsigned(i, s, False), ("own checksum",), "refused"),
        ("manifest re-signed, CURRENT's digest stale", lambda i, s: unsigned(i, s, True), ("CURRENT recorded",),
         "refused"),
        ("files map emptied", lambda i, s: files_map(i, s, "empty"), ("does not list",), "refused"),
        ("files map without embeddings.npy", lambda i, s: files_map(i, s, "partial"),
         ("does not list embeddings.npy",), "refused"),
        ("files map naming ../../etc/passwd", lambda i, s: files_map(i, s, "unexpected"), ("unexpected",), "refused"),
        ("rows reversed, checksums stale", lambda i, s: reverse_embeddings(s), ("checksum differs",), "refused"),
        ("one bit flipped in embeddings.npy", flipped, ("embeddings.npy",), "refused"),
        ("format_version 1", lambda i, s: rewrite_manifest(s, lambda m: m.update(format_version=1)),
         ("rebuild the index",), "refused"),
        ("resealed truncated embeddings.npy", lambda i, s: truncated(i, s, "embeddings.npy"), ("embeddings.npy",),
         "refused"),
        ("resealed truncated bm25_indptr.npy", lambda i, s: truncated(i, s, "sparse/bm25_indptr.npy"),
         ("sparse", "BM25 index"), "refused"),  # the message names the folder, not the file
        ("resealed garbage line in chunks.jsonl", jsonl_garbage, ("chunks.jsonl",), "refused"),
        ("resealed pickled object array as dup_of.npy", object_npy, ("dup_of.npy",), "refused"),
        ("manifest.json a named pipe", manifest_fifo, ("manifest.json", "pipe"), "refused"),
        ("CURRENT with only the name", lambda i, s: pointer(i, s, "name-only"), ("manifest-sha256",), "refused"),
    ]
    for how, words in (("fifo", ("CURRENT", "pipe")), ("dev-zero", ("CURRENT", "symbolic link")),
                       ("outside-link", ("CURRENT", "symbolic link")), ("directory", ("CURRENT",)),
                       ("invalid-utf8", ("CURRENT",)), ("garbage", ("CURRENT",)), ("traversal", ("CURRENT",)),
                       ("huge", ("CURRENT",))):
        cases.append((f"CURRENT {how}", lambda i, s, how=how: pointer(i, s, how), words, "refused"))
    for what in ("snapshot", "snapshots", "sparse", "manifest", "file"):
        cases.append((f"{what} a symbolic link", lambda i, s, what=what: linked(i, s, what), ("symbolic link",),
                      "refused"))
    cases += [
        ("resealed reversed embeddings", lambda i, s: edit_npy(s, "embeddings.npy",
                                                               lambda a: np.ascontiguousarray(a[::-1])),
         ("index-content-mismatch", "stored vector is not its text's"), "doctor"),
        ("resealed shuffled vocabulary", lambda i, s: vocab(i, s, "reverse"),
         ("index-content-mismatch", "BM25 postings are not its text's tokens"), "doctor"),
        ("same-length text replaced, keyed seal", lambda i, s: replace_text_same_length(s), ("seal does not match",),
         "sealed"),
        ("an unsealed index opened with a key", lambda i, s: None, ("not sealed",), "keyed"),
    ]
    return cases


def run_index(tmp: Path) -> Tally:
    from fixtures.tamper import copy_index
    from hanrag.index import store

    t = Tally("index")
    w = Worker(tmp, warm=True)
    key = {"HANRAG_INDEX_KEY": "correct horse battery staple"}
    try:
        base, sealed, old = tmp / "base" / "index", tmp / "sealed" / "index", tmp / "old" / "index"
        for path, job in ((base, {}), (sealed, {"env": key}), (old, {"sizes": [3, 4]})):
            status, res, log, _ = w.call({"op": "build_chunks", "index": str(path), **job}, 300)
            if status != "ok" or res.get("traceback"):
                t.case(f"build {path.parent.name}", tb=res.get("traceback") or status)
                return t
        for n, (name, corrupt, words, kind) in enumerate(index_cases()):
            index, snap = copy_index(sealed if kind == "sealed" else base, tmp / f"case-{n}" / "index")
            corrupt(index, snap)
            env = key if kind in ("sealed", "keyed") else {}
            status, res, log, secs = w.call({"op": "open", "index": str(index), "env": env})
            if status != "ok":
                t.case(f"open: {name}", **{status: f"open_snapshot {status}"})
            else:
                msg = res.get("refused")
                if kind == "doctor":
                    wrong = None if "rows" in res else f"refused at open: {msg}"
                elif msg is None:
                    wrong = "opened and served" if "rows" in res else None
                else:
                    missing = [x for x in words if x not in msg]
                    wrong = f"refusal lacks {missing}: {msg[:200]}" if missing or "\n" in msg else None
                t.case(f"open: {name}", tb=_tb(res, log), wrong=wrong)
            if kind != "doctor":
                cli_case(t, w, f"search: {name}", ["search", str(index), "파드 재시작", "--no-server"], env=env,
                         check=lambda r, words=words: one_line_error(r, *words))

            def doctor_check(res: dict, words: tuple[str, ...] = words, kind: str = kind) -> str | None:
                if res["exit"] != 1:
                    return f"doctor exit {res['exit']} (ok?): {res['stdout'][:300]!r}"
                problems = json.loads(res["stdout"])["problems"]
                if kind == "doctor":
                    code, text = words
                    hit = [p for p in problems if p["code"] == code and text in p["message"]]
                    return None if hit else f"no {code} naming {text!r}: {problems[:3]}"
                first = problems[0]
                if first["code"] != "index-unreadable" or any(x not in first["message"] for x in words):
                    return f"first problem {first['code']}: {first['message'][:200]!r} (wanted {words})"
                return None

            if "graph" in name:  # once a segfault only in a fresh process (usearch imported before onnxruntime)
                label = f"doctor (fresh process): {name}"
                try:
                    t0 = time.monotonic()
                    out = _run([*HANRAG, "doctor", str(index), "--json"], 120, cwd=tmp)
                    secs = time.monotonic() - t0
                    res = {"exit": out.returncode, "stdout": out.stdout, "stderr": out.stderr}
                    if out.returncode < 0:
                        t.case(label, crash=f"hanrag doctor {index} --json: killed by signal {-out.returncode}")
                    else:
                        tb = _tb(res, "")
                        t.case(label, tb=tb, wrong=None if tb else doctor_check(res),
                               hang=f"{secs:.0f} s" if secs > HANG_S else None)
                except subprocess.TimeoutExpired:
                    t.case(label, hang=f"hanrag doctor {index} --json ran past 120 s")
            else:
                cli_case(t, w, f"doctor: {name}", ["doctor", str(index), "--json"], env=env, check=doctor_check)
            if (index / store.POINTER).is_fifo():
                (index / store.POINTER).unlink()
            _rmtree(index.parent)
        # an older snapshot's file a named pipe: doctor reports it, the published snapshot still serves
        snaps = store.list_snapshots(old)
        victim = store.snapshots_dir(old) / snaps[0] / "chunks.jsonl"
        victim.unlink()
        os.mkfifo(victim)
        status, res, log, _ = w.call({"op": "open", "index": str(old)})
        t.case("open: older snapshot's file a pipe", **({status: status} if status != "ok" else
                                                        {"wrong": None if "rows" in res else str(res)[:200]}))

        def old_check(res: dict) -> str | None:
            problems = json.loads(res["stdout"])["problems"]
            hit = [p for p in problems if p["code"] == "old-snapshot-corrupt" and "pipe" in p["message"]]
            return None if hit else f"no old-snapshot-corrupt naming the pipe: {problems[:3]}"

        cli_case(t, w, "doctor: older snapshot's file a pipe", ["doctor", str(old), "--json"], check=old_check)
        t.notes.append("a same-length text replacement with every checksum recomputed is served without a key: "
                       "what the docs say checksums protect against (accidents); the keyed seal refuses it")
    finally:
        w.close()
    return t


# ----------------------------------------------------------------------------------------------- relay
def run_relay(stage: Stage, texts: list[str], n_random: int, seed: int) -> Tally:
    import httpx

    t = Tally("relay")
    srv = stage.start()
    if srv is None:
        t.case("server start", wrong=stage.error)
        return t
    tmp = stage.tmp / "relay"
    tmp.mkdir(exist_ok=True)
    configs = {
        "deep-array": "[search]\ndiversity_factors = " + "[" * 100_000 + "]" * 100_000 + "\n",
        "deep-tables": "[search]\nrerank = " + "{a = " * 20_000 + "1" + "}" * 20_000 + "\n",
        "bad-toml": "[search\nrrf_k = = 1\n",
        "nan": "[search]\nrrf_k = nan\n",
    }
    paths: dict[str, Path] = {}
    for name, text in configs.items():
        paths[name] = tmp / f"{name}.toml"
        paths[name].write_text(text, encoding="utf-8")
    paths["big"] = tmp / "big.toml"
    with paths["big"].open("wb") as fh:
        fh.truncate(64 * 1024 * 1024)  # sparse: 64 MiB that cost no disk
    paths["fifo"] = tmp / "pipe.toml"
    os.mkfifo(paths["fifo"])
    paths["binary"] = tmp / "binary.toml"
    paths["binary"].write_bytes(bytes(range(256)) * 64)
    other = stage.tmp / "other-index"
    idx, cfg = str(stage.index), str(stage.config)
    ok, relay_it = {200}, {409, 413}  # 409: the client runs it and reports the problem; 413: over max_body_bytes

    def body(args: list[str], config: str | None = cfg, **extra: Any) -> dict:
        argv = [idx, *args] + (["--config", config] if config else [])
        return {"argv": argv, "cwd": str(stage.config.parent), "env": {}, "terminal": {"tty": False}, **extra}

    def shows(text: str) -> Callable[[httpx.Response], str | None]:
        def check(r: httpx.Response) -> str | None:
            out = r.json().get("stdout", "")
            if "\x1b]" in out:
                return "a terminal escape (a planted link) in the output"
            return None if text in out else f"{text!r} not in the output"
        return check

    cases: list[tuple[str, Any, set[int], Callable[[httpx.Response], str | None] | None]] = [
        ("plain search", body(["zebracorn"]), ok, shows("[/]")),
        ("colour terminal", {**body(["zebracorn", "--explain"]), "env": {"FORCE_COLOR": "1", "TERM": "xterm-256color"},
                             "terminal": {"tty": True, "width": 200, "height": 50}}, ok, shows("[/]")),
        ("--json", body(["zebracorn", "--json"]), ok, lambda r: None if json.loads(r.json()["stdout"])["hits"]
         else "no hits"),
        ("20,000-character query", body(["가" * 20_000]), relay_it, None),
        # a query byte that is not UTF-8 reaches Python as a lone surrogate (U+DCxx): answered or left to the
        # client (409), never a 500 or a logged traceback
        ("a non-UTF-8 byte in a Korean query", body(["\udcff롤백"]), ok | relay_it, None),
        ("a non-UTF-8 byte in a query, --json", body(["\udcffzebracorn", "--json"]), ok | relay_it, None),
        ("30,000-character --source glob", body(["zebracorn", "--source", "*a" * 15_000]), relay_it, None),
        ("--top-k 1000", body(["zebracorn", "--top-k", "1000"]), relay_it, None),
        ("--top-k 10**30", body(["zebracorn", "--top-k", str(10**30)]), relay_it, None),
        ("--top-k 0", body(["zebracorn", "--top-k", "0"]), relay_it, None),
        ("--top-k -1", body(["zebracorn", "--top-k", "-1"]), relay_it, None),
        ("--tier 99999999999999999999", body(["zebracorn", "--tier", "99999999999999999999"]), relay_it, None),
        ("--tier 2**63", body(["zebracorn", "--tier", str(2**63)]), relay_it, None),
        ("--tier -1", body(["zebracorn", "--tier", "-1"]), relay_it, None),
        ("5,000-character --label", body(["zebracorn", "--label", "x" * 5000]), relay_it, None),
        ("200 --label options", body(["zebracorn", *["--label", "x"] * 120]), relay_it | {422}, None),
        ("--mode bogus", body(["zebracorn", "--mode", "bogus"]), relay_it, None),
        ("config nested 100,000 levels", body(["zebracorn"], str(paths["deep-array"])), relay_it, None),
        ("config of 20,000 nested tables", body(["zebracorn"], str(paths["deep-tables"])), relay_it, None),
        ("variable nested 5,000 levels", {**body(["zebracorn"]), "env": {
            "HANRAG_SEARCH__DIVERSITY_FACTORS": "[" * 5000 + "]" * 5000}}, relay_it, None),
        ("variable out of range", {**body(["zebracorn"]), "env": {"HANRAG_SEARCH__RRF_K": "nan"}}, relay_it, None),
        ("64 MiB config", body(["zebracorn"], str(paths["big"])), relay_it, None),
        ("a FIFO as config", body(["zebracorn"], str(paths["fifo"])), relay_it, None),
        ("/dev/zero as config", body(["zebracorn"], "/dev/zero"), relay_it, None),
        ("/dev/urandom as config", body(["zebracorn"], "/dev/urandom"), relay_it, None),
        ("/proc/self/mem as config", body(["zebracorn"], "/proc/self/mem"), relay_it, None),
        ("a folder as config", body(["zebracorn"], "/"), relay_it, None),
        ("binary config", body(["zebracorn"], str(paths["binary"])), relay_it, None),
        ("malformed TOML", body(["zebracorn"], str(paths["bad-toml"])), relay_it, None),
        ("nan in config", body(["zebracorn"], str(paths["nan"])), relay_it, None),
        ("missing config", body(["zebracorn"], str(tmp / "nope.toml")), relay_it, None),
        ("another index", {**body(["zebracorn"]), "argv": [str(other), "zebracorn"]}, relay_it, None),
        ("index /dev/zero", {**body(["zebracorn"]), "argv": ["/dev/zero", "zebracorn"]}, relay_it, None),
        ("--help", body(["--help"]), relay_it | ok, None),
        ("no arguments", {**body([]), "argv": []}, relay_it | {422}, None),
        ("257 arguments", {**body([]), "argv": [idx, *["x"] * 256]}, {422}, None),
        ("cwd of 5,000 characters", {**body(["zebracorn"]), "cwd": "/" + "a" * 5000}, {422}, None),
        ("relative paths from a missing cwd", {**body(["zebracorn"]), "argv": ["index", "zebracorn"],
                                                "cwd": "/nonexistent"}, relay_it, None),
        ("terminal 10**9 wide", {**body(["zebracorn"]), "terminal": {"tty": True, "width": 10**9}}, {422}, None),
        ("argv not a list", {**body([]), "argv": "zebracorn"}, {422}, None),
        ("unknown field", {**body(["zebracorn"]), "extra": 1}, {422}, None),
        ("2,000 variables", {**body(["zebracorn"]), "env": {f"HANRAG_X{i}": "y" * 100 for i in range(2000)}},
         relay_it | ok | {413, 422}, None),
    ]
    rng = random.Random(seed)
    options = [("--top-k", lambda: str(rng.choice([1, 5, 100, 101, 0, -1, 2**63, 10**40]))),
               ("--mode", lambda: rng.choice(["bm25", "dense", "hybrid", "", "x" * 100])),
               ("--lang", lambda: rng.choice(["ko", "zh", "en", "xx", ""])),
               ("--tier", lambda: str(rng.choice([0, 1, 99, 100, -1, 2**63, 10**30]))),
               ("--source", lambda: rng.choice(["*.md", "**", "[", "*" * rng.randint(1, 3000), "a" * 600])),
               ("--label", lambda: rng.choice(texts)[:300]), ("--provenance", lambda: rng.choice(["human", "x"])),
               ("--explain", None), ("--json", None), ("--backend", lambda: rng.choice(["embedded", "milvus", "x"]))]
    for k in range(n_random):
        args = [rng.choice(texts) or "q"]
        for _ in range(rng.randint(0, 4)):
            opt, val = rng.choice(options)
            args += [opt] if val is None else [opt, val()]
        if rng.random() < 0.2:
            rng.shuffle(args)
        cases.append((f"generated argv {k}: {args!r:.80}", body(args), ok | relay_it, None))
    pos = srv.log_pos()
    counted = 0
    with httpx.Client(timeout=HANG_S + 5) as client:
        for name, data, want, check in cases:
            p = srv.log_pos()
            t0 = time.monotonic()
            try:
                try:  # as httpx's json= sends it (UTF-8), unless a lone surrogate needs the \udxxx escape
                    content = json.dumps(data, ensure_ascii=False).encode("utf-8")
                except UnicodeEncodeError:
                    content = json.dumps(data).encode("ascii")
                r = client.post(srv.url + "/cli/search", content=content, headers={"content-type": "application/json"})
            except httpx.TimeoutException:
                t.case(name, hang=f"POST /cli/search {content[:200]!r}: no answer in {HANG_S + 5:.0f} s")
                continue
            except httpx.TransportError as exc:
                t.case(name, crash=f"{type(exc).__name__}; server rc={srv.proc.poll()}")
                if srv.proc.poll() is not None:
                    break
                continue
            secs = time.monotonic() - t0
            t.timed(name, secs)
            if r.status_code >= 500 or r.status_code == 409:
                time.sleep(0.3)  # the log line of a failure can follow the answer
            log = srv.log_since(p)
            tb = log[log.index("Traceback"):][-300:] if "Traceback" in log else None
            counted += log.count("Traceback")
            five = f"{r.status_code}: {r.text[:200]}" if r.status_code >= 500 else None
            wrong = None
            if not five and r.status_code not in want:
                wrong = f"{r.status_code} (wanted {sorted(want)}): {r.text[:200]}"
            elif r.status_code == 200 and check is not None:
                wrong = check(r)
            if secs > 5 and not wrong:  # the relay keeps the server's limits: the tests hold it to 5 s
                wrong = f"took {secs:.1f} s"
            t.case(name, tb=tb and f"POST /cli/search {json.dumps(data)[:200]}: {tb}", fivexx=five, wrong=wrong,
                   hang=f"{secs:.0f} s" if secs > HANG_S else None)
    os.close(os.open(paths["fifo"], os.O_RDWR | os.O_NONBLOCK))  # release any reader (none should wait)
    _server_log(t, srv, pos, counted)
    return t


# ----------------------------------------------------------------------------------------------- config
def config_keys() -> list[tuple[str, str, Any]]:
    """(table, key, default) of every scalar or list setting, [search.rerank]'s included."""
    from hanrag.config import Config

    out = []
    cfg = Config()
    for section in dataclasses.fields(Config):
        sub = getattr(cfg, section.name)
        if not dataclasses.is_dataclass(sub):
            continue
        tables = [(section.name, sub)] + [(f"{section.name}.{f.name}", getattr(sub, f.name))
                                          for f in dataclasses.fields(sub)
                                          if dataclasses.is_dataclass(getattr(sub, f.name))]
        for table, obj in tables:
            for f in dataclasses.fields(obj):
                value = getattr(obj, f.name)
                if not dataclasses.is_dataclass(value):
                    out.append((table, f.name, value))
    return out


HOSTILE_VALUES: list[Any] = [-1, 0, 1, 2**31, 2**63 - 1, 2**63, 10**30, -(2**63) - 1, math.nan, math.inf, -math.inf,
                             -0.0, 1e308, 5e-324, "", "x" * 5000, "^(a+)+$", "(\\w+\\s?)*$", "\u0000", "[/]", True, [],
                             [[[[]]]], [1e308] * 3, {}, {"a": 2**63}, {"": ""}, "\u202e\ufdfa" * 100]


def run_config(tmp: Path, n_random: int, seed: int) -> Tally:
    from fixtures.hostile import BAD_VALUES
    from fixtures.server import TEST_CONFIG

    t = Tally("config")
    home = tmp / "cfg-home"  # the worker's folder: a relative path in a generated value lands here
    home.mkdir()
    corpus = home / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text("---\nsource: https://example.org/a\n---\n# 롤백\n\n"
                                 "배포 롤백은 kubectl rollout undo로 한다.\n" + "a" * 40 + "!\n", encoding="utf-8")
    w = Worker(home, warm=True)
    try:
        index = home / "index"
        cli_case(t, w, "build the config surface's index", ["build", str(corpus), "--index", str(index), "-q"],
                 limit=300, check=lambda r: None if r["exit"] == 0 else f"exit {r['exit']}: {r['stderr'][:200]}")
        edge_values = [("chunking", "chunk_size", 2**63 - 1), ("chunking", "chunk_size", 10**26),
                       ("corpus", "max_file_bytes", 10**26), ("corpus", "default_tier", 10**30),
                       ("corpus", "tiers", {"docs": 2**63}), ("embedder", "threads", 100_000),
                       ("embedder", "batch_size", 10**12), ("server", "max_body_bytes", 10**20),
                       ("server", "read_timeout_s", 1e300), ("confluence", "overlap_s", 10**30),
                       ("corpus", "source_pattern", "^(a+)+$"), ("corpus", "source_pattern", r"(\w+\s?)*$")]
        n = 0

        def cfg_file(text: str | bytes) -> Path:
            nonlocal n
            n += 1
            p = home / f"c{n}.toml"
            p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
            return p

        def error_or_run(res: dict) -> str | None:
            """A run (exit 0 or 1) or one error line; anything else (a usage error, a blank exit) is wrong."""
            if res["exit"] in (0, 1):
                return None
            return one_line_error(res)

        # the known bad values: each refused in one line naming the key, by lint (config load) and doctor
        for section, key, value in [*BAD_VALUES, *edge_values]:
            p = cfg_file(_config_text([(section, key, value)]))
            for cmd in (["lint", str(corpus)], ["doctor", str(index), "--json"]):
                cli_case(t, w, f"{cmd[0]} {section}.{key} = {str(value)[:30]}", [*cmd, "-c", str(p)],
                         check=lambda r, s=section, k=key: one_line_error(r, f"{s}.{k}"))
        deep = {
            "array nested 5,000 levels": "[search]\ndiversity_factors = " + "[" * 5000 + "]" * 5000 + "\n",
            "array nested 100,000 levels": "[search]\ndiversity_factors = " + "[" * 100_000 + "]" * 100_000 + "\n",
            "20,000 nested inline tables": "[search]\nrerank = " + "{a = " * 20_000 + "1" + "}" * 20_000 + "\n",
            "400 nested table headers": "".join(f"[{'.'.join(['t'] * i)}]\n" for i in range(1, 400)),
            "a config over 256 KiB": "# " + "x" * 300_000 + "\n",
            "a 200 KB string": '[confluence]\nurl = "' + "x" * 200_000 + '"\n',
            "invalid UTF-8": b"[search]\nrrf_k = 60\n# \xff\xfe\x80\n",
            "a NUL byte": b"[search]\x00\nrrf_k = 60\n",
            "binary": bytes(range(256)) * 64,
            "unknown sections and keys": "[nope]\nx = 1\n[search]\nnope = 2\n",
            "a table where a value goes": "[search]\nrrf_k = {a = 1}\n",
            "a string where a table goes": 'search = "x"\n',
            "a fine config": TEST_CONFIG,
        }
        for name, text in deep.items():
            p = cfg_file(text)
            for cmd in (["lint", str(corpus)], ["search", str(index), "롤백", "--no-server"]):
                cli_case(t, w, f"{cmd[0]}: {name}", [*cmd, "-c", str(p)], check=error_or_run)
        # the CLI's own limits (tests/hostile/test_edges.py) and a query byte that is not UTF-8 (a lone surrogate)
        for name, extra, words in (("--top-k 1000", ["--top-k", "1000"], ("--top-k",)),
                                   ("a 30,000-character glob", ["--source", "*a" * 15_000], ("--source",)),
                                   ("--tier 99999999999999999999", ["--tier", "99999999999999999999"], ("--tier",)),
                                   ("--tier 100", ["--tier", "100"], ("--tier",))):
            cli_case(t, w, f"search {name}", ["search", str(index), "롤백", "--no-server", *extra],
                     check=lambda r, words=words: one_line_error(r, *words))
        cli_case(t, w, "search a 20,000-character query", ["search", str(index), "가" * 20_000, "--no-server"],
                 check=lambda r: one_line_error(r))
        # real processes: the byte reaches argv as U+DCFF, and stdout writes it back as the terminal's locale allows
        for query, extra in (("\udcff롤백", []), ("롤백\udcff", ["--json"]), ("\udcffrollback", ["--json"])):
            label = f"search {os.fsencode(query)!r} {' '.join(extra)} (a byte that is not UTF-8)"
            argv = [*HANRAG, "search", str(index), os.fsencode(query), "--no-server", *extra]
            try:
                t0 = time.monotonic()
                out = subprocess.run(argv, capture_output=True, timeout=120, env=ENV, cwd=home)
                secs = time.monotonic() - t0
                t.timed(label, secs)
                res = {"exit": out.returncode, "stdout": out.stdout.decode("utf-8", "replace"),
                       "stderr": out.stderr.decode("utf-8", "replace")}
                tb = _tb(res, "")
                t.case(label, tb=tb, crash=f"signal {-out.returncode}" if out.returncode < 0 else None,
                       hang=f"{secs:.0f} s" if secs > HANG_S else None,
                       wrong=None if tb or out.returncode == 0 else f"exit {out.returncode}: {res['stderr'][:200]!r}")
            except subprocess.TimeoutExpired:
                t.case(label, hang="past 120 s")
        fifo = home / "fifo.toml"
        os.mkfifo(fifo)
        big = home / "sparse.toml"
        with big.open("wb") as fh:
            fh.truncate(64 * 1024 * 1024)
        for name, path in (("a FIFO", fifo), ("/dev/zero", "/dev/zero"), ("/dev/urandom", "/dev/urandom"),
                           ("a folder", home), ("64 MiB sparse", big), ("/proc/self/mem", "/proc/self/mem")):
            cli_case(t, w, f"lint -c {name}", ["lint", str(corpus), "-c", str(path)], check=lambda r: one_line_error(r))
        env_cases = {
            "HANRAG_SEARCH__DIVERSITY_FACTORS": "[" * 5000 + "]" * 5000,
            "HANRAG_SERVER__PORT": "eighty",
            "HANRAG_CORPUS__TIERS": "{a = ",
            "HANRAG_EMBEDDER__THREADS": "100000",
            "HANRAG_CHUNKING__CHUNK_SIZE": str(10**26),
            "HANRAG_SEARCH__RULES": "[{bm25 = nan}]",
            "HANRAG_CORPUS__SOURCE_PATTERN": "^(a+)+$",
            "HANRAG_SEARCH__RRF_K": "1e999",
        }
        for var, raw in env_cases.items():
            for cmd in (["lint", str(corpus)], ["search", str(index), "롤백", "--no-server"]):
                cli_case(t, w, f"{cmd[0]} with {var}={raw[:20]}", cmd, env={var: raw},
                         check=lambda r, var=var: one_line_error(r, var))
        # generated: one to three hostile values for random keys, through lint, search and doctor
        rng = random.Random(seed)
        keys = config_keys()
        for k in range(n_random):
            entries = [(s, key, rng.choice(HOSTILE_VALUES)) for s, key, _ in rng.sample(keys, rng.randint(1, 3))]
            text = _config_text(entries)
            p = cfg_file(text)
            what = ", ".join(f"{s}.{key}={str(v)[:20]!r}" for s, key, v in entries)
            for cmd in (["lint", str(corpus)], ["search", str(index), "롤백", "--no-server"],
                        ["doctor", str(index)]):
                cli_case(t, w, f"generated {k} {cmd[0]}: {what}", [*cmd, "-c", str(p)], check=error_or_run)
    finally:
        w.close()
    return t


# ----------------------------------------------------------------------------------------------- slow clients
def run_slow(stage: Stage) -> Tally:
    import httpx

    from hanrag.config import Config

    t = Tally("slow")
    srv = stage.start()
    if srv is None:
        t.case("server start", wrong=stage.error)
        return t
    limits = Config().server
    rt, cap = limits.read_timeout_s, limits.max_connections
    pos = srv.log_pos()
    grace = rt + 5
    base_fds = srv.open_fds()

    def until_closed(sock: socket.socket, limit: float) -> tuple[bytes, float, bool]:
        t0 = time.monotonic()
        sock.settimeout(limit)
        data = b""
        try:
            while chunk := sock.recv(65536):
                data += chunk
        except TimeoutError:
            return data, time.monotonic() - t0, False
        except OSError:
            pass
        return data, time.monotonic() - t0, True

    def head_part() -> tuple[bytes, bytes | None]:
        return b"POST /search HTTP/1.1\r\nHost: localhost\r\nX-Slow: ", b"HTTP/1.1 408"

    def body_part() -> tuple[bytes, bytes | None]:
        return (b"POST /search HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\n\r\n{\"query\": ", b"HTTP/1.1 408")

    def idle() -> tuple[bytes, bytes | None]:
        return b"", None

    def probe(kind: str, make: Callable[[], tuple[bytes, bytes | None]], drip: bytes = b"") -> tuple[str, dict]:
        first, want = make()
        try:
            with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as sock:
                if kind == "kept-alive":
                    sock.sendall(b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    got = b""
                    while b"ready" not in got:
                        got += sock.recv(65536)
                    first, want = b"GET /health HTTP/1.1\r\nHost: loc", b"HTTP/1.1 408"
                sock.sendall(first)
                if drip:  # a byte every 0.5 s until the server closes (or HANG_S passes)
                    t0 = time.monotonic()
                    while time.monotonic() - t0 < HANG_S + 5:
                        r, _, _ = select.select([sock], [], [], 0.5)
                        if r:
                            break
                        try:
                            sock.sendall(drip)
                        except OSError:
                            break
                    data, _, closed = until_closed(sock, 5)
                    secs = time.monotonic() - t0
                else:
                    data, secs, closed = until_closed(sock, HANG_S + 5)
        except OSError as exc:
            return kind, {"error": f"{type(exc).__name__}: {exc}"}
        return kind, {"data": data[:300], "secs": secs, "closed": closed, "want": want}

    jobs: list[tuple[str, Callable[[], tuple[bytes, bytes | None]], bytes]] = (
        [("half-sent head", head_part, b"")] * 40 + [("trickled body", body_part, b"")] * 20
        + [("idle connection", idle, b"")] * 20 + [("slowloris head", head_part, b"a")] * 5
        + [("slowly dripped body", body_part, b" ")] * 5 + [("kept-alive, second head trickled", idle, b"")] * 5)
    with ThreadPoolExecutor(len(jobs) + 2) as pool:
        futures = [pool.submit(probe, "kept-alive" if k.startswith("kept") else k, m, d) for k, m, d in jobs]
        time.sleep(1.0)
        # a search among the held sockets is answered at once
        t0 = time.monotonic()
        try:
            r = httpx.post(srv.url + "/search", json={"query": "롤백", "top_k": 3}, timeout=HANG_S)
            secs = time.monotonic() - t0
            t.case(f"search among {len(jobs)} slow clients",
                   fivexx=f"{r.status_code}" if r.status_code >= 500 else None,
                   wrong=None if r.status_code == 200 and secs < 10 else f"{r.status_code} after {secs:.1f} s")
        except httpx.HTTPError as exc:
            t.case(f"search among {len(jobs)} slow clients", hang=f"{type(exc).__name__}")
        for (label, _, _), fut in zip(jobs, futures, strict=True):
            _, res = fut.result()
            if "error" in res:
                t.case(label, wrong=res["error"])
                continue
            data, secs, closed, want = res["data"], res["secs"], res["closed"], res["want"]
            if not closed:
                t.case(label, hang=f"held open past {HANG_S + 5:.0f} s")
                continue
            five = data[:12].decode() if data.startswith(b"HTTP/1.1 5") else None
            wrong = None
            if want is not None and not data.startswith(want):
                wrong = f"answered {data[:60]!r}, wanted {want!r}"
            elif want is None and data:
                wrong = f"an idle connection got {data[:60]!r}"
            elif secs > grace:
                wrong = f"closed after {secs:.1f} s (read_timeout_s {rt})"
            t.case(label, fivexx=five, wrong=wrong)
    # past the cap: every connection over max_connections is answered 503 at once and closed (the design)
    held = []
    try:
        for _ in range(cap):
            held.append(socket.create_connection(("127.0.0.1", srv.port), timeout=10))
        time.sleep(0.5)
        for k in range(5):
            with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as extra:
                data, secs, closed = until_closed(extra, 10)
            ok = data.startswith(b"HTTP/1.1 503") and b"max_connections" in data and secs < 2
            t.case(f"connection {cap + k + 1} of {cap}", wrong=None if ok else f"got {data[:80]!r} after {secs:.1f} s")
        t.notes.append(f"connections past server.max_connections ({cap}) are answered 503 by design (not counted)")
    except OSError as exc:
        t.case("connections past the cap", wrong=f"{type(exc).__name__}: {exc}")
    finally:
        for sock in held:
            sock.close()
    time.sleep(1.0)
    try:
        ok = httpx.get(srv.url + "/health", timeout=10).status_code == 200
    except httpx.HTTPError:
        ok = False
    t.case("server answers after the slow clients", wrong=None if ok else "no 200 from /health",
           crash=f"server exited rc={srv.proc.returncode}" if srv.proc.poll() is not None else None)
    deadline = time.monotonic() + rt + 10
    while srv.open_fds() > base_fds + 5 and time.monotonic() < deadline:
        time.sleep(0.5)
    fds = srv.open_fds()
    t.case("server's open files back", wrong=None if fds <= base_fds + 5 else f"{base_fds} before, {fds} after")
    _server_log(t, srv, pos, 0)
    return t


# ----------------------------------------------------------------------------------------------- main
ALL = "chunker,tokenizers,embedder,search,http,corpora,index,relay,config,slow"


def main() -> None:
    global HANG_S
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer generated cases and smaller files (~4 min)")
    ap.add_argument("--n", type=int, help="generated texts for chunker and tokenizers (default 3000; quick 500)")
    ap.add_argument("--n-query", type=int, help="of them, queries for search and http (default 800; quick 300)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--max-run", type=int, default=1000, help="longest generated run (the server caps queries at 1000)")
    ap.add_argument("--hang-s", type=float, default=HANG_S, help="a case over this many seconds is a hang")
    ap.add_argument("--surfaces", default=ALL)
    ap.add_argument("--json", type=Path, help="write the table (and what it measured) to this file")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker()
        return
    HANG_S = args.hang_s
    n = args.n or (500 if args.quick else 3000)
    n_query = min(n, args.n_query or (300 if args.quick else 800))
    n_embed = min(n, 60 if args.quick else 240)
    n_relay = 20 if args.quick else 60
    n_config = 15 if args.quick else 40
    surfaces = args.surfaces.split(",")
    if unknown := set(surfaces) - set(ALL.split(",")):
        raise SystemExit(f"unknown surfaces: {sorted(unknown)} (known: {ALL})")
    measured = None
    if args.json:
        from evalsets import measured_what

        measured = measured_what()  # before the run: a commit made while it runs is not what it measured
    texts = generate(n, args.seed, args.max_run)
    print(f"fuzz report: {n:,} generated texts (seed {args.seed}, runs up to {args.max_run} chars), {n_query} of "
          f"them as queries, {n_embed} for the embedder, {n_relay} generated relay argvs, {n_config} generated "
          f"configs; "
          f"a hang is a case over {HANG_S:.0f} s")
    print(f"{'surface':<11} {'cases':>6} {'tracebacks':>10} {'crashes':>7} {'hangs':>5} {'5xx':>4} {'wrong':>5} "
          f"{'seconds':>8}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="hanrag-fuzz-"))
    stage = Stage(tmp)
    rows = []
    try:
        for surface in surfaces:
            t0 = time.perf_counter()
            try:
                if surface in ("chunker", "tokenizers"):
                    t = run_texts(surface, texts, 200, tmp)
                elif surface == "embedder":
                    t = run_texts(surface, texts[:n_embed], 16, tmp)
                elif surface == "search":
                    if stage.build():
                        t = run_texts(surface, texts[:n_query], 50, tmp,
                                      {"index": str(stage.index), "config": str(stage.config)})
                    else:
                        t = Tally(surface)
                        t.case("the index", wrong=stage.error)
                elif surface == "http":
                    t = run_http(texts[:n_query], stage)
                elif surface == "corpora":
                    t = run_corpora(tmp, args.quick)
                elif surface == "index":
                    t = run_index(tmp)
                elif surface == "relay":
                    t = run_relay(stage, texts, n_relay, args.seed)
                elif surface == "config":
                    t = run_config(tmp, n_config, args.seed)
                else:
                    t = run_slow(stage)
            except Exception as exc:  # the report's own failure is a failure of the surface, shown, not hidden
                t = Tally(surface)
                t.case("the surface itself", tb="".join(traceback.format_exception(exc))[-600:])
            t.seconds = time.perf_counter() - t0
            c = t.counts
            print(f"{surface:<11} {c['cases']:>6,} {c['tracebacks']:>10} {c['crashes']:>7} {c['hangs']:>5} "
                  f"{c['5xx']:>4} {c['wrong']:>5} {t.seconds:>8.1f}", flush=True)
            for s in t.samples:
                print(f"    {s}")
            if t.slowest[0] > 5:
                print(f"    slowest case: {t.slowest[0]:.1f} s ({t.slowest[1][:100]})")
            for note in t.notes:
                print(f"    note: {note}")
            rows.append(t.row())
    finally:
        stage.close()
        _rmtree(tmp)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        settings = {"quick": args.quick, "n": n, "n_query": n_query, "n_embed": n_embed, "n_relay": n_relay,
                    "n_config": n_config,
                    "seed": args.seed, "max_run": args.max_run, "hang_s": HANG_S, "surfaces": surfaces,
                    "embedder": dataclasses.asdict(_default_embedder()), "cores": os.cpu_count()}
        args.json.write_text(json.dumps({"measured": measured, "settings": settings, "surfaces": rows},
                                        ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")


def _default_embedder() -> Any:
    from hanrag.config import Config

    return Config().embedder


if __name__ == "__main__":
    main()
