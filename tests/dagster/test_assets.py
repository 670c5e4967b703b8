"""Materialising the maintenance assets against real tables; effects checked in the table (our reader) and by
pypaimon; bad configuration fails the run clearly and deletes nothing."""
from __future__ import annotations

import os
import shutil
import time

import pytest
from dagster import AssetKey, materialize

from assets import build_paimon_definitions
from assets.resources import PaimonWarehouse, spark_resource, spark_runner
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import Catalog

from tests.dagster.util import EVENTS, ORDERS, build_events, build_orders, table_files
from tests.pypaimon_util import read, sorted_rows


def _asset(defs, *path):
    return next(a for a in defs.assets if a.key == AssetKey(list(path)))


def _checks(defs, key: AssetKey):
    return [c for c in defs.asset_checks if key in {k.asset_key for k in c.check_keys}]


def _md(result, key: AssetKey) -> dict:
    mats = [e.event_specific_data.materialization for e in result.get_asset_materialization_events()
            if e.event_specific_data.materialization.asset_key == key]
    assert len(mats) == 1, mats
    return {k: v.value for k, v in mats[0].metadata.items()}


def test_full_compaction_asset_on_spark(warehouse, spark, pyspark, instance):
    assert spark_runner(pyspark).spark is spark  # the resource hands the engine the session fixture's SparkSession
    build_orders(warehouse)
    table = Catalog(warehouse).get_table(ORDERS)
    before_latest = table.snapshots.latest_id()
    visible_before = read(warehouse, ORDERS)  # DV mode: level-0 rows (ids 100..109) are not visible yet
    assert visible_before.num_rows == 24
    defs = build_paimon_definitions(warehouse, spark=pyspark)
    key = AssetKey(["paimon", "shop", "orders", "compaction"])
    result = materialize([_asset(defs, *key.path), *_checks(defs, key)], instance=instance,
                         resources={"paimon_warehouse": PaimonWarehouse(uri=warehouse), "pyspark": pyspark},
                         run_config={"ops": {"paimon__shop__orders__compaction": {"config": {"mode": "full"}}}})
    assert result.success
    md = _md(result, key)
    assert md["operation"] == "compact" and md["dry_run"] is False and md["mode"] == "full"
    assert md["files_deleted"] == 4 and md["files_written"] >= 2  # 2 level-5 + 2 level-0 files merged
    assert md["snapshot_id"] == before_latest + 1
    assert "| data |" in md["summary"] and "compact" in md["summary"]

    # in the table: one COMPACT snapshot, every file at the max level, no deletion vectors left
    table = Catalog(warehouse).get_table(ORDERS)
    snap = table.snapshots.latest()
    assert snap.id == before_latest + 1 and snap.commit_kind == "COMPACT"
    scan = TableScanner(table).scan_latest()
    assert {f.level for f in scan.files} == {5} and not [f for f in scan.files if scan.dv_of(f)]
    # pypaimon: the deleted rows stay deleted, the new keys are now visible
    after = read(warehouse, ORDERS)
    assert after.num_rows == 34
    assert sorted_rows(after, ["id"])[:len(sorted_rows(visible_before, ["id"]))] == sorted_rows(visible_before, ["id"])
    # and the compaction's checks ran against the new state
    evals = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert evals["dv_ratio"].passed and evals["small_files"].passed


def test_dry_run_needs_no_spark_and_changes_nothing(warehouse, instance):
    build_orders(warehouse)
    table = Catalog(warehouse).get_table(ORDERS)
    files = table_files(table)
    unreachable = spark_resource(master="spark://127.0.0.1:1")
    defs = build_paimon_definitions(warehouse, spark=unreachable)
    key = AssetKey(["paimon", "shop", "orders", "compaction"])
    result = materialize([_asset(defs, *key.path)], instance=instance,
                         resources={"paimon_warehouse": PaimonWarehouse(uri=warehouse), "pyspark": unreachable},
                         run_config={"ops": {"paimon__shop__orders__compaction": {"config": {"dry_run": True,
                                                                                             "mode": "full"}}}})
    assert result.success
    md = _md(result, key)
    assert md["dry_run"] is True and md["files_deleted"] == 4 and "would delete" in md["summary"]
    assert table_files(Catalog(warehouse).get_table(ORDERS)) == files


def test_tags_partitions_create_tags_idempotently(warehouse, instance):
    build_orders(warehouse)
    defs = build_paimon_definitions(warehouse)
    tags = _asset(defs, "paimon", "shop", "orders", "tags")
    res = {"paimon_warehouse": PaimonWarehouse(uri=warehouse)}
    for day in ("2026-03-26", "2026-03-27", "2026-03-28"):
        result = materialize([tags], instance=instance, partition_key=day, resources=res)
        assert result.success
    table = Catalog(warehouse).get_table(ORDERS)
    # day D's tag = the latest snapshot committed by D+1 02:30 Europe/Berlin
    assert {n: t.id for n, t in table.tags.tags()} == {"2026-03-26": 2, "2026-03-27": 3, "2026-03-28": 4}
    for name, sid in (("2026-03-26", 2), ("2026-03-28", 4)):
        assert sorted_rows(read(warehouse, ORDERS, tag=name), ["id"]) == \
            sorted_rows(read(warehouse, ORDERS, snapshot_id=sid), ["id"])
    # again: nothing new, and the metadata says so
    result = materialize([tags], instance=instance, partition_key="2026-03-27", resources=res)
    md = _md(result, AssetKey(["paimon", "shop", "orders", "tags"]))
    assert md["status"] == "exists" and md["files_written"] == 0 and md["tag"] == "2026-03-27"
    assert len(Catalog(warehouse).get_table(ORDERS).tags.names()) == 3


