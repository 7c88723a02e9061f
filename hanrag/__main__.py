"""``hanrag`` / ``python -m hanrag``: a search that a running server answers is relayed to it before the CLI
(typer, rich, the config module) is imported; everything else runs :data:`hanrag.cli.app`."""

from __future__ import annotations

import sys


def main() -> None:
    from hanrag.server.client import relayed

    if relayed(sys.argv[1:]):
        return
    from hanrag.cli import app

    app(prog_name="hanrag")


if __name__ == "__main__":
    main()
