"""Daily tags on Airflow's clock: a DAG scheduled at the table's `tag.create-time` in `tag.create-time-zone` (a
`CronTriggerTimetable` in that zone: the run of day D fires at D+1 HH:mm local time, across DST changes), whose run
creates the tag of exactly its own period — so a backfill (UI or `airflow backfill create`) creates the tags of the
days it covers, each on the snapshot that was current at that day's deadline, and a re-run is a no-op.

    timetable = daily_tag_timetable("paimon_default", "shop.orders")     # read from the table's options
    PaimonCreateAutoTagsOperator(table="shop.orders", periods=["{{ paimon_tag_period(logical_date) }}"])

with `user_defined_macros={"paimon_tag_period": tag_period_macro("paimon_default", "shop.orders")}` on the DAG.
"""
from __future__ import annotations

import datetime as _dt
from typing import Any, Callable

import pendulum

from paimon_ops.airflow.hooks import PaimonHook
from paimon_ops.errors import InvalidArgumentError
from paimon_ops.lifecycle.schedule import tag_schedule
from paimon_ops.options import TAG_CREATE_TIME
from paimon_ops.timeutil import to_local_millis


def tag_schedule_of(conn_id: str, table: str) -> Any:
    """The table's automatic-tag configuration (`paimon_ops.lifecycle.schedule.TagSchedule`)."""
    sched = tag_schedule(PaimonHook(conn_id).get_table(table).raw)
    if sched is None or sched.handler is None or sched.source != TAG_CREATE_TIME.key:
        raise InvalidArgumentError(f"table {table} has no tag.create-time: set it (ALTER TABLE … SET "
                                   "('tag.create-time' = '00:30', 'tag.create-time-zone' = 'Europe/Berlin'))")
    return sched


def daily_tag_timetable(conn_id: str, table: str) -> Any:
    """`CronTriggerTimetable` at the table's `tag.create-time` in its tag zone (daily periods only)."""
    from airflow.timetables.trigger import CronTriggerTimetable
    sched = tag_schedule_of(conn_id, table)
    if sched.handler.length_ms != 86_400_000:
        raise InvalidArgumentError(f"table {table}: tag.create-interval is not one day; schedule its tags with "
                                   "PaimonCreateAutoTagsOperator without periods (all due tags) instead")
    hours, rest = divmod(sched.delay_ms, 3_600_000)
    return CronTriggerTimetable(f"{rest // 60_000} {hours} * * *", timezone=_zone_name(sched))


def _zone_name(sched: Any) -> Any:
    name = sched.zone_name
    try:
        return pendulum.timezone(name)
    except Exception:  # noqa: BLE001 - a fixed offset such as '+08:00'
        offset = sched.zone.utcoffset(None) or _dt.timedelta(0)
        return pendulum.FixedTimezone(int(offset.total_seconds()))


def tag_period(sched: Any, run_time: _dt.datetime) -> str:
    """The name of the period whose tag is due at `run_time` (a run's logical date): the period ending at or
    before `run_time − delay` on the table's wall clock, so DST never shifts a run onto another day."""
    if run_time.tzinfo is None:
        raise InvalidArgumentError(f"run time {run_time} has no time zone")
    local = to_local_millis(int(run_time.timestamp() * 1000), sched.zone)
    return sched.period_containing_local(local - sched.delay_ms - 1).name


def tag_period_macro(conn_id: str, table: str) -> Callable[[_dt.datetime], str]:
    """A DAG macro: `{{ paimon_tag_period(logical_date) }}` → the tag period of that run (the table's options are
    read when the template renders, in the task)."""
    def paimon_tag_period(run_time: _dt.datetime) -> str:
        return tag_period(tag_schedule_of(conn_id, table), run_time)
    return paimon_tag_period


__all__ = ["daily_tag_timetable", "tag_period", "tag_period_macro", "tag_schedule_of"]
