"""Unit checks: streaming writer stats equal whole-file stats, JSON codecs, filters, bin-pack, bad input."""
from __future__ import annotations

import datetime as dt
import json
import math

import pyarrow as pa
import pytest

import paimon_ops as po
from paimon_ops.compact.filters import partition_predicate
from paimon_ops.compact.model import meta_from_json, meta_to_json
from paimon_ops.compact.planner import plan_compaction
from paimon_ops.compact.rolling import RollingWriter, WriteParams
from paimon_ops.errors import InvalidArgumentError, InvalidOptionError, PaimonOpsError
from paimon_ops.format.types import parse_type
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.writer import DataFileWriteSpec, FileNamer, create_table, write_file, write_rows

FIELDS = [("k", "INT"), ("s", "STRING"), ("f", "DOUBLE"), ("ts", "TIMESTAMP(6)"), ("d", "DECIMAL(10, 2)"),
          ("by", "BYTES")]


def _data(n: int = 40) -> pa.Table:
    long = "x" * 30
    return pa.table({
        "k": pa.array(range(n), pa.int32()),
        "s": [None if i % 5 == 0 else f"{long}{i:03d}" for i in range(n)],
        "f": [math.nan if i == 7 else (-0.0 if i == 3 else float(i) - 10) for i in range(n)],
        "ts": [dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i) if i % 3 else None for i in range(n)],
        "d": pa.array([None] * n, pa.decimal128(10, 2)),
        "by": [bytes([i % 256, 255]) if i % 4 else None for i in range(n)],
        "_SEQUENCE_NUMBER": pa.array(range(100, 100 + n), pa.int64()),
        "_VALUE_KIND": pa.array([3 if i % 9 == 0 else 0 for i in range(n)], pa.int8()),
    })


def test_streaming_writer_stats_equal_whole_file_stats(warehouse):
    t = create_table(warehouse, "db.w", FIELDS, primary_keys=["k"], options={"bucket": "1"})
    sc = TableScanner(t)
    spec = DataFileWriteSpec.of(t, sc)
    data = _data()
    cast = pa.table({c: data.column(c) for c in data.column_names})
    whole = write_file(t, sc, spec, FileNamer("data-", ".parquet"), cast, b"\0" * 12, 0, 5, 1)
    params = WriteParams(spec.fmt, spec.dense_stats, spec.legacy_key_stats, 1 << 30, 1 << 62, 1)  # 1 row group/chunk
    w = RollingWriter(t, sc, params, whole_partition(t), 0, 5)
    for off in range(0, data.num_rows, 7):
        w.write(cast.slice(off, 7))
    (meta,) = w.close()
    for field in ("row_count", "min_key", "max_key", "key_stats", "value_stats", "min_sequence_number",
                  "max_sequence_number", "delete_row_count", "value_stats_cols", "level", "file_source"):
        assert getattr(meta, field) == getattr(whole, field), field
    assert meta_from_json(json.loads(json.dumps(meta_to_json(meta)))) == meta
    # rolling by row count
    params = WriteParams(spec.fmt, spec.dense_stats, spec.legacy_key_stats, 1 << 30, 15, 1 << 20)
    w = RollingWriter(t, sc, params, whole_partition(t), 0, 5)
    w.write(cast)
    assert [m.row_count for m in w.close()] == [15, 15, 10]
    w.abort()
    assert not any(t.io.exists(p) for p in w.paths)


def whole_partition(t) -> bytes:
    from paimon_ops.format.binary_row import serialize_row
    return serialize_row([], [])


def test_where_parser():
    names, types = ["dt", "n"], [parse_type("STRING"), parse_type("INT")]
    pred = partition_predicate(names, types, "__DEFAULT_PARTITION__",
                               where="dt >= '2024-01-01' AND (n IN (1, 2) OR n IS NULL) AND NOT dt = '2024-01-05'")
    assert pred({"dt": "2024-01-02", "n": 1}) and pred({"dt": "2024-01-02", "n": None})
    assert not pred({"dt": "2023-12-31", "n": 1}) and not pred({"dt": "2024-01-05", "n": 2})
    assert not pred({"dt": "2024-01-02", "n": 3})
    p2 = partition_predicate(names, types, "x", partitions=[{"dt": "a", "n": "1"}, {"dt": "b"}])
    assert p2({"dt": "a", "n": 1}) and p2({"dt": "b", "n": 9}) and not p2({"dt": "a", "n": 2})
    for bad in ("v = 1", "dt = ", "dt ~ 'a'", "n = 'notanint'"):
        with pytest.raises(InvalidArgumentError):
            partition_predicate(names, types, "x", where=bad)


def test_bad_input_refused(warehouse):
    t = create_table(warehouse, "db.wo", [("k", "INT"), ("v", "STRING")], primary_keys=["k"],
                     options={"bucket": "1", "write-only": "true"})
    write_rows(t, {"k": [1], "v": ["a"]})
    write_rows(t, {"k": [1], "v": ["b"]})
    # write-only writers + a dedicated compaction job (us) is Paimon's recommended multi-writer deployment
    assert po.Table(t).maintenance.compact(mode="minor").execute().snapshot_id is None  # 2 sorted runs < num-sorted-run.compaction-trigger
    assert po.Table(t).maintenance.compact().execute().snapshot_id is not None
    bad_engine = create_table(warehouse, "db.be", [("k", "INT"), ("v", "STRING")], primary_keys=["k"],
                              options={"bucket": "1", "merge-engine": "no-such-engine"})
    with pytest.raises(InvalidOptionError, match="merge-engine"):
        plan_compaction(bad_engine)
    bad_agg = create_table(warehouse, "db.ba", [("k", "INT"), ("v", "STRING")], primary_keys=["k"],
                           options={"bucket": "1", "merge-engine": "aggregation",
                                    "fields.v.aggregate-function": "sum"})
    with pytest.raises(PaimonOpsError, match="v"):
        plan_compaction(bad_agg)
    unknown_fn = create_table(warehouse, "db.uf", [("k", "INT"), ("v", "INT")], primary_keys=["k"],
                              options={"bucket": "1", "merge-engine": "aggregation",
                                       "fields.v.aggregate-function": "no_such_fn"})
    with pytest.raises(PaimonOpsError, match="no_such_fn"):
        plan_compaction(unknown_fn)
    with pytest.raises(InvalidArgumentError, match="mode"):
        plan_compaction(bad_engine, mode="bogus")


def test_dry_run_and_plan_json(warehouse):
    t = create_table(warehouse, "db.dr", [("k", "INT"), ("v", "STRING")], primary_keys=["k"], options={"bucket": "2"})
    for i in range(3):
        write_rows(t, {"k": list(range(10)), "v": [str(i)] * 10})
    latest = t.snapshots.latest_id()
    r = po.Table(t).maintenance.compact().dry_run_report()
    assert r.dry_run and r.snapshot_id is None and t.snapshots.latest_id() == latest
    assert r.details["files_in"] == 6
    plan = plan_compaction(t)
    d = json.loads(plan.to_json())
    assert d["mode"] == "full" and len(d["tasks"]) == 2
    assert {"partition", "bucket", "files", "why"} <= set(d["tasks"][0])
    assert "full compaction" in str(plan)
