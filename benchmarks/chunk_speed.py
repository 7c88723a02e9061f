"""Chunking throughput on the sample corpus, replicated in memory to at least 10 MB.

    python benchmarks/chunk_speed.py [--corpus the bundled sample] [--mb 10] [--repeat 3]

Prints MB/s (UTF-8 bytes of document text) and chunks/s for the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from hanrag.bundled import SAMPLE_CORPUS
from hanrag.chunking import chunk_documents
from hanrag.config import Config
from hanrag.sources import read_corpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=SAMPLE_CORPUS)
    parser.add_argument("--mb", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    cfg = Config()
    docs, _ = read_corpus(args.corpus, cfg)
    base_bytes = sum(len(d.text.encode("utf-8")) for d in docs)
    copies = max(1, int(args.mb * 1_000_000 // base_bytes) + 1)
    # distinct doc ids so chunk ids differ like in a real corpus
    corpus = [dataclasses.replace(d, doc_id=f"{i}/{d.doc_id}") for i in range(copies) for d in docs]
    total_bytes = base_bytes * copies
    best = float("inf")
    n_chunks = 0
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        n_chunks = len(chunk_documents(corpus, cfg.chunking))
        best = min(best, time.perf_counter() - t0)
    print(f"documents: {len(corpus)} ({len(docs)} x {copies}), text: {total_bytes / 1e6:.1f} MB, chunks: {n_chunks}")
    print(f"chunk_size={cfg.chunking.chunk_size} overlap={cfg.chunking.overlap}; best of {args.repeat}: {best:.2f} s")
    print(f"throughput: {total_bytes / 1e6 / best:.2f} MB/s, {n_chunks / best:,.0f} chunks/s")


if __name__ == "__main__":
    main()
