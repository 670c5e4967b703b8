"""Helpers shared by the interop proof tests: value conversion to the Java harness' JSON conventions,
our scan rendered like the harness' ``scan`` answer, and small reference merges for raw-row checks."""
from __future__ import annotations

import base64
import datetime as dt
import json
import os
from decimal import Decimal
from typing import Any, Iterable

import pyarrow as pa

from paimon_ops.format.binary_row import deserialize_row
from paimon_ops.format.datafile import SEQUENCE_NUMBER, VALUE_KIND
from paimon_ops.table.reader import read_file
from paimon_ops.table.scan import ScanResult, TableScanner
from paimon_ops.table.table import FileStoreTable

FILE_SOURCE = {0: "APPEND", 1: "COMPACT", None: None}


# ---------------------------------------------------------------------------------------------- values


def jv(v: Any) -> Any:
    """A Python/Arrow value in the harness' JSON convention (see tests/interop/java_harness.py)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v
    if isinstance(v, Decimal):
        return format(v, "f")
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, dt.datetime):
        base = v.strftime("%Y-%m-%d %H:%M:%S")
        return base if v.microsecond == 0 else f"{base}.{v.microsecond:06d}"
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, dt.time):
        return v.isoformat()
    if isinstance(v, dict):  # ROW read by pyarrow as struct
        return [jv(x) for x in v.values()]
    if isinstance(v, list):
        if v and isinstance(v[0], tuple) and len(v[0]) == 2:  # MAP as list of (key, value)
            return [[jv(k), jv(x)] for k, x in v]
        return [jv(x) for x in v]
    raise TypeError(f"no JSON convention for {type(v).__name__}: {v!r}")


def rows_of(t: pa.Table, columns: list[str] | None = None) -> list[list]:
    cols = columns or t.column_names
    data = t.select(cols).to_pylist()
    return [[jv(r[c]) for c in cols] for r in data]


def canon(rows: Iterable[list]) -> list[list]:
    """Order-free comparison form (sorted by JSON text)."""
    return sorted((list(r) for r in rows), key=lambda r: json.dumps(r, sort_keys=True))


# ---------------------------------------------------------------------------------------------- scans


def our_scan(table: FileStoreTable, snapshot_id: int | None = None, tag: str | None = None) -> tuple[TableScanner, ScanResult]:
    scanner = TableScanner(table)
    if tag is not None:
        return scanner, scanner.scan_tag(tag)
    snap = table.snapshots.snapshot(snapshot_id) if snapshot_id is not None else table.snapshots.latest()
    return scanner, scanner.scan(snap)


def our_files_as_java(table: FileStoreTable, scanner: TableScanner, result: ScanResult) -> list[dict]:
    """Our scan in the shape (and conventions) of the harness' ``files`` list."""
    schema = table.schema
    ptypes = [f.type for f in schema.fields_of(schema.partition_keys)]
    ktypes = [f.type for f in schema.fields_of(schema.trimmed_primary_keys)] if schema.primary_keys else None
    out = []
    for f in result.files:
        m = f.meta
        pp = scanner.partition_dir(f.partition).rstrip("/")
        rec = {
            "partition": [jv(v) for v in deserialize_row(f.partition, ptypes)],
            "partition_path": pp,
            "bucket": f.bucket,
            "level": m.level,
            "file_name": m.file_name,
            "file_path": (pp + "/" if pp else "") + f"bucket-{f.bucket}/{m.file_name}",
            "row_count": m.row_count,
            "file_size": m.file_size,
            "min_seq": m.min_sequence_number,
            "max_seq": m.max_sequence_number,
            "delete_row_count": m.delete_row_count,
            "schema_id": m.schema_id,
            "total_buckets": f.total_buckets,
            "file_source": FILE_SOURCE[m.file_source],
            "creation_time_ms": m.creation_time,
            "extra_files": list(m.extra_files),
            "min_key": [jv(v) for v in deserialize_row(m.min_key, ktypes)] if ktypes else None,
            "max_key": [jv(v) for v in deserialize_row(m.max_key, ktypes)] if ktypes else None,
        }
        # the physical path our scanner resolves must be the one Java computes
        assert f.path == os.path.join(table.root, rec["file_path"]), (f.path, rec["file_path"])
        out.append(rec)
    return out


