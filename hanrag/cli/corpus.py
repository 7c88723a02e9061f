"""``hanrag lint`` and ``hanrag chunk``: a corpus checked and cut into chunks, nothing built; and the findings
table every command that reads a corpus prints (build, demo, sync)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer

from hanrag.commands.common import ConfigOpt, JsonOpt, console, data, fail, load, print_json
from hanrag.fsutil import atomic_write_jsonl

SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def check_corpus_path(path: Path) -> None:
    if not path.exists():
        fail(f"{path}: no such file or folder",
             "give the corpus folder (`hanrag demo` alone runs on the bundled sample)")


def render_findings(findings: list | tuple, title: str = "findings") -> None:
    from rich.table import Table

    table = Table(title=data(title), show_lines=False)
    for name in ("severity", "code", "file", "message"):
        table.add_column(name, overflow="fold")
    for f in findings:
        style = SEVERITY_STYLE.get(f.severity, "")
        # Text, not markup: paths and messages may hold "[corpus]", "[/]" or backslashes
        where = data(f.path + (f":{f.line}" if f.line else ""))
        table.add_row(data(f.severity, style), data(f.code), where, data(f.message))
    console.print(table)


def lint(
    path: Annotated[Path, typer.Argument(help="corpus folder (or one file)")],
    json_out: JsonOpt = False,
    strict: Annotated[bool, typer.Option("--strict", help="exit 1 when any error is found")] = False,
    config: ConfigOpt = None,
) -> None:
    """Check a corpus against the rules (source cited, size, topic separators, AI drafts). Never edits files."""
    from hanrag.chunking import chunk_corpus
    from hanrag.pipeline import duplicate_findings
    from hanrag.validate import prepare_corpus

    cfg = load(config)
    check_corpus_path(path)
    prepared = prepare_corpus(path, cfg)
    chunks, chunk_findings = chunk_corpus(prepared.indexable, cfg.chunking)
    prepared = dataclasses.replace(
        prepared, findings=(*prepared.findings, *chunk_findings, *duplicate_findings(chunks, cfg)))
    counts = {s: sum(1 for f in prepared.findings if f.severity == s) for s in ("error", "warning", "info")}
    if json_out:
        print_json(
            {
                "documents": len(prepared.documents),
                "indexable": len(prepared.indexable),
                "excluded": [{"doc_id": d, "reason": r} for d, r in prepared.excluded],
                "counts": counts,
                "findings": [f.to_dict() for f in prepared.findings],
            }
        )
    else:
        render_findings(prepared.findings, title=f"hanrag lint {path}")
        console.print(
            f"{len(prepared.documents)} documents, {len(prepared.indexable)} indexable; "
            f"{counts['error']} errors, {counts['warning']} warnings, {counts['info']} info"
        )
    if strict and counts["error"]:
        raise typer.Exit(1)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    """Write rows as UTF-8 JSONL atomically (temp file + rename)."""
    atomic_write_jsonl(path, rows, mkdir=True)


def chunk(
    path: Annotated[Path, typer.Argument(help="corpus folder (or one file)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write (UTF-8, one chunk a line)")],
    config: ConfigOpt = None,
) -> None:
    """Cut the indexable documents of a corpus into chunks and write them as JSONL."""
    from hanrag.chunking import chunk_corpus
    from hanrag.validate import prepare_corpus

    cfg = load(config)
    check_corpus_path(path)
    prepared = prepare_corpus(path, cfg)
    chunks, chunk_findings = chunk_corpus(prepared.indexable, cfg.chunking)
    try:
        write_jsonl(out, [c.to_dict() for c in chunks])
    except OSError as exc:
        fail(f"{out}: cannot write: {exc.strerror or exc}", "choose a writable --out path")
    errors = sum(1 for f in (*prepared.findings, *chunk_findings) if f.severity == "error")
    console.print(data(
        f"{len(chunks)} chunks from {len(prepared.indexable)} of {len(prepared.documents)} documents → {out}"
        + (f" ({len(prepared.excluded)} excluded, {errors} errors: see `hanrag lint {path}`)" if prepared.excluded
           else "")
    ))