def test_expiry_and_orphan_assets(warehouse, pyspark, instance):
    build_events(warehouse)  # 7 snapshots; retain min 2, time 1 min
    before = sorted_rows(read(warehouse, EVENTS), ["id"])
    defs = build_paimon_definitions(warehouse, spark=pyspark)
    table = Catalog(warehouse).get_table(EVENTS)
    stray = table.path("dt=2026-03-27", "bucket-0", "data-stray.parquet")
    table.io.write_bytes(stray, b"not referenced by anything")
    five_days_ago = time.time() - 5 * 86400
    os.utime(stray, (five_days_ago, five_days_ago))  # older than the engine's default 3 days; the table's files are not
    job = defs.resolve_job_def("paimon__shop__events__expiry_job")
    result = job.execute_in_process(instance=instance)
    assert result.success
    se = _md(result, AssetKey(["paimon", "shop", "events", "snapshot_expiry"]))
    assert se["operation"] == "expire_snapshots" and se["deleted/snapshot"] == 5
    table = Catalog(warehouse).get_table(EVENTS)
    assert table.snapshots.list_ids() == [6, 7]
    oc = _md(result, AssetKey(["paimon", "shop", "events", "orphan_cleanup"]))
    assert oc["files_deleted"] == 1 and oc["deleted/orphan"] == 1 and not table.io.exists(stray)
    assert sorted_rows(read(warehouse, EVENTS), ["id"]) == before
    evals = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert evals["snapshot_retention"].passed and evals["referenced_files_present"].passed


# ---------------------------------------------------------------------------------------------- bad configuration
def _run_expiry(defs, warehouse_res, spark_res, instance):
    se = _asset(defs, "paimon", "shop", "events", "snapshot_expiry")
    return materialize([se], instance=instance, raise_on_error=False,
                       resources={"paimon_warehouse": warehouse_res, "pyspark": spark_res})


def _failure_message(result) -> str:
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    return failure.step_failure_data.error.message


@pytest.mark.parametrize("spark_cfg", [{"master": "spark://127.0.0.1:1"}, {"remote": "sc://127.0.0.1:1"}])
def test_unreachable_spark_fails_before_anything_is_deleted(warehouse, instance, spark_cfg):
    build_events(warehouse)
    table = Catalog(warehouse).get_table(EVENTS)
    files = table_files(table)
    defs = build_paimon_definitions(warehouse)
    result = _run_expiry(defs, PaimonWarehouse(uri=warehouse), spark_resource(**spark_cfg), instance)
    assert not result.success
    msg = _failure_message(result)
    assert "127.0.0.1:1 is unreachable" in msg and "Nothing was changed" in msg
    assert table_files(Catalog(warehouse).get_table(EVENTS)) == files  # nothing deleted


def test_unknown_table_and_bad_uri_fail_clearly(warehouse, tmp_path, pyspark, instance):
    build_events(warehouse)
    defs = build_paimon_definitions(warehouse)
    # bad URI
    result = _run_expiry(defs, PaimonWarehouse(uri=str(tmp_path / "no-such-warehouse")), pyspark, instance)
    assert not result.success
    msg = _failure_message(result)
    assert "cannot open Paimon table shop.events" in msg and "warehouse directory does not exist" in msg
    result = _run_expiry(defs, PaimonWarehouse(uri="nosuchscheme://bucket/wh"), pyspark, instance)
    assert not result.success and "shop.events" in _failure_message(result)
    # the table disappeared after the code location was loaded
    moved = tmp_path / "moved"
    shutil.move(Catalog(warehouse).table_path(EVENTS), moved)
    result = _run_expiry(defs, PaimonWarehouse(uri=warehouse), pyspark, instance)
    assert not result.success
    msg = _failure_message(result)
    assert "table 'shop.events' not found" in msg and "tables in this warehouse" in msg
    assert len(list((moved / "snapshot").glob("snapshot-*"))) == 7  # nothing deleted


def test_bad_op_config_fails_clearly_and_deletes_nothing(warehouse, pyspark, instance):
    build_events(warehouse)
    table = Catalog(warehouse).get_table(EVENTS)
    files = table_files(table)
    defs = build_paimon_definitions(warehouse, spark=pyspark)
    res = {"paimon_warehouse": PaimonWarehouse(uri=warehouse), "pyspark": pyspark}
    orphans = _asset(defs, "paimon", "shop", "events", "orphan_cleanup")
    result = materialize([orphans], instance=instance, resources=res, raise_on_error=False, run_config={"ops": {
        "paimon__shop__events__orphan_cleanup": {"config": {"older_than": "1 h"}}}})
    assert not result.success
    msg = _failure_message(result)
    assert "orphan cleanup of shop.events failed" in msg and "at least 1 day" in msg
    compaction = _asset(defs, "paimon", "shop", "events", "compaction")
    result = materialize([compaction], instance=instance, resources=res, raise_on_error=False, run_config={"ops": {
        "paimon__shop__events__compaction": {"config": {"mode": "zorder-everything"}}}})
    assert not result.success and "unknown compaction mode 'zorder-everything'" in _failure_message(result)
    assert table_files(Catalog(warehouse).get_table(EVENTS)) == files
