"""Schedules — constant in number. `paimon_nightly_schedule` (default 03:00 UTC) requests one `paimon_nightly` run per
shard of tables (`refs.shards`: the translator's `get_shard`, the database by default, split into runs of at most
`shard_size` tables; run key `nightly:<shard>:<date>`, run tag `paimon/shard`): a run maintains each of its tables in
the table's pool and records each table's own result on its asset, so a failing table fails alone and the run names
it (`table_asset.run_each`). A run of a single table carries the table's run tags, as before.

Daily tags are not scheduled per table: one sensor, `paimon_tag_automation`, requests each table's tags partition at
its `tag.create-time` in its zone (see `tags_asset`).
"""
from __future__ import annotations

import datetime as _dt
from typing import Sequence
from zoneinfo import ZoneInfo

from dagster import DefaultScheduleStatus, RunRequest, ScheduleDefinition, ScheduleEvaluationContext, schedule

from paimon_ops.dagster.jobs import NIGHTLY_JOB
from paimon_ops.dagster.refs import DEFAULT_NAMES, DEFAULT_SHARD_SIZE, Names, TableRef, shards

NIGHTLY_SCHEDULE = "paimon_nightly_schedule"


def build_nightly_schedule(refs: Sequence[TableRef], cron: str = "0 3 * * *", timezone: str = "UTC",
                           status: DefaultScheduleStatus = DefaultScheduleStatus.STOPPED, names: Names = DEFAULT_NAMES,
                           shard_size: int = DEFAULT_SHARD_SIZE) -> ScheduleDefinition | None:
    refs = [r for r in refs if not r.spec.broken]
    if not refs:
        return None

    @schedule(name=names(NIGHTLY_SCHEDULE), cron_schedule=cron, execution_timezone=timezone, job_name=names(NIGHTLY_JOB),
              default_status=status,
              description="Nightly maintenance of every table, one run per shard of tables (each table's result on its "
                          "own asset): create the due automatic tags, expire partitions, expire snapshots, expire "
                          "tags, remove orphan files.")
    def nightly(context: ScheduleEvaluationContext):
        when = context.scheduled_execution_time or _dt.datetime.now(tz=ZoneInfo(timezone))
        day = when.astimezone(ZoneInfo(timezone)).date().isoformat()
        trigger = names(NIGHTLY_SCHEDULE)
        out = []
        for shard in shards(refs, shard_size):
            if len(shard.refs) == 1:
                (r,) = shard.refs
                out.append(RunRequest(run_key=f"nightly:{r.ident}:{day}", asset_selection=[r.key],
                                      tags={**dict(r.tags or {}), "paimon/table": r.ident, "paimon/trigger": trigger}))
                continue
            # without the tables' checks: the run records the checks its work changes itself (run_tables)
            out.append(RunRequest(run_key=f"nightly:{shard.name}:{day}", asset_selection=[r.key for r in shard.refs],
                                  asset_check_keys=[],
                                  tags={"paimon/shard": shard.name, "paimon/tables": str(len(shard.refs)),
                                        "paimon/trigger": trigger}))
        return out

    return nightly
