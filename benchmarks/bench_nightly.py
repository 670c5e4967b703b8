"""The nightly chain of a fleet, end to end through each orchestrator, in one go: a warehouse of N small Java-written
tables (bench_fleet.py's templates: a deletion-vector primary-key table with daily tags, a partitioned append table;
half each, over ten databases), then

* dagster: a real instance (DAGSTER_HOME, SQLite storage), `dagster-daemon run` on this repository's code location
  (definitions.py, built from its warehouse description: PAIMON_OPS_DEFS_STATE, written first) — the nightly
  schedule set to tick once, about two minutes ahead, its runs (one per shard) queued, launched by the daemon's run launcher and
  executed by run workers; from the tick to the last run's end; then the per-table results from the instance (each
  table's latest observation; with --fail-one, the table whose manifests were corrupted must show failed and every
  other one done);
* dagster-sensor (--sensor): the dv-ratio sensor over tables made due (every primary-key table's deletion vectors
  pass the threshold: `compaction.dv-ratio-threshold` set low in its schema's options), the runs of its ticks
  executed by the daemon; from its first run's creation to the last run's end (after 75 s without a new run);
* airflow: a real Airflow 3 (API server, DAG processor, scheduler with the LocalExecutor, SQLite) in .venv-airflow,
  the example `paimon_nightly` DAG (a mapped task per shard, its cron removed) triggered; from the trigger to the DAG
  run's end; then the per-table results from the shards' XComs;
* cli: the same chain through the command line's table patterns (`cli_chain`, the engine's own fleet runs: give it
  `--cli-args "--parallel 2"` where the CLI has it).

For each: wall time, CPU time (user + system of every process the orchestrator ran: sampled from /proc over the
process trees it started) and peak memory (the largest single process, and the largest sum at one sample), with the
machine's load average before and after. Figures print; none is asserted.

Run: .venv/bin/python benchmarks/bench_nightly.py [--tables 5000] [--parts dagster,airflow,cli] [--sensor]
     [--fail-one] [--shard-size 500] [--keep DIR] [--warehouse DIR (reuse)] [--concurrent-runs 2]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

PY = sys.executable
AIRFLOW_BIN = REPO / ".venv-airflow" / "bin"
CLK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


# ---------------------------------------------------------------------------------------------- process trees
class Tree:
    """CPU and memory of every process descending from some roots, sampled from /proc (a process that lives between
    two samples is missed; samples every 0.2 s)."""

    def __init__(self, roots: list[int]):
        self.roots = set(roots)
        self.cpu: dict[int, float] = {}  # pid -> latest utime+stime (s)
        self.peak_one = 0
        self.peak_sum = 0

    def sample(self) -> None:
        parents: dict[int, int] = {}
        stats: dict[int, tuple[float, int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            pid = int(entry)
            parents[pid] = int(fields[1])
            stats[pid] = ((int(fields[11]) + int(fields[12])) / CLK, int(fields[21]) * PAGE)
        mine = set()
        for pid in stats:
            p, hops = pid, 0
            while p > 1 and hops < 64:
                if p in self.roots:
                    mine.add(pid)
                    break
                p, hops = parents.get(p, 0), hops + 1
        total = 0
        for pid in mine:
            cpu, rss = stats[pid]
            self.cpu[pid] = max(self.cpu.get(pid, 0.0), cpu)
            self.peak_one = max(self.peak_one, rss)
            total += rss
        self.peak_sum = max(self.peak_sum, total)

    @property
    def cpu_s(self) -> float:
        return sum(self.cpu.values())


def wait_sampling(tree: Tree, done, timeout: float, what: str, logs: list[Path] = ()) -> float:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        tree.sample()
        if done():
            return time.time()
        time.sleep(0.2)
    tails = "".join(f"\n--- {p} ---\n{p.read_text()[-3000:]}" for p in logs if p.exists())
    raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}{tails}")


def start(args: list[str], env: dict, log: Path, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(args, env=env, cwd=cwd, stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)


def loadavg() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


def figures(name: str, wall: float, tree: Tree, extra: str = "") -> dict:
    out = {"part": name, "wall_s": round(wall, 1), "cpu_s": round(tree.cpu_s, 1),
           "peak_process_mib": round(tree.peak_one / 2**20), "peak_total_mib": round(tree.peak_sum / 2**20),
           "load_after": loadavg()}
    print(f"{name}: {wall:.1f} s wall, {tree.cpu_s:.1f} s CPU, peak {out['peak_process_mib']} MiB in one process, "
          f"{out['peak_total_mib']} MiB together; load average {out['load_after']}{extra}", flush=True)
    return out


# ---------------------------------------------------------------------------------------------- warehouse
def warehouse(root: Path, n: int, reuse: str | None) -> Path:
    if reuse:
        return Path(reuse)
    import bench_fleet as bf
    t0 = time.perf_counter()
    templates = bf.templates_java(root / "templates")
    wh = bf.build_fleet(root, n, templates)
    print(f"{n:,} Java-written tables in {time.perf_counter() - t0:.0f} s at {wh}", flush=True)
    return wh


def corrupt(wh: Path) -> str:
    """Corrupt the data manifests of the first append table: its maintenance must fail, and only its."""
    table = sorted((wh / "db1.db").glob("ap_*"))[0]
    for f in (table / "manifest").glob("manifest-*"):
        if not f.name.startswith("manifest-list-"):
            f.write_bytes(b"not an avro file")
    return f"db1.{table.name}"


# ---------------------------------------------------------------------------------------------- dagster
DAGSTER_YAML = """\
concurrency:
  pools:
    default_limit: 1
  runs:
    max_concurrent_runs: {runs}
