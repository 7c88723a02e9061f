"""Any local encoder or cross-encoder on an OpenVINO or ONNX Runtime CPU runtime (issue 29): tiny random models
built on the fly, converted into a test cache, checked against sentence-transformers on torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from fixtures.tiny_models import make_tiny_bert, make_tiny_xlmr
from hanrag.config import Config, ConfigError, EmbedderConfig, RerankConfig, from_dict
from hanrag.embed import EmbedderError, EmbedderMismatchError, check_embedder
from hanrag.embed.make import make_embedder
from hanrag.embed.model_folder import ModelRuntimeError, resolve_model
from hanrag.embed.runtime import RuntimeCrossEncoder, RuntimeEmbedder, _pool, unknown_shares
from hanrag.embed.runtime_convert import CONVERSIONS, CONVERTER_VERSION, converted_dir, ensure_converted

pytest.importorskip("openvino")
pytest.importorskip("sentence_transformers")

ROOT = Path(__file__).resolve().parents[1]
TEXTS = [
    "갑목(甲木)은 큰 나무이고 을목은 풀과 덩굴이다. 서버 배포 장애",
    "kubernetes pod restart: check the log, then the config file and the model token",
    "甲乙丙丁 子丑寅卯 木火土金水",
    "a",
    " ".join(["server deploy error log index search query"] * 12),  # longer than max_seq_length: truncated
]
MAX_LEN = 48
COMBOS = [("openvino", "fp32"), ("openvino", "int8"), ("openvino", "int8-weights"), ("onnx", "fp32"), ("onnx", "int8")]
AGREES = {"fp32": 0.9999, "int8-weights": 0.999, "int8": 0.99}  # least cosine to torch's vector


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("runtime-cache")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("runtime-models")
    return {
        "bert": make_tiny_bert(root / "bert", 64, max_seq_length=MAX_LEN),
        "xlmr": make_tiny_xlmr(root / "xlmr", 66),
        # initializer_range 0.2: scores that spread out (at the default every pair scores ~0.5)
        "bert-ce": make_tiny_bert(root / "bert-ce", 64, cross_encoder=True, initializer_range=0.2),
        "xlmr-ce": make_tiny_xlmr(root / "xlmr-ce", 66, cross_encoder=True, initializer_range=0.2),
    }


def _torch_vectors(path: Path, texts: list[str], prompt: str = "") -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(path), device="cpu")
    st.max_seq_length = MAX_LEN
    return st.encode(texts, prompt=prompt or None, normalize_embeddings=True, convert_to_numpy=True)


def _matrix(fast: str, slow: str) -> list:
    """Every (arch, runtime, precision): ``fast``'s all, ``slow``'s OpenVINO conversions marked slow (~15 s each
    on two shared cores; ONNX ones take ~2 s)."""
    return [(fast, r, p) for r, p in COMBOS] + [
        pytest.param(slow, r, p, marks=[pytest.mark.slow] if r == "openvino" else []) for r, p in COMBOS
    ]


@pytest.mark.parametrize(("arch", "runtime", "precision"), _matrix("bert", "xlmr"))
def test_vectors_match_torch(models, cache, arch, runtime, precision):
    e = RuntimeEmbedder(str(models[arch]), MAX_LEN, runtime=runtime, precision=precision, cache_dir=cache,
                        batch_size=2, query_prompt="query: ")
    ref = _torch_vectors(models[arch], TEXTS, "query: ")
    got = e.encode_queries(TEXTS)
    assert got.shape == ref.shape and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert _cos(got, ref).min() >= AGREES[precision]
    # no prompt for passages here: another vector, also torch's
    assert _cos(e.encode_passages(TEXTS[:2]), _torch_vectors(models[arch], TEXTS[:2])).min() >= 0.99
    assert e.count_tokens(TEXTS[-1]) > MAX_LEN and e.encode_queries([]).shape == (0, e.dim)


@pytest.mark.parametrize("runtime", ["openvino", "onnx"])
def test_int8_vectors_do_not_depend_on_their_batch(models, cache, runtime):
    e = RuntimeEmbedder(str(models["xlmr"]), 64, runtime=runtime, precision="int8", cache_dir=cache, batch_size=8)
    alone = np.vstack([e.encode_passages([t]) for t in TEXTS])
    assert _cos(alone, e.encode_passages(TEXTS)).min() > 0.99999


@pytest.mark.parametrize("mode", ["cls", "mean", "max", "mean_sqrt_len_tokens", "weightedmean", "lasttoken"])
def test_pooling_is_sentence_transformers(mode):
    import torch
    from sentence_transformers.models import Pooling

    rng = np.random.default_rng(0)
    hidden = rng.normal(size=(3, 7, 8)).astype(np.float32)
    mask = np.array([[1] * 7, [1] * 4 + [0] * 3, [1] + [0] * 6], dtype=np.int64)
    ref = Pooling(8, pooling_mode=mode)({"token_embeddings": torch.from_numpy(hidden),
                                         "attention_mask": torch.from_numpy(mask)})["sentence_embedding"]
    assert np.allclose(_pool(hidden, mask, (mode,)), ref.numpy(), atol=1e-5)


def test_pooling_without_the_prompt(models, cache, tmp_path):
    """``include_prompt = false`` (instructor-style models): the prompt's tokens are left out of the mean."""
    import shutil

    path = tmp_path / "no-prompt"
    shutil.copytree(models["xlmr"], path)
    cfg = {"word_embedding_dimension": 32, "pooling_mode": "mean", "include_prompt": False}
    (path / "1_Pooling" / "config.json").write_text(json.dumps(cfg))
    e = RuntimeEmbedder(str(path), MAX_LEN, runtime="onnx", precision="fp32", cache_dir=cache,
                        query_prompt="query: ")
    assert _cos(e.encode_queries(TEXTS), _torch_vectors(path, TEXTS, "query: ")).min() >= 0.9999


