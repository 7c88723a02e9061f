"""Render a commented ``hanrag.toml`` holding every setting at its default.

The file is generated from the :mod:`hanrag.config` dataclasses themselves, and the
comments come from the comments next to (or right above) each field in
``config.py``, so the template can never drift from the code: a new field shows up
here with the comment its author wrote for it. Fields without a comment get the
short fallback text in :data:`_FALLBACK_HELP` (a test fails when one has neither).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import json
import math
import textwrap
import tokenize
import typing
import urllib.parse
from typing import Any

from hanrag import config as config_module
from hanrag.config import Config

# help for fields whose definition carries no comment in config.py
_FALLBACK_HELP: dict[str, str] = {
    "corpus.default_tier": "tier of documents in no tier folder and without a leading number",
    "corpus.include_ai_draft": "index ai-draft documents too (they are excluded by default)",
    "corpus.extensions": "file extensions read from the corpus folder",
    "corpus.max_lines_info": "documents longer than this many lines get an info finding",
    "corpus.mixed_topic_lines": "documents longer than this many lines without topic separators get a warning",
    "corpus.max_file_bytes": "larger files are skipped with a finding",
    "chunking.chunk_size": "target chunk length",
    "chunking.overlap": "text repeated between neighbouring chunks of one section",
    "text.opencc": "OpenCC conversion applied to Chinese before tokenizing (t2s: traditional -> simplified)",
    "embedder.passage_prompt": "prefix added to passages before embedding (e.g. \"passage: \")",
    "search.candidates": "candidates each retriever returns before fusion",
    "server.api_key": "required X-API-Key header value (empty = no auth; only allowed on loopback)",
    "confluence.username": "Confluence user",
    "confluence.token": "Confluence API token",
    "text.en_stem": "stem English tokens (Snowball) in the index and queries",
    "text.en_allowlist": "English tokens kept whole although they contain digits or symbols",
    "lexicon.expansion_weight": "weight of a cross-script expansion token relative to a query token",
    "bm25.method": "BM25 variant (as bm25s computes it): lucene | robertson | atire",
    "bm25.k1": "term-frequency saturation",
    "bm25.b": "length normalisation",
    "bm25.headings": "index each chunk's title and heading path with its text",
    "embedder.headings": "embed each chunk's title and heading path with its text (a rebuild re-embeds every chunk)",
    "embedder.cross_lingual_weight": "weight of a second, language-agnostic encoder's cosine (USE multilingual v3) "
    "added to the main encoder's; 0 = the main encoder alone",
    "embedder.max_seq_length": "longer passages are truncated to this many model tokens",
    "embedder.batch_size": "passages embedded per batch while building",
    "index.keep_snapshots": "published snapshots kept on disk (older ones are removed after a build)",
    "index.dedup_threshold": "Jaccard of character 5-grams (normalised text) at or above which two chunks of "
    "different documents are the same text",
    "index.dedup": "fold near-duplicate chunks into one hit (their sources listed in also_in)",
    "index.dedup_exclude": "path globs never folded into another chunk (undo a wrong fold)",
    "search.rrf_k": "k of reciprocal-rank fusion (only with fusion = \"rrf\")",
    "search.fill_missing": "score candidates found by one retriever with the other one too",
    "search.diversity": "penalise several hits from the same document",
    "search.diversity_factors": "score factor of a document's 1st, 2nd, 3rd, ... hit (the last one repeats)",
    "search.rules": "adaptive weight rules, the first one that matches wins",
    "search.rerank": "cross-encoder reranking of the top candidates",
    "search.ranker": "learned ranker reordering the fused head: \"lambdamart\" (bundled), a JSON model path, or "
    "\"\" (the rule table's order)",
    "rerank.candidates": "fused candidates passed to the reranker (at least top_k)",
    "rerank.batch_size": "pairs scored per batch",
    "rerank.max_length": "model tokens per (query, passage) pair, at most the model's positions (query and passage "
    "are cut to 8 characters a token before tokenising)",
    "server.host": "address to bind; anything but loopback needs an api_key",
    "server.port": "TCP port",
    "server.max_query_chars": "longest accepted query (characters)",
    "server.max_top_k": "largest accepted top_k (at most 100)",
    "server.max_body_bytes": "largest accepted request body; larger ones get 413",
    "server.corpus_root": "corpus folder that POST /index/rebuild re-indexes (empty = rebuild disabled)",
    "confluence.url": "base URL of the Confluence site",
    "confluence.spaces": "space keys to fetch",
    "confluence.page_limit": "pages per API request",
    "confluence.timeout_s": "seconds per HTTP request",
    "confluence.max_retries": "retries on 429/5xx with backoff",
    "milvus.uri": "Milvus server URI or a local milvus-lite file (empty = the local index only)",
    "milvus.token": "Milvus auth token (or user:password)",
    "milvus.db_name": "Milvus database",
    "milvus.collection": "collection name",
    "milvus.timeout_s": "seconds per Milvus call",
    "rule.name": "shown in explanations as the rule that chose the weights",
    "rule.bm25": "BM25 weight when this rule fires",
    "rule.dense": "dense weight when this rule fires",
    "rule.lang": "query language condition (empty = any language)",
    "rule.min_hanja_ratio": "fires when the query's Hanja ratio is above this",
    "rule.max_chars": "fires when the query has at most this many non-space characters",
    "rule.min_chars": "fires when the query has at least this many non-space characters",
    "rule.has_term": "fires when a domain term was (true) / was not (false) found in the query",
    "rule.question": "fires when the query reads (true) / does not read (false) as a question",
}

_SECTION_HELP: dict[str, str] = {
    "corpus": "Reading and validating the corpus",
    "chunking": "Splitting documents into chunks",
    "text": "Tokenization and normalization",
    "lexicon": "Domain dictionaries and cross-script expansion",
    "bm25": "Sparse (BM25) retrieval",
    "embedder": "Dense embeddings",
    "index": "Index snapshots and near-duplicate folding",
    "search": "Search pipeline: fusion, adaptive weights, diversity",
    "server": "HTTP server (`hanrag serve`)",
    "confluence": "Confluence connector",
    "milvus": "Milvus backend",
}


def field_comments(cls: type) -> dict[str, str]:
    """Comments written next to (same line) or right above each field of ``cls`` in its source."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string.lstrip("#").strip()
    result: dict[str, str] = {}
    class_node = ast.parse(source).body[0]
    for node in getattr(class_node, "body", []):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        parts: list[str] = []
        above = node.lineno - 1
        while above >= 1 and lines[above - 1].strip().startswith("#"):
            parts.insert(0, comments.get(above, ""))
            above -= 1
        end = node.end_lineno or node.lineno
        for lineno in range(node.lineno, end + 1):
            if lineno in comments and not lines[lineno - 1].strip().startswith("#"):
                parts.append(comments[lineno])
        text = " ".join(p for p in parts if p)
        if text:
            result[node.target.id] = text
    return result


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            return "inf" if value > 0 else ("-inf" if value < 0 else "nan")
        return repr(value)
    if isinstance(value, str):
        # JSON string escapes are valid TOML basic-string escapes
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {value!r} to TOML")


