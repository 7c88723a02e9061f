"""Korean (Hangul) tokenisation with Kiwi: content morphemes only.

Kept: nouns (NN*; one-syllable nouns too, since 목 화 토 금 수 and 갑 을 병 정 are key
terms), verbs and adjectives (VV*, VA*) by lemma, other kept tags with ≥ 2 characters.
A negating prefix (XPN 비- 무- 미- 불-) is glued to the noun it modifies, so 비급여
indexes as 비급여, never as 급여. Hanja and Latin never reach Kiwi (see normalize), so Kiwi's SL, SH and
SN tags are handled by the Chinese and English tokenizers instead.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from hanrag.text.normalize import without_surrogates

# bound nouns of one syllable (것 수 등 때 중) carry no content: the one exception to "nouns of any length"
_BOUND = "NNB"


class KoreanTokenizer:
    def __init__(self, user_words: Iterable[str] = ()) -> None:
        from kiwipiepy import Kiwi

        self._kiwi = Kiwi()
        for w in user_words:
            # proper-noun tag with a high score so the compound beats its syllables (용신 ≠ 용 + 신)
            self._kiwi.add_user_word(w, "NNP", 0.0)

    def _filter(self, toks) -> list[str]:
        out: list[str] = []
        prefix = ""
        for t in toks:
            tag = t.tag
            if tag == "XPN":
                prefix = t.form
                continue
            if tag.startswith("NN"):
                form = prefix + t.form
                if len(form) > 1 or not tag.startswith(_BOUND):
                    out.append(form)
            elif tag.startswith(("VV", "VA")):
                lemma = getattr(t, "lemma", "") or t.form + "다"
                if len(lemma) >= 2:
                    out.append(lemma)
            # SL / SH / SN never reach here with content: Latin and Han runs are tokenised outside Kiwi
            prefix = ""
        return out

    def tokenize(self, text: str) -> list[str]:
        if not text.strip():
            return []
        return self._filter(self._kiwi.tokenize(text))

    @functools.lru_cache(maxsize=256)  # noqa: B019 - one tokenizer per process: a query's lexicon and glossary
    def morphemes(self, text: str) -> tuple[tuple[str, str, int, int], ...]:  # look-ups share one analysis
        """Kiwi's morphemes of ``text`` as (form, tag, start, end), offsets into ``text``."""
        if not text.strip():
            return ()
        # the term finder passes the query as typed (offsets into it): a lone surrogate would end Kiwi's UTF-16 decode
        tokens = self._kiwi.tokenize(without_surrogates(text))
        return tuple((t.form, t.tag, t.start, t.start + t.len) for t in tokens)

    def tokenize_many(self, texts: list[str]) -> list[list[str]]:
        return [self._filter(toks) for toks in self._kiwi.tokenize(texts)]
