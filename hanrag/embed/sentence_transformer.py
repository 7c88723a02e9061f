"""Any sentence-transformers model (HF id or local path) on torch, with an explicit, checked max_seq_length."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.embed.base import _file_fingerprint, _normalise
from hanrag.embed.text import EmbedderError, prepare_text

_ROBERTA_LIKE = {"roberta", "xlm-roberta", "camembert", "xlm-roberta-xl", "longformer", "mpnet"}


def usable_positions(model_config: Any) -> int:
    """Token positions a model can take: RoBERTa-like models reserve ``pad_token_id + 1`` slots."""
    mpe = int(getattr(model_config, "max_position_embeddings", 0) or 0)
    if getattr(model_config, "model_type", "") in _ROBERTA_LIKE:
        mpe -= int(getattr(model_config, "pad_token_id", 1) or 1) + 1
    return mpe


class SentenceTransformerEmbedder:
    """Any sentence-transformers model (HF id or local path), with an explicit, checked max_seq_length."""

    backend = "sentence-transformers"

    def __init__(
        self,
        model: str,
        max_seq_length: int = 512,
        *,
        batch_size: int = 16,
        query_prompt: str = "",
        passage_prompt: str = "",
        device: str = "cpu",
    ) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # the optional [torch] extra
            raise EmbedderError(
                "embedder.backend = 'sentence-transformers' needs the [torch] extra: "
                "pip install torch==2.13.0 && pip install 'hanrag[torch]'"
            ) from exc
        try:
            st = SentenceTransformer(model, device=device)
        except Exception as exc:
            raise EmbedderError(
                f"cannot load sentence-transformers model {model!r}: {exc}. "
                "Give a local path or a model already in the Hugging Face cache (models are never downloaded)"
            ) from exc
        auto_model = getattr(st[0], "auto_model", None)
        positions = usable_positions(auto_model.config) if auto_model is not None else 0
        if positions and max_seq_length > positions:
            raise EmbedderError(
                f"embedder.max_seq_length = {max_seq_length} exceeds what model {model!r} can take "
                f"(max_position_embeddings allows {positions} tokens); set embedder.max_seq_length <= {positions}"
            )
        st.max_seq_length = max_seq_length
        self._st = st
        self.model = model
        self.max_tokens = max_seq_length
        self.max_positions = positions
        self.truncates = True
        dim_fn = getattr(st, "get_embedding_dimension", None) or st.get_sentence_embedding_dimension
        self.dim = int(dim_fn())
        self.batch_size = max(1, batch_size)
        self.query_prompt = query_prompt
        self.passage_prompt = passage_prompt
        self._lock = threading.Lock()
        self._identity: dict[str, Any] | None = None

    def _encode(self, texts: Sequence[str], prompt: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        with self._lock:
            out = self._st.encode(
                [prepare_text(t) for t in texts],
                prompt=prompt or None,
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return _normalise(out, self.dim)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.passage_prompt)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.query_prompt)

    def count_tokens(self, text: str) -> int:
        """Tokens (with specials and the passage prompt) before truncation."""
        enc = self._st.tokenizer(self.passage_prompt + prepare_text(text), add_special_tokens=True, truncation=False)
        return len(enc["input_ids"])

    def _revision(self) -> str:
        path = Path(self.model).expanduser()
        if not path.is_dir():
            # an HF id: the cache's snapshot folder is named by the commit
            name = getattr(self._st, "model_card_data", None)
            base = getattr(name, "base_model_revision", None) if name else None
            return str(base or "unknown")
        parts = path.resolve().parts
        if "snapshots" in parts:
            return parts[parts.index("snapshots") + 1]
        h = hashlib.sha256()
        for f in sorted(path.rglob("*")):
            if f.is_file() and f.suffix in {".safetensors", ".bin", ".json", ".txt", ".model"}:
                _file_fingerprint(f, h)
        return h.hexdigest()[:16]

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            path = Path(self.model).expanduser()
            self._identity = {
                "backend": self.backend,
                "model": path.name if path.is_dir() else self.model,
                "revision": self._revision(),
                "dim": self.dim,
                "max_tokens": self.max_tokens,
                "query_prompt": self.query_prompt,
                "passage_prompt": self.passage_prompt,
            }
        return dict(self._identity)
