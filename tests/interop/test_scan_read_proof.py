"""Proof: for every snapshot and tag of tables written by Java Paimon 0.9 and by pypaimon 2.1.0,
our scan lists exactly the files (and index files / deletion vectors) Java lists, and our raw reader returns
exactly the rows those files hold.

Raw rows are checked against Java's batch read wherever Java's answer determines them:
* deletion-vector tables: the raw rows of level >= 1 files with DVs applied are Java's read;
* first-row tables: the raw rows of level >= 1 files are Java's read;
* append tables: the union of all raw rows is Java's read;
* other primary-key tables: merging the raw rows (with their sequence numbers and row kinds) with a small
  reference merge of the table's engine gives Java's read; in addition per-file row counts, sequence ranges
  and retract-row counts must match the manifest.
"""
from __future__ import annotations

import pytest

from paimon_ops.rowcount import count_rows
from paimon_ops.table.reader import read_snapshot_raw, visible_files
from paimon_ops.table.table import FileSystemCatalog
from tests import pypaimon_util as pu
from tests.interop import java_harness as jh
from tests.interop.conftest import DB, READ_ONLY
from tests.interop.interop_util import (
    by_name,
    canon,
    java_files,
    java_index,
    merge_rows,
    our_files_as_java,
    our_index_as_java,
    our_scan,
    raw_rows,
)