telemetry:
  enabled: false
"""


def dagster_part(wh: Path, work: Path, args, failing: str | None, sensor: bool = False) -> dict:
    home = work / ("dagster-sensor" if sensor else "dagster")
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    (home / "dagster.yaml").write_text(DAGSTER_YAML.format(runs=args.concurrent_runs))
    state = home / "paimon-state.json"
    env = {**os.environ, "DAGSTER_HOME": str(home), "PAIMON_OPS_WAREHOUSE": str(wh),
           "PAIMON_OPS_DEFS_STATE": str(state), "PAIMON_OPS_PLACEMENT": "local",
           "PAIMON_OPS_SHARD_SIZE": str(args.shard_size), "PYTHONPATH": str(REPO)}
    if sensor:
        env.update({"PAIMON_OPS_SENSOR_INTERVAL": "30", "PAIMON_OPS_SENSOR_TICK_BUDGET": "50"})
    t0 = time.perf_counter()
    subprocess.run([PY, "-m", "paimon_ops.dagster.state", "refresh", "--warehouse", str(wh), "--state", str(state)],
                   env=env, check=True, cwd=REPO)
    print(f"warehouse description written in {time.perf_counter() - t0:.1f} s", flush=True)
    # the code location's load from the description, alone (a fresh process: what a code server / run worker does)
    load = subprocess.run([PY, "-c", "import time; t = time.perf_counter(); import definitions; "
                           "d = definitions.defs.get_repository_def(); print(time.perf_counter() - t)"],
                          env=env, cwd=REPO, capture_output=True, text=True, check=True)
    load_s = float(load.stdout.strip().splitlines()[-1])
    print(f"code location loaded from the description in {load_s:.2f} s (import of Dagster included)", flush=True)
    target = "paimon_dv_ratio_sensor" if sensor else "paimon_nightly_schedule"
    if not sensor:
        env["PAIMON_OPS_NIGHTLY_CRON"] = once_a_day_soon()
    ws = ["-w", str(REPO / "workspace.yaml")]
    log = home / "daemon.log"
    daemon = start([str(Path(PY).parent / "dagster-daemon"), "run", *ws], env, log, REPO)
    tree = Tree([daemon.pid])
    try:
        time.sleep(5)
        cmd = "sensor" if sensor else "schedule"
        subprocess.run([str(Path(PY).parent / "dagster"), cmd, "start", target, *ws], env=env, cwd=REPO,
                       check=True, capture_output=True)
        db = home / "history" / "runs.db"

        def runs() -> list[tuple]:
            if not db.exists():
                return []
            with sqlite3.connect(db, timeout=30) as c:
                return c.execute("select run_id, status, create_timestamp, update_timestamp from runs").fetchall()

        wait_sampling(tree, lambda: bool(runs()), 600, f"the {cmd}'s first runs", [log])
        first = min(_epoch(r[2]) for r in runs())
        # from the tick: the schedule's minute (its evaluation and the runs' creation included); the sensor's first
        # run's creation
        tick = first if sensor else first - first % 60
        expected = None if sensor else sum(-(-len(list(d.glob("*"))) // args.shard_size) for d in wh.glob("*.db"))
        quiet_since = [time.monotonic(), 0]

        def finished() -> bool:
            rs = runs()
            if len(rs) != quiet_since[1]:
                quiet_since[:] = [time.monotonic(), len(rs)]
            if expected is not None and len(rs) < expected:
                return False
            if sensor and time.monotonic() - quiet_since[0] < 75:  # later ticks may still find tables
                return False
            return all(r[1] in ("SUCCESS", "FAILURE", "CANCELED") for r in rs)
        wait_sampling(tree, finished, args.timeout, "every run to finish", [log])
        end = max(_epoch(r[3]) for r in runs())
        subprocess.run([str(Path(PY).parent / "dagster"), cmd, "stop", target, *ws], env=env, cwd=REPO,
                       capture_output=True)
        statuses = [r[1] for r in runs()]
    finally:
        stop([daemon])

    results = dagster_results(home, wh, failing)
    extra = (f"; {len(statuses)} runs {dict((s, statuses.count(s)) for s in set(statuses))}; "
             f"code location load {load_s:.2f} s; {results['summary']}")
    out = figures("dagster-sensor" if sensor else "dagster", end - tick, tree, extra)
    out.update(results, runs=len(statuses), load_s=load_s)
    return out


def once_a_day_soon(lead_s: float = 120) -> str:
    """A cron ticking once a day (UTC), at the first whole minute at least `lead_s` from now: time for the daemon and
    the schedule's start to come up, and exactly one tick during the benchmark (Dagster deduplicates a schedule's run
    keys within a tick only, so a cron of every minute would request every shard again each minute)."""
    import datetime as dt
    at = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=lead_s + 59)
    return f"{at.minute} {at.hour} * * *"


def _epoch(value) -> float:
    """A timestamp of Dagster's SQLite run storage (naive UTC text or a datetime) as epoch seconds."""
    import calendar
    import datetime as dt
    if isinstance(value, (int, float)):
        return float(value)
    d = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(str(value))
    return calendar.timegm(d.timetuple()) + d.microsecond / 1e6


