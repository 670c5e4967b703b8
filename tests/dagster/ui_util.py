"""Harness of the webserver end-to-end test: a warehouse with snapshots on past days, the Dagster webserver and
daemon as real processes (started in their own sessions and stopped by their own process-group id), GraphQL
helpers and headless Chromium through selenium.

Nothing here stops a process it did not start: `ManagedProcess.stop` signals only the process group whose id is
the pid of the process it launched (`start_new_session=True` makes that pid the group id, and the children the
webserver / daemon spawn — code servers, run workers — stay in that group).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence
from zoneinfo import ZoneInfo

import pyarrow as pa

from tests import lanes
from tests.net import patient

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"
ARTIFACTS = REPO / "tests" / "artifacts"
# Screenshots the documentation shows (docs/getting-started/*.md): every run of a UI test that takes one replaces it,
# so the pictures stay what the current UI shows.
DOCS_SCREENSHOTS = REPO / "docs" / "images" / "screenshots"

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Without these Chromium stalls on a machine without network (first-run, sync, component updates, QUIC).
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1600,1000")

# Every op of a table runs in the pool `paimon/<db>.<table>`; limit 1 as definitions.py asks. The run queue is
# checked every second (default 5 s) so the test does not idle.
DAGSTER_YAML = """\
concurrency:
  pools:
    default_limit: 1
run_coordinator:
  module: dagster.core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
telemetry:
  enabled: false
"""


def browser_missing() -> str | None:
    """Why the UI test cannot run here, or None."""
    for path, pkg in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            return f"{path} not found: install the Debian package {pkg} (./dev.sh test does it as root)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    for tool in ("dagster-webserver", "dagster-daemon"):
        if not (VENV_BIN / tool).exists():
            return f"{VENV_BIN / tool} not found (pip install -e '.[test]')"
    return None


# the backfill daemon's pause between evaluations: Dagster's 30 s is a constant (dagster._daemon.controller), read by
# the backfill loop at each pass; the tests' daemon sets 3 s so that a backfill is launched and marked complete
# within seconds instead of two 30 s waits (every other daemon keeps its own configured interval)
BACKFILL_INTERVAL_S = 3
_DAEMON = ("import sys; import dagster._daemon.controller as c; c.DEFAULT_DAEMON_INTERVAL_SECONDS = {interval}; "
           "from dagster._daemon.cli import main; sys.argv[0] = 'dagster-daemon'; sys.exit(main())")


def daemon_argv(workspace: str | os.PathLike) -> list[str]:
    """`dagster-daemon run -w <workspace>`, with the backfill daemon evaluating every BACKFILL_INTERVAL_S."""
    return [str(VENV_BIN / "python"), "-c", _DAEMON.format(interval=BACKFILL_INTERVAL_S), "run", "-w",
            os.fspath(workspace)]


# ---------------------------------------------------------------------------------------------- warehouse
ORDERS = "shop.orders"
TAG_ZONE = ZoneInfo("Europe/Berlin")
ORDERS_OPTIONS = {"bucket": "1", "tag.create-time": "00:30", "tag.create-time-zone": "Europe/Berlin"}


def berlin_millis(day: dt.date, hour: int, minute: int = 0) -> int:
    return int(dt.datetime(day.year, day.month, day.day, hour, minute, tzinfo=TAG_ZONE).timestamp() * 1000)


@dataclass
class PastDaysWarehouse:
    path: str
    days: list[dt.date]  # every day with commits, oldest first
    commits: list[tuple[int, int]] = field(default_factory=list)  # (snapshot id, commit millis)

    def snapshot_for_day(self, day: dt.date) -> int:
        """The snapshot the tag of `day` must point at: the latest committed at or before the tag deadline, i.e.
        the end of the day plus `tag.create-time` (00:30) in the tag zone. Commits are at day-time, so this is also
        the latest snapshot of the day itself."""
        deadline = berlin_millis(day + dt.timedelta(days=1), 0, 30)
        return max(sid for sid, t in self.commits if t <= deadline)


def build_past_days_warehouse(path: str, today: dt.date, n_days: int = 5) -> PastDaysWarehouse:
    """`shop.orders` (primary key, one bucket, daily tags at 00:30 Europe/Berlin) with commits on each of the
    `n_days` days before `today` (two on some days, so "the latest of the day" is a real choice)."""
    from paimon_ops.table.writer import TableWriter, create_table

    Path(path).mkdir(parents=True, exist_ok=True)
    table = create_table(path, ORDERS, [("id", "INT"), ("name", "STRING"), ("amount", "BIGINT")],
                         primary_keys=["id"], options=dict(ORDERS_OPTIONS))
    days = [today - dt.timedelta(days=n_days - i) for i in range(n_days)]
    wh = PastDaysWarehouse(path, days)
    schema = pa.schema([("id", pa.int32()), ("name", pa.string()), ("amount", pa.int64())])
    next_id = 0
    for i, day in enumerate(days):
        for hour in ((9, 18) if i % 2 else (12,)):
            ids = list(range(next_id, next_id + 5))
            next_id += 3  # overlap: later commits update earlier keys
            w = TableWriter(table.refresh())
            w.write(pa.Table.from_pydict({"id": ids, "name": [f"n{k}-{day}" for k in ids],
                                          "amount": [k * 10 + hour for k in ids]}, schema=schema))
            at = berlin_millis(day, hour)
            snap = w.commit(now_millis=at)
            wh.commits.append((snap.id, at))
    return wh


BIG = "shop.big"  # a table whose full compaction runs long enough to be seen while it runs


def build_big_table(path: str, rows: int = 500_000, writes: int = 4, buckets: int = 16) -> None:
    """`shop.big`: a primary-key table of `buckets` buckets, `writes` overlapping commits of `rows` rows each (level-0
    files in every bucket), so its full compaction is one task per bucket over 2 M rows (1.25 M keys): seconds, with progress."""
    import numpy as np

    from paimon_ops.table.writer import TableWriter, create_table

    table = create_table(path, BIG, [("id", "BIGINT"), ("name", "STRING"), ("amount", "BIGINT")],
                         primary_keys=["id"], options={"bucket": str(buckets)})
    for i in range(writes):
        ids = np.arange(i * rows // 2, i * rows // 2 + rows, dtype=np.int64)  # half of each write updates keys
        w = TableWriter(table.refresh())
        w.write(pa.table({"id": ids, "name": pa.array(np.char.add("name-", ids.astype(str))), "amount": ids * 3 + i}))
        w.commit()


# ---------------------------------------------------------------------------------------------- processes
class ManagedProcess:
    """One process started in its own session (so its pid is its process-group id), output to a log file."""

    def __init__(self, name: str, argv: Sequence[str], cwd: Path, env: Mapping[str, str], log_path: Path):
        lanes.require("webserver")
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self._log = open(log_path, "wb")
        self.proc = subprocess.Popen(self.argv, cwd=str(cwd), env=dict(env), stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.pid = self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM to the process group this process leads, wait, SIGKILL on timeout; then the same for whatever
        is left of the group (a code server or run worker the leader spawned)."""
        try:
            stop_group(self.proc, timeout)
        finally:
            self._log.close()


