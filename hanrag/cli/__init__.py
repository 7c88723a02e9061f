"""The ``hanrag`` command line: a thin shell over the build and search pipelines.

Each command parses options, loads the config, calls one pipeline function and renders its result (a rich
table, or stable JSON with ``--json``). Errors are one line with a hint; ``--debug`` shows the traceback.

This module is the table of contents: the typer :data:`app`, its ``--debug`` / ``--version`` callback and every
command registered in the order ``hanrag --help`` lists them. The commands live one module per group:

- :mod:`hanrag.cli.corpus`: lint, chunk (and the findings table the others print)
- :mod:`hanrag.cli.demo`: demo (lint, chunk, build and search a corpus in one run)
- :mod:`hanrag.cli.index`: build, doctor, eval, init
- :mod:`hanrag.cli.serve`: serve, mcp
- :mod:`hanrag.cli.milvus`: milvus push / status
- :mod:`hanrag.cli.sync`: sync confluence
- :mod:`hanrag.commands.search`: search, outside this package: the server answers a relayed ``hanrag search``
  with it and imports nothing from here (:mod:`hanrag.commands.common` holds what every command shares).

Commands import the pipeline they run inside their function: ``hanrag --help`` and a search that a running
server answers never pay for the build stack, torch, the server or pymilvus.
"""

from __future__ import annotations

from typing import Annotated

import typer

from hanrag.cli import corpus, demo, index, milvus, serve, sync
from hanrag.commands import search
from hanrag.commands.common import set_debug


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
    set_debug(debug)


# registered in the order `hanrag --help` lists them (typer keeps it; the groups come last)
app.command()(corpus.lint)
app.command()(corpus.chunk)
app.command()(demo.demo)
app.command()(serve.serve)
app.command("mcp")(serve.mcp_cmd)
app.command()(index.init)
app.command()(search.search)
app.command("eval")(index.eval_cmd)
app.command()(index.build)
app.command()(index.doctor)
app.add_typer(milvus.milvus_app, name="milvus")
app.add_typer(sync.sync_app, name="sync")

__all__ = ["app"]
