"""Fleets: a warehouse of 500 and of 5,000 small tables, through the command line and in Dagster, measured in one run.

Two template tables are written by Java Paimon 0.9 through the project's harness (tests/interop/java_harness.py;
`--writer ours` uses our own writer instead): a deletion-vector primary-key table with daily tags (tag.create-time,
a tag made by Java) and a partitioned append table (with partition.expiration-time, so the partition expiry sensor
has tables). The warehouse holds copies of them, half each, over ten databases (a table carries no name inside: a
copy is a table of its own). Per size, each part in a fresh process:

1. definitions: `build_paimon_definitions` (listing and reading every table's metadata included) and every job
   resolved — what a code server does before it can answer; also the repository snapshot it then serialises;
2. sensor ticks against a real Dagster instance (sqlite, on disk, pools limited to 1): every sensor's first tick
   (empty cursor: the tables it can measure within the tick budget), the ticks the first pass takes, and a steady
   tick (nothing changed since the pass); the daemon's work on the events of a tick (storing them) is not timed;
   the tag automation sensor likewise (it works per tag time: a first tick and a steady one);
3. a run launched for one table: `dagster api execute_run`, the run worker the daemon starts, on this repository's
   code location (definitions.py) — from the process start to RUN_START (the code location loaded, the job
   resolved and subset to the table) and to the run's end;
4. the nightly chain through the command line on a fresh copy of the warehouse, each step over every table it
   applies to with `--parallel N` (`--parallel 1,2` compares): auto-tag, expire-partitions (the partitioned
   tables), expire-snapshots, expire-tags, remove-orphans — per step and in total the wall time, the CPU time of the
   command and its worker processes, and the peak memory of the whole process tree (the sum of its processes'
   RSS, and of their PSS, which counts pages the forked workers share once), sampled every 50 ms.

Run: .venv/bin/python benchmarks/bench_fleet.py [--sizes 500,5000] [--writer java|ours] [--keep DIR]
     [--parts cli,dagster] [--parallel 2]
e.g. the CLI chain alone on 5,000 tables with two workers:
     .venv/bin/python benchmarks/bench_fleet.py --sizes 5000 --parts cli --parallel 2
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DATABASES = 10
DAGSTER_YAML = "concurrency:\n  pools:\n    default_limit: 1\ntelemetry:\n  enabled: false\n"


# ---------------------------------------------------------------------------------------------- warehouse
def templates_java(root: Path) -> dict[str, Path]:
    from tests.interop.java_harness import JavaTable, skip_reason
    reason = skip_reason()
    if reason:
        raise SystemExit(f"Java Paimon 0.9 is not available ({reason}); run with --writer ours")
    pk = JavaTable(root, "t", "pk")
    pk.create([("id", "INT NOT NULL"), ("name", "STRING"), ("amount", "BIGINT")], primary_keys=["id"],
              options={"bucket": 2, "deletion-vectors.enabled": True, "tag.create-time": "01:00",
                       "tag.create-time-zone": "Asia/Shanghai"})
    pk.write([{"rows": [[i, f"n{i}", i] for i in range(200)]},
              {"rows": [[i, f"u{i}", -i] for i in range(0, 200, 7)], "kinds": ["+U"] * len(range(0, 200, 7))},
              {"rows": [[i, None, None] for i in range(3, 60, 11)], "kinds": ["-D"] * len(range(3, 60, 11))}])
    day = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 8 * 3600))  # the day of the commits in Shanghai
    pk.create_tag(day)
    ap = JavaTable(root, "t", "ap")
    ap.create([("dt", "STRING NOT NULL"), ("id", "BIGINT"), ("payload", "STRING")], partition_keys=["dt"],
              options={"bucket": -1, "partition.expiration-time": "3650 d",
                       "partition.timestamp-formatter": "yyyy-MM-dd"})
    ap.write([{"rows": [[d, i, "x"] for i in range(50)]} for d in ("2026-03-26", "2026-03-27", "2026-03-28")])
    return {"pk": pk.path, "ap": ap.path}


def templates_ours(root: Path) -> dict[str, Path]:
    from paimon_ops.table.writer import create_table
    from tests.dagster.util import ms, write
    pk = create_table(str(root), "t.pk", [("id", "INT"), ("name", "STRING"), ("amount", "BIGINT")],
                      primary_keys=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true",
                                                    "tag.create-time": "01:00", "tag.create-time-zone": "Asia/Shanghai"})
    for day in (26, 27, 28):
        write(pk, {"id": list(range(200)), "name": [f"n{day}"] * 200, "amount": list(range(200))}, ms(2026, 3, day))
    from paimon_ops.lifecycle import autotag
    autotag.create_tag_for_period(pk.refresh(), "2026-03-26")
    ap = create_table(str(root), "t.ap", [("dt", "STRING"), ("id", "BIGINT"), ("payload", "STRING")],
                      partition_keys=["dt"], options={"bucket": "-1", "partition.expiration-time": "3650 d",
                                                      "partition.timestamp-formatter": "yyyy-MM-dd"})
    for day in (26, 27, 28):
        write(ap, {"dt": [f"2026-03-{day}"] * 50, "id": list(range(50)), "payload": ["x"] * 50}, ms(2026, 3, day))
    return {"pk": Path(pk.root), "ap": Path(ap.root)}


def build_fleet(root: Path, n: int, templates: dict[str, Path]) -> Path:
    warehouse = root / f"warehouse-{n}"
    writer = templates["pk"].parent.parent.name  # (templates-java or templates-ours)
    if (warehouse / ".complete").exists() and (warehouse / ".complete").read_text() == writer:
        return warehouse  # (--keep: built by an earlier run)
    shutil.rmtree(warehouse, ignore_errors=True)
    for i in range(n):
        kind = "pk" if i % 2 == 0 else "ap"
        shutil.copytree(templates[kind], warehouse / f"db{i % DATABASES}.db" / f"{kind}_{i:05d}")
    (warehouse / ".complete").write_text(writer)
    return warehouse


def template_tables(root: Path, writer: str) -> dict[str, Path]:
    """The two template tables (written once; with --keep, reused by later runs)."""
    done = root / f".complete-{writer}"
    if done.exists():
        return {"pk": root / "t.db" / "pk", "ap": root / "t.db" / "ap"}
    shutil.rmtree(root, ignore_errors=True)
    made = (templates_java if writer == "java" else templates_ours)(root)
    done.write_text("")
    return made


# ---------------------------------------------------------------------------------------------- measurements
def _python(code: str, env: dict[str, str] | None = None, timeout: float = 3600) -> dict:
    """Run `code` in a fresh interpreter (this repository on sys.path); it prints one JSON line last."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"measurement failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


