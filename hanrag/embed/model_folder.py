"""A local model folder: where it is (a path, or a hub id in the Hugging Face cache), what sentence-transformers
reads from it besides the transformer (pooling, prompts, lower-casing), its fingerprint and revision, and what a
runtime needs installed. Nothing here imports torch, transformers or a runtime: :mod:`hanrag.doctor` uses it to
check a model before loading it, :mod:`hanrag.embed.runtime_convert` to convert it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hanrag.embed.base import _file_fingerprint
from hanrag.embed.text import EmbedderError

RUNTIMES = ("torch", "openvino", "onnx")
# "int8": int8 weights and activations (NNCF static quantisation on openvino, dynamic on onnx); "int8-weights":
# int8 weights, float activations (NNCF weight compression; openvino only): slower than "int8", closer to fp32
PRECISIONS = ("fp32", "int8", "int8-weights")
_SUFFIXES = {".safetensors", ".bin", ".json", ".txt", ".model"}  # the files a model's numbers come from
_PIP = {
    "openvino": "pip install 'hanrag[torch]' (or: pip install 'openvino>=2026.4,<2027' 'nncf>=3.4,<4')",
    "onnx": "pip install 'onnxruntime>=1.20,<2' 'onnx>=1.16,<2'",
    "torch": "pip install torch==2.13.0 && pip install 'hanrag[torch]'",
}



class ModelRuntimeError(EmbedderError):
    """A model cannot be found, converted or run on the configured runtime."""


def missing_package(runtime: str, precision: str = "fp32", *, convert: bool = False) -> str | None:
    """What is missing to run (``convert``: and to convert) a model on ``runtime``, with its pip command."""
    needed: list[str] = []
    if runtime == "openvino":
        needed = ["openvino"] + (["nncf"] if convert and precision != "fp32" else [])
    elif runtime == "onnx":
        needed = ["onnxruntime"] + (["onnx"] if convert else [])
    if convert or runtime == "torch":
        needed += ["torch", "transformers"]
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    pip = _PIP["torch"] if runtime == "torch" or {"torch", "transformers"} & set(missing) else _PIP[runtime]
    return f"runtime {runtime!r} needs {', '.join(missing)}: {pip}"


def precision_problem(runtime: str, precision: str) -> str | None:
    """Why ``precision`` cannot run on ``runtime`` (None when it can); the message names both values."""
    if precision not in PRECISIONS:
        return f'precision must be one of {", ".join(PRECISIONS)}, got "{precision}"'
    if runtime == "torch" and precision != "fp32":
        return f'precision = "{precision}" needs runtime = "openvino" or "onnx" (torch runs the model in fp32)'
    if precision == "int8-weights" and runtime != "openvino":
        return f'precision = "int8-weights" needs runtime = "openvino" (got "{runtime}"; onnx takes "int8" or "fp32")'
    return None


def check_packages(runtime: str, precision: str, key: str, *, convert: bool) -> None:
    section = key.rsplit(".", 1)[0]
    problem = precision_problem(runtime, precision)
    if problem:
        raise ModelRuntimeError(f"{section}.{problem}")
    problem = missing_package(runtime, precision, convert=convert)
    if problem:
        raise ModelRuntimeError(f"{key}: {problem}")


def _hub_cache() -> str:
    try:
        from huggingface_hub.constants import HF_HUB_CACHE

        return str(HF_HUB_CACHE)
    except ImportError:  # pragma: no cover - huggingface_hub comes with transformers
        return "~/.cache/huggingface/hub"


def resolve_model(model: str, key: str) -> Path:
    """The folder of ``model``: a local path, or a hub id already in the Hugging Face cache (never downloaded)."""
    if not model:
        raise ModelRuntimeError(f"{key} is empty")
    path = Path(model).expanduser()
    if path.is_dir():
        return path.resolve()
    if not path.exists() and re.fullmatch(r"[\w.-]+(/[\w.-]+)?", model):
        from huggingface_hub import snapshot_download

        # a bare name is also looked up as sentence-transformers/<name>, as sentence-transformers does
        for repo in [model] + ([f"sentence-transformers/{model}"] if "/" not in model else []):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return Path(snapshot_download(repo, local_files_only=True))
            except Exception:
                continue
    cache = _hub_cache()
    repo = "models--" + model.replace("/", "--")
    raise ModelRuntimeError(
        f"{key} = {model!r} is neither a local model folder nor in the Hugging Face cache, and models are never "
        f"downloaded. Either put the model folder (config.json, weights, tokenizer files) at a local path such as "
        f"/models/{model.rsplit('/', 1)[-1]} and set {key} to that path, or put it into the Hugging Face cache "
        f"{cache} (as `huggingface-cli download {model}` writes it on a connected machine: "
        f"{cache}/{repo}/snapshots/<commit>/ with refs/main naming the commit)"
    )


@dataclass(frozen=True)
class Layout:
    """What sentence-transformers reads from a model folder besides the transformer itself."""

    transformer: Path  # the folder with config.json, the weights and the tokenizer
    pooling: tuple[str, ...] = ("mean",)  # sentence-transformers pooling modes, concatenated in this order
    include_prompt: bool = True
    do_lower_case: bool = False
    max_seq_length: int | None = None
    prompts: dict[str, str] = field(default_factory=dict)
    default_prompt_name: str | None = None


_LEGACY_POOLING = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
POOLING_MODES = tuple(_LEGACY_POOLING.values())


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def read_layout(folder: Path, key: str = "embedder.model") -> Layout:
    """The pooling, prompts and lower-casing a sentence-transformers folder declares (``modules.json``).

    A folder without ``modules.json`` is a plain transformers model: mean pooling, as sentence-transformers
    builds it. Modules other than Transformer, Pooling and Normalize (Dense, ...) are refused."""
    modules_file = folder / "modules.json"
    st_config = _read_json(folder / "config_sentence_transformers.json")
    prompts = {str(k): str(v) for k, v in (st_config.get("prompts") or {}).items()}
    common = {"prompts": prompts, "default_prompt_name": st_config.get("default_prompt_name")}
    if not modules_file.is_file():
        bert = _read_json(folder / "sentence_bert_config.json")
        return Layout(folder, do_lower_case=bool(bert.get("do_lower_case")), max_seq_length=bert.get("max_seq_length"),
                      **common)
    try:
        modules = json.loads(modules_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelRuntimeError(f"{key}: {modules_file} cannot be read: {exc}") from exc
    transformer, pooling, include_prompt = folder, ("mean",), True
    for module in sorted(modules, key=lambda m: int(m.get("idx", 0))):
        kind = str(module.get("type", "")).rsplit(".", 1)[-1]
        sub = folder / str(module.get("path", ""))
        if kind == "Transformer":
            transformer = sub
        elif kind == "Pooling":
            cfg = _read_json(sub / "config.json")
            mode = cfg.get("pooling_mode")
            if mode is None:
                mode = [m for k, m in _LEGACY_POOLING.items() if cfg.get(k)] or ["mean"]
            pooling = (mode,) if isinstance(mode, str) else tuple(mode)
            unknown = [m for m in pooling if m not in POOLING_MODES]
            if unknown:
                raise ModelRuntimeError(f"{key}: pooling mode {unknown[0]!r} is not one of {', '.join(POOLING_MODES)}")
            include_prompt = bool(cfg.get("include_prompt", True))
        elif kind != "Normalize":
            raise ModelRuntimeError(
                f"{key}: the model has a sentence-transformers {kind} module ({module.get('path')}), which only "
                "the torch runtime runs; set runtime = \"torch\" for this model"
            )
    bert = _read_json(transformer / "sentence_bert_config.json") or _read_json(folder / "sentence_bert_config.json")
    return Layout(transformer, pooling, include_prompt, bool(bert.get("do_lower_case")), bert.get("max_seq_length"),
                  **common)


def _module_folders(folder: Path) -> list[Path]:
    modules = _read_json_list(folder / "modules.json")
    return [folder / str(m.get("path")) for m in modules if isinstance(m, dict) and m.get("path")]


def _read_json_list(path: Path) -> list[Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return data if isinstance(data, list) else []


def source_fingerprint(folder: Path) -> str:
    """Hash of the files a model's numbers come from (size and first/last MiB each): config, weights, tokenizer,
    sentence-transformers module folders (``modules.json``). Other folders (an ``onnx/`` export) are skipped."""
    h = hashlib.sha256()
    folders = [folder, *_module_folders(folder)]
    for sub in folders:
        if not sub.is_dir():
            continue
        for f in sorted(sub.iterdir()):
            if f.is_file() and f.suffix in _SUFFIXES:
                h.update(str(f.relative_to(folder)).encode())
                _file_fingerprint(f, h)
    return h.hexdigest()


def revision(folder: Path) -> str:
    """The model's revision for identities: the commit of a Hugging Face cache snapshot, else a file hash."""
    parts = folder.parts
    if "snapshots" in parts and parts.index("snapshots") + 1 < len(parts):
        return parts[parts.index("snapshots") + 1]
    return source_fingerprint(folder)[:16]


def model_name(folder: Path) -> str:
    """A readable name for ``folder``: the repo of a Hugging Face cache snapshot, else the folder's name."""
    parts = folder.parts
    if "snapshots" in parts and parts.index("snapshots") > 0:
        return parts[parts.index("snapshots") - 1].removeprefix("models--").split("--")[-1]
    return folder.name
