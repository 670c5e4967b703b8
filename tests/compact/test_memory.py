"""Bounded-memory streaming merge: a bucket much larger than the budget is merged slice by slice by key range,
with the same result as an unbounded merge; output files roll at target-file-size with disjoint key ranges."""
from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa

import paimon_ops as po
from paimon_ops.format.binary_row import deserialize_row
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import create_table, write_rows
from tests import pypaimon_util as pu


def _big_table(warehouse: str, name: str, rows: int = 30_000, files: int = 4, options: dict | None = None) -> FileStoreTable:
    t = create_table(warehouse, name, [("k", "BIGINT"), ("s", "STRING"), ("v", "DOUBLE"), ("n", "INT")],
                     primary_keys=["k", "s"], options={"bucket": "1", "merge-engine": "aggregation",
                                                       "fields.v.aggregate-function": "sum",
                                                       "fields.n.aggregate-function": "max", **(options or {})})
    rng = np.random.default_rng(7)
    for _ in range(files):
        ks = rng.integers(0, rows, rows)
        write_rows(t, {"k": ks, "s": np.char.add("s", (ks % 7).astype(str)).tolist(), "v": rng.random(rows),
                       "n": rng.integers(0, 1000, rows).astype(np.int32)})
    return t.refresh()


def test_budget_merge_equals_unbounded_merge(warehouse):
    t = _big_table(warehouse, "db.big", options={"target-file-size": "128 kb"})
    shutil.copytree(t.root, t.root + "_copy")
    t2 = FileStoreTable(t.root + "_copy")
    bytes_in = sum(f.meta.file_size for f in TableScanner(t).scan_latest().files)
    budget = 128 * 1024
    assert bytes_in > 4 * budget  # the bucket is several times the budget
    small = po.Table(t).maintenance.compact(memory_budget=budget).execute()
    big = po.Table(t2).maintenance.compact().execute()
    assert small.details["merge_slices"] > 10 * big.details["merge_slices"]
    a = pu.sorted_rows(pu.read(warehouse, "db.big"), ["k", "s"])
    rows_small = {(r["k"], r["s"]): r for r in a}
    # the copy is not registered in the catalog: read it with our raw reader (a single sorted run, no merging)
    from paimon_ops.table.reader import read_snapshot_raw
    raw = [rows for _, rows in read_snapshot_raw(TableScanner(t2), t2.refresh().snapshots.latest(),
                                                 keep_system_columns=False)]
    rows_big = {(r["k"], r["s"]): r for r in pa.concat_tables(raw).to_pylist()}
    assert rows_small.keys() == rows_big.keys()
    for k, r in rows_small.items():
        assert r["n"] == rows_big[k]["n"] and abs(r["v"] - rows_big[k]["v"]) < 1e-9
    files = TableScanner(t.refresh()).scan_latest().files
    assert len(files) > 3 and {f.level for f in files} == {5}
    key_types = [f.type for f in t.schema.fields_of(["k", "s"])]
    ranges = sorted((tuple(deserialize_row(f.meta.min_key, key_types)), tuple(deserialize_row(f.meta.max_key, key_types)))
                    for f in files)
    assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:]))  # disjoint, as level >= 1 requires
    assert sum(f.meta.row_count for f in files) == len(rows_small)
