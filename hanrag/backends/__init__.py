"""Where an index lives: the embedded snapshot store or a remote engine (Milvus)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hanrag.backends.base import IndexBackend
    from hanrag.config import Config


def open_backend(cfg: Config, index_dir: str | Path | None = None, kind: str | None = None) -> IndexBackend:
    """The configured backend: ``kind`` (or ``cfg.backend.kind``) "embedded" reads ``index_dir``,
    "milvus" connects to ``cfg.milvus`` (``index_dir`` is then not needed)."""
    kind = kind or cfg.backend.kind
    if kind == "milvus":
        from hanrag.backends.milvus import MilvusBackend

        return MilvusBackend(cfg)
    if kind != "embedded":
        raise ValueError(f"unknown backend {kind!r}; expected embedded or milvus")
    if index_dir is None:
        raise ValueError("the embedded backend needs an index folder")
    from hanrag.backends.embedded import EmbeddedBackend

    return EmbeddedBackend.open(index_dir)
