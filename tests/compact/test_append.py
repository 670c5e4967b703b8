"""Append tables: small-file bin-pack, full, DV-ratio (with deletion vectors), sort compaction (order / zorder /
hilbert) committed as COMPACT of exactly the files read."""
from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pytest

import paimon_ops as po
from paimon_ops.compact.planner import plan_compaction
from paimon_ops.compact.sort import sort_indices
from paimon_ops.errors import InvalidArgumentError, UnsupportedError
from paimon_ops.format.deletion_vectors import DeletionVector, write_dv_index_file
from paimon_ops.format.manifest import DeletionVectorMeta, FileKind, IndexManifestEntry
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.reader import read_snapshot_raw
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import create_table, write_rows
from tests import pypaimon_util as pu
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

FIELDS = [("dt", "STRING"), ("k", "INT"), ("x", "DOUBLE"), ("s", "STRING")]


def _live(table: FileStoreTable) -> list[dict]:
    t = table.refresh()
    sc = TableScanner(t)
    parts = [rows for _, rows in read_snapshot_raw(sc, t.snapshots.latest(), keep_system_columns=False)]
    rows = pa.concat_tables(parts).to_pylist() if parts else []
    return sorted(rows, key=lambda r: (r["dt"], r["k"], r["s"] or ""))


def _append_table(warehouse: str, name: str = "db.ap", files: int = 6, options: dict | None = None) -> FileStoreTable:
    t = create_table(warehouse, name, FIELDS, partition_keys=["dt"], options={"bucket": "-1", **(options or {})})
    for i in range(files):
        write_rows(t, {"dt": ["d1", "d2"] * 10, "k": list(range(i * 20, i * 20 + 20)),
                       "x": [float(i)] * 20, "s": [f"s{i}"] * 20})
    return t.refresh()


def test_small_files_bin_pack(warehouse):
    t = _append_table(warehouse, files=6)
    before = _live(t)
    plan = plan_compaction(t, mode="small-files")
    assert len(plan.tasks) == 2 and all(len(tk.files) == 6 for tk in plan.tasks)  # 6 >= compaction.min.file-num
    assert not plan_compaction(t, mode="small-files", min_files=7).tasks
    r = po.Table(t).maintenance.compact(mode="small-files").execute()
    assert r.details["files_out"] == 2 and r.details["rows_out"] == 120
    assert _live(t) == before
    assert pu.sorted_rows(pu.read(warehouse, "db.ap"), ["dt", "k"]) == pu.sorted_rows(
        pa.Table.from_pylist(before), ["dt", "k"])
    scan = TableScanner(t.refresh()).scan_latest()
    assert scan.snapshot.commit_kind == "COMPACT"
    for f in scan.files:  # fresh consecutive sequence numbers
        assert f.meta.max_sequence_number - f.meta.min_sequence_number + 1 == f.meta.row_count
    assert not plan_compaction(t.refresh(), mode="small-files").tasks  # nothing small left to pack


def test_full_append_and_target_size_rolls(warehouse):
    t = _append_table(warehouse, files=3, options={"target-file-row-num": "25"})
    before = _live(t)
    r = po.Table(t).maintenance.compact(mode="full").execute()
    assert r.details["files_out"] == 4  # 30 rows per partition rolled at 25 rows: 25 + 5
    assert _live(t) == before


def _add_dv(table: FileStoreTable, file_index: int, positions: list[int]) -> None:
    """Mark rows of one append file deleted (what a DELETE statement does in DV mode)."""
    sc = TableScanner(table)
    res = sc.scan_latest()
    f = sorted(res.files, key=lambda f: f.name)[file_index]
    data, ranges = write_dv_index_file({f.name: DeletionVector(positions)}, False)
    name = f"index-test-{file_index}"
    table.io.write_bytes(table.index_dir + "/" + name, data)
    ie = IndexManifestEntry(FileKind.ADD, f.partition, 0, "DELETION_VECTORS", name, len(data), 1,
                            tuple(DeletionVectorMeta(r.data_file, r.offset, r.length, r.cardinality) for r in ranges))
    FileStoreCommit(table).commit(CommitChanges(index_added=(ie,)), "APPEND", res.snapshot.id)


def test_append_dv_ratio(warehouse):
    t = _append_table(warehouse, files=3, options={"deletion-vectors.enabled": "true"})
    _add_dv(t, 0, list(range(8)))      # 8 of 10 rows: ratio 0.8
    _add_dv(t.refresh(), 1, [0])       # 1 of 10: ratio 0.1
    t = t.refresh()
    before = _live(t)
    assert len(before) == 60 - 9
    plan = plan_compaction(t, mode="dv-ratio")
    ratios = sorted(r["ratio"] for r in plan.details["dv_ratios"]["files"])
    assert ratios[-2:] == [0.1, 0.8] and plan.details["dv_ratio_threshold"] == 0.2
    assert [len(tk.files) for tk in plan.tasks] == [1]
    r = po.Table(t).maintenance.compact(mode="dv-ratio").execute()
    assert r.details["deletion_vectors_dropped"] == 1
    assert _live(t) == before
    res = TableScanner(t.refresh()).scan_latest()
    live = {f.name for f in res.files}
    pointed = {r.data_file for ie in res.index_entries for r in ie.dv_ranges or ()}
    assert pointed <= live and len(pointed) == 1  # the 0.1 file keeps its vector
    # the option (ours, with Paimon's as fallback) sets the threshold
    t2 = FileStoreTable(t.root, options_override={"compaction.delete-ratio-threshold": "0.05"})
    assert plan_compaction(t2, mode="dv-ratio").tasks
    t3 = FileStoreTable(t.root, options_override={"compaction.delete-ratio-threshold": "0.05",
                                         "compaction.dv-ratio-threshold": "0.5"})
    assert not plan_compaction(t3, mode="dv-ratio").tasks


