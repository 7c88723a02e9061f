"""Cross-lingual helpers: the en->zh dictionary expansion and per-language filters."""

from __future__ import annotations

import pytest

from hanrag.config import Config
from hanrag.records import Filters
from hanrag.search.widen import with_lang


@pytest.fixture(scope="module")
def analyzer():
    from hanrag.text import get_analyzer

    return get_analyzer(Config())


def test_translate_query_maps_content_words(analyzer):
    from hanrag.search.xling import en_zh_dictionary, translate_query

    assert "人口" in en_zh_dictionary()["population"]
    out = translate_query("What was the population of the city in 1900?", analyzer, 0.5)
    assert "人口" in out and "市" in out
    assert all(0 < w <= 0.5 for w in out.values())
    # stopwords and question words bring nothing; Hangul readings only when asked for (인구 = 人口)
    assert translate_query("what is the", analyzer, 0.5) == {}
    assert "인구" in out
    plain = translate_query("What was the population of the city in 1900?", analyzer, 0.5, readings=False)
    assert not any("\uac00" <= ch <= "\ud7a3" for tok in plain for ch in tok)
    out = plain
    # one word's translations share the weight
    pop = [w for t, w in out.items() if t in {"人口", "总体", "人口数"}]
    assert sum(pop) == pytest.approx(0.5)


def test_with_lang_keeps_other_filters():
    f = with_lang(Filters(tier=(1,), source_glob="a*"), "zh")
    assert f.lang == ("zh",) and f.tier == (1,) and f.source_glob == "a*"
    assert with_lang(Filters(lang=("ko",)), "zh").lang == ("__none__",)
    assert with_lang(None, "en") == Filters(lang=("en",))


def _offensive_headwords() -> set[str]:
    import gzip

    from hanrag.text.cedict import _OFFENSIVE, cedict_path

    out = set()
    with gzip.open(cedict_path(), "rt", encoding="utf-8") as fh:
        for line in fh:
            head, _, rest = line.partition(" [")
            parts = head.split(" ")
            if not line.startswith("#") and len(parts) == 2 and _OFFENSIVE.search(rest):
                out.add(parts[1])
    return out


def test_no_frequent_english_word_translates_into_a_tagged_sense(analyzer):
    """The 5,000 most frequent English words: no translation is a derog./vulgar/slang/offensive headword."""
    from wordfreq import top_n_list

    from hanrag.search.xling import _lookup, en_zh_dictionary

    bad = _offensive_headwords()
    assert {"棒子", "思密达"} <= bad  # the slurs of the bug report are tagged in CC-CEDICT
    dictionary = en_zh_dictionary()
    words = top_n_list("en", 5000)
    assert len(words) == 5000
    found = {w: hit for w in words if (hit := set(_lookup(w, dictionary)) & bad)}
    assert not found


def test_korean_alphabet_question_translates_to_common_senses_only(analyzer):
    from hanrag.search.xling import translate_query

    out = translate_query("who invented the Korean alphabet", analyzer, 6.0)
    assert not {"棒子", "思密达", "杜撰"} & set(out)
    assert "发明" in out and "字母表" in out
    assert translate_query("how do you make it", analyzer, 6.0) == {}  # function words are not translated


def test_translations_are_whole_words(analyzer):
    """A single character jieba cuts out of a longer headword is not a translation: "Korean" is 韩国 (and its
    reading 한국), never 人 out of 韩国人, which matched every passage about people; "VPN" is not 微 劈 恩."""
    from hanrag.search.xling import translate_query

    sources: dict[str, str] = {}
    out = translate_query("who created the Korean alphabet", analyzer, 1.0, sources)
    assert "韩国" in out and "한국" in out
    assert "人" not in out
    assert not [t for t, src in sources.items() if src == "vpn" and len(t) < 2]
    vpn = translate_query("what to do when the VPN does not connect", analyzer, 1.0, sources)
    assert not {"微", "劈", "恩"} & set(vpn)
