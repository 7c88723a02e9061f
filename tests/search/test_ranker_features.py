"""The learned ranker's features (hanrag.search.ranker): what benchmarks/fit.py --ranker trains on."""

from __future__ import annotations

import numpy as np

from hanrag.language import LANG_SCRIPT, script_share, symbol_share
from hanrag.search.ranker import FEATURES, candidate_features, text_shape


def test_features_of_a_small_pool() -> None:
    ids = ["a", "b", "c"]
    x = candidate_features(
        ids, rule_fused=np.array([0.9, 0.5, 0.1]), bm25_norm=np.array([1.0, np.nan, 0.0]),
        dense_norm=np.array([0.2, 0.8, 0.0]), dense_raw=np.array([0.80, 0.85, np.nan]),
        own=np.array([4.0, 0.0, 0.0]), expansion=np.array([0.0, 2.0, 0.0]), ceiling=8.0,
        same_language=np.array([True, False, True]), bm25_list={"a": 5.0, "c": 1.0}, dense_list={"b": 0.85, "a": 0.8},
        lengths=np.array([512, 1024, 0]), centring=np.array([0.0, 0.02, 0.0]),
        script_share=np.array([1.0, 0.2, 0.0]), symbol_share=np.array([0.05, 0.3, 0.0]))
    col = {f: x[:, i] for i, f in enumerate(FEATURES)}
    assert x.shape == (3, len(FEATURES)) and np.isfinite(x).all()  # a retriever's missing score is 0, never NaN
    assert col["bm25_norm"].tolist() == [1.0, 0.0, 0.0]
    assert np.allclose(col["dense_gap"], [-0.05, 0.0, -1.0])  # against the pool's best cosine; unknown far below
    assert col["own_share"].tolist() == [0.5, 0.0, 0.0] and col["expansion_share"].tolist() == [0.0, 0.25, 0.0]
    assert col["same_language"].tolist() == [1.0, 0.0, 1.0]
    assert col["bm25_rank"].tolist() == [1.0, 0.0, 0.5] and col["dense_rank"].tolist() == [0.5, 1.0, 0.0]
    assert np.isclose(col["log_length"][0], 0.0) and col["log_length"][1] > 0 > col["log_length"][2]
    assert col["centring"].tolist() == [0.0, 0.02, 0.0]  # the other-language candidate's centred cosine
    assert col["script_share"].tolist() == [1.0, 0.2, 0.0] and col["symbol_share"].tolist() == [0.05, 0.3, 0.0]


def test_text_shape_tells_a_page_of_commands_from_prose() -> None:
    prose = "디플로이먼트를 이전 리비전으로 롤백하려면 롤아웃 기록을 확인한 뒤 되돌릴 리비전을 지정한다."
    commands = ("```bash\n# 컨테이너의 이미지를 업데이트\nkubectl patch pod valid-pod --type='json' "
                "-p='[{\"op\": \"replace\", \"path\": \"/spec/containers/0/image\"}]'\n```")
    script, symbols = text_shape([prose, commands, ""], "ko")
    assert script[0] == 1.0 and script[1] < 0.3 and script[2] == 0.0  # Hangul letters of all letters
    assert symbols[0] < 0.05 < 0.25 < symbols[1] and symbols[2] == 0.0
    en_script, _ = text_shape(["rollback a Deployment", "디플로이먼트 롤백"], "en")
    assert en_script.tolist() == [1.0, 0.0]  # an English query's script is Latin


def test_text_shape_counts_what_the_regexes_count() -> None:
    """The table lookup gives the regexes' shares exactly, on every kind of character they treat apart: numbers that
    are not digits (①, ½), the Latin block's ×, full-width and half-width forms, spaces that are not ASCII, and
    texts beyond the Basic Multilingual Plane (an emoji, an ideograph of extension B), which the regexes count."""
    texts = ["배포를 롤백하려면 kubectl rollout undo를 실행한다.", "①②③ × ÷ ½ ² 3.14", "ＡＢＣ ｱｲｳ 漢字 한자",
             "tab\there\u00a0nbsp\u3000ideographic space", "😀 emoji 한글 漢字 \U00020000 abc", "", "   ", "_-_",
             "12345", "甲木為陽木，象徵參天大樹。",
             "Roll back a Deployment: `kubectl rollout undo deploy/web --to-revision=2`"]
    for lang in ("ko", "zh", "en"):
        script, symbols = text_shape(texts, lang)
        assert script.tolist() == [script_share(t, LANG_SCRIPT[lang]) for t in texts]
        assert symbols.tolist() == [symbol_share(t) for t in texts]
    assert text_shape([], "ko")[0].size == 0
