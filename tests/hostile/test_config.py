"""Issue 13, items 8 and 9: config values are range-checked (an error names the key), environment
overrides reach every key, are parsed by the key's type, name the variable in errors and ignore
unknown variables with a warning."""

from __future__ import annotations

import dataclasses
import logging
import math
import typing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fixtures.hostile import BAD_VALUES
from hanrag.cli import app
from hanrag.config import CHECKS, Config, ConfigError, env_overrides, from_dict, load_config

runner = CliRunner()


@pytest.mark.parametrize(("section", "key", "value"), BAD_VALUES)
def test_bad_value_is_a_config_error_naming_the_key(section: str, key: str, value: object) -> None:
    with pytest.raises(ConfigError) as err:
        from_dict({section: {key: value}}, "hanrag.toml")
    message = str(err.value)
    assert message.startswith("hanrag.toml: ") and f"{section}.{key}" in message, message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("rule", "field"),
    [
        ({"bm25": math.nan}, "bm25"),
        ({"dense": 1.5}, "dense"),
        ({"bm25": -0.1}, "bm25"),
        ({"lang": "fr"}, "lang"),
        ({"min_hanja_ratio": 2.0}, "min_hanja_ratio"),
        ({"max_chars": -1}, "max_chars"),
    ],
)
def test_bad_rule_values(rule: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=rf"search\.rules\[0\]\.{field}"):
        from_dict({"search": {"preset": "custom", "rules": [rule]}}, "hanrag.toml")


@pytest.mark.parametrize("blend", [5.0, -0.1, math.nan])
def test_rerank_blend_in_unit_interval(blend: float) -> None:
    with pytest.raises(ConfigError, match=r"search\.rerank\.blend"):
        from_dict({"search": {"rerank": {"blend": blend}}})