DEFINITIONS = """
import json, time
t0 = time.perf_counter()
from paimon_ops.dagster import build_paimon_definitions, PaimonWarehouse
from paimon_ops.dagster.factory import load_specs
t1 = time.perf_counter()
defs = build_paimon_definitions(WAREHOUSE)
t2 = time.perf_counter()
repo = defs.get_repository_def()
jobs = repo.get_all_jobs()
t3 = time.perf_counter()
from dagster._core.remote_representation.external_data import RepositorySnap
RepositorySnap.from_def(repo, defer_snapshots=True)
t4 = time.perf_counter()
specs = load_specs(PaimonWarehouse(uri=WAREHOUSE))
t5 = time.perf_counter()
ops = {ad.node_def.name for ad in [*repo.assets_defs_by_key.values(), *repo.asset_checks_defs_by_key.values()]}
print(json.dumps({"import_s": t1 - t0, "build_s": t2 - t1, "jobs_s": t3 - t2, "total_s": t3 - t1,
                  "snapshot_s": t4 - t3, "specs_s": t5 - t4, "jobs": len(jobs), "ops": len(ops),
                  "assets": len(repo.asset_graph.get_all_asset_keys()),
                  "checks": len(repo.asset_graph.asset_check_keys),
                  # VmHWM, not ru_maxrss: that starts from the parent's peak (bench_scale's, when it runs this)
                  "peak_rss_mib": int(next(l.split()[1] for l in open("/proc/self/status")
                                           if l.startswith("VmHWM:"))) / 1024}))
"""

