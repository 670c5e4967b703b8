"""Every snapshot paimon-ops commits carries a fresh `uuid` (Paimon 2.0: catalogs that own a table's history name
the base snapshot by it) and stays `version: 3`: Java Paimon 0.9 (which ignores unknown keys) and pypaimon 2.1.0
read it and keep committing after it."""
from __future__ import annotations

import json
import re

import pytest

import paimon_ops as po
from tests import pypaimon_util as pu
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def _snapshot(path, sid: int) -> dict:
    return json.loads((path / "snapshot" / f"snapshot-{sid}").read_text())


@pytest.mark.java
@pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")
def test_java_09_reads_and_commits_after_a_snapshot_with_uuid(warehouse):
    t = JavaTable(warehouse, "db", "t")
    t.create([("pt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("v", "STRING")], partition_keys=["pt"],
             primary_keys=["pt", "id"], options={"bucket": "1"})
    t.write([{"rows": [["a", i, f"v{i}"] for i in range(10)]}, {"rows": [["a", 3, "new"]]}])
    before = t.rows()
    report = po.Catalog(warehouse).get_table("db.t").maintenance.compact(mode="full").execute(runner=po.LocalRunner())
    ours = _snapshot(t.path, report.snapshot_id)
    assert ours["version"] == 3 and UUID.match(ours["uuid"]) and ours["commitKind"] == "COMPACT"
    assert t.rows() == before
    t.write([{"rows": [["a", 20, "after"]]}])  # Java 0.9 commits on top of our snapshot
    after = _snapshot(t.path, report.snapshot_id + 1)
    assert after["commitUser"] != ours["commitUser"] and "uuid" not in after  # 0.9 writes none
    assert t.rows() == sorted(before + [["a", 20, "after"]], key=json.dumps)


def test_pypaimon_reads_and_commits_after_a_snapshot_with_uuid(warehouse):
    import pyarrow as pa
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = pu.create_table(warehouse, "db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    pu.write(table, {"id": [1, 2], "v": ["a", "b"]})
    pu.write(table, {"id": [2], "v": ["c"]})
    report = po.Catalog(warehouse).get_table("db.t").maintenance.compact(mode="full").execute(runner=po.LocalRunner())
    path = po.Catalog(warehouse).get_table("db.t").raw.root
    from pathlib import Path
    ours = _snapshot(Path(path), report.snapshot_id)
    assert UUID.match(ours["uuid"])
    assert pu.read(warehouse, "db.t").sort_by("id").to_pylist() == [{"id": 1, "v": "a"}, {"id": 2, "v": "c"}]
    pu.write(pu.get_table(warehouse, "db.t"), {"id": [3], "v": ["d"]})
    theirs = _snapshot(Path(path), report.snapshot_id + 1)
    assert UUID.match(theirs["uuid"]) and theirs["uuid"] != ours["uuid"]
    assert pu.read(warehouse, "db.t").num_rows == 3


def test_every_attempt_gets_its_own_uuid(warehouse):
    """Two commits never share a uuid (a retried attempt is a new snapshot)."""
    import pyarrow as pa
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    table = pu.create_table(warehouse, "db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    for i in range(3):
        pu.write(table, {"id": [i], "v": [str(i)]})
    t = po.Catalog(warehouse).get_table("db.t")
    r1 = t.maintenance.compact(mode="full").execute(runner=po.LocalRunner())
    pu.write(pu.get_table(warehouse, "db.t"), {"id": [9], "v": ["9"]})
    r2 = t.maintenance.compact(mode="full").execute(runner=po.LocalRunner())
    snaps = [t.raw.snapshots.snapshot(i) for i in (r1.snapshot_id, r2.snapshot_id)]
    assert snaps[0].uuid != snaps[1].uuid and all(UUID.match(s.uuid) for s in snaps)
