"""Snapshot expiry at scale: planning time, peak memory and delete rate for 1,000 snapshots / 100,000 files.

A synthetic append table is built through the engine's real commit path (FileStoreCommit: real manifests,
manifest lists, manifest merges and snapshot files), with tiny placeholder data files on disk so deletes are
real. History: every 10th snapshot is a COMPACT that deletes the files the previous 9 APPEND snapshots added and
adds a few replacements, so almost every data file is deletable by expiry. The other snapshots are APPENDs; their
file counts are set so that `snapshots x files_per_snapshot` data files are added in total.

The build runs in a separate (spawned) process, so the peak RSS reported for planning is that of a process that
only planned (and then expired). Measured:
  1. plan_expire_snapshots(retain_min=10, min_age='0 ms'): wall time, files planned by kind, peak RSS;
  2. expire_snapshots(..., runner=None) (deletes inline on the driver): wall time, deletes/s;
  3. with --spark: the same on a copy of the table with SparkRunner(local_spark('local[2]')) (session start-up
     excluded, first-job warm-up included);
  4. afterwards: the latest snapshot still scans and every file it references exists; data files left on disk
     that no retained snapshot references are counted.

Run: SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/bench_expiry.py [snapshots] [files_per_snapshot] [--spark]
"""
from __future__ import annotations

import argparse
import datetime
import multiprocessing as mp
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

import paimon_ops as po
from paimon_ops.execution.plan import DATA  # noqa: E402
from paimon_ops.format import manifest as mf  # noqa: E402
from paimon_ops.format.binary_row import serialize_row  # noqa: E402
from paimon_ops.format.manifest import DataFileMeta, FileKind, ManifestEntry  # noqa: E402
from paimon_ops.format.types import parse_type  # noqa: E402
from paimon_ops.lifecycle import expire as expire_mod  # noqa: E402
from paimon_ops.lifecycle.expire import plan_expire_snapshots  # noqa: E402
from paimon_ops.table.scan import TableScanner  # noqa: E402
from paimon_ops.table.table import FileStoreTable  # noqa: E402

IDENT = "db.expiry"
PARTITIONS = 10
ROWS_PER_FILE = 1000
COMPACT_EVERY = 10
PAYLOAD = b"PAR1"  # a few bytes: planning and deleting are measured, not Parquet
RETAIN_MIN = 10


# ---------------------------------------------------------------------------------------------- memory


def _status(field: str) -> int:
    """VmRSS / VmHWM of this process in KiB (0 where /proc is unavailable)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def peak_rss_mib() -> float:
    hwm = _status("VmHWM")
    if hwm:
        return hwm / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def rss_mib() -> float:
    return _status("VmRSS") / 1024


class PlanTimer:
    """Times the planning step inside one expire_snapshots call (it looks plan_expire_snapshots up at call time),
    so the delete rate can be given without planning as well as end-to-end."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __enter__(self) -> PlanTimer:
        orig = expire_mod.plan_expire_snapshots

        def timed(*a, **kw):
            t = time.perf_counter()
            try:
                return orig(*a, **kw)
            finally:
                self.seconds += time.perf_counter() - t

        expire_mod.plan_expire_snapshots = timed
        self._orig = orig
        return self

    def __exit__(self, *exc) -> None:
        expire_mod.plan_expire_snapshots = self._orig


# ---------------------------------------------------------------------------------------------- build


