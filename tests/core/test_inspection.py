"""The facade's inspection (`Table.snapshots()`, `.tags.list()`, `.files()`, `.health()`) on a table written by
pypaimon 2.1.0: snapshots as its snapshot JSON says, files as pypaimon's own scan lists them, the row count as
pypaimon's read returns it."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest

import paimon_ops as po
from paimon_ops.errors import InvalidArgumentError
from tests import pypaimon_util as pu

SCHEMA = pa.schema([("p", pa.string()), ("id", pa.int32()), ("v", pa.string())])


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> str:
    wh = str(tmp_path_factory.mktemp("inspect"))
    t = pu.create_table(wh, "db.t", SCHEMA, partition_keys=["p"], primary_keys=["p", "id"], options={"bucket": "2"})
    pu.write(t, {"p": ["a"] * 5 + ["b"] * 3, "id": [0, 1, 2, 3, 4, 0, 1, 2], "v": ["x"] * 8})
    pu.write(t, {"p": ["a", "a", "b"], "id": [1, 9, 2], "v": ["y"] * 3})  # overlaps: level-0 duplicates
    return wh


def test_snapshots_are_the_snapshot_files(written):
    table = po.Catalog(written).get_table("db.t")
    rows = table.snapshots()
    snap_dir = Path(written) / "db.db" / "t" / "snapshot"
    on_disk = sorted((json.loads(p.read_text()) for p in snap_dir.glob("snapshot-*")), key=lambda j: j["id"])
    assert [r.id for r in rows] == [j["id"] for j in on_disk] == [1, 2]
    for r, j in zip(rows, on_disk):
        assert r.commit_kind == j["commitKind"] and r.total_record_count == j["totalRecordCount"]
        assert r.committed_at == dt.datetime.fromtimestamp(j["timeMillis"] / 1000, dt.timezone.utc)
        assert r.committed_at.tzinfo is not None


def test_files_are_what_pypaimon_scans(written):
    table = po.Catalog(written).get_table("db.t")
    files = table.files()
    assert isinstance(files, pa.Table)
    splits = pu.get_table(written, "db.t").new_read_builder().new_scan().plan().splits()
    theirs = {(f.file_name, f.level, f.row_count, f.file_size) for s in splits for f in s.files}
    ours = {(r["file"], r["level"], r["rows"], r["size"]) for r in files.to_pylist()}
    assert ours == theirs and files.num_rows == len(theirs)
    assert set(files.column("partition").to_pylist()) == {"p=a", "p=b"}
    assert {v["p"] for v in files.column("partition_values").to_pylist()} == {"a", "b"}
    first = table.files(snapshot=1)
    assert sum(first.column("rows").to_pylist()) == 8 and first.num_rows < files.num_rows
    with pytest.raises(InvalidArgumentError, match="snapshot"):
        table.files(snapshot=1, tag="x")


def test_health_row_count_is_pypaimons(written):
    table = po.Catalog(written).get_table("db.t")
    metadata_only = table.health()
    assert metadata_only.row_count is None and metadata_only.rows.rows_before_merge == 11  # level-0 overlap
    h = table.health(merge_budget=1 << 30)
    assert h.row_count == pu.read(written, "db.t").num_rows == 9
    assert h.snapshot_id == 2 and h.files.total_files == table.files().num_rows and h.retention.count == 2
    assert h.refused_operations == {} and not h.expiry_due


def test_tags_list_is_typed(written):
    table = po.Catalog(written).get_table("db.t")
    table.tags.create("t1", snapshot_id=1).execute()
    (tag,) = table.tags.list()
    assert tag.name == "t1" and tag.snapshot_id == 1
    table.tags.delete("t1").execute()
