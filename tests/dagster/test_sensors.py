"""Sensor ticks with cursors against real tables: they request compaction / expiry of exactly what is over the
threshold, never twice for one snapshot, and say what they measured when they skip. The requested runs are
executed and their effect checked in the table and by pypaimon."""
from __future__ import annotations

from dagster import DagsterRunStatus, SensorResult, build_sensor_context
from dagster._core.test_utils import create_run_for_test

from assets import build_paimon_definitions
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import Catalog

from tests.dagster.util import EVENTS, ORDERS, build_events, build_orders, write, ms
from tests.pypaimon_util import read, sorted_rows


def _tick(defs, name, instance, cursor=None) -> SensorResult:
    """One tick as the daemon does it: the code location's top-level resources, the instance, the cursor."""
    repo = defs.get_repository_def()
    sensor = repo.get_sensor_def(name)
    ctx = build_sensor_context(instance=instance, cursor=cursor, repository_def=repo, sensor_name=name,
                               resources=dict(repo.get_top_level_resources()))
    out = sensor(ctx)
    assert isinstance(out, SensorResult)
    return out


def _run(defs, request, instance):
    job = defs.resolve_job_def(request.job_name)
    return job.execute_in_process(instance=instance, run_config=request.run_config, tags=request.tags,
                                  asset_selection=request.asset_selection)


def _dvs(warehouse, identifier):
    table = Catalog(warehouse).get_table(identifier)
    scan = TableScanner(table).scan_latest()
    return {f.bucket: scan.dv_of(f)[1].cardinality for f in scan.files if scan.dv_of(f)}


def test_dv_ratio_sensor_requests_exactly_the_bucket_over_threshold(warehouse, pyspark, instance):
    build_orders(warehouse)
    defs = build_paimon_definitions(warehouse, spark=pyspark)
    name = "paimon__shop__orders__dv_ratio_sensor"
    visible = sorted_rows(read(warehouse, ORDERS), ["id"])

    out = _tick(defs, name, instance)
    assert out.cursor == "4" and len(out.run_requests) == 1
    req = out.run_requests[0]
    assert req.run_key == "dv_ratio:shop.orders:4"
    assert req.job_name == "paimon__shop__orders__compaction_job"
    # bucket 0 has 15 of 23 rows deleted (65 %), bucket 1 1 of 17 (6 %): only bucket 0
    assert req.run_config == {"ops": {"paimon__shop__orders__compaction": {"config": {
        "mode": "dv-ratio", "partitions": [], "buckets": [0]}}}}
    assert req.tags["paimon/buckets"] == "(unpartitioned) bucket-0"

    # the same snapshot again: nothing new, no second request
    again = _tick(defs, name, instance, cursor=out.cursor)
    assert not again.run_requests and "no new snapshot since 4" in again.skip_reason.skip_message

    result = _run(defs, req, instance)
    assert result.success
    assert _dvs(warehouse, ORDERS) == {1: 1}  # bucket 0 rewritten without its deleted rows; bucket 1 untouched
    assert sorted_rows(read(warehouse, ORDERS), ["id"]) == visible
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"dv_ratio": True, "small_files": True}

    after = _tick(defs, name, instance, cursor=out.cursor)  # snapshot 5 is new: measured, under threshold
    assert not after.run_requests and after.cursor == "5"
    assert "worst file deleted-row ratio 5.9%" in after.skip_reason.skip_message
    assert "threshold 20.0%" in after.skip_reason.skip_message


def test_sensor_waits_while_a_run_for_the_table_is_in_progress(warehouse, fresh_instance):
    build_orders(warehouse)
    defs = build_paimon_definitions(warehouse)
    create_run_for_test(fresh_instance, job_name="paimon__shop__orders__compaction_job",
                        status=DagsterRunStatus.STARTED, tags={"paimon/table": "shop.orders"})
    out = _tick(defs, "paimon__shop__orders__dv_ratio_sensor", fresh_instance, cursor="3")
    assert not out.run_requests and out.cursor is None  # cursor not advanced: re-evaluated after the run
    assert "still queued or running" in out.skip_reason.skip_message


def test_small_files_sensor_compacts_only_the_partition_over_threshold(warehouse, pyspark, instance):
    build_events(warehouse)
    defs = build_paimon_definitions(warehouse, spark=pyspark)
    before = sorted_rows(read(warehouse, EVENTS), ["id"])
    table = Catalog(warehouse).get_table(EVENTS)
    untouched = {f.path for f in TableScanner(table).scan_latest().files if "dt=2026-03-28" in f.path}

    out = _tick(defs, "paimon__shop__events__small_files_sensor", instance)
    assert out.cursor == "7" and len(out.run_requests) == 1
    req = out.run_requests[0]
    assert req.run_config["ops"]["paimon__shop__events__compaction"]["config"] == {
        "mode": "small-files", "partitions": [{"dt": "2026-03-27"}], "buckets": [0]}
    result = _run(defs, req, instance)
    assert result.success
    scan = TableScanner(Catalog(warehouse).get_table(EVENTS)).scan_latest()
    by_dir = {}
    for f in scan.files:
        by_dir.setdefault(f.path.split("/")[-3], []).append(f.path)
    assert len(by_dir["dt=2026-03-27"]) == 1  # six small files -> one
    assert set(by_dir["dt=2026-03-28"]) == untouched
    assert sorted_rows(read(warehouse, EVENTS), ["id"]) == before

    out = _tick(defs, "paimon__shop__events__small_files_sensor", instance, cursor=out.cursor)
    assert not out.run_requests
    assert "at most 1 small files per bucket vs threshold 5" in out.skip_reason.skip_message


