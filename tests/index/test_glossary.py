"""The corpus glossary: which 한글(English) glosses become term pairs, and its bound."""

from __future__ import annotations

import json

from hanrag.index import glossary
from hanrag.index.glossary import mine_glossary


def test_both_gloss_directions_become_pairs():
    g = mine_glossary(["파드의 활성 프로브(liveness probe)를 설정한다.", "Deployment(디플로이먼트)는 파드를 관리한다.",
                       "데몬셋（DaemonSet）"])
    assert g == {"활성 프로브": ["liveness probe"], "디플로이먼트": ["Deployment"], "데몬셋": ["DaemonSet"]}


def test_explanations_acronyms_particles_and_modifiers_are_not_terms():
    g = mine_glossary([
        "컨테이너 런타임 인터페이스(CRI)",  # an acronym: which Korean words it stands for is unknown
        "볼륨을(volume)",  # a case particle glued to the word
        "통합된(aggregated)",  # a modifier: a gloss of a longer English word
        "설정(see the section on configuring the kubelet below)",  # an explanation, not another name
        "예(e.g.)",  # too short once stripped
        "정의(the)",  # function words only
        "서비스 품질(Quality of)",  # a phrase cut short: a function word at its end
        "한국어(한국어)",  # no Latin gloss at all
    ])
    assert g == {}


def test_most_frequent_gloss_first_and_at_most_per_term():
    texts = ["어피니티(affinity)"] * 3 + ["어피니티(Affinity)"] * 2 + ["어피니티(anti-affinity)"] + ["어피니티(rule)"]
    g = mine_glossary(texts)
    # casefolded forms count together, written as the corpus writes them most often
    assert g["어피니티"][0] == "affinity" and len(g["어피니티"]) == glossary.PER_TERM


def test_the_glossary_stays_within_its_byte_bound():
    # 5,000 distinct glossed terms; the most often glossed ones are kept
    hangul = [chr(0xAC00 + i) + chr(0xAC00 + j) + "셋" for i in range(100) for j in range(50)]
    latin = [f"term{i}x" for i in range(len(hangul))]
    texts = [f"{k}({e})" for k, e in zip(hangul, latin, strict=True)] + ["디플로이먼트(Deployment)"] * 5
    g = mine_glossary(texts)
    assert 100 < len(g) < len(hangul)
    assert len(json.dumps(g)) <= glossary.MAX_BYTES  # ASCII-escaped: the worst case a JSON store sees
    assert g["디플로이먼트"] == ["Deployment"]


def test_a_pair_is_the_whole_gloss():
    """The noun phrase before the parenthesis is glossed whole: 사후 분석(Postmortem) is 사후 분석, not the common
    word 분석; it runs back to a word that cannot be part of a term (파드의, 그리고), with Kiwi's reading."""
    from hanrag.config import Config
    from hanrag.text import get_analyzer

    texts = ["장애가 끝나면 사후 분석 (Postmortem)을 쓴다.", "파드의 활성 프로브(liveness probe)를 설정한다.",
             "그리고 프로브(probe)", "서비스 품질(Quality of Service) 클래스"]
    kiwi = get_analyzer(Config()).is_nominal_word
    assert mine_glossary(texts, kiwi) == {"사후 분석": ["Postmortem"], "활성 프로브": ["liveness probe"],
                                          "프로브": ["probe"], "서비스 품질": ["Quality of Service"]}
    # a phrase that may run on past the three words the pattern sees is left alone rather than cut
    assert mine_glossary(["쿠버네티스 파드 활성 프로브 설정(liveness probe)"], kiwi) == {}
    assert mine_glossary(["파드의 활성 프로브 설정(liveness probe settings)"], kiwi) == {
        "활성 프로브 설정": ["liveness probe settings"]}
