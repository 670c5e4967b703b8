"""How many rows a reader of the latest snapshot gets — exactly, or not at all.

Summing file row counts (minus deletion-vector cardinalities) is only the row count when no key can appear twice
and no file holds retractions; on a merge-on-read primary-key table, level-0 files repeat keys, so that sum can be
several times the real count. Per (partition, bucket) `count_rows` therefore takes the count:

* from metadata when the layout makes it exact, the way Java Paimon's batch read sees the bucket
  (`MergeTreeSplitGenerator` "raw convertible" splits):
  - append tables: file rows minus deleted rows;
  - deletion-vector primary-key tables (not `deletion-vectors.merge-on-read`) and `first-row` tables: readers skip
    level 0 and keys are unique above it, so level > 0 rows minus deleted rows;
  - other primary-key tables: one sorted run (a single file, or every file in the same level > 0) whose files
    hold no retractions (`_DELETE_ROW_COUNT` = 0);
* otherwise by merging the bucket's records with the table's merge engine (`paimon_ops.merge`, drop retractions:
  what a batch read returns), reading data files — only while the files still to merge total at most
  `merge_budget` bytes. Past the budget the count is unknown (`RowCount.exact is None`).

Postponed rows (`bucket = -2`) are invisible to readers until postpone compaction moves them: not counted.
`rows_before_merge` is the metadata sum over all files (what the observations used to call the row count).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from paimon_ops.merge.merge import merge_records
from paimon_ops.merge.spec import MergeSpec
from paimon_ops.options import DELETION_VECTORS_MERGE_ON_READ
from paimon_ops.table.reader import read_file
from paimon_ops.table.scan import LiveFile, ScanResult, TableScanner
from paimon_ops.table.table import FileStoreTable

MERGE_BUDGET_BYTES = 64 * 1024 * 1024  # data read per count to merge buckets whose layout does not give the count
POSTPONE_BUCKET = -2


@dataclass(frozen=True)
class RowCount:
    snapshot_id: int | None
    rows_before_merge: int  # file rows minus deletion-vector deleted rows, every file (level 0 and postponed too)
    exact: int | None  # what a batch read of the snapshot returns; None: not known within the merge budget
    buckets_merged: int = 0  # buckets counted by merging their records
    bytes_merged: int = 0
    buckets_unknown: int = 0  # buckets past the merge budget

    @property
    def how(self) -> str:
        if self.exact is None:
            return f"unknown: {self.buckets_unknown} bucket(s) with overlapping sorted runs over the merge budget"
        return f"merged {self.buckets_merged} bucket(s)" if self.buckets_merged else "exact from the file layout"


def _raw_read(table: FileStoreTable) -> bool:
    """Java reads level > 0 files as they are (no merge): DV primary-key tables and first-row tables."""
    opts = table.options
    return (opts.deletion_vectors_enabled and not opts.get(DELETION_VECTORS_MERGE_ON_READ))\
        or opts.merge_engine == "first-row"


def _one_sorted_run(files: list[LiveFile]) -> bool:
    if any(f.meta.delete_row_count != 0 for f in files):  # None (pre-0.9 files): unknown, so not exact
        return False
    return len(files) <= 1 or (len({f.level for f in files}) == 1 and files[0].level > 0)


def count_rows(table: FileStoreTable, scanner: TableScanner | None = None, *, merge_budget: int = MERGE_BUDGET_BYTES,
               snapshot_id: int | None = None, result: ScanResult | None = None) -> RowCount:
    """The row count of the latest snapshot (or of snapshot `snapshot_id`, or of `result`, an already scanned
    snapshot); see the module doc."""
    scanner = scanner or TableScanner(table)
    if result is None:
        result = scanner.scan(table.snapshots.snapshot(snapshot_id)) if snapshot_id is not None\
            else scanner.scan_latest()
    if result is None:
        return RowCount(None, 0, 0)

    def deleted(f: LiveFile) -> int:
        hit = result.dv_of(f)
        if hit is None:
            return 0
        card = hit[1].cardinality
        return card if card is not None else scanner.deletion_vector(*hit).cardinality  # pre-0.9 index manifests

    before = exact = merged = merged_bytes = unknown = 0
    pk, raw = table.is_primary_key, _raw_read(table)
    to_merge: list[list[LiveFile]] = []
    for (_, bucket), files in result.buckets().items():
        before += sum(f.meta.row_count - deleted(f) for f in files)
        if bucket == POSTPONE_BUCKET:
            continue
        if not pk:
            exact += sum(f.meta.row_count - deleted(f) for f in files)
        elif raw:
            exact += sum(f.meta.row_count - deleted(f) for f in files if f.level > 0)
        elif _one_sorted_run(files):
            exact += sum(f.meta.row_count for f in files)
        else:
            to_merge.append(files)
    for files in sorted(to_merge, key=lambda fs: sum(f.meta.file_size for f in fs)):
        size = sum(f.meta.file_size for f in files)
        if merged_bytes + size > merge_budget:
            unknown += 1
            continue
        exact += _merged_rows(table, scanner, result, files)
        merged += 1
        merged_bytes += size
    return RowCount(result.snapshot.id, before, None if unknown else exact, merged, merged_bytes, unknown)


def _merged_rows(table: FileStoreTable, scanner: TableScanner, result: ScanResult, files: list[LiveFile]) -> int:
    """Rows of one bucket after the merge engine (retractions dropped), as Java's merge-on-read batch read."""

    spec = MergeSpec.from_schema(table.schema, table.options, f"table {table.identifier}")
    parts = []
    for f in files:
        hit = result.dv_of(f)
        rows = read_file(scanner, f, scanner.deletion_vector(*hit) if hit else None)
        parts.append(rows.append_column("_LEVEL", pa.array(np.full(rows.num_rows, f.level, np.int32))))
    records = pa.concat_tables(parts, promote_options="default") if len(parts) > 1 else parts[0]
    return merge_records(records, spec, True).num_rows