@pytest.mark.parametrize(("arch", "runtime", "precision"), _matrix("xlmr-ce", "bert-ce"))
def test_cross_encoder_scores_match_torch(models, cache, arch, runtime, precision):
    from scipy.stats import spearmanr
    from sentence_transformers import CrossEncoder

    pairs = [(q, p) for q in ("서버 배포", "kubernetes restart") for p in TEXTS]
    ref = CrossEncoder(str(models[arch]), device="cpu", max_length=MAX_LEN).predict(pairs, batch_size=3)
    ce = RuntimeCrossEncoder(str(models[arch]), MAX_LEN, runtime=runtime, precision=precision, cache_dir=cache)
    got = ce.predict(pairs, batch_size=3, show_progress_bar=False, convert_to_numpy=True)
    assert got.shape == ref.shape and np.ptp(ref) > 0.05  # sigmoid scores that spread: a real ranking
    if precision == "fp32":
        assert np.abs(got - ref).max() < 1e-4 and spearmanr(got, ref).statistic > 0.999
    else:  # these random heads (initializer_range 0.2) are a stress test for int8: scores move by up to ~.06
        assert np.abs(got - ref).max() < 0.1 and spearmanr(got, ref).statistic > 0.9


def test_reranker_runs_on_a_runtime(models, cache, monkeypatch):
    from hanrag.search.rerank import Reranker

    monkeypatch.setenv("HANRAG_CACHE_DIR", str(cache))  # the conversion the cross-encoder test made

    r = Reranker(RerankConfig(model=str(models["xlmr-ce"]), max_length=MAX_LEN, runtime="openvino", precision="int8"))
    result = r.rerank("서버 배포", TEXTS, [1.0, 0.9, 0.8, 0.7, 0.6])
    assert result.raw.shape == (len(TEXTS),) and result.reranked == len(TEXTS)
    with pytest.raises(Exception, match="max_length"):
        Reranker(RerankConfig(model=str(models["xlmr-ce"]), max_length=200, runtime="openvino", precision="int8"))


