"""Postpone-bucket compaction and rescale of one generated table, in one run.

Table: a primary-key postpone-bucket table (`bucket = -2`, `postpone.default-bucket-num` = --buckets) written by
pypaimon 2.1.0 in --commits commits of random keys (a key space of 0.8 x --rows, so later commits update earlier
rows): Avro files in `bucket-postpone`, as Paimon's postpone writers write them.

Contenders, each on its own copy of the table:

* `paimon-ops compact-postpone WH db.t` — the **default CLI path** (placement decides), wall time of the whole
  process (interpreter start and imports included);
* the same plan executed in this process (LocalRunner): the engine alone;
* the raw rewrite of the same bytes: every postpone file decoded (fastavro, as any Python reader must: pyarrow has
  no Avro reader) into Arrow and written back as one zstd Parquet file — no routing, sorting or merging; the
  practical limit of "read + write these bytes" here.

Then the compacted table is rescaled from --buckets to --rescale-to buckets on the default CLI path, beside the raw
rewrite of its Parquet files (pyarrow read + zstd write).

Printed: seconds, rows/s, and the ratios (goal: postpone compaction on the default path >= 0.8x the raw rewrite).
Afterwards pypaimon reads the compacted and the rescaled table: the same row count and digest.

Run: .venv/bin/python benchmarks/bench_postpone.py [--rows 5000000] [--buckets 4] [--commits 5] [--rescale-to 8]
"""
from __future__ import annotations

import argparse
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from paimon_ops.compact.postpone import plan_postpone_compaction  # noqa: E402
from paimon_ops.execution.plan import human_bytes  # noqa: E402
from paimon_ops.execution.runner import LocalRunner  # noqa: E402
from paimon_ops.table.table import FileStoreTable  # noqa: E402
from tests import pypaimon_util as pu  # noqa: E402

SCHEMA = pa.schema([("k", pa.int64()), ("s", pa.string()), ("v", pa.float64()), ("n", pa.int32())])
CLI = [sys.executable, "-m", "paimon_ops.cli"]


def build(warehouse: str, rows: int, buckets: int, commits: int) -> None:
    t = pu.create_table(warehouse, "db.t", SCHEMA, primary_keys=["k"],
                        options={"bucket": "-2", "postpone.default-bucket-num": str(buckets)})
    rng = np.random.default_rng(19)
    per = rows // commits
    for _ in range(commits):
        k = rng.integers(0, int(rows * 0.8), per, dtype=np.int64)
        data = pa.table({"k": k, "s": pa.array([f"s{x % 100_000}" for x in k.tolist()]),
                         "v": rng.random(per), "n": rng.integers(0, 1000, per, dtype=np.int32)}, schema=SCHEMA)
        pu.write(t, data)


def drop_caches_hint(path: str) -> None:
    os.sync()
    for p in glob.glob(os.path.join(path, "**"), recursive=True):
        if os.path.isfile(p):
            with open(p, "rb") as f:
                while f.read(1 << 22):  # warm the page cache alike for every contender
                    pass


def copy(src: str, name: str) -> str:
    dst = os.path.join(os.path.dirname(src), name)
    shutil.copytree(src, dst)
    drop_caches_hint(dst)
    return dst


def raw_avro_rewrite(files: list[str], out_dir: str) -> float:
    import fastavro
    os.makedirs(out_dir)
    start = time.time()
    for i, p in enumerate(files):
        with open(p, "rb") as f:
            recs = list(fastavro.reader(f))
        pq.write_table(pa.Table.from_pylist(recs), os.path.join(out_dir, f"raw-{i}.parquet"), compression="zstd")
    return time.time() - start


def raw_parquet_rewrite(files: list[str], out_dir: str) -> float:
    os.makedirs(out_dir)
    start = time.time()
    for i, p in enumerate(files):
        pq.write_table(pq.read_table(p), os.path.join(out_dir, f"raw-{i}.parquet"), compression="zstd")
    return time.time() - start


