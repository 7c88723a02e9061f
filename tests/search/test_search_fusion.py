"""Fusion arithmetic, diversity factors and rule selection (pure functions)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hanrag.config import Config, RuleConfig
from hanrag.search.diversity import apply_diversity, diversity_factors
from hanrag.search.fusion import candidate_count, fuse, minmax, rrf_ranks, zscore
from hanrag.search.plan import QueryFeatures, is_question, query_lang, rules_for, select_rule
from hanrag.search.presets import PRESETS

NAN = float("nan")


def test_minmax_scales_known_and_zeroes_unknown():
    out = minmax(np.array([2.0, 4.0, NAN, 3.0]))
    assert out.tolist() == [0.0, 1.0, 0.0, 0.5]


def test_minmax_constant_scores():
    assert minmax(np.array([3.0, 3.0])).tolist() == [1.0, 1.0]
    assert minmax(np.array([0.0, 0.0])).tolist() == [0.0, 0.0]


def test_zscore_unknown_gets_worst_known():
    out = zscore(np.array([1.0, 3.0, NAN]))
    assert out[0] == pytest.approx(-1.0) and out[1] == pytest.approx(1.0) and out[2] == pytest.approx(-1.0)


def test_rrf_ranks_explicit_k():
    out = rrf_ranks(np.array([0.1, 0.9, NAN, 0.5]), k=2)
    assert out.tolist() == pytest.approx([1 / 5, 1 / 3, 0.0, 1 / 4])


def test_fuse_minmax_weights():
    f = fuse(["a", "b", "c"], np.array([10.0, 0.0, 5.0]), np.array([0.5, 0.9, 0.7]), 0.4, 0.6, "minmax")
    # a: 0.4*1 + 0.6*0 ; b: 0 + 0.6*1 ; c: 0.4*0.5 + 0.6*0.5
    assert f.fused.tolist() == pytest.approx([0.4, 0.6, 0.5])
    assert [f.ids[i] for i in f.order()] == ["b", "c", "a"]


def test_fuse_rrf_weighted():
    f = fuse(["a", "b"], np.array([2.0, 1.0]), np.array([0.1, 0.2]), 0.5, 0.5, "rrf", rrf_k=60)
    assert f.fused[0] == pytest.approx(0.5 / 61 + 0.5 / 62)
    assert f.fused[1] == pytest.approx(0.5 / 62 + 0.5 / 61)


def test_fill_vs_zero_changes_ranking():
    # "b" was found by dense only; its true BM25 score is high once filled in
    ids = ["a", "b", "c"]
    dense = np.array([0.80, 0.82, 0.70])
    zero = fuse(ids, np.array([5.0, NAN, 1.0]), dense, 0.5, 0.5, "minmax")
    filled = fuse(ids, np.array([5.0, 4.9, 1.0]), dense, 0.5, 0.5, "minmax")
    assert [zero.ids[i] for i in zero.order()] == ["a", "b", "c"]
    assert [filled.ids[i] for i in filled.order()] == ["b", "a", "c"]
    assert filled.fused[1] == pytest.approx(0.5 * 3.9 / 4 + 0.5 * 1.0)
    assert math.isnan(zero.bm25_raw[1]) and zero.bm25_norm[1] == 0.0


def test_fuse_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown fusion"):
        fuse(["a"], np.array([1.0]), np.array([1.0]), 0.5, 0.5, "max")
    with pytest.raises(ValueError, match="same length"):
        fuse(["a", "b"], np.array([1.0]), np.array([1.0]), 0.5, 0.5)


def test_candidate_count():
    assert candidate_count(1) == candidate_count(10) == candidate_count(100) == 400  # one pool up to 100 hits
    assert candidate_count(200) == 800 and candidate_count(10, 7) == 7


def test_diversity_factors_default_and_cap():
    f = diversity_factors(["s", "s", "t", "s", "s", "s", ""])
    assert f == [1.0, 0.95, 1.0, 0.90, 0.85, 0.85, 1.0]
    assert diversity_factors(["s", "s"], [1.0, 0.5]) == [1.0, 0.5]
    assert diversity_factors(["s", "s"], []) == [1.0, 1.0]


def test_apply_diversity_reorders():
    order, pen, final = apply_diversity([1.0, 0.99, 0.96], ["s", "s", "t"])
    assert order == [0, 2, 1]
    assert pen == [1.0, 0.95, 1.0]
    assert final[1] == pytest.approx(0.99 * 0.95)


def feats(lang="ko", hanja=0.0, chars=10, term=False, q=True):
    return QueryFeatures(lang, hanja, chars, term, q)


def test_reference_rules():
    ref = PRESETS["reference"]
    assert select_rule(ref, feats(hanja=0.5)).name == "ref:hanja"
    assert select_rule(ref, feats(hanja=0.3)).name != "ref:hanja"  # strict >
    assert select_rule(ref, feats(chars=8, term=True)).name == "ref:short-term"
    assert select_rule(ref, feats(chars=21, term=False)).name == "ref:long-no-term"
    assert select_rule(ref, feats(chars=21, term=True)).name == "ref:default"
    r = select_rule(ref, feats(chars=30))
    assert (r.bm25, r.dense) == (0.25, 0.75)


def test_weak_lexical_rule_only_after_evidence():
    rules = [RuleConfig(name="weak", bm25=0.1, dense=0.9, weak_lexical=True), RuleConfig(name="any")]
    assert select_rule(rules, feats()).name == "any"
    assert select_rule(rules, feats(), weak_lexical=False).name == "any"
    assert select_rule(rules, feats(), weak_lexical=True).name == "weak"


def test_hanrag_preset_depends_on_language():
    rules = PRESETS["hanrag"]
    assert select_rule(rules, feats(lang="ko")).name != select_rule(rules, feats(lang="zh")).name
    for r in rules:
        assert r.bm25 + r.dense == pytest.approx(1.0)


def test_rules_for_custom_and_unknown():
    cfg = Config()
    assert rules_for(cfg) == PRESETS["hanrag"]
    cfg.search.preset = "custom"
    with pytest.raises(ValueError, match="custom"):
        rules_for(cfg)
    cfg.search.rules = [RuleConfig(name="x")]
    assert [r.name for r in rules_for(cfg)] == ["x"]
    cfg.search.preset = "nope"
    with pytest.raises(ValueError, match="unknown search.preset"):
        rules_for(cfg)


def test_is_question():
    assert is_question("대한민국의 수도는 어디인가?", "ko")
    assert is_question("北京是什么", "zh")
    assert is_question("What is BM25", "en")
    assert not is_question("kubernetes pod restart", "en")


def test_query_lang_reads_names_as_names():
    # more Latin letters than Hangul, yet Korean questions: their Latin words are names
    assert query_lang("노드 컨디션 DiskPressure PIDPressure") == "ko"
    assert query_lang("kubectl autoscale 명령") == "ko"
    assert query_lang("navigator.onLine 외부 스토어 구독 useSyncExternalStore") == "ko"
    # an English sentence with a Korean term is read by its letters, as every text is
    assert query_lang("The deployment runbook (배포 절차) explains kubectl rollout undo and status checks") == "en"
    assert query_lang("how to roll back a deployment") == "en"
    assert query_lang("甲木 寅月 用神") == "zh"
    assert query_lang("volumeBindingMode WaitForFirstConsumer") == "en"


def test_ceiling_fusion_is_absolute_not_stretched():
    """BM25 over the query's ceiling keeps its meaning on any candidate set: a chunk matching a fifth of the
    query stays at .2 even when it is the best candidate (min-max would make it 1)."""
    import numpy as np

    from hanrag.search.fusion import ceiling_scale, fuse

    bm25 = np.array([2.0, 1.0, np.nan])
    assert ceiling_scale(bm25, 10.0).tolist() == [0.2, 0.1, 0.0]
    assert ceiling_scale(np.array([12.0]), 10.0).tolist() == [1.0]  # translations can exceed it: clipped
    assert ceiling_scale(bm25, 0.0).tolist() == [0.0, 0.0, 0.0]
    f = fuse(["a", "b", "c"], bm25, np.array([0.80, 0.84, 0.82]), 0.5, 0.5, "ceiling", bm25_ceiling=10.0)
    assert f.bm25_norm.tolist() == [0.2, 0.1, 0.0] and f.dense_norm.max() == 1.0


def test_calibrated_cosine_keeps_small_gaps_small():
    """Dense above the query's corpus background, on an absolute scale: a .03 gap stays a .1 gap."""
    import numpy as np

    from hanrag.search.fusion import calibrated_cosine

    out = calibrated_cosine(np.array([0.81, 0.78, 0.60, np.nan]), 0.70)
    assert out.round(3).tolist() == [0.367, 0.267, 0.0, 0.0]
    assert calibrated_cosine(np.array([0.81, 0.78]), None).tolist() == [1.0, 0.0]  # no background: min-max


def test_calibrated_cosine_takes_a_background_per_candidate():
    from hanrag.search.fusion import calibrated_cosine

    scores = np.array([0.80, 0.80, np.nan, 0.50])
    bg = np.array([0.70, 0.50, 0.60, 0.60])  # same cosine, different language backgrounds
    out = calibrated_cosine(scores, bg)
    np.testing.assert_allclose(out, [0.1 / 0.3, 0.3 / 0.5, 0.0, 0.0])
    np.testing.assert_allclose(calibrated_cosine(scores, 0.5), calibrated_cosine(scores, np.full(4, 0.5)))
    assert calibrated_cosine(scores, np.array([0.5, 1.0, 0.5, 0.5])).max() == 1.0  # unusable: min-max


def test_ties_go_by_the_raw_cosine_then_candidate_order():
    # all three below the dense background and without BM25: fused 0 each; the closer cosine ranks first
    f = fuse(["a", "b", "c"], np.array([np.nan] * 3), np.array([0.70, 0.74, np.nan]), 0.5, 0.5, "calibrated",
             dense_background=0.80)
    assert f.fused.tolist() == [0.0, 0.0, 0.0]
    assert [f.ids[i] for i in f.order()] == ["b", "a", "c"]
