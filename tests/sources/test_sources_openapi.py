"""OpenAPI 3.x and Swagger 2.0 specs (YAML and JSON) → one section per endpoint."""

from __future__ import annotations

import json
from pathlib import Path

from hanrag.chunking import chunk_document
from hanrag.config import Config
from hanrag.sources import read_corpus
from hanrag.sources.openapi import read_openapi

OPENAPI3 = """
openapi: 3.0.3
info:
  title: User Service
  version: 1.2.0
  description: |
    사용자 관리 API.
    ## Auth
    Bearer token required.
servers:
  - url: https://api.example.com/v1
paths:
  /users:
    parameters:
      - name: X-Trace
        in: header
        schema: {type: string}
    get:
      summary: List users
      operationId: listUsers
      tags: [users]
      parameters:
        - $ref: '#/components/parameters/Limit'
      responses:
        '200':
          description: A page of users
          content:
            application/json:
              schema:
                type: array
                items: {$ref: '#/components/schemas/User'}
    post:
      summary: Create a user
      description: |
        Creates a user.
        ---
        # Notes
        Names must be unique.
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/NewUser'}
      responses:
        '201': {$ref: '#/components/responses/Created'}
        '409': {description: Name already taken}
components:
  parameters:
    Limit:
      name: limit
      in: query
      description: 최대 개수
      schema: {type: integer, default: 20, maximum: 100}
  responses:
    Created:
      description: Created
      content:
        application/json:
          schema: {$ref: '#/components/schemas/User'}
  schemas:
    NewUser:
      type: object
      required: [name]
      properties:
        name: {type: string, description: 표시 이름}
        role: {type: string, enum: [admin, member]}
    User:
      allOf:
        - $ref: '#/components/schemas/NewUser'
        - type: object
          properties:
            id: {type: integer, format: int64}
            manager: {$ref: '#/components/schemas/User'}
"""

SWAGGER2 = {
    "swagger": "2.0",
    "info": {"title": "Pet Store", "version": "1.0"},
    "host": "petstore.example.com",
    "basePath": "/v2",
    "paths": {
        "/pets/{petId}": {
            "get": {
                "summary": "Find pet by ID",
                "parameters": [{"name": "petId", "in": "path", "required": True, "type": "integer"}],
                "responses": {"200": {"description": "ok", "schema": {"$ref": "#/definitions/Pet"}}},
            },
            "delete": {"summary": "Delete a pet", "responses": {"204": {"description": "deleted"}}},
        },
        "/pets": {
            "post": {
                "consumes": ["application/json"],
                "parameters": [{"name": "body", "in": "body", "schema": {"$ref": "#/definitions/Pet"}}],
                "responses": {"201": {"description": "created"}},
            }
        },
    },
    "definitions": {"Pet": {"type": "object", "properties": {"name": {"type": "string", "description": "pet name"}}}},
}


def _cfg() -> Config:
    cfg = Config()
    cfg.chunking.chunk_size, cfg.chunking.overlap = 2000, 0
    return cfg


def test_openapi3_one_section_per_endpoint(tmp_path: Path) -> None:
    f = tmp_path / "users.yaml"
    f.write_text(OPENAPI3, encoding="utf-8")
    doc, findings = read_openapi(f, tmp_path, _cfg())
    assert findings == [] and doc is not None
    assert doc.title == "User Service" and doc.version == "1.2.0" and doc.source == "https://api.example.com/v1"
    text = doc.text
    assert "## GET /users" in text and "## POST /users" in text
    get = text[text.index("## GET /users") : text.index("## POST /users")]
    assert "`limit` (query, integer, optional): 최대 개수 [default `20`; maximum 100]" in get  # $ref'd parameter
    assert "`X-Trace` (header, string, optional)" in get  # path-level parameter
    assert "array of User" in get and "`id` (integer (int64))" in get and "`name` (string, required)" in get
    post = text[text.index("## POST /users") :]
    assert "Request body (required) (application/json): NewUser" in post
    assert "- 409: Name already taken" in post and "- 201: Created" in post
    assert "**Notes**" in post and "\n---\n" not in post  # headings/rules in descriptions are demoted
    chunks = chunk_document(doc, _cfg().chunking)
    by_heading = {c.headings[-1]: c for c in chunks if c.headings}
    assert "GET /users" in by_heading and "POST /users" in by_heading
    assert "Create a user" not in by_heading["GET /users"].text
    assert "List users" not in by_heading["POST /users"].text


def test_swagger2_json(tmp_path: Path) -> None:
    f = tmp_path / "pets.json"
    f.write_text(json.dumps(SWAGGER2), encoding="utf-8")
    doc, _ = read_openapi(f, tmp_path, _cfg())
    assert doc is not None and doc.source == "https://petstore.example.com/v2"
    assert [line for line in doc.text.splitlines() if line.startswith("## ")] == [
        "## GET /pets/{petId}",
        "## DELETE /pets/{petId}",
        "## POST /pets",
    ]
    assert "`petId` (path, integer, required)" in doc.text
    assert "Request body (application/json): Pet" in doc.text and "`name` (string): pet name" in doc.text
    assert "Body: Pet" in doc.text


def test_non_openapi_and_broken_files_do_not_crash(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text('{"name": "x", "version": "1.0.0"}', encoding="utf-8")
    (tmp_path / "compose.yml").write_text("services:\n  web:\n    image: nginx\n", encoding="utf-8")
    (tmp_path / "broken.yaml").write_text("a: [1, 2\n", encoding="utf-8")
    (tmp_path / "api.yaml").write_text(OPENAPI3, encoding="utf-8")
    cfg = _cfg()
    cfg.corpus.extensions = [".json", ".yaml", ".yml"]
    docs, findings = read_corpus(tmp_path, cfg)
    assert [d.doc_id for d in docs] == ["api.yaml"]
    codes = {f.path: f.code for f in findings}
    assert codes == {"package.json": "not-openapi", "compose.yml": "not-openapi", "broken.yaml": "parse-error"}
