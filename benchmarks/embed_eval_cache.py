"""Build every eval set's standalone index through the product path and embed its queries, filling the
machine-wide vector cache (``.cache/vectors``) that the quality scripts reuse, so they embed nothing.

Usage: python benchmarks/embed_eval_cache.py [SET ...]   (default: every shared and cross-script set)
"""

from __future__ import annotations

import sys
import time

from evalsets import CROSS_SETS, available, build, caching_embedder, eval_config, load


def main(names: list[str]) -> None:
    cfg = eval_config()
    emb = caching_embedder(cfg)
    for name in available(names):
        es = load(name)
        t = time.perf_counter()
        before = emb.embedded
        report = build(name, [es], cfg, emb)
        emb.encode_queries([q.text for q in es.queries])
        emb.save()
        print(f"{name}: {len(es.docs)} docs -> {report.chunks} chunks ({report.dedup.get('duplicates')} folded), "
              f"{len(es.queries)} queries, {emb.embedded - before} texts embedded in {time.perf_counter() - t:.0f}s",
              flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or [*CROSS_SETS, "xquad_en", "xquad_en2zh", "cranfield_en", "cmrc2018_zh_chunks",
                          "korquad1_ko_chunks"])