def _toml_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() and key.isascii() else json.dumps(key)


def _help(section_key: str, name: str, comments: dict[str, str]) -> str:
    comment = comments.get(name, "")
    fallback = _FALLBACK_HELP.get(f"{section_key}.{name}", "")
    if comment and fallback:
        return f"{fallback}; {comment}"
    return comment or fallback


def _comment_lines(text: str) -> list[str]:
    return [f"# {line}" for line in textwrap.wrap(text, width=100)]


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(config_module))


def _is_dataclass_list(tp: Any) -> type | None:
    if typing.get_origin(tp) is list:
        (arg,) = typing.get_args(tp)
        if dataclasses.is_dataclass(arg):
            return arg
    return None


# secrets are never written or printed (`hanrag init --print` would echo a token taken from the environment)
SECRET_KEYS = frozenset({"server.api_key", "confluence.token", "milvus.token"})
URL_KEYS = frozenset({"milvus.uri", "confluence.url"})  # a user:password@ part in them is a secret too


def _without_userinfo(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc="***@" + parts.netloc.rsplit("@", 1)[1]))


def _render_table(out: list[str], path: str, obj: Any, help_key: str) -> None:
    cls = type(obj)
    comments = field_comments(cls)
    hints = _hints(cls)
    nested: list[tuple[str, Any, str]] = []
    deferred: list[str] = []  # array-of-tables examples go after the table's own keys
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            nested.append((f.name, value, _help(help_key, f.name, comments)))
            continue
        text = _help(help_key, f.name, comments)
        item_cls = _is_dataclass_list(hints[f.name])
        if item_cls is not None:
            _render_dataclass_list(out, deferred, path, f.name, value, item_cls, text)
            continue
        out.extend(_comment_lines(text))
        key = f"{path}.{f.name}"
        if key in SECRET_KEYS and value:
            out.append(f"# {f.name} is set in your config or environment; not shown here (keep it in the environment)")
            value = ""
        elif key in URL_KEYS and isinstance(value, str):
            value = _without_userinfo(value)
        if value is None:
            # TOML has no null: an unset optional setting stays commented out
            out.append(f"# {f.name} =   (unset by default; {_type_label(hints[f.name])})")
        else:
            out.append(f"{f.name} = {_toml_value(value)}")
    out.extend(deferred)
    for name, value, text in nested:
        out.append("")
        out.extend(_comment_lines(text))
        out.append(f"[{path}.{name}]")
        _render_table(out, f"{path}.{name}", value, name)


