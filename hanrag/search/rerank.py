"""Optional cross-encoder rerank stage (sentence-transformers ``CrossEncoder``).

Fed with the top ``candidates`` of the fused list (good recall, small enough for
a CPU), scored in batches with a maximum sequence length. The final score is the
reranker's score min-max-normalised over the batch, optionally blended with the
fused score normalised the same way: ``(1 - blend) * rerank + blend * fused``.

:func:`get_reranker` hands out one loaded model per configuration and process: the
searcher asks for it on the first reranked query (threads of a server may ask at once;
the model is loaded once) and again after every index swap, which then reuses it.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hanrag.config import RerankConfig
from hanrag.search.fusion import minmax


class RerankError(RuntimeError):
    """The configured cross-encoder could not be loaded."""


@dataclass(frozen=True)
class RerankResult:
    raw: np.ndarray  # reranker scores, aligned with the input passages
    final: np.ndarray  # blended final scores in [0, 1]
    seconds: float


class Reranker:
    """A loaded cross-encoder. ``model`` is a local path or a cached hub id (offline)."""

    def __init__(self, cfg: RerankConfig, device: str | None = None) -> None:
        if not cfg.model:
            raise RerankError("rerank.model is empty: no reranker configured")
        if not 0.0 <= cfg.blend <= 1.0:
            raise RerankError(f"search.rerank.blend must be in [0, 1], got {cfg.blend}")
        self.cfg = cfg
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:  # pragma: no cover - optional dependency
            raise RerankError(
                "reranking needs sentence-transformers (pip install 'hanrag[torch]')"
            ) from exc
        try:
            self.model = CrossEncoder(cfg.model, max_length=cfg.max_length, device=device or "cpu")
        except Exception as exc:
            where = "local path" if Path(cfg.model).exists() else "model id (offline: must be in the HF cache)"
            raise RerankError(f"cannot load cross-encoder {cfg.model!r} ({where}): {exc}") from exc

    @property
    def name(self) -> str:
        return self.cfg.model

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """Raw cross-encoder scores for (query, passage) pairs, batched."""
        if not passages:
            return np.zeros(0, dtype=np.float64)
        pairs = [(query, p) for p in passages]
        scores = self.model.predict(
            pairs, batch_size=self.cfg.batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        return np.asarray(scores, dtype=np.float64).reshape(-1)

    def rerank(self, query: str, passages: Sequence[str], fused: Sequence[float]) -> RerankResult:
        t = time.perf_counter()
        raw = self.score(query, passages)
        final = minmax(raw)
        if self.cfg.blend > 0:
            final = (1.0 - self.cfg.blend) * final + self.cfg.blend * minmax(np.asarray(fused, dtype=np.float64))
        return RerankResult(raw, final, time.perf_counter() - t)


_LOADED: OrderedDict[str, Reranker] = OrderedDict()  # config key -> model, most recently used last
_LOADED_MAX = 2  # an old and a new config side by side while a server swaps; more would hold GBs of weights
_LOCK = threading.Lock()


def get_reranker(cfg: RerankConfig, device: str | None = None) -> Reranker:
    """The loaded cross-encoder for ``cfg``: loaded once per configuration and process, under a lock.

    One lock for all loads: a second thread asking while the first loads waits and gets the same model,
    rather than loading a second copy of its weights."""
    key = json.dumps([dataclasses.asdict(cfg), device], sort_keys=True)
    with _LOCK:
        model = _LOADED.get(key)
        if model is None:
            model = Reranker(dataclasses.replace(cfg), device)  # a copy: a later edit of cfg is a new key
            _LOADED[key] = model
            while len(_LOADED) > _LOADED_MAX:
                _LOADED.popitem(last=False)
        _LOADED.move_to_end(key)
        return model
