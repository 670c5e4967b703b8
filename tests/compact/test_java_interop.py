"""Tables written by Java Paimon 0.9 (every merge engine, sequence fields, deletes, DVs, several levels,
partitions, Parquet and ORC) → our full compaction → Java and pypaimon read exactly what they read before;
Java keeps writing and compacting afterwards (compared with an untouched control copy) and finds no missing file.

All source tables are written in one JVM call (session fixture); each test works on copies.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import paimon_ops as po
from paimon_ops.compact.planner import plan_compaction
from paimon_ops.rowcount import count_rows
from paimon_ops.table.table import FileStoreTable
from tests import pypaimon_util as pu
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

pytestmark = [pytest.mark.java,
              pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")]

BASE_FIELDS = [("pt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("a", "BIGINT"), ("b", "STRING"), ("c", "DOUBLE")]


def _batches(pts=("x", "y"), deletes=True, compact_levels=True) -> list[dict]:
    """Inserts, updates and deletes over four commits; the second is compacted (an intermediate level),
    the last two stay on level 0."""
    b1 = {"rows": [[p, i, i, f"b{i}", i / 2] for p in pts for i in range(60)]}
    b2 = {"rows": [[p, i, 100 + i, f"u{i}", None] for p in pts for i in range(0, 20)], "kinds": None}
    b2["kinds"] = ["+U"] * len(b2["rows"])
    if deletes:
        b2["rows"] += [[p, 50, 50, "b50", 25.0] for p in pts]
        b2["kinds"] += ["-D"] * len(pts)
    if compact_levels:
        b2.update(compact=True, full=False)
    b3 = {"rows": [[p, i, 1000 + i, None, float(i)] for p in pts for i in range(55, 70)]}
    b4 = {"rows": [[pts[0], 30, 7, "z", 1.0]], "kinds": ["+I"]}
    if deletes:
        b4["rows"] += [[pts[0], 5, 105, "u5", None], [pts[-1], 6, 106, "u6", None]]
        b4["kinds"] += ["-D", "-D"]
    return [b1, b2, b3, b4]


def _pu_group_batches() -> list[dict]:
    # fields: pt, id, a, b, g1, c, g2 with sequence groups g1 -> (a, b), g2 -> c
    rows1 = [["x", i, i, f"b{i}", 1, float(i), 1] for i in range(40)]
    rows2 = [["x", i, 100 + i, None, 2, None, None] for i in range(0, 20)]            # g2 null: group ignored
    rows3 = [["x", i, 5, "old", 0, 9.5, 3] for i in range(10, 30)]                     # g1 older: a,b kept
    rows4 = [["x", i, 1, "x", 5, 2.0, 9] for i in (3, 4)]                             # retract both groups
    return [{"rows": rows1}, {"rows": rows2, "compact": True, "full": False}, {"rows": rows3},
            {"rows": rows4, "kinds": ["-D", "-U"]}]


GROUP_FIELDS = [("pt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("a", "BIGINT"), ("b", "STRING"), ("g1", "INT"),
                ("c", "DOUBLE"), ("g2", "INT")]

TRIGGER2 = {"num-sorted-run.compaction-trigger": "2"}

TABLES: dict[str, dict] = {
    "dedup_parquet": dict(options={"bucket": "2", **TRIGGER2}, batches=_batches()),
    "dedup_orc_seq": dict(options={"bucket": "1", "file.format": "orc", "sequence.field": "a", **TRIGGER2},
                          batches=_batches() + [{"rows": [["x", 1, 0, "older-seq", 0.0]]}]),
    "partial_update": dict(options={"bucket": "2", "merge-engine": "partial-update", **TRIGGER2},
                           batches=_batches(deletes=False)),
    "partial_update_groups": dict(fields=GROUP_FIELDS,
                                  options={"bucket": "1", "merge-engine": "partial-update", "file.format": "orc",
                                           "fields.g1.sequence-group": "a,b", "fields.g2.sequence-group": "c"},
                                  batches=_pu_group_batches()),
    "aggregation": dict(options={"bucket": "2", "merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
                                 "fields.b.aggregate-function": "max", "fields.b.ignore-retract": "true",
                                 "fields.c.aggregate-function": "last_non_null_value", **TRIGGER2},
                        batches=_batches()),
    "first_row": dict(options={"bucket": "2", "merge-engine": "first-row", **TRIGGER2},
                      batches=_batches(deletes=False)),
    "dv_dedup": dict(options={"bucket": "2", "deletion-vectors.enabled": "true"}, batches=_batches()),
    "dv_aggregation": dict(options={"bucket": "1", "deletion-vectors.enabled": "true", "merge-engine": "aggregation",
                                    "fields.a.aggregate-function": "sum", "fields.b.aggregate-function": "max",
                                    "fields.b.ignore-retract": "true", "file.format": "orc"},
                           batches=_batches()),
    "lookup_changelog_pu": dict(options={"bucket": "1", "merge-engine": "partial-update", "changelog-producer": "lookup"},
                                batches=_batches(deletes=False)),
}


@pytest.fixture(scope="session")
def java_tables(tmp_path_factory) -> Path:
    """Every source table, written by Java Paimon 0.9 in one JVM."""
    wh = tmp_path_factory.mktemp("java_src")
    cmds = []
    for name, spec in TABLES.items():
        t = JavaTable(wh, "db", name)
        fields = spec.get("fields", BASE_FIELDS)
        cmds.append(("create_table", t.payload(schema={
            "fields": [{"name": n, "type": ty} for n, ty in fields], "partition_keys": ["pt"],
            "primary_keys": ["pt", "id"], "options": spec["options"]})))
        cmds.append(("write", t.payload(batches=spec["batches"])))
    jh.run_many(cmds)
    return wh


def _copy(src_wh: Path, dst_wh: Path, name: str) -> JavaTable:
    shutil.copytree(src_wh / "db.db" / name, dst_wh / "db.db" / name)
    return JavaTable(dst_wh, "db", name)


def _key(r) -> str:
    return json.dumps(r, sort_keys=True)


def _py_rows(wh: Path, name: str) -> list[list]:
    t = pu.read(str(wh), f"db.{name}")
    rows = [[r[c] for c in t.column_names] for r in t.to_pylist()]
    return sorted(rows, key=_key)


EXTRA = {"rows": [["x", 1, 7, "new", 3.5], ["x", 61, 8, "n61", None], ["y", 2, 9, None, 1.0]], "compact": True}
EXTRA_GROUPS = {"rows": [["x", 1, 7, "new", 9, 3.5, 9], ["x", 61, 8, "n61", 1, None, 1]], "compact": True}


@pytest.mark.parametrize("name", list(TABLES))
def test_full_compaction_of_java_table(java_tables, tmp_path, name):
    ours = _copy(java_tables, tmp_path / "ours", name)
    control = _copy(java_tables, tmp_path / "control", name)
    before_scan, before = jh.run_many([("scan", ours.payload()), ("read", ours.payload())])
    before_rows = sorted(before["rows"], key=_key)
    levels_before = {f["level"] for f in before_scan["files"]}
    assert 0 in levels_before or len(levels_before) > 1, "source table should need compaction"
    try:
        py_before = _py_rows(tmp_path / "ours", name)
    except Exception as e:  # noqa: BLE001 - pypaimon 2.1.0 bugs are recorded, not fatal
        py_before = f"pypaimon failed: {e}"

    table = FileStoreTable(str(ours.path))
    # the row count Dagster reports is Java's, before (merging the overlapping buckets) and after compaction
    count_before = count_rows(table)
    assert count_before.exact == len(before_rows), count_before
    if name not in ("first_row", "dv_dedup", "dv_aggregation"):  # read raw above level 0: the layout gives the count
        assert count_before.buckets_merged > 0 and count_before.rows_before_merge != len(before_rows)
    plan = plan_compaction(table)
    json.dumps(plan.to_dict(), default=str)  # the plan is JSON-serialisable
    report = po.Table(table).maintenance.compact().execute()
    assert report.snapshot_id is not None
    assert report.details["rows_out"] <= report.details["rows_in"]

    extra = EXTRA_GROUPS if name == "partial_update_groups" else EXTRA
    after_scan, after, _, _, after_write, control_read, missing = jh.run_many([
        ("scan", ours.payload()), ("read", ours.payload()),
        ("write", ours.payload(batches=[extra])), ("write", control.payload(batches=[extra])),
        ("read", ours.payload()), ("read", control.payload()), ("check_files", ours.payload()),
    ])
    # 1. Java reads exactly what it read before
    assert sorted(after["rows"], key=_key) == before_rows
    assert after_scan["commit_kind"] == "COMPACT"
    count_after = count_rows(FileStoreTable(str(ours.path)), snapshot_id=after_scan["snapshot_id"])
    assert count_after.exact == len(after["rows"]) and count_after.buckets_merged == 0, count_after  # by layout
    assert count_rows(FileStoreTable(str(ours.path))).exact == len(after_write["rows"])  # Java wrote and compacted again
    max_level = max(table.options.num_levels - 1, max(levels_before))
    assert {f["level"] for f in after_scan["files"]} == {max_level}
    assert all(f["file_source"] == "COMPACT" and f["delete_row_count"] == 0 for f in after_scan["files"])
    live = {(f["partition_path"], f["file_name"]) for f in after_scan["files"]}
    for ie in after_scan["index_files"]:  # no DV entry may point at a removed file; full compaction leaves none
        assert ie["index_type"] != "DELETION_VECTORS" or not ie["dv_ranges"], ie
        for r in ie["dv_ranges"] or []:
            assert (ie["partition_path"], r["data_file"]) in live
    # 2. pypaimon reads the same rows (a fully compacted table needs no merging: any reader agrees).
    #    pypaimon 2.1.0 cannot read manifests in the 0.9 layout at all (KeyError '_VALUE_STATS_COLS' in
    #    manifest_file_manager); our commit keeps the table's 0.9 layout (Java 0.9 must keep reading it), so
    #    there pypaimon fails before and after alike, and pypaimon coverage comes from tests/compact/test_pypaimon.py.
    if isinstance(py_before, str) and "_VALUE_STATS_COLS" in py_before:
        with pytest.raises(KeyError, match="_VALUE_STATS_COLS"):
            _py_rows(tmp_path / "ours", name)
    else:
        assert _py_rows(tmp_path / "ours", name) == before_rows
    # 3. Java keeps writing and compacting: same result as on the untouched copy; nothing missing
    assert sorted(after_write["rows"], key=_key) == sorted(control_read["rows"], key=_key)
    assert missing["missing"] == []


def test_java_compacts_after_dv_ratio_rewrite(java_tables, tmp_path):
    """DV-ratio rewrite keeps levels and sequence numbers; Java reads the same rows and keeps compacting."""
    name = "dv_dedup"
    ours = _copy(java_tables, tmp_path / "ours", name)
    control = _copy(java_tables, tmp_path / "control", name)
    before = sorted(ours.read()["rows"], key=_key)
    plan = plan_compaction(FileStoreTable(str(ours.path)), mode="dv-ratio", threshold=0.0)
    ratios = plan.details["dv_ratios"]["files"]
    assert ratios and any(r["deleted"] > 0 for r in ratios)
    levels_in = {f.name: f.level for t in plan.tasks for f in t.files}
    assert plan.tasks
    report = po.Table(FileStoreTable(str(ours.path))).maintenance.compact(mode="dv-ratio", threshold=0.0).execute()
    scan, after, _, _, after_write, control_read, missing = jh.run_many([
        ("scan", ours.payload()), ("read", ours.payload()),
        ("write", ours.payload(batches=[EXTRA])), ("write", control.payload(batches=[EXTRA])),
        ("read", ours.payload()), ("read", control.payload()), ("check_files", ours.payload()),
    ])
    assert sorted(after["rows"], key=_key) == before
    new = [f for f in scan["files"] if f["file_source"] == "COMPACT" and f["file_name"] not in levels_in]
    assert new and {f["level"] for f in new} <= set(levels_in.values())
    dv_files = {r["data_file"] for ie in scan["index_files"] for r in (ie["dv_ranges"] or [])}
    assert not dv_files & set(levels_in), "DV entries of rewritten files must be gone"
    assert report.details["deletion_vectors_dropped"] >= 1
    assert sorted(after_write["rows"], key=_key) == sorted(control_read["rows"], key=_key)
    assert missing["missing"] == []


def test_partial_dv_ratio_rewrite_keeps_other_vectors(java_tables, tmp_path):
    """Only the files above the threshold are rewritten; the bucket's DV index is rewritten with the vectors of
    the remaining files, which Java 0.9 then reads and maintains."""
    name = "dv_dedup"
    ours = _copy(java_tables, tmp_path / "ours", name)
    before = sorted(ours.read()["rows"], key=_key)
    table = FileStoreTable(str(ours.path))
    ratios = [r for r in plan_compaction(table, mode="dv-ratio").details["dv_ratios"]["files"] if r["deleted"]]
    by_bucket: dict = {}
    for r in ratios:
        by_bucket.setdefault((json.dumps(r["partition"]), r["bucket"]), []).append(r["ratio"])
    multi = [sorted(v) for v in by_bucket.values() if len(set(v)) > 1]
    assert multi, f"fixture should give a bucket with several DV files of different ratios: {ratios}"
    thr = (multi[0][0] + multi[0][1]) / 2
    plan = plan_compaction(table, mode="dv-ratio", threshold=thr)
    rewritten = {f.name for t in plan.tasks for f in t.files}
    kept = {r["file"] for r in ratios} - rewritten
    assert rewritten and kept
    po.Table(table).maintenance.compact(mode="dv-ratio", threshold=thr).execute()
    scan, after, _, after_write, missing = jh.run_many([
        ("scan", ours.payload()), ("read", ours.payload()), ("write", ours.payload(batches=[EXTRA])),
        ("read", ours.payload()), ("check_files", ours.payload())])
    assert sorted(after["rows"], key=_key) == before
    pointed = {r["data_file"]: r for ie in scan["index_files"] for r in (ie["dv_ranges"] or [])}
    assert kept <= set(pointed) and not rewritten & set(pointed)
    assert {f["file_name"] for f in scan["files"]} >= set(pointed)
    assert missing["missing"] == []
    expected = {(r[0], r[1]): r for r in before}
    for r in EXTRA["rows"]:
        expected[(r[0], r[1])] = r
    assert sorted(after_write["rows"], key=_key) == sorted(expected.values(), key=_key)
