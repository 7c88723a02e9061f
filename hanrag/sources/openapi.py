"""OpenAPI 3.x / Swagger 2.0 (JSON or YAML) → one ``## METHOD /path`` section per endpoint.

The chunker starts an atomic section at every ``##`` heading, so ``GET /users`` and
``POST /users`` never share a chunk. Each section renders the summary, description,
parameters, request body and responses; schemas are expanded as nested bullet lists
with local ``$ref`` (``#/components/...``, ``#/definitions/...``) resolved, cycles and
depth bounded. Markdown headings and ``---`` rules inside descriptions are demoted so
they cannot split an endpoint. JSON/YAML that is not an OpenAPI document is skipped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from hanrag.config import Config
from hanrag.records import Document, Finding
from hanrag.sources.files import make_document, read_bytes, relative_id

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_MAX_DEPTH = 4
_MAX_PROPS = 60
_HEADING_LINE = re.compile(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$")
_RULE_LINE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")


class _Spec:
    """The parsed document plus local ``$ref`` resolution."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def resolve(self, node: Any, seen: frozenset[str] = frozenset()) -> tuple[Any, str | None, frozenset[str]]:
        """Follow ``$ref`` chains; returns (node, name of the last ref, refs seen so far)."""
        name = None
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen or not ref.startswith("#/"):
                return {"description": f"(see {ref.rsplit('/', 1)[-1]})"}, ref.rsplit("/", 1)[-1], seen
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


def _type_of(spec: _Spec, schema: Any, seen: frozenset[str]) -> str:
    schema, name, seen = spec.resolve(schema, seen)
    if not isinstance(schema, dict):
        return "any"
    if schema.get("type") == "array":
        return f"array of {_type_of(spec, schema.get('items', {}), seen)}"
    for key in ("oneOf", "anyOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(_type_of(spec, s, seen) for s in schema[key])
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


def _properties(spec: _Spec, schema: dict[str, Any], seen: frozenset[str]) -> tuple[dict[str, Any], set[str]]:
    """Properties and required names, merging ``allOf`` parts."""
    props: dict[str, Any] = {}
    required: set[str] = set()
    for part in schema.get("allOf", []) if isinstance(schema.get("allOf"), list) else []:
        sub, _, sub_seen = spec.resolve(part, seen)
        if isinstance(sub, dict):
            p, r = _properties(spec, sub, sub_seen)
            props.update(p)
            required |= r
    if isinstance(schema.get("properties"), dict):
        props.update(schema["properties"])
    if isinstance(schema.get("required"), list):
        required |= {str(r) for r in schema["required"]}
    return props, required


def render_schema(spec: _Spec, schema: Any, indent: int = 0, seen: frozenset[str] = frozenset()) -> list[str]:
    """Nested bullet lines describing an object's fields (or an array's items)."""
    schema, _, seen = spec.resolve(schema, seen)
    if not isinstance(schema, dict) or indent >= _MAX_DEPTH:
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
    for raw in list(path_item.get("parameters") or []) + list(op.get("parameters") or []):
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
    if op.get("tags"):
        facts.append("Tags: " + ", ".join(str(t) for t in op["tags"]))
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
        consumes = op.get("consumes") or spec.root.get("consumes") or ["application/json"]
        for p in body_params:
            schema = p.get("schema", {})
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
            if swagger2 and "schema" in resp:
                out.append(f"  Body: {_type_of(spec, resp['schema'], frozenset())}")
                out += render_schema(spec, resp["schema"], 2)
            elif "content" in resp:
                out += ["  " + line for line in _content_lines(spec, resp["content"], "Body")]
        out.append("")
    return "\n".join(out).strip() + "\n"


def _spec_sources(data: dict[str, Any]) -> list[str]:
    found = []
    for value in (data.get("x-source"), (data.get("externalDocs") or {}).get("url")):
        if isinstance(value, str) and value:
            found.append(value)
    for server in data.get("servers") or []:
        url = server.get("url") if isinstance(server, dict) else None
        if isinstance(url, str) and url.startswith(("http://", "https://")):
            found.append(url)
    if data.get("host"):
        scheme = (data.get("schemes") or ["https"])[0]
        found.append(f"{scheme}://{data['host']}{data.get('basePath', '')}")
    return found


def openapi_to_markdown(data: dict[str, Any]) -> tuple[str, str, int]:
    """(title, markdown, number of endpoints) for a parsed OpenAPI/Swagger document."""
    spec = _Spec(data)
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    title = str(info.get("title") or "API")
    version = info.get("version")
    head = [f"# {title}" + (f" {version}" if version else ""), ""]
    desc = _clean(info.get("description"))
    if desc:
        head += [desc, ""]
    servers = [s.get("url") for s in data.get("servers") or [] if isinstance(s, dict) and s.get("url")]
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
                sections.append(render_operation(spec, method, str(path), item, op))
                count += 1
    return title, "\n".join(sections), count


def load_structured(data: bytes, suffix: str) -> Any:
    """Parse JSON or YAML bytes (YAML through the safe loader only)."""
    text = data.decode("utf-8-sig")
    if suffix == ".json":
        return json.loads(text)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)  # noqa: S506 - a safe loader


def read_openapi(path: Path, root: Path, cfg: Config) -> tuple[Document | None, list[Finding]]:
    """READERS entry for ``.json``/``.yaml``/``.yml``: an OpenAPI document, else None (info finding)."""
    rel = relative_id(path, root)
    raw, findings = read_bytes(path, root, cfg)
    if raw is None:
        return None, findings
    try:
        data = load_structured(raw, path.suffix.lower())
    except (UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as exc:
        line = getattr(exc, "lineno", None) or getattr(getattr(exc, "problem_mark", None), "line", None)
        message = f"not valid {path.suffix[1:].upper()}: {str(exc).splitlines()[0]}; skipped"
        return None, findings + [Finding(rel, "warning", "parse-error", message, line)]
    if not is_openapi(data):
        message = "JSON/YAML that is not an OpenAPI 3.x or Swagger 2.0 spec; skipped"
        return None, findings + [Finding(rel, "info", "not-openapi", message)]
    title, text, count = openapi_to_markdown(data)
    if count == 0:
        findings.append(Finding(rel, "warning", "no-endpoints", "OpenAPI spec has no operations under paths"))
    info = data.get("info") if isinstance(data.get("info"), dict) else {}
    fields = {"title": title, "sources": _spec_sources(data), "version": info.get("version")}
    extra = {"format": "openapi", "endpoints": count, "spec": str(data.get("openapi") or data.get("swagger"))}
    doc, more = make_document(rel, text, fields, cfg, default_title=path.stem, extra_meta=extra)
    return doc, findings + more
