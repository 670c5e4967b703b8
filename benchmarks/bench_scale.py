"""Scale: snapshot expiry and orphan scans side by side with Java Paimon 0.9, planning of 10M manifest entries, and
the delete rate against a raw unlink loop.

Tables:
  * `--files N` (repeatable; default 100,000): the synthetic history of bench_expiry.py — 1,000 snapshots, every
    10th a COMPACT deleting what the 9 APPENDs before it added — built once through the engine's commit path, with
    tiny placeholder data files; then hard-linked into one copy for Java and one for paimon-ops (the same inodes,
    so both delete real files of the same disk);
  * `--entries M` (default 10,000,000; 0 to skip): a metadata-only table (no data files) with M manifest entries in
    the same shape of history, written directly as manifests, manifest lists and snapshots.

Measured, each side in a fresh process (wall time from start to exit, peak RSS from wait4's rusage):
  1. orphan scan, dry run with nothing to find (every file older than the threshold, all referenced): Java through
     the harness (`OrphanFilesClean`, what its remove_orphan_files procedure runs), paimon-ops through its CLI
     (`remove-orphans --dry-run`);
  2. expire all but 10 snapshots: Java `ExpireSnapshots` through the harness, paimon-ops `expire-snapshots`
     through its CLI on its default path (in-process at these sizes) and with `--spark-master local[2]` (planned
     and deleted on Spark; `--no-spark` leaves it out); afterwards every copy must hold the same data files and
     Java's own file check (`check_files`) must pass on the copies paimon-ops expired;
  3. delete rate: the data-file phase of the expiry plan on a third copy through paimon-ops' delete path
     (`Deleter.delete`, the one verified path, preflight excluded), against `os.unlink` of the same paths in the
     same order on a fourth copy;
  4. the metadata-only table: `plan_expire_snapshots` and `plan_remove_orphans` (dry runs, in a fresh process
     each): wall time and peak RSS;
  5. fleets in Dagster (`--fleet`, default 500 and 5,000 tables): bench_fleet.py's definitions, job resolution,
     sensor ticks and one run's code-location load, printed after the summary above.

Run: .venv/bin/python benchmarks/bench_scale.py [--files 100000 --files 1000000] [--entries 10000000]
     [--workdir DIR] [--no-java] [--no-spark] [--work orphans|rate|expiry ...] [--keep-built DIR] [--fleet 500,5000]
     .venv/bin/python benchmarks/bench_scale.py --smoke     (= --files 20000 --entries 0 --fleet '': every
     contender end to end in a few minutes; the figures mean little at this size)
     .venv/bin/python benchmarks/bench_scale.py --plan /work/bench-data/meta-1m/db.db/meta [--placement spark]
     (plans only, in-process vs Spark local[2]: driver wall, CPU, peak RSS and a hash of the plan)
(2 shared cores: the 1M-file table takes ~10 min to build, the 10M-entry table ~15 min to write.)
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_expiry as be  # noqa: E402

IDENT = be.IDENT
RETAIN_MIN = be.RETAIN_MIN
MERGE_MIN_COUNT = 30  # manifest.merge-min-count


# ---------------------------------------------------------------------------------------------- measuring


# A child's ru_maxrss starts from its parent's peak at fork/exec time (Linux carries the high-water mark of the mm
# it leaves across execve), and this process holds large plans and listings: each measured command is started by a
# small launcher process, which reports the command's own peak RSS.
_LAUNCHER = ("import os, sys\n"
             "pid = os.posix_spawnp(sys.argv[2], sys.argv[2:], os.environ)\n"
             "_, status, usage = os.wait4(pid, 0)\n"
             "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
             "sys.exit(os.waitstatus_to_exitcode(status))\n")


def measure(cmd: list[str], stdin: bytes = b"", env: dict | None = None) -> tuple[float, float, str, int]:
    """(wall seconds, peak RSS MiB, stdout, exit code) of one child process, RSS from its own rusage."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        t = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-S", "-c", _LAUNCHER, rss.name, *cmd], stdin=subprocess.PIPE,
                             stdout=out, stderr=err, env=env)
        assert p.stdin is not None
        p.stdin.write(stdin)
        p.stdin.close()
        p.wait()
        wall = time.perf_counter() - t
        out.seek(0)
        err.seek(0)
        text = out.read().decode(errors="replace")
        if p.returncode != 0:
            print(f"  ! {' '.join(cmd[:4])}... exit {p.returncode}: {err.read().decode(errors='replace')[-2000:]}")
        peak_kib = int(rss.read() or 0)
    return wall, peak_kib / 1024, text, p.returncode