def _type_label(tp: Any) -> str:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    return " or ".join(getattr(a, "__name__", str(a)) for a in args) or getattr(tp, "__name__", str(tp))


def _render_dataclass_list(
    out: list[str], deferred: list[str], path: str, name: str, items: list[Any], item_cls: type, text: str
) -> None:
    out.extend(_comment_lines(text))
    out.append(f"{name} = {_toml_value([dataclasses.asdict(i) for i in items])}" if items else f"{name} = []")
    # an example entry, commented out, documents every key of one list item
    example = item_cls()
    comments = field_comments(item_cls)
    key = item_cls.__name__.removesuffix("Config").lower()
    out = deferred
    out.append("")
    out.append(f"# {name}: one table per entry, for example (uncomment, and remove `{name} = []` above):")
    out.append(f"# [[{path}.{name}]]")
    for f in dataclasses.fields(example):
        value = getattr(example, f.name)
        help_text = _help(key, f.name, comments)
        rendered = _toml_value(value) if value is not None else "..."
        out.append(f"# {f.name} = {rendered}" + (f"  # {help_text}" if help_text else ""))


def render_config_toml(cfg: Config | None = None) -> str:
    """The full commented ``hanrag.toml`` for ``cfg`` (defaults when None); secrets (:data:`SECRET_KEYS`, and
    credentials inside URLs) are left out."""
    cfg = cfg or Config()
    out = [
        "# hanrag configuration — every setting with its default value.",
        "# Generated by `hanrag init`; delete what you do not change.",
        "# Any key can be overridden from the environment: HANRAG_<SECTION>__<KEY>, nested tables too",
        "# (HANRAG_SEARCH__FUSION=rrf, HANRAG_SEARCH__RERANK__MODEL=/models/ce). Strings are taken as",
        "# written, lists as a,b,c or a TOML array; a variable naming no key is ignored with a warning.",
        "# Relative paths are relative to this file.",
    ]
    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if not dataclasses.is_dataclass(value):
            continue  # base_dir: where the file was read from, not a setting
        out.append("")
        section_help = _SECTION_HELP.get(f.name) or (inspect.getdoc(type(value)) or "").split("\n")[0]
        if section_help and not section_help.startswith(type(value).__name__ + "("):
            out.append(f"# {section_help}")
        out.append(f"[{f.name}]")
        _render_table(out, f.name, value, f.name)
    return "\n".join(out) + "\n"


def undocumented_keys(cfg: Config | None = None) -> list[str]:
    """Settings that would be written without any comment (a test keeps this empty)."""
    cfg = cfg or Config()
    missing: list[str] = []

    def walk(obj: Any, key: str, path: str) -> None:
        comments = field_comments(type(obj))
        hints = _hints(type(obj))
        for f in dataclasses.fields(obj):
            if not _help(key, f.name, comments):
                missing.append(f"{path}.{f.name}")
            value = getattr(obj, f.name)
            if dataclasses.is_dataclass(value):
                walk(value, f.name, f"{path}.{f.name}")
            item_cls = _is_dataclass_list(hints[f.name])
            if item_cls is not None:
                walk(item_cls(), item_cls.__name__.removesuffix("Config").lower(), f"{path}.{f.name}[]")

    for f in dataclasses.fields(cfg):
        value = getattr(cfg, f.name)
        if dataclasses.is_dataclass(value):
            walk(value, f.name, f.name)
    return missing
