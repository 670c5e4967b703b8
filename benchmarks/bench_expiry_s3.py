"""Snapshot expiry on an S3 server: bulk deletes (DeleteObjects, 1,000 keys per request, several in flight) vs one
request per file (what paimon-ops did before: a HEAD and a DELETE per file, the pattern behind trinodb/trino#13692
and apache/iceberg#3582).

The table is bench_expiry.py's synthetic history (1,000 snapshots / 100,000 data files by default, built locally
through the real commit path), uploaded twice to a local moto_server (started here on 127.0.0.1, stopped at the
end). On each copy `expire_snapshots(retain_min=10, time_retained='0 ms')` runs from the driver (runner=None):
once with the object-store FileIO as it is (bulk), once with bulk deletes switched off (one request per file). The
plan is the same on both; the figures are deleted files per second, end-to-end and excluding planning. Afterwards
the latest snapshot scans, every file it references exists and no expired data file is left.

Run: .venv/bin/python benchmarks/bench_expiry_s3.py [snapshots] [files_per_snapshot] [--per-file-limit N]
  --per-file-limit N: stop the one-request-per-file run's data phase after about N files (rate measured on those;
  default: no limit).
"""
from __future__ import annotations

import argparse
import datetime
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_expiry import IDENT, RETAIN_MIN, PlanTimer, build_in_child, fmt_counts  # noqa: E402

import paimon_ops as po
from paimon_ops.lifecycle.expire import plan_expire_snapshots  # noqa: E402
from paimon_ops.table.scan import TableScanner  # noqa: E402
from paimon_ops.table.table import FileStoreTable  # noqa: E402

KEY, SECRET = "bench", "bench-secret"


def start_moto() -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).with_name("moto_server")
    proc = subprocess.Popen([str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(url + "/", timeout=2).read()
            return proc, url
        except OSError:
            time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    raise SystemExit("moto_server did not start")


def upload(store, root: str, prefix: str) -> int:
    import obstore
    files = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs]

    def put(p: str) -> None:
        with open(p, "rb") as f:
            obstore.put(store, f"{prefix}/{os.path.relpath(p, root)}", f.read())

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(put, files))
    return len(files)


def options(endpoint: str) -> dict[str, str]:
    return {"s3.endpoint": endpoint, "s3.access-key": KEY, "s3.secret-key": SECRET, "s3.region": "us-east-1"}


def verify(table: FileStoreTable) -> str:
    table = table.refresh()
    scanner = TableScanner(table)
    res = scanner.scan_latest()
    referenced = set()
    for sid in table.snapshots.list_ids():
        for e in scanner.live_entries(table.snapshots.snapshot(sid)).values():
            referenced.add(scanner.data_file_path(e.partition, e.bucket, e.file))
    on_store = {st.path for st in table.io.walk_files(table.root) if st.name.startswith("data-")}
    missing = len(referenced - on_store)
    left = len(on_store - referenced)
    ok = missing == 0 and left == 0
    return (f"latest snapshot {res.snapshot.id} scans ({len(res.files):,} live files); {len(on_store):,} data objects, "
            f"{missing} referenced-but-missing, {left} unreferenced -> {'OK' if ok else 'FAILED'}")


class PerFileLimit(Exception):
    pass


def run(label: str, table: FileStoreTable, bulk: bool, limit: int | None) -> tuple[float, float, int, str]:
    if not bulk:
        table.io.bulk_delete = False  # this instance only: Deleter deletes file by file (HEAD + DELETE each)
        if limit:
            counter = {"n": 0}

            def hook(op: str, path: str) -> None:
                if op == "delete":
                    counter["n"] += 1
                    if counter["n"] > limit:
                        raise PerFileLimit()
            table = table.with_fault_hook(hook)
            table.io.bulk_delete = False
    t = time.perf_counter()
    deleted = 0
    with PlanTimer() as pt:
        try:
            rep = po.Table(table).maintenance.expire_snapshots(retain_min=RETAIN_MIN, min_age=datetime.timedelta(0)).execute(runner=None)
            deleted = rep.total_deleted
            what = fmt_counts(rep.deleted)
        except Exception as e:  # noqa: BLE001
            if not isinstance(e, PerFileLimit) and not isinstance(e.__cause__ or e.__context__, PerFileLimit):
                raise
            deleted = limit or 0
            what = f"stopped after {limit:,} data files (--per-file-limit)"
    e2e = time.perf_counter() - t
    del_s = max(e2e - pt.seconds, 1e-9)
    print(f"{label}: {e2e:.1f} s end-to-end (planning {pt.seconds:.1f} s, deleting {del_s:.1f} s); {deleted:,} files "
          f"deleted ({what}); {deleted / e2e:,.0f} files/s end-to-end, {deleted / del_s:,.0f} files/s deleting",
          flush=True)
    return e2e, del_s, deleted, what


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # run the finally below: stop moto_server
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("snapshots", nargs="?", type=int, default=1000)
    ap.add_argument("files_per_snapshot", nargs="?", type=int, default=100)
    ap.add_argument("--per-file-limit", type=int, default=None)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="bench-expiry-s3-")
    proc, endpoint = start_moto()
    try:
        print(f"building {args.snapshots:,} snapshots x ~{args.files_per_snapshot} files locally ...", flush=True)
        b = build_in_child(os.path.join(work, "wh"), args.snapshots, args.files_per_snapshot)
        import boto3
        from obstore.store import S3Store
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                          region_name="us-east-1")
        tables = {}
        for name in ("bulk", "per-file"):
            s3.create_bucket(Bucket=name)
            store = S3Store(name, endpoint=endpoint, access_key_id=KEY, secret_access_key=SECRET,
                            region="us-east-1", client_options={"allow_http": True})
            t = time.perf_counter()
            n = upload(store, b["root"], "wh/db.db/expiry")
            print(f"uploaded {n:,} objects to s3://{name} in {time.perf_counter() - t:.1f} s", flush=True)
            tables[name] = FileStoreTable(f"s3://{name}/wh/db.db/expiry", IDENT, options_override=options(endpoint))
        plan = plan_expire_snapshots(tables["bulk"], retain_min=RETAIN_MIN, min_age="0 ms")
        print(f"plan: {len(plan.details['expired_snapshots']):,} snapshots expire, {len(plan.deletes):,} files "
              f"({fmt_counts(plan.counts())})", flush=True)
        bulk = run("bulk (DeleteObjects)", tables["bulk"], True, None)
        print("  verify bulk: " + verify(tables["bulk"]), flush=True)
        per = run("one request per file", tables["per-file"], False, args.per_file_limit)
        if not args.per_file_limit:
            print("  verify per-file: " + verify(tables["per-file"]), flush=True)
        print(f"\nsummary ({os.cpu_count()} cores, moto_server {endpoint}): bulk {bulk[2] / bulk[1]:,.0f} files/s vs "
              f"one-by-one {per[2] / per[1]:,.0f} files/s deleting ({(bulk[2] / bulk[1]) / (per[2] / per[1]):.1f}x); "
              f"end-to-end {bulk[0]:.1f} s vs {per[0]:.1f} s")
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
