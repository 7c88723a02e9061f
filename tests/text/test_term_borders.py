"""Lexicon terms in a Korean query are found on morpheme borders, and a Saju homograph only beside a Saju term.

The frozen list (tests/data/lexicon_terms_ko.json) holds, for every Korean question of ../shared/eval and of
eval/, the terms the finder should find; it was read by hand when written. Known and kept: 인가 standing as
its own word ("몇일 뒤 인가?", the typo "누구인인가?") is found, as the finder cannot know it is an ending there;
캐시 as part of a person's name would be found if Kiwi split the name. What is not in the list was never found
again: 인가 inside "…인가요?", 득세 inside 취득세, 세운 from 세우다, 지지 in 지지하는/지지율, 연주 the music.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from hanrag.config import Config
from hanrag.lexicon import Lexicon, LexiconError
from hanrag.text import get_analyzer
from hanrag.text.query import domain_terms

ROOT = Path(__file__).resolve().parents[2]
FROZEN = ROOT / "tests" / "data" / "lexicon_terms_ko.json"
SET_ROOTS = {"shared/": ROOT.parent / "shared" / "eval", "eval/": ROOT / "eval"}


@pytest.fixture(scope="module")
def finder():
    cfg = Config()
    analyzer = get_analyzer(cfg)
    lexicon = analyzer.lexicon
    return lambda q: domain_terms(q, analyzer, lexicon)


@pytest.mark.parametrize(("query", "expected"), [
    ("무엇인가요?", ()),  # 인가 (authorization) inside a question ending
    ("부동산 취득세 세율", ()),  # 득세 inside 취득세
    ("세종대왕이 세운 학교", ()),  # 세운 read out of 세우다
    ("정부를 지지하는 여론", ()),  # 지지 支持, a Saju homograph with no Saju term beside it
    ("피아노 연주 방법", ()),
    ("갑목이 인월에 태어나면", ("갑목", "인월")),  # particles stay outside the term
    ("배포를 롤백하는 방법", ("배포", "롤백")),  # so do endings
    ("배포롤백 절차", ("배포", "롤백")),  # a compound of two terms
    ("천간과 지지의 관계", ("천간", "지지")),  # the homograph beside a Saju term
    ("갑목 인월 용신", ("갑목", "인월", "용신")),
    ("인가 서버 설정", ("인가", "서버", "설정")),  # the word itself is still found
])
def test_terms_stand_on_morpheme_borders(finder, query: str, expected: tuple[str, ...]) -> None:
    assert finder(query) == expected


def test_without_a_border_test_the_finder_matches_inside_words() -> None:
    """The border comes from the caller (the query analyser's Kiwi); the bare finder is the old substring one,
    which is what the frozen list guards against."""
    lex = Lexicon({"인가": ["authorization"]})
    assert lex.find_terms("무엇인가요?") == ["인가"]


def test_homographs_must_be_lexicon_words(tmp_path: Path) -> None:
    path = tmp_path / "mine.tsv"
    path.write_text("#!homographs 지지 없는말\n지지\t地支\n", encoding="utf-8")
    with pytest.raises(LexiconError, match="없는말"):
        Lexicon.load([path])


def test_every_korean_question_of_the_eval_sets_against_the_frozen_list(finder) -> None:
    frozen = json.loads(FROZEN.read_text(encoding="utf-8"))
    checked = 0
    for name, want in frozen.items():
        prefix, set_name = name.split("/", 1)[0] + "/", name.split("/", 1)[1]
        queries = SET_ROOTS[prefix] / set_name / "queries.jsonl"
        if not queries.is_file():
            assert prefix == "shared/", f"{queries} is part of the repository"
            continue  # ../shared/eval is the machine's, not the repository's
        rows = [json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines() if line.strip()]
        korean = [r for r in rows if re.search("[가-힣]", r["text"])]
        assert len(korean) == want["korean_questions"], name
        got = {r["qid"]: list(finder(r["text"])) for r in korean}
        expected = {qid: [] for qid in got} | {qid: v["terms"] for qid, v in want["with_terms"].items()}
        wrong = {qid: (rows_text, got[qid], expected[qid]) for qid in got
                 for rows_text in [next(r["text"] for r in korean if r["qid"] == qid)] if got[qid] != expected[qid]}
        assert not wrong, f"{name}: {len(wrong)} questions differ (text, found, expected): {list(wrong.values())[:5]}"
        checked += len(korean)
    assert checked >= 250