def test_the_conversion_is_cached_and_reused(models, cache):
    path = models["bert"]
    e1 = RuntimeEmbedder(str(path), MAX_LEN, runtime="onnx", precision="fp32", cache_dir=cache)
    meta = e1.converted / "meta.json"
    before, count = meta.stat().st_mtime_ns, CONVERSIONS["count"]
    e2 = RuntimeEmbedder(str(path), MAX_LEN, runtime="onnx", precision="fp32", cache_dir=cache)
    assert e2.converted == e1.converted and CONVERSIONS["count"] == count and meta.stat().st_mtime_ns == before
    assert e1.converted.parent == Path(cache) / "models"
    assert not [p for p in e1.converted.parent.iterdir() if p.name.endswith(".tmp")]  # no temporary left
    # another precision, runtime or changed model file: another folder
    assert converted_dir(path, "encoder", "onnx", "int8", cache) != e1.converted
    assert converted_dir(path, "cross-encoder", "onnx", "fp32", cache) != e1.converted


def test_a_crashed_conversion_leaves_nothing_that_is_used(models, cache, monkeypatch, tmp_path):
    import hanrag.embed.runtime_convert as rc

    path = tmp_path / "crash"
    make_tiny_bert(path, 64)
    target = converted_dir(path, "encoder", "onnx", "fp32", cache)
    stale = target.parent / f".{target.name}.killed.tmp"  # what a killed process left
    stale.mkdir(parents=True)
    real = rc.convert

    def crash(folder, out, *args, **kwargs):
        (out / "model.onnx").write_bytes(b"half")
        raise RuntimeError("killed mid-conversion")

    monkeypatch.setattr(rc, "convert", crash)
    with pytest.raises(RuntimeError, match="killed"):
        ensure_converted(path, "encoder", "onnx", "fp32", cache_dir=cache)
    assert not target.exists() and not stale.exists()
    assert not list(target.parent.glob(f".{target.name}.*"))
    monkeypatch.setattr(rc, "convert", real)
    e = RuntimeEmbedder(str(path), MAX_LEN, runtime="onnx", precision="fp32", cache_dir=cache)
    assert e.converted == target and (target / "meta.json").is_file()


@pytest.mark.slow
def test_two_processes_converting_at_once_share_one_conversion(tmp_path):
    """Two processes load the same unconverted model at the same time: one converts, the other waits for it and
    reuses its folder; both get the same vectors."""
    path = make_tiny_bert(tmp_path / "m", 64)
    script = textwrap.dedent(f"""
        import json, sys
        from hanrag.embed.runtime import RuntimeEmbedder
        from hanrag.embed.runtime_convert import CONVERSIONS
        e = RuntimeEmbedder({str(path)!r}, 32, runtime="openvino", precision="int8", cache_dir={str(tmp_path)!r})
        print(json.dumps([CONVERSIONS["count"], e.encode_passages(["서버 배포"]).tolist()]))
    """)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
    results = [json.loads(o[0].strip().splitlines()[-1]) for o in outs]
    assert sorted(r[0] for r in results) == [0, 1]  # exactly one of them converted
    assert np.allclose(results[0][1], results[1][1], atol=1e-6)
    folders = [p for p in (tmp_path / "models").iterdir() if not p.name.startswith(".")]
    assert len(folders) == 1 and (folders[0] / "meta.json").is_file()


