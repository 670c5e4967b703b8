"""The tags asset of a table with automatic tags: daily partitions in the table's tag zone (each partition is the
tag of that day), or unpartitioned for other periods (materialising creates every due tag). In the table's pool.
The tags assets of all tables are `AssetSpec`s of a few subsettable multi-assets (daily, periodic), each spec with
its own partitions (first day, zone).

Daily tags are created on time by one sensor, `paimon_tag_automation`: at each table's `tag.create-time` in its tag
zone (Dagster's cron, DST-correct, as a schedule ticks) it requests the tags partition of the day that ended, one run
per shard of tables (runs of up to `shard_size`) — no schedule or job per table. It works per tag time, not per
table (the tables sharing one are requested together), so a tick costs the same for 5 tables or 5,000;
declarative automation conditions, one per tags asset, cost seconds per tick over thousands of tables. Tags that
exist in the table without a run (Java / Flink, or before this code location) are reported as materialised by the observation sensor.

A backfill of many days (a month of a new table, the gaps after tags were deleted) is one run for all the tables it
selects that share a partitions definition (Dagster groups a single-run backfill by it): the daily tags' multi-asset
has a single-run backfill policy, and its run creates, table by table, the tag of each day of the range in turn; a
table that fails fails its own partitions (the run fails naming it), the others' partitions are materialised.
"""
# No `from __future__ import annotations`: Dagster reads the resource types from the annotations.
import datetime
import json
from functools import partial
from typing import Any, Iterator, Optional, Sequence
from zoneinfo import ZoneInfo

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    BackfillPolicy,
    DailyPartitionsDefinition,
    DefaultSensorStatus,
    Failure,
    MaterializeResult,
    MetadataValue,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    multi_asset,
    sensor,
)

import paimon_ops.dagster.checks as checks_mod
import paimon_ops.lifecycle.autotag as autotag
from paimon_ops.dagster.jobs import IMPLICIT_ASSET_JOB_NAME
from paimon_ops.dagster.metadata import report_line, report_metadata
from paimon_ops.dagster.operations import now_millis
from paimon_ops.dagster.refs import DEFAULT_NAMES, DEFAULT_SHARD_SIZE, Names, TableRef, shards
from paimon_ops.dagster.resources import PaimonWarehouse
from paimon_ops.dagster.spec import TableSpec
from paimon_ops.dagster.table_asset import call_engine, run_each, selected_tables
from paimon_ops.dagster.translator import PaimonTranslator

TAG_REMOVED = "paimon/tag_removed"  # run tag: the partition's tag vanished from the table (the observation sensor)


def tags_partitions(spec: TableSpec) -> Optional[DailyPartitionsDefinition]:
    """Daily partitions in the table's tag time zone (None for tables whose tag periods are not days)."""
    if not spec.daily_tags:
        return None
    return DailyPartitionsDefinition(start_date=spec.partitions_start, timezone=spec.tag_zone, fmt="%Y-%m-%d")


TAG_AUTOMATION_SENSOR = "paimon_tag_automation"


def tags_asset_spec(spec: TableSpec, translator: PaimonTranslator) -> AssetSpec:
    """The translator's spec of the table's tags asset, with its daily partitions."""
    tags_spec = translator.get_tags_asset_spec(spec)
    return tags_spec.replace_attributes(partitions_def=tags_partitions(spec))


def latest_tick(cron: str, zone: str, at: float) -> Optional[datetime.datetime]:
    """The latest tick of `cron` in `zone` at or before the timestamp `at`, as Dagster's schedules tick (DST
    included: a tick in the hour that does not exist comes at the end of the gap; in the hour that happens twice,
    at its second occurrence)."""
    from dagster._utils.schedules import reverse_cron_string_iterator  # what ScheduleDefinition ticks by
    return next(reverse_cron_string_iterator(at, cron, zone), None)


