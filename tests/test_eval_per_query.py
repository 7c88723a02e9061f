"""`hanrag eval --per-query` (each query's rank under each configuration, the queries the configurations
disagree on most), the "chunks embedded" progress line printed once, and a chart that draws the rows that
matter in distinct colours with value labels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from matplotlib.colors import to_rgb
from typer.testing import CliRunner

from hanrag.cli import app
from hanrag.eval import DEFAULT_METRICS, embed_corpus, evaluate_run, first_relevant_rank
from hanrag.eval_report import chart_figure, per_query_markdown, per_query_report, write_report
from tests.test_eval import QUERIES, make_set


@pytest.fixture(scope="module")
def model():
    from hanrag.config import Config
    from hanrag.embed import load_embedder

    return load_embedder(Config().embedder)


@pytest.mark.parametrize("n", [4, 64, 130])
def test_embed_corpus_prints_the_final_count_once(n: int, model, tmp_path: Path) -> None:
    from hanrag.embed.cache import CachingEmbedder

    lines: list[str] = []
    texts = [f"문서 {i}: 배포 롤백 절차 {i * 7}" for i in range(n)]
    assert embed_corpus(CachingEmbedder(model, tmp_path), texts, lines.append, batch=64) == n
    final = f"chunks embedded: {n}/{n} (0 from the cache)"
    assert lines.count(final) == 1 and lines[-1] == final


def test_first_relevant_rank_orders_by_score_and_needs_relevance_one() -> None:
    ranked = {"a": 0.9, "b": 0.95, "c": 0.5}  # not in score order: ranx ranks by score
    assert first_relevant_rank(ranked, {"a": 1}) == 2
    assert first_relevant_rank(ranked, {"b": 0, "c": 2}) == 3  # relevance 0 is a judged miss
    assert first_relevant_rank(ranked, {"z": 1}) is None


def test_per_query_reciprocal_ranks_average_to_ranx_mrr() -> None:
    qrels = {"q1": {"d3": 1}, "q2": {"d1": 0, "d2": 2}, "q3": {"d12": 1}, "q4": {"d5": 1}}
    docs = [f"d{i}" for i in range(1, 16)]
    run = {"q1": {d: 1.0 - i / 100 for i, d in enumerate(docs)},  # d3 third
           "q2": {d: 1.0 - i / 100 for i, d in enumerate(docs)},  # d1 judged 0: d2 second
           "q3": {d: 1.0 - i / 100 for i, d in enumerate(docs)},  # d12 12th: past the cut-off
           "q4": {"d1": 0.5}}  # never retrieved
    ranks = {q: first_relevant_rank(run[q], qrels[q]) for q in qrels}
    assert ranks == {"q1": 3, "q2": 2, "q3": 12, "q4": None}
    per = {"s": {q: {"text": q, "ranks": {"x": r}} for q, r in ranks.items()}}
    assert per_query_report(per)["s"]["queries"]["q1"]["ranks"] == {"x": 3}
    rrs = [1 / r if r and r <= 10 else 0.0 for r in ranks.values()]
    assert sum(rrs) / len(rrs) == pytest.approx(evaluate_run(qrels, run)["mrr@10"])


def _ranks(**by_label: dict[str, int | None]) -> dict:
    """set "s": qid -> {"text", "ranks": {label: rank}} from label -> qid -> rank."""
    qids = list(next(iter(by_label.values())))
    return {"s": {q: {"text": f"query {q} | pipe", "ranks": {lab: r[q] for lab, r in by_label.items()}}
                  for q in qids}}


def test_per_query_report_spread_and_most_different() -> None:
    per = _ranks(bm25={"q1": 1, "q2": 3, "q3": None, "q4": 2},
                 dense={"q1": None, "q2": 3, "q3": 12, "q4": 1},
                 fused={"q1": 2, "q2": 3, "q3": None, "q4": 1})
    report = per_query_report(per)["s"]
    assert report["configs"] == ["bm25", "dense", "fused"]
    qs = report["queries"]
    assert qs["q1"]["rr_spread"] == pytest.approx(1.0)
    assert qs["q2"]["rr_spread"] == 0.0
    assert qs["q3"]["rr_spread"] == 0.0  # rank 12 is past MRR@10's cut-off, like no hit
    assert qs["q4"]["rr_spread"] == pytest.approx(0.5)
    diff = report["most_different"]
    assert [d["qid"] for d in diff] == ["q1", "q4"]  # by spread; queries every configuration agrees on are left out
    assert diff[0]["best"] == ["bm25"] and diff[0]["worst"] == ["dense"]
    assert diff[1]["best"] == ["dense", "fused"] and diff[1]["worst"] == ["bm25"]
    assert len(per_query_report(per, limit=1)["s"]["most_different"]) == 1
    md = per_query_markdown(per_query_report(per))
    assert "| q3 | query q3 \\| pipe | - | 12 | - |" in md
    assert md.index("most different") < md.index("| q3 |")


def _results(labels: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    def row(a: float, b: float) -> dict[str, dict[str, float]]:
        return {"a": dict.fromkeys(DEFAULT_METRICS, a), "b": dict.fromkeys(DEFAULT_METRICS, b)}

    out = {label: row(0.50 + 0.01 * i, 0.70 - 0.01 * i) for i, label in enumerate(labels)}
    out["bm25"] = row(0.40, 0.45)
    return out


LABELS = ["bm25", "dense", "minmax", "zscore", "rrf k=60", "rrf k=2", "ceiling", "calibrated",
          "calibrated, language background", "calibrated, corpus background", "reference preset",
          "no fill (zero)", "no diversity", "no cross-lingual", "no glossary", "hanrag default"]


def _bars(fig) -> list:
    from matplotlib.container import BarContainer

    return [c for c in fig.axes[0].containers if isinstance(c, BarContainer)]


def test_the_chart_draws_the_rows_that_matter_with_labels_and_distinct_colours(tmp_path: Path) -> None:
    results = _results(LABELS)
    fig = chart_figure(results, "t")
    bars = _bars(fig)
    # dense and hanrag default always; the best other row of set a (the last one: "no glossary") and of set b
    # (the first after bm25 and dense: "minmax"); bm25 is the baseline the bars are measured from
    assert sorted(c.get_label() for c in bars) == ["dense", "hanrag default", "minmax", "no glossary"]
    assert all(len(c.patches) == 2 for c in bars)  # one bar group per set
    colours = {to_rgb(c.patches[0].get_facecolor()) for c in bars}
    assert len(colours) == len(bars)
    texts = {t.get_text() for t in fig.axes[0].texts}
    dense_a = results["dense"]["a"]["ndcg@10"] - 0.40
    assert f"{dense_a:+.3f}" in texts and f"{0.70 - 0.01 * 15 - 0.45:+.3f}" in texts  # hanrag default, set b

    everything = _bars(chart_figure(results, "t", all_rows=True))
    assert len(everything) == len(LABELS) - 1
    assert len({to_rgb(c.patches[0].get_facecolor()) for c in everything}) == len(everything)

    paths = write_report(results, tmp_path / "all", "t", chart_all=True)
    assert paths["chart"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_eval_per_query_prints_and_reports_ranks(tmp_path: Path) -> None:
    es = make_set(tmp_path / "tiny_set")
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["eval", str(es), "--out", str(out), "--per-query"])
    assert result.exit_code == 0, result.output
    assert result.output.count("chunks embedded") == 1
    assert "per query" in result.output and "| q1 |" in result.output
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    per = data["per_query"]["tiny_set"]
    assert set(per["queries"]) == {q for q, _, _ in QUERIES}
    for label, row in data["results"].items():  # the ranks agree with ranx's MRR@10
        rrs = [1 / r if r and r <= 10 else 0.0 for r in (q["ranks"][label] for q in per["queries"].values())]
        assert sum(rrs) / len(rrs) == pytest.approx(row["tiny_set"]["mrr@10"]), label
    assert "## per query" in (out / "report.md").read_text(encoding="utf-8")

    quiet = CliRunner().invoke(app, ["eval", str(es), "--out", str(tmp_path / "r2")])
    assert quiet.exit_code == 0, quiet.output
    assert "per query" not in quiet.output  # only with --per-query; the report files have it always
    assert "per_query" in json.loads((tmp_path / "r2" / "report.json").read_text(encoding="utf-8"))
