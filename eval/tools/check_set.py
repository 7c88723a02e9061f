"""Check evaluation sets in the shared/eval layout (corpus.jsonl, queries.jsonl, qrels.tsv, optional meta.json).

    python3 eval/tools/check_set.py eval/tune_ko2en_react eval/tune_en2ko_react [more set folders ...]
    python3 eval/tools/check_set.py --all eval          # every subfolder holding a qrels.tsv

Errors (exit status 1): a JSONL line that does not parse or lacks a required field (corpus: doc_id, text;
queries: qid, text), a duplicate doc_id or qid, an empty passage, a qrels row that is not qid<TAB>doc_id<TAB>integer
(a first line "qid doc_id relevance" is a header), a duplicate (qid, doc_id) judgment, a judged doc_id missing from
the corpus, a judged qid missing from queries.jsonl, a query with no positive judgment, a query without a grade-2
judgment in a set graded 1/2 (the convention of the hand-written sets: 2 = the passage the query was written from;
sets with other scales, e.g. Cranfield's 1-4, get a note instead), and a meta.json whose counts or checksums disagree
with the files.
Passage lengths outside [--min-len, --max-len] (200-1200 characters, the passage rule of the hand-written sets) are
errors with --strict-len and are reported otherwise; so are duplicate query texts and passages without title/source.
Standard library only; reads each file once.
"""
from __future__ import annotations

import argparse
import collections
import csv
import hashlib
import json
import sys
from pathlib import Path


