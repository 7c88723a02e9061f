"""``hanrag`` / ``python -m hanrag``: a search that a running server answers is relayed to it before the CLI
(typer, rich, the config module) is imported; everything else runs :data:`hanrag.cli.app`."""

from __future__ import annotations

import sys


def main() -> None:
    from hanrag.server.client import relay_search

    out = relay_search(sys.argv[1:])
    if out is not None:
        sys.stdout.write(out)
        sys.stdout.flush()
        return
    from hanrag.cli import app

    app(prog_name="hanrag")


if __name__ == "__main__":
    main()
