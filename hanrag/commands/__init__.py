"""What the ``hanrag`` commands share with the server, outside the typer app (:mod:`hanrag.cli`).

:mod:`hanrag.commands.search` is the ``hanrag search`` command: its options, its in-process run and its
rendering. The CLI registers it; the server parses and renders a relayed ``hanrag search`` with it (its
``/cli/search`` route), so the two print the same text. :mod:`hanrag.commands.common` holds the conventions
every command follows: one-line errors, text from a corpus as data on the terminal, the config and the index
opened with a hint for each failure.

The server imports this package and never :mod:`hanrag.cli` (tests/test_imports.py checks it): building the
typer app with every command is the CLI's cost, not a server's.
"""
