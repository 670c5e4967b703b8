"""Sensors per table — cheap: they read only metadata (snapshot JSON, manifests, the index manifest).

* `<prefix>__dv_ratio_sensor` (tables with deletion vectors): requests a `dv-ratio` compaction of exactly the
  partitions holding a file whose deleted-row ratio is above `compaction.dv-ratio-threshold`;
* `<prefix>__small_files_sensor`: requests a compaction (`minor` for primary-key tables — Paimon's own pick per
  bucket, as a dedicated compaction job runs it; `small-files` for append tables) of exactly the partitions with a
  bucket at or over `compaction.small-files-threshold`;
* `<prefix>__snapshot_count_sensor`: requests a snapshot expiry when the table holds more snapshots than its
  retention allows (see `assets.health.Retention.over`).

Cursor = the last evaluated snapshot id (nothing new → skip without reading manifests). `run_key` = sensor kind,
table and snapshot id, so a tick never launches the same work twice; while a run of the target job for the table
is queued or in progress, the sensor waits (and does not advance its cursor). Every skip states the measured
figure.
"""
from typing import Any, Callable, Mapping, Optional

from dagster import (
    AssetKey,
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

from paimon_ops.errors import PaimonOpsError

from assets import health
from assets.resources import PaimonWarehouse
from assets.spec import TableSpec
from assets.table_assets import now_millis
from jobs import UnresolvedAssetJobDefinition

ACTIVE = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
          DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
MAX_TAG_LEN = 200
READ_ERRORS = (PaimonOpsError, OSError, ValueError)

Decide = Callable[[Any, int], "tuple[Optional[list[RunRequest]], str]"]  # (table, snapshot id) -> (requests, figure)


def active_run(context: SensorEvaluationContext, job_name: str, identifier: str) -> Optional[str]:
    """Id of a queued / running run of `job_name` for this table, if any."""
    try:
        instance = context.instance
    except Exception:  # noqa: BLE001 - contexts built without an instance
        return None
    runs = instance.get_runs(filters=RunsFilter(job_name=job_name, statuses=ACTIVE,
                                                tags={"paimon/table": identifier}), limit=1)
    return runs[0].run_id if runs else None


def evaluate(context: SensorEvaluationContext, warehouse: PaimonWarehouse, spec: TableSpec, job_name: str,
             decide: Decide) -> SensorResult:
    """The shared skeleton: cursor, in-progress guard, measure (via `decide`), run request or skip."""
    try:
        table = warehouse.get_table(spec.identifier)
        latest = table.snapshots.latest_id()
    except READ_ERRORS as e:
        return SensorResult(skip_reason=SkipReason(f"{spec.identifier} cannot be read: {e}"))
    if latest is None:
        return SensorResult(skip_reason=SkipReason(f"{spec.identifier} has no snapshot yet"))
    if context.cursor and context.cursor == str(latest):
        return SensorResult(skip_reason=SkipReason(
            f"{spec.identifier}: no new snapshot since {latest} (already evaluated)"))
    running = active_run(context, job_name, spec.identifier)
    if running:
        return SensorResult(skip_reason=SkipReason(
            f"{spec.identifier}: run {running} of {job_name} is still queued or running; re-evaluating after it"))
    try:
        requests, figure = decide(table, latest)
    except READ_ERRORS as e:
        return SensorResult(skip_reason=SkipReason(f"{spec.identifier} cannot be measured: {e}"))
    if not requests:
        return SensorResult(skip_reason=SkipReason(figure), cursor=str(latest))
    context.log.info(figure)
    return SensorResult(run_requests=requests, cursor=str(latest))


def _labels(buckets: list[health.BucketStat]) -> str:
    text = ", ".join(b.label for b in buckets)
    return text if len(text) <= MAX_TAG_LEN else text[:MAX_TAG_LEN - 1] + "…"


def _compaction_requests(spec: TableSpec, kind: str, snapshot_id: int, job_name: str, op: str, mode: str,
                         over: list[health.BucketStat], figure: str) -> list[RunRequest]:
    """One run per group of partitions sharing the same over-threshold buckets: exactly those buckets."""
    out = []
    groups = health.bucket_groups(over)
    for i, (partitions, buckets) in enumerate(groups):
        chosen = [b for b in over if b.partition in partitions and b.bucket in buckets]
        suffix = f":{i + 1}/{len(groups)}" if len(groups) > 1 else ""
        out.append(RunRequest(
            run_key=f"{kind}:{spec.identifier}:{snapshot_id}{suffix}",
            job_name=job_name,
            run_config={"ops": {op: {"config": {
                "mode": mode, "partitions": partitions if spec.partition_keys else [], "buckets": buckets}}}},
            tags={"paimon/table": spec.identifier, "paimon/trigger": f"{kind}_sensor",
                  "paimon/snapshot": str(snapshot_id), "paimon/buckets": _labels(chosen),
                  "paimon/reason": figure[:MAX_TAG_LEN]},
        ))
    return out


def build_table_sensors(spec: TableSpec, prefix: str, compaction_job: UnresolvedAssetJobDefinition,
                        compaction_op: str, expiry_job: UnresolvedAssetJobDefinition, snapshot_expiry_key: AssetKey,
                        interval_s: int = 300, status: DefaultSensorStatus = DefaultSensorStatus.STOPPED,
                        ) -> list[SensorDefinition]:
    ident = spec.identifier
    out: list[SensorDefinition] = []
    common: Mapping[str, Any] = dict(minimum_interval_seconds=interval_s, default_status=status)

    if spec.dv_enabled:
        def decide_dv(table, sid):
            h = health.measure_files(table)
            over = h.dv_over
            figure = (f"{ident} snapshot {sid}: worst file deleted-row ratio {h.max_dv_ratio:.1%} "
                      f"(table {h.total_dv_ratio:.1%}) vs threshold {h.dv_threshold:.1%}; "
                      f"{len(over)} of {len(h.buckets)} buckets over")
            if not over:
                return None, figure
            return _compaction_requests(spec, "dv_ratio", sid, compaction_job.name, compaction_op, "dv-ratio", over,
                                        figure), figure

        @sensor(name=f"{prefix}__dv_ratio_sensor", job=compaction_job, **common,
                description=f"Requests a dv-ratio compaction of the partitions of {ident} holding files whose "
                            "deleted-row ratio passes compaction.dv-ratio-threshold.")
        def dv_ratio_sensor(context: SensorEvaluationContext, paimon_warehouse: PaimonWarehouse):
            return evaluate(context, paimon_warehouse, spec, compaction_job.name, decide_dv)
        out.append(dv_ratio_sensor)

    mode = "minor" if spec.is_primary_key else "small-files"

    def decide_small(table, sid):
        h = health.measure_files(table)
        over = h.small_over
        figure = (f"{ident} snapshot {sid}: at most {h.max_small_count} {h.small_files_label} per bucket vs "
                  f"threshold {h.small_files_threshold}; {len(over)} of {len(h.buckets)} buckets at or over")
        if not over:
            return None, figure
        return _compaction_requests(spec, "small_files", sid, compaction_job.name, compaction_op, mode, over,
                                    figure), figure

    @sensor(name=f"{prefix}__small_files_sensor", job=compaction_job, **common,
            description=f"Requests a {mode} compaction of the partitions of {ident} whose buckets reach "
                        "compaction.small-files-threshold level-0 / small files.")
    def small_files_sensor(context: SensorEvaluationContext, paimon_warehouse: PaimonWarehouse):
        return evaluate(context, paimon_warehouse, spec, compaction_job.name, decide_small)
    out.append(small_files_sensor)

    def decide_snapshots(table, sid):
        r = health.measure_retention(table, now_millis())
        limit = "" if r.retain_max is None else f", max {r.retain_max}"
        figure = (f"{ident} snapshot {sid}: {r.count} snapshots{limit}, {r.expirable} expirable now "
                  f"(expiry due at {r.threshold})")
        if not r.over:
            return None, figure
        return [RunRequest(
            run_key=f"snapshot_count:{ident}:{sid}", job_name=expiry_job.name, asset_selection=[snapshot_expiry_key],
            tags={"paimon/table": ident, "paimon/trigger": "snapshot_count_sensor", "paimon/snapshot": str(sid),
                  "paimon/reason": figure[:MAX_TAG_LEN]})], figure

    @sensor(name=f"{prefix}__snapshot_count_sensor", job=expiry_job, **common,
            description=f"Requests a snapshot expiry of {ident} when it holds more snapshots than its retention "
                        "options allow.")
    def snapshot_count_sensor(context: SensorEvaluationContext, paimon_warehouse: PaimonWarehouse):
        return evaluate(context, paimon_warehouse, spec, expiry_job.name, decide_snapshots)
    out.append(snapshot_count_sensor)
    return out
