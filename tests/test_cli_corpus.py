import json
from pathlib import Path

from typer.testing import CliRunner

from hanrag.bundled import SAMPLE_CONFIG, SAMPLE_CORPUS
from hanrag.cli import app

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = SAMPLE_CORPUS
runner = CliRunner()


def test_lint_json_and_strict():
    result = runner.invoke(app, ["lint", str(EXAMPLES), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    codes = {f["code"] for f in data["findings"]}
    assert {"no-source", "mixed-topics", "encoding", "binary-file", "empty-file", "ai-draft"} <= codes
    strict = runner.invoke(app, ["lint", str(EXAMPLES), "--strict"])
    assert strict.exit_code == 1
    assert "no-source" in strict.stdout


def test_chunk_writes_utf8_jsonl_and_leaves_corpus_alone(tmp_path):
    nosrc = next(EXAMPLES.rglob("출처없는_메모.md"))
    before = nosrc.read_bytes()
    out = tmp_path / "chunks.jsonl"
    result = runner.invoke(app, ["chunk", str(EXAMPLES), "--out", str(out), "--config",
                                 str(SAMPLE_CONFIG)])
    assert result.exit_code == 0, result.output
    lines = out.read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert rows and all(r["text"] for r in rows)
    assert any("甲木" in line for line in lines)  # ensure_ascii=False
    assert not any(r["doc_id"].endswith("출처없는_메모.md") for r in rows)
    assert {r["provenance"] for r in rows} == {"ai-draft", "human"}
    assert nosrc.read_bytes() == before


def test_demo_summary_json(tmp_path, monkeypatch):
    """`hanrag demo` alone, from any folder: the sample bundled in the package, with its own config, built into
    index/demo there."""
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["demo", "--json"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "index" / "demo" / "CURRENT").is_file()
    out = json.loads(result.stdout)
    summary = out["corpus"]
    assert out["build"]["chunks"] == summary["chunks"]
    assert all(q["hits"] for q in out["queries"]), "every sample query finds something"
    assert summary["chunks"] > 50
    assert set(summary["chunks_by_lang"]) == {"ko", "zh", "en"}
    assert {0, 1, 99} <= {int(k) for k in summary["chunks_by_tier"]}
    assert summary["ai_draft_indexed"]


def test_missing_path_is_a_clear_error(tmp_path):
    result = runner.invoke(app, ["lint", str(tmp_path / "nope")])
    assert result.exit_code == 2
