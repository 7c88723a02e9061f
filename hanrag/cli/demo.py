"""``hanrag demo``: the main job on a corpus in one run (lint and chunk it, build the index, answer example
queries with explanations) and the commands to take it further; the bundled sample when no corpus is given."""

from __future__ import annotations

import dataclasses
import shlex
import shutil
import sys
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from hanrag.bundled import SAMPLE_CONFIG, SAMPLE_CORPUS
from hanrag.cli.corpus import check_corpus_path, render_findings
from hanrag.cli.index import interrupt_message
from hanrag.commands.common import (
    LEXICON_HINT,
    ConfigOpt,
    JsonOpt,
    clean,
    console,
    data,
    fail,
    load,
    open_index,
    plain,
    print_json,
)
from hanrag.commands.search import render_hits, rerank_errors
from hanrag.config import Config
from hanrag.records import Chunk

DEMO_QUERIES = ("갑목 인월 용신", "甲木 用神", "쿠버네티스 배포 롤백", "deployment rollback", "도화살", "五行相生",
                "who invented the Korean alphabet")


def demo(
    corpus: Annotated[Path | None, typer.Argument(
        help="corpus folder (default: the sample corpus bundled with hanrag)", show_default=False)] = None,
    index: Annotated[Path | None, typer.Option(
        "--index", "-i", help="index folder to build or update (default: index/demo for the sample, "
        "index/NAME for a corpus folder NAME)", show_default=False)] = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=20, help="hits shown per query")] = 3,
    query: Annotated[list[str] | None, typer.Option(
        "--query", help="query to run (repeatable; default: the sample's queries, or headings of your corpus)")] = None,
    json_out: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """The main job on a corpus: lint and chunk it, build the index, answer example queries with explanations."""
    from hanrag.embed import EmbedderError
    from hanrag.index.store import IndexBuildError
    from hanrag.lexicon import LexiconError
    from hanrag.pipeline import build_index

    sample_config = corpus is None and config is None
    if corpus is None:
        corpus = SAMPLE_CORPUS
        # the sample is tagged ai-draft throughout: its own config includes it (an explicit --config wins)
        config = config or SAMPLE_CONFIG
    if index is None:
        index = demo_index_dir(corpus)
    cfg = load(config)
    check_corpus_path(corpus)
    prepared, chunks, summary = demo_corpus(corpus, cfg)
    if not json_out:
        render_findings([f for f in prepared.findings if f.severity != "info" or f.code != "ai-draft"],
                        title=f"lint {corpus}")
        render_corpus_summary(summary)
        console.rule(plain(f"build {index}"))
    try:
        with interrupt_message(index):
            report = build_index(corpus, index, cfg, progress=not json_out, prepared=prepared)
    except LexiconError as exc:
        fail(str(exc), LEXICON_HINT)
        return
    except (EmbedderError, IndexBuildError, OSError) as exc:
        fail(str(exc), "check the [embedder] config and that the index folder is writable")
        return
    idx = open_index(index, cfg)
    # the bundled queries mean something only on the bundled corpus; elsewhere the corpus's own headings do
    queries = tuple(query or ()) or (DEMO_QUERIES if _is_sample(corpus) else example_queries(chunks))
    answers = []
    for q in queries:
        with rerank_errors():
            try:  # the plan as used, weak-lexical switch included
                res = idx.search_result(q, top_k=top_k, explain=True)
            except ValueError as exc:  # a --query past the limits (server.max_query_chars)
                fail(str(exc))
        answers.append((q, res.plan, res.hits))
    me = self_command()
    # the sample's config only lets its ai-draft files in: searching and serving the built index need none of it,
    # and a path into site-packages is no command to copy
    conf = f" --config {shlex.quote(str(config))}" if config and not sample_config else ""
    serve_cmd = f"{me} serve {shlex.quote(str(index))}{conf}" + (
        "" if sample_config else f" --corpus {shlex.quote(str(corpus))}")
    first = queries[0] if queries else "your question"
    search_cmd = f"{me} search {shlex.quote(str(index))} {shlex.quote(first)} --explain{conf}"
    if json_out:
        print_json({
            "corpus": summary,
            "build": report.to_dict(),
            "queries": [{"query": q, "plan": p.to_dict(), "hits": [h.to_dict() for h in hs]} for q, p, hs in answers],
            "serve": serve_cmd,
        })
        return
    for line in report.summary_lines():
        console.print(data(line, "bold yellow" if line.startswith("WARNING") else ""), highlight=False)
    for q, plan, hits in answers:
        console.rule(f"[bold]{plain(q)}[/]")
        render_hits(plan, hits, True, console)
    console.rule("next")
    # soft_wrap: a command is printed whole on one line (a log or a narrow terminal must not cut it mid-word)
    console.print(clean(f"search it yourself:  {search_cmd}"), highlight=False, soft_wrap=True, markup=False)
    console.print(clean(f"start the server:    {serve_cmd}"), highlight=False, soft_wrap=True, markup=False)
    console.print("then open http://127.0.0.1:8000/ for the search inspector (API schema at /openapi.json)",
                  highlight=False, soft_wrap=True)


