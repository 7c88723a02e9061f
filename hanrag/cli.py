"""The ``hanrag`` command line: a thin shell over the build and search pipelines.

Each command parses options, loads the config, calls one pipeline function and
renders its result (a rich table, or stable JSON with ``--json``). Errors are one
line with a hint; ``--debug`` shows the traceback.

Commands import the pipeline they run inside their function: ``hanrag --help`` and a
search that a running server answers never pay for the build stack, torch, the server
or pymilvus. Light modules are imported here.

Size (over 500 lines, on purpose): one thin function per command plus its renderer; the commands share
options, error handling and output helpers, so one file reads as the table of contents of the CLI.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import json
import re
import shlex
import shutil
import stat
import sys
import traceback
import warnings
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from hanrag.bundled import SAMPLE_CONFIG, SAMPLE_CORPUS
from hanrag.config import MAX_CONFIG_BYTES, Config, ConfigError, load_config
from hanrag.fsutil import atomic_write_jsonl, atomic_write_text
from hanrag.records import (
    HARD_MAX_TOP_K,
    LANGS,
    MAX_FILTER_VALUES,
    MAX_TIER,
    PROVENANCES,
    Chunk,
    SearchLimits,
    check_mode,
    check_query,
)

# jieba and milvus-lite import pkg_resources, which setuptools >= 80.9 (llama-index-core needs it, see
# pyproject's milvus extra) flags at every import: a dependency's deprecation, nothing a user can act on
warnings.filterwarnings("ignore", message="pkg_resources is deprecated as an API", category=UserWarning)

def _conventional_help() -> None:
    """typer 0.27+ labels a flag with its Python type (``--explain <bool>``) and writes a required argument as
    ``{index}`` in the usage line: help reads as the usual convention does (``INDEX``, nothing after a flag).
    Guarded: a typer without these hooks keeps its own rendering."""
    from typer import core

    option, argument = getattr(core, "TyperOption", None), getattr(core, "TyperArgument", None)
    if option is not None and hasattr(option, "display_type_rich"):
        typed = option.display_type_rich

        def display_type_rich(self, ctx):
            return None if getattr(self, "is_flag", False) and self.metavar is None else typed(self, ctx)

        option.display_type_rich = display_type_rich
    if argument is not None and hasattr(argument, "_usage_display_name"):

        def usage_name(self) -> str:
            name = (self.metavar or self.name or "").upper()
            name = name if self.required else f"[{name}]"
            return name + ("..." if self.nargs != 1 else "")

        argument._usage_display_name = usage_name


_conventional_help()
app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode="markdown",
                  help="hanrag: multilingual retrieval for RAG.")
console = Console()
err_console = Console(stderr=True, soft_wrap=True)  # an error stays one line, whatever the terminal width

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="hanrag.toml to use (default: ./hanrag.toml if present)")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="machine-readable JSON output")]

_state = {"debug": False}


def _print_version(value: bool) -> None:
    if value:
        from hanrag.version import __version__

        print(f"hanrag {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="show tracebacks")] = False,
    version: Annotated[bool, typer.Option("--version", help="print the version and exit", is_eager=True,
                                          callback=_print_version)] = False,
) -> None:
    _state["debug"] = debug


def load(config: Path | None) -> Config:
    if config is None and Path("hanrag.toml").is_file():
        config = Path("hanrag.toml")
    try:
        return load_config(config)
    except ConfigError as exc:
        if config is not None and not config.is_file():
            fail(str(exc), f"write one with `hanrag init {config}`, or leave out --config for the defaults")
        fail(str(exc), "compare the file with the full commented config: `hanrag init --print`")
        raise  # unreachable


def fail(message: str, hint: str = "") -> None:
    """Print one clear error line (and a hint) and exit 2."""
    if _state["debug"]:
        if sys.exc_info()[0] is not None:
            traceback.print_exc()
        else:
            traceback.print_stack()
    # escaped: messages and hints name config sections ("[embedder]") that Rich would eat as markup
    err_console.print(f"[bold red]error:[/] {plain(message)}", highlight=False)
    if hint:
        err_console.print(f"[dim]hint: {plain(hint)}[/]", highlight=False)
    raise typer.Exit(2)


def print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


# C0 and C1 control characters but TAB and newline: an ESC sequence in a document could plant a terminal link
# (OSC 8), retitle the window or rewrite what was printed before it
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(value: object) -> str:
    """Text from a corpus, an index, a file name or a client, safe for a terminal: control characters as U+FFFD."""
    return _CONTROL.sub("\ufffd", str(value))


def data(value: object, style: str = "") -> Text:
    """Such text as rich shows it: a ``Text``, never parsed as markup (``[/]`` or ``[link=...]`` in a document is
    text), control characters replaced."""
    return Text(clean(value), style=style)


def plain(value: object) -> str:
    """Such text inside a markup string: escaped for rich, control characters replaced."""
    return escape(clean(value))


# --- corpus: lint, chunk, demo -------------------------------------------------------------

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}


def _check_corpus_path(path: Path) -> None:
    if not path.exists():
        fail(f"{path}: no such file or folder",
             "give the corpus folder (`hanrag demo` alone runs on the bundled sample)")


def render_findings(findings: list | tuple, title: str = "findings") -> None:
    from rich.table import Table

    table = Table(title=data(title), show_lines=False)
    for name in ("severity", "code", "file", "message"):
        table.add_column(name, overflow="fold")
    for f in findings:
        style = _SEVERITY_STYLE.get(f.severity, "")
        # Text, not markup: paths and messages may hold "[corpus]", "[/]" or backslashes
        where = data(f.path + (f":{f.line}" if f.line else ""))
        table.add_row(data(f.severity, style), data(f.code), where, data(f.message))
    console.print(table)


@app.command()
def lint(
    path: Annotated[Path, typer.Argument(help="corpus folder (or one file)")],
    json_out: JsonOpt = False,
    strict: Annotated[bool, typer.Option("--strict", help="exit 1 when any error is found")] = False,
    config: ConfigOpt = None,
) -> None:
    """Check a corpus against the rules (source cited, size, topic separators, AI drafts). Never edits files."""
    from hanrag.chunking import chunk_corpus
    from hanrag.index.build import duplicate_findings
    from hanrag.validate import prepare_corpus

    cfg = load(config)
    _check_corpus_path(path)
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


@app.command()
def chunk(
    path: Annotated[Path, typer.Argument(help="corpus folder (or one file)")],
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL file to write (UTF-8, one chunk a line)")],
    config: ConfigOpt = None,
) -> None:
    """Cut the indexable documents of a corpus into chunks and write them as JSONL."""
    from hanrag.chunking import chunk_corpus
    from hanrag.validate import prepare_corpus

    cfg = load(config)
    _check_corpus_path(path)
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


def demo_corpus(corpus: Path, cfg: Config) -> tuple[object, list, dict]:
    """Demo step 1: lint + chunk ``corpus``. Returns ``(PreparedCorpus, chunks, summary)``;
    later steps (build, search) take the chunks from here."""
    from hanrag.chunking import chunk_corpus
    from hanrag.validate import prepare_corpus

    prepared = prepare_corpus(corpus, cfg)
    chunks, chunk_findings = chunk_corpus(prepared.indexable, cfg.chunking)
    prepared = dataclasses.replace(prepared, findings=(*prepared.findings, *chunk_findings))
    return prepared, chunks, corpus_summary(prepared, chunks)


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


DEMO_QUERIES = ("갑목 인월 용신", "甲木 用神", "쿠버네티스 배포 롤백", "deployment rollback", "도화살", "五行相生",
                "who invented the Korean alphabet")


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


@app.command()
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
    from hanrag.index.build import build_index
    from hanrag.index.store import IndexBuildError
    from hanrag.lexicon import LexiconError

    sample_config = corpus is None and config is None
    if corpus is None:
        corpus = SAMPLE_CORPUS
        # the sample is tagged ai-draft throughout: its own config includes it (an explicit --config wins)
        config = config or SAMPLE_CONFIG
    if index is None:
        index = demo_index_dir(corpus)
    cfg = load(config)
    _check_corpus_path(corpus)
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
        fail(str(exc), _LEXICON_HINT)
        return
    except (EmbedderError, IndexBuildError, OSError) as exc:
        fail(str(exc), "check the [embedder] config and that the index folder is writable")
        return
    idx = open_index(index, cfg)
    # the bundled queries mean something only on the bundled corpus; elsewhere the corpus's own headings do
    queries = tuple(query or ()) or (DEMO_QUERIES if _is_sample(corpus) else example_queries(chunks))
    answers = []
    for q in queries:
        with _rerank_errors():
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
        _render_hits(plan, hits, True)
    console.rule("next")
    # soft_wrap: a command is printed whole on one line (a log or a narrow terminal must not cut it mid-word)
    console.print(clean(f"search it yourself:  {search_cmd}"), highlight=False, soft_wrap=True, markup=False)
    console.print(clean(f"start the server:    {serve_cmd}"), highlight=False, soft_wrap=True, markup=False)
    console.print("then open http://127.0.0.1:8000/ for the search inspector (API schema at /openapi.json)",
                  highlight=False, soft_wrap=True)


# --- milvus: push an index, check a collection ---------------------------------------------------

milvus_app = typer.Typer(no_args_is_help=True, help="Mirror an index into Milvus (see README: Milvus cluster).")
app.add_typer(milvus_app, name="milvus")


def _milvus_backend(
    config: Path | None, uri: str | None, collection: str | None, *, complete: bool, cfg: Config | None = None
):
    from hanrag.backends.milvus import MilvusBackend, MilvusError

    cfg = cfg or load(config)
    if uri:
        cfg.milvus.uri = uri
    if collection:
        cfg.milvus.collection = collection
    if not cfg.milvus.uri:
        fail("milvus.uri is not set", "set [milvus] uri in hanrag.toml, HANRAG_MILVUS__URI, or pass --uri")
    try:
        return cfg, MilvusBackend(cfg, require_complete=complete)
    except MilvusError as exc:
        fail(str(exc), "check milvus.uri / token / db_name and that the server is up")
        raise  # unreachable


UriOpt = Annotated[str | None, typer.Option("--uri", help="Milvus URI (overrides milvus.uri)")]
CollectionOpt = Annotated[str | None, typer.Option("--collection", help="collection (overrides milvus.collection)")]


@milvus_app.command("push")
def milvus_push(
    index: Annotated[Path, typer.Argument(help="embedded index folder (built with `hanrag build`)")],
    config: ConfigOpt = None,
    uri: UriOpt = None,
    collection: CollectionOpt = None,
    renormalize: Annotated[bool, typer.Option("--renormalize", help="recompute every BM25 tf part")] = False,
    recreate: Annotated[bool, typer.Option("--recreate", help="drop and rebuild the collection")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Push an index's current snapshot into Milvus: only chunks whose content hash changed are written."""
    from hanrag.backends.milvus import MilvusError, redact_uri
    from hanrag.index.store import IndexLoadError

    cfg, backend = _milvus_backend(config, uri, collection, complete=False)
    try:
        report = backend.sync_from_snapshot(index, renormalize=renormalize, recreate=recreate)
    except IndexLoadError as exc:
        fail(str(exc), "build the index first: hanrag build CORPUS --index DIR")
    except MilvusError as exc:
        fail(str(exc), "rerun the push once the problem is fixed: it resumes by content hash")
    if json_out:
        print_json({"uri": redact_uri(cfg.milvus.uri), "collection": cfg.milvus.collection, **report.to_dict()})
    else:
        console.print(
            f"{plain(cfg.milvus.collection)} @ {plain(redact_uri(cfg.milvus.uri))}: {report.upserted} upserted, "
            f"{report.deleted} deleted, {report.unchanged} unchanged, {report.total} chunks"
            + (", BM25 re-normalised" if report.renormalized else "")
            + f" ({report.seconds:.1f} s)"
        )


