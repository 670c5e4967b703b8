"""Row tracking, data evolution and BLOB tables written by pypaimon 2.1.0, compacted by paimon-ops.

Each shape is written by pypaimon (appends, column updates by row id, deletes by row id), and a model of the table
(row id -> row) is kept beside it. Then every operation runs — small-files and full compaction, tags, manifest
compaction, snapshot expiry, orphan removal, rollback — and pypaimon 2.1.0 AND pypaimon-rust 0.4.0 read the latest
snapshot, every remaining snapshot and every tag: the multisets, `_ROW_ID` included, equal the model. pypaimon then
writes more commits (updates and deletes by row id over the compacted files) and compacts again.
"""
from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest

import paimon_ops as po
from paimon_ops.compact.planner import plan_compaction
from paimon_ops.errors import CommitConflictError, StalePlanError, UnsupportedError
from paimon_ops.execution.executor import execute
from paimon_ops.table.scan import DELETION_VECTORS, TableScanner
from paimon_ops.table.table import FileStoreTable, FileSystemCatalog
from tests import pypaimon_util as pu

S = pa.schema([("id", pa.int32()), ("a", pa.int64()), ("b", pa.string())])
NOW_FAR = 2 ** 45


class Model:
    """The rows a reader must see: row id -> row, ids assigned from nextRowId in commit order."""

    def __init__(self, cols: list[str]):
        self.cols = cols
        self.rows: dict[int, dict] = {}
        self.next_id = 0
        self.at: dict[int, list[tuple]] = {}  # snapshot id -> expected multiset

    def append(self, rows: dict[str, list]) -> None:
        n = len(next(iter(rows.values())))
        for k in range(n):
            self.rows[self.next_id] = {c: rows[c][k] for c in self.cols}
            self.next_id += 1

    def update(self, row_ids: list[int], col: str, values: list) -> None:
        for r, v in zip(row_ids, values):
            self.rows[r][col] = v

    def delete(self, row_ids: list[int]) -> None:
        for r in row_ids:
            del self.rows[r]

    def expected(self) -> list[tuple]:
        return sorted((tuple(row[c] for c in self.cols) + (rid,) for rid, row in self.rows.items()),
                      key=lambda r: tuple((v is None, repr(v)) for v in r))

    def record(self, wh: str, ident: str) -> None:
        self.at[FileSystemCatalog(wh).get_table(ident).snapshots.latest_id()] = self.expected()


def _update(wh: str, ident: str, col: str, row_ids: list[int], values: list, model: Model) -> None:
    t = pu.get_table(wh, ident)
    wb = t.new_batch_write_builder()
    c = wb.new_commit()
    try:
        field = pu.table_arrow_schema(t).field(col)
        data = pa.table({"_ROW_ID": pa.array(row_ids, pa.int64()), col: pa.array(values, field.type)})
        c.commit(wb.new_update().with_update_type([col]).update_by_arrow_with_row_id(data))
    finally:
        c.close()
    model.update(row_ids, col, values)
    model.record(wh, ident)


def _delete(wh: str, ident: str, row_ids: list[int], model: Model) -> None:
    t = pu.get_table(wh, ident)
    wb = t.new_batch_write_builder()
    c = wb.new_commit()
    try:
        c.commit(wb.new_update().delete_by_row_id(row_ids))
    finally:
        c.close()
    model.delete(row_ids)
    model.record(wh, ident)


def _append(wh: str, ident: str, rows: dict[str, list], model: Model) -> None:
    pu.write(pu.get_table(wh, ident), rows)
    model.append(rows)
    model.record(wh, ident)


def _compact(wh: str, ident: str, model: Model, table: FileStoreTable | None = None, **kw):
    r = po.Table(table or FileSystemCatalog(wh).get_table(ident)).maintenance.compact(**kw).execute()
    model.record(wh, ident)
    return r


