"""Any local encoder or cross-encoder on an int8 (or fp32) CPU runtime: OpenVINO or ONNX Runtime.

``embedder.backend = "sentence-transformers"`` with ``embedder.runtime = "openvino" | "onnx"`` (and
``precision = "int8" | "fp32"``), and ``[search.rerank] runtime`` / ``precision`` the same for the
cross-encoder. The model folder is found and read by :mod:`hanrag.embed.model_folder`, converted once into the
machine cache (:mod:`hanrag.embed.runtime_convert`) and run here around it the way sentence-transformers runs
it on torch, so the numbers agree:

* encoder: the model folder's tokenizer (lower-cased first where ``sentence_bert_config.json`` says so), the
  configured prompt (or the folder's default prompt) prepended, truncation to ``max_seq_length`` (checked
  against the model's positions, as for torch), the pooling of ``1_Pooling/config.json`` (cls, mean, max,
  mean_sqrt_len_tokens, weightedmean, lasttoken; ``include_prompt = false`` honoured), L2 normalisation;
* cross-encoder: the pair tokenised with ``longest_first`` truncation to ``max_length`` (at most the model's
  positions, else an error at load, as for torch), the
  sequence-classification logits, and the activation ``CrossEncoder.predict`` applies (sentence-transformers
  6.2: the config's ``sentence_transformers.activation_fn`` if it is a ``torch.`` class, else the legacy
  ``sbert_ce_default_activation_function``, else sigmoid for one label and identity for more);
* texts are sorted by token count and padded per batch (``batch_size``); the int8 ONNX model runs one text at
  a time (its dynamic scales would make a row depend on its batch-mates).

The converted model needs neither torch nor sentence-transformers to run, only transformers' tokenizer and
the runtime; converting needs torch and transformers.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.embed.base import _normalise
from hanrag.embed.model_folder import (
    Layout,
    ModelRuntimeError,
    check_packages,
    model_name,
    read_layout,
    resolve_model,
    revision,
)
from hanrag.embed.runtime_convert import CONVERTER_VERSION, CompiledModel, ensure_converted
from hanrag.embed.text import prepare_text

# one sentence per language: a tokenizer that does not know a language turns most of it into its unknown token
COVERAGE_SAMPLES = {
    "ko": "서버 배포가 실패하면 먼저 로그를 확인하고 이전 버전으로 롤백한다.",
    "zh": "服务器部署失败时，先检查日志，然后回滚到上一个版本。",
    "en": "When a server deployment fails, check the logs first and roll back to the previous version.",
}


def load_tokenizer(folder: Path) -> Any:
    import warnings

    from transformers import AutoTokenizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AutoTokenizer.from_pretrained(str(folder), local_files_only=True)


def load_config(folder: Path) -> Any:
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(str(folder), local_files_only=True)


def _check_runtime(runtime: str, precision: str, key: str) -> None:
    """``key``: the runtime setting, e.g. "embedder.runtime"."""
    if runtime not in ("openvino", "onnx"):
        raise ModelRuntimeError(f"{key} must be 'openvino' or 'onnx' here, got {runtime!r}")
    check_packages(runtime, precision, key, convert=False)


def _read_model(source: Path, model: str, key: str, length_key: str, length: int) -> tuple[Any, Any, int]:
    """The model's transformers config, its tokenizer and its usable positions; ``length`` (the setting
    ``length_key``) must fit them."""
    from hanrag.embed.sentence_transformer import usable_positions

    try:
        config, tokenizer = load_config(source), load_tokenizer(source)
    except Exception as exc:
        raise ModelRuntimeError(f"{key} = {model!r}: cannot read its config or tokenizer: {exc}") from exc
    positions = usable_positions(config)
    if positions and length > positions:
        raise ModelRuntimeError(f"{length_key} = {length} exceeds what model {model!r} can take ({positions} token "
                                f"positions, max_position_embeddings): set {length_key} <= {positions}")
    return config, tokenizer, positions


def unknown_shares(tokenizer: Any) -> dict[str, float]:
    """Per language of :data:`COVERAGE_SAMPLES`, the share of its tokens that are the tokenizer's unknown token."""
    unk = getattr(tokenizer, "unk_token_id", None)
    shares = {}
    for lang, text in COVERAGE_SAMPLES.items():
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        shares[lang] = (sum(1 for i in ids if i == unk) / len(ids)) if ids and unk is not None else 0.0
    return shares