JAVA_FILE_KEYS = ("partition", "partition_path", "bucket", "level", "file_name", "file_path", "row_count",
                  "file_size", "min_seq", "max_seq", "delete_row_count", "schema_id", "total_buckets", "file_source",
                  "creation_time_ms", "extra_files", "min_key", "max_key")


def java_files(scan: dict) -> list[dict]:
    return [{k: f[k] for k in JAVA_FILE_KEYS} for f in scan["files"]]


def by_name(files: list[dict]) -> dict[str, dict]:
    out = {f["file_name"]: f for f in files}
    assert len(out) == len(files), "duplicate file names in a scan"
    return out


def our_index_as_java(table: FileStoreTable, scanner: TableScanner, result: ScanResult) -> list[dict]:
    schema = table.schema
    ptypes = [f.type for f in schema.fields_of(schema.partition_keys)]
    out = []
    for ie in result.index_entries:
        ranges = None
        if ie.dv_ranges is not None:
            ranges = []
            for r in ie.dv_ranges:
                dv = scanner.deletion_vector(ie, r)
                if r.cardinality is not None:  # 1.0+ manifests record it; 0.9 ones do not
                    assert r.cardinality == dv.cardinality
                ranges.append({"data_file": r.data_file, "offset": r.offset, "length": r.length,
                               "cardinality": dv.cardinality, "positions": dv.positions().tolist()})
        out.append({
            "partition": [jv(v) for v in deserialize_row(ie.partition, ptypes)],
            "partition_path": scanner.partition_dir(ie.partition).rstrip("/"),
            "bucket": ie.bucket, "index_type": ie.index_type, "file_name": ie.file_name,
            "file_size": ie.file_size, "row_count": ie.row_count, "dv_ranges": ranges,
        })
    return sorted(out, key=lambda i: i["file_name"])


def java_index(scan: dict) -> list[dict]:
    out = []
    for i in scan["index_files"]:
        i = dict(i)
        if i["dv_ranges"] is not None:
            i["dv_ranges"] = [dict(r) for r in i["dv_ranges"]]
        out.append(i)
    return sorted(out, key=lambda i: i["file_name"])


# ---------------------------------------------------------------------------------------------- raw rows


def raw_rows(table: FileStoreTable, scanner: TableScanner, result: ScanResult, min_level: int = 0,
             system: bool = False) -> list[tuple[Any, list[list]]]:
    """(LiveFile, rows) per live file, DVs applied; rows in schema order (+ seq and kind when `system`)."""
    names = table.schema.field_names
    out = []
    for f in result.files:
        if f.level < min_level:
            continue
        hit = result.dv_of(f)
        dv = scanner.deletion_vector(*hit) if hit else None
        t = read_file(scanner, f, dv, keep_system_columns=system)
        cols = names + ([SEQUENCE_NUMBER, VALUE_KIND] if system else [])
        out.append((f, rows_of(t, cols)))
    return out


def merge_rows(table: FileStoreTable, per_file: list[tuple[Any, list[list]]], engine: str,
               agg: dict[str, str] | None = None) -> list[list]:
    """Reference merge of raw rows (schema columns + seq + kind) for the engines the tests use."""
    names = table.schema.field_names
    key_idx = [names.index(k) for k in table.schema.primary_keys]
    n = len(names)
    records = sorted((r for _, rows in per_file for r in rows), key=lambda r: r[n])  # by sequence number
    state: dict[tuple, list | None] = {}
    for r in records:
        key = tuple(r[i] for i in key_idx)
        vals, kind = r[:n], r[n + 1]
        retract = kind in (1, 3)
        prev = state.get(key)
        if engine in ("deduplicate", "pk"):
            state[key] = None if retract else vals
        elif engine == "first-row":
            if key not in state and not retract:
                state[key] = vals
        elif engine == "partial-update":
            assert not retract
            state[key] = vals if prev is None else [v if v is not None else p for v, p in zip(vals, prev)]
        elif engine == "aggregation":
            assert not retract
            if prev is None:
                state[key] = vals
            else:
                merged = []
                for i, (v, p) in enumerate(zip(vals, prev)):
                    fn = (agg or {}).get(names[i], "last_non_null_value")
                    if i in key_idx:
                        merged.append(v)
                    elif v is None or p is None:
                        merged.append(p if v is None else v)
                    elif fn == "sum":
                        merged.append(v + p)
                    elif fn == "max":
                        merged.append(max(v, p))
                    else:
                        merged.append(v)
                state[key] = merged
        else:
            raise ValueError(engine)
    return [v for v in state.values() if v is not None]