@milvus_app.command("status")
def milvus_status(
    config: ConfigOpt = None, uri: UriOpt = None, collection: CollectionOpt = None, json_out: JsonOpt = False
) -> None:
    """Show a Milvus collection's state: complete or interrupted, counts, the snapshot it mirrors."""
    from hanrag.backends.milvus import MilvusError

    cfg, backend = _milvus_backend(config, uri, collection, complete=False)
    try:
        info = backend.manifest().get("backend", {})
    except MilvusError as exc:
        fail(str(exc), "push an index first: hanrag milvus push INDEX")
    if json_out:
        print_json(info)
    else:
        for key, value in info.items():
            console.print(data(f"{key}: {value}"))
    if info.get("state") != "complete":
        raise typer.Exit(1)


# --- serve, init --------------------------------------------------------------------------------


def _milvus_errors(cfg: Config) -> tuple[type[Exception], ...]:
    """MilvusError when the Milvus backend is configured, else nothing to catch: importing it loads pymilvus,
    which an embedded search never needs."""
    if cfg.backend.kind != "milvus":
        return ()
    from hanrag.backends.milvus import MilvusError

    return (MilvusError,)


def open_index(index: Path, cfg: Config):
    """Open an index for search (``[backend] kind``: the folder, or the [milvus] collection), or fail with one
    line naming the problem."""
    import hanrag
    from hanrag.embed import EmbedderError
    from hanrag.index.store import IndexLoadError
    from hanrag.lexicon import LexiconError

    MilvusError = _milvus_errors(cfg)
    remote = cfg.backend.kind == "milvus"
    if remote and not cfg.milvus.uri:
        fail("milvus.uri is not set", "set [milvus] uri in hanrag.toml or HANRAG_MILVUS__URI")
    if not remote and not index.exists():
        fail(f"{index}: no such index folder", f"build one with `hanrag build CORPUS --index {index}`")
    try:
        return hanrag.open(index, config=cfg)
    except EmbedderError as exc:
        fail(str(exc), "use the embedder the index was built with ([embedder] in hanrag.toml), or rebuild it")
    except MilvusError as exc:
        fail(str(exc), "check milvus.uri / token / db_name, that the server is up and the push completed")
    except LexiconError as exc:
        fail(str(exc), _LEXICON_HINT)
    except (IndexLoadError, OSError) as exc:
        fail(str(exc), _not_an_index_hint(index, cfg))


