"""A writer's statistics are not trusted where a wrong count loses data. pypaimon 2.1.0 writes
`_DELETE_ROW_COUNT = 0` for every level-0 file, also for files full of DELETE records (`rowkind.field`). On a
deletion-vector table, minor compaction would then upgrade such a file to an upper level unread — where readers take
records raw — and the deleted keys would come back as rows. paimon-ops reads the file's `_VALUE_KIND` column first
and rewrites it (dropping the deletes): pypaimon then reads exactly the rows that should be there, and Java Paimon
0.9 reads the same and finds every file. Java 0.9's own minor compaction trusts the count (shown on a copy)."""
from __future__ import annotations

import shutil

import pyarrow as pa
import pytest

import paimon_ops as po
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable
from tests import pypaimon_util as pu

SCHEMA = pa.schema([pa.field("id", pa.int32(), nullable=False), ("v", pa.string()), ("op", pa.string())])


@pytest.fixture
def table(tmp_path):
    """pypaimon writes ids 0..9, paimon-ops compacts them to the top level, then pypaimon deletes ids 0..4: a
    level-0 file of DELETE records whose manifest entry says it has none."""
    wh = str(tmp_path / "wh")
    t = pu.create_table(wh, "db.t", SCHEMA, primary_keys=["id"],
                        options={"bucket": "1", "deletion-vectors.enabled": "true", "rowkind.field": "op"})
    pu.write(t, {"id": list(range(10)), "v": [f"v{i}" for i in range(10)], "op": ["+I"] * 10})
    po.Catalog(wh).get_table("db.t").maintenance.compact(mode="full").execute(runner=po.LocalRunner())
    pu.write(pu.get_table(wh, "db.t"), {"id": list(range(5)), "v": [None] * 5, "op": ["-D"] * 5})
    raw = FileStoreTable(f"{wh}/db.db/t")
    level0 = [f for f in TableScanner(raw).scan(raw.snapshots.latest()).files if f.level == 0]
    assert len(level0) == 1 and level0[0].meta.delete_row_count == 0  # pypaimon's claim
    return wh


def _rows(wh: str) -> list[tuple]:
    return sorted((r["id"], r["v"]) for r in pu.read(wh, "db.t").to_pylist())


def test_minor_compaction_rewrites_a_file_that_claims_no_deletes(table, tmp_path):
    wh = table
    assert _rows(wh) == [(i, f"v{i}") for i in range(10)]  # (a deletion-vector table reads level 0 once compacted)
    plan = po.Catalog(wh).get_table("db.t").maintenance.compact(mode="minor")
    steps = [s for t in plan.tasks for s in t.steps]
    assert steps and all(s["write"] for s in steps), steps  # rewritten, never upgraded as it is
    plan.execute(runner=po.LocalRunner())
    raw = FileStoreTable(f"{wh}/db.db/t")
    assert all(f.level > 0 for f in TableScanner(raw).scan(raw.snapshots.latest()).files)
    assert _rows(wh) == [(i, f"v{i}") for i in range(5, 10)]  # no deleted key comes back

    from tests.interop import java_harness as jh
    from tests.interop.java_harness import JavaTable
    jt = JavaTable(table_path=f"{wh}/db.db/t")
    missing, read = jh.run_many([("check_files", jt.payload()), ("read", jt.payload())])
    assert missing["missing"] == []
    assert sorted((r[0], r[1]) for r in read["rows"]) == [(i, f"v{i}") for i in range(5, 10)]


@pytest.mark.java
def test_java_trusts_the_count(table, tmp_path):
    """The same table compacted by Java 0.9 (minor): it upgrades the file unread and the deleted keys come back."""
    from tests.interop import java_harness as jh
    from tests.interop.java_harness import JavaTable
    copy = tmp_path / "java-copy"
    shutil.copytree(table, copy)
    jt = JavaTable(table_path=str(copy / "db.db" / "t"))
    _, read = jh.run_many([("compact", jt.payload(full=False)), ("read", jt.payload())])
    ids = sorted(r[0] for r in read["rows"])
    assert ids != list(range(5, 10)), "Java 0.9 no longer trusts the count: update docs/guides/safety.md"