def dagster_results(home: Path, wh: Path, failing: str | None) -> dict:
    """Each table's latest observation in the instance: done, or failed (and which)."""
    code = (
        "import json, sys\nfrom dagster import DagsterInstance, AssetKey\n"
        f"idents = {sorted(f'{p.parent.name[:-3]}.{p.name}' for p in wh.glob('*.db/*'))!r}\n"
        "keys = [AssetKey(['paimon', *i.split('.')]) for i in idents]\n"
        f"with DagsterInstance.from_config({str(home)!r}) as inst:\n"
        "    done, failed, missing = 0, [], 0\n"
        "    for key in keys:\n"  # the SQLite storage keeps no latest observation on the asset record
        "        records = inst.fetch_observations(key, limit=1).records\n"
        "        if not records:\n            continue\n"
        "        md = records[0].asset_observation.metadata\n"
        "        if 'failed' in md:\n            failed.append('.'.join(key.path[1:]))\n"
        "        else:\n            done += 1\n"
        "print(json.dumps({'done': done, 'failed': failed, 'tables': len(keys)}))\n")
    proc = subprocess.run([PY, "-c", code], env={**os.environ, "DAGSTER_HOME": str(home)}, capture_output=True,
                          text=True, check=True)
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    ok = (r["failed"] == ([failing] if failing else [])) and r["done"] == r["tables"] - len(r["failed"])
    r["summary"] = (f"{r['done']} of {r['tables']} tables show done, failed: {r['failed'] or 'none'}"
                    + (" (as expected)" if ok else " (NOT as expected)"))
    return r


