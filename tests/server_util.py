"""Shared by the server and browser tests: a small mixed corpus and a real uvicorn server in a thread."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import httpx
import uvicorn

# Tiny corpus: Korean saju + IT, Chinese, English; enough sections for neighbouring chunks.
CORPUS: dict[str, str] = {
    "0. 정리/사주/갑목_용신.md": """---
title: 갑목 인월 용신
source: https://example.org/saju/gapmok
labels: [saju]
---
# 갑목(甲木)

## 인월(寅月)의 갑목

인월에 태어난 갑목(甲木)은 목기가 왕성하지만 초봄의 추위가 남아 있다.
그래서 용신(用神)으로 먼저 병화(丙火)를 써서 따뜻하게 하고, 다음으로 계수(癸水)로 적신다.

## 기신

한습이 지나치면 나무가 자라지 못한다. 불이 없으면 갑목은 꽃을 피우지 못한다.

## 도화살

도화살(桃花煞)은 자오묘유(子午卯酉)가 있을 때 생기는 신살로, 인기와 매력을 뜻한다.
""",
    "0. 정리/IT/배포_롤백.md": """---
title: 쿠버네티스 배포와 롤백
source: https://example.org/it/k8s-rollback
labels: [it, k8s]
---
# 쿠버네티스 배포

## 롤링 업데이트

쿠버네티스 디플로이먼트는 롤링 업데이트로 파드를 하나씩 교체한다. 배포 중 준비 상태 검사가 실패하면 진행이 멈춘다.

## 롤백

배포에 문제가 생기면 kubectl rollout undo 명령으로 이전 리비전으로 롤백한다. 롤백 후에는 모니터링 지표를 확인한다.
""",
    "1. 자료/deployment-rollback.md": """---
title: Deployment rollback guide
source: https://example.org/en/rollback
labels: [it]
---
# Deployment rollback

## When to roll back

Roll back a deployment when error rates rise after a release. A rollback restores the previous revision.

## How

Run kubectl rollout undo, then watch the dashboards until latency and errors return to normal.
""",
    "1. 자료/甲木.md": """---
title: 甲木寅月
source: https://example.org/zh/jiamu
labels: [saju]
---
# 甲木

## 寅月

甲木生於寅月，木氣當令，然初春餘寒未盡。先取丙火以暖之，次取癸水以潤之。
""",
}

# added by the hot-swap test: a word no other document has
NEW_DOC = (
    "1. 자료/zebracorn.md",
    """---
title: Zebracorn notes
source: https://example.org/en/zebracorn
---
# Zebracorn

The zebracorn quarantine procedure isolates a failing node before the rollback starts.
""",
)

TEST_CONFIG = """
[chunking]
chunk_size = 160
overlap = 16
"""


def write_corpus(root: Path, docs: dict[str, str] | None = None) -> Path:
    for rel, text in (docs or CORPUS).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def build_test_index(root: Path, docs: dict[str, str] | None = None, config: str = TEST_CONFIG) -> dict:
    """A corpus (the sample one unless ``docs``), a config (TEST_CONFIG unless ``config``) and a built index under
    ``root``: what the server tests start from."""
    import hanrag
    from hanrag.config import load_config

    corpus = write_corpus(root / "corpus", docs)
    config_path = root / "hanrag.toml"
    config_path.write_text(config, encoding="utf-8")
    cfg = load_config(config_path, env=False)
    index_dir = root / "index"
    hanrag.build(corpus, index_dir, cfg, progress=False)
    return {"root": root, "corpus": corpus, "index_dir": index_dir, "config_path": config_path, "config": cfg}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ThreadServer:
    """A real uvicorn server on a loopback port, run in a daemon thread."""

    check_health = True  # on entry, a real GET /health that must succeed (off for a server still loading)

    def __init__(self, app, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name=f"uvicorn-{self.port}", daemon=True)

    def __enter__(self) -> ThreadServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start on port {self.port}")
            time.sleep(0.02)
        if self.check_health:  # the socket accepts: a real HTTP round trip
            httpx.get(self.url + "/health", timeout=10).raise_for_status()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


class SearchHammer:
    """Searches the server in a loop from a thread until stopped; every error or empty answer is recorded."""

    def __init__(self, url: str, queries: list[str]) -> None:
        self.url, self.queries = url, queries
        self.count = 0
        self.failures: list[str] = []
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> SearchHammer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._done.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=60) as hc:
            while not self._done.is_set():
                q = self.queries[self.count % len(self.queries)]
                try:
                    r = hc.post("/search", json={"query": q, "top_k": 5, "explain": True})
                    if r.status_code != 200 or not r.json()["hits"]:
                        self.failures.append(f"{q}: {r.status_code} {r.text[:200]}")
                except httpx.HTTPError as exc:
                    self.failures.append(f"{q}: {exc!r}")
                self.count += 1
