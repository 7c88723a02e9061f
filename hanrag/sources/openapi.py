"""OpenAPI 3.x / Swagger 2.0 (JSON or YAML) → one ``## METHOD /path`` section per endpoint.

The chunker starts an atomic section at every ``##`` heading, so ``GET /users`` and
``POST /users`` never share a chunk. Each section renders the summary, description,
parameters, request body and responses; schemas are expanded as nested bullet lists
with local ``$ref`` (``#/components/...``, ``#/definitions/...``) resolved, cycles and
depth bounded. Markdown headings and ``---`` rules inside descriptions are demoted so
they cannot split an endpoint. JSON/YAML that is not an OpenAPI document is skipped.

Bounded work: nested, non-cyclic ``$ref`` s multiply (six levels of twelve fields are 12^6
paths), so each spec has a budget of schema lines (:data:`_MAX_OP_LINES` per endpoint and
``max(_MIN_SPEC_LINES, bytes / _BYTES_PER_LINE)`` in all) and of ``$ref`` hops; past it a
schema is cut with a ``…`` line and one ``schema-truncated`` finding for the file. YAML is
loaded with aliases counted at their expanded size (:func:`hanrag.front_matter.load_yaml`).
A field of the wrong type (``tags: 5``) costs that endpoint's details and a warning, not
the document.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from hanrag.config import Config
from hanrag.front_matter import YamlLimitError, load_yaml
from hanrag.records import Document, Finding
from hanrag.sources.document import make_document, read_bytes, relative_id

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_MAX_DEPTH = 4
_MAX_PROPS = 60
_MAX_ALTERNATIVES = 20  # oneOf/anyOf members named in a type (as many as enum values shown)
_MAX_OP_LINES = 500  # schema lines per endpoint (~30 KB of text)
_MIN_SPEC_LINES = 5_000  # schema lines per spec: at least this many ...
_BYTES_PER_LINE = 8  # ... or one per 8 bytes of the spec, so the text stays linear in the file
_REFS_PER_LINE = 8  # $ref hops allowed per schema line of budget (work that renders no line)
_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_RULE_LINE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")


class _Spec:
    """The parsed document plus local ``$ref`` resolution, and the rendering budget."""

    def __init__(self, root: dict[str, Any], size: int = 0) -> None:
        self.root = root
        self.spec_lines = max(_MIN_SPEC_LINES, size // _BYTES_PER_LINE)  # schema lines left for the spec
        self.refs = self.spec_lines * _REFS_PER_LINE  # $ref hops left for the spec
        self.op_lines = _MAX_OP_LINES  # schema lines left for the endpoint being rendered
        self.truncated: list[str] = []  # endpoints whose schemas were cut
        self.malformed: list[str] = []  # endpoints with a field of the wrong type
        self.current = ""

    def start_operation(self, name: str) -> None:
        self.current, self.op_lines = name, _MAX_OP_LINES

    def take_line(self) -> bool:
        """Spend one schema line; False (and the endpoint noted as truncated) when none is left."""
        if self.op_lines <= 0 or self.spec_lines <= 0:
            if not self.truncated or self.truncated[-1] != self.current:
                self.truncated.append(self.current)
            return False
        self.op_lines -= 1
        self.spec_lines -= 1
        return True

    @property
    def exhausted(self) -> bool:
        return self.op_lines <= 0 or self.spec_lines <= 0 or self.refs <= 0

    def resolve(self, node: Any, seen: frozenset[str] = frozenset()) -> tuple[Any, str | None, frozenset[str]]:
        """Follow ``$ref`` chains; returns (node, name of the last ref, refs seen so far)."""
        name = None
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen or not ref.startswith("#/") or self.refs <= 0:
                if self.refs <= 0 and (not self.truncated or self.truncated[-1] != self.current):
                    self.truncated.append(self.current)
                return {"description": f"(see {ref.rsplit('/', 1)[-1]})"}, ref.rsplit("/", 1)[-1], seen
            self.refs -= 1
            seen = seen | {ref}
            name = ref.rsplit("/", 1)[-1]
            target: Any = self.root
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, dict) else None
            node = target if target is not None else {"description": f"(unresolved {ref})"}
        return node, name, seen


def is_openapi(data: Any) -> bool:
    if not isinstance(data, dict) or not isinstance(data.get("paths"), dict):
        return False
    return str(data.get("openapi", "")).startswith("3") or str(data.get("swagger", "")) == "2.0"


def _clean(text: Any) -> str:
    """Description text with headings and rules demoted so they cannot start a section."""
    if not isinstance(text, str):
        return ""
    lines = []
    for line in text.strip().splitlines():
        m = _HEADING_LINE.match(line)
        if m:
            line = f"**{m.group(1)}**"
        elif _RULE_LINE.match(line):
            continue
        lines.append(line.rstrip())
    return "\n".join(lines).strip()


def _type_of(spec: _Spec, schema: Any, seen: frozenset[str], depth: int = 0) -> str:
    schema, name, seen = spec.resolve(schema, seen)
    if not isinstance(schema, dict):
        return "any"
    if depth >= _MAX_DEPTH:  # nested arrays and oneOf of oneOf: name what is there, do not unfold it
        return str(name or schema.get("type") or "any")
    if schema.get("type") == "array":
        return f"array of {_type_of(spec, schema.get('items', {}), seen, depth + 1)}"
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list):
            members = [_type_of(spec, s, seen, depth + 1) for s in schema[key][:_MAX_ALTERNATIVES]]
            return " | ".join(members + (["…"] if len(schema[key]) > _MAX_ALTERNATIVES else []))
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = " | ".join(str(k) for k in kind)
    base = name or kind or ("object" if "properties" in schema or "allOf" in schema else "any")
    fmt = schema.get("format")
    return f"{base} ({fmt})" if fmt and not name else str(base)


def _facts(schema: dict[str, Any]) -> str:
    facts = []
    if "enum" in schema and isinstance(schema["enum"], list):
        facts.append("one of " + ", ".join(f"`{v}`" for v in schema["enum"][:20]))
    if "default" in schema:
        facts.append(f"default `{json.dumps(schema['default'], ensure_ascii=False)}`")
    for key in ("minimum", "maximum", "minLength", "maxLength", "pattern"):
        if key in schema:
            facts.append(f"{key} {schema[key]}")
    if "example" in schema:
        facts.append(f"example `{json.dumps(schema['example'], ensure_ascii=False, default=str)}`")
    if schema.get("deprecated"):
        facts.append("deprecated")
    return "; ".join(facts)


def _properties(spec: _Spec, schema: dict[str, Any], seen: frozenset[str],
                depth: int = 0) -> tuple[dict[str, Any], set[str]]:
    """Properties and required names, merging ``allOf`` parts (nested at most ``_MAX_DEPTH`` deep)."""
    props: dict[str, Any] = {}
    required: set[str] = set()
    parts = schema.get("allOf") if isinstance(schema.get("allOf"), list) and depth < _MAX_DEPTH else []
    for part in parts:
        sub, _, sub_seen = spec.resolve(part, seen)
        if isinstance(sub, dict):
            p, r = _properties(spec, sub, sub_seen, depth + 1)
            props.update(p)
            required |= r
    if isinstance(schema.get("properties"), dict):
        props.update(schema["properties"])
    if isinstance(schema.get("required"), list):
        required |= {str(r) for r in schema["required"] if isinstance(r, str | int | float)}
    return props, required


def render_schema(spec: _Spec, schema: Any, indent: int = 0, seen: frozenset[str] = frozenset()) -> list[str]:
    """Nested bullet lines describing an object's fields (or an array's items)."""
    schema, _, seen = spec.resolve(schema, seen)
    if not isinstance(schema, dict) or indent >= _MAX_DEPTH or spec.exhausted:
        return []
    if schema.get("type") == "array":
        return render_schema(spec, schema.get("items", {}), indent, seen)
    props, required = _properties(spec, schema, seen)
    pad = "  " * indent
    lines: list[str] = []
    for i, (prop, sub) in enumerate(props.items()):
        if i >= _MAX_PROPS:
            lines.append(f"{pad}- … {len(props) - _MAX_PROPS} more fields")
            break
        if not spec.take_line():
            lines.append(f"{pad}- … (not expanded further: the schema is too large to render)")
            break
        resolved, _, sub_seen = spec.resolve(sub, seen)
        resolved = resolved if isinstance(resolved, dict) else {}
        flags = ", required" if prop in required else ""
        desc = _clean(resolved.get("description") or (sub.get("description") if isinstance(sub, dict) else ""))
        facts = _facts(resolved)
        line = f"{pad}- `{prop}` ({_type_of(spec, sub, seen)}{flags})"
        if desc:
            line += f": {' '.join(desc.split())}"
        if facts:
            line += f" [{facts}]"
        lines.append(line)
        lines += render_schema(spec, sub, indent + 1, seen)
    return lines


def _seq(value: Any) -> list[Any]:
    """A list field as a list; anything else (a number where a list belongs) as none."""
    return value if isinstance(value, list) else []


def _param_line(spec: _Spec, param: dict[str, Any]) -> str:
    schema = param.get("schema", param)  # Swagger 2.0 non-body params carry type inline
    kind = _type_of(spec, schema, frozenset())
    req = "required" if param.get("required") else "optional"
    line = f"- `{param.get('name', '?')}` ({param.get('in', '?')}, {kind}, {req})"
    desc = _clean(param.get("description"))
    if desc:
        line += f": {' '.join(desc.split())}"
    resolved, _, _ = spec.resolve(schema)
    facts = _facts(resolved) if isinstance(resolved, dict) else ""
    if facts:
        line += f" [{facts}]"
    return line


def _parameters(spec: _Spec, path_item: dict[str, Any], op: dict[str, Any]) -> list[dict[str, Any]]:
    """Path-level parameters overridden by operation-level ones with the same (name, in)."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for raw in _seq(path_item.get("parameters")) + _seq(op.get("parameters")):
        param, _, _ = spec.resolve(raw)
        if isinstance(param, dict):
            merged[(str(param.get("name")), str(param.get("in")))] = param
    return list(merged.values())


