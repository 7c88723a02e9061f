"""Near-duplicates are the same text: copies fold, distinct texts of one genre never do."""

from __future__ import annotations

import opencc
import pytest

from hanrag.index.dedup import jaccard, mark_duplicates, normalise, shingles
from hanrag.records import Chunk

T2S = opencc.OpenCC("t2s").convert

STEMS = "甲乙丙丁戊己庚辛壬癸"
BRANCHES = "子丑寅卯辰巳午未申酉戌亥"
MONTHS = ["正", "二", "三", "四", "五", "六", "七", "八", "九", "十", "十一", "十二"]
USES = ["庚金", "丁火", "癸水", "丙火", "壬水", "戊土", "甲木", "己土", "辛金", "乙木"]


def _chunk(i: int, doc: str, text: str, tier: int = 0, path: str = "") -> Chunk:
    return Chunk(chunk_id=f"c{i}", doc_id=doc, text=text, start=0, end=len(text), source=f"src-{doc}",
                 path=path or f"{doc}.md", tier=tier)


def classical_lines() -> list[str]:
    """50 distinct short lines in one classical formula (what embeddings put above 0.95 of each other)."""
    out = []
    for i in range(50):
        s, b, m = STEMS[i % 10], BRANCHES[(i * 7) % 12], MONTHS[(i * 5) % 12]
        u1, u2 = USES[(i * 3) % 10], USES[(i * 3 + 1 + i // 10) % 10]
        out.append(f"{m}{s}{'木火土金水'[i % 5]}，生於{b}月，先用{u1}，次用{u2}。")
    assert len(set(out)) == 50
    return out


def korean_definitions() -> list[str]:
    """50 distinct short Korean definitions of one genre."""
    subjects = ["갑목", "을목", "병화", "정화", "무토", "기토", "경금", "신금", "임수", "계수"]
    traits = ["큰 나무", "풀과 덩굴", "태양", "촛불", "큰 산", "논밭의 흙", "쇠붙이", "보석", "큰 바다", "이슬비"]
    seasons = ["봄", "여름", "가을", "겨울", "환절기"]
    states = ["강하다", "약하다", "조화롭다", "메마르다", "넘친다"]
    return [f"{subjects[i % 10]}은 {traits[(i * 3) % 10]}에 비유되며 {seasons[i % 5]}에 {states[i // 10]}."
            for i in range(50)]


@pytest.mark.parametrize("texts", [classical_lines(), korean_definitions()], ids=["classical-zh", "ko-definitions"])
def test_distinct_short_texts_of_one_genre_are_never_folded(texts):
    assert len(set(texts)) == 50
    chunks = [_chunk(i, f"d{i}", t) for i, t in enumerate(texts)]
    res = mark_duplicates(chunks, t2s=T2S)
    assert res.duplicates == 0, [(chunks[p.dup].text, chunks[p.kept].text, p.jaccard) for p in res.pairs]


PARA = ("배포가 실패하면 먼저 이전 리비전으로 롤백한다. kubectl rollout undo deployment/web 명령은 직전 "
        "리비전으로 되돌리고, --to-revision 옵션으로 특정 리비전을 고를 수 있다. 롤백 뒤에는 파드 상태를 "
        "확인하고 원인을 기록한다.")
ZH_TRAD = "三春甲木，陽氣漸升，先用庚金劈甲，次用丁火暖局，庚丁兩透，富貴可期。若無庚金，則用丙火，亦主清秀。"


@pytest.mark.parametrize(
    "copy",
    [
        PARA.replace(" ", "  ").replace("다. ", "다.\n"),  # whitespace and line breaks
        PARA.replace(".", "!").replace(",", ";"),  # punctuation
        PARA.upper(),  # case
        "＂" + PARA.replace("kubectl", "ｋｕｂｅｃｔｌ") + "＂",  # full-width forms (NFKC)
        PARA.replace("직전", "바로 앞"),  # a template that differs in one word
    ],
    ids=["whitespace", "punctuation", "case", "nfkc", "one-word"],
)
def test_the_same_paragraph_in_two_files_is_folded(copy):
    chunks = [_chunk(0, "a", PARA), _chunk(1, "b", copy)]
    res = mark_duplicates(chunks, t2s=T2S)
    assert res.dup_of.tolist() == [-1, 0]


def test_traditional_and_simplified_copies_fold():
    simp = T2S(ZH_TRAD)
    assert simp != ZH_TRAD
    res = mark_duplicates([_chunk(0, "a", ZH_TRAD), _chunk(1, "b", simp)], t2s=T2S)
    assert res.dup_of.tolist() == [-1, 0]


def test_a_paragraph_sharing_one_sentence_is_not_folded():
    first = PARA.split(". ")[0] + "."
    other = first + (" 이 문서는 캐시 정책을 다룬다. 캐시는 배포마다 비우지 않고, 키에 버전을 붙여 무효화한다."
                     " 만료 시간은 서비스별로 정한다.")
    res = mark_duplicates([_chunk(0, "a", PARA), _chunk(1, "b", other)], t2s=T2S)
    assert res.duplicates == 0
    assert jaccard(shingles(normalise(PARA)), shingles(normalise(other))) < 0.3


def test_same_document_copies_and_excluded_paths_stay():
    chunks = [_chunk(0, "a", PARA), _chunk(1, "a", PARA), _chunk(2, "b", PARA, path="mirror/b.md")]
    assert mark_duplicates(chunks).dup_of.tolist() == [-1, -1, 0]
    assert mark_duplicates(chunks, exclude=["mirror/*"]).dup_of.tolist() == [-1, -1, -1]
    assert mark_duplicates(chunks, exclude=["a.md"]).dup_of.tolist() == [-1, -1, -1]  # nothing folds into it


def test_better_tier_is_kept_even_when_later_and_pairs_are_reported():
    chunks = [_chunk(0, "a", PARA, tier=2), _chunk(1, "b", PARA, tier=0), _chunk(2, "c", PARA, tier=1)]
    res = mark_duplicates(chunks)
    assert res.dup_of.tolist() == [1, -1, 1]
    assert res.duplicates == 2 and res.groups == 1
    assert {(p.dup, p.kept) for p in res.pairs} == {(0, 1), (2, 1)} and all(p.jaccard == 1.0 for p in res.pairs)


def test_empty_and_punctuation_only_texts_are_never_duplicates():
    chunks = [_chunk(0, "a", "---"), _chunk(1, "b", "..."), _chunk(2, "c", "")]
    assert mark_duplicates(chunks).duplicates == 0


def test_many_chunks_with_copies_scattered():
    texts = classical_lines() + korean_definitions()
    chunks = [_chunk(i, f"d{i}", t) for i, t in enumerate(texts)]
    chunks += [_chunk(100 + i, f"copy{i}", texts[i * 7] + " ") for i in range(10)]
    res = mark_duplicates(chunks, t2s=T2S)
    assert res.duplicates == 10
    assert [int(res.dup_of[100 + i]) for i in range(10)] == [i * 7 for i in range(10)]