def test_identity_carries_runtime_and_precision(models, cache):
    e = RuntimeEmbedder(str(models["bert"]), MAX_LEN, runtime="openvino", precision="int8", cache_dir=cache)
    ident = e.identity()
    assert (ident["runtime"], ident["precision"], ident["converter"]) == ("openvino", "int8", CONVERTER_VERSION)
    assert ident["backend"] == "sentence-transformers" and ident["dim"] == 32
    manifest = {"embedder": {"identity": ident}}
    check_embedder(manifest, e)

    class Other:
        def __init__(self, **changes):
            self._id = {**ident, **changes}

        def identity(self):
            return self._id

    with pytest.raises(EmbedderMismatchError, match="precision: index 'int8' vs configured 'fp32'"):
        check_embedder(manifest, Other(precision="fp32"))
    with pytest.raises(EmbedderMismatchError, match="runtime"):
        check_embedder(manifest, Other(runtime="onnx"))
    # an index built before these keys existed ran on torch, fp32: a torch embedder still matches it
    old = {k: v for k, v in ident.items() if k not in ("runtime", "precision", "converter")}
    check_embedder({"embedder": {"identity": old}}, Other(runtime="torch", precision="fp32", converter=""))
    torch_now = Other()
    torch_now._id = dict(old)  # the torch embedder's identity has no such keys either
    check_embedder({"embedder": {"identity": old}}, torch_now)
    with pytest.raises(EmbedderMismatchError, match="runtime: index 'torch' vs configured 'openvino'"):
        check_embedder({"embedder": {"identity": old}}, e)


def test_make_embedder_picks_the_runtime(models, cache):
    cfg = EmbedderConfig(backend="sentence-transformers", model=str(models["bert"]), max_seq_length=MAX_LEN,
                         runtime="onnx", precision="int8", cache_dir=str(cache), cross_lingual_weight=0)
    e = make_embedder(cfg)
    assert isinstance(e, RuntimeEmbedder) and e.identity()["runtime"] == "onnx"
    with pytest.raises(EmbedderError, match="exceeds"):
        make_embedder(EmbedderConfig(backend="sentence-transformers", model=str(models["bert"]),
                                     max_seq_length=65, runtime="openvino", cache_dir=str(cache)))
    with pytest.raises(EmbedderError, match="torch runs the model in fp32"):
        make_embedder(EmbedderConfig(backend="sentence-transformers", model=str(models["bert"]), precision="int8"))


def test_a_model_that_is_not_here_is_one_clear_error():
    from huggingface_hub.constants import HF_HUB_CACHE

    with pytest.raises(ModelRuntimeError) as err:
        resolve_model("hanrag-test/no-such-model", "embedder.model")
    message = str(err.value)
    assert "'hanrag-test/no-such-model'" in message and "never downloaded" in message
    assert "set embedder.model to that path" in message and str(HF_HUB_CACHE) in message
    assert "models--hanrag-test--no-such-model" in message and "\n" not in message
    cfg = EmbedderConfig(backend="sentence-transformers", model="hanrag-test/no-such-model", runtime="openvino",
                         precision="int8")
    with pytest.raises(EmbedderError, match="neither a local model folder nor in the Hugging Face cache"):
        make_embedder(cfg)
    from hanrag.search.rerank import Reranker, RerankError

    with pytest.raises(RerankError, match="search.rerank.model = 'hanrag-test/no-such-model'"):
        Reranker(RerankConfig(model="hanrag-test/no-such-model", runtime="onnx"))


def test_a_hub_id_in_the_hugging_face_cache_is_found_offline(models, cache, tmp_path, monkeypatch):
    import shutil

    import huggingface_hub.constants as hub

    snapshot = tmp_path / "hub" / "models--someorg--tiny-bert" / "snapshots" / "abc123"
    shutil.copytree(models["bert"], snapshot)
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("abc123")
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert resolve_model("someorg/tiny-bert", "embedder.model") == snapshot
    e = RuntimeEmbedder("someorg/tiny-bert", MAX_LEN, runtime="onnx", precision="fp32", cache_dir=cache)
    ident = e.identity()
    assert (ident["model"], ident["revision"]) == ("someorg/tiny-bert", "abc123")
    assert e.converted.name.startswith("tiny-bert-encoder-onnx-fp32-")


def test_a_missing_runtime_package_names_the_pip_install(models, cache, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "openvino" else real(name, *a))
    with pytest.raises(ModelRuntimeError, match=r"needs openvino: pip install"):
        RuntimeEmbedder(str(models["bert"]), MAX_LEN, runtime="openvino", precision="int8", cache_dir=cache)