def _check(wh: str, ident: str, model: Model, tags: dict[str, int] | None = None) -> None:
    """Latest, every remaining snapshot and every tag, read by pypaimon and pypaimon-rust, equal the model."""
    cols = model.cols + ["_ROW_ID"]
    table = FileSystemCatalog(wh).get_table(ident)
    assert pu.both_read(wh, ident, cols, system=True) == model.expected()
    for sid in table.snapshots.list_ids():
        if sid in model.at:
            assert pu.both_read(wh, ident, cols, snapshot_id=sid, system=True) == model.at[sid], sid
    for name, sid in (tags or {}).items():
        assert pu.both_read(wh, ident, cols, tag=name, system=True) == model.at[sid], name


def _files(wh: str, ident: str):
    t = FileSystemCatalog(wh).get_table(ident)
    res = TableScanner(t).scan(t.snapshots.latest())
    return t, res


# ---------------------------------------------------------------------------------------------- shapes

@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """pypaimon 2.1.0 writes: a partitioned row-tracking table, a data-evolution table with deletion vectors, a
    BLOB table; models of their rows per snapshot."""
    wh = str(tmp_path_factory.mktemp("rowtrack") / "wh")
    os.makedirs(wh)
    models = {}
    # plain row tracking, partitioned: one partition per commit, so partition a holds row ids 0..3 and 8..8
    pu.create_table(wh, "db.rt", pa.schema([("p", pa.string()), *S]), partition_keys=["p"],
                    options={"row-tracking.enabled": "true"})
    m = models["db.rt"] = Model(["p", "id", "a", "b"])
    for p, ids in (("a", [1, 2]), ("a", [3, 4]), ("b", [5, 6]), ("b", [7]), ("a", [8])):
        _append(wh, "db.rt", {"p": [p] * len(ids), "id": ids, "a": [i * 10 for i in ids], "b": [f"v{i}" for i in ids]},
                m)
    # data evolution with deletion vectors: appends, column updates, deletes by row id
    pu.create_table(wh, "db.de", S, options={"row-tracking.enabled": "true", "data-evolution.enabled": "true",
                                             "deletion-vectors.enabled": "true"})
    m = models["db.de"] = Model(["id", "a", "b"])
    _append(wh, "db.de", {"id": [1, 2, 3], "a": [1, 2, 3], "b": ["x", "y", "z"]}, m)
    _append(wh, "db.de", {"id": [4, 5], "a": [4, 5], "b": ["u", "v"]}, m)
    _append(wh, "db.de", {"id": [6, 7, 8], "a": [6, 7, 8], "b": ["p", "q", "r"]}, m)
    _update(wh, "db.de", "b", [0, 3], ["X", "U"], m)
    _update(wh, "db.de", "a", [1], [20], m)
    _delete(wh, "db.de", [2, 6], m)
    _update(wh, "db.de", "b", [1], ["Y"], m)
    # BLOB column (its own .blob files), data evolution, deletion vectors
    pu.create_table(wh, "db.blob", pa.schema([("id", pa.int32()), ("pic", pa.large_binary()), ("n", pa.string())]),
                    options={"row-tracking.enabled": "true", "data-evolution.enabled": "true", "blob-field": "pic",
                             "deletion-vectors.enabled": "true"})
    m = models["db.blob"] = Model(["id", "pic", "n"])
    _append(wh, "db.blob", {"id": [1, 2], "pic": [b"abc", b"defg"], "n": ["a", "b"]}, m)
    _append(wh, "db.blob", {"id": [3], "pic": [b"x" * 100], "n": ["c"]}, m)
    _update(wh, "db.blob", "n", [1], ["B"], m)
    _delete(wh, "db.blob", [0], m)
    _append(wh, "db.blob", {"id": [4, 5], "pic": [b"q", b"rr"], "n": ["d", "e"]}, m)
    return wh, models


@pytest.fixture
def shape(tables, tmp_path, request):
    wh, models = tables
    copy = str(tmp_path / "wh")
    shutil.copytree(wh, copy)
    import copy as cp
    return copy, request.param, cp.deepcopy(models[request.param])


# ---------------------------------------------------------------------------------------------- plain row tracking