@pytest.mark.parametrize("strategy", ["order", "zorder", "hilbert"])
def test_sort_compaction(warehouse, strategy):
    t = _append_table(warehouse, files=4)
    before = _live(t)
    r = po.Table(t).maintenance.compact(mode="sort", order_by=["k", "x"], strategy=strategy).execute()
    assert _live(t) == before
    res = TableScanner(t.refresh()).scan_latest()
    assert res.snapshot.commit_kind == "COMPACT" and len(res.files) == 2
    if strategy == "order":
        for _, rows in read_snapshot_raw(TableScanner(t), res.snapshot, keep_system_columns=False):
            ks = rows.column("k").to_pylist()
            assert ks == sorted(ks)
    assert r.details["files_in"] == 8


def test_sort_keys_cluster():
    """z-order / hilbert keys keep nearby points near in the order (locality, not exact Java bytes)."""
    n = 64
    xs, ys = np.meshgrid(np.arange(n), np.arange(n))
    data = pa.table({"a": xs.ravel().astype(np.int32), "b": ys.ravel().astype(np.int64)})
    for strategy in ("zorder", "hilbert"):
        idx = sort_indices(data, ["a", "b"], strategy).to_numpy()
        a, b = data.column("a").to_numpy()[idx], data.column("b").to_numpy()[idx]
        # the first quarter of the order covers one quadrant-ish region, not full rows
        first = slice(0, n * n // 4)
        assert a[first].max() < n and b[first].max() < n
        assert (a[first].max() - a[first].min()) < n and (b[first].max() - b[first].min()) < n
        jumps = np.abs(np.diff(a)) + np.abs(np.diff(b))
        assert np.median(jumps) <= 2
    hil = sort_indices(data, ["a", "b"], "hilbert").to_numpy()
    steps = np.abs(np.diff(data.column("a").to_numpy()[hil])) + np.abs(np.diff(data.column("b").to_numpy()[hil]))
    assert (steps == 1).all()  # a Hilbert curve over a 2^k grid only ever moves to a neighbour
    strs = pa.table({"s": ["b", None, "a", "ab"], "n": [1.5, -2.0, None, 0.0]})
    assert sort_indices(strs, ["s", "n"], "zorder").to_pylist()[0] == 1  # null first


def test_sort_compaction_refusals(warehouse):
    t = _append_table(warehouse, files=1)
    with pytest.raises(InvalidArgumentError, match="partition"):
        plan_compaction(t, mode="sort", order_by=["dt"])
    with pytest.raises(InvalidArgumentError, match="order_by"):
        plan_compaction(t, mode="sort")
    pk = create_table(warehouse, "db.pk", [("k", "INT"), ("v", "INT")], primary_keys=["k"], options={"bucket": "1"})
    with pytest.raises(UnsupportedError, match="unaware-bucket"):
        plan_compaction(pk, mode="sort", order_by=["v"])


@pytest.mark.java
@pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")
def test_java_append_table_small_files_and_sort(tmp_path):
    src = JavaTable(tmp_path / "wh", "db", "ap")
    batches = [{"rows": [[i * 10 + j, f"v{j}", "d1" if j % 2 else "d2"] for j in range(10)]} for i in range(6)]
    jh.run_many([("create_table", src.payload(schema={
        "fields": [{"name": "k", "type": "INT"}, {"name": "v", "type": "STRING"}, {"name": "dt", "type": "STRING"}],
        "partition_keys": ["dt"], "primary_keys": [], "options": {"bucket": "-1", "file.format": "orc"}})),
        ("write", src.payload(batches=batches))])
    before = src.rows()
    r = po.Table(FileStoreTable(str(src.path))).maintenance.compact(mode="small-files").execute()
    assert r.details["files_out"] == 2
    shutil.copytree(src.path, tmp_path / "wh2" / "db.db" / "ap")
    r2 = po.Table(FileStoreTable(str(src.path))).maintenance.compact(mode="sort", order_by="v,k", strategy="zorder").execute()
    assert r2.snapshot_id is not None
    after, _, _, after_write, missing = jh.run_many([
        ("read", src.payload()), ("write", src.payload(batches=[{"rows": [[999, "z", "d1"]]}])),
        ("compact", src.payload()), ("read", src.payload()), ("check_files", src.payload())])
    key = repr
    assert sorted(after["rows"], key=key) == sorted(before, key=key)
    assert sorted(after_write["rows"], key=key) == sorted(before + [[999, "z", "d1"]], key=key)
    assert missing["missing"] == []


def test_sort_compaction_keeps_concurrent_appends(warehouse):
    """Unlike Paimon's OVERWRITE-based sort compaction (apache/paimon#4802), rows appended to the partition between our
    read and our commit survive: we commit COMPACT of exactly the files we read."""
    t = _append_table(warehouse, files=3)
    before = _live(t)

    def concurrent_append(done: int, total: int) -> None:
        if done == total:  # after every task ran, before the commit
            write_rows(t.refresh(), {"dt": ["d1", "d2"], "k": [999, 998], "x": [0.0, 0.0], "s": ["late", "late"]})

    r = po.Table(t).maintenance.compact(mode="sort", order_by=["x"]).execute(progress=concurrent_append)
    assert r.snapshot_id is not None
    after = _live(t)
    assert len(after) == len(before) + 2 and {r["k"] for r in after if r["s"] == "late"} == {998, 999}