SENSORS = """
import json, time
from dagster import DagsterInstance, build_sensor_context
from paimon_ops.dagster import build_paimon_definitions
from paimon_ops.dagster.sensors import _load_cursor

defs = build_paimon_definitions(WAREHOUSE)
repo = defs.get_repository_def()
resources = dict(repo.get_top_level_resources())
out = {}
with DagsterInstance.from_config(HOME) as instance:
    for sensor in repo.sensor_defs:
        # the first pass: ticks until one evaluates no table it had not evaluated before
        cursor, times, events, requests, evaluated = None, [], 0, 0, -1
        while True:
            ctx = build_sensor_context(instance=instance, cursor=cursor, repository_def=repo,
                                       sensor_name=sensor.name, resources=resources)
            t0 = time.perf_counter()
            data = sensor.evaluate_tick(ctx)
            times.append(time.perf_counter() - t0)
            for e in data.asset_events:  # what the daemon does with them (not timed)
                instance.report_runless_asset_event(e)
            events += len(data.asset_events)
            requests += len(data.run_requests or [])
            cursor = data.cursor
            now_evaluated = len(_load_cursor(cursor)["tables"])
            if now_evaluated == evaluated or len(times) > 500:
                times.pop()  # that tick was a steady one
                break
            evaluated = now_evaluated
        steady = []
        for _ in range(2):
            ctx = build_sensor_context(instance=instance, cursor=cursor, repository_def=repo,
                                       sensor_name=sensor.name, resources=resources)
            t0 = time.perf_counter()
            data = sensor.evaluate_tick(ctx)
            steady.append(time.perf_counter() - t0)
            assert not data.run_requests and not data.asset_events, sensor.name
        out[sensor.name] = {"first_tick_s": times[0], "first_pass_ticks": len(times), "max_tick_s": max(times),
                            "first_pass_s": sum(times), "steady_tick_s": min(steady), "events": events,
                            "requests": requests, "evaluated": evaluated, "cursor_bytes": len(cursor or "")}
print(json.dumps(out))
"""

RUN_WORKER = """
import json, os, subprocess, sys, time
from dagster import AssetKey, DagsterEventType, DagsterInstance
from dagster._cli.api import ExecuteRunArgs
from dagster._core.definitions.reconstruct import ReconstructableRepository
from dagster._serdes import serialize_value

recon_repo = ReconstructableRepository.for_file(os.path.join(REPO, "definitions.py"), "defs", REPO)
recon_job = recon_repo.get_reconstructable_job("paimon_observe")
job = recon_job.get_definition()
key = AssetKey(["paimon", "db0", "pk_00000"])
with DagsterInstance.from_config(HOME) as instance:
    run = instance.create_run_for_job(job_def=job.get_subset(asset_selection={key}), asset_selection=frozenset({key}),
                                      job_code_origin=recon_job.get_python_origin(),
                                      tags={"paimon/table": "db0.pk_00000"})
    args = ExecuteRunArgs(job_origin=recon_job.get_python_origin(), run_id=run.run_id,
                          instance_ref=instance.get_ref(), set_exit_code_on_failure=True)
    started = time.time()
    proc = subprocess.run([sys.executable, "-m", "dagster", "api", "execute_run", serialize_value(args)],
                          cwd=REPO, capture_output=True, text=True)
    ended = time.time()
    logs = instance.all_logs(run.run_id)
    kinds = {}
    for e in logs:  # the first event of each kind
        if e.dagster_event:
            kinds.setdefault(e.dagster_event.event_type, e.timestamp)
    status = instance.get_run_by_id(run.run_id).status.value
print(json.dumps({"load_s": kinds.get(DagsterEventType.RUN_START, ended) - started, "total_s": ended - started,
                  "worker_started_s": kinds.get(DagsterEventType.ENGINE_EVENT, ended) - started, "status": status,
                  "exit": proc.returncode, "stderr": proc.stderr[-2000:] if proc.returncode else ""}))
"""


