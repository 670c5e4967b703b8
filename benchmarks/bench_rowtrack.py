"""Compaction of row-tracking and data-evolution tables, beside the raw pyarrow rewrite of the same bytes.

Tables, written by pypaimon 2.1.0: `rt` (row tracking, --runs appends of --rows/--runs rows each) and `de` (data
evolution: the same appends, then one column update by row id over every row, so every row range holds two files).
Contenders, each on a fresh copy:

* paimon-ops full compaction, in-process (LocalRunner): `rt` concatenates the runs keeping `_ROW_ID` and
  `_SEQUENCE_NUMBER`; `de` merges every range's update into its rows and writes one file per bin;
* the raw pyarrow rewrite: read every input file (for `de`: the base file and the update file of each range, the
  updated column taken from the update; for `rt`: plus the `_ROW_ID` / `_SEQUENCE_NUMBER` columns we store) and
  write the result as zstd Parquet — "read + join + write the same bytes".

Printed: seconds, rows/s, and the ratio to the raw rewrite. Afterwards pypaimon reads the compacted tables: the
row count and the sum of `_ROW_ID` must equal the model's.

Run: .venv/bin/python benchmarks/bench_rowtrack.py [--rows 2000000] [--runs 8]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import paimon_ops as po  # noqa: E402
from paimon_ops.execution.runner import LocalRunner  # noqa: E402
from paimon_ops.table.scan import TableScanner  # noqa: E402
from paimon_ops.table.table import FileSystemCatalog  # noqa: E402
from tests import pypaimon_util as pu  # noqa: E402

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string()), ("v", pa.float64()), ("n", pa.int32())])


def build(wh: str, rows: int, runs: int) -> None:
    rng = np.random.default_rng(3)
    for ident, opts in (("db.rt", {"row-tracking.enabled": "true"}),
                        ("db.de", {"row-tracking.enabled": "true", "data-evolution.enabled": "true"})):
        pu.create_table(wh, ident, SCHEMA, options={**opts, "target-file-size": "1 gb"})
        per = rows // runs
        for r in range(runs):
            k = np.arange(r * per, (r + 1) * per, dtype=np.int64)
            pu.write(pu.get_table(wh, ident), pa.table({
                "k": k, "s": pa.array(np.char.add("s", (k % 1000).astype(str))), "v": rng.random(per),
                "n": (k % 97).astype(np.int32)}, schema=SCHEMA))
    t = pu.get_table(wh, "db.de")
    wb = t.new_batch_write_builder()
    c = wb.new_commit()
    upd = pa.table({"_ROW_ID": pa.array(np.arange(rows // runs * runs, dtype=np.int64)),
                    "v": pa.array(-np.arange(rows // runs * runs, dtype=np.float64))})
    c.commit(wb.new_update().with_update_type(["v"]).update_by_arrow_with_row_id(upd))
    c.close()


def raw(wh: str, ident: str) -> tuple[float, int]:
    table = FileSystemCatalog(wh).get_table(ident)
    res = TableScanner(table).scan(table.snapshots.latest())
    started = time.time()
    groups: dict[int, list] = {}
    for f in res.files:
        groups.setdefault(f.meta.first_row_id, []).append(f)
    parts = []
    for first in sorted(groups):
        fs = sorted(groups[first], key=lambda f: f.meta.max_sequence_number)
        base = pq.read_table(fs[0].path)
        for u in fs[1:]:  # the update's columns replace the base's
            upd = pq.read_table(u.path)
            for name in upd.column_names:
                base = base.set_column(base.schema.get_field_index(name), name, upd.column(name))
        if ident == "db.rt":  # the same bytes as ours: the row-id columns Java's layout stores
            n = base.num_rows
            base = base.append_column("_ROW_ID", pa.array(np.arange(first, first + n, dtype=np.int64)))
            base = base.append_column("_SEQUENCE_NUMBER", pa.array(np.full(n, fs[0].meta.max_sequence_number)))
        parts.append(base)
    out = pa.concat_tables(parts)
    pq.write_table(out, os.path.join(tempfile.gettempdir(), "bench-rowtrack-raw.parquet"), compression="zstd",
                   compression_level=1)
    return time.time() - started, out.num_rows


def ours(wh: str, ident: str) -> tuple[float, int]:
    started = time.time()
    r = po.Table(FileSystemCatalog(wh).get_table(ident)).maintenance.compact(mode="full").execute(runner=LocalRunner())
    return time.time() - started, int(r.details["rows_out"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", type=int, default=8)
    args = ap.parse_args()
    top = tempfile.mkdtemp(prefix="bench-rowtrack-")
    try:
        src = os.path.join(top, "src")
        os.makedirs(src)
        t0 = time.time()
        build(src, args.rows, args.runs)
        print(f"pypaimon wrote {args.rows} rows x 2 tables in {time.time() - t0:.1f} s")
        n = args.rows // args.runs * args.runs
        for ident in ("db.rt", "db.de"):
            a, b = os.path.join(top, f"{ident}-a"), os.path.join(top, f"{ident}-b")
            shutil.copytree(src, a)
            shutil.copytree(src, b)
            raw_s, raw_rows = raw(a, ident)
            our_s, our_rows = ours(b, ident)
            assert raw_rows == our_rows == n, (raw_rows, our_rows, n)
            got = pu.read(b, ident, projection=["k", "_ROW_ID"])
            assert got.num_rows == n and pc.sum(got.column("_ROW_ID")).as_py() == n * (n - 1) // 2
            print(f"{ident}: paimon-ops {our_s:.2f} s ({n / our_s:,.0f} rows/s), raw pyarrow {raw_s:.2f} s "
                  f"({n / raw_s:,.0f} rows/s), ratio {raw_s / our_s:.2f}x of raw")
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
