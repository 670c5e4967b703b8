"""Schedules of the Paimon code location (the sensors live in `schedules.sensors`).

* `<prefix>__tag_schedule` — only for tables with `tag.create-time`: at that wall-clock time in
  `tag.create-time-zone` (Dagster's `execution_timezone`, so DST is the zone's business: a time that does not
  exist on the spring-forward day runs at the first valid minute after it, an ambiguous autumn time runs once),
  requests the table's nightly job for the tag partition of the day that just ended.
* `paimon_nightly_expiry_schedule` — nightly expiry / orphan removal of every table without a tag schedule.
"""
from __future__ import annotations

import datetime as _dt
from zoneinfo import ZoneInfo

from dagster import (
    DefaultScheduleStatus,
    RunRequest,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from assets.spec import TableSpec
from jobs import UnresolvedAssetJobDefinition

NIGHTLY_EXPIRY_SCHEDULE = "paimon_nightly_expiry_schedule"


def tag_partition_for(spec: TableSpec, scheduled: _dt.datetime) -> str:
    """The daily partition (yyyy-MM-dd) whose tag is due at `scheduled`: the day before, in the tag zone.

    Dagster fires a `HH:mm` schedule once per local day (moved past a DST gap, once in a DST overlap), so the
    local date of the tick identifies the day that ended, whatever the offset that day."""
    assert spec.tag_timing is not None
    local = scheduled.astimezone(ZoneInfo(spec.tag_timing.zone))
    if (local.hour, local.minute) < (spec.tag_timing.hour, spec.tag_timing.minute):
        # evaluated before today's HH:mm (a manual tick): the last period whose tag is due ended two days ago
        return (local.date() - _dt.timedelta(days=2)).isoformat()
    return (local.date() - _dt.timedelta(days=1)).isoformat()


def build_tag_schedule(spec: TableSpec, prefix: str, job: UnresolvedAssetJobDefinition,
                       status: DefaultScheduleStatus = DefaultScheduleStatus.STOPPED) -> ScheduleDefinition | None:
    timing = spec.tag_timing
    if timing is None:
        return None

    @schedule(name=f"{prefix}__tag_schedule", cron_schedule=timing.cron, execution_timezone=timing.zone, job=job,
              default_status=status,
              description=f"At {timing.hh_mm} {timing.zone}: tag the period of {spec.identifier} that just ended, "
                          "then expire snapshots, expire tags and remove orphan files.")
    def tag_schedule(context: ScheduleEvaluationContext):
        when = context.scheduled_execution_time
        if when is None:
            when = _dt.datetime.now(tz=ZoneInfo(timing.zone))
        tags = {"paimon/table": spec.identifier, "paimon/trigger": "tag_schedule"}
        if not spec.daily_tags:  # multi-day periods: the (unpartitioned) tags asset creates the latest due tag
            return RunRequest(run_key=f"{spec.identifier}:{when.isoformat()}", tags=tags)
        key = tag_partition_for(spec, when)
        if key < spec.partitions_start:
            return SkipReason(f"{spec.identifier}: day {key} is before the table's first day "
                              f"{spec.partitions_start}; nothing to tag")
        return RunRequest(run_key=f"{spec.identifier}:{key}", partition_key=key,
                          tags={**tags, "paimon/tag": spec.period_name(key)})

    return tag_schedule


def build_nightly_expiry_schedule(job: UnresolvedAssetJobDefinition | None, cron: str, timezone: str,
                                  status: DefaultScheduleStatus = DefaultScheduleStatus.STOPPED
                                  ) -> ScheduleDefinition | None:
    if job is None:
        return None

    @schedule(name=NIGHTLY_EXPIRY_SCHEDULE, cron_schedule=cron, execution_timezone=timezone, job=job,
              default_status=status,
              description="Nightly snapshot expiry, tag expiry and orphan removal of every table without a tag "
                          "schedule.")
    def nightly_expiry(context: ScheduleEvaluationContext):
        when = context.scheduled_execution_time or _dt.datetime.now(tz=ZoneInfo(timezone))
        return RunRequest(run_key=f"nightly-expiry:{when.astimezone(ZoneInfo(timezone)).date().isoformat()}",
                          tags={"paimon/trigger": "nightly_expiry_schedule"})

    return nightly_expiry
