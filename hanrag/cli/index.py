"""The index's own commands: ``hanrag build`` (and what a Ctrl-C during one says), ``hanrag doctor``,
``hanrag eval``, and ``hanrag init`` (the config they all read)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from hanrag.cli.corpus import SEVERITY_STYLE, check_corpus_path, render_findings
from hanrag.commands.common import (
    LEXICON_HINT,
    ConfigOpt,
    JsonOpt,
    clean,
    console,
    data,
    err_console,
    fail,
    load,
    open_index,
    plain,
    print_json,
)
from hanrag.config import Config
from hanrag.fsutil import atomic_write_text


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
    from hanrag.index.store import IndexBuildError
    from hanrag.lexicon import LexiconError
    from hanrag.pipeline import EmptyCorpusError, build_index

    cfg = load(config)
    check_corpus_path(corpus)
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
        fail(str(exc), LEXICON_HINT)
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
            style = SEVERITY_STYLE.get(p.severity, "")
            console.print(Text.assemble(data(p.severity, style), data(f" {p.code}: {p.message}")), highlight=False)
            console.print(data(f"  fix: {p.fix}", "dim"), highlight=False)
    if has_errors:
        raise typer.Exit(1)


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
