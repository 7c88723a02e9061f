"""Modes are Literal types, checked in one place: the loader derives its enum checks from the annotations."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from hanrag.config import CHECKS, Config, ConfigError, Fusion, env_overrides, from_dict, literal_values
from hanrag.records import SEARCH_MODES, check_mode


def _literal_fields(cls, prefix=""):
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp, key = hints[f.name], f"{prefix}{f.name}"
        if typing.get_origin(tp) is list and typing.get_args(tp):
            tp, key = typing.get_args(tp)[0], key + "[]"
        if typing.get_origin(tp) is typing.Literal:
            yield key, typing.get_args(tp)
        elif dataclasses.is_dataclass(tp):
            yield from _literal_fields(tp, key + ".")


def test_every_literal_field_is_checked_with_its_own_values():
    fields = dict(_literal_fields(Config))
    assert {"search.fusion", "bm25.method", "backend.kind", "search.rules[].lang"} <= set(fields)
    for key, values in fields.items():
        assert CHECKS[key] == ("enum", values, False), key


def test_a_wrong_mode_names_the_key_and_the_choices():
    with pytest.raises(ConfigError, match=r"search\.fusion: must be one of 'minmax'.*got 'rff'"):
        from_dict({"search": {"fusion": "rff"}})
    data, origins = env_overrides({}, {"HANRAG_BM25__METHOD": "okapi"})
    with pytest.raises(ConfigError, match=r"HANRAG_BM25__METHOD: bm25\.method: must be one of"):
        from_dict(data, origins=origins)
    assert literal_values(Fusion) == ("minmax", "zscore", "rrf", "ceiling", "calibrated")
    assert from_dict({"search": {"fusion": "rrf"}}).search.fusion == "rrf"


def test_search_mode_is_checked_in_one_function():
    assert SEARCH_MODES == ("hybrid", "bm25", "dense")
    assert check_mode("bm25") == "bm25"
    with pytest.raises(ValueError, match="mode must be hybrid, bm25 or dense, got 'sparse'"):
        check_mode("sparse")


def test_glossary_settings_are_checked():
    with pytest.raises(ConfigError, match=r"search\.glossary_weight"):
        from_dict({"search": {"glossary_weight": 1.5}})
    with pytest.raises(ConfigError, match=r"search\.glossary_exclude"):
        from_dict({"search": {"glossary_exclude": "식물"}})  # a list, not a string
    assert from_dict({"search": {"glossary_exclude": ["식물"]}}).search.glossary_exclude == ["식물"]