def read_jsonl(path: Path, required: tuple[str, ...], errors: list[str]) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(f"{path.name}:{n}: invalid JSON ({exc.msg})")
                continue
            if not isinstance(row, dict):
                errors.append(f"{path.name}:{n}: not a JSON object")
                continue
            missing = [k for k in required if not isinstance(row.get(k), str)]
            if missing:
                errors.append(f"{path.name}:{n}: missing or non-string field(s) {missing}")
                continue
            rows.append(row)
    return rows


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check(folder: Path, min_len: int, max_len: int, strict_len: bool) -> tuple[list[str], list[str], dict]:
    errors: list[str] = []
    notes: list[str] = []
    for name in ("corpus.jsonl", "queries.jsonl", "qrels.tsv"):
        if not (folder / name).is_file():
            return [f"missing {name}"], notes, {}
    docs = read_jsonl(folder / "corpus.jsonl", ("doc_id", "text"), errors)
    queries = read_jsonl(folder / "queries.jsonl", ("qid", "text"), errors)

    doc_ids = collections.Counter(d["doc_id"] for d in docs)
    dup_docs = [k for k, v in doc_ids.items() if v > 1]
    if dup_docs:
        errors.append(f"{len(dup_docs)} duplicate doc_id(s), e.g. {dup_docs[:3]}")
    empty = [d["doc_id"] for d in docs if not d["text"].strip()]
    if empty:
        errors.append(f"{len(empty)} empty passage(s), e.g. {empty[:3]}")
    no_meta = [d["doc_id"] for d in docs if not d.get("title") or not d.get("source")]
    if no_meta:
        notes.append(f"{len(no_meta)} passage(s) without title or source")
    lens = [len(d["text"]) for d in docs]
    out = [d["doc_id"] for d in docs if not min_len <= len(d["text"]) <= max_len]
    if out:
        msg = f"{len(out)} passage(s) outside {min_len}-{max_len} characters, e.g. {out[:3]}"
        (errors if strict_len else notes).append(msg)

    qids = collections.Counter(q["qid"] for q in queries)
    dup_q = [k for k, v in qids.items() if v > 1]
    if dup_q:
        errors.append(f"{len(dup_q)} duplicate qid(s), e.g. {dup_q[:3]}")
    texts = collections.Counter(q["text"].strip() for q in queries)
    dup_t = [k for k, v in texts.items() if v > 1]
    if dup_t:
        notes.append(f"{len(dup_t)} duplicate query text(s), e.g. {dup_t[:2]}")

    qrels: dict[str, dict[str, int]] = collections.defaultdict(dict)
    n_rows = 0
    with (folder / "qrels.tsv").open(encoding="utf-8", newline="") as fh:
        for n, row in enumerate(csv.reader(fh, delimiter="\t"), 1):
            if not row or (n == 1 and row[0] == "qid"):
                continue
            if len(row) != 3:
                errors.append(f"qrels.tsv:{n}: expected qid<TAB>doc_id<TAB>relevance, got {len(row)} column(s)")
                continue
            qid, did, rel = row
            try:
                grade = int(rel)
            except ValueError:
                errors.append(f"qrels.tsv:{n}: relevance {rel!r} is not an integer")
                continue
            if did in qrels[qid]:
                errors.append(f"qrels.tsv:{n}: duplicate judgment ({qid}, {did})")
            qrels[qid][did] = grade
            n_rows += 1
            if did not in doc_ids:
                errors.append(f"qrels.tsv:{n}: doc_id {did} not in corpus.jsonl")
            if qid not in qids:
                errors.append(f"qrels.tsv:{n}: qid {qid} not in queries.jsonl")
    grades = collections.Counter(g for j in qrels.values() for g in j.values())
    top = max(grades) if grades else 0
    no_pos = [q for q in qids if not any(g > 0 for g in qrels.get(q, {}).values())]
    if no_pos:
        errors.append(f"{len(no_pos)} quer(y/ies) with no positive judgment, e.g. {no_pos[:3]}")
    if top >= 2:
        no_top = [q for q in qids if top not in qrels.get(q, {}).values()]
        if no_top:
            msg = f"{len(no_top)} quer(y/ies) without a grade-{top} judgment, e.g. {no_top[:3]}"
            (errors if set(grades) <= {0, 1, 2} else notes).append(msg)

    meta_path = folder / "meta.json"
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            errors.append(f"meta.json: invalid JSON ({exc.msg})")
            meta = {}
        for key, value in (("n_docs", len(docs)), ("n_queries", len(queries)), ("n_qrels", n_rows)):
            if key in meta and meta[key] != value:
                errors.append(f"meta.json: {key} = {meta[key]}, files have {value}")
        for key, fname in (("corpus_jsonl", "corpus.jsonl"), ("queries_jsonl", "queries.jsonl"),
                           ("qrels_tsv", "qrels.tsv")):
            want = (meta.get("checksums") or {}).get(key)
            if want and want != sha256(folder / fname):
                errors.append(f"meta.json: checksum of {fname} differs from the file")
        if "purpose" in meta:
            notes.append(f"purpose: {meta['purpose'][:60]}")
    else:
        notes.append("no meta.json")

    per_q = [len(j) for j in qrels.values()]
    stats = dict(docs=len(docs), queries=len(queries), qrels=n_rows,
                 grades=dict(sorted(grades.items())),
                 len_min=min(lens) if lens else 0, len_max=max(lens) if lens else 0,
                 len_mean=round(sum(lens) / len(lens)) if lens else 0,
                 judged_per_query=round(sum(per_q) / len(per_q), 2) if per_q else 0)
    return errors, notes, stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sets", nargs="+", help="set folders (or, with --all, parent folders)")
    ap.add_argument("--all", action="store_true", help="check every subfolder holding a qrels.tsv")
    ap.add_argument("--min-len", type=int, default=200)
    ap.add_argument("--max-len", type=int, default=1200)
    ap.add_argument("--strict-len", action="store_true", help="passage lengths out of range are errors")
    args = ap.parse_args(argv)
    folders = []
    for s in args.sets:
        p = Path(s)
        folders += sorted(q.parent for q in p.glob("*/qrels.tsv")) if args.all else [p]
    failed = 0
    for folder in folders:
        errors, notes, stats = check(folder, args.min_len, args.max_len, args.strict_len)
        status = "FAIL" if errors else "ok"
        failed += bool(errors)
        print(f"{status:4} {folder}  " + "  ".join(f"{k}={v}" for k, v in stats.items()))
        for e in errors:
            print(f"     error: {e}")
        for n in notes:
            print(f"     note: {n}")
    print(f"{len(folders)} set(s) checked, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
