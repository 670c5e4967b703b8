"""Full compaction on a real Spark standalone cluster (Master + Workers on 127.0.0.1, each its own JVM) with one, then
two single-core workers: does the Spark path scale (near-linear from 1 to 2 workers)?

The same generated table as bench_compaction.py (primary key, --buckets buckets, --runs overlapping level-0 runs).
Per cluster size, one session (spark.executor.cores 1, spark.cores.max = workers): a first compaction on one copy
(executors start, Python workers import), then the measured one on a fresh copy. Printed: seconds, rows/s and the
speed-up. On a machine with N cores, more than N single-core workers cannot scale: the benchmark uses two.

Run: .venv/bin/python benchmarks/bench_spark_scaling.py [--rows 5000000] [--buckets 4] [--runs 10]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

from bench_compaction import build, copy  # noqa: E402

from paimon_ops.compact.planner import plan_compaction  # noqa: E402
from paimon_ops.execution.executor import execute  # noqa: E402
from paimon_ops.execution.runner import SparkRunner  # noqa: E402
from paimon_ops.execution.spark_session import local_spark  # noqa: E402
from tests.spark_cluster import StandaloneCluster  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-scaling-"))
    try:
        print(f"building {args.rows:,} rows, {args.buckets} buckets, {args.runs} overlapping runs ...")
        build(str(work / "src"), args.rows, args.buckets, args.runs)
        times: dict[int, float] = {}
        with StandaloneCluster(work / "cluster") as cluster:
            for n in range(1, args.workers + 1):
                cluster.add_worker(cores=1, memory="3g")
                spark = local_spark(cluster.url, f"bench-scaling-{n}", {
                    "spark.executor.cores": "1", "spark.executor.memory": "2g", "spark.cores.max": str(n)})
                runner = SparkRunner(spark)
                first = copy(work / "src", work / f"first-{n}")
                t0 = time.perf_counter()
                execute(plan_compaction(first), first, runner=runner)
                warmup = time.perf_counter() - t0
                table = copy(work / "src", work / f"measured-{n}")
                t0 = time.perf_counter()
                report = execute(plan_compaction(table), table, runner=runner)
                times[n] = time.perf_counter() - t0
                spark.stop()
                print(f"{n} worker(s) x 1 core: {times[n]:6.2f}s  ({args.rows / times[n] / 1e6:.2f} M rows/s; "
                      f"first run with executor start {warmup:.2f}s; {report.details.get('tasks')} tasks, "
                      f"{report.details.get('task_seconds')}s summed)")
        base = times[1]
        for n, t in times.items():
            if n > 1:
                print(f"speed-up 1 -> {n} workers: {base / t:.2f}x (linear: {n}x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
