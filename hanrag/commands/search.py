"""``hanrag search``: its options, its run in this process, and how its hits print; one module for the CLI and the
server.

The CLI registers :func:`search` (:mod:`hanrag.cli`). A ``hanrag search`` typed while ``hanrag serve`` runs on the
same index is relayed to that server (:mod:`hanrag.server.client`), whose ``/cli/search`` route answers it with
:func:`relayed_search`: the same argument model parses the same argv, the same limits apply and
:func:`render_hits` prints the same text for the client's terminal. The server imports this module, never
:mod:`hanrag.cli`.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from hanrag.commands.common import (
    ConfigOpt,
    JsonOpt,
    clean,
    console,
    data,
    fail,
    load,
    milvus_errors,
    open_index,
    print_json,
)
from hanrag.config import MAX_CONFIG_BYTES, Config, ConfigError, load_config
from hanrag.records import (
    HARD_MAX_TOP_K,
    LANGS,
    MAX_FILTER_VALUES,
    MAX_TIER,
    PROVENANCES,
    SearchLimits,
    check_mode,
    check_query,
)


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
    # a running server was asked first, unless --no-server (hanrag.__main__, before the CLI was imported):
    # here the search runs in this process
    del no_server
    plan, hits = _search_here(index, cfg, query, top_k, mode, filters, explain)
    if json_out:
        print_json({"plan": plan.to_dict(), "hits": [h.to_dict() for h in hits]})
        return
    render_hits(plan, hits, explain)


# --- the options' checks: the CLI fails with them, the relay declines ----------------------------------------


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


# --- the relay: the server answers a `hanrag search` typed elsewhere --------------------------------------------


@functools.cache
def search_command():
    """The click command behind ``hanrag search``, built from :func:`search` alone (typer takes ~30 ms to build
    the whole CLI; the server builds this once, before it says it is ready)."""
    one = typer.Typer(add_completion=False)  # as the CLI's app: no --install-completion among its options
    one.command()(search)
    return typer.main.get_command(one)


def relayed_search(argv: list[str], cwd: str, environ: dict[str, str], term: dict, index, index_dir: Path,
                   fingerprint: str) -> str | None:
    """What ``hanrag search ARGV`` run in ``cwd`` under ``environ`` prints, answered by ``index`` (the open index of
    a server in ``index_dir`` whose search settings have ``fingerprint``); None when that command would not come to
    this server (another index or other settings, --no-server, milvus) or has an error to report: the client then
    runs it itself, and says what is wrong. ``term``: the client's terminal (:func:`hanrag.server.client.terminal`).
    """
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
    render_hits(res.plan, res.hits, p["explain"], out)
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


# --- in this process, and the hits on a terminal --------------------------------------------------------------


def _search_here(index: Path, cfg: Config, query: str, top_k: int, mode: str, filters, explain: bool):
    """(plan, hits) of an in-process search, or fail with one line."""
    milvus_error = milvus_errors(cfg)
    idx = open_index(index, cfg)
    with rerank_errors():
        try:
            res = idx.search_result(query, top_k=top_k, mode=mode, filters=filters, explain=explain, preload=True)
        except ValueError as exc:
            fail(str(exc))
        except milvus_error as exc:
            fail(str(exc), "check that the Milvus server is up and milvus.uri is right")
    return res.plan, res.hits  # the plan as used (hybrid may switch rule once BM25 ran)


@contextlib.contextmanager
def rerank_errors() -> Iterator[None]:
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


def render_hits(plan, hits, explain: bool, out: Console | None = None) -> None:
    """The hits as a table (and the plan with ``explain``), on ``out`` (default: this module's ``console``).
    Everything from the query, the corpus or a file name is :func:`~hanrag.commands.common.data`: a document
    holding ``[/]`` or ``[link=...]`` prints as written, never as rich markup."""
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
        if plan.language_axes is not None:
            out.print(data(f"  dense: the query vector without {plan.language_axes} language axes "
                           "(search.language_neutral_query)"), highlight=False)
        if plan.language_centring:
            parts = ", ".join(f"{lang} {added:+.3f} (share {share:g})" for lang, added, share in plan.language_centring)
            out.print(data(f"  centring: {parts}"), highlight=False)
        if plan.lexical_parity:
            parts = ", ".join(f"{lang} ×{f:.2f}" for lang, f in plan.lexical_parity)
            out.print(data(f"  BM25 parity: {parts}"), highlight=False)
        if plan.ranker:
            out.print(data(f"  ranker: {plan.ranker} reordered the first {plan.ranked} fused candidates"),
                      highlight=False)
        if plan.reranked is not None:
            budget = f"budget {plan.rerank_budget_ms} ms" if plan.rerank_budget_ms else "no budget"
            out.print(data(f"  rerank: reranked {plan.reranked} of {plan.rerank_candidates} in "
                           f"{plan.rerank_ms:.0f} ms ({budget})"), highlight=False)
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

    def learned_text(learned) -> str:
        """What the learned ranker added, its largest three features by size: ` ranker +0.041 (same_language
        +0.030, dense_gap +0.012, base -0.004, …)`."""
        if not learned:
            return ""
        top = sorted(learned, key=lambda kv: -abs(kv[1]))
        parts = ", ".join(f"{k} {v:+.3f}" for k, v in top[:3]) + (", …" if len(top) > 3 else "")
        return f" ranker {sum(v for _, v in learned):+.3f} ({parts})"

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
                f"dense {f(e.dense_raw)}{f' ({e.centring:+.3f} centring)' if e.centring else ''}"
                f"→{f(e.dense_norm)} ×{e.dense_weight:.2f}\n"
                f"{e.fusion} fused {e.fused:.3f}{learned_text(e.learned)} rerank {f(e.rerank)} "
                f"penalty ×{e.penalty:.2f} = {e.final:.3f}\n"
                f"rule {e.rule}; found by {'+'.join(e.found_by) or '—'}\n"
                + "matched: "
                + (" ".join(f"{t} ({how})" for t, how in e.matched_via) or "—")
            ))
        table.add_row(*row)
    out.print(table)
