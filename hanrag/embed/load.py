"""The embedder a config names, loaded once per process."""

from __future__ import annotations

import dataclasses
import json
import threading

from hanrag.config import EmbedderConfig
from hanrag.embed.base import Embedder
from hanrag.embed.isolated import IsolatedEmbedder
from hanrag.embed.make import make_embedder

_CACHE: dict[str, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def load_embedder(cfg: EmbedderConfig) -> Embedder:
    """The embedder a config names, loaded once per process."""
    key = json.dumps(dataclasses.asdict(cfg), sort_keys=True)
    with _CACHE_LOCK:
        if key not in _CACHE:
            isolate = getattr(cfg, "isolate", False)
            _CACHE[key] = IsolatedEmbedder(cfg) if isolate else make_embedder(cfg)
        return _CACHE[key]