def measure(warehouse: Path, home: Path) -> dict:
    env = {"PAIMON_OPS_WAREHOUSE": str(warehouse), "DAGSTER_HOME": str(home)}
    prelude = f"WAREHOUSE = {str(warehouse)!r}\nHOME = {str(home)!r}\nREPO = {str(REPO)!r}\n"
    return {
        "definitions": _python(prelude + textwrap.dedent(DEFINITIONS), env),
        "sensors": _python(prelude + textwrap.dedent(SENSORS), env),
        "run_worker": _python(prelude + textwrap.dedent(RUN_WORKER), env),
    }


# ---------------------------------------------------------------------------------------------- the CLI chain
CHAIN = (("auto-tag", ()), ("expire-partitions", ("--exclude", "*.pk_*")), ("expire-snapshots", ()),
         ("expire-tags", ()), ("remove-orphans", ()))


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def _kib(pid: int, path: str, field: str) -> int:
    try:
        with open(f"/proc/{pid}/{path}") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_measured(cmd: list[str]) -> dict:
    """Wall and CPU seconds of a command (its worker processes included), the peak of its process tree's summed
    RSS and PSS (MiB), its exit status and output lines."""
    import resource
    import threading
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = {"rss": 0, "pss": 0, "procs": 0}

    def sample() -> None:
        while p.poll() is None:
            pids = _tree(p.pid)
            peak["rss"] = max(peak["rss"], sum(_kib(q, "status", "VmRSS") for q in pids))
            peak["pss"] = max(peak["pss"], sum(_kib(q, "smaps_rollup", "Pss") for q in pids))
            peak["procs"] = max(peak["procs"], len(pids))
            time.sleep(0.05)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = p.communicate()
    wall = time.perf_counter() - t
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"wall_s": wall, "cpu_s": cpu, "peak_rss_mib": peak["rss"] / 1024, "peak_pss_mib": peak["pss"] / 1024,
            "processes": peak["procs"], "exit": p.returncode, "lines": out.count("\n"),
            "failed": sum(" FAILED: " in ln for ln in out.splitlines()), "stderr": err[-2000:] if p.returncode else ""}


def cli_chain(warehouse: Path, parallel: int) -> dict:
    """The nightly chain on a copy of `warehouse` (each step changes it), `parallel` tables at a time."""
    copy = warehouse.parent / f"{warehouse.name}-chain-{parallel}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(warehouse, copy, symlinks=True)
    steps = {}
    try:
        load = os.getloadavg()[0]
        for command, extra in CHAIN:
            steps[command] = run_measured([sys.executable, "-m", "paimon_ops.cli", command, str(copy), "*.*",
                                           *extra, "--parallel", str(parallel)])
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    return {"parallel": parallel, "steps": steps, "load_before": load, "load_after": os.getloadavg()[0]}


