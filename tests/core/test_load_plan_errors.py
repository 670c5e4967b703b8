"""`po.load_plan` raises only `PaimonOpsError`s — a missing file, not JSON, JSON nested too
deeply, fields of the wrong type — each naming the plan; and a plan object copied in memory is re-planned before it
may run, like one read from a file."""
from __future__ import annotations

import dataclasses
import json

import pytest

import paimon_ops as po
from paimon_ops.errors import PaimonOpsError, StalePlanError
from tests.safety.util import partitioned_table

BASE = {"format": "paimon-ops-plan/1", "operation": "expire_snapshots", "table": "db.t", "location": "/x"}


@pytest.mark.parametrize("text", [
    "/no/such/plan.json",
    "not json at all {",
    "{" + '"a":' * 0 + "[" * 50_000 + "]" * 50_000 + "}",
    json.dumps({**BASE, "steps": "all"}),
    json.dumps({**BASE, "steps": [{"name": 1, "action": ["x"]}]}),
    json.dumps({**BASE, "steps": [{"name": "x", "action": "delete-files", "files": [{"path": {"a": 1}}]}]}),
    json.dumps({**BASE, "preconditions": [{"kind": "no-such-kind"}]}),
    json.dumps({**BASE, "preconditions": [{"kind": "tags", "tags": [["a", "not-an-id"]]}]}),
    json.dumps({**BASE, "base_snapshot": "eleven"}),
    json.dumps({**BASE, "operation": "format-disk"}),
    json.dumps([1, 2, 3]),
], ids=["missing-file", "not-json", "deep", "steps-not-a-list", "step-types", "path-not-text",
        "unknown-precondition", "precondition-types", "base-not-int", "unknown-operation", "not-an-object"])
def test_load_plan_raises_only_paimon_ops_errors(text):
    with pytest.raises(PaimonOpsError):
        po.load_plan(text)


def test_a_copied_plan_is_verified_like_a_loaded_one(tmp_path):
    partitioned_table(str(tmp_path), commits=4)
    t = po.Catalog(str(tmp_path)).get_table("db.t")
    plan = t.maintenance.expire_snapshots(retain_min=1, min_age=__import__("datetime").timedelta(milliseconds=1))
    assert plan.is_fresh and plan.deletes
    edited = dataclasses.replace(plan, preconditions=())  # not fresh any more: re-planned, and refused
    assert not edited.is_fresh
    with pytest.raises(StalePlanError, match="preconditions missing from the plan"):
        edited.execute(runner=po.LocalRunner())
    assert dataclasses.replace(plan).execute(runner=po.LocalRunner()).deleted  # an identical copy runs
