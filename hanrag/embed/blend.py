"""Two encoders as one: each text's vector is the main encoder's and a language-agnostic encoder's side by side.

``[p, sqrt(w) * s] / sqrt(1 + w)`` for unit vectors ``p`` and ``s`` is a unit vector whose inner product with
another such vector is ``(cos_p + w * cos_s) / (1 + w)``: the index, its ANN graph, Milvus and every stage after
retrieval see one encoder whose cosine adds ``w`` times the second one's (``embedder.cross_lingual_weight``), and
nothing downstream needs to know there are two.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


class BlendedEmbedder:
    """``primary``'s vectors with ``secondary``'s appended at ``weight`` (see the module docstring)."""

    def __init__(self, primary: Any, secondary: Any, weight: float) -> None:
        if not weight > 0:
            raise ValueError(f"a blend needs a positive weight, got {weight}")
        self.primary = primary
        self.secondary = secondary
        self.weight = float(weight)
        self.dim = primary.dim + secondary.dim
        # chunking counts the main encoder's tokens (its window); the second reads the whole text
        self.max_tokens = primary.max_tokens
        self.truncates = primary.truncates
        self._scale = (1.0 / math.sqrt(1.0 + self.weight), math.sqrt(self.weight / (1.0 + self.weight)))

    def __getattr__(self, name: str) -> Any:  # batch_size, model, ... of the main encoder
        if name == "primary":  # not set yet: no recursion
            raise AttributeError(name)
        return getattr(self.primary, name)

    def _join(self, p: np.ndarray, s: np.ndarray) -> np.ndarray:
        out = np.empty((len(p), self.dim), np.float32)
        out[:, : self.primary.dim] = np.asarray(p, np.float32) * self._scale[0]
        out[:, self.primary.dim:] = np.asarray(s, np.float32) * self._scale[1]
        return out

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._join(self.primary.encode_passages(texts), self.secondary.encode_passages(texts))

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._join(self.primary.encode_queries(texts), self.secondary.encode_queries(texts))

    def count_tokens(self, text: str) -> int:
        return self.primary.count_tokens(text)

    # the machine cache (each part behind its own CachingEmbedder: hanrag.embed.cache.caching)
    @property
    def embedded(self) -> int:
        """Texts sent to a model: the larger of the two parts' counts (both read the same texts). Like a bare
        encoder, a blend of uncached parts has no such count (AttributeError)."""
        counts = [part.embedded for part in (self.primary, self.secondary) if hasattr(part, "embedded")]
        if not counts:
            raise AttributeError("embedded")
        return max(counts)

    def missing(self, texts: Sequence[str], role: str = "passage") -> list[str]:
        gaps = [part.missing(texts, role) for part in (self.primary, self.secondary) if hasattr(part, "missing")]
        return list(dict.fromkeys(t for gap in gaps for t in gap))

    def save(self) -> None:
        for part in (self.primary, self.secondary):
            if hasattr(part, "save"):
                part.save()

    def identity(self) -> dict[str, Any]:
        second = self.secondary.identity()
        return {**self.primary.identity(), "dim": self.dim,
                "blend": f"{second['model']}:{second['revision']}@{self.weight:g}"}


def blend_weight(identity: dict[str, Any]) -> float:
    """The second encoder's weight an embedder identity records (``"...@0.1"``; 0 for one encoder alone)."""
    blend = identity.get("blend") or ""
    return float(blend.rpartition("@")[2]) if blend else 0.0


def second_query(qvec: np.ndarray, weight: float, second_dim: int) -> np.ndarray:
    """A query vector whose inner product with a blended passage vector is the second encoder's cosine alone: the
    main part zeroed and the second part scaled back from ``sqrt(w / (1 + w))`` on both sides."""
    out = np.zeros_like(np.asarray(qvec, dtype=np.float32))
    out[-second_dim:] = np.asarray(qvec, dtype=np.float32)[-second_dim:] * ((1.0 + weight) / weight)
    return out