pytestmark = [pytest.mark.java,
              pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")]


def _keys(case):
    return sorted(case.scans, key=str)


@pytest.mark.parametrize("name", READ_ONLY)
def test_scan_matches_java_for_every_snapshot_and_tag(java_tables, name):
    case = java_tables[name]
    table = FileSystemCatalog(case.warehouse).get_table(f"{DB}.{name}")
    assert case.scans, "the fixture found no snapshots"
    levels_seen = set()
    for key in _keys(case):
        js = case.scans[key]
        scanner, result = our_scan(table, **({"snapshot_id": key[1]} if key[0] == "snapshot" else {"tag": key[1]}))
        assert result.snapshot.id == js["snapshot_id"], key
        assert result.snapshot.schema_id == js["schema_id"] and result.snapshot.commit_kind == js["commit_kind"]
        ours, theirs = by_name(our_files_as_java(table, scanner, result)), by_name(java_files(js))
        assert set(ours) == set(theirs), (key, set(ours) ^ set(theirs))
        for fname, jf in theirs.items():
            assert ours[fname] == jf, (key, fname)
        assert our_index_as_java(table, scanner, result) == java_index(js), key
        levels_seen |= {f["level"] for f in theirs.values()}
    if case.kind in ("pk-dv", "pk", "aggregation") and not name.startswith("py_"):
        assert len(levels_seen) >= 2, f"{name}: expected several LSM levels, saw {levels_seen}"


@pytest.mark.parametrize("name", READ_ONLY)
def test_raw_rows_match_java(java_tables, name):
    case = java_tables[name]
    table = FileSystemCatalog(case.warehouse).get_table(f"{DB}.{name}")
    pk = table.is_primary_key
    single_run_checked = 0
    for key in _keys(case):
        java_rows = canon(case.reads[key]["rows"])
        scanner, result = our_scan(table, **({"snapshot_id": key[1]} if key[0] == "snapshot" else {"tag": key[1]}))
        per_file = raw_rows(table, scanner, result, system=pk)
        n = len(table.schema.field_names)
        dvs = scanner.deletion_vectors(result)
        for f, rows in per_file:
            m = f.meta
            card = dvs[f.name].cardinality if f.name in dvs else 0
            assert len(rows) == m.row_count - card, (key, f.name)
            if pk:
                seqs = [r[n] for r in rows]
                if rows:
                    assert m.min_sequence_number <= min(seqs) and max(seqs) <= m.max_sequence_number
                if not card:
                    assert sum(1 for r in rows if r[n + 1] in (1, 3)) == (m.delete_row_count or 0), (key, f.name)
        if case.kind == "pk-dv" or case.kind == "first-row":
            visible = {f.name for f in visible_files(scanner, result)}
            assert visible == {f.name for f in result.files if f.level > 0}
            got = [r[:n] for f, rows in per_file if f.name in visible for r in rows]
            assert canon(got) == java_rows, key
        elif case.kind == "append":
            assert canon(r for _, rows in per_file for r in rows) == java_rows, key
        else:
            assert canon(merge_rows(table, per_file, case.kind, case.agg)) == java_rows, key
        # a snapshot whose files form one sorted run without retracts: the raw union *is* Java's read
        if pk and case.kind != "aggregation" and result.files and len({f.level for f in result.files}) == 1\
                and result.files[0].level > 0 and all(not f.meta.delete_row_count for f in result.files):
            assert canon(r[:n] for _, rows in per_file for r in rows) == java_rows, key
            single_run_checked += 1
    if pk and case.kind != "aggregation" and not name.startswith("py_"):
        assert single_run_checked, f"{name}: no snapshot with a single sorted run was compared"


def test_dv_positions_decode_exactly_as_java(java_tables):
    """Each DV's positions (from the harness, decoded by Java) equal ours, file by file, in every snapshot."""
    checked = 0
    for name in ("pk_dv", "pk_dv_orc"):
        case = java_tables[name]
        table = FileSystemCatalog(case.warehouse).get_table(f"{DB}.{name}")
        for key in _keys(case):
            scanner, result = our_scan(table, **({"snapshot_id": key[1]} if key[0] == "snapshot" else {"tag": key[1]}))
            ours = scanner.deletion_vectors(result)
            theirs = {r["data_file"]: r for i in case.scans[key]["index_files"] for r in (i["dv_ranges"] or [])}
            assert set(ours) == set(theirs), key
            for fname, r in theirs.items():
                assert ours[fname].positions().tolist() == r["positions"], (key, fname)
                assert ours[fname].cardinality == r["cardinality"]
                checked += 1
    assert checked >= 4


def test_read_snapshot_raw_yields_every_live_file_once(java_tables):
    case = java_tables["pk_lv"]
    table = FileSystemCatalog(case.warehouse).get_table(f"{DB}.pk_lv")
    for key in _keys(case):
        if key[0] != "snapshot":
            continue
        scanner, result = our_scan(table, snapshot_id=key[1])
        seen = [(f.name, t.num_rows) for f, t in read_snapshot_raw(scanner, result.snapshot)]
        assert sorted(seen) == sorted((f.name, f.meta.row_count) for f in result.files)


@pytest.mark.parametrize("name", READ_ONLY)
def test_row_count_is_java_row_count_for_every_snapshot_and_tag(java_tables, name):
    """`count_rows` (what `dagster/row_count` reports) equals the number of rows Java's batch read returns, for every
    snapshot and tag, every merge engine, level-0 overlap and deletes included; without a merge budget it is either
    that count (the layout gives it) or unknown — never the unmerged sum."""
    case = java_tables[name]
    table = FileSystemCatalog(case.warehouse).get_table(f"{DB}.{name}")
    inflated = 0
    for key in _keys(case):
        java_count = len(case.reads[key]["rows"])
        scanner, result = our_scan(table, **({"snapshot_id": key[1]} if key[0] == "snapshot" else {"tag": key[1]}))
        count = count_rows(table, scanner, result=result)
        assert count.exact == java_count and count.buckets_unknown == 0, (key, count)
        layout_only = count_rows(table, scanner, result=result, merge_budget=0)
        assert layout_only.exact in (None, java_count), (key, layout_only)
        assert (layout_only.exact is None) == (count.buckets_merged > 0), key
        inflated += count.rows_before_merge != java_count
    if case.kind in ("pk", "partial-update", "aggregation", "first-row", "pk-dv") and not name.startswith("py_"):
        assert inflated, f"{name}: no snapshot where the unmerged sum differs from the row count"
    if name.startswith("py_"):  # pypaimon 2.1.0 agrees on the latest snapshot
        assert count_rows(table).exact == pu.read(case.warehouse, f"{DB}.{name}").num_rows
