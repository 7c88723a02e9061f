"""What a new user meets first: the version, readable help, options checked like --lang, one query-length
limit, where `hanrag demo` builds, the hint for a folder that holds no index, data files inside the package."""

from __future__ import annotations

import tomllib
from pathlib import Path

from typer.testing import CliRunner

import hanrag
from hanrag.bundled import LEXICON_DIR, PACKAGE_DIR, SAMPLE_CONFIG, SAMPLE_CORPUS
from hanrag.cli import app
from hanrag.cli.demo import demo_index_dir
from hanrag.config import Config

ROOT = Path(__file__).resolve().parent.parent
runner = CliRunner()


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"hanrag {hanrag.__version__}"


def test_help_renders_brackets_and_conventional_names() -> None:
    top = runner.invoke(app, ["--help"], terminal_width=100)
    assert "hanrag[mcp]" in top.stdout  # rich markup used to swallow "[mcp]"
    search = runner.invoke(app, ["search", "--help"], terminal_width=100)
    assert "INDEX QUERY" in search.stdout
    assert "<bool>" not in search.stdout and "{index}" not in search.stdout


def test_filters_are_checked_like_lang(tmp_path: Path) -> None:
    for args, message in [
        (["--provenance", "humen"], "--provenance must be human or ai-draft"),
        (["--tier", "-1"], "--tier must be in 0-99"),
        (["--tier", "100"], "--tier must be in 0-99"),
        (["--lang", "kr"], "--lang must be ko, zh or en"),
    ]:
        result = runner.invoke(app, ["search", str(tmp_path / "ix"), "롤백", *args])
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)


def test_query_length_is_the_servers_limit(tmp_path: Path) -> None:
    limit = Config().server.max_query_chars
    result = runner.invoke(app, ["search", str(tmp_path / "ix"), "가" * (limit + 1)])
    assert result.exit_code == 2
    assert f"the limit is {limit:,}" in result.output and "server.max_query_chars" in result.output


def test_demo_builds_one_index_per_corpus(tmp_path: Path) -> None:
    assert demo_index_dir(SAMPLE_CORPUS) == Path("index/demo")
    mine = tmp_path / "MY_CORPUS"
    mine.mkdir()
    assert demo_index_dir(mine) == Path("index/MY_CORPUS")


def test_a_folder_with_no_index_gets_a_build_hint(tmp_path: Path) -> None:
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    result = runner.invoke(app, ["search", str(empty), "롤백"])
    assert result.exit_code == 2
    assert "no index was built there" in result.output and "rebuild" not in result.output


def test_data_files_ship_inside_the_package() -> None:
    """Every lexicon and sample file lies under the package and is matched by pyproject's package-data (a
    wheel carries exactly those); nothing points into the checkout."""
    for path in (LEXICON_DIR, SAMPLE_CORPUS, SAMPLE_CONFIG):
        assert path.is_relative_to(PACKAGE_DIR)
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["hanrag"]
    shipped = {p for pattern in patterns for p in PACKAGE_DIR.glob(pattern) if p.is_file()}
    data = [*LEXICON_DIR.glob("*.tsv"), SAMPLE_CONFIG, *(p for p in SAMPLE_CORPUS.rglob("*") if p.is_file())]
    assert len(data) > 30
    assert not [p for p in data if p not in shipped]
    assert {p.stem for p in LEXICON_DIR.glob("*.tsv")} >= {"saju", "it"}


def test_ctrl_c_in_demo_says_what_is_published(tmp_path: Path, monkeypatch) -> None:
    """`hanrag demo` builds too: Ctrl-C there says what is published and exits 130, as `hanrag build` does."""
    import hanrag.pipeline

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(hanrag.pipeline, "build_index", interrupted)
    corpus = tmp_path / "notes"
    corpus.mkdir()
    (corpus / "a.md").write_text("---\nsource: https://example.org/a\n---\n# 배포\n\n롤백 절차.\n", encoding="utf-8")
    result = runner.invoke(app, ["demo", str(corpus), "--index", str(tmp_path / "ix")])
    assert result.exit_code == 130
    assert "interrupted: no index was published" in result.output
