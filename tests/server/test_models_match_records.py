"""The HTTP response models (hanrag/server/models.py) carry exactly the fields of the records they serialise
(hanrag/records.py): a field added to one and not the other fails here, not in a client."""

from __future__ import annotations

import dataclasses

import pytest

from hanrag import records
from hanrag.server import models

PAIRS = [
    (models.ChunkOut, records.Chunk, set()),
    (models.ExplanationOut, records.Explanation, set()),
    (models.PlanOut, records.QueryPlan, set()),
    # a hit's rank/score/chunk/also_in/explanation, plus the server's highlights (computed per response)
    (models.HitOut, records.Hit, {"highlights"}),
]


@pytest.mark.parametrize(("model", "record", "server_only"), PAIRS, ids=lambda x: getattr(x, "__name__", ""))
def test_response_model_has_the_record_fields(model, record, server_only) -> None:
    record_fields = {f.name for f in dataclasses.fields(record)}
    model_fields = set(model.model_fields)
    assert model_fields - server_only == record_fields, (
        f"{model.__name__} and records.{record.__name__} differ: "
        f"only in the model {sorted(model_fields - server_only - record_fields)}, "
        f"only in the record {sorted(record_fields - model_fields)}"
    )


def test_a_record_serialises_into_its_model() -> None:
    """Every value a record's to_dict() gives validates against the model (types agree, not only names)."""
    chunk = records.Chunk("c1", "d1", "본문 text", 0, 7, source="s", path="p", title="t", headings=("h",),
                          labels=("x",), page=3)
    plan = records.QueryPlan("q", "ko", 0.0, ("배포",), ("배포",), (("deploy", 0.5),), 0.3, 0.7, "ko",
                             expansion_via=(("deploy", "lexicon:배포"),), lexical_evidence=0.2)
    expl = records.Explanation(1.0, 0.5, 0.8, 0.4, 0.3, 0.7, "ko", "calibrated", 0.6, None, 1.0, 0.6,
                               matched_tokens=("배포",), matched_via=(("배포", "as written"),))
    models.ChunkOut.model_validate(chunk.to_dict())
    models.PlanOut.model_validate(plan.to_dict())
    models.ExplanationOut.model_validate(expl.to_dict())
    models.HitOut.model_validate(records.Hit(chunk, 0.9, 1, ("other",), expl).to_dict())