# ---------------------------------------------------------------------------------------------- airflow
def airflow_part(wh: Path, work: Path, args, failing: str | None) -> dict:
    from tests.net import free_port
    home = work / "airflow"
    shutil.rmtree(home, ignore_errors=True)
    (home / "dags").mkdir(parents=True)
    # the DAG triggered only: unpaused with its cron, the scheduler would also start the run of the latest cron time
    # that passed (catchup=False), a second nightly over the same tables
    dag = (REPO / "paimon_ops" / "airflow" / "example_dags" / "example_paimon_nightly.py").read_text()
    scheduled = 'schedule=os.environ.get("PAIMON_NIGHTLY_SCHEDULE", "0 3 * * *"),'
    if scheduled not in dag:
        raise SystemExit(f"example_paimon_nightly.py no longer has {scheduled!r}: update the benchmark")
    (home / "dags" / "example_paimon_nightly.py").write_text(dag.replace(scheduled, "schedule=None,"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYTHONPATH", "VIRTUAL_ENV"))}
    env.update({
        "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__DAGS_FOLDER": str(home / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False", "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": str(args.concurrent_runs),
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}?timeout=120",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__API__PORT": str(port), "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API_AUTH__JWT_SECRET": "paimon-ops-bench", "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5", "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        "AIRFLOW_CONN_PAIMON_DEFAULT": json.dumps({"conn_type": "paimon", "host": str(wh),
                                                  "extra": {"placement": "local"}}),
        "PAIMON_NIGHTLY_SHARD_SIZE": str(args.shard_size), "PATH": f"{AIRFLOW_BIN}:{env.get('PATH', '')}",
        "PYTHONPATH": str(REPO),  # this checkout's paimon_ops, whatever tree the Airflow env's install points at
    })
    af = str(AIRFLOW_BIN / "airflow")
    subprocess.run([af, "db", "migrate"], env=env, cwd=home, check=True, capture_output=True)
    procs = []
    try:
        for name in ("api-server", "dag-processor", "scheduler"):
            procs.append(start([af, name] + (["--port", str(port)] if name == "api-server" else []), env,
                               home / f"{name}.log", home))
        tree = Tree([p.pid for p in procs])
        db = home / "airflow.db"

        def sql(q: str) -> list[tuple]:
            with sqlite3.connect(db, timeout=30) as c:
                return c.execute(q).fetchall()
        logs = [home / f"{n}.log" for n in ("api-server", "dag-processor", "scheduler")]
        wait_sampling(tree, lambda: bool(sql("select dag_id from dag where dag_id = 'paimon_nightly'")), 600,
                      "the DAG to be parsed", logs)
        time.sleep(3)
        trigger = time.time()
        subprocess.run([af, "dags", "trigger", "paimon_nightly"], env=env, cwd=home, check=True, capture_output=True)
        wait_sampling(tree, lambda: sql("select state from dag_run where dag_id = 'paimon_nightly' and run_type = "
                                        "'manual'") in ([("success",)], [("failed",)]), args.timeout,
                      "the DAG run to finish", logs)
        end = time.time()
        state = sql("select state from dag_run where dag_id = 'paimon_nightly' and run_type = 'manual'")[0][0]
        tis = sql("select task_id, map_index, state from task_instance where dag_id = 'paimon_nightly'")
        xcoms = [json.loads(v if isinstance(v, str) else bytes(v).decode()) for (v,) in
                 sql("select value from xcom where dag_id = 'paimon_nightly' and key = 'tables'")]
    finally:
        stop(procs)
    done = sum(x["done"] for x in xcoms)
    failed = [t for x in xcoms for t in x["failed"]]
    tables = len(list(wh.glob("*.db/*")))
    ok = failed == ([failing] if failing else []) and done == tables - len(failed)
    summary = (f"DAG run {state}; {sum(1 for t in tis if t[0] == 'maintain')} shard tasks "
               f"({sum(1 for t in tis if t[0] == 'maintain' and t[2] == 'failed')} failed); {done} of {tables} tables "
               f"done, failed: {failed or 'none'}" + (" (as expected)" if ok else " (NOT as expected)"))
    out = figures("airflow", end - trigger, tree, "; " + summary)
    out.update(done=done, failed=failed, state=state)
    return out