def _content_lines(spec: _Spec, content: Any, label: str) -> list[str]:
    lines: list[str] = []
    if not isinstance(content, dict):
        return lines
    for media, body in content.items():
        schema = body.get("schema") if isinstance(body, dict) else None
        if schema is None:
            lines.append(f"{label} ({media})")
            continue
        lines.append(f"{label} ({media}): {_type_of(spec, schema, frozenset())}")
        lines += render_schema(spec, schema, 1)
        break  # the first media type carries the schema; others usually repeat it
    return lines


def render_operation(spec: _Spec, method: str, path: str, path_item: dict[str, Any], op: dict[str, Any]) -> str:
    swagger2 = "swagger" in spec.root
    out = [f"## {method.upper()} {path}", ""]
    if op.get("summary"):
        out += [" ".join(str(op["summary"]).split()), ""]
    desc = _clean(op.get("description"))
    if desc:
        out += [desc, ""]
    facts = []
    if op.get("operationId"):
        facts.append(f"Operation ID: `{op['operationId']}`")
    tags = op.get("tags")
    if tags:
        facts.append("Tags: " + (", ".join(str(t) for t in tags) if isinstance(tags, list) else str(tags)))
    if op.get("deprecated"):
        facts.append("Deprecated: yes")
    if facts:
        out += facts + [""]
    params = _parameters(spec, path_item, op)
    body_params = [p for p in params if p.get("in") == "body"]
    form_params = [p for p in params if p.get("in") == "formData"]
    plain = [p for p in params if p.get("in") not in {"body", "formData"}]
    if plain:
        out += ["Parameters:"] + [_param_line(spec, p) for p in plain] + [""]
    body_lines: list[str] = []
    if swagger2:
        consumes = _seq(op.get("consumes")) or _seq(spec.root.get("consumes")) or ["application/json"]
        for p in body_params:
            schema = p.get("schema", {}) if isinstance(p, dict) else {}
            body_lines.append(f"Request body ({consumes[0]}): {_type_of(spec, schema, frozenset())}")
            body_lines += render_schema(spec, schema, 1)
        if form_params:
            body_lines.append(f"Request body ({consumes[0]}) form fields:")
            body_lines += [_param_line(spec, p) for p in form_params]
    else:
        body, _, _ = spec.resolve(op.get("requestBody"))
        if isinstance(body, dict):
            req = " (required)" if body.get("required") else ""
            bdesc = _clean(body.get("description"))
            if bdesc:
                body_lines.append(f"Request body{req}: {' '.join(bdesc.split())}")
            body_lines += _content_lines(spec, body.get("content"), f"Request body{req}")
    if body_lines:
        out += body_lines + [""]
    responses = op.get("responses") if isinstance(op.get("responses"), dict) else {}
    if responses:
        out.append("Responses:")
        for status, raw in responses.items():
            resp, _, _ = spec.resolve(raw)
            resp = resp if isinstance(resp, dict) else {}
            rdesc = " ".join(_clean(resp.get("description")).split())
            out.append(f"- {status}: {rdesc}".rstrip(": "))
            if swagger2 and "schema" in resp and not spec.exhausted:
                out.append(f"  Body: {_type_of(spec, resp['schema'], frozenset())}")
                out += render_schema(spec, resp["schema"], 2)
            elif "content" in resp and not spec.exhausted:
                out += ["  " + line for line in _content_lines(spec, resp["content"], "Body")]
        out.append("")
    return "\n".join(out).strip() + "\n"


