"""Full-compaction peak memory under a budget (and single-bucket throughput beside a plain pyarrow rewrite).

1. Throughput: a primary-key bucket of N files (overlapping keys, deduplicate) is fully compacted; rows/s and MB/s
   are printed next to a plain pyarrow read + write of the same files (the practical limit on this machine), and
   as a ratio to it.
2. Peak memory: the same compaction in a fresh process with `memory_budget` several times smaller than the bucket
   (Arrow size), compared with an unbounded run and with the process's idle RSS after imports. Input files here
   have one row group each (as Java's 128 MB row groups would): the Parquet reader holds a whole column chunk of
   every open file, which is outside the budget (see the note in paimon_ops/compact/rewrite.py).

Run: .venv/bin/python benchmarks/bench_memory.py [rows_per_file] [files] [budget_mb]
(Every execution path beside Java 0.9 is benchmarks/bench_compaction.py.)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from paimon_ops.table.scan import TableScanner  # noqa: E402
from paimon_ops.table.table import FileStoreTable  # noqa: E402
from paimon_ops.table.writer import create_table, write_rows  # noqa: E402


def build(warehouse: str, rows: int, files: int) -> FileStoreTable:
    t = create_table(warehouse, "db.bench", [("k", "BIGINT"), ("s", "STRING"), ("v", "DOUBLE"), ("n", "INT")],
                     primary_keys=["k"], options={"bucket": "1"})
    rng = np.random.default_rng(1)
    for _ in range(files):
        ks = rng.integers(0, rows * 2, rows)
        write_rows(t, {"k": ks, "s": np.char.add("value-", (ks % 1000).astype(str)).tolist(),
                       "v": rng.random(rows), "n": rng.integers(0, 1 << 30, rows).astype(np.int32)})
    return t.refresh()


def pyarrow_baseline(paths: list[str], out_dir: str) -> float:
    t0 = time.perf_counter()
    tables = [pq.read_table(p) for p in paths]
    data = pa.concat_tables(tables)
    pq.write_table(data, os.path.join(out_dir, "baseline.parquet"), compression="zstd", compression_level=1)
    return time.perf_counter() - t0


# VmHWM, not ru_maxrss: ru_maxrss survives fork + exec, so a child would report the parent's peak.
CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[3])
def hwm_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
import paimon_ops as po
import paimon_ops.merge, pyarrow.parquet, pyarrow.orc
idle = hwm_kb()
budget = int(sys.argv[2]) or None
t0 = time.perf_counter()
from paimon_ops.execution.runner import LocalRunner
r = po.Table.open(sys.argv[1]).maintenance.compact(memory_budget=budget).execute(runner=LocalRunner(workers=1))
import pyarrow as pa
print(json.dumps({"idle_kb": idle, "peak_kb": hwm_kb(), "arrow_peak": pa.default_memory_pool().max_memory(),
                  "seconds": time.perf_counter() - t0, "slices": r.details["merge_slices"],
                  "rows_out": r.details["rows_out"]}))
"""


def child_run(table_root: str, budget: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, table_root, str(budget), str(Path(__file__).resolve().parents[1])],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    files = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    budget_mb = int(sys.argv[3]) if len(sys.argv) > 3 else 32
    import paimon_ops as po

    with tempfile.TemporaryDirectory() as tmp:
        wh = os.path.join(tmp, "wh")
        os.makedirs(wh)
        t = build(wh, rows, files)
        live = TableScanner(t).scan_latest().files
        paths = [f.path for f in live]
        size = sum(f.meta.file_size for f in live)
        nrows = sum(f.meta.row_count for f in live)
        arrow_bytes = sum(pq.read_table(p).nbytes for p in paths)
        base_s = pyarrow_baseline(paths, tmp)
        # copies for the memory runs (each compaction consumes its input)
        import shutil
        for name in ("budget", "unbounded"):
            shutil.copytree(t.root, t.root + "_" + name)
        t0 = time.perf_counter()
        from paimon_ops.execution.runner import LocalRunner
        report = po.Table(t).maintenance.compact().execute(runner=LocalRunner(workers=1))
        ours_s = time.perf_counter() - t0
        mb = size / (1 << 20)
        print(f"input: {files} files, {nrows:,} rows, {mb:.1f} MiB on disk, {arrow_bytes / (1 << 20):.1f} MiB as Arrow")
        print(f"pyarrow read+write : {nrows / base_s:,.0f} rows/s  {mb / base_s:.1f} MB/s  ({base_s:.2f} s)")
        print(f"full compaction    : {nrows / ours_s:,.0f} rows/s  {mb / ours_s:.1f} MB/s  ({ours_s:.2f} s), "
              f"{report.details['rows_out']:,} rows out")
        print(f"ratio to pyarrow   : {base_s / ours_s:.2f}")
        budget = budget_mb << 20
        b = child_run(t.root + "_budget", budget)
        u = child_run(t.root + "_unbounded", 0)
        print(f"memory budget {budget_mb} MiB (bucket is {arrow_bytes / budget:.1f}x the budget as Arrow):")
        print(f"  idle RSS after imports : {b['idle_kb'] / 1024:.0f} MiB")
        print(f"  peak RSS with budget   : {b['peak_kb'] / 1024:.0f} MiB (+{(b['peak_kb'] - b['idle_kb']) / 1024:.0f} MiB), "
              f"{b['slices']} slices, {b['seconds']:.2f} s; Arrow pool peak {b['arrow_peak'] / (1 << 20):.0f} MiB")
        print(f"  peak RSS unbounded     : {u['peak_kb'] / 1024:.0f} MiB (+{(u['peak_kb'] - u['idle_kb']) / 1024:.0f} MiB), "
              f"{u['slices']} slices, {u['seconds']:.2f} s; Arrow pool peak {u['arrow_peak'] / (1 << 20):.0f} MiB")


if __name__ == "__main__":
    main()