# ---------------------------------------------------------------------------------------------- cli
NIGHTLY_CLI = ("auto-tag", "expire-partitions", "expire-snapshots", "expire-tags", "remove-orphans")


def cli_chain(wh: Path, args) -> dict:
    """The chain through the command line's table patterns (the hook for the engine's fleet runs: --cli-args)."""
    t0 = time.time()
    cpu = 0.0
    peak = 0
    for step in NIGHTLY_CLI:
        cmd = [PY, "-m", "paimon_ops.cli", step, str(wh), "*.*", *args.cli_args.split()]
        p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        cpu += usage.ru_utime + usage.ru_stime
        peak = max(peak, usage.ru_maxrss * 1024)
        print(f"  cli {step}: exit {p.returncode}", flush=True)
    tree = Tree([])
    tree.cpu = {0: cpu}
    tree.peak_one = tree.peak_sum = peak
    return figures("cli", time.time() - t0, tree)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tables", type=int, default=5000)
    p.add_argument("--parts", default="dagster,airflow")
    p.add_argument("--sensor", action="store_true", help="also the dv-ratio sensor's tick over due tables")
    p.add_argument("--fail-one", action="store_true", help="corrupt one table's manifests first")
    p.add_argument("--shard-size", type=int, default=500)
    p.add_argument("--concurrent-runs", type=int, default=os.cpu_count() or 2,
                   help="Dagster runs / Airflow tasks at once (default: the cores)")
    p.add_argument("--timeout", type=float, default=3600)
    p.add_argument("--keep", help="work here and keep it")
    p.add_argument("--warehouse", help="reuse this warehouse (a copy is maintained per part)")
    p.add_argument("--cli-args", default="", help="extra arguments of every CLI step (e.g. '--parallel 2')")
    args = p.parse_args(argv)
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-nightly-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"load average at start {loadavg()}; {os.cpu_count()} CPUs; work in {work}", flush=True)
    try:
        source = warehouse(work, args.tables, args.warehouse)
        results = []
        for part in [x.strip() for x in args.parts.split(",") if x.strip()] + (["dagster-sensor"] if args.sensor
                                                                                else []):
            wh = work / f"wh-{part}"
            shutil.rmtree(wh, ignore_errors=True)
            shutil.copytree(source, wh)  # every part maintains the same tables from the same state
            failing = corrupt(wh) if args.fail_one and part != "dagster-sensor" else None
            print(f"\n== {part} ({args.tables:,} tables; load average {loadavg()}) ==", flush=True)
            if part == "dagster":
                results.append(dagster_part(wh, work, args, failing))
            elif part == "dagster-sensor":
                for f in wh.glob("*.db/pk_*/schema/schema-0"):  # every PK table due: a low dv-ratio threshold
                    s = json.loads(f.read_text())
                    s["options"]["compaction.dv-ratio-threshold"] = "0.01"
                    f.write_text(json.dumps(s))
                results.append(dagster_part(wh, work, args, None, sensor=True))
            elif part == "airflow":
                results.append(airflow_part(wh, work, args, failing))
            elif part == "cli":
                results.append(cli_chain(wh, args))
            else:
                raise SystemExit(f"unknown part {part!r}")
            if not args.keep:
                shutil.rmtree(wh, ignore_errors=True)
        print("\n" + json.dumps(results))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
