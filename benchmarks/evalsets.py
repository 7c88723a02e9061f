"""Evaluation sets as a user's corpus: every quality figure runs the product's build and search path.

Each eval set's documents become :class:`hanrag.records.Document`s (doc id ``<set>/<doc id>``,
the set's source as citation) and go through :func:`hanrag.pipeline.build_from_documents`
(lint, chunking, dedup, snapshot) exactly like ``hanrag build``; searches go through ``Index``'s
searcher. A document's best chunk stands for it in the run. Vectors come from one machine-wide
cache (:class:`hanrag.embed.cache.CachingEmbedder`), so a rerun embeds nothing.

Sets:
* shared (``../shared/eval``): korquad1_ko_chunks, cmrc2018_zh_chunks, xquad_en, xquad_en2zh, cranfield_en;
* cross-script (``eval/`` in this repository, written for hanrag, see each README): ko2hanja, hanja2ko,
  ko2en_tech, en2ko_tech — held out from every fit;
* tuning (``eval/``): tune_ko2zpzq (Korean queries over 子平真诠评注), tune_ko_tech (Korean queries over
  Korean Kubernetes docs), tune_en2ko_tech (the same queries in English), tune_ko2en_react (Korean queries over
  English React docs) and tune_en2ko_react (English queries over Korean React docs), the same pairs over the Vue.js
  docs (tune_ko2en_vue, tune_en2ko_vue) and the TypeScript handbook (tune_ko2en_ts, tune_en2ko_ts), which fit.py
  may use.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hanrag.config import Config  # noqa: E402
from hanrag.eval import EvalSet, EvalTask, find_eval_root, load_eval_set  # noqa: E402
from hanrag.records import Document  # noqa: E402

SHARED_SETS = ("korquad1_ko_chunks", "cmrc2018_zh_chunks", "xquad_en", "xquad_en2zh", "cranfield_en")
CROSS_SETS = ("ko2hanja", "hanja2ko", "ko2en_tech", "en2ko_tech")
# TUNING data in eval/ (written after the held-out sets, from other texts): fit.py may choose on it
TUNE_SETS = ("tune_ko2zpzq", "tune_ko_tech", "tune_en2ko_tech", "tune_ko2en_react", "tune_en2ko_react",
             "tune_ko2en_vue", "tune_en2ko_vue", "tune_ko2en_ts", "tune_en2ko_ts")
# one collection with every corpus (xquad_en left out: its paragraphs are the English twins of xquad_en2zh's)
MIXED_SETS = ("korquad1_ko_chunks", "cmrc2018_zh_chunks", "xquad_en2zh", "cranfield_en", *CROSS_SETS)
REPO_EVAL = ROOT / "eval"
INDEX_ROOT = ROOT / ".cache" / "quality"
POOL_DIR = REPO_EVAL / "pooled"  # MIXED's pooled judgments (benchmarks/pool.py)


def set_folder(name: str) -> Path:
    return REPO_EVAL / name if (REPO_EVAL / name).is_dir() else find_eval_root() / name


def available(names: tuple[str, ...] | list[str]) -> list[str]:
    out = []
    for n in names:
        try:
            if (set_folder(n) / "qrels.tsv").is_file():
                out.append(n)
        except FileNotFoundError:
            pass
    return out


def load(name: str) -> EvalSet:
    return load_eval_set(set_folder(name))


def first_queries(es: EvalSet, n: int) -> EvalSet:
    """``es`` with its first ``n`` queries and only their judgments (0 = all): an unrun judged query would count 0."""
    if not n:
        return es
    qs = es.queries[:n]
    return type(es)(es.name, es.docs, qs, {q.qid: es.qrels[q.qid] for q in qs if q.qid in es.qrels})


def documents(es: EvalSet) -> list[Document]:
    out = []
    for d in es.docs:
        source = d.source if d.source.startswith("http") else f"eval set {es.name}: {d.source or d.doc_id}"
        out.append(Document(doc_id=f"{es.name}/{d.doc_id}", path=f"{es.name}/{d.doc_id}", title=d.title,
                            text=d.text, sources=(source,)))
    return out


def eval_config(**search_changes) -> Config:
    cfg = Config()
    for key, value in search_changes.items():
        setattr(cfg.search, key, value)
    return cfg


def build(name: str, sets: list[EvalSet], cfg: Config, embedder, *, dedup: bool = True):
    """Build (incrementally) the index ``INDEX_ROOT/name`` over ``sets`` through the product path."""
    from hanrag.pipeline import build_from_documents

    cfg = copy.deepcopy(cfg)
    cfg.index.dedup = dedup
    docs = [d for es in sets for d in documents(es)]
    return build_from_documents(docs, INDEX_ROOT / name, cfg, embedder=embedder)


def tasks(sets: list[EvalSet]) -> list[EvalTask]:
    return [EvalTask(es.name, es.queries, es.qrels, prefix=f"{es.name}/") for es in sets]


def caching_embedder(cfg: Config | None = None):
    from hanrag.embed import load_embedder
    from hanrag.embed.cache import caching

    return caching(load_embedder((cfg or Config()).embedder))


def measured_what() -> dict[str, object]:
    """The commit the figures measured (and whether the tree had uncommitted changes) and when."""
    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=Path(__file__).resolve().parent, capture_output=True,
                              text=True).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "uncommitted_changes": bool(git("status", "--porcelain")),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def read_pool(set_name: str) -> dict[tuple[str, str], dict]:
    """(qid, doc) -> entry of ``eval/pooled/pool-<set>.jsonl``: every passage pooled for judging so far, by any
    script or row (empty when there is none)."""
    path = POOL_DIR / f"pool-{set_name}.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
    return {(e["qid"], e["doc"]): e for e in map(json.loads, lines)}


def write_pool(set_name: str, pool: dict[tuple[str, str], dict]) -> Path:
    """Replace ``eval/pooled/pool-<set>.jsonl`` with ``pool`` whole or not at all (it holds judged work: a pool
    joins the passages pooled before, :func:`read_pool`, and never drops them)."""
    POOL_DIR.mkdir(parents=True, exist_ok=True)
    path = POOL_DIR / f"pool-{set_name}.jsonl"
    tmp = path.with_suffix(".jsonl.tmp")
    tmp.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in pool.values()), encoding="utf-8")
    tmp.replace(path)
    return path


def pooled_judgments(set_name: str) -> dict[str, dict[str, int]]:
    """qid -> doc -> grade read from ``eval/pooled/<set>.tsv`` (empty when there is none)."""
    path = POOL_DIR / f"{set_name}.tsv"
    out: dict[str, dict[str, int]] = {}
    if not path.is_file():
        return out
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) < 4:
            raise ValueError(f"{path}:{n}: expected qid, doc, grade and reason separated by tabs")
        out.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return out


def fit_judgments(es: EvalSet) -> dict[str, dict[str, int]]:
    """qid -> doc -> grade as ``fit.py``'s records name passages (the id without any set prefix: ids are unique
    across the sets), the set's own judgments joined by its pooled ones (``eval/pooled/<set>.tsv``, which name a
    passage of another set ``other:<set>/<id>``); the set's own grade wins where both judge a passage."""
    out = {qid: {doc.rpartition("/")[2] if doc.startswith("other:") else doc: g for doc, g in docs.items()}
           for qid, docs in pooled_judgments(es.name).items()}
    for qid, docs in es.qrels.items():
        out.setdefault(qid, {}).update(docs)
    return out