def stop_all(procs: Sequence[ManagedProcess], timeout: float = 20.0) -> None:
    """Stop several processes at once: SIGTERM to every group first, so their shutdowns overlap, then wait for each
    (SIGKILL on timeout)."""
    for p in procs:
        if p.alive():
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    errors = []
    for p in procs:
        try:
            p.stop(timeout)
        except Exception as e:  # noqa: BLE001 - stop the others anyway
            errors.append(f"{p.name} (pid {p.pid}): {e}")
    if errors:
        raise RuntimeError("could not stop " + "; ".join(errors))


def stop_group(proc: subprocess.Popen, timeout: float) -> None:
    """Stop the process group led by `proc` (started with start_new_session=True, so its pid is the group id)."""
    pgid = proc.pid
    if proc.poll() is None:
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=10)
    # The leader is gone (and reaped); members of its group may still be shutting down.
    deadline = time.monotonic() + 5
    sent_term = False
    while group_alive(pgid):
        if time.monotonic() > deadline:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            break
        if not sent_term:
            try:
                os.killpg(pgid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            sent_term = True
        time.sleep(0.1)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def dagster_env(dagster_home: Path, warehouse: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DAGSTER_", "PAIMON_OPS_", "PYTEST_"))}
    env.update({
        "DAGSTER_HOME": str(dagster_home),
        "PAIMON_OPS_WAREHOUSE": warehouse,
        "PAIMON_OPS_SPARK_MASTER": "local[1]",
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYTHONUNBUFFERED": "1",
        "DAGSTER_DISABLE_TELEMETRY": "1",
        "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    })
    return env


def init_dagster_home(dagster_home: Path) -> None:
    """Write dagster.yaml and create the instance's SQLite storages now: the webserver and the daemon, started
    together on an empty DAGSTER_HOME, race to create them ("table alembic_version already exists")."""
    from dagster import DagsterInstance

    dagster_home.mkdir(parents=True, exist_ok=True)
    (dagster_home / "dagster.yaml").write_text(DAGSTER_YAML)
    instance = DagsterInstance.from_config(str(dagster_home))
    try:
        instance.get_runs_count()  # touch run storage; schedule and event-log storages are created with it
    finally:
        instance.dispose()


# ---------------------------------------------------------------------------------------------- GraphQL
class GraphQLError(AssertionError):
    pass


def graphql(port: int, query: str, variables: Mapping[str, Any] | None = None, timeout: float = 30) -> dict:
    body = json.dumps({"query": query, "variables": dict(variables or {})}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        out = json.loads(resp.read())
    if out.get("errors"):
        raise GraphQLError(f"GraphQL errors: {json.dumps(out['errors'], indent=1)[:3000]}")
    return out["data"]


WORKSPACE_QUERY = """
query {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError {
          __typename
          ... on RepositoryLocation { repositories { name } }
          ... on PythonError { message stack }
        }
      }
    }
    ... on PythonError { message stack }
  }
}
"""

ASSET_QUERY = """
query($path: [String!]!) {
  assetNodeOrError(assetKey: {path: $path}) {
    __typename
    ... on AssetNode { id isPartitioned partitionKeys partitionStats { numMaterialized numPartitions numFailed } }
  }
}
"""

ASSET_EVENTS_QUERY = """
query($path: [String!]!) {
  assetOrError(assetKey: {path: $path}) {
    __typename
    ... on Asset {
      assetMaterializations(limit: 100) { runId partition }
      assetObservations(limit: 100) { runId description metadataEntries { label } }
    }
  }
}
"""

START_SENSOR = """
mutation($s: SensorSelector!) {
  startSensor(sensorSelector: $s) { __typename ... on Sensor { sensorState { status } } ... on PythonError { message } }
}
"""

LAUNCH_RUN = """
mutation($p: ExecutionParams!) {
  launchRun(executionParams: $p) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on InvalidSubsetError { message }
  }
}
"""

RUN_QUERY = """
query($runId: ID!) {
  runOrError(runId: $runId) { __typename ... on Run { status tags { key value } } }
}
"""


def start_sensor(port: int, location: str, name: str) -> None:
    out = graphql(port, START_SENSOR, {"s": {"repositoryLocationName": location, "repositoryName": "__repository__",
                                             "sensorName": name}})["startSensor"]
    assert out.get("sensorState", {}).get("status") == "RUNNING", out


def launch_run(port: int, location: str, job: str, asset_path: Sequence[str], run_config: Mapping[str, Any]) -> str:
    """What the launchpad does: a run of `job` for one asset (and its checks) with this config."""
    params = {"selector": {"repositoryLocationName": location, "repositoryName": "__repository__", "jobName": job,
                           "assetSelection": [{"path": list(asset_path)}]},
              "runConfigData": dict(run_config), "mode": "default"}
    out = graphql(port, LAUNCH_RUN, {"p": params})["launchRun"]
    assert out["__typename"] == "LaunchRunSuccess", out
    return out["run"]["runId"]


LAUNCHPAD_QUERY = """
query($s: PipelineSelector!) { runConfigSchemaOrError(selector: $s) {
  __typename ... on RunConfigSchema { rootDefaultYaml rootConfigType { key }
    allConfigTypes { key typeParamKeys
      ... on CompositeConfigType { fields { name description configTypeKey defaultValueAsJson } } } } } }
"""


def launchpad(port: int, location: str, job: str) -> tuple[str, dict[str, dict]]:
    """What the launchpad of `job` offers: the config it scaffolds (YAML) and every config field reachable from the
    job's root config type, by name (description, default)."""
    out = graphql(port, LAUNCHPAD_QUERY, {"s": {"repositoryLocationName": location, "repositoryName": "__repository__",
                                               "pipelineName": job}})["runConfigSchemaOrError"]
    assert out["__typename"] == "RunConfigSchema", out
    types = {t["key"]: t for t in out["allConfigTypes"]}
    fields: dict[str, dict] = {}
    todo, seen = [out["rootConfigType"]["key"]], set()
    while todo:
        key = todo.pop()
        if key in seen or key not in types:
            continue
        seen.add(key)
        t = types[key]
        todo += t.get("typeParamKeys") or []
        for f in t.get("fields") or ():
            fields[f["name"]] = f
            todo.append(f["configTypeKey"])
    return out["rootDefaultYaml"], fields


def wait_for_run(port: int, run_id: str, procs: Sequence[ManagedProcess], timeout: float) -> dict:
    deadline = time.monotonic() + patient(timeout)
    run: dict = {}
    while time.monotonic() < deadline:
        check_procs(procs)
        run = graphql(port, RUN_QUERY, {"runId": run_id})["runOrError"]
        if run.get("status") == "SUCCESS":
            return run
        if run.get("status") in ("FAILURE", "CANCELED"):
            raise AssertionError(f"run {run_id} {run['status']}:\n{run_failure_logs(port, run_id)}")
        time.sleep(1)
    raise AssertionError(f"run {run_id} did not succeed within {timeout:.0f} s: {run}\n{procs[-1].log_tail()}")


def wait_until(what: str, fn: Callable[[], Any], procs: Sequence[ManagedProcess], timeout: float) -> Any:
    deadline = time.monotonic() + patient(timeout)
    value = None
    while time.monotonic() < deadline:
        check_procs(procs)
        value = fn()
        if value:
            return value
        time.sleep(1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last: {value})\n"
                         f"daemon log:\n{procs[-1].log_tail()}")


def wait_for_http(port: int, procs: Sequence[ManagedProcess], timeout: float) -> None:
    deadline = time.monotonic() + patient(timeout)
    last = None
    while time.monotonic() < deadline:
        check_procs(procs)
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, OSError) as e:
            last = e
        time.sleep(0.3)
    raise AssertionError(f"webserver on port {port} did not answer within {timeout:.0f} s ({last}):\n"
                         f"{procs[0].log_tail()}")


def wait_for_location(port: int, location: str, procs: Sequence[ManagedProcess], timeout: float) -> dict:
    """Poll the workspace until `location` loaded; fail with its load error (message and stack) if it has one."""
    deadline = time.monotonic() + patient(timeout)
    entry: dict = {}
    while time.monotonic() < deadline:
        check_procs(procs)
        ws = graphql(port, WORKSPACE_QUERY)["workspaceOrError"]
        if ws["__typename"] == "PythonError":
            raise AssertionError(f"workspace failed to load: {ws['message']}\n{''.join(ws.get('stack') or [])}")
        entries = {e["name"]: e for e in ws["locationEntries"]}
        entry = entries.get(location, {})
        if entry.get("loadStatus") == "LOADED":
            loc = entry.get("locationOrLoadError") or {}
            if loc.get("__typename") == "PythonError":
                raise AssertionError(f"code location {location} failed to load: {loc['message']}\n"
                                     f"{''.join(loc.get('stack') or [])}")
            if loc.get("__typename") == "RepositoryLocation":
                return loc
        time.sleep(0.5)
    raise AssertionError(f"code location {location} did not load within {timeout:.0f} s: {entry}\n"
                         f"{procs[0].log_tail()}")


def set_nux_seen(port: int) -> None:
    """Dismiss the first-visit ('NUX') dialog for this instance."""
    graphql(port, "mutation { setNuxSeen }")


BACKFILL_QUERY = """
query($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill {
      id status isAssetBackfill numPartitions partitionNames
      assetSelection { path }
      error { message stack }
      runs(limit: 100) { runId status tags { key value } }
    }
    ... on BackfillNotFoundError { message }
    ... on PythonError { message stack }
  }
}
"""

RUN_LOGS_QUERY = """
query($runId: ID!) {
  logsForRun(runId: $runId, limit: 1000) {
    __typename
    ... on EventConnection {
      events {
        __typename
        ... on MessageEvent { message level stepKey }
        ... on ExecutionStepFailureEvent { error { message stack cause { message stack } } }
        ... on RunFailureEvent { error { message stack } }
      }
    }
  }
}
"""

TERMINAL_BACKFILL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}


def get_backfill(port: int, backfill_id: str) -> dict:
    out = graphql(port, BACKFILL_QUERY, {"id": backfill_id})["partitionBackfillOrError"]
    if out["__typename"] != "PartitionBackfill":
        raise AssertionError(f"backfill {backfill_id}: {out}")
    return out


def run_failure_logs(port: int, run_id: str, chars: int = 8000) -> str:
    """The errors of a run (step failures with their stacks, run failure, ERROR-level messages)."""
    events = graphql(port, RUN_LOGS_QUERY, {"runId": run_id})["logsForRun"].get("events") or []
    lines = []
    for e in events:
        err = e.get("error")
        if err:
            lines.append(f"{e['__typename']}: {err['message']}{''.join(err.get('stack') or [])}")
            if err.get("cause"):
                lines.append(f"  caused by: {err['cause']['message']}{''.join(err['cause'].get('stack') or [])}")
        elif e.get("level") in ("ERROR", "CRITICAL"):
            lines.append(f"{e['__typename']} [{e.get('stepKey')}]: {e.get('message')}")
    return "\n".join(lines)[-chars:]


def run_partitions(run: dict, all_keys: Sequence[str]) -> list[str]:
    """The partitions a run materialises: its `dagster/partition`, or the keys of its partition range (a backfill
    of an asset with a single-run backfill policy launches one run for the whole range)."""
    tags = {t["key"]: t["value"] for t in run["tags"]}
    if "dagster/partition" in tags:
        return [tags["dagster/partition"]]
    start, end = tags.get("dagster/asset_partition_range_start"), tags.get("dagster/asset_partition_range_end")
    if start in all_keys and end in all_keys:
        return list(all_keys[all_keys.index(start):all_keys.index(end) + 1])
    return []


def _runs_summary(runs: Sequence[dict], all_keys: Sequence[str]) -> list:
    return [(r["runId"], run_partitions(r, all_keys), r["status"]) for r in runs]


def check_procs(procs: Sequence[ManagedProcess]) -> None:
    for p in procs:
        if not p.alive():
            raise AssertionError(f"{p.name} exited with {p.proc.returncode}:\n{p.log_tail()}")


def wait_for_backfill_runs(port: int, backfill_id: str, partitions: Sequence[str], all_keys: Sequence[str],
                           procs: Sequence[ManagedProcess], timeout: float) -> dict:
    """Poll until the backfill's runs cover `partitions` (one run per partition, or range runs) and all of them
    succeeded. Fails at once, with the errors of the failed runs, when a run fails or the backfill ends first."""
    deadline = time.monotonic() + patient(timeout)
    bf: dict = {}
    while time.monotonic() < deadline:
        check_procs(procs)
        bf = get_backfill(port, backfill_id)
        if bf.get("error"):
            raise AssertionError(f"backfill {backfill_id} failed: {bf['error']['message']}"
                                 f"{''.join(bf['error'].get('stack') or [])}")
        runs = bf["runs"] or []
        failed = [r for r in runs if r["status"] in ("FAILURE", "CANCELED")]
        if failed:
            logs = "\n\n".join(f"run {r['runId']} (partitions {run_partitions(r, all_keys)}) {r['status']}:\n"
                                f"{run_failure_logs(port, r['runId'])}" for r in failed)
            raise AssertionError(f"backfill {backfill_id} has failed runs:\n{logs}")
        covered = {k for r in runs for k in run_partitions(r, all_keys)}
        if runs and covered >= set(partitions) and all(r["status"] == "SUCCESS" for r in runs):
            return bf
        if bf["status"] in TERMINAL_BACKFILL:
            raise AssertionError(f"backfill {backfill_id} ended {bf['status']} with runs "
                                 f"{_runs_summary(runs, all_keys)}")
        time.sleep(1)
    raise AssertionError(f"the runs of backfill {backfill_id} did not all succeed within {timeout:.0f} s: "
                         f"status {bf.get('status')}, runs {_runs_summary(bf.get('runs') or [], all_keys)}\n"
                         f"daemon log:\n{procs[-1].log_tail()}")


def wait_for_backfill_status(port: int, backfill_id: str, procs: Sequence[ManagedProcess], timeout: float) -> dict:
    """Poll until the backfill reaches a terminal status (the daemon re-evaluates backfills every 30 s)."""
    deadline = time.monotonic() + patient(timeout)
    bf: dict = {}
    while time.monotonic() < deadline:
        check_procs(procs)
        bf = get_backfill(port, backfill_id)
        if bf["status"] in TERMINAL_BACKFILL:
            return bf
        time.sleep(1)
    raise AssertionError(f"backfill {backfill_id} still {bf.get('status')} after {timeout:.0f} s\n"
                         f"daemon log:\n{procs[-1].log_tail()}")


# ---------------------------------------------------------------------------------------------- browser
class Browser:
    """Headless Chromium driven by selenium. chromedriver starts in its own session, so its pid is the group id of
    it and the Chromium processes it launches; `close` quits the session and then signals that group only."""

    def __init__(self, user_data_dir: Path, log_path: Path):
        lanes.require("webserver")
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for flag in CHROMIUM_FLAGS:
            opts.add_argument(flag)
        opts.add_argument(f"--user-data-dir={user_data_dir}")
        self.service = Service(CHROMEDRIVER, log_output=str(log_path), popen_kw={"start_new_session": True})
        self.driver = None
        try:
            self.driver = webdriver.Chrome(service=self.service, options=opts)
        except Exception:
            self._kill_group()
            raise
        self.driver.set_page_load_timeout(60)

    @property
    def pid(self) -> int | None:
        proc = getattr(self.service, "process", None)
        return proc.pid if proc is not None else None

    def _kill_group(self) -> None:
        proc = getattr(self.service, "process", None)
        if proc is not None:
            stop_group(proc, 10)

    def close(self) -> None:
        try:
            if self.driver is not None:
                self.driver.quit()  # closes Chromium, then stops chromedriver
        except Exception:  # noqa: BLE001 - a dead browser must not hide the test's own failure
            pass
        finally:
            self._kill_group()


class Shots:
    """Screenshots (and page sources, for debugging selectors) at named steps into the artefact directory."""

    def __init__(self, driver, directory: Path, copy_to: Path | None = None):
        self.driver = driver
        self.directory = directory
        self.copy_to = copy_to
        self.n = 0
        directory.mkdir(parents=True, exist_ok=True)

    def take_checked(self, step: str, expect: Mapping[str, str], timeout: float = 45, docs: str | None = None) -> Path:
        """Wait until every element of `expect` (what -> xpath) is visible, then take the screenshot and check it is a
        real page image (PNG, full window) — the screenshot shows what the test asserted. `docs`: also the
        documentation's picture of that name (`docs_screenshot`)."""
        for what, xpath in expect.items():
            wait_for(self.driver, what, lambda xpath=xpath: visible(self.driver, xpath), timeout)
        path = self.take(step)
        data = path.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000, f"{path} is not a page screenshot"
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert width >= 1200 and height >= 700, (width, height)
        missing = [what for what, xpath in expect.items() if not visible(self.driver, xpath)]
        assert not missing, f"gone from the page when the screenshot was taken: {missing}"
        if docs is not None:
            docs_screenshot(path, docs)
        return path

    def take(self, step: str, source: bool = False) -> Path:
        self.n += 1
        path = self.directory / f"{self.n:02d}-{step}.png"
        self.driver.save_screenshot(str(path))
        if source:
            path.with_suffix(".html").write_text(self.driver.page_source)
        if self.copy_to is not None:
            self.copy_to.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, self.copy_to / path.name)
        return path


def docs_screenshot(shot: Path, name: str) -> Path:
    """Keep a checked screenshot as the documentation's picture `docs/images/screenshots/<name>.png`."""
    DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    target = DOCS_SCREENSHOTS / f"{name}.png"
    partial = target.with_name(f".{name}.{os.getpid()}.png")  # replaced whole: another worker may build the docs now
    shutil.copyfile(shot, partial)
    os.replace(partial, target)
    return target


def wait_for(driver, what: str, fn: Callable[[], Any], timeout: float = 60, poll: float = 0.25) -> Any:
    """Retry `fn` until it returns a truthy value; React re-renders make elements stale or briefly missing, so
    lookup errors are retried too. Fails with `what`, the URL and the last error."""
    from selenium.common.exceptions import WebDriverException

    deadline = time.monotonic() + patient(timeout)
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = fn()
            if value:
                return value
        except (WebDriverException, IndexError) as e:
            last = e
        time.sleep(poll)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} on {driver.current_url}"
                         f" (last error: {str(last).splitlines()[0] if last else None})")


def visible(driver, xpath: str) -> list:
    from selenium.webdriver.common.by import By
    return [e for e in driver.find_elements(By.XPATH, xpath) if e.is_displayed()]


def click(driver, xpath: str, what: str, timeout: float = 60) -> None:
    """Click the first visible, enabled element matching `xpath` (re-finding it if a re-render made it stale)."""
    def attempt():
        for e in visible(driver, xpath):
            if e.is_enabled() and e.get_attribute("disabled") is None:
                e.click()
                return True
        return False
    wait_for(driver, what, attempt, timeout)