def java_cmd(command: str) -> list[str]:
    from tests.interop import java_harness as jh
    jh.ensure_built()
    return jh.jvm_command(command)


def ours_cmd(*argv: str) -> list[str]:
    return [sys.executable, "-m", "paimon_ops.cli", *argv]


def env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + os.pathsep + e.get("PYTHONPATH", "")
    return e


def data_files(root: str) -> set[str]:
    out = set()
    for d, _, files in os.walk(root):
        for f in files:
            if f.startswith("data-"):
                out.add(os.path.relpath(os.path.join(d, f), root))
    return out


def copy_table(src_root: str, wh: str) -> str:
    dst = os.path.join(wh, "db.db", "expiry")
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    be.link_copy(src_root, dst)
    return dst


# ---------------------------------------------------------------------------------------------- file tables


WORK = ("orphans", "rate", "expiry")


def built_table(n_files: int, workdir: str, snapshots: int, keep: str | None) -> tuple[dict, bool]:
    """The synthetic table (built once; with `keep`, kept in that directory and reused by later runs)."""
    fps = max(1, n_files // snapshots)
    where = os.path.join(keep, f"built-{snapshots}x{fps}") if keep else os.path.join(workdir, "built")
    done = os.path.join(where, "built.json")
    if keep and os.path.exists(done):
        with open(done) as f:
            b = json.load(f)
        print(f"\n=== {snapshots:,} snapshots, {b['data_files']:,} data files: reusing {where}", flush=True)
        return b, True
    print(f"\n=== {snapshots:,} snapshots, {snapshots * fps:,} data files: building ...", flush=True)
    shutil.rmtree(where, ignore_errors=True)
    b = be.build_in_child(where, snapshots, fps)
    print(f"  built in {b['build_s']:.0f} s ({b['data_files']:,} data files)", flush=True)
    if keep:
        with open(done, "w") as f:
            json.dump(b, f)
    return b, bool(keep)


def run_files(n_files: int, workdir: str, java: bool, results: list[str], snapshots: int = 1000,
              work: tuple[str, ...] = WORK, keep: str | None = None, spark: bool = True) -> None:
    b, kept = built_table(n_files, workdir, snapshots, keep)
    src = b["root"]
    sides = ["ours"] + (["spark"] if spark and "expiry" in work else []) + (["java"] if java else [])
    roots = {s: copy_table(src, os.path.join(workdir, s)) for s in sides}
    whs = {s: os.path.dirname(os.path.dirname(r)) for s, r in roots.items()}
    now_ms = int(time.time() * 1000) + 1000
    time.sleep(1.5)  # every file strictly older than the orphan threshold

    # ---- 1. orphan scan (dry run, nothing to find)
    if "orphans" in work:
        orphan_scan(b, roots, whs, now_ms, java, results)
    # ---- 3. delete rate (on copies of their own, before the expiry copies are used)
    if "rate" in work:  # (in a child of its own: it plans in-process, and this process's peak would grow)
        results.append(in_child(delete_rate_child, src, workdir)["line"])
    # ---- 2. expiry
    if "expiry" in work:
        expiry(b, roots, whs, java, results)
    for s in sides:
        shutil.rmtree(os.path.join(workdir, s), ignore_errors=True)
    if not kept:
        shutil.rmtree(os.path.join(workdir, "built"), ignore_errors=True)


def orphan_scan(b: dict, roots: dict, whs: dict, now_ms: int, java: bool, results: list[str]) -> None:
    row = {}
    w, rss, out, code = measure(ours_cmd("remove-orphans", whs["ours"], IDENT, "--dry-run", "--json",
                                         "--older-than", str(now_ms), "--allow-short"), env=env())
    found = sum(len(st["files"]) for st in json.loads(out)["steps"] if st["action"] == "delete-files")\
        if code == 0 else "?"
    row["ours"] = (w, rss)
    print(f"  orphans paimon-ops: {w:.1f} s, peak RSS {rss:.0f} MiB, {found} found", flush=True)
    if java:
        payload = json.dumps({"table_path": roots["java"], "dry_run": True, "older_than_ms": now_ms}).encode()
        w, rss, out, code = measure(java_cmd("remove_orphans"), payload)
        found = len(json.loads(out)["deleted"]) if code == 0 else "?"
        row["java"] = (w, rss)
        print(f"  orphans Java 0.9:   {w:.1f} s, peak RSS {rss:.0f} MiB, {found} found", flush=True)
    results.append(_line(f"orphan scan, {b['data_files']:,} files", row))


def expiry(b: dict, roots: dict, whs: dict, java: bool, results: list[str]) -> None:
    row = {}
    before = len(data_files(roots["ours"]))
    for side, flags, label in (("ours", (), "paimon-ops (default path)"),
                               ("spark", ("--spark-master", "local[2]"), "paimon-ops on Spark local[2]")):
        if side not in roots:
            continue
        w, rss, out, code = measure(ours_cmd("expire-snapshots", whs[side], IDENT, "--retain-min", str(RETAIN_MIN),
                                             "--min-age", "0 ms", *flags), env=env())  # (text: the default output)
        deleted = before - len(data_files(roots[side]))  # (counted on disk: the report's text is for people)
        row[side] = (w, rss)
        print(f"  expiry {label}: {w:.1f} s, peak RSS {rss:.0f} MiB (driver), {deleted:,} data files deleted"
              + ("" if code == 0 else f", EXIT {code}"), flush=True)
    if "spark" in roots:
        same = data_files(roots["ours"]) == data_files(roots["spark"])
        print(f"  same data files left by the default path and Spark: {same}", flush=True)
    if java:
        payload = json.dumps({"table_path": roots["java"], "retain_min": RETAIN_MIN, "time_retained_ms": 0,
                              "max_deletes": 2000}).encode()
        w, rss, out, code = measure(java_cmd("expire_snapshots"), payload)
        row["java"] = (w, rss)
        print(f"  expiry Java 0.9:   {w:.1f} s, peak RSS {rss:.0f} MiB ({out.strip()[:120]})", flush=True)
        same = all(data_files(roots[s]) == data_files(roots["java"]) for s in ("ours", "spark") if s in roots)
        ok = same
        for s in ("ours", "spark"):
            if s not in roots:
                continue
            _, _, chk, code = measure(java_cmd("check_files"), json.dumps({"table_path": roots[s]}).encode())
            check = json.loads(chk) if code == 0 else {"error": chk}
            ok = ok and code == 0 and not check.get("missing")
            print(f"  same data files left as Java: {same}; Java's check_files on paimon-ops' copy ({s}): "
                  f"{'passes' if code == 0 and not check.get('missing') else check}", flush=True)
        results.append(_line(f"expiry, {b['data_files']:,} files", row) + f"; same files left: {same}, "
                       f"Java check_files: {'pass' if ok else 'FAIL'}")
    else:
        results.append(_line(f"expiry, {b['data_files']:,} files", row))


def _line(what: str, row: dict) -> str:
    """The summary line of one measurement: each contender's wall time and peak RSS, and Java's wall time over each
    paimon-ops path's (the speed-up)."""
    ours = row["ours"]
    text = f"{what}: paimon-ops {ours[0]:.1f} s / {ours[1]:.0f} MiB"
    if "spark" in row:
        text += f"; paimon-ops on Spark local[2] {row['spark'][0]:.1f} s / {row['spark'][1]:.0f} MiB (driver)"
    if "java" in row:
        java = row["java"]
        text += f"; Java 0.9 {java[0]:.1f} s / {java[1]:.0f} MiB; speed-up {java[0] / ours[0]:.2f}x"
        if "spark" in row:
            text += f" (Spark: {java[0] / row['spark'][0]:.2f}x)"
    return text


def delete_rate_child(src: str, workdir: str, out: mp.Queue) -> None:
    out.put({"line": delete_rate(src, workdir)})


def unlink_loop(paths: list[str], threads: int) -> float:
    """Files/s of a bare unlink loop over `paths` (the limit of any delete path): one thread, or `threads` threads
    each deleting contiguous slices of the list (most in one directory), a few slices a thread."""
    t = time.perf_counter()
    if threads <= 1:
        for p in paths:
            os.unlink(p)
    else:
        from concurrent.futures import ThreadPoolExecutor
        size = max(16, min(4096, -(-len(paths) // (threads * 4))))

        def loop(i: int) -> None:
            for p in paths[i:i + size]:
                os.unlink(p)
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(loop, range(0, len(paths), size)))
    return len(paths) / (time.perf_counter() - t)


def delete_rate(src: str, workdir: str) -> str:
    """The expiry plan's data-file phase deleted through Deleter.delete (its delete threads) vs a serial and a
    concurrent os.unlink loop of the same paths (as many threads), each on a copy of its own."""
    from paimon_ops.execution.deleter import Deleter
    from paimon_ops.execution.plan import DATA
    from paimon_ops.lifecycle.expire import plan_expire_snapshots
    from paimon_ops.table.table import FileStoreTable
    a = copy_table(src, os.path.join(workdir, "rate-a"))
    plan = plan_expire_snapshots(FileStoreTable(a, IDENT), retain_min=RETAIN_MIN, min_age="0 ms")
    actions = plan.deletes.where_kind((DATA,))
    del plan
    deleter = Deleter(FileStoreTable(a, IDENT))
    rel = [os.path.relpath(p, a) for p in actions.paths()]
    raw = {}
    for threads in (1, deleter.threads):
        r = copy_table(src, os.path.join(workdir, f"rate-raw{threads}"))
        raw[threads] = unlink_loop([os.path.join(r, p) for p in rel], threads)
        shutil.rmtree(os.path.join(workdir, f"rate-raw{threads}"), ignore_errors=True)
    os.sync()
    t = time.perf_counter()
    done, missing = deleter.delete(actions)
    ours = len(done) / (time.perf_counter() - t)
    load = os.getloadavg()[0]
    print(f"  delete rate: paimon-ops {ours:,.0f} files/s ({deleter.threads} threads); unlink loop "
          f"{raw[deleter.threads]:,.0f} files/s with {deleter.threads} threads, {raw[1]:,.0f} files/s serial "
          f"({len(done):,} files, {missing} missing; load {load:.1f})", flush=True)
    shutil.rmtree(os.path.join(workdir, "rate-a"), ignore_errors=True)
    return (f"delete rate ({len(done):,} data files, {deleter.threads} threads): paimon-ops {ours:,.0f}/s = "
            f"{ours / raw[deleter.threads]:.0%} of a concurrent unlink loop ({raw[deleter.threads]:,.0f}/s) and "
            f"{ours / raw[1]:.0%} of a serial one ({raw[1]:,.0f}/s); load average {load:.1f}")


# ---------------------------------------------------------------------------------------------- metadata-only


def build_metadata(warehouse: str, entries: int, out: mp.Queue) -> None:
    """A table whose history holds `entries` manifest entries and no data files (spawned child)."""
    from paimon_ops.format import manifest as mf
    from paimon_ops.format.binary_row import serialize_row
    from paimon_ops.format.snapshot import Snapshot
    from paimon_ops.format.types import parse_type
    from paimon_ops.table.writer import create_table

    t0 = time.perf_counter()
    table = create_table(warehouse, "db.meta", [("id", "BIGINT"), ("dt", "STRING")], partition_keys=["dt"],
                         options={"bucket": "-1", "snapshot.num-retained.min": str(RETAIN_MIN),
                                  "snapshot.expire.limit": "2000"})
    snapshots, every = 1000, be.COMPACT_EVERY
    per_append = max(1, entries // (2 * snapshots * (every - 1) // every))
    types = [parse_type("BIGINT"), parse_type("STRING")]
    vstats = mf.SimpleStats(serialize_row([None, None], types), serialize_row([None, None], types), (None, None))
    ptype = [parse_type("STRING")]
    parts = [serialize_row([f"2026-01-{d + 1:02d}"], ptype) for d in range(be.PARTITIONS)]
    pstats = mf.SimpleStats(parts[0], parts[-1], (0,))
    os.makedirs(table.manifest_dir, exist_ok=True)
    os.makedirs(table.snapshots.dir, exist_ok=True)
    tag = uuid.uuid4().hex
    base: list[mf.ManifestFileMeta] = []
    since: list[mf.ManifestEntry] = []
    live: dict[str, mf.ManifestEntry] = {}
    written = file_no = seq = 0
    start_ms = int(time.time() * 1000) - 2 * 86_400_000

    def put(name: str, data: bytes) -> int:
        with open(os.path.join(table.manifest_dir, name), "wb") as f:
            f.write(data)
        return len(data)

    for sid in range(1, snapshots + 1):
        now = start_ms + sid * 60_000
        compact = sid % every == 0
        n_add = per_append // 10 if compact else per_append
        adds = []
        for j in range(n_add):
            meta = mf.DataFileMeta(f"data-{tag}-{file_no + j}.parquet", 4, 1000, mf.EMPTY_ROW, mf.EMPTY_ROW,
                                   mf.EMPTY_STATS, vstats, seq, seq + 999, 0, 0, (), now, 0, None,
                                   1 if compact else 0, None, None, None, None, None)
            seq += 1000
            adds.append(mf.ManifestEntry(mf.FileKind.ADD, parts[(file_no + j) % be.PARTITIONS], 0, -1, meta))
        file_no += n_add
        if compact:
            delta = [mf.ManifestEntry(mf.FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
                     for e in since] + adds
            since = []
        else:
            delta = adds
            since += adds
        for e in delta:
            if e.kind == mf.FileKind.ADD:
                live[e.file.file_name] = e
            else:
                live.pop(e.file.file_name, None)
        mname = f"manifest-{tag}-{sid}"
        size = put(mname, mf.write_manifest(delta))
        written += len(delta)
        meta_m = mf.ManifestFileMeta(mname, size, n_add, len(delta) - n_add, pstats, 0, 0, 0, 0, 0)
        base_name, delta_name = f"manifest-list-{tag}-{sid}-b", f"manifest-list-{tag}-{sid}-d"
        bsize = put(base_name, mf.write_manifest_list(base))
        dsize = put(delta_name, mf.write_manifest_list([meta_m]))
        base.append(meta_m)
        if len(base) >= MERGE_MIN_COUNT:  # as Paimon's manifest merge: the live entries in one manifest
            merged = list(live.values())
            mname = f"manifest-{tag}-{sid}-merged"
            size = put(mname, mf.write_manifest(merged))
            written += len(merged)
            base = [mf.ManifestFileMeta(mname, size, len(merged), 0, pstats, 0, 0, 0, 0, 0)]
        snap = Snapshot(sid, 0, base_name, delta_name, "bench", sid, "COMPACT" if compact else "APPEND", now,
                        total_record_count=0, delta_record_count=0, base_manifest_list_size=bsize,
                        delta_manifest_list_size=dsize)
        table.snapshots.commit(snap)
        if sid % 100 == 0:
            print(f"  metadata: snapshot {sid}/{snapshots}, {written:,} entries, {time.perf_counter() - t0:.0f} s",
                  flush=True)
    table.snapshots.write_hint("EARLIEST", 1)
    table.snapshots.write_latest_hint(snapshots)
    out.put({"root": table.root, "entries": written, "build_s": time.perf_counter() - t0})


def plan_child(root: str, what: str, placement: str, out: mp.Queue) -> None:
    """Plan `what` (a dry run) in this fresh process: in-process, or placed on Spark `local[2]` (the session is
    started before the clock starts; this process is the driver, its peak RSS is the driver's)."""
    import hashlib

    from paimon_ops.execution.runner import LocalRunner, SparkRunner
    from paimon_ops.execution.spark_session import local_spark
    from paimon_ops.lifecycle.expire import plan_expire_snapshots
    from paimon_ops.lifecycle.orphans import plan_remove_orphans
    from paimon_ops.table.table import FileStoreTable
    table = FileStoreTable(root, "db.meta")
    runner: object = LocalRunner()
    if placement == "spark":
        runner = SparkRunner(local_spark("local[2]", "paimon-ops-bench-plan"))
    t, cpu = time.perf_counter(), time.process_time()
    if what == "expire":
        plan = plan_expire_snapshots(table, retain_min=RETAIN_MIN, min_age="0 ms", runner=runner)
    else:
        plan = plan_remove_orphans(table, older_than=int(time.time() * 1000), allow_short=True, runner=runner)
    took, cpu = time.perf_counter() - t, time.process_time() - cpu
    digest = hashlib.sha256()  # the plan itself: every path, kind, reason and size, in order
    for d in plan.deletes:
        digest.update(f"{d.path}\0{d.kind}\0{d.reason}\0{d.size}\n".encode())
    out.put({"s": took, "cpu": cpu, "files": len(plan.deletes), "rss": be.peak_rss_mib(),
             "hash": digest.hexdigest()[:16]})


def run_plans(root: str, placements: list[str], whats: list[str]) -> None:
    """`--plan ROOT`: plan the expiry / orphans of an existing metadata-only table (`build_metadata`'s) in a fresh
    process per run, in-process and on Spark local[2]."""
    for what in whats:
        for placement in placements:
            r = in_child(plan_child, root, what, placement)
            print(f"plan {what} {placement}: {r['s']:.1f} s wall, {r['cpu']:.1f} s driver CPU, driver peak RSS "
                  f"{r['rss']:.0f} MiB, {r['files']:,} files planned, plan hash {r['hash']}", flush=True)


def in_child(target, *args) -> dict:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=target, args=(*args, q))
    p.start()
    res = q.get()
    p.join()
    return res


def run_entries(entries: int, workdir: str, results: list[str]) -> None:
    print(f"\n=== metadata-only table, ~{entries:,} manifest entries: writing ...", flush=True)
    b = in_child(build_metadata, os.path.join(workdir, "meta"), entries)
    print(f"  written in {b['build_s']:.0f} s: {b['entries']:,} entries", flush=True)
    for what in ("expire", "orphans"):
        r = in_child(plan_child, b["root"], what, "in-process")
        print(f"  plan {what} (dry run): {r['s']:.1f} s, peak RSS {r['rss']:.0f} MiB, {r['files']:,} files planned",
              flush=True)
        results.append(f"planning {what}, {b['entries']:,} manifest entries: {r['s']:.1f} s / {r['rss']:.0f} MiB "
                       f"({r['files']:,} files planned)")
    shutil.rmtree(os.path.join(workdir, "meta"), ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, action="append", help="data files of a table to build (repeatable)")
    ap.add_argument("--entries", type=int, default=10_000_000, help="manifest entries of the metadata-only table")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--no-java", action="store_true", help="paimon-ops only")
    ap.add_argument("--no-spark", action="store_true", help="no expiry on Spark local[2]")
    ap.add_argument("--smoke", action="store_true",
                    help="a small end-to-end run: --files 20000 --entries 0 --fleet '' (unless given)")
    ap.add_argument("--work", action="append", choices=WORK,
                    help="what to measure on the file tables (repeatable; default: all)")
    ap.add_argument("--keep-built", metavar="DIR",
                    help="keep the built file tables in DIR and reuse them on later runs (the 1M build takes ~10 min)")
    ap.add_argument("--fleet", default="500,5000", metavar="SIZES",
                    help="Dagster fleets measured afterwards by bench_fleet.py (definitions, jobs, sensor ticks, a run's "
                         "code-location load), e.g. 500,5000; '' to skip")
    ap.add_argument("--snapshots", type=int, default=1000, help=argparse.SUPPRESS)  # (smoke runs)
    ap.add_argument("--plan", metavar="ROOT", help="only plan (dry runs) an existing metadata-only table's expiry "
                    "and orphans, in-process and on Spark local[2], and print driver wall / CPU / peak RSS")
    ap.add_argument("--placement", action="append", choices=("in-process", "spark"), help="with --plan (repeatable)")
    ap.add_argument("--plan-work", action="append", choices=("expire", "orphans"), help="with --plan (repeatable)")
    args = ap.parse_args()
    if args.smoke:
        args.files = args.files or [20_000]
        if "--entries" not in sys.argv:
            args.entries = 0
        if "--fleet" not in sys.argv:
            args.fleet = ""
    if args.plan:
        run_plans(args.plan, args.placement or ["in-process", "spark"], args.plan_work or ["expire", "orphans"])
        return
    workdir = tempfile.mkdtemp(prefix="bench-scale-", dir=args.workdir)
    results: list[str] = []
    try:
        for n in args.files or [100_000]:
            run_files(n, workdir, not args.no_java, results, args.snapshots, tuple(args.work or WORK),
                      args.keep_built, spark=not args.no_spark)
        if args.entries:
            run_entries(args.entries, workdir, results)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n== summary ({os.cpu_count()} cores)")
    for line in results:
        print("  " + line)
    if args.fleet:  # (its own processes and report: the fleets of the same run)
        import bench_fleet
        print(f"\n=== fleets in Dagster: {args.fleet} tables (bench_fleet.py)", flush=True)
        bench_fleet.main(["--sizes", args.fleet] + (["--writer", "ours"] if args.no_java else []))


if __name__ == "__main__":
    main()