@pytest.mark.parametrize(
    ("data", "key"),
    [
        ({"embedder": {"runtime": "tensorrt"}}, "embedder.runtime"),
        ({"embedder": {"precision": "int4"}}, "embedder.precision"),
        ({"search": {"rerank": {"runtime": "cuda"}}}, "search.rerank.runtime"),
        ({"embedder": {"backend": "sentence-transformers", "precision": "int8"}}, "embedder.precision"),
        ({"search": {"rerank": {"precision": "int8"}}}, "search.rerank.precision"),
        ({"embedder": {"backend": "onnx", "runtime": "openvino"}}, "embedder.runtime"),
        ({"embedder": {"backend": "sentence-transformers", "runtime": "onnx", "precision": "int8-weights"}},
         "embedder.precision"),
        ({"search": {"rerank": {"runtime": "onnx", "precision": "int8-weights"}}}, "search.rerank.precision"),
        ({"embedder": {"backend": "onnx", "onnx_runtime": "openvino", "onnx_quant": "int8"}}, "embedder.onnx_quant"),
        ({"embedder": {"onnx_runtime": "tensorrt"}}, "embedder.onnx_runtime"),
    ],
)
def test_bad_runtime_settings_are_config_errors(data, key):
    with pytest.raises(ConfigError) as err:
        from_dict(data, "hanrag.toml")
    assert str(err.value).startswith(f"hanrag.toml: {key}")


def test_weight_only_int8_is_openvino_only(models, cache):
    with pytest.raises(ModelRuntimeError, match=r'embedder.precision = "int8-weights" needs runtime = "openvino"'):
        RuntimeEmbedder(str(models["bert"]), MAX_LEN, runtime="onnx", precision="int8-weights", cache_dir=cache)
    with pytest.raises(ModelRuntimeError, match="precision must be one of fp32, int8, int8-weights"):
        RuntimeEmbedder(str(models["bert"]), MAX_LEN, runtime="openvino", precision="int4", cache_dir=cache)


def test_default_config_keeps_torch_fp32():
    cfg = Config()
    assert (cfg.embedder.runtime, cfg.embedder.precision) == ("torch", "fp32")
    assert (cfg.search.rerank.runtime, cfg.search.rerank.precision) == ("torch", "fp32")
    ok = from_dict({"embedder": {"backend": "sentence-transformers", "runtime": "openvino", "precision": "int8"},
                    "search": {"rerank": {"runtime": "onnx", "precision": "int8"}}}, "hanrag.toml")
    assert ok.embedder.runtime == "openvino" and ok.search.rerank.precision == "int8"


def test_doctor_checks_positions_packages_and_languages(models, monkeypatch):
    from hanrag.doctor import _rerank_checks

    cfg = Config()
    cfg.search.rerank.model, cfg.search.rerank.max_length = str(models["bert-ce"]), MAX_LEN
    cfg.search.rerank.runtime, cfg.search.rerank.precision = "onnx", "fp32"
    problems: list = []
    _rerank_checks(cfg, problems)
    codes = {p.code: p for p in problems}
    # the tiny vocabulary has a few Hangul syllables and Hanja, and every Latin letter
    warning = codes["reranker-language-coverage"]
    assert warning.severity == "warning" and "ko (" in warning.message and "zh (" in warning.message
    assert "en (" not in warning.message and "reranker-unloadable" not in codes
    cfg.search.rerank.max_length = 100
    problems = []
    _rerank_checks(cfg, problems)
    assert [p.code for p in problems] == ["reranker-length-over-positions"] and "64" in problems[0].message
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "onnxruntime" else real(n, *a))
    problems = []
    _rerank_checks(cfg, problems)
    assert [p.code for p in problems] == ["reranker-runtime-missing"] and "pip install" in problems[0].message


def test_unknown_shares_per_language(models):
    from transformers import AutoTokenizer

    shares = unknown_shares(AutoTokenizer.from_pretrained(models["bert"]))
    assert shares["en"] == 0 and shares["ko"] > 1 / 3 and shares["zh"] > 1 / 3