def appends_per_snapshot(snapshots: int, files_per_snapshot: int) -> tuple[list[int], int]:
    """Per-snapshot ADD counts: COMPACTs add `replacements`; APPENDs share the rest of snapshots x files."""
    replacements = max(1, files_per_snapshot // 10)
    kinds = ["COMPACT" if sid % COMPACT_EVERY == 0 else "APPEND" for sid in range(1, snapshots + 1)]
    n_compact = kinds.count("COMPACT")
    n_append = len(kinds) - n_compact
    remaining = max(n_append, snapshots * files_per_snapshot - n_compact * replacements)
    base, extra = divmod(remaining, max(n_append, 1))
    counts, i = [], 0
    for k in kinds:
        if k == "COMPACT":
            counts.append(replacements)
        else:
            counts.append(base + (1 if i < extra else 0))
            i += 1
    return counts, replacements


def build(warehouse: str, snapshots: int, files_per_snapshot: int, out: mp.Queue) -> None:
    """Runs in a spawned child: create the table and commit the synthetic history."""
    from paimon_ops.table.commit import CommitChanges, FileStoreCommit
    from paimon_ops.table.writer import create_table

    t0 = time.perf_counter()
    table = create_table(warehouse, IDENT, [("id", "BIGINT"), ("dt", "STRING")], partition_keys=["dt"],
                         options={"bucket": "-1", "snapshot.num-retained.min": str(RETAIN_MIN),
                                  "snapshot.expire.limit": "2000"})
    scanner = TableScanner(table)
    committer = FileStoreCommit(table, store=scanner.store)
    types = [f.type.with_nullable(True) for f in table.schema.fields]
    vstats = mf.SimpleStats(serialize_row([None, None], types), serialize_row([None, None], types), (None, None))
    ptype = [parse_type("STRING")]
    parts = [serialize_row([f"2026-01-{d + 1:02d}"], ptype) for d in range(PARTITIONS)]
    made_dirs: set[str] = set()
    counts, _ = appends_per_snapshot(snapshots, files_per_snapshot)
    prefix = f"data-{os.getpid():08x}-bench-"
    start_ms = int(time.time() * 1000) - 2 * 86_400_000  # two days ago, one minute apart
    seq = 0
    file_no = 0
    since_compact: list[ManifestEntry] = []
    t_files = t_commit = 0.0
    total_files = total_bytes = 0
    base = None
    for i, n_add in enumerate(counts):
        sid = i + 1
        now = start_ms + i * 60_000
        kind = "COMPACT" if sid % COMPACT_EVERY == 0 else "APPEND"
        ta = time.perf_counter()
        adds = []
        for j in range(n_add):
            part = parts[(file_no + j) % PARTITIONS]
            meta = DataFileMeta(
                file_name=f"{prefix}{file_no + j}.parquet", file_size=len(PAYLOAD), row_count=ROWS_PER_FILE,
                min_key=mf.EMPTY_ROW, max_key=mf.EMPTY_ROW, key_stats=mf.EMPTY_STATS, value_stats=vstats,
                min_sequence_number=seq, max_sequence_number=seq + ROWS_PER_FILE - 1, schema_id=0, level=0,
                extra_files=(), creation_time=now, delete_row_count=0, embedded_index=None,
                file_source=1 if kind == "COMPACT" else 0, value_stats_cols=None, external_path=None,
                first_row_id=None, write_cols=None, write_cols_sequences=None)
            seq += ROWS_PER_FILE
            path = scanner.data_file_path(part, 0, meta)
            d = os.path.dirname(path)
            if d not in made_dirs:
                os.makedirs(d, exist_ok=True)
                made_dirs.add(d)
            with open(path, "wb") as f:
                f.write(PAYLOAD)
            adds.append(ManifestEntry(FileKind.ADD, part, 0, -1, meta))
        file_no += n_add
        total_files += n_add
        total_bytes += n_add * len(PAYLOAD)
        tb = time.perf_counter()
        if kind == "COMPACT":
            deletes = [ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
                       for e in since_compact]
            data = tuple(deletes + adds)
            since_compact = []
        else:
            data = tuple(adds)
            since_compact += adds
        base = committer.commit(CommitChanges(data=data), kind, base.id if base else None, now_millis=now)
        tc = time.perf_counter()
        t_files += tb - ta
        t_commit += tc - tb
        if sid % 100 == 0 or sid == snapshots:
            print(f"  built snapshot {sid}/{snapshots}: {total_files:,} data files, {tc - t0:.1f} s", flush=True)
    out.put({"build_s": time.perf_counter() - t0, "files_s": t_files, "commit_s": t_commit,
             "data_files": total_files, "snapshots": snapshots, "peak_rss_mib": peak_rss_mib(),
             "metadata_files": sum(len(fs) for _, _, fs in os.walk(os.path.join(table.root, "manifest"))),
             "root": table.root})


def build_in_child(warehouse: str, snapshots: int, files_per_snapshot: int) -> dict:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=build, args=(warehouse, snapshots, files_per_snapshot, q))
    p.start()
    result = q.get()
    p.join()
    if p.exitcode != 0:
        raise SystemExit(f"build failed (exit code {p.exitcode})")
    return result


# ---------------------------------------------------------------------------------------------- checks


