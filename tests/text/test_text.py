import dataclasses

import pytest

from hanrag.config import Bm25Config, Config, TextConfig
from hanrag.index.sparse import SparseIndex
from hanrag.lexicon import Lexicon
from hanrag.text import Analyzer, get_analyzer
from hanrag.text.query import analyze_query


@pytest.fixture(scope="module")
def analyzer() -> Analyzer:
    return get_analyzer(Config())


@pytest.fixture(scope="module")
def plain() -> Analyzer:
    """No lexicon, no readings: the bare tokenizers."""
    return Analyzer(dataclasses.replace(TextConfig(), hanja_readings=False))


def test_kiwi_filter_rules(plain):
    toks = plain.tokenize("목은 화를 생하고, 갑과 을은 친구를 만났다", "ko")
    assert {"목", "화", "갑", "을"} <= set(toks)  # single-syllable nouns kept
    assert not {"은", "를", "이", "고"} & set(toks)  # particles and endings dropped
    assert "만나다" in toks  # verbs by lemma
    toks = plain.tokenize("비급여 항목은 환자가 부담한다", "ko")
    assert "비급여" in toks and "급여" not in toks  # the negating prefix stays on its noun


def test_lexicon_words_are_not_split(analyzer, plain):
    assert analyzer.tokenize("용신과 대운을 본다", "ko")[:2] == ["용신", "대운"]
    assert "궁통보감" in analyzer.tokenize("궁통보감에 따르면", "ko")


def test_jieba_opencc_traditional_matches_simplified(plain):
    assert plain.tokenize("子午沖", "zh") == plain.tokenize("子午冲", "zh")
    assert plain.tokenize("窮通寶鑑", "zh") == plain.tokenize("穷通宝鉴", "zh")
    toks = plain.tokenize("我们的方法是有效的", "zh")
    assert "的" not in toks and "方法" in toks  # stopwords dropped


def test_english_acronyms_allowlist_and_stopwords(plain):
    toks = plain.tokenize("The CI and CD of a DB on a VM behind an LB; K8s with L4/L7 and C++", "en")
    assert {"ci", "cd", "db", "vm", "lb", "k8s", "l4", "l7", "c++"} <= set(toks)
    assert not {"the", "and", "of", "a", "an", "on"} & set(toks)


def test_english_stemming_optional():
    stem = Analyzer(dataclasses.replace(TextConfig(), en_stem=True))
    assert stem.tokenize("running flows", "en") == ["run", "flow"]
    assert stem.tokenize("k8s", "en") == ["k8s"]  # allowlisted tokens are never stemmed


@pytest.mark.parametrize(
    ("term", "contexts"),
    [
        ("甲木", {"ko": "{}은 봄에 강하다", "zh": "{}生于春", "en": "the {} stem"}),
        ("合沖", {"ko": "{}이 있다", "zh": "四柱{}", "en": "a {} case"}),
        ("Kubernetes", {"ko": "{}에서 배포", "zh": "在{}上部署", "en": "deploy on {} now"}),
    ],
)
def test_tokenizer_invariance(analyzer, term, contexts):
    alone = analyzer.tokenize(term, "en")
    assert alone
    for lang, ctx in contexts.items():
        toks = analyzer.tokenize(ctx.format(term), lang)
        for t in alone:
            assert t in toks, (lang, t, toks)
        # and the same term alone gives the same tokens under every language tag
        assert analyzer.tokenize(term, lang) == alone


def test_hanja_readings_index_and_query_side(analyzer):
    assert "갑목" in analyzer.tokenize("甲木生于寅月", "zh")  # index side: the reading is indexed
    qt = analyze_query("甲木", "zh", analyzer, analyzer.lexicon, 0.5)
    assert qt.weights["甲木"] == 1.0 and qt.weights["갑목"] == 0.5  # query side: reading as expansion


def test_analyze_query_weights(analyzer):
    qt = analyze_query("갑목 인월 용신", "ko", analyzer, analyzer.lexicon, 0.4)
    assert qt.tokens == ("갑목", "인월", "용신")
    assert qt.terms == ("갑목", "인월", "용신")
    assert dict(qt.expansions)["甲木"] == pytest.approx(0.4)
    assert all(qt.weights[t] == 1.0 for t in qt.tokens)
    # an equivalent that is also an original token keeps weight 1.0
    qt = analyze_query("쿠버네티스 kubernetes", "ko", analyzer, analyzer.lexicon, 0.4)
    (kube,) = analyzer.tokenize("kubernetes", "en")  # stemmed or not, per config
    assert qt.weights[kube] == 1.0
    assert kube not in dict(qt.expansions)
    qt = analyze_query("갑목", "ko", analyzer, analyzer.lexicon, 0.0)
    assert qt.expansions == () and qt.weights == {"갑목": 1.0}


def test_identity_is_json_and_tracks_settings(analyzer):
    import json

    ident = analyzer.identity()
    json.dumps(ident)
    assert ident["lexicon_hash"] == analyzer.lexicon.content_hash()
    other = Analyzer(dataclasses.replace(TextConfig(), en_stem=not analyzer.cfg.en_stem), analyzer.lexicon)
    assert other.identity_hash() != analyzer.identity_hash()
    assert get_analyzer(Config()) is analyzer  # cached per process
    with pytest.raises(ValueError, match="unknown language"):
        analyzer.tokenize("x", "fr")


def test_tokenize_many_equals_tokenize(analyzer):
    texts = ["갑목은 인월에 태어났다", "甲木 寅月", "Kubernetes rollback", "비급여 K8s"]
    langs = ["ko", "zh", "en", "ko"]
    assert analyzer.tokenize_many(texts, langs) == [analyzer.tokenize(t, g) for t, g in zip(texts, langs, strict=True)]


def _search(analyzer: Analyzer, lexicon: Lexicon, corpus: list[tuple[str, str]], query: str, lang: str) -> int:
    index = SparseIndex.build([analyzer.tokenize(t, g) for t, g in corpus], Bm25Config())
    qt = analyze_query(query, lang, analyzer, lexicon, Config().lexicon.expansion_weight)
    idx, _ = index.top_k(qt.weights, 3)
    return int(idx[0])


SAJU_CORPUS = [
    ("오늘은 봄 날씨가 따뜻하여 공원에서 산책을 했다. 나무에 새순이 돋았다.", "ko"),
    ("사주에서 일간의 강약을 판단하는 방법은 여러 가지가 있다.", "ko"),
    ("甲木生於寅月，木旺之時，先看調候，用神取丙火為先。", "zh"),
    ("庚金生于申月，秋金当令，宜用丁火煅炼。", "zh"),
    ("Deploying a web service on a virtual machine requires a load balancer.", "en"),
]
IT_CORPUS = [
    ("데이터베이스 백업 절차를 팀 전체에 공지합니다", "ko"),
    ("Kubernetes cluster node maintenance: drain the node and cordon it before upgrading.", "en"),
    (
        "Runbook: if a Kubernetes deployment fails, run kubectl rollout undo to roll back to the previous revision.",
        "en",
    ),
    ("Database backup runbook: snapshot the volume nightly and verify restores.", "en"),
    ("The history of deployment of troops in the 19th century.", "en"),
    ("甲木生于寅月，用神取丙火。", "zh"),
]


def test_korean_saju_query_finds_hanja_text(analyzer):
    assert _search(analyzer, analyzer.lexicon, SAJU_CORPUS, "갑목 인월 용신", "ko") == 2


def test_korean_it_query_finds_english_runbook(analyzer):
    assert _search(analyzer, analyzer.lexicon, IT_CORPUS, "쿠버네티스 배포 롤백", "ko") == 2
