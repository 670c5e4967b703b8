"""Daily tags at tag.create-time in the table's zone — the paimon_tag_automation sensor, ticking around HH:mm and
across both DST changes of Europe/Berlin in 2026, its requests run as the daemon would — and the nightly schedule
(one run per shard of tables: a database, split into runs of at most shard_size tables)."""
from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from dagster import AssetKey, build_schedule_context, build_sensor_context

from paimon_ops.dagster import build_paimon_definitions
from paimon_ops.dagster import tags_asset as tags_mod
from paimon_ops.lifecycle import autotag
from paimon_ops.options import TAG_CREATE_TIME
from paimon_ops.table.table import FileSystemCatalog
from tests.dagster.util import EVENTS, ORDERS, build_events, build_orders, observations, run_job, table_key
from tests.pypaimon_util import read, sorted_rows

BERLIN = ZoneInfo("Europe/Berlin")
UTC = ZoneInfo("UTC")
TAGS = AssetKey(["paimon", "shop", "orders", "tags"])


@pytest.fixture(scope="module")
def orders_defs(tmp_path_factory):
    """Read-only: the evaluations below never write to it."""
    warehouse = str(tmp_path_factory.mktemp("warehouse"))
    build_orders(warehouse)
    build_events(warehouse)
    return warehouse, build_paimon_definitions(warehouse)


def _tick(defs, instance, when: dt.datetime, cursor, monkeypatch):
    """One tick of paimon_tag_automation at `when`, as the daemon evaluates it."""
    monkeypatch.setattr(tags_mod, "now_millis", lambda: int(when.timestamp() * 1000))
    repo = defs.get_repository_def()
    ctx = build_sensor_context(instance=instance, cursor=cursor, repository_def=repo,
                               sensor_name="paimon_tag_automation", resources=dict(repo.get_top_level_resources()))
    return repo.get_sensor_def("paimon_tag_automation")(ctx)


def _requested(defs, instance, monkeypatch, *times):
    """Tick the sensor at each time in turn; the partitions of the tags asset requested at each."""
    cursor, out = None, []
    for when in times:
        res = _tick(defs, instance, when, cursor, monkeypatch)
        cursor = res.cursor
        out.append(sorted(r.partition_key for r in res.run_requests if r.asset_selection == [TAGS]))
    return out


@pytest.mark.parametrize("before, at, day", [
    (dt.datetime(2026, 3, 28, 2, 25, tzinfo=BERLIN), dt.datetime(2026, 3, 28, 2, 31, tzinfo=BERLIN), "2026-03-27"),
    # spring forward: 02:30 does not exist on Sunday 29 March 2026; the tick comes at 03:00 CEST
    (dt.datetime(2026, 3, 29, 1, 55, tzinfo=BERLIN), dt.datetime(2026, 3, 29, 3, 1, tzinfo=BERLIN), "2026-03-28"),
    # first day of summer time (after a 23 h day), seen in Berlin and in UTC
    (dt.datetime(2026, 3, 30, 2, 25, tzinfo=BERLIN), dt.datetime(2026, 3, 30, 2, 31, tzinfo=BERLIN), "2026-03-29"),
    (dt.datetime(2026, 3, 30, 0, 25, tzinfo=UTC), dt.datetime(2026, 3, 30, 0, 31, tzinfo=UTC), "2026-03-29"),
    # fall back: 02:30 happens twice on Sunday 25 October 2026; Dagster's tick is the second one (+01:00), an hour
    # after the engine's deadline (the first): the tag is the same
    (dt.datetime(2026, 10, 25, 2, 31, tzinfo=BERLIN), dt.datetime(2026, 10, 25, 2, 31, fold=1, tzinfo=BERLIN),
     "2026-10-24"),
    (dt.datetime(2026, 10, 26, 2, 25, tzinfo=BERLIN), dt.datetime(2026, 10, 26, 2, 31, tzinfo=BERLIN), "2026-10-25"),
])
def test_tag_automation_requests_the_day_that_just_ended(orders_defs, fresh_instance, monkeypatch, before, at, day):
    warehouse, defs = orders_defs
    assert _requested(defs, fresh_instance, monkeypatch, before, at) == [[], [day]]
    # the engine agrees: that day's tag is due at the tick, and the next day's is not
    table = FileSystemCatalog(warehouse).get_table(ORDERS)
    now = int(at.timestamp() * 1000)
    assert autotag.period_for_date(table, dt.date.fromisoformat(day)).due_millis <= now
    assert autotag.period_for_date(table, dt.date.fromisoformat(day) + dt.timedelta(days=1)).due_millis > now