_LEXICON_HINT = ("[lexicon] paths names bundled lexicons (saju, it) or TSV files: term<TAB>equivalent..., UTF-8 "
                 "(see docs/configuration.md)")


def _not_an_index_hint(index: Path, cfg: Config) -> str:
    """The fix for a folder that is not a readable index: a corpus folder given by mistake gets a build command
    whose index folder is not the corpus itself."""
    if index.is_dir() and not (index / "CURRENT").exists() and not (index / "snapshots").exists():
        exts = {e.lower() for e in cfg.corpus.extensions}
        looks_like_corpus = any(p.suffix.lower() in exts for p in _first_files(index, 200))
        if looks_like_corpus:
            name = index.resolve().name or "corpus"
            target = Path("index") / name
            if target.resolve() == index.resolve():
                target = Path("index") / f"{name}-index"
            return (f"{index} looks like a corpus folder, not an index: build an index from it with "
                    f"`hanrag build {index} --index {target}`, then search {target}")
    if not (index / "CURRENT").exists() and not (index / "snapshots").exists():
        return f"no index was built there: build one with `hanrag build CORPUS --index {index}`"
    return f"rebuild it with `hanrag build CORPUS --index {index}`"


def _first_files(root: Path, limit: int) -> list[Path]:
    out: list[Path] = []
    try:
        for p in root.rglob("*"):
            if p.is_file():
                out.append(p)
                if len(out) >= limit:
                    break
    except OSError:
        pass
    return out


