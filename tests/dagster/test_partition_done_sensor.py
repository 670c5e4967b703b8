"""The "partition done" sensor with a real Dagster instance: a downstream partitioned asset gets one run per partition
of a Paimon table newly marked done — by paimon-ops, or by Java Paimon 0.9's own mark_partition_done — once per
mark (the cursor), again when a partition is marked again; the runs materialise exactly those asset partitions."""
from __future__ import annotations

import pyarrow as pa
import pytest
from dagster import (
    AssetKey,
    Definitions,
    SensorResult,
    StaticPartitionsDefinition,
    asset,
    build_sensor_context,
)

import paimon_ops as po
from paimon_ops.dagster import PaimonWarehouse, partition_done_sensor
from paimon_ops.table.writer import TableWriter, create_table
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

DAYS = ["2026-05-27", "2026-05-28", "2026-05-29"]
T0 = 1_780_000_000_000


@asset(partitions_def=StaticPartitionsDefinition(DAYS))
def daily_report(context) -> None:
    context.log.info("report of %s", context.partition_key)


def _defs(wh: str, **kw) -> Definitions:
    sensor = partition_done_sensor("shop.events", target=[daily_report], partition_key="{dt}", **kw)
    return Definitions(assets=[daily_report], sensors=[sensor], resources={"paimon": PaimonWarehouse(uri=wh)})


def _tick(defs: Definitions, instance, cursor=None) -> SensorResult:
    repo = defs.get_repository_def()
    sensor = repo.sensor_defs[0]
    ctx = build_sensor_context(instance=instance, cursor=cursor, repository_def=repo, sensor_name=sensor.name,
                               resources=dict(repo.get_top_level_resources()))
    out = sensor(ctx)
    assert isinstance(out, SensorResult)
    return out


def _table(wh: str):
    t = create_table(wh, "shop.events", [("dt", "STRING"), ("id", "INT")], partition_keys=["dt"],
                     options={"bucket": "-1"})
    w = TableWriter(t)
    w.write(pa.table({"dt": DAYS, "id": pa.array([1, 2, 3], pa.int32())}))
    w.commit()
    return po.Catalog(wh).get_table("shop.events")


def _mark(wh: str, day: str, now: int) -> None:
    po.Catalog(wh).get_table("shop.events").maintenance.mark_partition_done(partitions=[{"dt": day}],
                                                                            now=now).execute()


def test_one_run_per_partition_newly_done(warehouse, fresh_instance):
    _table(warehouse)
    defs = _defs(warehouse)
    out = _tick(defs, fresh_instance)
    assert not out.run_requests and "no partition of shop.events newly marked done" in out.skip_reason.skip_message

    _mark(warehouse, DAYS[0], T0)
    out = _tick(defs, fresh_instance, out.cursor)
    (req,) = out.run_requests
    assert req.partition_key == DAYS[0] and req.asset_selection == [AssetKey("daily_report")]
    assert req.run_key == f"partition_done:shop.events:dt={DAYS[0]}/:{T0}"
    assert req.tags["paimon/partition"] == f"dt={DAYS[0]}" and req.tags["paimon/marked-by"] == "success-file"
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=fresh_instance, partition_key=req.partition_key, tags=req.tags,
                                    asset_selection=req.asset_selection)
    assert result.success
    mat = fresh_instance.get_latest_materialization_event(AssetKey("daily_report"))
    assert mat.dagster_event.partition == DAYS[0]

    again = _tick(defs, fresh_instance, out.cursor)  # nothing new: no second run
    assert not again.run_requests

    # Java Paimon 0.9 marks the next day with its own action; then we mark the first day again (late data)
    if not jh.java_available():
        pytest.skip(jh.skip_reason() or "java not available")  # fails under CI=true
    JavaTable(warehouse, "shop", "events").call("mark_partition_done", partitions=[{"dt": DAYS[1]}])
    _mark(warehouse, DAYS[0], T0 + 60_000)
    out = _tick(defs, fresh_instance, again.cursor)
    assert sorted((r.partition_key, r.run_key.rsplit(":", 1)[1] == str(T0 + 60_000)) for r in out.run_requests) == \
        [(DAYS[0], True), (DAYS[1], False)]


def test_skip_existing_records_what_is_done_without_runs(warehouse, fresh_instance):
    _table(warehouse)
    _mark(warehouse, DAYS[0], T0)
    defs = _defs(warehouse, skip_existing=True)
    out = _tick(defs, fresh_instance)
    assert not out.run_requests and "already done when the sensor started" in out.skip_reason.skip_message
    _mark(warehouse, DAYS[2], T0)
    out = _tick(defs, fresh_instance, out.cursor)
    assert [r.partition_key for r in out.run_requests] == [DAYS[2]]


def test_a_table_that_cannot_be_read_is_a_skip_reason(warehouse, fresh_instance):
    out = _tick(_defs(warehouse), fresh_instance)
    assert not out.run_requests and "shop.events cannot be read" in out.skip_reason.skip_message
