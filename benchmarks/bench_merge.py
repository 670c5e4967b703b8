"""Benchmark merge_records: 2M records over 1M keys per engine; prints rows/s.

Run: .venv/bin/python benchmarks/bench_merge.py [records] [keys]
"""
from __future__ import annotations

import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_ops.format.schema import TableSchema
from paimon_ops.format.types import DataField, parse_type
from paimon_ops.merge.merge import merge_records
from paimon_ops.merge.spec import MergeSpec
from paimon_ops.options import Options

FIELDS = [("id", "BIGINT NOT NULL"), ("name", "STRING"), ("amount", "BIGINT"), ("price", "DOUBLE"),
          ("ts", "TIMESTAMP(3)"), ("seq", "BIGINT")]


def make_schema(options: dict[str, str], key_type: str = "BIGINT NOT NULL") -> TableSchema:
    fields = tuple(DataField(i, n, parse_type(key_type if n == "id" else t)) for i, (n, t) in enumerate(FIELDS))
    return TableSchema(id=0, fields=fields, primary_keys=("id",), options=options)


def make_records(n: int, keys: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, keys, n)
    null = rng.random(n) < 0.2
    cols = {
        "id": pa.array(ids, pa.int64()),
        "name": pa.array(np.char.add("name-", (ids % 1000).astype(str)), pa.string(), mask=null),
        "amount": pa.array(rng.integers(0, 1000, n), pa.int64(), mask=rng.random(n) < 0.1),
        "price": pa.array(rng.random(n) * 100, pa.float64(), mask=null),
        "ts": pa.array(rng.integers(0, 10**12, n), pa.int64()).cast(pa.timestamp("ms")),
        "seq": pa.array(rng.integers(0, 100, n), pa.int64(), mask=rng.random(n) < 0.05),
        "_SEQUENCE_NUMBER": pa.array(rng.permutation(n), pa.int64()),
        "_VALUE_KIND": pa.array(np.where(rng.random(n) < 0.05, 2, 0), pa.int8()),
        "_LEVEL": pa.array(rng.integers(0, 3, n), pa.int32()),
    }
    return pa.table(cols)


CASES = {
    "deduplicate": {},
    "deduplicate+sequence.field": {"sequence.field": "seq"},
    "partial-update": {"merge-engine": "partial-update"},
    "partial-update+sequence-group": {"merge-engine": "partial-update", "fields.seq.sequence-group": "name,amount",
                                      "fields.amount.aggregate-function": "sum"},
    "aggregation": {"merge-engine": "aggregation", "fields.amount.aggregate-function": "sum",
                    "fields.price.aggregate-function": "max", "fields.name.aggregate-function": "listagg",
                    "fields.ts.aggregate-function": "last_value"},
    "aggregation+dv(lookup levels)": {"merge-engine": "aggregation", "fields.amount.aggregate-function": "sum",
                                      "fields.price.aggregate-function": "min", "deletion-vectors.enabled": "true"},
    "first-row": {"merge-engine": "first-row"},
}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    keys = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    records = make_records(n, keys)
    print(f"{n:,} records over {keys:,} keys")
    for name, opts in CASES.items():
        s = make_schema(opts)
        spec = MergeSpec.from_schema(s, Options(opts, "bench"), "table bench")
        t0, c0 = time.perf_counter(), time.process_time()
        out = merge_records(records, spec, drop_delete=True)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        # CPU time is printed too: wall time is noisy on a shared machine
        report(name, n, dt, cpu, out.num_rows)
    # string keys take Arrow's multi-column sort instead of the packed integer sort
    skeys = records.set_column(0, "id", pc.cast(records.column("id"), pa.string()))
    s = make_schema({}, "STRING NOT NULL")
    spec = MergeSpec.from_schema(s, Options({}, "bench"), "table bench")
    t0, c0 = time.perf_counter(), time.process_time()
    out = merge_records(skeys, spec, drop_delete=True)
    report("deduplicate (STRING key)", n, time.perf_counter() - t0, time.process_time() - c0, out.num_rows)


def report(name: str, n: int, dt: float, cpu: float, rows: int) -> None:
    print(f"{name:34s} wall {dt:6.2f} s  {n / dt / 1e6:5.2f} M rows/s | cpu {cpu:6.2f} s  "
              f"{n / cpu / 1e6:5.2f} M rows/s  -> {rows:,} rows")


if __name__ == "__main__":
    main()
