"""Review a plan, then apply exactly it — through the command line, on tables written by Java Paimon
0.9, checked by Java afterwards (every file present, rows equal, Java keeps writing)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.conftest import cli
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

pytestmark = [pytest.mark.java]

SCHEMA = {"fields": [{"name": "pt", "type": "STRING NOT NULL"}, {"name": "id", "type": "INT NOT NULL"},
                     {"name": "v", "type": "STRING"}],
          "partition_keys": ["pt"], "primary_keys": ["pt", "id"],
          "options": {"bucket": "2"}}


@pytest.fixture(scope="module")
def java_src(tmp_path_factory) -> Path:
    wh = tmp_path_factory.mktemp("apply_java")
    t = JavaTable(wh, "db", "t")
    batches = [{"rows": [[p, i, f"v{n}-{i}"] for p in ("a", "b") for i in range(30)]} for n in range(4)]
    batches[2]["rows"] += [["a", 99, None]]
    jh.run_many([("create_table", t.payload(schema=SCHEMA)), ("write", t.payload(batches=batches[:2])),
                 ("create_tag", t.payload(tag="keep", snapshot_id=2)),
                 ("write", t.payload(batches=batches[2:], first_commit_identifier=3))])
    return wh


def _key(r) -> str:
    return json.dumps(r, sort_keys=True)


def test_reviewed_plans_applied_through_the_cli_on_a_java_table(java_src, tmp_path):
    wh = tmp_path / "wh"
    shutil.copytree(java_src, wh)
    t = JavaTable(wh, "db", "t")
    before = sorted(t.read()["rows"], key=_key)

    # compaction: reviewed as JSON, applied later
    plan = cli("compact", wh, "db.t", "--dry-run", "--json")
    assert plan.code == 0, plan.err
    assert plan.json["operation"] == "compact" and plan.json["tasks"]
    (tmp_path / "compact.json").write_text(plan.out)
    r = cli("apply", tmp_path / "compact.json", "--local", "--json")
    assert r.code == 0, r.err
    assert r.json["snapshot_id"] is not None

    # expiry of everything the retention allows, but never what tag 'keep' holds
    plan = cli("expire-snapshots", wh, "db.t", "--retain-min", "1", "--min-age", "1 ms", "--dry-run", "--json")
    assert plan.code == 0, plan.err
    (tmp_path / "expire.json").write_text(plan.out)
    assert any(s["files"] for s in plan.json["steps"])
    r = cli("apply", tmp_path / "expire.json", "--local", "--json")
    assert r.code == 0, r.err

    after, tag_read, missing, _, written = jh.run_many([
        ("read", t.payload()), ("read", t.payload(tag="keep")), ("check_files", t.payload()),
        ("write", t.payload(batches=[{"rows": [["a", 1, "java-after"]]}])), ("read", t.payload())])
    assert sorted(after["rows"], key=_key) == before
    assert missing["missing"] == []
    assert tag_read["rows"]  # the tag still reads
    assert ["a", 1, "java-after"] in written["rows"]

    # a plan reviewed before the table moved is refused, and nothing changes
    plan = cli("expire-snapshots", wh, "db.t", "--retain-min", "1", "--min-age", "1 ms", "--dry-run", "--json")
    (tmp_path / "stale.json").write_text(plan.out)
    jh.run_many([("create_tag", t.payload(tag="new", snapshot_id=None))])
    r = cli("apply", tmp_path / "stale.json", "--local", "--json")
    assert r.code == 2 and r.json["error"]["type"] == "StalePlanError"
