"""`hanrag doctor` compares the analyzer the index was built with (settings and tokenizer library versions)."""

from __future__ import annotations

import importlib.metadata

from hanrag.config import Config
from hanrag.doctor import diagnose
from hanrag.index.snapshot import open_snapshot
from hanrag.pipeline import build_from_chunks
from hanrag.records import Chunk


def _build(tmp_path, cfg):
    text = "Rotating signing keys regularly keeps tokens safe."
    chunks = [Chunk(chunk_id="c0", doc_id="d0", text=text, start=0, end=len(text), lang="en")]
    build_from_chunks(chunks, tmp_path / "ix", cfg, progress=False)
    return tmp_path / "ix"


def test_manifest_analyzer_names_every_tokenizer_library(tmp_path):
    ident = open_snapshot(_build(tmp_path, Config())).manifest["analyzer"]
    for dist in ("OpenCC", "PyStemmer", "hanja"):
        assert ident[dist] == importlib.metadata.version(dist)
    assert ident["kiwipiepy"] and ident["jieba"]


def test_doctor_flags_an_analyzer_change(tmp_path):
    index = _build(tmp_path, Config())
    assert "analyzer-changed" not in {p.code for p in diagnose(index, Config())}
    unstemmed = Config()
    unstemmed.text.en_stem = False
    problem = next(p for p in diagnose(index, unstemmed) if p.code == "analyzer-changed")
    assert problem.severity == "error" and "en_stem: True -> False" in problem.message and "rebuild" in problem.fix


def test_doctor_names_a_ranker_model_that_cannot_be_read(tmp_path):
    """search.ranker naming a missing or broken model is an error with its file, and the bundled one passes."""
    index = _build(tmp_path, Config())
    broken = tmp_path / "ranker.json"
    broken.write_text("{not json", encoding="utf-8")
    for spec in (str(tmp_path / "absent.json"), str(broken)):
        cfg = Config()
        cfg.search.ranker = spec
        problem = next(p for p in diagnose(index, cfg) if p.code == "ranker-unloadable")
        assert problem.severity == "error" and spec in problem.message and "search.ranker" in problem.fix
    bundled = Config()
    bundled.search.ranker = "lambdamart"
    assert "ranker-unloadable" not in {p.code for p in diagnose(index, bundled)}


def test_doctor_warns_when_the_chunking_config_changed(tmp_path):
    """The [chunking] section the manifest records (config.built_section) against this config's: a changed chunk
    size is a warning to rebuild; the config the index was built with passes."""
    index = _build(tmp_path, Config())
    assert "chunking-changed" not in {p.code for p in diagnose(index, Config())}
    smaller = Config()
    smaller.chunking.chunk_size = 256
    problem = next(p for p in diagnose(index, smaller) if p.code == "chunking-changed")
    assert problem.severity == "warning" and "rebuild" in problem.fix
