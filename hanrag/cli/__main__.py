"""``python -m hanrag.cli``: as ``hanrag`` (a running server is asked first), with click's own program name."""

from __future__ import annotations

import sys

if __name__ == "__main__":  # pragma: no cover - run as a program only
    from hanrag.server.client import relayed

    if not relayed(sys.argv[1:]):
        from hanrag.cli import app

        app()