def cli(*args: str) -> float:
    start = time.time()
    r = subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT)
    if r.returncode:
        raise SystemExit(f"paimon-ops {' '.join(args)} failed: {r.stderr.strip()}")
    return time.time() - start


def digest(warehouse: str) -> tuple[int, str]:
    t = pu.read(warehouse, "db.t").sort_by("k")
    h = hashlib.sha1()
    for c in t.columns:
        h.update(c.to_string().encode())
    return t.num_rows, h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=5_000_000)
    ap.add_argument("--buckets", type=int, default=4)
    ap.add_argument("--commits", type=int, default=5)
    ap.add_argument("--rescale-to", type=int, default=8)
    args = ap.parse_args()
    base = tempfile.mkdtemp(prefix="bench-postpone-")
    src = os.path.join(base, "src")
    t0 = time.time()
    build(src, args.rows, args.buckets, args.commits)
    table_dir = os.path.join(src, "db.db", "t")
    avro = sorted(glob.glob(os.path.join(table_dir, "bucket-postpone", "*.avro")))
    in_bytes = sum(os.path.getsize(p) for p in avro)
    print(f"table: {args.rows:,} rows in {len(avro)} postpone Avro files ({human_bytes(in_bytes)}), written by "
          f"pypaimon 2.1.0 in {time.time() - t0:.1f} s; {args.buckets} buckets; {os.cpu_count()} cores")

    wh_cli = copy(src, "cli")
    cli_s = cli("compact-postpone", wh_cli, "db.t", "--json")
    wh_inproc = copy(src, "inproc")
    t = FileStoreTable(os.path.join(wh_inproc, "db.db", "t"))
    start = time.time()
    plan = plan_postpone_compaction(t)
    report = plan.execute(runner=LocalRunner())
    inproc_s = time.time() - start
    raw_s = raw_avro_rewrite(avro, os.path.join(base, "raw"))
    rows_out = report.details["rows_out"]
    print(f"\npostpone compaction ({rows_out:,} rows out into {args.buckets} buckets, "
          f"{report.details['files_out']} files, {human_bytes(report.details['bytes_out'])})")
    for name, s in (("default CLI path (wall, process)", cli_s), ("in-process plan + execute", inproc_s),
                    ("raw fastavro -> pyarrow zstd rewrite", raw_s)):
        print(f"  {name:<40} {s:7.2f} s  {args.rows / s / 1e6:6.2f} M rows/s")
    print(f"  ratio default path / raw: {raw_s / cli_s:.2f}x (goal >= 0.8x); in-process / raw: {raw_s / inproc_s:.2f}x")

    parquet = sorted(glob.glob(os.path.join(wh_cli, "db.db", "t", "bucket-*", "*.parquet")))
    wh_rescale = copy(wh_cli, "rescale")
    n_before, d_before = digest(wh_cli)
    rescale_s = cli("rescale", wh_rescale, "db.t", "--bucket-num", str(args.rescale_to), "--json")
    raw_r = raw_parquet_rewrite(parquet, os.path.join(base, "raw-rescale"))
    n_after, d_after = digest(wh_rescale)
    print(f"\nrescale {args.buckets} -> {args.rescale_to} buckets ({n_before:,} rows, {len(parquet)} Parquet files, "
          f"{human_bytes(sum(os.path.getsize(p) for p in parquet))})")
    print(f"  {'default CLI path (wall, process)':<40} {rescale_s:7.2f} s  {n_before / rescale_s / 1e6:6.2f} M rows/s")
    print(f"  {'raw pyarrow read + zstd write':<40} {raw_r:7.2f} s  {n_before / raw_r / 1e6:6.2f} M rows/s")
    print(f"  ratio default path / raw: {raw_r / rescale_s:.2f}x")
    n_inproc, d_inproc = digest(wh_inproc)
    ok = n_before == n_after == n_inproc and d_before == d_after == d_inproc
    print(f"\npypaimon reads {n_before:,} rows after compaction (CLI and in-process) and after rescale; digests "
          f"{'equal' if ok else 'DIFFER'}")
    shutil.rmtree(base, ignore_errors=True)
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
