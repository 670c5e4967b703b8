"""Per-partition statistics of one commit's delta, as a catalog that owns the table's history receives them (the
REST catalog's `POST …/commit`, `PartitionStatistics` in the OpenAPI spec).

Java: `FileStoreCommitImpl` passes `PartitionEntry.merge(deltaFiles)` → `toPartitionStatistics`: per partition of
the delta, the sum of ADD minus DELETE row counts, file sizes and file counts, the newest file creation time and the
bucket count, keyed by the partition spec as `InternalRowPartitionComputer.generatePartValues` spells it (strings,
null or blank values as `partition.default-name`). The row counts add up to the snapshot's `deltaRecordCount`.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any, Iterable

from paimon_ops.format.binary_row import deserialize_row
from paimon_ops.format.manifest import FileKind, ManifestEntry
from paimon_ops.format.partition import partition_spec


def _epoch_millis(creation_time: int | None) -> int:
    """`DataFileMeta.creationTimeEpochMillis`: the stored value is the writer's local wall clock written as if it
    were UTC; Java reads it back as local time in its own zone (so do we, in this process's zone)."""
    if creation_time is None:
        return 0
    naive = _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=creation_time)
    return int(naive.astimezone().timestamp() * 1000)


def partition_statistics(table: Any, entries: Iterable[ManifestEntry]) -> list[dict[str, Any]]:
    """[{spec, recordCount, fileSizeInBytes, fileCount, lastFileCreationTime, totalBuckets}] of `entries` (a
    commit's data delta), one per partition in first-seen order."""
    schema = table.schema
    keys = list(schema.partition_keys)
    types = [f.type for f in schema.fields_of(keys)]
    opts = table.options
    legacy, default_name = opts.partition_legacy_name, opts.partition_default_name
    out: dict[bytes, dict[str, Any]] = {}
    for e in entries:
        sign = -1 if e.kind == FileKind.DELETE else 1
        st = out.get(e.partition)
        if st is None:
            values = deserialize_row(e.partition, types, f"partition of {table.identifier}") if keys else []
            st = out[e.partition] = {"spec": partition_spec(values, keys, types, legacy, default_name),
                                     "recordCount": 0, "fileSizeInBytes": 0, "fileCount": 0,
                                     "lastFileCreationTime": 0, "totalBuckets": e.total_buckets}
        st["recordCount"] += sign * e.file.row_count
        st["fileSizeInBytes"] += sign * e.file.file_size
        st["fileCount"] += sign
        st["lastFileCreationTime"] = max(st["lastFileCreationTime"], _epoch_millis(e.file.creation_time))
        st["totalBuckets"] = e.total_buckets
    return list(out.values())


__all__ = ["partition_statistics"]
