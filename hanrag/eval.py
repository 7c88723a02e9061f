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