@pytest.mark.parametrize("shape", ["db.rt"], indirect=True)
def test_row_tracking_compaction_keeps_row_ids_and_sequence_numbers(shape):
    wh, ident, model = shape
    _check(wh, ident, model)
    sys_cols = model.cols + ["_ROW_ID", "_SEQUENCE_NUMBER"]
    with_seq = pu.both_read(wh, ident, sys_cols, system=True)
    table = FileSystemCatalog(wh).get_table(ident)
    next_row_id = table.snapshots.latest().next_row_id
    po.Table(table).tags.create("t2", snapshot_id=2).execute()
    r = _compact(wh, ident, model, mode="full")
    # partition a: row ids 0..3 joined (adjacent), 7 stays apart; partition b: 4..6 joined
    assert r.details["tasks"] == 2 and r.details["files_in"] == 4 and r.details["files_out"] == 2
    table, res = _files(wh, ident)
    assert table.snapshots.latest().commit_kind == "COMPACT"
    assert table.snapshots.latest().next_row_id == next_row_id
    firsts = sorted((f.meta.first_row_id, f.meta.row_count, f.meta.file_source) for f in res.files)
    assert firsts == [(0, 4, 1), (4, 3, 1), (7, 1, 0)]
    # row ids AND per-row sequence numbers (physical _SEQUENCE_NUMBER, as Java's append compaction keeps them)
    assert pu.both_read(wh, ident, sys_cols, system=True) == with_seq
    _check(wh, ident, model, {"t2": 2})
    # pypaimon writes on; a second compaction reads our physical _ROW_ID / _SEQUENCE_NUMBER columns back
    _append(wh, ident, {"p": ["a"], "id": [9], "a": [90], "b": ["v9"]}, model)
    _append(wh, ident, {"p": ["a", "a"], "id": [10, 11], "a": [100, 110], "b": [None, "v11"]}, model)
    with_seq = pu.both_read(wh, ident, sys_cols, system=True)
    r = _compact(wh, ident, model, mode="small-files", min_files=2)
    assert r.details["tasks"] == 1 and r.details["files_in"] == 3  # row ids 7, 8, 9..10 (0..3 is not adjacent)
    assert pu.both_read(wh, ident, sys_cols, system=True) == with_seq
    _check(wh, ident, model, {"t2": 2})
    # sort and dv-ratio would change row ids: refused, nothing written
    for mode in ("sort", "dv-ratio"):
        with pytest.raises(UnsupportedError, match="row tracking"):
            po.Table(FileSystemCatalog(wh).get_table(ident)).maintenance.compact(mode=mode, order_by="id").execute()
    _lifecycle(wh, ident, model, {"t2": 2})


# ---------------------------------------------------------------------------------------------- data evolution

@pytest.mark.parametrize("shape", ["db.de"], indirect=True)
def test_data_evolution_compaction_merges_columns_by_row_id_and_moves_deletion_vectors(shape):
    wh, ident, model = shape
    _check(wh, ident, model)
    table = FileSystemCatalog(wh).get_table(ident)
    po.Table(table).tags.create("t4", snapshot_id=4).execute()
    next_row_id = table.snapshots.latest().next_row_id
    # Java's rule (small-files): one bin of 7 files >= compaction.min.file-num (5)
    r = _compact(wh, ident, model, mode="small-files")
    assert r.details["files_in"] == 7 and r.details["files_out"] == 1 and r.details["rows_out"] == 8
    table, res = _files(wh, ident)
    snap = table.snapshots.latest()
    assert snap.commit_kind == "COMPACT" and snap.next_row_id == next_row_id
    [f] = res.files
    assert (f.meta.first_row_id, f.meta.row_count, f.meta.write_cols, f.meta.min_sequence_number,
            f.meta.max_sequence_number, f.meta.file_source) == (0, 8, None, 1, 7, 1)
    # the deletion vectors moved to the merged file (row ids 2 and 6): the COMPACT snapshot keeps the DV index
    [ie] = [ie for ie in res.index_entries if ie.index_type == DELETION_VECTORS]
    [dvm] = ie.dv_ranges
    assert dvm.data_file == f.name and sorted(TableScanner(table).deletion_vector(ie, dvm).positions()) == [2, 6]
    _check(wh, ident, model, {"t4": 4})
    # pypaimon updates and deletes by row id over the compacted file, and appends
    _update(wh, ident, "b", [4, 7], ["V2", "R2"], model)
    _delete(wh, ident, [3], model)
    _append(wh, ident, {"id": [9, 10], "a": [9, 10], "b": ["s", "t"]}, model)
    _update(wh, ident, "a", [8], [900], model)
    _check(wh, ident, model, {"t4": 4})
    # full compaction with small bins: each row range merged on its own (target-file-size below one file)
    small = FileStoreTable(table.location, options_override={"target-file-size": "1 b", "source.split.open-file-cost": "1 b"})
    r = _compact(wh, ident, model, small, mode="full")
    assert r.details["tasks"] == 2 and r.details["files_out"] == 2
    table, res = _files(wh, ident)
    assert sorted((f.meta.first_row_id, f.meta.row_count) for f in res.files) == [(0, 8), (8, 2)]
    _check(wh, ident, model, {"t4": 4})
    _lifecycle(wh, ident, model, {"t4": 4})


