"""Tokenizers behind one interface: ``Analyzer.tokenize(text, lang) -> list[str]``.

Text is split into script runs (see :mod:`hanrag.text.normalize`) and each run kind
has one tokenizer, whatever the chunk's language tag says:

* Hangul and the rest → Kiwi content morphemes (:mod:`hanrag.text.korean`);
* Han characters → OpenCC t2s + jieba (:mod:`hanrag.text.chinese`), plus the Hangul
  reading of every multi-character word (甲木 → 갑목) when ``text.hanja_readings``;
* Latin → lower-cased words, stopwords, allowlist, optional stemming
  (:mod:`hanrag.text.english`).

So a Hanja or Latin term yields the same tokens in a ko, zh or en chunk (the
invariance the index relies on). ``lang`` is still validated: callers pass the chunk
or query language and a wrong tag is a bug worth hearing about.

Readings are an index-side and query-side addition: in a document 甲木 indexes as
甲木 + 갑목 (so the Korean query 갑목 finds it); in a query the readings of Han words
become expansions (so the query 甲木 finds Korean text saying 갑목) — see
:mod:`hanrag.text.query`.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hanrag.text.normalize import HAN_RUN, HANGUL, normalize, split_runs

if TYPE_CHECKING:
    from hanrag.config import Config, TextConfig
    from hanrag.lexicon import Lexicon

LANGS = ("ko", "zh", "en")
ANALYZER_VERSION = 1  # bump when tokenisation changes so old indexes are rebuilt


@dataclass(frozen=True)
class Analysis:
    tokens: tuple[str, ...]  # the text's own tokens
    readings: tuple[str, ...]  # Hangul readings of its Han words (empty when readings are off)


class Analyzer:
    def __init__(self, text_cfg: TextConfig, lexicon: Lexicon | None = None) -> None:
        from hanrag.text.english import EnglishTokenizer

        self.cfg = text_cfg
        self.lexicon = lexicon
        self._en = EnglishTokenizer(text_cfg.en_allowlist, stem=text_cfg.en_stem)
        words = lexicon.words() if lexicon is not None else set()
        self._han_words = sorted(w for w in words if HAN_RUN.fullmatch(w))
        # Kiwi user words: Hangul-only words without spaces (a space-separated key is two words to Kiwi)
        self._ko_words = sorted(w for w in words if HANGUL.search(w) and not HAN_RUN.search(w) and " " not in w)

    @functools.cached_property
    def _ko(self):
        from hanrag.text.korean import KoreanTokenizer

        return KoreanTokenizer(self._ko_words)

    @functools.cached_property
    def _zh(self):
        from hanrag.text.chinese import ChineseTokenizer

        return ChineseTokenizer(self.cfg.opencc, self._han_words, readings=self.cfg.hanja_readings)

    @functools.cached_property
    def _lexicon_ko(self) -> dict[str, tuple[str, ...]]:
        """Kiwi's tokens of the Hangul part of every lexicon term and equivalent, from hanrag's cache folder.

        An English or Chinese query often expands to Korean lexicon equivalents (rolling update -> 롤링업데이트);
        their tokens come from this table so the query does not load Kiwi (seconds) for them. The table is
        Kiwi's own output, keyed by the analyzer identity (lexicon content, Kiwi version, settings): the tokens
        are those Kiwi gives. Missing or unreadable, it is computed with Kiwi and written once."""
        keys = sorted({rest for w in (self.lexicon.words() if self.lexicon is not None else ())
                       for rest in [split_runs(normalize(w))[2]] if HANGUL.search(rest)})
        if not keys:
            return {}
        from hanrag.text.chinese import cache_dir

        try:
            path = cache_dir() / "analysis" / f"lexicon-ko-{self.identity_hash()}.json"
        except OSError:
            return {}  # no cache folder: Kiwi answers, as it would anyway
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and set(data) == set(keys) and all(
                isinstance(v, list) and all(isinstance(t, str) for t in v) for v in data.values()
            ):
                return {k: tuple(v) for k, v in data.items()}
        except (OSError, ValueError):
            pass
        table = {k: tuple(self._ko.tokenize(k)) for k in keys}
        try:
            from hanrag.fsutil import atomic_write_text

            atomic_write_text(path, json.dumps(table, ensure_ascii=False), mkdir=True)
        except OSError:
            pass
        return table

    def english_token(self, word: str) -> str | None:
        """The BM25 token of one English word as the index writes it (stemmed when ``text.en_stem``); None for a
        stopword or a word too short to index."""
        tokens = self._en.tokenize(word)
        return tokens[0] if len(tokens) == 1 else None

    def is_nominal_word(self, word: str) -> bool:
        """Whether every morpheme Kiwi reads in ``word`` can be part of a term (a noun, not 파드의 or 그리고):
        for the corpus glossary (:func:`hanrag.index.glossary.mine_glossary`)."""
        morphs = self._ko.morphemes(word)
        return bool(morphs) and all(tag.startswith(_NOMINAL) for _, tag, _, _ in morphs)

    def term_border(self, folded: str) -> Callable[[int, int], bool]:
        """For :meth:`hanrag.lexicon.Lexicon.find_spans`: whether ``folded[i:j]`` stands on Kiwi's morpheme
        borders and holds nominal morphemes only, so a term keeps its particles and endings (갑목이, 롤백하는)
        but is never cut out of another word (인가 in 무엇인가요: 이 VCP + ㄴ가 EF; 득세 in 취득세) nor read
        out of a verb (세운 in 세종이 세운: 세우 VV)."""
        morphs = self._ko.morphemes(folded)

        def allowed(i: int, j: int) -> bool:
            inside = [(tag, start, end) for _, tag, start, end in morphs if i <= start < j]
            return (bool(inside) and inside[0][1] == i and any(end == j for _, _, end in inside)
                    and all(end <= j and tag.startswith(_NOMINAL) for tag, _, end in inside)
                    and not any(start < i < end for _, _, start, end in morphs))

        return allowed

    def _korean(self, rest: str) -> list[str]:
        """Kiwi's tokens of ``rest``; a lexicon phrase's from the table while Kiwi is not loaded."""
        if "_ko" not in self.__dict__ and self.lexicon is not None:
            known = self._lexicon_ko.get(rest)
            if known is not None:
                return list(known)
        return self._ko.tokenize(rest)

    def _check(self, lang: str) -> None:
        if lang not in LANGS:
            raise ValueError(f"unknown language {lang!r}; expected one of {', '.join(LANGS)}")

    def _analyze_runs(self, han: list[str], latin: list[str], ko_tokens: list[str]) -> Analysis:
        tokens = list(ko_tokens)
        readings: list[str] = []
        for run in han:
            t, r = self._zh.analyze(run)
            tokens.extend(t)
            readings.extend(r)
        for run in latin:
            tokens.extend(self._en.tokenize(run))
        return Analysis(tuple(tokens), tuple(readings))

    def analyze(self, text: str, lang: str) -> Analysis:
        """Tokens and Hanja readings of ``text`` kept apart (the query planner weights them differently)."""
        self._check(lang)
        han, latin, rest = split_runs(normalize(text))
        ko = self._korean(rest) if HANGUL.search(rest) else []
        return self._analyze_runs(han, latin, ko)

    def tokenize(self, text: str, lang: str) -> list[str]:
        """Index tokens of ``text``: its own tokens followed by the readings of its Han words."""
        a = self.analyze(text, lang)
        return [*a.tokens, *a.readings]

    def tokenize_many(self, texts: list[str], langs: list[str]) -> list[list[str]]:
        """:meth:`tokenize` for many texts; Kiwi analyses the Korean parts in one batch (faster)."""
        if len(texts) != len(langs):
            raise ValueError(f"{len(texts)} texts but {len(langs)} languages")
        for lang in set(langs):
            self._check(lang)
        parts = [split_runs(normalize(t)) for t in texts]
        ko_idx = [i for i, (_, _, rest) in enumerate(parts) if HANGUL.search(rest)]
        ko_out: dict[int, list[str]] = {}
        if ko_idx:
            for i, toks in zip(ko_idx, self._ko.tokenize_many([parts[i][2] for i in ko_idx]), strict=True):
                ko_out[i] = toks
        out = []
        for i, (han, latin, _) in enumerate(parts):
            a = self._analyze_runs(han, latin, ko_out.get(i, []))
            out.append([*a.tokens, *a.readings])
        return out

    def identity(self) -> dict:
        """Everything that decides the tokens, for the index manifest (a query must be analysed alike)."""
        from importlib.metadata import version

        # the installed versions, read without importing either library (a build or search may need neither)
        return {
            "analyzer_version": ANALYZER_VERSION,
            "en_stem": self.cfg.en_stem,
            "en_allowlist": sorted(w.lower() for w in self.cfg.en_allowlist),
            "hanja_readings": self.cfg.hanja_readings,
            "opencc": self.cfg.opencc,
            "lexicon_hash": self.lexicon.content_hash() if self.lexicon is not None else "",
            "kiwipiepy": version("kiwipiepy"),
            "jieba": version("jieba"),
            # these change tokens too (t2s tables, Snowball stems, Hanja readings): an upgrade must not mix them
            **{dist: _dist_version(dist) for dist in ("OpenCC", "PyStemmer", "hanja")},
        }

    def identity_hash(self) -> str:
        import hashlib

        blob = json.dumps(self.identity(), sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def _dist_version(dist: str) -> str:
    """An installed distribution's version, read from its metadata (no import); "" when absent."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ""


# Kiwi tags of what a lexicon term may consist of: nouns, roots, noun prefixes and suffixes, foreign words
_NOMINAL = ("NN", "NR", "NP", "XR", "XPN", "XSN", "SL", "SH", "SN")


_CACHE: dict[str, Analyzer] = {}


def get_analyzer(cfg: Config) -> Analyzer:
    """One Analyzer (one Kiwi, one jieba) per process and per text settings + lexicon content."""
    from dataclasses import asdict

    from hanrag.lexicon import load_lexicons

    lexicon = load_lexicons(cfg)
    key = json.dumps(asdict(cfg.text), sort_keys=True) + lexicon.content_hash()
    if key not in _CACHE:
        _CACHE[key] = Analyzer(cfg.text, lexicon)
    return _CACHE[key]


__all__ = ["Analysis", "Analyzer", "get_analyzer"]
