"""Optional cross-encoder rerank stage (sentence-transformers ``CrossEncoder``).

Fed with the top ``candidates`` of the fused list (good recall, small enough for
a CPU), scored best-fused first in batches of ``batch_size`` pairs, each pair cut to
``max_length`` model tokens, within an optional time budget (``budget_ms``): the
head that fits is reranked, the rest keeps its fused order below it. The final score
is the reranker's score min-max-normalised over the reranked passages, optionally
blended with their fused score normalised the same way:
``(1 - blend) * rerank + blend * fused``.

Concurrency: a server scores the queries of its worker threads at once. Nothing here
holds a lock while scoring: ``CrossEncoder.predict`` runs inference only (under
``torch.inference_mode``, which is per thread; its ``eval()`` sets the same flag on
every call), and the tokenizer's truncation and padding settings are written once,
by the warm-up pair scored at load (a fast tokenizer rewrites them only when a call
asks for other settings, and every call here asks for the same). The only lock is
:func:`get_reranker`'s, held while a model loads. Torch's own threads are shared:
two queries reranking at once each take longer, but neither waits for the other.

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
from typing import Any

import numpy as np

from hanrag.config import RerankConfig
from hanrag.search.fusion import minmax


class RerankError(RuntimeError):
    """The configured cross-encoder could not be loaded."""


# a pair's texts are cut to this many characters per model token (max_length) before tokenising: see Reranker.score
CHARS_PER_TOKEN = 8


@dataclass(frozen=True)
class RerankResult:
    """One rerank of a fused head. ``raw`` and ``final`` are aligned with the first ``reranked`` of the
    ``candidates`` passages given (best-fused first); ``reranked < candidates`` when the budget ran out, and the
    passages after them were not scored."""

    raw: np.ndarray  # reranker scores of the reranked passages
    final: np.ndarray  # their blended final scores in [0, 1]
    seconds: float
    reranked: int = 0
    candidates: int = 0
    budget_ms: int = 0  # search.rerank.budget_ms it ran under (0 = none)


def _load_model(cfg: RerankConfig, device: str | None) -> Any:
    """The cross-encoder: sentence-transformers' ``CrossEncoder`` on torch, or the model converted to OpenVINO or
    ONNX Runtime (:class:`hanrag.embed.runtime.RuntimeCrossEncoder`, the same ``predict`` call and scores)."""
    runtime = getattr(cfg, "runtime", "torch")
    precision = getattr(cfg, "precision", "fp32")
    if runtime != "torch":
        from hanrag.embed.runtime import RuntimeCrossEncoder  # lazy: openvino / onnxruntime

        try:
            return RuntimeCrossEncoder(cfg.model, cfg.max_length, runtime=runtime, precision=precision)
        except Exception as exc:
            raise RerankError(f"cannot load cross-encoder {cfg.model!r} on {runtime} {precision}: {exc}") from exc
    if precision != "fp32":
        raise RerankError(f'search.rerank.precision = "{precision}" needs search.rerank.runtime = "openvino" or '
                          '"onnx" (torch runs the model in fp32)')
    try:
        from sentence_transformers import CrossEncoder
    except ImportError as exc:  # pragma: no cover - optional dependency
        raise RerankError(
            "reranking needs sentence-transformers (pip install 'hanrag[torch]')"
        ) from exc
    try:
        return CrossEncoder(cfg.model, max_length=cfg.max_length, device=device or "cpu")
    except Exception as exc:
        where = "local path" if Path(cfg.model).exists() else "model id (offline: must be in the HF cache)"
        raise RerankError(f"cannot load cross-encoder {cfg.model!r} ({where}): {exc}") from exc


class Reranker:
    """A loaded cross-encoder. ``model`` is a local path or a cached hub id (offline)."""

    def __init__(self, cfg: RerankConfig, device: str | None = None) -> None:
        if not cfg.model:
            raise RerankError("rerank.model is empty: no reranker configured")
        if not 0.0 <= cfg.blend <= 1.0:
            raise RerankError(f"search.rerank.blend must be in [0, 1], got {cfg.blend}")
        self.cfg = cfg
        self.model = _load_model(cfg, device)
        self._check_and_warm()

    @property
    def name(self) -> str:
        return self.cfg.model

    def _check_and_warm(self) -> None:
        """A clear error at load when ``max_length`` is more than the model's positions, then one warm-up pair.

        ``CrossEncoder(max_length=...)`` sets the tokenizer's ``model_max_length`` to it without capping it at the
        model's position embeddings (it caps only its own default), so a pair longer than the positions would
        fail inside the model at query time ("size of tensor a (128) must match ... (64)"), on the first long
        passage. The warm-up pair writes the tokenizer's truncation and padding settings once, here, before the
        model is shared by threads, and loads what a first query would."""
        from hanrag.embed.sentence_transformer import usable_positions

        config = getattr(getattr(self.model, "model", None), "config", None)
        positions = usable_positions(config) if config is not None else 0
        if positions and self.cfg.max_length > positions:
            raise RerankError(
                f"search.rerank.max_length = {self.cfg.max_length} is more than the cross-encoder {self.cfg.model!r} "
                f"can take ({positions} token positions): set it to {positions} or less"
            )
        self.score("warm-up", ["warm-up"])

    @property
    def max_chars(self) -> int:
        """The characters of a query or passage that are tokenised: ``CHARS_PER_TOKEN × max_length``."""
        return CHARS_PER_TOKEN * self.cfg.max_length

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """Raw cross-encoder scores for (query, passage) pairs, ``batch_size`` pairs a forward pass.

        The model reads ``max_length`` tokens of a pair at most: CrossEncoder tokenises the pair with truncation
        ("longest_first": the longer side loses tokens first) to the tokenizer's ``model_max_length``, which its
        ``max_length`` argument sets. Tokenising still reads the whole text first (a 1M-character passage: 1.6 s
        with a tiny model), so the query and each passage are cut to :attr:`max_chars` (``CHARS_PER_TOKEN`` = 8
        characters per model token) before: more than the model reads of them (about 4 characters a token in
        English, 1 to 2 in Korean and Chinese), so the scores stay those of the whole text in practice, while a
        100k-character chunk costs what a 4k-character one does."""
        if not passages:
            return np.zeros(0, dtype=np.float64)
        cut = self.max_chars
        q = query[:cut]
        pairs = [(q, p[:cut]) for p in passages]
        scores = self.model.predict(
            pairs, batch_size=self.cfg.batch_size, show_progress_bar=False, convert_to_numpy=True
        )
        return np.asarray(scores, dtype=np.float64).reshape(-1)

    def rerank(self, query: str, passages: Sequence[str], fused: Sequence[float]) -> RerankResult:
        """Rerank the fused head ``passages`` (best-fused first; ``fused``: their fused scores) within
        ``search.rerank.budget_ms``.

        Batches of ``batch_size`` passages are scored in the order given. Before each batch after the first, its
        time is estimated from the batches so far (their seconds per pair times its pairs); when that is more than
        what is left of the budget, reranking stops there and the passages left are not scored. The first batch
        always runs: a budget too small for one batch still reranks one batch (``batch_size`` passages), so the
        stage can take longer than its budget. ``budget_ms`` 0: every passage is scored.

        ``final``: the raw scores min-max-normalised over the reranked passages, blended with their fused scores
        normalised the same way when ``blend`` > 0."""
        t0 = time.perf_counter()
        passages = list(passages)
        n, size = len(passages), self.cfg.batch_size
        budget = self.cfg.budget_ms / 1000.0
        parts: list[np.ndarray] = []
        done, scoring = 0, 0.0
        while done < n:
            batch = min(size, n - done)
            if done and budget > 0 and scoring * batch / done > budget - (time.perf_counter() - t0):
                break  # the next batch would not fit in what is left of the budget
            t = time.perf_counter()
            parts.append(self.score(query, passages[done:done + batch]))
            scoring += time.perf_counter() - t
            done += batch
        raw = np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)
        final = minmax(raw)
        if self.cfg.blend > 0:
            head = np.asarray(fused, dtype=np.float64)[:done]
            final = (1.0 - self.cfg.blend) * final + self.cfg.blend * minmax(head)
        return RerankResult(raw, final, time.perf_counter() - t0, done, n, self.cfg.budget_ms)


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