def _pad(rows: Sequence[Sequence[int]], value: int) -> np.ndarray:
    width = max(len(r) for r in rows)
    out = np.full((len(rows), width), value, dtype=np.int64)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


class _Runner:
    """A tokenizer and a converted model: tokenised rows in, model outputs per length-sorted padded batch out."""

    def __init__(self, model: CompiledModel, tokenizer: Any, batch_size: int) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = 1 if model.one_at_a_time else max(1, batch_size)
        self.pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)
        self.pad_type = int(getattr(tokenizer, "pad_token_type_id", 0) or 0)

    def batches(self, enc: dict[str, list[list[int]]]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(row indices, model output, attention mask) per batch, longest texts first."""
        ids = enc["input_ids"]
        order = np.argsort([-len(r) for r in ids], kind="stable")
        for start in range(0, len(ids), self.batch_size):
            idx = order[start : start + self.batch_size]
            feeds = {"input_ids": _pad([ids[i] for i in idx], self.pad_id)}
            feeds["attention_mask"] = _pad([[1] * len(ids[i]) for i in idx], 0)
            if "token_type_ids" in self.model.names:
                types = enc.get("token_type_ids") or [[0] * len(r) for r in ids]
                feeds["token_type_ids"] = _pad([types[i] for i in idx], self.pad_type)
            yield idx, self.model(feeds), feeds["attention_mask"]


def _pool(hidden: np.ndarray, mask: np.ndarray, modes: Sequence[str]) -> np.ndarray:
    """sentence-transformers' Pooling (right padding) in numpy: the modes' vectors concatenated."""
    hidden = hidden.astype(np.float32, copy=False)
    m = mask.astype(np.float32)[:, :, None]
    counts = np.clip(m.sum(axis=1), 1e-9, None)
    out = []
    for mode in modes:
        if mode == "cls":
            out.append(hidden[np.arange(len(hidden)), mask.argmax(axis=1)])
        elif mode == "mean":
            out.append((hidden * m).sum(axis=1) / counts)
        elif mode == "mean_sqrt_len_tokens":
            out.append((hidden * m).sum(axis=1) / np.sqrt(counts))
        elif mode == "max":
            out.append(np.where(m > 0, hidden, -np.inf).max(axis=1))
        elif mode == "weightedmean":
            w = m * np.arange(1, hidden.shape[1] + 1, dtype=np.float32)[None, :, None]
            out.append((hidden * w).sum(axis=1) / np.clip(w.sum(axis=1), 1e-9, None))
        elif mode == "lasttoken":
            last = np.where(mask.any(axis=1), mask.shape[1] - 1 - mask[:, ::-1].argmax(axis=1), mask.shape[1] - 1)
            out.append(hidden[np.arange(len(hidden)), last] * m[np.arange(len(hidden)), last])
    return np.concatenate(out, axis=1)


class RuntimeEmbedder:
    """A sentence-transformers model folder (local path or cached hub id) converted to OpenVINO or ONNX Runtime."""

    backend = "sentence-transformers"

    def __init__(
        self,
        model: str,
        max_seq_length: int = 512,
        *,
        runtime: str = "openvino",
        precision: str = "int8",
        batch_size: int = 16,
        query_prompt: str = "",
        passage_prompt: str = "",
        cache_dir: str | Path | None = None,
        threads: int = 0,
    ) -> None:
        _check_runtime(runtime, precision, "embedder.runtime")
        self.folder = resolve_model(model, "embedder.model")
        self.layout: Layout = read_layout(self.folder, "embedder.model")
        config, tokenizer, positions = _read_model(self.layout.transformer, model, "embedder.model",
                                                   "embedder.max_seq_length", max_seq_length)
        converted = ensure_converted(self.folder, "encoder", runtime, precision, cache_dir=cache_dir,
                                     layout=self.layout, key="embedder.model")
        self.converted = converted
        self._runner = _Runner(CompiledModel(converted, threads), tokenizer, batch_size)
        self.tokenizer = tokenizer
        self.model = model
        self.runtime = runtime
        self.precision = precision
        self.max_tokens = max_seq_length
        self.max_positions = positions
        self.truncates = True
        self.batch_size = max(1, batch_size)
        self.query_prompt = query_prompt or self._default_prompt()
        self.passage_prompt = passage_prompt or self._default_prompt()
        self._configured_prompts = (query_prompt, passage_prompt)
        self.dim = int(config.hidden_size) * len(self.layout.pooling)
        self._lock = threading.Lock()
        self._prompt_lengths: dict[str, int] = {}
        self._identity: dict[str, Any] | None = None

    def _default_prompt(self) -> str:
        name = self.layout.default_prompt_name
        return self.layout.prompts.get(name, "") if name else ""

    def _prepare(self, text: str, prompt: str) -> str:
        text = prompt + prepare_text(text)
        return text.lower() if self.layout.do_lower_case else text

    def _prompt_length(self, prompt: str) -> int:
        """Tokens of the prompt (without a trailing special token), as sentence-transformers counts them."""
        if prompt not in self._prompt_lengths:
            ids = self.tokenizer(self._prepare("", prompt), truncation=True, max_length=self.max_tokens)["input_ids"]
            n = len(ids)
            if ids and ids[-1] in set(getattr(self.tokenizer, "all_special_ids", [])):
                n -= 1
            self._prompt_lengths[prompt] = n
        return self._prompt_lengths[prompt]

    def _encode(self, texts: Sequence[str], prompt: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        prepared = [self._prepare(t, prompt) for t in texts]
        with self._lock:
            enc = self.tokenizer(prepared, truncation=True, max_length=self.max_tokens)
            skip = self._prompt_length(prompt) if prompt and not self.layout.include_prompt else 0
            out = np.zeros((len(texts), self.dim), np.float32)
            for idx, hidden, mask in self._runner.batches(enc):
                if skip:
                    mask = mask.copy()
                    mask[:, :skip] = 0
                out[idx] = _pool(hidden, mask, self.layout.pooling)
        return _normalise(out, self.dim)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.passage_prompt)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, self.query_prompt)

    def count_tokens(self, text: str) -> int:
        """Tokens (with specials and the passage prompt) before truncation."""
        return len(self.tokenizer(self._prepare(text, self.passage_prompt), truncation=False)["input_ids"])

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            path = Path(self.model).expanduser()
            self._identity = {
                "backend": self.backend,
                "model": path.name if path.is_dir() else self.model,
                "revision": revision(self.folder),
                "dim": self.dim,
                "max_tokens": self.max_tokens,
                "query_prompt": self._configured_prompts[0],
                "passage_prompt": self._configured_prompts[1],
                "runtime": self.runtime,
                "precision": self.precision,
                "converter": CONVERTER_VERSION,
            }
        return dict(self._identity)


def _activation(config: Any) -> Any:
    """The activation ``CrossEncoder.predict`` applies to this model's logits (sentence-transformers 6.2)."""
    path = None
    st = getattr(config, "sentence_transformers", None)
    if isinstance(st, dict) and st.get("activation_fn"):
        path = str(st["activation_fn"])
    elif getattr(config, "sbert_ce_default_activation_function", None):
        path = str(config.sbert_ce_default_activation_function)
    if path and not path.startswith("torch."):
        path = None  # sentence-transformers refuses an untrusted path and falls back to the default too
    name = path.rsplit(".", 1)[-1] if path else ("Sigmoid" if int(config.num_labels) == 1 else "Identity")
    simple = {
        "Sigmoid": lambda x: 1.0 / (1.0 + np.exp(-x)),
        "Identity": lambda x: x,
        "Tanh": np.tanh,
    }
    if name in simple:
        return simple[name]

    def through_torch(x: np.ndarray) -> np.ndarray:  # any other torch activation class, as torch computes it
        import importlib

        import torch

        module, cls = path.rsplit(".", 1)  # type: ignore[union-attr]
        return getattr(importlib.import_module(module), cls)()(torch.from_numpy(x)).numpy()

    return through_torch


class RuntimeCrossEncoder:
    """A cross-encoder converted to OpenVINO or ONNX Runtime, called like sentence-transformers' ``CrossEncoder``."""

    def __init__(self, model: str, max_length: int = 512, *, runtime: str = "openvino", precision: str = "int8",
                 cache_dir: str | Path | None = None, threads: int = 0, key: str = "search.rerank.model") -> None:
        _check_runtime(runtime, precision, "search.rerank.runtime")
        self.folder = resolve_model(model, key)
        config, self.tokenizer, positions = _read_model(self.folder, model, key, "search.rerank.max_length", max_length)
        self.max_length = max_length
        self.max_positions = positions
        self.config = config
        self.num_labels = int(config.num_labels)
        self.activation = _activation(config)
        converted = ensure_converted(self.folder, "cross-encoder", runtime, precision, cache_dir=cache_dir, key=key)
        self.converted = converted
        self._model = CompiledModel(converted, threads)
        self.name = model_name(self.folder)
        self.runtime = runtime
        self.precision = precision

    def predict(self, pairs: Sequence[Sequence[str]], batch_size: int = 32, show_progress_bar: bool | None = None,
                convert_to_numpy: bool = True, **_: Any) -> np.ndarray:
        """Scores of ``(query, passage)`` pairs (one row of ``num_labels`` per pair when more than one label)."""
        pairs = [tuple(p) for p in pairs]
        if not pairs:
            return np.zeros(0, np.float32)
        # no lock: the tokenizer is called with the same settings every time and the model takes threads at once
        enc = self.tokenizer([p[0] for p in pairs], [p[1] for p in pairs], truncation="longest_first",
                             max_length=self.max_length)
        out = np.zeros((len(pairs), self.num_labels), np.float32)
        for idx, logits, _mask in _Runner(self._model, self.tokenizer, batch_size).batches(enc):
            out[idx] = logits.reshape(len(idx), -1)
        scores = np.asarray(self.activation(out), dtype=np.float32)
        return scores[:, 0] if self.num_labels == 1 else scores


def coverage_warnings(model: str, key: str) -> list[str]:
    """Languages (of Korean, Chinese, English) whose sample sentence is over a third unknown tokens for ``model``."""
    folder = resolve_model(model, key)
    layout = read_layout(folder, key) if (folder / "modules.json").is_file() else None
    tokenizer = load_tokenizer(layout.transformer if layout else folder)
    return [f"{lang} ({share:.0%} of its tokens unknown)" for lang, share in unknown_shares(tokenizer).items()
            if share > 1 / 3]


def model_positions(model: str, key: str) -> int:
    """Token positions the model in ``model`` can take (0 when its config does not say)."""
    from hanrag.embed.sentence_transformer import usable_positions

    folder = resolve_model(model, key)
    layout = read_layout(folder, key) if (folder / "modules.json").is_file() else None
    return usable_positions(load_config(layout.transformer if layout else folder))


__all__ = ["COVERAGE_SAMPLES", "ModelRuntimeError", "RuntimeCrossEncoder", "RuntimeEmbedder", "coverage_warnings",
           "model_positions", "unknown_shares"]