def build_tag_automation_sensor(refs: Sequence[TableRef], status: DefaultSensorStatus,
                                interval_s: int = 60, names: Names = DEFAULT_NAMES,
                                shard_size: int = DEFAULT_SHARD_SIZE) -> Optional[SensorDefinition]:
    """`paimon_tag_automation`: at each tag time, the tags partition of the day that ended, for every table tagging at
    that time — one run per shard of those tables sharing a partitions definition (first day and zone: a run has
    one), at most `shard_size` tables each (run key tags:<shard>:<day>, or tags:<db.table>:<day> for a run of one
    table, so a day is requested once). Each table's tag is its own partition's materialisation; a table failing
    fails only its own partition."""
    groups: dict[tuple[str, str], list[tuple[TableRef, AssetKey]]] = {}
    labels: dict[tuple[str, str], str] = {}
    for ref in refs:
        timing = ref.spec.tag_timing
        if ref.tags_key is not None and timing is not None and ref.spec.daily_tags and not ref.spec.broken:
            groups.setdefault((timing.cron, timing.zone), []).append((ref, ref.tags_key))
            labels[(timing.cron, timing.zone)] = f"{timing.hh_mm} {timing.zone}"
    if not groups:
        return None

    # runs of the code location's implicit asset job, as from the asset page (a target selecting the tags assets
    # would make Dagster resolve one more job over all of them at every load)
    @sensor(name=names(TAG_AUTOMATION_SENSOR), minimum_interval_seconds=interval_s, default_status=status,
            job_name=IMPLICIT_ASSET_JOB_NAME,
            description="Creates each table's daily tag at its tag.create-time (in its tag zone): requests the tags "
                        "partition of the day that ended, one run per shard of tables.")
    def tag_automation(context: SensorEvaluationContext) -> SensorResult:
        now = now_millis() / 1000
        try:
            last = float(json.loads(context.cursor)["evaluated_at"]) if context.cursor else None
        except (ValueError, KeyError, TypeError):
            last = None
        cursor = json.dumps({"evaluated_at": now})
        if last is None:  # a tick that passed before the sensor ran is not caught up (as Dagster's automation)
            context.log.info("first evaluation: tags are requested from the next tag time on")
            return SensorResult(skip_reason=SkipReason("first evaluation: tags are requested from the next tag "
                                                       "time on"), cursor=cursor)
        requests: list[RunRequest] = []
        due: list[str] = []
        for (cron, zone), members in groups.items():
            tick = latest_tick(cron, zone, now)
            if tick is None or tick.timestamp() <= last:
                continue
            day = (tick.astimezone(ZoneInfo(zone)).date() - datetime.timedelta(days=1)).isoformat()
            due.append(f"{labels[(cron, zone)]}: {day} for {len(members)} table(s)")
            same_partitions: dict[tuple[str, str], list[TableRef]] = {}
            for ref, _ in members:
                if day >= ref.spec.partitions_start:
                    same_partitions.setdefault((ref.spec.partitions_start, ref.spec.tag_zone), []).append(ref)
            key_of = {r.ident: key for r, key in members}
            for group in same_partitions.values():
                for shard in shards(group, shard_size):
                    trigger = names(TAG_AUTOMATION_SENSOR)
                    if len(shard.refs) == 1:
                        (ref,) = shard.refs
                        requests.append(RunRequest(
                            run_key=f"tags:{ref.ident}:{day}", asset_selection=[key_of[ref.ident]], partition_key=day,
                            tags={**dict(ref.tags or {}), "paimon/table": ref.ident, "paimon/trigger": trigger}))
                        continue
                    first = shard.refs[0].spec
                    requests.append(RunRequest(
                        run_key=f"tags:{shard.name}:{first.partitions_start}:{first.tag_zone}:{day}",
                        asset_selection=[key_of[r.ident] for r in shard.refs], partition_key=day,
                        tags={"paimon/shard": shard.name, "paimon/tables": str(len(shard.refs)),
                              "paimon/trigger": trigger}))
        if not requests:
            times = ", ".join(sorted(labels.values())[:10]) + (" …" if len(labels) > 10 else "")
            context.log.info(f"no tag time passed since the last evaluation ({times})")  # in the tick log too
            return SensorResult(skip_reason=SkipReason(f"no tag time passed since the last evaluation ({times})"),
                                cursor=cursor)
        context.log.info("tag time passed: " + "; ".join(due))
        return SensorResult(run_requests=requests, cursor=cursor)

    return tag_automation