def _spec_sources(data: dict[str, Any]) -> list[str]:
    found = []
    docs = data.get("externalDocs") if isinstance(data.get("externalDocs"), dict) else {}
    for value in (data.get("x-source"), docs.get("url")):
        if isinstance(value, str) and value:
            found.append(value)
    for server in _seq(data.get("servers")):
        url = server.get("url") if isinstance(server, dict) else None
        if isinstance(url, str) and url.startswith(("http://", "https://")):
            found.append(url)
    if isinstance(data.get("host"), str) and data["host"]:
        scheme = next((str(s) for s in _seq(data.get("schemes")) if isinstance(s, str)), "https")
        base = data.get("basePath") if isinstance(data.get("basePath"), str) else ""
        found.append(f"{scheme}://{data['host']}{base}")
    return found


def openapi_to_markdown(data: dict[str, Any]) -> tuple[str, str, int]:
    """(title, markdown, number of endpoints) for a parsed OpenAPI/Swagger document."""
    title, text, count, _ = _render_spec(data, 0)
    return title, text, count


def _render_spec(data: dict[str, Any], size: int) -> tuple[str, str, int, _Spec]:
    """:func:`openapi_to_markdown` under the budget of a ``size``-byte spec; the :class:`_Spec` says
    which endpoints were cut or malformed."""
    spec = _Spec(data, size)
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    title = str(info.get("title") or "API")
    version = info.get("version")
    head = [f"# {title}" + (f" {version}" if version else ""), ""]
    desc = _clean(info.get("description"))
    if desc:
        head += [desc, ""]
    servers = [str(s["url"]) for s in _seq(data.get("servers")) if isinstance(s, dict) and s.get("url")]
    if servers:
        head += ["Servers: " + ", ".join(servers), ""]
    sections = ["\n".join(head).strip() + "\n"]
    count = 0
    for path, item in data["paths"].items():
        item, _, _ = spec.resolve(item)
        if not isinstance(item, dict):
            continue
        for method in METHODS:
            op = item.get(method)
            if isinstance(op, dict):
                sections.append(_operation_section(spec, method, str(path), item, op))
                count += 1
    return title, "\n".join(sections), count, spec


