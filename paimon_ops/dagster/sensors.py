"""Sensors — one per kind across all tables, each with per-table cursors and run keys. Cheap: they read only
metadata (snapshot JSON, manifests, the index manifest, tag names).

* `paimon_observation_sensor`: for every table that changed (new snapshot or tags) records an observation on the
  table asset (rows, bytes, files, level-0 files, snapshots, tags, deleted-row ratio), evaluates the cheap checks,
  and syncs the table's own history (`synced_from_table: true`, idempotent): a new writer commit (not COMPACT) is a
  materialisation of the table — so assets reading it see it updated — and daily tags that exist in the table but
  not in Dagster are materialised tags partitions. No runs.
* `paimon_dv_ratio_sensor` (tables with deletion vectors): requests a `dv-ratio` compaction of exactly the
  buckets holding a file whose deleted-row ratio passes `compaction.dv-ratio-threshold`;
* `paimon_small_files_sensor`: requests a compaction (`minor` for primary-key tables, `small-files` for append
  tables) of exactly the buckets at or over `compaction.small-files-threshold`;
* `paimon_snapshot_count_sensor`: requests a snapshot expiry when a table holds more snapshots than its retention
  allows;
* `paimon_manifest_sensor`: requests a manifest compaction when the latest snapshot reads at least
  `manifest.compaction-trigger` manifests (default `manifest.merge-min-count`, 30);
* `paimon_partition_expiry_sensor` (partitioned tables with `partition.expiration-time`): every
  `partition.expiration-check-interval` (as Java's writers check; the last check is in the cursor) — partitions
  expire as time passes, not only on a new snapshot — requests a partition expiry when a partition is due.

Cursor: JSON `{"tables": {db.table: last evaluated state}, "next": i}` (zlib-compressed when large) — a table
whose latest snapshot did not change (partition expiry: whose check interval has not passed) is skipped without
opening it: a steady tick reads the LATEST hint of each table and checks that the snapshot after it does not exist,
as Java finds the latest snapshot (the observation sensor also lists the tag directory), on object stores from a
few threads. Tables that are due are measured round-robin within a time budget per tick (default 20 s, a third of
Dagster's 60 s sensor timeout): a first tick over thousands of tables measures what fits and leaves the rest,
first, to the next ticks.
Run keys: kind, table, snapshot (partition expiry: and the check time). While any run that changes a table is queued
or in progress — a sensor's, a schedule's, or one launched from an asset page or a backfill (recognised by its asset
selection) — the sensors wait for it (the table's cursor is not advanced).
"""
from __future__ import annotations

import base64
import hashlib
import json
import posixpath
import time
import zlib
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from functools import partial
from typing import Any, Callable, Iterator, Optional, Sequence, cast