def link_copy(src: str, dst: str) -> None:
    """Copy of the table for a second expiry: data files hard-linked (fast; deleting a link is a real unlink),
    metadata copied (hints are overwritten in place, they must not be shared)."""
    def copy(s: str, d: str) -> None:
        if os.path.basename(s).startswith("data-"):
            os.link(s, d)
        else:
            shutil.copy2(s, d)
    shutil.copytree(src, dst, copy_function=copy)


def data_files_on_disk(table: FileStoreTable) -> set[str]:
    out = set()
    for root, _, files in os.walk(table.root):
        for f in files:
            if f.startswith("data-"):
                out.add(os.path.join(root, f))
    return out


def verify(table: FileStoreTable) -> dict:
    """Latest snapshot scans and its files exist; data files no retained snapshot references are counted."""
    table = FileStoreTable(table.root)
    scanner = TableScanner(table)
    res = scanner.scan_latest()
    assert res is not None, "no latest snapshot after expiry"
    missing = [f.path for f in res.files if not os.path.exists(f.path)]
    referenced: set[str] = set()
    ids = table.snapshots.list_ids()
    for sid in ids:
        for e in scanner.live_entries(table.snapshots.snapshot(sid)).values():
            referenced.add(scanner.data_file_path(e.partition, e.bucket, e.file))
    on_disk = data_files_on_disk(table)
    return {"latest": res.snapshot.id, "live_files": len(res.files), "missing": len(missing),
            "retained_snapshots": len(ids), "earliest": ids[0] if ids else None,
            "data_on_disk": len(on_disk), "unreferenced_on_disk": len(on_disk - referenced),
            "referenced_missing": len(referenced - on_disk)}


def print_verify(label: str, v: dict) -> None:
    ok = v["missing"] == 0 and v["referenced_missing"] == 0
    print(f"  verify {label}: latest snapshot {v['latest']} scans, {v['live_files']:,} live files, "
          f"{v['missing']} missing; snapshots {v['earliest']}..{v['latest']} kept ({v['retained_snapshots']}); "
          f"{v['data_on_disk']:,} data files on disk, {v['unreferenced_on_disk']:,} unreferenced, "
          f"{v['referenced_missing']} referenced-but-missing -> {'OK' if ok else 'FAILED'}")


def fmt_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


