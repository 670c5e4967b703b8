"""Lookup compaction racing other writers: a commit whose base changed under it (our inputs compacted away, the
bucket's deletion-vector index replaced, a file we marked rewritten) aborts with nothing referenced and every file
it wrote deleted, or re-plans on the new snapshot; no row, changelog row or deletion is lost."""
from __future__ import annotations

import json
import os
import time
from collections import Counter

import pyarrow as pa
import pytest

import paimon_ops as po
from paimon_ops.compact.api import commit_compaction, execute_plan
from paimon_ops.compact.planner import plan_compaction
from paimon_ops.errors import CommitConflictError
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import create_table, write_rows
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

FIELDS = [("pt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("a", "BIGINT"), ("b", "STRING")]
OPTS = {"bucket": "1", "deletion-vectors.enabled": "true", "changelog-producer": "lookup", "write-only": "true"}


def _files_on_disk(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
            if "bucket-" in d or d.endswith("/index")}


def _bag(rows) -> Counter:
    return Counter(json.dumps(r) for r in rows)


def _rows(n: int, start: int = 0, tag: str = "v") -> dict:
    ids = list(range(start, start + n))
    return {"pt": ["x"] * n, "id": pa.array(ids, pa.int32()), "a": pa.array(ids, pa.int64()),
            "b": [f"{tag}{i}" for i in ids]}


def _layered(warehouse: str) -> FileStoreTable:
    """Max level with a deletion vector, level 4, and fresh level-0 updates: a minor compaction marks rows."""
    t = create_table(warehouse, "db.t", FIELDS, partition_keys=["pt"], primary_keys=["pt", "id"], options=OPTS)
    write_rows(t, _rows(400))
    po.Table(t.refresh()).maintenance.compact(mode="full").execute()
    write_rows(t.refresh(), _rows(50, 0, "u"))
    po.Table(t.refresh()).maintenance.compact(mode="minor").execute()
    write_rows(t.refresh(), _rows(30, 100, "w"))
    write_rows(t.refresh(), _rows(5, 10, "x"), row_kinds=[3] * 5)
    return t.refresh()


def test_concurrent_dv_index_change_aborts_lookup_compaction(warehouse):
    t = _layered(warehouse)
    plan = plan_compaction(t, mode="minor")
    assert plan.tasks and plan.tasks[0].lookup_files
    executed = execute_plan(t, plan)
    ours = executed.written_paths
    assert any("/index/" in p for p in ours) and any("changelog-" in p for p in ours)
    # another job rewrites the max-level file whose rows we just marked (and replaces the bucket's DV index)
    other = po.Table(t.refresh()).maintenance.compact(mode="dv-ratio", threshold=0.0).execute()
    assert other.snapshot_id is not None
    latest = t.snapshots.latest_id()
    with pytest.raises(CommitConflictError, match="deletion vectors"):
        commit_compaction(t.refresh(), executed)
    assert t.snapshots.latest_id() == latest
    assert not any(os.path.exists(p) for p in ours), "data, changelog and DV index files of the aborted run removed"
    # re-planned on the new base, the compaction goes through and marks the rewritten file instead
    report = po.Table(t.refresh()).maintenance.compact(mode="minor").execute()
    assert report.snapshot_id == latest + 1 and report.details["rows_marked_deleted"] > 0


@pytest.mark.java
@pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")
def test_concurrent_java_writer_during_lookup_compaction(tmp_path):
    """A Java writer (not write-only: it compacts and writes deletion vectors and changelog itself) commits while
    our lookup compaction runs. Our commit conflicts and re-plans; Java then reads exactly what a control copy,
    on which Java did all the compacting, reads — rows and changelog."""
    wh = tmp_path / "wh"
    src = JavaTable(wh, "db", "t")
    b1 = {"rows": [["x", i, i, f"b{i}"] for i in range(300)]}
    b2 = {"rows": [["x", i, 100 + i, f"u{i}"] for i in range(0, 40)]}
    b3 = {"rows": [["x", i, 1000 + i, None] for i in range(30, 60)] + [["x", 7, 0, None]],
          "kinds": ["+I"] * 30 + ["-D"]}
    jh.run_many([
        ("create_table", src.payload(schema={"fields": [{"name": n, "type": ty} for n, ty in FIELDS],
                                             "partition_keys": ["pt"], "primary_keys": ["pt", "id"],
                                             "options": OPTS})),
        ("write", src.payload(batches=[b1])), ("compact", src.payload(full=True)),
        ("write", src.payload(batches=[b2])), ("compact", src.payload(full=False)),
        ("write", src.payload(batches=[b3])),
    ])
    import shutil
    shutil.copytree(wh / "db.db" / "t", wh / "db.db" / "control")
    control = JavaTable(wh, "db", "control")
    table = FileStoreTable(str(src.path))
    before = table.snapshots.latest_id()
    late = {"rows": [["x", 35, 5, "late"], ["x", 250, 6, "late"], ["x", 8, 0, None]], "kinds": ["+U", "+I", "-D"],
            "compact": True, "full": False}
    writer = JavaTable(wh, "db", "t", dynamic_options={"write-only": "false"})
    fired = []

    def concurrent_writer(done: int, total: int) -> None:  # after our tasks, before our commit
        if done == total and not fired:
            fired.append(writer.call("write", batches=[late]))

    report = po.Table(table).maintenance.compact(mode="minor").execute(progress=concurrent_writer, max_replans=2)
    # the Java writer's own lookup compaction took our level-0 inputs: our commit conflicted, the re-plan found
    # nothing left to do (or compacts what is left) — never a lost update
    assert fired and report.details["replans"] == 1
    cw = JavaTable(wh, "db", "control", dynamic_options={"write-only": "false"})
    results = jh.run_many([
        ("write", cw.payload(batches=[late])), ("compact", control.payload(full=False)),
        ("read", src.payload()), ("read", control.payload()),
        ("audit_log", src.payload(start=before)), ("audit_log", control.payload(start=before)),
        ("check_files", src.payload()),
        ("remove_orphans", src.payload(older_than_ms=int(time.time() * 1000) + 86_400_000, dry_run=True)),
    ])
    _, _, ours_read, control_read, ours_log, control_log, missing, orphans = results
    assert _bag(ours_read["rows"]) == _bag(control_read["rows"])
    assert _bag(ours_log["rows"]) == _bag(control_log["rows"])
    rows = {r[1]: r for r in ours_read["rows"]}
    assert 7 not in rows and 8 not in rows, "deletes of both writers survive"
    assert rows[35][3] == "late" and rows[250][3] == "late" and rows[30][3] is None
    assert missing["missing"] == []
    assert orphans["deleted"] == [], "the aborted attempt's data, changelog and DV index files were removed"