from dagster import (
    AssetCheckEvaluation,
    AssetMaterialization,
    AssetObservation,
    AssetPartitionStatus,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

import paimon_ops.dagster.checks as checks_mod
import paimon_ops.dagster.due as due
import paimon_ops.health as health
from paimon_ops.api import health_signals
from paimon_ops.catalog import Catalog as EngineCatalog
from paimon_ops.dagster.instance import POOL_WARNING, unlimited_pools
from paimon_ops.dagster.jobs import IMPLICIT_ASSET_JOB_NAME
from paimon_ops.dagster.observe import (
    NOT_FETCHED,
    RECLAIMED_TOTAL,
    data_materialization,
    latest_materializations,
    reclaimed_total,
    state_key,
    table_state,
)
from paimon_ops.dagster.operations import now_millis
from paimon_ops.dagster.refs import DEFAULT_NAMES, DEFAULT_SHARD_SIZE, Names, TableRef
from paimon_ops.dagster.resources import PaimonWarehouse
from paimon_ops.dagster.spec import partition_key_of
from paimon_ops.dagster.tags_asset import TAG_REMOVED, tags_partitions
from paimon_ops.errors import PaimonOpsError
from paimon_ops.format.snapshot import parse_hint
from paimon_ops.lifecycle.partition_expiry import partition_expiry_due
from paimon_ops.operations.model import Health
from paimon_ops.options import Options
from paimon_ops.table.fileio import FileIO
from paimon_ops.table.table import LATEST, FileStoreTable, SnapshotManager, TagManager

ACTIVE = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
          DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
MAX_TAG_LEN = 200
MAX_SKIP_LEN = 1500
READ_ERRORS = (PaimonOpsError, OSError)
DEFAULT_BUDGET_S = 20.0  # per tick; Dagster gives a sensor evaluation 60 s (DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS)
PROBE_THREADS = 16  # hint reads in flight on an object store (local disks: one thread, it is faster)
OBSERVE_BATCH = 50  # tables whose latest materialisation is fetched in one query
CURSOR_COMPRESS_OVER = 4096  # characters; a 5,000-table cursor is ~200 kB of JSON, ~25 kB compressed

OBSERVATION_SENSOR = "paimon_observation_sensor"


# ---------------------------------------------------------------------------------------------- shared skeleton
def busy_tables(context: SensorEvaluationContext, refs: Sequence[TableRef]) -> dict[str, str]:
    """db.table -> id of a queued / running run that changes it (one query per tick)."""
    try:
        instance = context.instance
    except Exception:  # noqa: BLE001 - contexts built without an instance
        return {}
    by_key = {}
    for r in refs:
        by_key[r.key] = r.ident
        if r.tags_key is not None:
            by_key[r.tags_key] = r.ident
    out: dict[str, str] = {}
    for rec in instance.get_run_records(filters=RunsFilter(statuses=ACTIVE), limit=5000):
        run = rec.dagster_run
        ident = (run.tags or {}).get("paimon/table")
        if ident:
            out.setdefault(ident, run.run_id)
        for k in run.asset_selection or ():
            if k in by_key:
                out.setdefault(by_key[k], run.run_id)
    return out


def _load_cursor(text: Optional[str]) -> dict[str, Any]:
    try:
        if text and text.startswith("z:"):
            text = zlib.decompress(base64.b64decode(text[2:])).decode()
        c = json.loads(text) if text else {}
    except (ValueError, zlib.error):
        c = {}
    if not isinstance(c, dict):
        c = {}
    c.setdefault("tables", {})
    c.setdefault("next", 0)
    return c


def _dump_cursor(cursor: dict[str, Any]) -> str:
    """JSON; compressed when large (Dagster stores the cursor with every tick)."""
    text = json.dumps(cursor, sort_keys=True, separators=(",", ":"))
    if len(text) <= CURSOR_COMPRESS_OVER:
        return text
    return "z:" + base64.b64encode(zlib.compress(text.encode(), 6)).decode()


# ---------------------------------------------------------------------------------------------- cheap probes
def latest_snapshot_id(io: FileIO, root: str) -> Optional[int]:
    """The latest snapshot id as Java finds it: the LATEST hint, trusted when the snapshot after it does not exist
    (one read and one existence check); else the engine's own lookup (listing the directory)."""
    snapshots = SnapshotManager(io, root)
    path = posixpath.join(snapshots.dir, LATEST)
    try:
        hint = parse_hint(io.read_bytes(path), path)
    except OSError:
        hint = None
    if hint is not None and hint > 0 and not io.is_file(snapshots.path(hint + 1)):  # one HEAD on an object store
        return hint
    return snapshots.latest_id()


def observed_state(io: FileIO, root: str) -> str:
    """What `observe.state_key` says of a table, from its hint and its tag directory (without opening the table)."""
    tags = TagManager(io, root).names()
    return f"{latest_snapshot_id(io, root)}:{len(tags)}:{tags[-1] if tags else ''}"


def probed(refs: Sequence[TableRef], probe: Callable[[TableRef], Any], parallel: bool) -> Iterator[tuple[TableRef, Any]]:
    """(ref, probe(ref) or the exception it raised), in order; `parallel`: a few probes in flight (object stores,
    where each read is a request). Stopping early cancels what has not started."""
    def safe(ref: TableRef) -> Any:
        try:
            return probe(ref)
        except Exception as e:  # noqa: BLE001 - reported per table by the caller
            return e

    if not parallel:
        for ref in refs:
            yield ref, safe(ref)
        return
    pool = ThreadPoolExecutor(PROBE_THREADS, thread_name_prefix="paimon-probe")
    try:
        pending: deque = deque()
        it = iter(refs)
        for ref in it:
            pending.append((ref, pool.submit(safe, ref)))
            if len(pending) >= PROBE_THREADS * 4:
                break
        while pending:
            ref, future = pending.popleft()
            nxt = next(it, None)
            if nxt is not None:
                pending.append((nxt, pool.submit(safe, nxt)))
            yield ref, future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _truncate(text: str, n: int) -> str:
    return text if len(text) <= n else text[:n - 1] + "…"


Decide = Callable[[TableRef, Any, int], "tuple[list[RunRequest], str]"]  # (ref, table, snapshot) -> (requests, figure)
# (ref, latest snapshot, the table's cursor state) -> (the state to record when evaluating now, else None; why not)
Due = Callable[[TableRef, int, Optional[str]], "tuple[Optional[str], str]"]


def new_snapshot(ref: TableRef, latest: int, seen: Optional[str]) -> tuple[Optional[str], str]:
    """The default gate: evaluate a table again once it has a new snapshot."""
    if seen == str(latest):
        return None, f"no new snapshot since {latest} (already evaluated)"
    return str(latest), ""


def evaluate(context: SensorEvaluationContext, warehouse: PaimonWarehouse, refs: Sequence[TableRef],
             decide: Decide, budget_s: float = DEFAULT_BUDGET_S, due: Due = new_snapshot,
             not_due: str = "without a new snapshot", check: Optional[str] = None,
             shard_size: int = DEFAULT_SHARD_SIZE) -> SensorResult:
    """Per table: skip unless due (by default: a new snapshot, from its hint), wait while a run changes it, else open
    and measure it (via `decide`) while the tick's time budget lasts. The tables found due in a tick are maintained
    in few runs (`batched`: one per `shard_size` tables, each doing what `check` makes due on its tables); a tick that
    finds one table due requests exactly its run."""
    cursor = _load_cursor(context.cursor)
    seen: dict[str, str] = cursor["tables"]
    refs = [r for r in refs if not r.spec.broken]
    if not refs:
        return SensorResult(skip_reason=_skip(context, "no tables to evaluate"))
    try:
        catalog = warehouse.catalog()
    except READ_ERRORS as e:
        return SensorResult(skip_reason=_skip(context, f"warehouse {warehouse.uri} cannot be read: {e}"))
    busy = busy_tables(context, refs)
    started = time.monotonic()
    requests: list[RunRequest] = []
    notes: list[str] = []
    unchanged = 0
    start = int(cursor["next"]) % len(refs)
    order = refs[start:] + refs[:start]
    done = 0
    io = catalog.io
    for ref, latest in probed(order, lambda r: latest_snapshot_id(*catalog.table_files(r.ident)),
                              parallel=not io.is_local):
        if done and time.monotonic() - started > budget_s:  # at least one table a tick
            notes.append(f"time budget of {budget_s:g} s used; {len(order) - done} table(s) next tick")
            break
        done += 1
        if isinstance(latest, Exception):
            notes.append(f"{ref.ident} cannot be read: {latest}")
            continue
        if latest is None:
            notes.append(f"{ref.ident} has no snapshot yet")
            continue
        state, why_not = due(ref, latest, seen.get(ref.ident))
        if state is None:
            unchanged += 1
            if len(refs) == 1:
                notes.append(f"{ref.ident}: {why_not}")
            continue
        if ref.ident in busy:
            notes.append(f"{ref.ident}: run {busy[ref.ident]} changing it is still queued or running; "
                         "re-evaluating after it")
            continue
        try:
            table = warehouse.get_table(ref.ident, catalog)
            reqs, figure = decide(ref, table, latest)
        except READ_ERRORS as e:
            notes.append(f"{ref.ident} cannot be measured: {e}")
            continue
        seen[ref.ident] = state
        if reqs:
            requests += reqs
            context.log.info(figure)
        else:
            notes.append(figure)
    cursor["next"] = (start + done) % len(refs)
    new_cursor = _dump_cursor(cursor)
    if requests:
        if check is not None:
            requests = batched(requests, {r.key: r for r in refs}, check, shard_size)
        return SensorResult(run_requests=requests, cursor=new_cursor)
    if unchanged and len(refs) > 1:
        notes.insert(0, f"{unchanged} of {len(refs)} tables {not_due}")
    return SensorResult(skip_reason=_skip(context, "; ".join(notes) or "nothing to do"), cursor=new_cursor)


def _skip(context: SensorEvaluationContext, message: str) -> SkipReason:
    """A skip reason, also written to the tick's log (the UI shows skip reasons only on hover)."""
    context.log.info(message)
    return SkipReason(_truncate(message, MAX_SKIP_LEN))


def _labels(buckets: list[health.BucketStat]) -> str:
    return _truncate(", ".join(b.label for b in buckets), MAX_TAG_LEN)


def run_tags(ref: TableRef, trigger: str, snapshot_id: int, reason: str) -> dict[str, str]:
    return {**dict(ref.tags or {}), "paimon/table": ref.ident, "paimon/trigger": trigger,
            "paimon/snapshot": str(snapshot_id), "paimon/reason": _truncate(reason, MAX_TAG_LEN)}


def compaction_requests(ref: TableRef, kind: str, snapshot_id: int, job_name: str, need: due.Need) -> list[RunRequest]:
    """One run per section of a compaction that is due (a group of partitions sharing the same over-threshold
    buckets): exactly those buckets."""
    out = []
    n = len(need.sections)
    for i, (section, chosen) in enumerate(zip(need.sections, need.buckets)):
        suffix = f":{i + 1}/{n}" if n > 1 else ""
        out.append(RunRequest(
            run_key=f"{kind}:{ref.ident}:{snapshot_id}{suffix}",
            job_name=job_name,
            asset_selection=[ref.key],
            run_config={"ops": {ref.op_name: {"config": {"compact": dict(section)}}}},
            tags={**run_tags(ref, f"{kind}_sensor", snapshot_id, need.figure), "paimon/buckets": _labels(list(chosen))},
        ))
    return out


def batched(requests: list[RunRequest], refs: dict[Any, TableRef], check: str, shard_size: int) -> list[RunRequest]:
    """The per-table requests of a tick as runs of up to `shard_size` tables each (one request: itself, unchanged):
    each run selects its tables (without their checks: it records the checks its work changes itself) and does on
    each what `check` makes due now, as the table's own request would (compaction: exactly the buckets over the
    threshold), re-measured by the run at the moment it acts. Run key: the tick's per-table run keys (kind, table,
    snapshot), hashed, so the same findings are requested once."""
    if len(requests) <= 1:
        return requests
    by_job: dict[str, list[RunRequest]] = {}
    for r in requests:
        by_job.setdefault(r.job_name or "", []).append(r)
    out = []
    for job, reqs in by_job.items():
        seen: dict[Any, RunRequest] = {}
        for r in reqs:  # one entry per table (a compaction due in several groups of buckets: the table once)
            for k in r.asset_selection or ():
                seen.setdefault(k, r)
        keys = list(seen)
        for i in range(0, len(keys), max(1, shard_size)):
            chunk = keys[i:i + max(1, shard_size)]
            members = [refs[k] for k in chunk]
            digest = hashlib.sha1("\n".join(sorted(seen[k].run_key or "" for k in chunk)).encode()).hexdigest()[:16]
            first = seen[chunk[0]].tags
            trigger = first.get("paimon/trigger", "")
            out.append(RunRequest(
                run_key=f"{trigger}:batch:{digest}", job_name=job or None, asset_selection=chunk,
                asset_check_keys=[],
                run_config={"ops": {op: {"config": {"due_checks": [check]}}
                                    for op in dict.fromkeys(m.op_name for m in members)}},
                tags={"paimon/trigger": trigger, "paimon/tables": str(len(chunk)),
                      "paimon/reason": _truncate(f"{check} due on {len(chunk)} table(s): "
                                                 + ", ".join(m.ident for m in members), MAX_TAG_LEN)}))
    return out


# ---------------------------------------------------------------------------------------------- the sensors
def build_sensors(refs: Sequence[TableRef], jobs: dict[str, str], interval_s: int = 300,
                  observation_interval_s: int = 60, status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
                  budget_s: float = DEFAULT_BUDGET_S, names: Names = DEFAULT_NAMES,
                  shard_size: int = DEFAULT_SHARD_SIZE) -> list[SensorDefinition]:
    """The observation sensor, and one sensor per health signal of the operation registry (`Operation.health`),
    requesting that operation's job for the tables it finds due (runs of up to `shard_size` tables); `jobs`: operation
    -> job name; `names`: the build's sensor names and resource keys (`refs.Names`)."""
    job_of = {h.check: jobs[op.name] for op, h in health_signals()}

    def decide_dv(ref: TableRef, table: Any, sid: int):
        need = due.need(ref.spec, table, now_millis(), checks_mod.DV_RATIO)
        return compaction_requests(ref, "dv_ratio", sid, job_of[checks_mod.DV_RATIO], need), need.figure

    def decide_small(ref: TableRef, table: Any, sid: int):
        need = due.need(ref.spec, table, now_millis(), checks_mod.SMALL_FILES)
        return compaction_requests(ref, "small_files", sid, job_of[checks_mod.SMALL_FILES], need), need.figure

    def whole_table(check: str, key: str, sensor_kind: str, per_check: bool = False):
        """A signal that requests its operation's job for the whole table (no buckets to choose); `per_check`: a new
        run key per check (partition expiry is due again as time passes, with no new snapshot)."""
        def decide(ref: TableRef, table: Any, sid: int):
            now = now_millis()
            need = due.need(ref.spec, table, now, check)
            if not need.due:
                return [], need.figure
            return [RunRequest(run_key=f"{key}:{ref.ident}:{sid}" + (f":{now}" if per_check else ""),
                               job_name=job_of[check], asset_selection=[ref.key],
                               tags=run_tags(ref, sensor_kind, sid, need.figure))], need.figure
        return decide

    decide_snapshots = whole_table(checks_mod.SNAPSHOT_RETENTION, "snapshot_count", "snapshot_count_sensor")
    decide_manifests = whole_table(checks_mod.MANIFESTS, "manifests", "manifest_sensor")
    decide_partitions = whole_table(checks_mod.PARTITION_EXPIRY, "partition_expiry", "partition_expiry_sensor",
                                    per_check=True)

    def partition_check_due(ref: TableRef, latest: int, seen: Optional[str]):
        now = now_millis()
        last = int(seen) if seen and seen.isdigit() else None
        if partition_expiry_due(cast(FileStoreTable, _LoadedOptions(ref)), last, now):  # the interval as loaded: nothing opened
            return str(now), ""
        return None, f"checked at {_iso(last)}; next check after partition.expiration-check-interval"

    # How each health signal is sensed: (decide, when a table is due for a look (default: a new snapshot), why not,
    # the sensor's description, why it skips without tables).
    sensing: dict[str, tuple[Any, Any, str, str, str]] = {
        checks_mod.DV_RATIO: (
            decide_dv, None, "", "Requests a dv-ratio compaction of the buckets of every table with deletion vectors "
            "holding files whose deleted-row ratio passes compaction.dv-ratio-threshold.", ""),
        checks_mod.SMALL_FILES: (
            decide_small, None, "", "Requests a compaction (minor for primary-key tables, small-files for append "
            "tables) of the buckets that reach compaction.small-files-threshold level-0 / small files.", ""),
        checks_mod.SNAPSHOT_RETENTION: (
            decide_snapshots, None, "", "Requests a snapshot expiry of every table holding more snapshots than its "
            "retention options allow.", ""),
        checks_mod.MANIFESTS: (
            decide_manifests, None, "", "Requests a manifest compaction of every table whose latest snapshot reads at "
            "least manifest.compaction-trigger manifests (default manifest.merge-min-count, 30).", ""),
        checks_mod.PARTITION_EXPIRY: (
            decide_partitions, partition_check_due, "not due for a partition expiry check",
            "Every partition.expiration-check-interval, requests a partition expiry of every partitioned table with "
            "partition.expiration-time that has a partition due.",
            "no partitioned table sets partition.expiration-time"),
    }
    common: dict[str, Any] = dict(minimum_interval_seconds=interval_s, default_status=status,
                                  required_resource_keys={names.warehouse_key})

    # The warehouse comes by its (per-build) key from the context; calling a sensor directly (sensor(context), as
    # tests do) also passes its required resources as keyword arguments, which `**_resources` takes.
    def warehouse(context: SensorEvaluationContext) -> PaimonWarehouse:
        return getattr(context.resources, names.warehouse_key)

    def signal_sensor(signal: Health, job: str) -> SensorDefinition:
        decide, due, not_due, description, none = sensing[signal.check]
        chosen = [r for r in refs if checks_mod.has_signal(r.spec, signal)]
        when = {"due": due, "not_due": not_due} if due is not None else {}

        @sensor(name=names(signal.sensor), job_name=job, description=description, **common)
        def health_sensor(context: SensorEvaluationContext, **_resources: Any):
            paimon = warehouse(context)
            if not chosen and none:
                return SensorResult(skip_reason=SkipReason(none))
            return evaluate(context, paimon, chosen, decide, budget_s, **when, check=signal.check,
                            shard_size=shard_size)

        return health_sensor

    @sensor(name=names(OBSERVATION_SENSOR), minimum_interval_seconds=observation_interval_s, default_status=status,
            required_resource_keys={names.warehouse_key},
            description="Observes every table that changed (rows, bytes, files, level-0 files, snapshots, tags, "
                        "deleted-row ratio), evaluates its cheap checks and reports the tags that exist in the "
                        "table as materialised tags partitions; a tags partition whose tag is gone gets a run that "
                        "fails saying so (the partition turns failed). Launches no other runs.",
            job_name=IMPLICIT_ASSET_JOB_NAME)
    def observation_sensor(context: SensorEvaluationContext, **_resources: Any):
        paimon = warehouse(context)
        return observe_tables(context, paimon, refs, budget_s)

    return [observation_sensor] + [signal_sensor(h, jobs[op.name]) for op, h in health_signals()]


def observe_tables(context: SensorEvaluationContext, warehouse: PaimonWarehouse, refs: Sequence[TableRef],
                   budget_s: float = DEFAULT_BUDGET_S) -> SensorResult:
    cursor = _load_cursor(context.cursor)
    seen: dict[str, str] = cursor["tables"]
    instance = _instance(context)
    events: list[Any] = []
    requests: list[RunRequest] = []
    notes: list[str] = []
    observed_idents: list[str] = []
    if instance is not None and refs:
        missing = unlimited_pools(instance, [r.pool for r in refs[:1] if r.pool])
        if missing:
            context.log.warning(POOL_WARNING.format(pool=missing[0], table=refs[0].ident) + " (every table pool)")
            notes.append("WARNING: table pools have no limit on this instance (see the sensor log)")
    try:
        catalog: Optional[EngineCatalog] = warehouse.catalog()
        unreachable: Optional[BaseException] = None
    except READ_ERRORS as e:
        catalog, unreachable = None, e

    def probe(ref: TableRef) -> Optional[str]:
        if ref.spec.broken:
            return None
        if catalog is None:
            raise unreachable  # type: ignore[misc]
        return observed_state(*catalog.table_files(ref.ident))

    def failed(ref: TableRef, e: BaseException) -> None:
        state = f"error:{type(e).__name__}: {e}"
        if seen.get(ref.ident) != state:
            events.extend(o.evaluation(ref.key) for o in checks_mod.evaluate(
                ref.spec, partial(_raise, e), [checks_mod.METADATA_READABLE], now_millis()))
            seen[ref.ident] = state
        notes.append(f"{ref.ident} cannot be read: {e}")

    started = time.monotonic()
    start = int(cursor["next"]) % max(len(refs), 1)
    order = list(refs[start:]) + list(refs[:start])
    # 1. what changed: one hint and the tag directory per table
    changed: list[tuple[int, TableRef, str, Any]] = []  # (position in order, ref, state, the table if opened)
    done = observed = 0
    for ref, state in probed(order, probe, parallel=catalog is not None and not catalog.io.is_local):
        if done and time.monotonic() - started > budget_s:  # at least one table a tick
            break
        done += 1
        if ref.spec.broken:
            if seen.get(ref.ident) != "broken":
                events += [o.evaluation(ref.key) for o in checks_mod.evaluate(
                    ref.spec, _never_opened, [checks_mod.METADATA_READABLE], now_millis())]
                seen[ref.ident] = "broken"
            continue
        table = None
        if isinstance(state, BaseException):  # the engine's own words for what is wrong
            try:
                if catalog is None:
                    raise state
                table = warehouse.get_table(ref.ident, catalog)
                state = state_key(table)
            except READ_ERRORS as e:
                failed(ref, e)
                continue
        if seen.get(ref.ident) != state:
            changed.append((done - 1, ref, state, table))
    # 2. observe what changed while the budget lasts; Dagster's records of them fetched a batch at a time
    resume = done
    last: dict[Any, Any] = {}
    for i, (position, ref, state, table) in enumerate(changed):
        if observed and time.monotonic() - started > budget_s:
            resume = position
            break
        if i % OBSERVE_BATCH == 0:
            last = latest_materializations(instance, [r.key for _, r, _, _ in changed[i:i + OBSERVE_BATCH]])
        try:
            table = table or warehouse.get_table(ref.ident, catalog)
        except READ_ERRORS as e:
            failed(ref, e)
            continue
        try:
            files = health.measure_files(table)
            md = table_state(table, files, merge_budget=0)  # a tick reads metadata only
        except READ_ERRORS as e:
            notes.append(f"{ref.ident} cannot be measured: {e}")
            continue
        md[RECLAIMED_TOTAL] = reclaimed_total(instance, ref.key)
        try:
            synced = data_materialization(instance, ref.key, table, last.get(ref.key, NOT_FETCHED))
        except READ_ERRORS as e:
            synced = None
            notes.append(f"{ref.ident}: latest writer commit cannot be read: {e}")
        if synced is not None:
            events.append(synced)
        events.append(AssetObservation(asset_key=ref.key, metadata=md,
                                       description=f"observed by {OBSERVATION_SENSOR}"))
        names = checks_mod.table_check_names(ref.spec)
        cheap = [n for n in names if n in checks_mod.CHEAP]
        events += [o.evaluation(ref.key) for o in checks_mod.evaluate(ref.spec, partial(_same, table), cheap,
                                                                        now_millis(), files=files)]
        if ref.tags_key is not None:
            events += [o.evaluation(ref.tags_key) for o in checks_mod.evaluate(
                ref.spec, partial(_same, table), checks_mod.tags_check_names(ref.spec), now_millis())]
            synced_tags, removed = sync_tags(instance, ref, table)
            events += synced_tags
            requests += removed
        seen[ref.ident] = state
        observed += 1
        observed_idents.append(ref.ident)
    if resume < len(order):
        notes.append(f"time budget of {budget_s:g} s used; {len(order) - resume} table(s) next tick")
    done = resume
    cursor["next"] = (start + done) % max(len(refs), 1)
    new_cursor = _dump_cursor(cursor)
    if not events and not requests:
        notes.insert(0, f"no table changed since the last observation ({len(refs)} tables)")
        return SensorResult(skip_reason=_skip(context, "; ".join(notes)), cursor=new_cursor)
    kinds = Counter(type(e).__name__ for e in events)
    names = observed_idents[:5] + (["…"] if len(observed_idents) > 5 else [])
    what = (f"observed {observed} table(s) ({', '.join(names)}): {kinds['AssetObservation']} observation(s), "
            f"{kinds['AssetCheckEvaluation']} check evaluation(s), {kinds['AssetMaterialization']} materialisation(s) "
            "synced from the tables' history")
    context.log.info(what + "".join(f"; {n}" for n in notes))
    for r in requests:
        context.log.info(f"{r.tags['paimon/table']}: tag {r.tags[TAG_REMOVED]} is gone from the table: its tags "
                         f"partition {r.partition_key} is marked failed (backfill it to create the tag again)")
    if requests:
        return SensorResult(asset_events=events, run_requests=requests, cursor=new_cursor)
    # no run: the tick says what it did (Dagster shows "returned an empty result" otherwise)
    return SensorResult(asset_events=events, skip_reason=SkipReason(_truncate("; ".join([what, *notes]),
                                                                              MAX_SKIP_LEN)), cursor=new_cursor)


class _LoadedOptions:
    """A table's options as the code location loaded them (engine checks that only read options take this)."""

    def __init__(self, ref: TableRef):
        self.options = Options(dict(ref.spec.options), where=f"table {ref.ident}")


def _iso(millis: Optional[int]) -> str:
    if millis is None:
        return "never"
    return datetime.fromtimestamp(millis / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _raise(e: BaseException) -> Any:
    raise e


def _same(table: FileStoreTable) -> FileStoreTable:
    return table


def _never_opened() -> FileStoreTable:
    raise AssertionError("a table that failed to load is never opened")  # evaluate() reports it without opening


def _instance(context: SensorEvaluationContext) -> Any:
    try:
        return context.instance
    except Exception:  # noqa: BLE001
        return None


def sync_tags(instance: Any, ref: TableRef, table: Any) -> tuple[list[AssetMaterialization], list[RunRequest]]:
    """Make the tags asset's daily partitions reflect the table's tags: materialisations for the tags the table holds
    that Dagster does not know as materialised; for each partition Dagster shows as materialised whose tag is gone
    (deleted, expired — by Java, the CLI or a job), a run of that partition that fails naming the vanished tag, so the
    partition turns failed and a "failed and missing" backfill selects it (Dagster's own storages cannot wipe one
    partition back to missing: `wipe_asset_partitions` is not implemented for SQLite / Postgres)."""

    pd = tags_partitions(ref.spec)
    if pd is None or ref.tags_key is None or instance is None:
        return [], []
    last = pd.get_last_partition_key()
    wanted: dict[str, tuple[str, int]] = {}
    for name, tag in table.tags.tags():
        key = partition_key_of(ref.spec, name)
        if key is not None and ref.spec.partitions_start <= key and (last is None or key <= last):
            wanted[key] = (name, tag.id)
    try:
        materialized = set(instance.get_materialized_partitions(ref.tags_key)) & set(pd.get_partition_keys())
    except Exception:  # noqa: BLE001 - a storage that cannot tell: nothing to compare
        materialized = set()
    asked = sorted(set(wanted) | materialized)
    status = (instance.get_status_by_partition(ref.tags_key, asked, pd) or {}) if asked else {}  # None: no events
    mats = [AssetMaterialization(
        asset_key=ref.tags_key, partition=key, description=f"tag {name} exists in {ref.ident}",
        metadata={"tag": name, "tagged_snapshot": str(sid), "synced_from_table": True})
        for key, (name, sid) in sorted(wanted.items()) if status.get(key) != AssetPartitionStatus.MATERIALIZED]
    gone = sorted(k for k in materialized - set(wanted) if status.get(k) == AssetPartitionStatus.MATERIALIZED)
    runs = [RunRequest(
        run_key=f"tag_removed:{ref.ident}:{key}:{table.snapshots.latest_id()}", job_name=IMPLICIT_ASSET_JOB_NAME,
        asset_selection=[ref.tags_key], partition_key=key,
        tags={**dict(ref.tags or {}), "paimon/table": ref.ident, "paimon/trigger": OBSERVATION_SENSOR,
              TAG_REMOVED: ref.spec.period_name(key)}) for key in gone]
    return mats, runs


__all__ = ["build_sensors", "TableRef", "evaluate", "observe_tables", "sync_tags", "busy_tables",
           "AssetCheckEvaluation"]
