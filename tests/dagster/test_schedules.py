"""Tag schedules at tag.create-time in the table's zone, around HH:mm and across both DST changes of
Europe/Berlin; the requested partition run creates the tag of the day that just ended."""
from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from dagster import RunRequest, SkipReason, build_schedule_context
from dagster._utils.schedules import cron_string_iterator

from assets import build_paimon_definitions
from paimon_ops.lifecycle import autotag
from paimon_ops.table.table import Catalog

from tests.dagster.util import EVENTS, ORDERS, build_events, build_orders
from tests.pypaimon_util import read, sorted_rows

BERLIN = ZoneInfo("Europe/Berlin")
UTC = ZoneInfo("UTC")


def _schedule(defs, name):
    return defs.get_repository_def().get_schedule_def(name)


@pytest.fixture(scope="module")
def orders_defs(tmp_path_factory):
    """Read-only: the schedule evaluations below never write to it."""
    warehouse = str(tmp_path_factory.mktemp("warehouse"))
    build_orders(warehouse)
    build_events(warehouse)
    return warehouse, build_paimon_definitions(warehouse)


def test_dagster_ticks_once_a_local_day_across_dst(orders_defs):
    _, defs = orders_defs
    sched = _schedule(defs, "paimon__shop__orders__tag_schedule")
    assert (sched.cron_schedule, sched.execution_timezone) == ("30 2 * * *", "Europe/Berlin")
    spring = cron_string_iterator(dt.datetime(2026, 3, 27, tzinfo=BERLIN).timestamp(), sched.cron_schedule,
                                  sched.execution_timezone)
    ticks = [next(spring) for _ in range(4)]
    # 02:30 does not exist on Sunday 29 March 2026: Dagster fires at 03:00 CEST instead, once
    assert [t.isoformat() for t in ticks] == ["2026-03-27T02:30:00+01:00", "2026-03-28T02:30:00+01:00",
                                              "2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"]
    autumn = cron_string_iterator(dt.datetime(2026, 10, 24, tzinfo=BERLIN).timestamp(), sched.cron_schedule,
                                  sched.execution_timezone)
    ticks_autumn = [next(autumn) for _ in range(3)]
    # 02:30 happens twice on Sunday 25 October 2026: one tick
    assert [t.isoformat() for t in ticks_autumn] == ["2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+01:00",
                                                     "2026-10-26T02:30:00+01:00"]


@pytest.mark.parametrize("when, day", [
    (dt.datetime(2026, 3, 28, 2, 30, tzinfo=BERLIN), "2026-03-27"),   # on time, winter time
    (dt.datetime(2026, 3, 29, 3, 0, tzinfo=BERLIN), "2026-03-28"),    # spring forward: the 03:00 tick
    (dt.datetime(2026, 3, 30, 2, 30, tzinfo=BERLIN), "2026-03-29"),   # first day of summer time (23 h long day)
    (dt.datetime(2026, 3, 30, 0, 30, tzinfo=UTC), "2026-03-29"),      # the same tick seen from UTC
    (dt.datetime(2026, 3, 28, 2, 29, tzinfo=BERLIN), "2026-03-26"),   # a minute early: yesterday not due yet
    (dt.datetime(2026, 10, 25, 2, 30, tzinfo=BERLIN).replace(fold=1), "2026-10-24"),  # fall back, 2nd 02:30
    (dt.datetime(2026, 10, 26, 2, 30, tzinfo=BERLIN), "2026-10-25"),  # after the 25 h day
])
def test_schedule_targets_the_day_that_just_ended(orders_defs, instance, when, day):
    warehouse, defs = orders_defs
    sched = _schedule(defs, "paimon__shop__orders__tag_schedule")
    req = sched(build_schedule_context(instance=instance, scheduled_execution_time=when))
    assert isinstance(req, RunRequest)
    assert req.partition_key == day and req.run_key == f"shop.orders:{day}"
    assert req.tags["paimon/tag"] == day
    # the engine agrees: that day's tag is due at the tick, and the next day's is not
    table = Catalog(warehouse).get_table(ORDERS)
    now = int(when.timestamp() * 1000)
    assert autotag.period_for_date(table, dt.date.fromisoformat(day)).due_millis <= now
    next_day = dt.date.fromisoformat(day) + dt.timedelta(days=1)
    assert autotag.period_for_date(table, next_day).due_millis > now


def test_schedule_run_creates_the_tag_and_runs_the_nightly_chain(warehouse, pyspark, instance):
    build_orders(warehouse)
    defs = build_paimon_definitions(warehouse)
    sched = _schedule(defs, "paimon__shop__orders__tag_schedule")
    req = sched(build_schedule_context(instance=instance,
                                       scheduled_execution_time=dt.datetime(2026, 3, 29, 3, 0, tzinfo=BERLIN)))
    assert req.partition_key == "2026-03-28"
    defs = build_paimon_definitions(warehouse, spark=pyspark)
    job = defs.resolve_job_def(sched.job_name)
    result = job.execute_in_process(instance=instance, partition_key=req.partition_key, tags=req.tags)
    assert result.success
    done = {e.asset_key.path[-1] for e in result.get_asset_materialization_events()}
    assert done == {"tags", "snapshot_expiry", "tag_expiry", "orphan_cleanup"}
    table = Catalog(warehouse).get_table(ORDERS)
    assert {n: t.id for n, t in table.tags.tags()} == {"2026-03-28": 4}
    assert sorted_rows(read(warehouse, ORDERS, tag="2026-03-28"), ["id"]) == \
        sorted_rows(read(warehouse, ORDERS, snapshot_id=4), ["id"])
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["latest_tag_present"] and checks["referenced_files_present"]


def test_tables_without_create_time_get_no_tag_schedule_but_nightly_expiry(orders_defs, instance):
    _, defs = orders_defs
    repo = defs.get_repository_def()
    assert not repo.has_schedule_def("paimon__shop__events__tag_schedule")
    nightly = repo.get_schedule_def("paimon_nightly_expiry_schedule")
    assert nightly.job_name == "paimon_nightly_expiry" and nightly.execution_timezone == "UTC"
    req = nightly(build_schedule_context(instance=instance,
                                         scheduled_execution_time=dt.datetime(2026, 3, 29, 3, 0, tzinfo=UTC)))
    assert req.run_key == "nightly-expiry:2026-03-29"


def test_day_before_the_table_existed_is_skipped(warehouse, instance):
    build_orders(warehouse)
    defs = build_paimon_definitions(warehouse)
    sched = _schedule(defs, "paimon__shop__orders__tag_schedule")
    out = sched(build_schedule_context(instance=instance,
                                       scheduled_execution_time=dt.datetime(2026, 3, 20, 2, 30, tzinfo=BERLIN)))
    assert isinstance(out, SkipReason) and "before the table's first day 2026-03-26" in out.skip_message


def test_events_table_has_no_tag_schedule(warehouse):
    build_events(warehouse)
    repo = build_paimon_definitions(warehouse).get_repository_def()
    assert [s.name for s in repo.schedule_defs] == ["paimon_nightly_expiry_schedule"]
    assert Catalog(warehouse).get_table(EVENTS).options.str("tag.create-time") is None