def _operation_section(spec: _Spec, method: str, path: str, path_item: dict[str, Any], op: dict[str, Any]) -> str:
    """One endpoint's section; a field of a type the renderer cannot use keeps the heading and summary."""
    spec.start_operation(f"{method.upper()} {path}")
    try:
        return render_operation(spec, method, path, path_item, op)
    except (TypeError, AttributeError, ValueError, KeyError, IndexError, RecursionError) as exc:
        spec.malformed.append(f"{method.upper()} {path} ({type(exc).__name__}: {str(exc)[:120]})")
        summary = op.get("summary")
        lines = [f"## {method.upper()} {path}", ""]
        if isinstance(summary, str) and summary.strip():
            lines += [" ".join(summary.split()), ""]
        return "\n".join(lines).strip() + "\n"


def load_structured(data: bytes, suffix: str) -> Any:
    """Parse JSON or YAML bytes (YAML through the safe loader only, bounded by
    :func:`hanrag.front_matter.load_yaml`: an alias bomb or 100,000 levels raise ``YamlLimitError``)."""
    text = data.decode("utf-8-sig")
    if suffix == ".json":
        return json.loads(text)
    return load_yaml(text)


def _truncated_message(ops: list[str]) -> str:
    shown = ", ".join(ops[:3]) + (f" and {len(ops) - 3} more" if len(ops) > 3 else "")
    return (f"schemas of {len(ops)} endpoint(s) cut ({shown}): nested $refs expand past "
            f"{_MAX_OP_LINES} field lines per endpoint or the spec's budget; the rest is indexed")


