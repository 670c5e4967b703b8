"""Schedules — constant in number. `paimon_nightly_schedule` (default 03:00 UTC) requests one `paimon_nightly` run per
table (run key `nightly:<db.table>:<date>`, the table's run tags), so a failing table fails alone.

Daily tags are not scheduled per table: one sensor, `paimon_tag_automation`, requests each table's tags partition at
its `tag.create-time` in its zone (see `tags_asset`).
"""
from __future__ import annotations

import datetime as _dt
from typing import Sequence
from zoneinfo import ZoneInfo

from dagster import DefaultScheduleStatus, RunRequest, ScheduleDefinition, ScheduleEvaluationContext, schedule

from paimon_ops.dagster.jobs import NIGHTLY_JOB
from paimon_ops.dagster.refs import DEFAULT_NAMES, Names, TableRef

NIGHTLY_SCHEDULE = "paimon_nightly_schedule"


def build_nightly_schedule(refs: Sequence[TableRef], cron: str = "0 3 * * *", timezone: str = "UTC",
                           status: DefaultScheduleStatus = DefaultScheduleStatus.STOPPED, names: Names = DEFAULT_NAMES
                           ) -> ScheduleDefinition | None:
    refs = [r for r in refs if not r.spec.broken]
    if not refs:
        return None

    @schedule(name=names(NIGHTLY_SCHEDULE), cron_schedule=cron, execution_timezone=timezone, job_name=names(NIGHTLY_JOB),
              default_status=status,
              description="Nightly maintenance of every table, one run per table: create the due automatic tags, "
                          "expire snapshots, expire tags, remove orphan files.")
    def nightly(context: ScheduleEvaluationContext):
        when = context.scheduled_execution_time or _dt.datetime.now(tz=ZoneInfo(timezone))
        day = when.astimezone(ZoneInfo(timezone)).date().isoformat()
        return [RunRequest(run_key=f"nightly:{r.ident}:{day}", asset_selection=[r.key],
                           tags={**dict(r.tags or {}), "paimon/table": r.ident, "paimon/trigger": names(NIGHTLY_SCHEDULE)})
                for r in refs]

    return nightly