@pytest.mark.parametrize("shape", ["db.de"], indirect=True)
def test_concurrent_column_update_conflicts_and_nothing_is_committed(shape):
    """A column update committed over the row ids a planned compaction rewrites would not line up with the merged
    file: the compaction's commit is refused as a conflict, its file removed, the table unchanged."""
    wh, ident, model = shape
    table = FileSystemCatalog(wh).get_table(ident)
    plan = plan_compaction(table, mode="full")
    _update(wh, ident, "b", [5], ["P2"], model)  # pypaimon, after the plan
    before = sorted(p for p in os.listdir(os.path.join(wh, "db.db", "de", "bucket-0")))
    with pytest.raises(CommitConflictError, match="committed over row ids"):
        execute(plan, table.refresh())
    assert sorted(os.listdir(os.path.join(wh, "db.db", "de", "bucket-0"))) == before
    _check(wh, ident, model)
    # a delete by row id after the plan changes the deletion vectors: stale plan, nothing committed
    plan = plan_compaction(FileSystemCatalog(wh).get_table(ident), mode="full")
    _delete(wh, ident, [7], model)
    with pytest.raises((CommitConflictError, StalePlanError)):
        execute(plan, FileSystemCatalog(wh).get_table(ident))
    _check(wh, ident, model)


# ---------------------------------------------------------------------------------------------- BLOB

@pytest.mark.parametrize("shape", ["db.blob"], indirect=True)
def test_blob_table_compaction_leaves_blob_files_alone(shape):
    wh, ident, model = shape
    _check(wh, ident, model)
    table, res = _files(wh, ident)
    blobs = sorted(f.name for f in res.files if f.name.endswith(".blob"))
    assert len(blobs) == 3
    r = _compact(wh, ident, model, mode="full")
    assert r.details["files_out"] == 1
    table, res = _files(wh, ident)
    assert sorted(f.name for f in res.files if f.name.endswith(".blob")) == blobs  # carried as they are
    [f] = [f for f in res.files if not f.name.endswith(".blob")]
    assert (f.meta.first_row_id, f.meta.row_count, f.meta.write_cols) == (0, 5, ("id", "n"))
    _check(wh, ident, model)
    _update(wh, ident, "n", [3], ["D2"], model)
    _delete(wh, ident, [4], model)
    _append(wh, ident, {"id": [6], "pic": [b"zz"], "n": ["f"]}, model)
    _check(wh, ident, model)
    # again: our merged file + pypaimon's update file + a new row range with its BLOB file -> one file 0..5
    r = _compact(wh, ident, model, mode="full")
    assert r.details["files_in"] == 3 and r.details["files_out"] == 1
    table, res = _files(wh, ident)
    [f] = [f for f in res.files if not f.name.endswith(".blob")]
    assert (f.meta.first_row_id, f.meta.row_count) == (0, 6)
    assert len([f for f in res.files if f.name.endswith(".blob")]) == 4
    _check(wh, ident, model)
    _lifecycle(wh, ident, model, {})


# ---------------------------------------------------------------------------------------------- lifecycle

