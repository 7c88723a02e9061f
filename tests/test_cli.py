"""CLI shell: `hanrag init`, --config on every command, one-line errors with hints, --debug tracebacks."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from hanrag.cli import app
from hanrag.config import Config, load_config
from hanrag.config_template import render_config_toml, undocumented_keys

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


def _all_keys(obj: object, prefix: str = "") -> list[str]:
    keys = []
    for f in dataclasses.fields(obj):  # type: ignore[arg-type]
        if f.name == "base_dir":
            continue
        value = getattr(obj, f.name)
        keys.append(prefix + f.name)
        if dataclasses.is_dataclass(value):
            keys.extend(_all_keys(value, f"{prefix}{f.name}."))
    return keys


def test_init_writes_every_default_and_loads_back(tmp_path: Path) -> None:
    result = run("init", str(tmp_path))
    assert result.exit_code == 0, result.output
    path = tmp_path / "hanrag.toml"
    text = path.read_text(encoding="utf-8")
    loaded = load_config(path, env=False)
    assert loaded.to_dict() == Config().to_dict()
    # every setting is written (not only the ones whose default is non-empty) ...
    data = tomllib.loads(text)
    for key in _all_keys(Config()):
        node = data
        for part in key.split("."):
            if part not in node:
                # optional settings without a default stay commented out, with their name
                assert f"# {part} =" in text, key
                break
            node = node[part]
    # ... and every one has a comment
    assert undocumented_keys() == []
    assert text.count("\n# ") > len(_all_keys(Config()))


def test_init_does_not_overwrite_and_prints(tmp_path: Path) -> None:
    target = tmp_path / "mine.toml"
    target.write_text("[server]\nport = 9000\n", encoding="utf-8")
    result = run("init", str(target))
    assert result.exit_code == 2
    assert "already exists" in result.output and "hint:" in result.output
    assert target.read_text(encoding="utf-8") == "[server]\nport = 9000\n"
    printed = run("init", "--print")
    assert printed.exit_code == 0 and printed.output == render_config_toml()
    # --config: start from an existing file's values
    from_existing = run("init", "--print", "--config", str(target))
    assert "port = 9000" in from_existing.output
    assert run("init", str(target), "--force").exit_code == 0
    assert load_config(target, env=False).server.port == 8000


def test_every_command_takes_config() -> None:
    root = typer.main.get_command(app)
    missing = []

    def walk(cmd, name: str) -> None:
        if hasattr(cmd, "commands"):
            for sub_name, sub in cmd.commands.items():
                walk(sub, f"{name} {sub_name}".strip())
            return
        if not any("--config" in getattr(p, "opts", ()) for p in cmd.params):
            missing.append(name)

    walk(root, "")
    assert missing == []
    assert {"serve", "init", "demo", "search", "build"} <= set(root.commands)  # type: ignore[attr-defined]


def test_errors_are_one_line_with_a_hint(tmp_path: Path) -> None:
    result = run("serve", str(tmp_path / "no-index"))
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines[0].startswith("error: ") and "no-index" in lines[0]
    assert lines[1].startswith("hint: ") and "hanrag build" in lines[1]
    assert "Traceback" not in result.output


def test_serve_refuses_public_address_without_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HANRAG_API_KEY", raising=False)
    monkeypatch.delenv("HANRAG_SERVER__API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./hanrag.toml with a key
    result = run("serve", str(tmp_path), "--host", "0.0.0.0")
    assert result.exit_code == 2
    assert "non-loopback" in result.output and "API key" in result.output


def test_bad_config_is_one_line_and_debug_shows_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[search]\nfusion = 'nope'\n", encoding="utf-8")
    result = run("init", "--print", "--config", str(bad))
    assert result.exit_code == 2
    assert "search.fusion" in result.output and "Traceback" not in result.output
    debug = run("--debug", "init", "--print", "--config", str(bad))
    assert debug.exit_code == 2 and "Traceback" in debug.output