@app.command()
def serve(
    index: Annotated[Path, typer.Argument(help="index folder (from `hanrag build`)")],
    host: Annotated[str | None, typer.Option("--host", help="address to bind (default: server.host)")] = None,
    port: Annotated[
        int | None, typer.Option("--port", help="TCP port (default: server.port)", min=1, max=65535)
    ] = None,
    corpus: Annotated[
        Path | None, typer.Option("--corpus", help="corpus folder POST /index/rebuild re-indexes (server.corpus_root)")
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Serve the HTTP API (/search, /chunks, /documents, /stats, /index/rebuild) and the web inspector at /."""
    from hanrag.server import ServerError, api_key_for, check_bind, check_port_free
    from hanrag.server import serve as run_server

    cfg = load(config)
    if corpus is not None:
        if not corpus.is_dir():
            fail(f"{corpus}: no such corpus folder", "give the folder the index was built from")
        cfg.server.corpus_root = str(corpus.resolve())
    host = host or cfg.server.host
    port = cfg.server.port if port is None else port
    try:
        check_bind(host, cfg)
        check_port_free(host, port)
    except ServerError as exc:
        fail(str(exc), "bind 127.0.0.1 (the default), or set an API key" if "non-loopback" in str(exc)
             else "choose another --port")
    idx = open_index(index, cfg)
    shown = f"[{host}]" if ":" in host else host
    console.print(data(f"hanrag: {idx!r}"))
    console.print(data(f"search inspector: http://{shown}:{port}/   API schema: http://{shown}:{port}/openapi.json"))
    console.print("API key: " + ("required (X-API-Key header)" if api_key_for(cfg) else "none (loopback only)"))
    if not cfg.server.corpus_root:
        console.print("[dim]POST /index/rebuild is off: no corpus root (--corpus or server.corpus_root)[/]")
    try:
        run_server(index, cfg, host=host, port=port, index=idx)
    except ServerError as exc:
        fail(str(exc), "choose another --port")


# --- mcp: the index as tools for agents (hanrag[mcp], hanrag/integrations/mcp.py) ---------------


@app.command("mcp")
def mcp_cmd(
    index: Annotated[Path, typer.Argument(help="index folder (from `hanrag build`)")],
    http: Annotated[bool, typer.Option("--http", help="streamable HTTP on 127.0.0.1 instead of stdio")] = False,
    port: Annotated[
        int | None, typer.Option("--port", help="TCP port for --http (default: server.port)", min=1, max=65535)
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Serve the index to agents over MCP: tools search, get_chunk, get_document, stats (needs hanrag[mcp]).

    stdio by default: only the process that spawned it talks to it, so no API key is asked for. --http
    serves http://127.0.0.1:PORT/mcp with the HTTP server's rules (X-API-Key when a key is configured).
    """
    import contextlib

    try:
        from hanrag.integrations import mcp as mcp_server
    except ImportError as exc:
        fail(str(exc))
    from hanrag.server import ServerError, api_key_for

    if port is not None and not http:
        fail("--port applies to --http only (stdio has no port)")
    cfg = load(config)
    # stdout is the stdio transport's wire: whatever loading prints goes to stderr
    with contextlib.redirect_stdout(sys.stderr):
        idx = open_index(index, cfg)
    if http:
        port = cfg.server.port if port is None else port
        err_console.print(data(f"hanrag mcp: {idx!r}\nstreamable HTTP: http://127.0.0.1:{port}{mcp_server.MCP_PATH}   "
                               + ("API key: required (X-API-Key header)" if api_key_for(cfg) else "API key: none")))
    try:
        mcp_server.serve(index, cfg, http=http, port=port, index=idx)
    except ServerError as exc:
        fail(str(exc), "choose another --port")


@app.command()
def init(
    path: Annotated[
        Path, typer.Argument(help="file to write (a folder gets hanrag.toml inside)")
    ] = Path("hanrag.toml"),
    print_only: Annotated[bool, typer.Option("--print", help="print the file instead of writing it")] = False,
    force: Annotated[bool, typer.Option("--force", help="overwrite an existing file")] = False,
    config: Annotated[
        Path | None, typer.Option("--config", "-c", help="start from this config's values instead of the defaults")
    ] = None,
) -> None:
    """Write a commented hanrag.toml with every setting and its default value (secrets are never written)."""
    from hanrag.config_template import render_config_toml

    cfg = load(config) if config is not None else Config()
    text = render_config_toml(cfg)
    if print_only:
        sys.stdout.write(text)
        return
    target = path / "hanrag.toml" if path.is_dir() else path
    if target.exists() and not force:
        fail(f"{target}: already exists; not overwriting it", "pass --force to replace it, or --print to see it")
    if not target.parent.is_dir():
        fail(f"{target.parent}: no such folder", "create it first, or give another path")
    try:
        atomic_write_text(target, text)
    except OSError as exc:
        fail(f"{target}: cannot write: {exc.strerror or exc}", "choose a writable path")
    console.print(data(f"wrote {target} (every setting at its default; edit what you need)"))


# --- search, eval --------------------------------------------------------------------------------


def _filters(lang: list[str] | None, tier: list[int] | None, provenance: list[str] | None, source: str | None,
             label: list[str] | None):
    from hanrag.records import Filters

    f = Filters(lang=tuple(lang or ()), tier=tuple(tier or ()), provenance=tuple(provenance or ()),
                source_glob=source or "", labels=tuple(label or ()))
    return None if f.is_empty() else f


def _filter_problem(lang: list[str] | None, tier: list[int] | None, provenance: list[str] | None) -> str | None:
    """What is wrong with the filter options, in one line, or None (a value no chunk can have is an error,
    not a silent "no hits")."""
    for lg in lang or ():
        if lg not in LANGS:
            return f"--lang must be {', '.join(LANGS[:-1])} or {LANGS[-1]}, got {clean(lg)[:40]!r}"
    for pv in provenance or ():
        if pv not in PROVENANCES:
            return f"--provenance must be {' or '.join(PROVENANCES)}, got {clean(pv)[:40]!r}"
    for t in tier or ():
        if not 0 <= t <= MAX_TIER:
            shown = str(t) if abs(t) < 10**12 else f"a {len(str(abs(t)))}-digit number"
            return f"--tier must be in 0-{MAX_TIER} (the leading number of a top-level folder), got {shown}"
    return None


def _limit_problem(limits: SearchLimits, top_k: int, source: str | None, label: list[str] | None,
                   tier: list[int] | None) -> tuple[str, str] | None:
    """(problem, hint) when an option is past the limits every entry applies (the server's: a search the CLI runs
    here is bounded as one it relays), else None."""
    if top_k > limits.max_top_k:
        return (f"--top-k must be at most {limits.max_top_k}, got {top_k if top_k < 10**12 else 'more'}",
                f"server.max_top_k sets it (at most {HARD_MAX_TOP_K})")
    if source is not None and len(source) > limits.max_glob_chars:
        return (f"--source is {len(source):,} characters long; a glob may have at most {limits.max_glob_chars}",
                "shorten the pattern (it is matched against each chunk's source and path)")
    if len(label or ()) > MAX_FILTER_VALUES or len(tier or ()) > MAX_FILTER_VALUES:
        return f"at most {MAX_FILTER_VALUES} --label and --tier values each", ""
    if any(len(lb) > limits.max_query_chars for lb in label or ()):
        return f"a --label may have at most {limits.max_query_chars:,} characters", ""
    return None


@app.command()
def search(
    index: Annotated[Path, typer.Argument(help="index folder (from `hanrag build`)")],
    query: Annotated[str, typer.Argument(help="the query")],
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, help="hits to return (at most server.max_top_k)")
                     ] = 10,
    mode: Annotated[str, typer.Option("--mode", help="hybrid | bm25 | dense")] = "hybrid",
    lang: Annotated[list[str] | None, typer.Option("--lang", help="only chunks in this language (repeatable)")] = None,
    tier: Annotated[list[int] | None, typer.Option("--tier", help="only this tier (repeatable)")] = None,
    provenance: Annotated[
        list[str] | None, typer.Option("--provenance", help="human | ai-draft (repeatable)")
    ] = None,
    source: Annotated[str | None, typer.Option("--source", help="source/path glob, e.g. 'runbooks/*'")] = None,
    label: Annotated[list[str] | None, typer.Option("--label", help="chunk must carry this label (repeatable)")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="show every score behind each hit")] = False,
    json_out: JsonOpt = False,
    config: ConfigOpt = None,
    backend: Annotated[
        str | None, typer.Option("--backend", help="embedded | milvus (default: [backend] kind; milvus ignores INDEX)")
    ] = None,
    no_server: Annotated[
        bool, typer.Option("--no-server", help="search in this process even when `hanrag serve` runs on INDEX")
    ] = False,
) -> None:
    """Search an index: hybrid BM25 + dense with adaptive weights (see --explain).

    When a `hanrag serve` of the same index runs on this machine (with the same search settings) the
    query goes to it, which answers without loading anything; otherwise, or with --no-server, the
    search runs here, loading only the analyzers and model the query needs."""
    try:
        check_mode(mode)
    except ValueError as exc:
        fail(f"--{exc}")
    if problem := _filter_problem(lang, tier, provenance):
        fail(problem)
    cfg = load(config)
    limits = SearchLimits.of(cfg.server)
    try:
        check_query(query, limits.max_query_chars)
    except ValueError as exc:
        fail(str(exc), "shorten the query, or raise server.max_query_chars in hanrag.toml")
    if problem := _limit_problem(limits, top_k, source, label, tier):
        fail(*problem)
    if backend is not None:
        if backend not in ("embedded", "milvus"):
            fail(f"--backend must be embedded or milvus, got {backend!r}")
        cfg.backend.kind = backend
    filters = _filters(lang, tier, provenance, source, label)
    # a running server was asked first, unless --no-server (hanrag.__main__, before this module was imported):
    # here the search runs in this process
    del no_server
    plan, hits = _search_here(index, cfg, query, top_k, mode, filters, explain)
    if json_out:
        print_json({"plan": plan.to_dict(), "hits": [h.to_dict() for h in hits]})
        return
    _render_hits(plan, hits, explain)