def _lifecycle(wh: str, ident: str, model: Model, tags: dict[str, int]) -> None:
    """Manifest compaction, a second compaction, expiry, orphans, rollback; then pypaimon writes on."""
    table = FileSystemCatalog(wh).get_table(ident)
    last = table.snapshots.latest_id()
    po.Table(table).tags.create("t_last", snapshot_id=last).execute()
    tags = {**tags, "t_last": last}
    po.Table(table.refresh()).maintenance.compact_manifests().execute()
    model.record(wh, ident)
    _check(wh, ident, model, tags)
    r = po.Table(FileSystemCatalog(wh).get_table(ident)).maintenance.expire_snapshots(retain_min=1, retain_max=1, now=NOW_FAR).execute()
    assert r.details["expired_snapshots"]
    _check(wh, ident, model, tags)
    orphans = po.Table(FileSystemCatalog(wh).get_table(ident)).maintenance.remove_orphans(
        older_than=2 ** 62 // 1_000_000, now=2 ** 62 // 1_000_000,
        allow_short=True).dry_run_report()
    assert not [f for f in orphans.files if "data-" in f.path or "index-" in f.path], orphans.files
    po.Table(FileSystemCatalog(wh).get_table(ident)).maintenance.rollback(tag="t_last").execute()
    _check(wh, ident, model, tags)
    if "id" in model.cols and "a" in model.cols:
        row = {c: [None] for c in model.cols}
        row.update({"id": [77], "a": [77]})
        if "p" in model.cols:
            row["p"] = ["b"]
        _append(wh, ident, row, model)
        _check(wh, ident, model)


def test_what_cannot_keep_row_ids_is_refused_in_one_line(tables):
    """Files with row ids in a table whose options do not enable row tracking, or deletion vectors on a row-tracking
    table without data evolution: refused, nothing written."""
    wh, _ = tables
    root = os.path.join(wh, "db.db")
    before = sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs)
    loc = FileSystemCatalog(wh).get_table("db.rt").location
    for override, words in (({"row-tracking.enabled": "false"}, "row-tracking.enabled is not set"),
                            ({"deletion-vectors.enabled": "true"}, "deletion vectors on a row-tracking table")):
        with pytest.raises(UnsupportedError, match=words) as e:
            po.Table(FileStoreTable(loc, options_override=override)).maintenance.compact(mode="full").execute()
        assert "\n" not in str(e.value) and "nothing was changed" in str(e.value)
    de = FileSystemCatalog(wh).get_table("db.de").location
    with pytest.raises(UnsupportedError, match="data.evolution"):
        po.Table(FileStoreTable(de, options_override={"data-evolution.enabled": "false",
                                                  "deletion-vectors.enabled": "false"})).maintenance.compact(
            mode="full").execute()
    assert sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs) == before


def test_data_evolution_across_a_schema_change(tmp_path):
    """A column added after the first files: old files lack it (null), a column update fills it for one row; the
    merged file reads the same with both readers."""
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    wh = str(tmp_path / "wh")
    os.makedirs(wh)
    pu.create_table(wh, "db.evo", S, options={"row-tracking.enabled": "true", "data-evolution.enabled": "true"})
    m = Model(["id", "a", "b"])
    _append(wh, "db.evo", {"id": [1, 2], "a": [1, 2], "b": ["x", "y"]}, m)
    pu.catalog(wh).alter_table("db.evo", [SchemaChange.add_column("c", AtomicType("STRING"))])
    m.cols.append("c")
    for row in m.rows.values():
        row["c"] = None
    _append(wh, "db.evo", {"id": [3], "a": [3], "b": ["z"], "c": ["cc"]}, m)
    _update(wh, "db.evo", "c", [0], ["c0"], m)
    cols = m.cols + ["_ROW_ID"]
    before = FileSystemCatalog(wh).get_table("db.evo").snapshots.latest_id()
    assert pu.both_read(wh, "db.evo", cols, system=True) == m.expected()
    r = _compact(wh, "db.evo", m, mode="full")
    assert r.details["files_in"] == 3 and r.details["files_out"] == 1
    assert pu.both_read(wh, "db.evo", cols, system=True) == m.expected()
    assert pu.both_read(wh, "db.evo", cols, snapshot_id=before, system=True) == m.expected()
