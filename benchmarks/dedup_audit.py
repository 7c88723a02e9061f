"""Near-duplicate audit: what dedup folds on real corpora, shown for a person to judge.

For every ../shared/eval corpus, the cross-script sets in eval/ and the bundled sample corpus:
chunks through the product path (lint + chunker), the folds at the configured threshold, the
distribution of verified pair similarities (to show where the threshold sits), 20 random folded
pairs side by side, and the time per 10k chunks with a linear extrapolation to 1M.

    python benchmarks/dedup_audit.py [--pairs 20] [--threshold 0.8] [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import textwrap
import time

import opencc
from evalsets import CROSS_SETS, SHARED_SETS, available, documents, load

from hanrag.bundled import SAMPLE_CONFIG, SAMPLE_CORPUS
from hanrag.chunking import chunk_document
from hanrag.config import Config, load_config
from hanrag.index.dedup import mark_duplicates
from hanrag.validate import prepare_corpus, prepare_documents

BINS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.01)


def corpora(cfg: Config):
    for name in available([*SHARED_SETS, "korquad1_ko", "cmrc2018_zh", *CROSS_SETS]):
        prepared = prepare_documents(documents(load(name)), [], cfg)
        yield name, [c for d in prepared.indexable for c in chunk_document(d, cfg.chunking)]
    sample_cfg = load_config(SAMPLE_CONFIG)  # the sample is ai-draft: included there
    prepared = prepare_corpus(SAMPLE_CORPUS, sample_cfg)
    yield "the bundled sample", [c for d in prepared.indexable for c in chunk_document(d, sample_cfg.chunking)]


def side_by_side(a: str, b: str, width: int = 58) -> str:
    left = textwrap.wrap(" ".join(a.split()), width)[:6]
    right = textwrap.wrap(" ".join(b.split()), width)[:6]
    rows = max(len(left), len(right))
    left += [""] * (rows - len(left))
    right += [""] * (rows - len(right))
    return "\n".join(f"    {x:<{width}} | {y}" for x, y in zip(left, right, strict=True))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=20)
    ap.add_argument("--threshold", type=float, default=Config().index.dedup_threshold)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    cfg = Config()
    t2s = opencc.OpenCC(cfg.text.opencc).convert
    rng = random.Random(args.seed)
    all_chunks = []
    print(f"threshold: Jaccard of character 5-grams >= {args.threshold}\n")
    print(f"{'corpus':<22} {'chunks':>7} {'folded':>7} {'groups':>7}   pairs >= .5 by Jaccard: "
          + " ".join(f"[{lo:.1f},{min(hi, 1):.1f})" for lo, hi in zip(BINS, BINS[1:], strict=False)))
    folded_pairs = []
    for name, chunks in corpora(cfg):
        all_chunks.extend(c for c in chunks)
        low = mark_duplicates(chunks, BINS[0], t2s=t2s)
        res = mark_duplicates(chunks, args.threshold, t2s=t2s)
        hist = [sum(lo <= p.jaccard < hi for p in low.pairs) for lo, hi in zip(BINS, BINS[1:], strict=False)]
        print(f"{name:<22} {len(chunks):>7} {res.duplicates:>7} {res.groups:>7}   "
              + " ".join(f"{h:>9}" for h in hist))
        folded_pairs.extend((name, chunks[p.dup], chunks[p.kept], p.jaccard) for p in res.pairs)
    print(f"\n{len(folded_pairs)} folded pairs in all; {min(args.pairs, len(folded_pairs))} at random "
          "(folded chunk | the kept chunk it folds into):")
    for name, dup, kept, j in rng.sample(folded_pairs, min(args.pairs, len(folded_pairs))):
        print(f"\n  [{name}] Jaccard {j:.2f}: {dup.path} -> {kept.path}")
        print(side_by_side(dup.text, kept.text))
    # timing: every corpus merged (distinct doc ids), then a 10x replica to check the growth is linear
    t = time.perf_counter()
    mark_duplicates(all_chunks, args.threshold, t2s=t2s)
    dt = time.perf_counter() - t
    n = len(all_chunks)
    per10k = dt / n * 10_000
    print(f"\ntime: {n} chunks in {dt:.1f}s = {per10k:.2f}s per 10k chunks; linear extrapolation to 1M: "
          f"{per10k * 100 / 60:.1f} min")


if __name__ == "__main__":
    main()