def test_tag_automation_fires_once_a_local_day_across_dst(orders_defs, fresh_instance, monkeypatch):
    _, defs = orders_defs
    ticks = [dt.datetime(2026, 3, 28, 2, 29, tzinfo=BERLIN), dt.datetime(2026, 3, 28, 2, 31, tzinfo=BERLIN),
             dt.datetime(2026, 3, 28, 23, 0, tzinfo=BERLIN),
             dt.datetime(2026, 3, 29, 1, 59, tzinfo=BERLIN), dt.datetime(2026, 3, 29, 3, 1, tzinfo=BERLIN),
             dt.datetime(2026, 3, 29, 3, 40, tzinfo=BERLIN),
             dt.datetime(2026, 10, 24, 2, 35, tzinfo=BERLIN),  # months later: the latest day only, once
             dt.datetime(2026, 10, 25, 2, 25, tzinfo=BERLIN), dt.datetime(2026, 10, 25, 2, 31, tzinfo=BERLIN),
             dt.datetime(2026, 10, 25, 2, 31, fold=1, tzinfo=BERLIN),  # the second 02:30 is Dagster's tick
             dt.datetime(2026, 10, 25, 4, 0, tzinfo=BERLIN), dt.datetime(2026, 10, 26, 2, 31, tzinfo=BERLIN)]
    assert _requested(defs, fresh_instance, monkeypatch, *ticks) == [[], ["2026-03-27"], [], [], ["2026-03-28"], [],
                                                        ["2026-10-23"], [], [], ["2026-10-24"], [], ["2026-10-25"]]


def test_no_tag_is_requested_before_the_table_existed(orders_defs, fresh_instance, monkeypatch):
    _, defs = orders_defs
    assert _requested(defs, fresh_instance, monkeypatch, dt.datetime(2026, 3, 20, 2, 25, tzinfo=BERLIN),
                      dt.datetime(2026, 3, 20, 2, 31, tzinfo=BERLIN)) == [[], []]


def test_events_table_has_no_tags_asset(orders_defs):
    warehouse, defs = orders_defs
    keys = {k.to_user_string() for k in defs.get_repository_def().asset_graph.get_all_asset_keys()}
    assert "paimon/shop/events/tags" not in keys and "paimon/shop/orders/tags" in keys
    assert FileSystemCatalog(warehouse).get_table(EVENTS).options.text(TAG_CREATE_TIME) is None


def test_requested_tag_then_nightly_chain(warehouse, spark_res, instance, monkeypatch):
    build_orders(warehouse)
    defs = build_paimon_definitions(warehouse, spark=spark_res)
    # the run the sensor requests at 2026-03-29 03:00 CEST: the tags partition of 2026-03-28, run as the daemon would
    cursor = _tick(defs, instance, dt.datetime(2026, 3, 29, 1, 55, tzinfo=BERLIN), None, monkeypatch).cursor
    (req,) = _tick(defs, instance, dt.datetime(2026, 3, 29, 3, 1, tzinfo=BERLIN), cursor, monkeypatch).run_requests
    assert (req.run_key, req.partition_key, req.asset_selection) == ("tags:shop.orders:2026-03-28", "2026-03-28", [TAGS])
    assert req.tags["paimon/table"] == ORDERS and req.tags["paimon/trigger"] == "paimon_tag_automation"
    result = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=instance, asset_selection=req.asset_selection, partition_key=req.partition_key, tags=req.tags)
    assert result.success
    # the day's tag exists; the check covers the retained window: the two earlier days were never tagged and their
    # snapshots are still known, so a backfill could make them
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "latest_tag_present" and not check.passed
    assert check.metadata["expected_tag"].value == "2026-03-28"
    assert check.metadata["missing"].value == "2026-03-27, 2026-03-26"
    table = FileSystemCatalog(warehouse).get_table(ORDERS)
    assert {n: t.id for n, t in table.tags.tags()} == {"2026-03-28": 4}
    assert sorted_rows(read(warehouse, ORDERS, tag="2026-03-28"), ["id"]) ==\
        sorted_rows(read(warehouse, ORDERS, snapshot_id=4), ["id"])
    nightly = run_job(defs, "paimon_nightly", ORDERS, instance)
    assert nightly.success
    (obs,) = observations(nightly, table_key(ORDERS))
    assert obs["operations"] == "create_tags, expire_snapshots, expire_tags, remove_orphans"
    checks = {e.check_name: e.passed for e in nightly.get_asset_check_evaluations()}
    assert checks["referenced_files_present"] and checks["metadata_readable"]


def test_nightly_schedule_requests_one_run_per_shard(orders_defs, instance):
    warehouse, defs = orders_defs
    sched = defs.get_repository_def().get_schedule_def("paimon_nightly_schedule")
    assert (sched.cron_schedule, sched.execution_timezone, sched.job_name) == ("0 3 * * *", "UTC", "paimon_nightly")
    when = build_schedule_context(instance=instance, scheduled_execution_time=dt.datetime(2026, 3, 29, 3, 0, tzinfo=UTC))
    (req,) = sched(when)  # one database: one run selecting its tables, without their checks
    assert req.run_key == "nightly:shop:2026-03-29" and req.tags["paimon/shard"] == "shop"
    assert set(req.asset_selection) == {table_key(ORDERS), table_key(EVENTS)} and req.asset_check_keys == []
    assert "paimon/table" not in req.tags  # the run queue's one-run-per-table limit is for runs of one table
    # shards of at most one table: a run per table, with the table's run tags, as before
    small = build_paimon_definitions(warehouse, shard_size=1).get_repository_def()
    reqs = small.get_schedule_def("paimon_nightly_schedule")(when)
    assert sorted(r.run_key for r in reqs) == ["nightly:shop.events:2026-03-29", "nightly:shop.orders:2026-03-29"]
    for r in reqs:
        ident = r.tags["paimon/table"]
        assert r.asset_selection == [table_key(ident)] and r.tags["paimon/database"] == "shop"
