"""Spark scaling: the same full compaction (several buckets, one task each) on local[1] vs local[2].

Each run gets a fresh copy of the table and a fresh SparkSession; the session start-up is excluded, the first
Spark job's warm-up is not (it is part of what a maintenance run pays).

Run: .venv/bin/python benchmarks/bench_spark_scaling.py [rows_per_bucket_file] [buckets] [files]
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from paimon_ops.compact import compact  # noqa: E402
from paimon_ops.runner import SparkRunner, local_spark  # noqa: E402
from paimon_ops.table.table import Table  # noqa: E402
from paimon_ops.table.writer import create_table, write_rows  # noqa: E402


def build(warehouse: str, rows: int, buckets: int, files: int) -> str:
    t = create_table(warehouse, "db.scale", [("k", "BIGINT"), ("s", "STRING"), ("v", "DOUBLE")],
                     primary_keys=["k"], options={"bucket": str(buckets)})
    rng = np.random.default_rng(3)
    for _ in range(files):
        ks = rng.integers(0, rows * buckets * 2, rows * buckets)
        write_rows(t.refresh(), {"k": ks, "s": np.char.add("v-", (ks % 997).astype(str)).tolist(),
                                 "v": rng.random(len(ks))})
    return t.root


def run(master: str, source: str, scratch: str) -> float:
    target = os.path.join(scratch, master.replace("[", "_").replace("]", ""))
    shutil.copytree(source, target)
    spark = local_spark(master, f"bench-{master}")
    try:
        t0 = time.perf_counter()
        report = compact(Table(target), mode="full", runner=SparkRunner(spark))
        elapsed = time.perf_counter() - t0
        print(f"{master:>9}: {elapsed:6.2f} s  ({report.details['rows_in']:,} rows in, "
              f"{report.details['rows_in'] / elapsed:,.0f} rows/s, {report.details.get('buckets', '?')} buckets)")
        return elapsed
    finally:
        spark.stop()


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    buckets = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    files = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    with tempfile.TemporaryDirectory() as d:
        source = build(os.path.join(d, "wh"), rows, buckets, files)
        one = run("local[1]", source, d)
        two = run("local[2]", source, d)
        print(f"speed-up 2 cores vs 1: {one / two:.2f}x (machine has {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
