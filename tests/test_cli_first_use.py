"""First use of the CLI: secrets never printed, clear config errors, the rough edges of build and demo."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hanrag.cli import app

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def test_init_print_redacts_secrets_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "mine.toml"
    mine.write_text('[confluence]\nurl = "https://wiki.example.org"\ntoken = "file-secret"\n', encoding="utf-8")
    monkeypatch.setenv("HANRAG_MILVUS__TOKEN", "env-secret")
    monkeypatch.setenv("HANRAG_MILVUS__URI", "http://alice:pw-secret@milvus.example.org:19530")
    monkeypatch.setenv("HANRAG_SERVER__API_KEY", "key-secret")
    for args in (["init", "--print", "--config", str(mine)], ["init", str(tmp_path / "out.toml"), "-c", str(mine)]):
        result = run(*args)
        assert result.exit_code == 0, result.output
        text = result.output if "--print" in args else (tmp_path / "out.toml").read_text(encoding="utf-8")
        assert "secret" not in text
        data = tomllib.loads(text)
        assert data["milvus"]["token"] == "" and data["server"]["api_key"] == "" and data["confluence"]["token"] == ""
        assert data["milvus"]["uri"] == "http://***@milvus.example.org:19530"
        assert "token is set in your config or environment; not shown" in text


def test_config_errors_name_the_section_and_hint_by_case(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[serach]\nfusion = 'rrf'\n", encoding="utf-8")
    result = run("doctor", str(tmp_path), "--config", str(bad))
    assert result.exit_code == 2
    assert ": :" not in result.output and "unknown key(s) serach" in result.output
    assert "hanrag init --print" in result.output
    missing = run("doctor", str(tmp_path), "--config", str(tmp_path / "nope.toml"))
    assert missing.exit_code == 2 and "config file not found" in missing.output
    assert "init --print" not in missing.output and f"hanrag init {tmp_path / 'nope.toml'}" in missing.output
    # a folder or a named pipe is there but is not a file: said so (a pipe is never read: it could block forever)
    folder = run("doctor", str(tmp_path), "--config", str(tmp_path))
    assert folder.exit_code == 2 and "is a folder, not a config file" in folder.output
    assert "not found" not in folder.output and "hanrag init" not in folder.output
    fifo = tmp_path / "pipe.toml"
    os.mkfifo(fifo)
    piped = run("doctor", str(tmp_path), "--config", str(fifo))
    assert piped.exit_code == 2 and "is not a regular file" in piped.output and "not found" not in piped.output
    assert "name a TOML config file" in piped.output


def _corpus(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, body in files.items():
        (root / name).write_text(body, encoding="utf-8")
    return root


RUNBOOK = ("---\ntitle: 배포 런북\nsource: https://wiki.example.org/runbook\n---\n# 배포 런북\n\n"
           "## 롤백 절차\n\nkubectl rollout undo 로 이전 버전으로 되돌린다.\n\n"
           "## 인증서 갱신\n\ncert-manager 가 만료 30일 전에 인증서를 갱신한다.\n")
JWT = ("---\nsource: https://jwt.io/introduction\n---\n# JWT signing keys\n\n"
       "Rotate the signing keys every 90 days and keep the old key for verification.\n")


def test_empty_corpus_is_an_error_unless_allowed(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.xyz").write_text("not a corpus file type", encoding="utf-8")
    result = run("build", str(empty), "--index", str(tmp_path / "ix"), "-q")
    assert result.exit_code == 2
    assert "no documents found" in result.output and str(empty) in result.output
    assert not (tmp_path / "ix" / "CURRENT").exists()  # nothing was published
    allowed = run("build", str(empty), "--index", str(tmp_path / "ix"), "-q", "--allow-empty")
    assert allowed.exit_code == 0, allowed.output
    assert (tmp_path / "ix" / "CURRENT").exists()


def test_quiet_build_still_prints_errors_and_the_summary_names_changed_files(tmp_path: Path) -> None:
    files = {"runbook.md": RUNBOOK, "jwt.md": JWT, "nosource.md": "# 출처 없음\n\n본문.\n"}
    corpus = _corpus(tmp_path / "corpus", files)
    index = tmp_path / "ix"
    first = run("build", str(corpus), "--index", str(index), "-q")
    assert first.exit_code == 0, first.output
    assert "nosource.md" in first.output and "error" in first.output  # the findings table, errors included
    assert "files: 2 added, 0 unchanged" in first.output
    (corpus / "jwt.md").write_text(JWT.replace("90 days", "60 days"), encoding="utf-8")
    (corpus / "runbook.md").unlink()
    (corpus / "new.md").write_text("---\nsource: https://example.org/new\n---\n# 새 문서\n\n로그 수집 설정.\n",
                                   encoding="utf-8")
    second = run("build", str(corpus), "--index", str(index), "-q", "--json")
    files = __import__("json").loads(second.output)["files"]
    assert files == {"added": ["new.md"], "changed": ["jwt.md"], "removed": ["runbook.md"], "unchanged": 0}


def test_searching_the_corpus_folder_suggests_a_separate_index(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "notes", {"jwt.md": JWT})
    result = run("search", str(corpus), "signing keys", "--no-server") if _has_option("search", "--no-server") \
        else run("search", str(corpus), "signing keys")
    assert result.exit_code == 2
    assert "looks like a corpus folder" in result.output
    assert f"hanrag build {corpus} --index index/notes" in result.output
    assert f"--index {corpus}`" not in result.output


def _has_option(command: str, option: str) -> bool:
    import typer

    cmd = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    return any(option in p.opts for p in cmd.params)


def test_demo_on_another_corpus_asks_its_own_headings(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "mine", {"runbook.md": RUNBOOK, "jwt.md": JWT})
    result = runner.invoke(app, ["demo", str(corpus), "--index", str(tmp_path / "ix"), "--json"])
    assert result.exit_code == 0, result.output
    data = __import__("json").loads(result.output)
    asked = [q["query"] for q in data["queries"]]
    assert asked and not set(asked) & {"갑목 인월 용신", "도화살", "五行相生"}
    assert {"롤백 절차", "JWT signing keys"} <= set(asked)
    assert data["queries"][asked.index("롤백 절차")]["hits"][0]["chunk"]["path"] == "runbook.md"


def test_demo_next_steps_are_never_wrapped(tmp_path: Path) -> None:
    corpus = _corpus(tmp_path / "a-rather-long-corpus-folder-name-for-wrapping", {"jwt.md": JWT})
    index = tmp_path / "an-index-folder-with-a-long-name-as-well"
    result = runner.invoke(app, ["demo", str(corpus), "--index", str(index), "--query", "signing keys"],
                           terminal_width=90)
    assert result.exit_code == 0, result.output
    serve_line = next(line for line in result.output.splitlines() if line.startswith("start the server:"))
    assert serve_line.endswith(f"--corpus {corpus}")
    # the hit table's source column: the file first, the cited URL on the line under it
    lines = result.output.splitlines()
    row = next(i for i, line in enumerate(lines) if "│ jwt.md" in line)
    assert "https://jwt.io" in lines[row + 1]