def demo_corpus(corpus: Path, cfg: Config) -> tuple[object, list, dict]:
    """Demo step 1: lint + chunk ``corpus``. Returns ``(PreparedCorpus, chunks, summary)``;
    later steps (build, search) take the chunks from here."""
    from hanrag.chunking import chunk_corpus
    from hanrag.validate import prepare_corpus

    prepared = prepare_corpus(corpus, cfg)
    chunks, chunk_findings = chunk_corpus(prepared.indexable, cfg.chunking)
    prepared = dataclasses.replace(prepared, findings=(*prepared.findings, *chunk_findings))
    return prepared, chunks, corpus_summary(prepared, chunks)


def corpus_summary(prepared, chunks: list) -> dict:
    """Counts the demo prints: documents and chunks per tier / lang / provenance, findings per severity."""
    return {
        "documents": len(prepared.documents),
        "indexable": len(prepared.indexable),
        "excluded": [{"doc_id": d, "reason": r} for d, r in prepared.excluded],
        "chunks": len(chunks),
        "chunks_by_tier": dict(sorted(Counter(c.tier for c in chunks).items())),
        "chunks_by_lang": dict(sorted(Counter(c.lang for c in chunks).items())),
        "chunks_by_provenance": dict(sorted(Counter(c.provenance for c in chunks).items())),
        "docs_by_tier": dict(sorted(Counter(d.tier for d in prepared.documents).items())),
        "ai_draft_indexed": sorted(d.doc_id for d in prepared.indexable if d.provenance == "ai-draft"),
        "findings": dict(sorted(Counter(f.severity for f in prepared.findings).items())),
    }


def render_corpus_summary(summary: dict) -> None:
    from rich.table import Table

    table = Table(title="corpus", show_header=False)
    table.add_column("what")
    table.add_column("count", overflow="fold")
    table.add_row("documents read", str(summary["documents"]))
    table.add_row("indexable", str(summary["indexable"]))
    # file names are data: "[/]" in one is text, not markup
    table.add_row("excluded", data(", ".join(f"{e['doc_id']} ({e['reason']})" for e in summary["excluded"]) or "-"))
    table.add_row("chunks", str(summary["chunks"]))
    for key in ("chunks_by_tier", "chunks_by_lang", "chunks_by_provenance"):
        table.add_row(key.replace("_", " "), data("  ".join(f"{k}: {v}" for k, v in summary[key].items())))
    table.add_row("findings", data("  ".join(f"{k}: {v}" for k, v in summary["findings"].items()) or "-"))
    console.print(table)
    if summary["ai_draft_indexed"]:
        console.print(
            f"[yellow]ai-draft[/] documents included and tagged on their chunks: {len(summary['ai_draft_indexed'])}"
        )


def example_queries(chunks: list[Chunk], n: int = 5) -> tuple[str, ...]:
    """Queries a reader of this corpus might ask, taken from it: section headings, else document titles,
    one per document in turn (so one long file does not supply them all), each 2-60 characters."""
    per_doc: dict[str, list[str]] = {}
    for c in chunks:
        for text in (c.headings[-1] if c.headings else "", c.title):
            text = " ".join(text.replace("#", " ").split())
            if 2 <= len(text) <= 60 and text not in per_doc.setdefault(c.doc_id, []):
                per_doc[c.doc_id].append(text)
    out: list[str] = []
    queues = [q for q in per_doc.values() if q]
    while queues and len(out) < n:
        for q in queues:
            if q and len(out) < n and (text := q.pop(0)) not in out:
                out.append(text)
        queues = [q for q in queues if q]
    return tuple(out)


def demo_index_dir(corpus: Path) -> Path:
    """Where ``hanrag demo`` builds by default: one folder per corpus, so a second corpus never overwrites
    the first one's index."""
    if _is_sample(corpus):
        return Path("index") / "demo"
    return Path("index") / (corpus.resolve().name or "corpus")


def self_command() -> str:
    """How the user reaches this program from the shell: ``hanrag`` when that is on PATH, else the path it was
    started by (``.venv/bin/hanrag``), else ``python -m hanrag`` with this interpreter."""
    argv0 = sys.argv[0] if sys.argv else ""
    if Path(argv0).name == "hanrag":
        found = shutil.which("hanrag")
        if found and Path(found).resolve() == Path(argv0).resolve():
            return "hanrag"
        return shlex.quote(argv0)
    return f"{shlex.quote(sys.executable)} -m hanrag"


def _is_sample(corpus: Path) -> bool:
    try:
        return corpus.resolve() == SAMPLE_CORPUS
    except OSError:
        return False