def test_snapshot_count_sensor_requests_expiry(warehouse, pyspark, instance):
    build_events(warehouse)  # 7 snapshots, retain min 2 / 1 min, expiry due at 3 expirable
    defs = build_paimon_definitions(warehouse, spark=pyspark)
    name = "paimon__shop__events__snapshot_count_sensor"
    out = _tick(defs, name, instance)
    assert len(out.run_requests) == 1
    req = out.run_requests[0]
    assert req.run_key == "snapshot_count:shop.events:7" and req.job_name == "paimon__shop__events__expiry_job"
    assert [k.to_user_string() for k in req.asset_selection] == ["paimon/shop/events/snapshot_expiry"]
    assert "7 snapshots, 5 expirable now (expiry due at 3)" in req.tags["paimon/reason"]
    result = _run(defs, req, instance)
    assert result.success
    assert {e.asset_key.path[-1] for e in result.get_asset_materialization_events()} == {"snapshot_expiry"}
    assert Catalog(warehouse).get_table(EVENTS).snapshots.list_ids() == [6, 7]

    # a new commit: measured again, under the threshold now
    write(Catalog(warehouse).get_table(EVENTS), {"dt": ["2026-03-29"], "id": [7], "payload": ["z"]},
          ms(2026, 3, 29, 8))
    out = _tick(defs, name, instance, cursor=out.cursor)
    assert not out.run_requests and out.cursor == "8"
    assert "3 snapshots, 1 expirable now (expiry due at 3)" in out.skip_reason.skip_message


def test_sensor_ticks_read_metadata_only(warehouse, fresh_instance, monkeypatch):
    """A tick opens snapshot / manifest / index-manifest files, never a data file (nor a DV index file: the
    cardinalities are in the index manifest)."""
    from paimon_ops.table.fileio import FileIO
    build_orders(warehouse)
    build_events(warehouse)
    defs = build_paimon_definitions(warehouse)
    opened: list[str] = []
    for name in ("read_bytes", "open_input"):
        original = getattr(FileIO, name)

        def spy(self, path, _original=original):
            opened.append(path)
            return _original(self, path)
        monkeypatch.setattr(FileIO, name, spy)
    for sensor in ("paimon__shop__orders__dv_ratio_sensor", "paimon__shop__orders__small_files_sensor",
                   "paimon__shop__orders__snapshot_count_sensor", "paimon__shop__events__small_files_sensor"):
        _tick(defs, sensor, fresh_instance)
    assert opened
    dirs = {p.split("/")[-2] for p in opened}
    assert dirs <= {"snapshot", "manifest", "schema", "consumer", "tag"}, dirs
    assert not [p for p in opened if p.endswith((".parquet", ".orc")) or "/index/" in p]


def test_small_files_sensor_requests_a_minor_compaction_that_marks_deletion_vectors(warehouse, pyspark, instance):
    """Primary-key tables get Paimon's minor compaction from the sensor (what a dedicated compaction job runs):
    level 0 moves up and the rows it supersedes in the (much larger) max level are marked in deletion vectors."""
    from paimon_ops.compact import compact
    from paimon_ops.table.writer import create_table

    t = create_table(warehouse, ORDERS, [("id", "INT"), ("name", "STRING"), ("amount", "BIGINT")],
                     primary_keys=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true",
                                                   "write-only": "true", "compaction.small-files-threshold": "1"})
    write(t, {"id": list(range(3000)), "name": [f"n{i}" for i in range(3000)], "amount": list(range(3000))},
          ms(2026, 3, 26, 10))
    compact(t.refresh(), mode="full")
    write(t.refresh(), {"id": list(range(20, 30)) + [5000], "name": [f"u{i}" for i in range(11)],
                        "amount": [7] * 11}, ms(2026, 3, 28, 11))
    defs = build_paimon_definitions(warehouse, spark=pyspark)
    out = _tick(defs, "paimon__shop__orders__small_files_sensor", instance)
    assert len(out.run_requests) == 1
    req = out.run_requests[0]
    assert req.run_config["ops"]["paimon__shop__orders__compaction"]["config"]["mode"] == "minor"
    assert _dvs(warehouse, ORDERS) == {}
    result = _run(defs, req, instance)
    assert result.success
    assert sum(_dvs(warehouse, ORDERS).values()) == 10  # ids 20..29 superseded in the max level
    rows = {r["id"]: r for r in sorted_rows(read(warehouse, ORDERS), ["id"])}
    assert all(rows[i]["amount"] == 7 for i in range(20, 30)) and rows[5000]["amount"] == 7
    assert len(rows) == 3001