def read_openapi(path: Path, root: Path, cfg: Config) -> tuple[Document | None, list[Finding]]:
    """READERS entry for ``.json``/``.yaml``/``.yml``: an OpenAPI document, else None (info finding)."""
    rel = relative_id(path, root)
    raw, findings = read_bytes(path, root, cfg)
    if raw is None:
        return None, findings
    try:
        data = load_structured(raw, path.suffix.lower())
    except RecursionError:  # JSON nested past Python's recursion limit
        message = f"not valid {path.suffix[1:].upper()}: nested too deep to read; skipped"
        return None, findings + [Finding(rel, "warning", "parse-error", message)]
    except (UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or getattr(getattr(exc, "problem_mark", None), "line", None)
        what = f"not valid {path.suffix[1:].upper()}"
        if isinstance(exc, YamlLimitError):
            what = "over hanrag's YAML limits"
        message = f"{what}: {(str(exc).splitlines() or [''])[0]}; skipped"
        return None, findings + [Finding(rel, "warning", "parse-error", message, line)]
    if not is_openapi(data):
        message = "JSON/YAML that is not an OpenAPI 3.x or Swagger 2.0 spec; skipped"
        return None, findings + [Finding(rel, "info", "not-openapi", message)]
    title, text, count, spec = _render_spec(data, len(raw))
    if count == 0:
        findings.append(Finding(rel, "warning", "no-endpoints", "OpenAPI spec has no operations under paths"))
    if spec.truncated:
        findings.append(Finding(rel, "warning", "schema-truncated", _truncated_message(spec.truncated)))
    if spec.malformed:
        more = len(spec.malformed) - 3
        shown = "; ".join(spec.malformed[:3]) + (f"; and {more} more" if more > 0 else "")
        findings.append(Finding(rel, "warning", "malformed-field",
                                f"a field of the wrong type in {len(spec.malformed)} endpoint(s), indexed with "
                                f"their heading and summary only: {shown}"))
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    fields = {"title": title, "sources": _spec_sources(data), "version": info.get("version")}
    extra = {"format": "openapi", "endpoints": count, "spec": str(data.get("openapi") or data.get("swagger"))}
    doc, more = make_document(rel, text, fields, cfg, default_title=path.stem, extra_meta=extra)
    return doc, findings + more
