"""The ``hanrag`` command line: a thin shell over the build and search pipelines.

Each command parses options, loads the config, calls one pipeline function and
renders its result (a rich table, or stable JSON with ``--json``). Errors are one
line with a hint; ``--debug`` shows the traceback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from hanrag.config import Config, ConfigError, load_config

app = typer.Typer(add_completion=False, no_args_is_help=True, help="hanrag: multilingual retrieval for RAG.")
console = Console()
err_console = Console(stderr=True)

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="hanrag.toml to use (default: ./hanrag.toml if present)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="machine-readable JSON output")]

_state = {"debug": False}


@app.callback()
def _main(debug: Annotated[bool, typer.Option("--debug", help="show tracebacks")] = False) -> None:
    _state["debug"] = debug


def load(config: Path | None) -> Config:
    if config is None and Path("hanrag.toml").is_file():
        config = Path("hanrag.toml")
    try:
        return load_config(config)
    except ConfigError as exc:
        fail(str(exc), "check the file against `hanrag init --print`")
        raise  # unreachable


def fail(message: str, hint: str = "") -> None:
    """Print one clear error line (and a hint) and exit 2."""
    if _state["debug"]:
        import traceback

        traceback.print_exc()
    err_console.print(f"[bold red]error:[/] {message}", highlight=False)
    if hint:
        err_console.print(f"[dim]hint: {hint}[/]", highlight=False)
    raise typer.Exit(2)


def print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


if __name__ == "__main__":  # pragma: no cover
    app()