@functools.cache
def search_command():
    """The click command behind ``hanrag search`` (built once: typer takes ~30 ms to build it)."""
    group = typer.main.get_command(app)
    return group.get_command(typer.Context(group), "search")


def relayed_search(argv: list[str], cwd: str, environ: dict[str, str], term: dict, index, index_dir: Path,
                   fingerprint: str) -> str | None:
    """What ``hanrag search ARGV`` run in ``cwd`` under ``environ`` prints, answered by ``index`` (the open index of
    a server in ``index_dir`` whose search settings have ``fingerprint``); None when that command would not come to
    this server (another index or other settings, --no-server, milvus) or has an error to report: the client then
    runs it itself, and says what is wrong. ``term``: the client's terminal (:func:`hanrag.server.client.terminal`).
    """
    from rich.console import Console

    if "--help" in argv:
        return None  # click would print it here, in the server's log
    try:
        with search_command().make_context("search", list(argv)) as ctx:
            p = dict(ctx.params)
    except (typer.TyperException, typer.Exit, typer.Abort):  # a usage error: the client reports it
        return None
    base = Path(cwd)
    if p["no_server"] or p["backend"] not in (None, "embedded") or (base / p["index"]).resolve() != index_dir:
        return None
    config = base / p["config"] if p["config"] is not None else None
    if config is None and (base / "hanrag.toml").is_file():
        config = base / "hanrag.toml"
    limits = SearchLimits.of(index.config.server)
    try:
        check_mode(p["mode"])
        check_query(p["query"], limits.max_query_chars)
        if _filter_problem(p["lang"], p["tier"], p["provenance"]) or _limit_problem(
                limits, p["top_k"], p["source"], p["label"], p["tier"]):
            return None  # the client says what is wrong, in its own process
        stamp = None
        if config is not None:
            st = config.stat()
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_CONFIG_BYTES:
                return None  # not a config the CLI would load: the client reports it (load_config reads no more)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        env = tuple(sorted((k, v) for k, v in environ.items() if k.upper().startswith("HANRAG_")))
        if _fingerprint(str(config) if config else None, stamp, env, p["backend"]) != fingerprint:
            return None
        filters = _filters(p["lang"], p["tier"], p["provenance"], p["source"], p["label"])
        res = index.search_result(p["query"], top_k=p["top_k"], mode=p["mode"], filters=filters,
                                  explain=p["explain"])
    except (ValueError, OSError, RuntimeError):  # ConfigError is a ValueError; RuntimeError: a symlink loop
        return None
    if p["json_out"]:
        return json.dumps({"plan": res.plan.to_dict(), "hits": [h.to_dict() for h in res.hits]},
                          ensure_ascii=False, indent=2) + "\n"
    buf = _Terminal(bool(term.get("tty")))
    out = Console(file=buf, width=int(term.get("width") or 80), height=int(term.get("height") or 25),
                  _environ={k: v for k, v in environ.items() if isinstance(v, str)})
    _render_hits(res.plan, res.hits, p["explain"], out)
    return buf.getvalue()


