"""What ``embedder.cross_lingual_weight`` costs: the main encoder alone against the blend with USE multilingual v3.

In one run, rounds interleaved so machine load hits both alike, on the same texts (a fixed sample of the shared
corpora's chunk-sized passages and their queries), no vector cache:

* passages/s of the main encoder, of USE alone and of the blend (what a build embeds);
* one query at a time, as a search embeds it: p50 / p95 milliseconds, main against blend;
* loading: seconds to build USE (its 65 MB table) and the process's peak RSS before and after.

    python benchmarks/second_encoder_cost.py [--passages 400] [--queries 200] [--rounds 3] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

from evalsets import measured_what

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "eval"
SETS = ("korquad1_ko_chunks", "cmrc2018_zh_chunks", "cranfield_en", "xquad_en")


def sample(n: int, kind: str) -> list[str]:
    """``n`` texts spread over :data:`SETS` (every k-th line of each, the same on every run)."""
    out: list[str] = []
    per = max(1, n // len(SETS))
    for name in SETS:
        lines = (SHARED / name / f"{kind}.jsonl").read_text(encoding="utf-8").splitlines()
        step = max(1, len(lines) // per)
        out += [json.loads(line)["text"] for line in lines[::step][:per]]
    return out


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=int, default=400)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--weight", type=float, default=None, help="default: embedder.cross_lingual_weight's default")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    measured = measured_what()

    from hanrag.config import EmbedderConfig
    from hanrag.embed.blend import BlendedEmbedder
    from hanrag.embed.make import make_cross_lingual_embedder, make_main_embedder

    if args.weight is None:
        args.weight = EmbedderConfig().cross_lingual_weight
    cfg = EmbedderConfig(cross_lingual_weight=args.weight)
    main_enc = make_main_embedder(cfg)
    main_enc.encode_passages(["warm"])
    rss_before = peak_rss_mb()
    t = time.perf_counter()
    second = make_cross_lingual_embedder()
    load_s = time.perf_counter() - t
    rss_after = peak_rss_mb()
    blend = BlendedEmbedder(main_enc, second, args.weight)
    passages, queries = sample(args.passages, "corpus"), sample(args.queries, "queries")
    encoders = {"main": main_enc, "second": second, "blend": blend}
    rates: dict[str, list[float]] = {k: [] for k in encoders}
    latency: dict[str, list[float]] = {"main": [], "blend": []}
    for r in range(args.rounds):
        for name, enc in encoders.items():
            t = time.perf_counter()
            enc.encode_passages(passages)
            rates[name].append(len(passages) / (time.perf_counter() - t))
        for name in latency:
            enc = encoders[name]
            for q in queries:
                t = time.perf_counter()
                enc.encode_queries([q])
                latency[name].append((time.perf_counter() - t) * 1000)
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f} passages/s" for k, v in rates.items()), flush=True)

    def pct(xs: list[float], p: float) -> float:
        return round(sorted(xs)[min(len(xs) - 1, int(p * len(xs)))], 2)

    out = {
        **measured, "command": " ".join(sys.argv), "weight": args.weight,
        "texts": {"passages": len(passages), "queries": len(queries), "sets": list(SETS)},
        "passages_per_s": {k: round(statistics.median(v), 1) for k, v in rates.items()},
        "blend_over_main_time": round(statistics.median(rates["main"]) / statistics.median(rates["blend"]), 2),
        "query_ms": {k: {"p50": pct(v, .5), "p95": pct(v, .95)} for k, v in latency.items()},
        "second_encoder_load_s": round(load_s, 2),
        "peak_rss_mb": {"main_loaded": round(rss_before, 1), "with_second": round(rss_after, 1)},
    }
    print(json.dumps(out, indent=1, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