# ---------------------------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("snapshots", nargs="?", type=int, default=1000)
    ap.add_argument("files_per_snapshot", nargs="?", type=int, default=100)
    ap.add_argument("--spark", action="store_true", help="also expire a copy of the table on SparkRunner(local[2])")
    ap.add_argument("--workdir", default=None, help="where to build the table (default: a temp dir, removed)")
    args = ap.parse_args()
    if args.snapshots < RETAIN_MIN + COMPACT_EVERY:
        raise SystemExit(f"need at least {RETAIN_MIN + COMPACT_EVERY} snapshots")

    workdir = tempfile.mkdtemp(prefix="bench-expiry-", dir=args.workdir)
    summary: list[str] = []
    try:
        print(f"building {args.snapshots:,} snapshots x ~{args.files_per_snapshot} files in {workdir} "
              f"({os.cpu_count()} cores) ...", flush=True)
        b = build_in_child(os.path.join(workdir, "wh"), args.snapshots, args.files_per_snapshot)
        print(f"build: {b['build_s']:.1f} s ({b['snapshots']:,} commits, {b['data_files']:,} data files; "
              f"data-file creation {b['files_s']:.1f} s, commits {b['commit_s']:.1f} s = "
              f"{b['commit_s'] / b['snapshots'] * 1000:.1f} ms/commit; {b['metadata_files']:,} manifest-dir files; "
              f"builder peak RSS {b['peak_rss_mib']:.0f} MiB)")
        root = b["root"]
        spark_root = None
        if args.spark:
            spark_root = os.path.join(workdir, "spark-copy")
            t = time.perf_counter()
            link_copy(root, spark_root)
            print(f"copied the table for the Spark run in {time.perf_counter() - t:.1f} s (data files hard-linked)")

        # ---- 1. planning
        table = FileStoreTable(root, IDENT)
        rss0, hwm0 = rss_mib(), peak_rss_mib()
        t = time.perf_counter()
        plan = plan_expire_snapshots(table, retain_min=RETAIN_MIN, min_age="0 ms")
        plan_s = time.perf_counter() - t
        hwm_plan = peak_rss_mib()
        counts = plan.counts()
        n_plan = len(plan.deletes)
        expired = plan.details["expired_snapshots"]
        print(f"plan: {plan_s:.2f} s; window {plan.details['window']} -> {len(expired):,} snapshots expire; "
              f"{n_plan:,} files planned ({fmt_counts(counts)}); {len(plan.warnings)} warnings")
        print(f"  memory: RSS before planning {rss0:.0f} MiB (peak {hwm0:.0f}), peak after planning "
              f"{hwm_plan:.0f} MiB, RSS now {rss_mib():.0f} MiB")
        for w in plan.warnings[:5]:
            print(f"  warning: {w}")
        summary.append(f"plan_expire_snapshots: {plan_s:.2f} s for {len(expired):,} snapshots / "
                       f"{counts.get(DATA, 0):,} data files ({n_plan:,} files total, "
                       f"{n_plan / plan_s:,.0f} files planned/s); peak RSS {hwm_plan:.0f} MiB")
        del plan

        # ---- 2. inline expiry
        t = time.perf_counter()
        with PlanTimer() as pt:
            rep = po.Table(FileStoreTable(root, IDENT)).maintenance.expire_snapshots(
                retain_min=RETAIN_MIN, min_age=datetime.timedelta(0)).execute(
                runner=None)
        e2e = time.perf_counter() - t
        n_del = rep.total_deleted
        del_only = max(e2e - pt.seconds, 1e-9)
        print(f"expire (inline): {e2e:.2f} s end-to-end (planning {pt.seconds:.2f} s, deleting {del_only:.2f} s), "
              f"{n_del:,} files deleted ({fmt_counts(rep.deleted)}); {n_del / e2e:,.0f} deletes/s end-to-end, "
              f"{n_del / del_only:,.0f} deletes/s excluding planning; peak RSS {peak_rss_mib():.0f} MiB; "
              f"{len(rep.warnings)} warnings")
        v = verify(table)
        print_verify("inline", v)
        summary.append(f"expire_snapshots inline: {e2e:.2f} s, {n_del:,} deletes, {n_del / e2e:,.0f} deletes/s "
                       f"({n_del / del_only:,.0f}/s excl. planning)")
        summary.append(f"verify inline: latest {v['latest']} scans, {v['missing']} missing, "
                       f"{v['unreferenced_on_disk']:,} unreferenced data files left")

        # ---- 3. Spark executors
        if spark_root is not None:
            from paimon_ops.execution.runner import SparkRunner
            from paimon_ops.execution.spark_session import local_spark
            t = time.perf_counter()
            spark = local_spark("local[2]", "bench-expiry")
            print(f"spark session local[2] started in {time.perf_counter() - t:.1f} s (excluded)")
            try:
                t = time.perf_counter()
                with PlanTimer() as pt2:
                    rep2 = po.Table(FileStoreTable(spark_root, IDENT)).maintenance.expire_snapshots(retain_min=RETAIN_MIN,
                        min_age=datetime.timedelta(0)).execute(
                        runner=SparkRunner(spark), parallel_threshold=100)
                e2e2 = time.perf_counter() - t
            finally:
                spark.stop()
            n2 = rep2.total_deleted
            del2 = max(e2e2 - pt2.seconds, 1e-9)
            print(f"expire (spark local[2]): {e2e2:.2f} s end-to-end (planning {pt2.seconds:.2f} s, deleting "
                  f"{del2:.2f} s), {n2:,} files deleted ({fmt_counts(rep2.deleted)}); {n2 / e2e2:,.0f} deletes/s "
                  f"end-to-end, {n2 / del2:,.0f} deletes/s excluding planning; {len(rep2.warnings)} warnings")
            v2 = verify(FileStoreTable(spark_root, IDENT))
            print_verify("spark", v2)
            summary.append(f"expire_snapshots spark local[2]: {e2e2:.2f} s, {n2:,} deletes, "
                           f"{n2 / e2e2:,.0f} deletes/s ({n2 / del2:,.0f}/s excl. planning)")
            summary.append(f"verify spark: latest {v2['latest']} scans, {v2['missing']} missing, "
                           f"{v2['unreferenced_on_disk']:,} unreferenced data files left")

        print()
        print(f"== summary: {b['snapshots']:,} snapshots / {b['data_files']:,} data files "
              f"(build {b['build_s']:.1f} s, {os.cpu_count()} cores)")
        for line in summary:
            print("  " + line)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