@functools.lru_cache(maxsize=64)
def _fingerprint(config: str | None, stamp: tuple | None, env: tuple, backend: str | None) -> str | None:
    """The search fingerprint of the config a client would load (None: not an embedded index's, or invalid), once
    per config file version and variables: loading and validating it costs more than the search it guards."""
    from hanrag.server.discovery import search_fingerprint

    try:
        cfg = load_config(config, environ=dict(env))
    except ConfigError:
        return None
    if backend is not None:
        cfg.backend.kind = backend
    return search_fingerprint(cfg) if cfg.backend.kind == "embedded" else None


class _Terminal(io.StringIO):
    """A text buffer that is a terminal when the client's stdout is one (rich then styles as it would there)."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self._tty = tty

    def isatty(self) -> bool:
        return self._tty


def _search_here(index: Path, cfg: Config, query: str, top_k: int, mode: str, filters, explain: bool):
    """(plan, hits) of an in-process search, or fail with one line."""
    milvus_error = _milvus_errors(cfg)
    idx = open_index(index, cfg)
    with _rerank_errors():
        try:
            res = idx.search_result(query, top_k=top_k, mode=mode, filters=filters, explain=explain, preload=True)
        except ValueError as exc:
            fail(str(exc))
        except milvus_error as exc:
            fail(str(exc), "check that the Milvus server is up and milvus.uri is right")
    return res.plan, res.hits  # the plan as used (hybrid may switch rule once BM25 ran)


@contextlib.contextmanager
def _rerank_errors() -> Iterator[None]:
    """A cross-encoder that cannot be loaded (search.rerank.model: a wrong path, a model not in the cache offline)
    is one line; it loads on the first reranked search, so only searches meet it."""
    try:
        yield
    except RuntimeError as exc:
        from hanrag.search.rerank import RerankError

        if not isinstance(exc, RerankError):
            raise
        fail(str(exc), "fix search.rerank.model (a local path, or a model id in the Hugging Face cache), "
             "or set it to \"\" for no rerank")


def _render_hits(plan, hits, explain: bool, out: Console | None = None) -> None:
    """The hits as a table (and the plan with ``explain``). Everything from the query, the corpus or a file name is
    :func:`data`: a document holding ``[/]`` or ``[link=...]`` prints as written, never as rich markup."""
    from rich.table import Table

    out = out or console
    if explain:
        out.print(Text.assemble(("plan", "bold"), data(
            f" lang={plan.lang} hanja={plan.hanja_ratio:.2f} mode={plan.mode} rule={plan.rule} "
            f"weights bm25={plan.bm25_weight:.2f} dense={plan.dense_weight:.2f}")), highlight=False)
        out.print(data(f"  tokens: {' '.join(plan.tokens) or '—'}"), highlight=False)
        out.print(data(f"  terms: {', '.join(plan.terms) or '—'}"), highlight=False)
        exps = ", ".join(f"{t} ×{w:.2f}" for t, w in plan.expansions)
        out.print(data(f"  expansions: {exps or '—'}"), highlight=False)
    if not hits:
        out.print("no hits")
        return
    table = Table(show_lines=explain)
    for col in ("#", "score", "lang", "source", "text"):
        table.add_column(col, overflow="fold")
    if explain:
        table.add_column("explain", overflow="fold")

    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:.3f}"

    for h in hits:
        # the file first (what a user opens), the cited URL under it
        src = h.chunk.path or h.chunk.source
        if h.chunk.source and h.chunk.source != src:
            src += f"\n{h.chunk.source}"
        if h.also_in:
            src += f"\n(also in: {', '.join(h.also_in)})"
        text = " ".join(h.chunk.text.split())
        row = [str(h.rank), f"{h.score:.3f}", data(h.chunk.lang), data(src),
               data(text[:160] + ("…" if len(text) > 160 else ""))]
        if explain and h.explanation:
            e = h.explanation
            row.append(data(
                f"bm25 {f(e.bm25_raw)}→{f(e.bm25_norm)} ×{e.bm25_weight:.2f}\n"
                f"dense {f(e.dense_raw)}→{f(e.dense_norm)} ×{e.dense_weight:.2f}\n"
                f"{e.fusion} fused {e.fused:.3f} rerank {f(e.rerank)} penalty ×{e.penalty:.2f} = {e.final:.3f}\n"
                f"rule {e.rule}; found by {'+'.join(e.found_by) or '—'}\n"
                + "matched: "
                + (" ".join(f"{t} ({how})" for t, how in e.matched_via) or "—")
            ))
        table.add_row(*row)
    out.print(table)


@app.command("eval")
def eval_cmd(
    sets: Annotated[list[Path] | None, typer.Argument(help="eval set folders (shared/eval layout)")] = None,
    index: Annotated[Path | None, typer.Option("--index", help="evaluate this index (with --queries/--qrels)")] = None,
    queries: Annotated[Path | None, typer.Option("--queries", help="queries.jsonl ({qid, text, lang})")] = None,
    qrels: Annotated[Path | None, typer.Option("--qrels", help="qrels.tsv (qid, doc_id, relevance)")] = None,
    mixed: Annotated[bool, typer.Option("--mixed", help="merge the sets' corpora into one index")] = False,
    out: Annotated[Path, typer.Option("--out", help="folder for report.md, report.json, chart.png")] = Path(
        "eval-report"
    ),
    per_query: Annotated[bool, typer.Option(
        "--per-query", help="also print each query's rank under each configuration and the queries they "
        "disagree on most (report.md and report.json always have them)")] = False,
    chart_all: Annotated[bool, typer.Option(
        "--chart-all", help="chart every configuration, not only bm25, dense, hanrag default and the best others")
                         ] = False,
    json_out: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Ablations (bm25, dense, each fusion, presets, +rerank) with nDCG@10, MRR@10, R@10, R@100."""
    from hanrag.eval import evaluate_sets, judged_task, run_ablations
    from hanrag.eval_report import markdown_report, per_query_markdown, per_query_report, write_report

    cfg = load(config)
    note = (lambda text: err_console.print(data(text, "dim"))) if not json_out else None
    ranks: dict = {}  # set -> qid -> ranks, filled by the run: the reports carry it with or without --per-query
    if index is not None:
        if sets or mixed:
            fail("give either --index with --queries/--qrels, or eval set folders, not both")
        if queries is None or qrels is None:
            fail("--index needs --queries q.jsonl and --qrels qrels.tsv")
        for p in (queries, qrels):
            if not p.is_file():
                fail(f"{p}: no such file")
        idx = open_index(index, cfg)
        try:
            task = judged_task(queries, qrels)
        except ValueError as exc:
            fail(f"bad eval input: {exc}")
            return
        results = run_ablations(idx.searcher.backend, cfg, [task], embedder=idx.embedder, analyzer=idx.analyzer,
                                lexicon=idx.lexicon, progress=(lambda label: note(f"{label} done")) if note else None,
                                query_progress=note, per_query=ranks)
        title = f"hanrag eval: {index}"
    else:
        if not sets:
            fail("give eval set folders, or --index INDEX --queries q.jsonl --qrels qrels.tsv")
        try:
            results, title = evaluate_sets(list(sets or []), cfg, mixed=mixed, progress=note, per_query=ranks)
        except (FileNotFoundError, ValueError, KeyError) as exc:
            fail(str(exc))
            return
    paths = write_report(results, out, title, per_query=ranks, chart_all=chart_all)
    if json_out:
        payload = {"results": results, "files": {k: str(v) for k, v in paths.items()}}
        if per_query:
            payload["per_query"] = per_query_report(ranks)
        print_json(payload)
        return
    # markup off: the title names the index folder, query sets name their files
    console.print(clean(markdown_report(results, title).split("## mrr@10")[0]), markup=False, highlight=False)
    if per_query:
        # markup off: query text such as "[error]" is text; soft wrap: a wide table row stays one line
        console.print(per_query_markdown(per_query_report(ranks)), markup=False, highlight=False, soft_wrap=True)
    console.print(data(f"wrote {paths['markdown']}, {paths['json']}, {paths['chart']}"))


