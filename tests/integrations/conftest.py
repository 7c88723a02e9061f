"""Fixtures for the framework adapters: one small built index (fixtures/server.py's corpus), opened once."""

from __future__ import annotations

import inspect
import os

import pytest

# Haystack reports pipeline runs to its telemetry service unless told not to; the tests run offline
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

import hanrag
from fixtures.server import build_test_index


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The sample corpus, its hanrag.toml and a built index (see build_test_index)."""
    return build_test_index(tmp_path_factory.mktemp("integrations"))


@pytest.fixture(scope="session")
def index(built: dict) -> hanrag.Index:
    return hanrag.open(built["index_dir"], config=built["config"])


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> None:
    """Mark coroutine tests for pytest-asyncio (strict mode): LangChain's standard suite has one (ainvoke)
    and forbids overriding its tests to mark them."""
    if name.startswith("test_") and inspect.iscoroutinefunction(obj):
        pytest.mark.asyncio(obj)
