"""``hanrag sync confluence``: an index kept up to date from a connector (only changed pages are fetched and
re-embedded, :mod:`hanrag.sync`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hanrag.cli.corpus import render_findings
from hanrag.commands.common import ConfigOpt, JsonOpt, console, data, fail, load, print_json

sync_app = typer.Typer(no_args_is_help=True, help="Sync an index from a connector (Confluence).")


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