def build_tags_assets(op_name: str, members: Sequence[tuple[TableRef, AssetSpec]], names: Names = DEFAULT_NAMES
                      ) -> AssetsDefinition:
    """One multi-asset holding the tags assets of `members` (each spec with its own daily partitions: a run selects
    one table's tags, or several sharing a partitions definition) and their checks."""
    refs = {ref.tags_key: ref for ref, _ in members if ref.tags_key is not None}
    order = {key: i for i, key in enumerate(refs)}
    check_specs = [c for ref, s in members
                   for c in checks_mod.check_specs(ref.spec, s.key, checks_mod.tags_check_names(ref.spec))]

    daily = any(s.partitions_def is not None for _, s in members)
    # a backfill of many days is one run (a range of partitions), not a run per day and table
    @multi_asset(specs=[s for _, s in members], name=op_name, can_subset=True, check_specs=check_specs,
                 backfill_policy=BackfillPolicy.single_run() if daily else None,
                 allow_arbitrary_check_specs=True,  # ours target our specs; Dagster's check of that is O(n²)
                 description="Tags of Paimon tables: materialising a table's tags asset (a daily partition: the tag "
                             "of that day) creates its due tags, idempotently, in the table's pool.",
                 required_resource_keys={names.warehouse_key})
    def _tags(context: AssetExecutionContext):
        paimon: PaimonWarehouse = getattr(context.resources, names.warehouse_key)
        keys, assets, checks = selected_tables(context, refs, order)

        def one(ref: TableRef) -> Iterator[Any]:
            key = ref.tags_key
            assert key is not None  # every member has a tags asset
            if key in assets:
                yield _create(context, ref.spec, key, paimon)
            if checks.get(key):
                wanted = [n for n in checks_mod.tags_check_names(ref.spec) if n in checks[key]]
                for outcome in checks_mod.evaluate(ref.spec, lambda: paimon.get_table(ref.ident), wanted,
                                                   now_millis()):
                    yield outcome.result(key)

        yield from run_each(context, refs, keys, one)

    return _tags


def _create(context: AssetExecutionContext, spec: TableSpec, key: AssetKey, paimon: PaimonWarehouse
            ) -> MaterializeResult:

    table = paimon.open_table(spec.identifier)
    now = now_millis()
    removed = context.run.tags.get(TAG_REMOVED)
    if removed is not None and context.has_partition_key and removed not in table.tags.names():
        # the observation sensor saw this day's tag vanish: the partition turns failed (a backfill recreates it)
        raise Failure(description=f"tag {removed} no longer exists in {spec.identifier} (deleted or expired): "
                                  f"tags partition {context.partition_key} is not materialised any more; backfill it "
                                  "(failed and missing partitions) to create the tag again", allow_retries=False)
    if context.has_partition_key or context.has_partition_key_range:
        # the tag of each day (its period), idempotently: one day, or a backfill's range of days (one run)
        days = [datetime.date.fromisoformat(k) for k in context.partition_keys]
        reports = []
        for day in days:
            report = call_engine(spec, f"tagging day {day}", partial(autotag.create_tag_for_period, table, day, now))
            status = report.details.get("status", "")
            if status not in ("create", "exists"):
                context.log.warning(f"{spec.identifier} day {day}: {status}: {report.details.get('reason', '')}")
            context.log.info(f"{day}: {report_line(report)}" if len(days) > 1 else report_line(report))
            reports.append(report)
        if len(reports) == 1:
            report = reports[0]
            return MaterializeResult(asset_key=key, metadata={
                **report_metadata(report), "tag": str(report.details.get("period", days[0])),
                "status": report.details.get("status", ""), "tagged_snapshot": str(report.details.get("snapshot_id")),
                "synced_from_table": False})
        # one materialisation per partition of the range, each with the range's figures
        by_status: dict[str, list[str]] = {}
        for day, report in zip(days, reports):
            by_status.setdefault(str(report.details.get("status", "")), []).append(day.isoformat())
        return MaterializeResult(asset_key=key, metadata={
            "days": MetadataValue.int(len(days)), "first_day": days[0].isoformat(), "last_day": days[-1].isoformat(),
            "created": MetadataValue.int(len(by_status.get("create", []))),
            "tags": MetadataValue.json([{"tag": str(r.details.get("period", d)), "status": r.details.get("status"),
                                         "tagged_snapshot": r.details.get("snapshot_id")}
                                        for d, r in zip(days, reports)]),
            "synced_from_table": False})
    # periods that are not days (tag.create-interval > 1 d, hourly ...): every due tag since the last one
    report = call_engine(spec, "automatic tagging", lambda: autotag.plan_auto_tags(table, now=now).execute(table=table))
    context.log.info(report_line(report))
    return MaterializeResult(asset_key=key, metadata={**report_metadata(report),
                                       "created": MetadataValue.json(list(report.details.get("created", [])))})