# --- build, doctor --------------------------------------------------------------------------------


@contextlib.contextmanager
def interrupt_message(index: Path) -> Iterator[None]:
    """Ctrl-C during a build: the build stopped its progress bar and saved the vectors embedded so far; say in
    one line what is published now and exit 130 (typer would exit silently). Compared with the snapshot
    published before: an interrupt that lands after the pointer switch leaves the new snapshot current."""
    from hanrag.index.store import published_snapshot

    before = published_snapshot(index)
    try:
        yield
    except KeyboardInterrupt:
        now = published_snapshot(index)
        if now is None:
            what = "no index was published"
        elif now == before:
            what = "the previous snapshot is still current"
        else:
            what = f"the new snapshot {now} was published before the interrupt"
        err_console.print(f"interrupted: {what}", markup=False, highlight=False)
        raise typer.Exit(130) from None


@app.command()
def build(
    corpus: Annotated[Path, typer.Argument(help="corpus folder")],
    index: Annotated[Path, typer.Option("--index", "-i", help="index folder to create or update")],
    config: ConfigOpt = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no progress bars (findings and summary still print)")
                     ] = False,
    allow_empty: Annotated[bool, typer.Option(
        "--allow-empty", help="publish an empty index when the corpus has no indexable document")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Index a corpus incrementally (only new chunk texts are embedded) and publish a snapshot atomically."""
    from hanrag.embed import EmbedderError
    from hanrag.index.build import EmptyCorpusError, build_index
    from hanrag.index.store import IndexBuildError
    from hanrag.lexicon import LexiconError

    cfg = load(config)
    _check_corpus_path(corpus)
    try:
        with interrupt_message(index):
            report = build_index(corpus, index, cfg, progress=not (quiet or json_out), allow_empty=allow_empty)
    except EmptyCorpusError as exc:
        if exc.prepared.findings and not json_out:
            render_findings([f for f in exc.prepared.findings if f.severity != "info"], title="corpus findings")
        fail(str(exc), f"check the folder and corpus.extensions; `hanrag lint {corpus}` lists what was read "
             "(--allow-empty publishes an empty index on purpose)")
        return
    except LexiconError as exc:
        fail(str(exc), _LEXICON_HINT)
        return
    except (EmbedderError, IndexBuildError) as exc:
        fail(str(exc), "check the [embedder] config, or wait for the other build to finish")
        return
    if json_out:
        print_json(report.to_dict())
        return
    errors = [f for f in report.findings if f.severity != "info"]
    if errors:  # -q only turns the progress bars off: problems in the corpus always show
        render_findings(errors, title="corpus findings")
    for line in report.summary_lines():
        console.print(data(line, "bold yellow" if line.startswith("WARNING") else ""), highlight=False)


@app.command()
def doctor(
    index: Annotated[Path, typer.Argument(help="index folder")],
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Check the config against the index and the models; print each problem with its fix. Exit 1 on errors."""
    from hanrag.doctor import diagnose

    cfg = load(config)
    problems = diagnose(index, cfg)
    has_errors = any(p.severity == "error" for p in problems)
    if json_out:
        print_json({"ok": not has_errors, "problems": [p.to_dict() for p in problems]})
    elif not problems:
        console.print(f"[green]ok[/]: {plain(index)} and the config agree")
    else:
        for p in problems:  # messages name files and settings ("[embedder]"): data, not markup
            style = _SEVERITY_STYLE.get(p.severity, "")
            console.print(Text.assemble(data(p.severity, style), data(f" {p.code}: {p.message}")), highlight=False)
            console.print(data(f"  fix: {p.fix}", "dim"), highlight=False)
    if has_errors:
        raise typer.Exit(1)


# --- sync: connectors that keep an index up to date ---------------------------------------------

sync_app = typer.Typer(no_args_is_help=True, help="Sync an index from a connector (Confluence).")
app.add_typer(sync_app, name="sync")


@sync_app.command("confluence")
def sync_confluence_cmd(
    index: Annotated[Path, typer.Option("--index", help="index folder (created on the first sync)")],
    config: ConfigOpt = None,
    full: Annotated[bool, typer.Option("--full", help="re-fetch and re-render every page")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Sync the configured Confluence spaces into an index: only changed pages are fetched and re-embedded."""
    from hanrag.sources.confluence import ConfluenceError
    from hanrag.sync import IndexSourceError, sync_confluence

    cfg = load(config)
    if not cfg.confluence.url:
        fail("confluence.url is not set", "set [confluence] url and spaces in hanrag.toml (or HANRAG_CONFLUENCE__URL)")
    try:
        report = sync_confluence(index, cfg, full=full, progress=not json_out)
    except (ConfluenceError, IndexSourceError) as exc:
        fail(str(exc), "nothing was changed; fix the problem and rerun the sync")
        raise  # unreachable
    if json_out:
        print_json(report.to_dict())
        return
    for line in report.summary_lines():  # page titles and space keys are data
        console.print(data(line), highlight=False)
    if report.findings:
        render_findings(report.findings)


if __name__ == "__main__":  # pragma: no cover - `python -m hanrag.cli`: as `hanrag` (a server is asked first)
    from hanrag.server.client import relayed

    if not relayed(sys.argv[1:]):
        app()
