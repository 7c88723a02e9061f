"""First use of the CLI: secrets never printed, clear config errors, the rough edges of build and demo."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hanrag.cli import app

runner = CliRunner()


def run(*args: str):  # noqa: ANN201 - click Result
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