def test_nan_in_a_toml_file_names_file_and_key(tmp_path: Path) -> None:
    path = tmp_path / "hanrag.toml"
    path.write_text("[search]\nrrf_k = nan\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"hanrag\.toml: search\.rrf_k: must be a finite number"):
        load_config(path, env=False)
    result = runner.invoke(app, ["init", "--print", "--config", str(path)])
    assert result.exit_code == 2 and "search.rrf_k" in result.output and "Traceback" not in result.output


def test_defaults_and_boundaries_load() -> None:
    from_dict({})
    from_dict(
        {
            "search": {
                "rrf_k": 0.001,
                "diversity_factors": [1.0, 0.5, 1e-9],
                "rerank": {"blend": 1.0},
                "candidates": 0,
                "xling_calibration": "none",
            },
            "index": {"dedup_threshold": 1.0, "keep_snapshots": 1},
            "server": {"port": 65535, "max_top_k": 1},
            "bm25": {"method": "atire", "k1": 0.0, "b": 1.0},
            "milvus": {"dense_index": "hnsw"},
        }
    )


def test_every_number_is_checked_by_type_even_without_an_explicit_range() -> None:
    """New fields get the schema checks for free: finite, no booleans for numbers, >= 0 unless CHECKS says so."""
    checked = 0
    for section in dataclasses.fields(Config):
        if section.name == "base_dir":
            continue
        cls = typing.get_type_hints(Config)[section.name]
        for f in dataclasses.fields(cls):
            tp = typing.get_type_hints(cls)[f.name]
            if tp is float:
                with pytest.raises(ConfigError, match=rf"{section.name}\.{f.name}"):
                    from_dict({section.name: {f.name: math.inf}})
                checked += 1
            if tp in (int, float):
                with pytest.raises(ConfigError, match=rf"{section.name}\.{f.name}"):
                    from_dict({section.name: {f.name: True}})
                if f"{section.name}.{f.name}" not in CHECKS:
                    with pytest.raises(ConfigError, match=rf"{section.name}\.{f.name}: must be >= 0"):
                        from_dict({section.name: {f.name: -1}})
    assert checked >= 10


# ----------------------------------------------------------------------------- item 9: environment


def test_env_numeric_api_key_is_a_string() -> None:
    data, origins = env_overrides({}, {"HANRAG_SERVER__API_KEY": "12345"})
    cfg = from_dict(data, "<defaults>", origins)
    assert cfg.server.api_key == "12345"
    cfg = from_dict(*env_overrides({}, {"HANRAG_SERVER__API_KEY": "0x1f"}))
    assert cfg.server.api_key == "0x1f"


def test_env_list_field_takes_a_comma_list_or_a_toml_array() -> None:
    assert from_dict(*env_overrides({}, {"HANRAG_LEXICON__PATHS": "saju"})).lexicon.paths == ["saju"]
    assert from_dict(*env_overrides({}, {"HANRAG_LEXICON__PATHS": "saju, it"})).lexicon.paths == ["saju", "it"]
    assert from_dict(*env_overrides({}, {"HANRAG_LEXICON__PATHS": '["saju"]'})).lexicon.paths == ["saju"]
    assert from_dict(*env_overrides({}, {"HANRAG_SERVER__ALLOWED_HOSTS": "a.local,b.local"})).server.allowed_hosts == [
        "a.local",
        "b.local",
    ]
    cfg = from_dict(*env_overrides({}, {"HANRAG_SEARCH__DIVERSITY_FACTORS": "1, 0.9"}))
    assert cfg.search.diversity_factors == [1.0, 0.9]


def test_env_reaches_nested_tables_and_every_key() -> None:
    cfg = from_dict(
        *env_overrides({}, {"HANRAG_SEARCH__RERANK__MODEL": "/models/ce", "HANRAG_SEARCH__RERANK__BLEND": "0.25"})
    )
    assert cfg.search.rerank.model == "/models/ce" and cfg.search.rerank.blend == 0.25
    # every scalar key of every section (and of [search.rerank]) can be set from the environment
    defaults = Config()
    for section in dataclasses.fields(Config):
        if section.name == "base_dir":
            continue
        sub = getattr(defaults, section.name)
        tables = [((section.name,), sub)] + [
            ((section.name, f.name), getattr(sub, f.name))
            for f in dataclasses.fields(sub)
            if dataclasses.is_dataclass(getattr(sub, f.name))
        ]
        for path, obj in tables:
            hints = typing.get_type_hints(type(obj))
            for f in dataclasses.fields(obj):
                value = getattr(obj, f.name)
                tp = hints[f.name]
                if (
                    dataclasses.is_dataclass(value)
                    or isinstance(value, dict)
                    or (typing.get_origin(tp) is list and dataclasses.is_dataclass(typing.get_args(tp)[0]))
                ):
                    continue  # tables: TOML values (test_env_tables_as_toml_and_quoted_strings)
                var = "HANRAG_" + "__".join(p.upper() for p in (*path, f.name))
                raw = (
                    ",".join(map(str, value))
                    if isinstance(value, list)
                    else str(value).lower()
                    if isinstance(value, bool)
                    else str(value)
                )
                data, origins = env_overrides({}, {var: raw})
                assert origins == {".".join((*path, f.name)): var}, var
                cfg = from_dict(data, "<defaults>", origins)
                node = cfg
                for p in (*path, f.name):
                    node = getattr(node, p)
                assert node == value, (var, raw, node)


def test_env_tables_as_toml_and_quoted_strings() -> None:
    cfg = from_dict(
        *env_overrides(
            {},
            {
                "HANRAG_CORPUS__TIERS": '{"a" = 1}',
                "HANRAG_CONFLUENCE__URL": '"http://wiki.example"',
                "HANRAG_SEARCH__RULES": '[{name = "x", bm25 = 1.0, dense = 0.0}]',
                "HANRAG_SEARCH__PRESET": "custom",
            },
        )
    )
    assert cfg.corpus.tiers == {"a": 1} and cfg.confluence.url == "http://wiki.example"
    assert cfg.search.rules[0].name == "x" and cfg.search.preset == "custom"


@pytest.mark.parametrize(
    ("var", "raw", "words"),
    [
        ("HANRAG_SERVER__PORT", "eighty", "expects an integer"),
        ("HANRAG_SERVER__PORT", "99999", "must be in [1, 65535]"),
        ("HANRAG_SEARCH__RRF_K", "nan", "finite"),
        ("HANRAG_SEARCH__FILL_MISSING", "maybe", "true or false"),
        ("HANRAG_BM25__METHOD", "bogus", "one of"),
        ("HANRAG_SEARCH__RERANK__BLEND", "5", "in [0, 1]"),
        ("HANRAG_SEARCH__DIVERSITY_FACTORS", "1,-1", "search.diversity_factors[1]"),
        ("HANRAG_SEARCH__RULES", "[{bm25 = nan}]", "search.rules[0].bm25"),
        ("HANRAG_CORPUS__TIERS", "{a = ", "TOML"),
    ],
)
def test_env_errors_name_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, var: str, raw: str, words: str
) -> None:
    path = tmp_path / "hanrag.toml"
    path.write_text("[server]\nport = 8080\n", encoding="utf-8")
    monkeypatch.setenv(var, raw)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    message = str(err.value)
    assert message.startswith(f"environment variable {var}: "), message
    assert words in message and str(path) not in message, message


def test_unknown_env_variables_warn_and_are_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for var in (
        "HANRAG_X__Y",
        "HANRAG_SEARCH__NOPE",
        "HANRAG_SEARCH__RERANK__NOPE",
        "HANRAG_SEARCH__RERANK",
        "HANRAG_SERVER__PORT__X",
        "HANRAG___",
        "HANRAG_BASE_DIR__X",
    ):
        monkeypatch.setenv(var, "1")
    monkeypatch.setenv("HANRAG_API_KEY", "k")  # single underscore: its own meaning, not an override
    monkeypatch.setenv("HANRAG_EVAL_ROOT", "/somewhere")
    with caplog.at_level(logging.WARNING, logger="hanrag.config"):
        cfg = load_config(None)
    assert cfg.server.port == 8000
    warned = " ".join(r.getMessage() for r in caplog.records)
    for var in ("HANRAG_X__Y", "HANRAG_SEARCH__NOPE", "HANRAG_SEARCH__RERANK__NOPE", "HANRAG_SEARCH__RERANK"):
        assert var in warned
    assert "HANRAG_API_KEY" not in warned and "HANRAG_EVAL_ROOT" not in warned
    # and commands still run
    result = runner.invoke(app, ["init", "--print"])
    assert result.exit_code == 0, result.output


def test_hanrag_api_key_env_still_works(monkeypatch: pytest.MonkeyPatch) -> None:
    from hanrag.server import api_key_for

    monkeypatch.setenv("HANRAG_API_KEY", " 98765 ")
    cfg = load_config(None)
    assert api_key_for(cfg) == "98765"
