"""Read-only inspection of a table for the Python API (`Table.snapshots()`, `.files()`, `.health()`): what the CLI's
`snapshots` / `files` commands and the Dagster checks show, as typed rows or an Arrow table. Metadata only, except
the exact row count, which may merge overlapping buckets within its byte budget (`paimon_ops.rowcount`)."""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import Iterable

import pyarrow as pa

from paimon_ops.features import Gate
from paimon_ops.health import FileHealth, Retention, measure_files, measure_retention, refused_operations
from paimon_ops.rowcount import RowCount, count_rows
from paimon_ops.table.scan import ScanResult, TableScanner
from paimon_ops.table.table import FileStoreTable


def _utc(millis: int | None) -> _dt.datetime | None:
    return None if millis is None else _dt.datetime.fromtimestamp(millis / 1000, tz=_dt.timezone.utc)


@dataclass(frozen=True)
class SnapshotInfo:
    id: int
    commit_kind: str  # APPEND | COMPACT | OVERWRITE | ANALYZE
    committed_at: _dt.datetime  # timezone-aware (UTC)
    schema_id: int
    commit_user: str
    commit_identifier: int
    total_record_count: int | None  # file rows, before merging (Paimon's own figure)
    delta_record_count: int | None
    changelog_record_count: int | None
    watermark: int | None


def snapshots(table: FileStoreTable) -> list[SnapshotInfo]:
    """Every live snapshot, oldest first."""
    return [SnapshotInfo(s.id, s.commit_kind, _utc(s.time_millis), s.schema_id,  # type: ignore[arg-type]
                         s.commit_user, s.commit_identifier, s.total_record_count, s.delta_record_count,
                         s.changelog_record_count, s.watermark)
            for s in table.snapshots.iter_snapshots()]


FILE_FIELDS = [
    pa.field("partition", pa.string()),  # the partition's directory ("" unpartitioned)
    pa.field("bucket", pa.int32()), pa.field("level", pa.int32()), pa.field("file", pa.string()),
    pa.field("path", pa.string()), pa.field("rows", pa.int64()), pa.field("size", pa.int64()),
    pa.field("deleted_rows", pa.int64()),  # deletion-vector cardinality (0 without one)
    pa.field("delete_row_count", pa.int64()),  # retract rows the writer recorded (null: not recorded, pre-0.9)
    pa.field("min_sequence_number", pa.int64()), pa.field("max_sequence_number", pa.int64()),
    pa.field("schema_id", pa.int64()),
    pa.field("creation_time", pa.timestamp("ms")),  # Paimon's _CREATION_TIME: the writer's local wall clock
]


def files(table: FileStoreTable, snapshot_id: int | None = None, tag: str | None = None) -> pa.Table:
    """The live data files of the latest snapshot (or `snapshot_id`, or `tag`), one row each, sorted by partition,
    bucket, level and name; partitioned tables add `partition_values`, a struct of the typed partition values."""
    scanner = TableScanner(table)
    result: ScanResult | None
    if tag is not None:
        result = scanner.scan_tag(tag)
    else:
        snap = table.snapshots.snapshot(snapshot_id) if snapshot_id is not None else table.snapshots.latest()
        result = scanner.scan(snap) if snap is not None else None
    schema = pa.schema(FILE_FIELDS)
    if result is None:
        return schema.empty_table()
    rows = sorted(result.files, key=lambda f: (scanner.partition_dir(f.partition), f.bucket, f.level, f.name))
    cols: dict[str, list] = {f.name: [] for f in FILE_FIELDS}
    for f in rows:
        hit = result.dv_of(f)
        card = 0
        if hit is not None:
            card = hit[1].cardinality if hit[1].cardinality is not None else scanner.deletion_vector(*hit).cardinality
        m = f.meta
        for k, v in (("partition", scanner.partition_dir(f.partition).rstrip("/")), ("bucket", f.bucket),
                     ("level", f.level), ("file", f.name), ("path", f.path), ("rows", m.row_count),
                     ("size", m.file_size), ("deleted_rows", card), ("delete_row_count", m.delete_row_count),
                     ("min_sequence_number", m.min_sequence_number), ("max_sequence_number", m.max_sequence_number),
                     ("schema_id", m.schema_id), ("creation_time", m.creation_time)):
            cols[k].append(v)
    out = pa.Table.from_pydict(cols, schema=schema)
    keys = list(table.schema.partition_keys)
    if keys:
        values = [dict(zip(keys, scanner.partition_values(f.partition))) for f in rows]
        out = out.append_column("partition_values", pa.array(values) if values else pa.nulls(0))
    return out


@dataclass(frozen=True)
class TableHealth:
    """What the checks measure, in one object: rows (exact when known), files per bucket (level-0 / small files,
    deletion-vector ratios), snapshot retention, and the operations the feature gate refuses."""
    table: str
    snapshot_id: int | None
    rows: RowCount
    files: FileHealth
    retention: Retention
    refused_operations: dict[str, str]

    @property
    def row_count(self) -> int | None:
        """The exact row count of the latest snapshot (None: unknown within the merge budget)."""
        return self.rows.exact

    @property
    def compaction_due(self) -> bool:
        return bool(self.files.small_over or self.files.dv_over)

    @property
    def expiry_due(self) -> bool:
        return self.retention.over


def health(table: FileStoreTable, gates: Iterable[Gate], merge_budget: int = 0,
           now_millis: int | None = None) -> TableHealth:
    """Measure the latest snapshot. `merge_budget`: data bytes the row count may read to merge overlapping buckets
    (0: metadata only — the count is then unknown where level-0 files overlap); `gates`: the feature gates of the
    operations whose refusal to report (`api.routine_gates`)."""
    scanner = TableScanner(table)
    result = scanner.scan_latest()
    rows = count_rows(table, scanner, merge_budget=merge_budget, result=result) if result is not None\
        else RowCount(None, 0, 0)
    fh = measure_files(table, scanner)
    return TableHealth(table.identifier, fh.snapshot_id, rows, fh, measure_retention(table, now_millis),
                       refused_operations(table, gates))


__all__ = ["SnapshotInfo", "snapshots", "files", "FILE_FIELDS", "TableHealth", "health"]
