"""`hanrag eval` on a small eval set: report files, the chart (differences to BM25, own colours, legend
outside), eval chunks and the eval token cache."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from hanrag.cli import app
from hanrag.config import Config
from hanrag.eval import ablation_configs, cached_tokens, eval_chunks, judged_task, load_eval_set, ranked_documents
from hanrag.eval_report import chart_figure, chart_series
from hanrag.records import Chunk, Hit
from hanrag.text import get_analyzer

DOCS = [
    ("d1", "쿠버네티스 파드가 재시작을 반복하면 kubectl logs 로 로그를 확인한다."),
    ("d2", "JWT signing keys should be rotated every 90 days."),
    ("d3", "甲木은 양의 나무로 큰 나무를 뜻한다."),
    ("d4", "Certificates are renewed by cert-manager thirty days before they expire."),
]
QUERIES = [("q1", "파드 재시작 로그", "ko"), ("q2", "rotate jwt signing keys", "en"), ("q3", "cert renewal", "en")]
QRELS = [("q1", "d1"), ("q2", "d2"), ("q3", "d4")]


def make_set(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "corpus.jsonl").write_text(
        "".join(json.dumps({"doc_id": d, "text": t}, ensure_ascii=False) + "\n" for d, t in DOCS), encoding="utf-8")
    (root / "queries.jsonl").write_text(
        "".join(json.dumps({"qid": q, "text": t, "lang": g}, ensure_ascii=False) + "\n" for q, t, g in QUERIES),
        encoding="utf-8")
    (root / "qrels.tsv").write_text("qid\tdoc_id\trelevance\n" + "".join(f"{q}\t{d}\t1\n" for q, d in QRELS),
                                    encoding="utf-8")
    return root


def test_eval_command_writes_the_report(tmp_path: Path) -> None:
    es = make_set(tmp_path / "tiny_set")
    out = tmp_path / "report"
    result = CliRunner().invoke(app, ["eval", str(es), "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert {"bm25", "dense", "hanrag default"} <= set(data["results"])
    assert data["results"]["bm25"]["tiny_set"]["ndcg@10"] > 0.5  # the lexical queries find their documents
    for name in ("report.md", "report.json", "chart.png"):
        assert (out / name).stat().st_size > 0
    assert (out / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_chart_plots_differences_to_bm25_in_distinct_colours_with_the_legend_outside() -> None:
    results = {label: {"a": {"ndcg@10": v}, "b": {"ndcg@10": v + 0.1}}
               for label, v in [("bm25", 0.60), ("dense", 0.62), ("calibrated", 0.65), *((f"row{i}", 0.6) for i in
                                                                                         range(25))]}
    sets, base, series = chart_series(results, all_rows=True)
    assert sets == ["a", "b"] and base == {"a": 0.60, "b": 0.70}
    assert "bm25" not in [s.label for s in series]
    calibrated = next(s for s in series if s.label == "calibrated")
    assert calibrated.values == (0.65 - 0.60, 0.75 - 0.70)
    assert len({s.colour for s in series}) == len(series) == 27  # more rows than tab20 has colours
    assert [s.label for s in chart_series(results)[2]] == ["dense", "calibrated"]  # by default, the rows that matter
    fig = chart_figure(results, "t")
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1  # right of the plot: it covers no bar
    assert "BM25 0.600" in [t.get_text() for t in ax.get_xticklabels()][0]


def test_eval_chunks_and_the_token_cache(tmp_path: Path, monkeypatch) -> None:
    es = load_eval_set(make_set(tmp_path / "s"))
    chunks = eval_chunks(es, "s/", spread_filters=True)
    assert [c.chunk_id for c in chunks] == ["s/d1", "s/d2", "s/d3", "s/d4"]
    assert [c.tier for c in chunks] == [0, 1, 2, 0] and chunks[0].labels == ("s",) and chunks[0].lang == "ko"
    monkeypatch.setattr("hanrag.eval.TOKEN_CACHE", tmp_path / "tok")
    analyzer = get_analyzer(Config())
    texts, langs = [c.text for c in chunks], [c.lang for c in chunks]
    first = cached_tokens(analyzer, "s", texts, langs)
    assert first == analyzer.tokenize_many(texts, langs)
    assert cached_tokens(analyzer, "s", texts[::-1], langs[::-1]) == first[::-1]  # keyed by text, not position
    task = judged_task(tmp_path / "s" / "queries.jsonl", tmp_path / "s" / "qrels.tsv")
    assert [q.qid for q in task.queries] == ["q1", "q2", "q3"]


def test_query_metrics_are_ranx_metrics() -> None:
    """The per-query nDCG@10 / MRR@10 the fitting scripts use is the metric hanrag eval reports (ranx), on
    graded judgments, unjudged and negative documents, ties of relevance and rankings shorter than 10."""
    import random

    from hanrag.eval import evaluate_run, query_metrics

    rng = random.Random(7)
    qrels, run, ours = {}, {}, []
    for q in range(60):
        docs = [f"d{i}" for i in range(rng.randint(1, 25))]
        judged = {d: rng.choice([0, 1, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, len(docs)))}
        if not any(g > 0 for g in judged.values()):
            judged[docs[0]] = 1
        rng.shuffle(docs)
        qrels[f"q{q}"], run[f"q{q}"] = judged, {d: 1.0 - i / 100 for i, d in enumerate(docs)}
        ours.append(query_metrics(docs, judged))
    ranx = evaluate_run(qrels, run, ("ndcg@10", "mrr@10"))
    assert abs(sum(n for n, _ in ours) / len(ours) - ranx["ndcg@10"]) < 1e-9
    assert abs(sum(r for _, r in ours) / len(ours) - ranx["mrr@10"]) < 1e-9


def test_ablation_rows_say_which_run_the_learned_ranker() -> None:
    """The default runs the bundled trees; `rule table` is the default without them; a row that changes the fusion
    runs without them (they were trained on the default fusion's score); a channel ablation keeps them."""
    rows = ablation_configs(Config())
    ranker = {name: cfg.search.ranker for name, (_, cfg) in rows.items()}
    assert ranker["hanrag default"] == ranker["learned ranker"] == "lambdamart" and ranker["rule table"] == ""
    for name in ("minmax", "zscore", "rrf k=60", "ceiling", "calibrated", "calibrated, corpus background",
                 "reference preset"):
        assert ranker[name] == "", name
    assert ranker["no glossary"] == ranker["no corpus links"] == "lambdamart"
    assert rows["rule table"][1].search.fusion == rows["hanrag default"][1].search.fusion


def test_a_run_scores_a_document_by_its_best_chunk_and_a_folded_copy_right_after_it() -> None:
    """hits -> a run's doc scores: the set's prefix is taken off (another set's document is "other:"), a document's
    later chunks change nothing, a kept chunk stands for the near-duplicates folded into it, right after its own
    document, and ranx's order is the hits' order."""
    def hit(cid: str, doc: str, score: float, rank: int) -> Hit:
        return Hit(Chunk(chunk_id=cid, doc_id=doc, text="t", start=0, end=1), score, rank)

    hits = [hit("c1", "s/a", 0.9, 1), hit("c2", "s/b", 0.9, 2), hit("c3", "s/a", 0.8, 3), hit("c4", "t/x", 0.5, 4)]
    ranked = ranked_documents(hits, "s/", {"c2": ("s/b2", "t/y")})
    assert list(ranked) == ["a", "b", "b2", "other:t/y", "other:t/x"]
    assert sorted(ranked, key=ranked.__getitem__, reverse=True) == list(ranked)  # ties broken by rank
    assert ranked["a"] == 0.9 and ranked_documents([], "s/") == {}
