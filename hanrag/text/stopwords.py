"""bm25s's stopword lists, read without importing bm25s.

``import bm25s.stopwords`` runs ``bm25s/__init__.py`` first, which imports numba and scipy (about a
second, more on a busy machine) though the lists are plain tuples; a search never needs the rest of
bm25s. So the one module file is loaded on its own: the same lists, the same tokens.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType


@functools.cache
def _module() -> ModuleType:
    loaded = sys.modules.get("bm25s.stopwords")
    if loaded is not None:
        return loaded
    spec = importlib.util.find_spec("bm25s")  # a top-level spec: found, not imported
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("bm25s is not installed (hanrag needs its stopword lists)")
    path = Path(next(iter(spec.submodule_search_locations))) / "stopwords.py"
    file_spec = importlib.util.spec_from_file_location("hanrag.text._bm25s_stopwords", path)
    if file_spec is None or file_spec.loader is None:
        raise ImportError(f"cannot read bm25s's stopword lists at {path}")
    module = importlib.util.module_from_spec(file_spec)
    file_spec.loader.exec_module(module)
    return module


def stopwords(name: str) -> frozenset[str]:
    """One of bm25s's lists by its name there, e.g. ``STOPWORDS_EN``."""
    return frozenset(getattr(_module(), name))