def report_chain(n: int, c: dict) -> None:
    steps = c["steps"]
    print(f"\n== the nightly chain through the CLI, {n:,} tables, --parallel {c['parallel']} "
          f"({os.cpu_count()} CPUs; load average {c['load_before']:.1f} before, {c['load_after']:.1f} after) ==")
    print(f"{'step':<18} {'wall':>8} {'CPU':>8} {'peak RSS':>9} {'peak PSS':>9} {'procs':>6} {'tables':>7} "
          f"{'failed':>7} {'exit':>5}")
    for command, r in steps.items():
        print(f"{command:<18} {r['wall_s']:>7.1f}s {r['cpu_s']:>7.1f}s {r['peak_rss_mib']:>6.0f}MiB "
              f"{r['peak_pss_mib']:>6.0f}MiB {r['processes']:>6} {r['lines'] - 1:>7} {r['failed']:>7} {r['exit']:>5}")
        if r["stderr"] and r["exit"] not in (0, 2):
            print(r["stderr"])
    wall = sum(r["wall_s"] for r in steps.values())
    cpu = sum(r["cpu_s"] for r in steps.values())
    print(f"{'chain':<18} {wall:>7.1f}s {cpu:>7.1f}s {max(r['peak_rss_mib'] for r in steps.values()):>6.0f}MiB "
          f"{max(r['peak_pss_mib'] for r in steps.values()):>6.0f}MiB   ({wall / n * 1000:.1f} ms a table)")


# ---------------------------------------------------------------------------------------------- report
def report(n: int, m: dict) -> None:
    d = m["definitions"]
    print(f"\n== {n:,} tables ({d['assets']:,} assets, {d['checks']:,} checks; {d['ops']} ops, "
          f"{d['jobs']} jobs) ==")
    print(f"definitions built {d['build_s']:.2f} s (of which reading the tables' metadata ~{d['specs_s']:.2f} s) "
          f"+ every job resolved {d['jobs_s']:.2f} s = {d['total_s']:.2f} s; repository snapshot "
          f"{d['snapshot_s']:.2f} s; import {d['import_s']:.2f} s; peak RSS {d['peak_rss_mib']:.0f} MiB")
    print(f"{'sensor':<34} {'first tick':>10} {'ticks/pass':>10} {'max tick':>9} {'steady tick':>11} "
          f"{'cursor':>8}")
    for name, s in m["sensors"].items():
        print(f"{name:<34} {s['first_tick_s']:>9.2f}s {s['first_pass_ticks']:>10} {s['max_tick_s']:>8.2f}s "
              f"{s['steady_tick_s']:>10.2f}s {s.get('cursor_bytes', 0):>7}B")
    r = m["run_worker"]
    print(f"run worker for one table (paimon_observe): process up after {r['worker_started_s']:.2f} s, code location "
          f"loaded and job resolved after {r['load_s']:.2f} s, run ended after {r['total_s']:.2f} s ({r['status']})")
    if r["exit"]:
        print(r["stderr"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="500,5000")
    p.add_argument("--writer", choices=("java", "ours"), default="java")
    p.add_argument("--keep", help="build the warehouses here and keep them")
    p.add_argument("--parts", default="cli,dagster", help="what to measure: cli (the nightly chain), dagster")
    p.add_argument("--parallel", default="2", help="--parallel of the CLI chain; several (1,2) compare")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    parts = set(args.parts.split(","))
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        made = template_tables(root / f"templates-{args.writer}", args.writer)
        print(f"templates written by {'Java Paimon 0.9' if args.writer == 'java' else 'paimon-ops'} in "
              f"{time.perf_counter() - t0:.1f} s; {os.cpu_count()} CPUs")
        results = {}
        for n in sizes:
            t0 = time.perf_counter()
            warehouse = build_fleet(root, n, made)
            print(f"\n{n:,} tables copied in {time.perf_counter() - t0:.1f} s; measuring …", flush=True)
            results[n] = {}
            if "cli" in parts:
                results[n]["cli"] = []
                for parallel in (int(x) for x in args.parallel.split(",")):
                    results[n]["cli"].append(cli_chain(warehouse, parallel))
                    report_chain(n, results[n]["cli"][-1])
            if "dagster" in parts:
                home = root / f"dagster-home-{n}"
                home.mkdir(exist_ok=True)
                (home / "dagster.yaml").write_text(DAGSTER_YAML)
                results[n]["dagster"] = measure(warehouse, home)
                report(n, results[n]["dagster"])
        print("\n" + json.dumps({str(k): v for k, v in results.items()}, default=str))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
