"""Sensor ticks with per-table cursors against real tables: one sensor per kind for every table; they request
compaction / expiry of exactly what is over the threshold, never twice for one snapshot, wait while any run
changes the table (also one launched from an asset page), and say what they measured when they skip. The
observation sensor records observations, check evaluations and existing tags without launching runs."""
from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path

import pytest
from dagster import AssetKey, AssetPartitionStatus, DagsterRunStatus, SensorResult, build_sensor_context

from paimon_ops.dagster import build_paimon_definitions
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileSystemCatalog
from tests.dagster.util import (
    EVENTS,
    ORDERS,
    build_events,
    build_orders,
    ms,
    observations,
    op_name,
    table_key,
    write,
)
from tests.pypaimon_util import read, sorted_rows

ORDERS_TAGS = AssetKey(["paimon", "shop", "orders", "tags"])


def _tick(defs, name, instance, cursor=None) -> SensorResult:
    """One tick as the daemon does it: the code location's top-level resources, the instance, the cursor."""
    repo = defs.get_repository_def()
    sensor = repo.get_sensor_def(name)
    ctx = build_sensor_context(instance=instance, cursor=cursor, repository_def=repo, sensor_name=name,
                               resources=dict(repo.get_top_level_resources()))
    out = sensor(ctx)
    assert isinstance(out, SensorResult)
    return out


def _run(defs, request, instance, **kw):
    job = defs.resolve_job_def(request.job_name)
    return job.execute_in_process(instance=instance, run_config=request.run_config, tags=request.tags,
                                  asset_selection=request.asset_selection, partition_key=request.partition_key, **kw)


def _dvs(warehouse, identifier):
    table = FileSystemCatalog(warehouse).get_table(identifier)
    scan = TableScanner(table).scan_latest()
    return {f.bucket: scan.dv_of(f)[1].cardinality for f in scan.files if scan.dv_of(f)}


def _seen(cursor: str) -> dict:
    return json.loads(cursor)["tables"]


def test_dv_ratio_sensor_requests_exactly_the_bucket_over_threshold(warehouse, spark_res, instance):
    build_orders(warehouse)
    defs = build_paimon_definitions(warehouse, spark=spark_res)
    name = "paimon_dv_ratio_sensor"
    visible = sorted_rows(read(warehouse, ORDERS), ["id"])

    out = _tick(defs, name, instance)
    assert _seen(out.cursor) == {ORDERS: "4"} and len(out.run_requests) == 1
    req = out.run_requests[0]
    assert req.run_key == "dv_ratio:shop.orders:4" and req.job_name == "paimon_compaction"
    assert req.asset_selection == [table_key(ORDERS)]
    # bucket 0 has 15 of 23 rows deleted (65 %), bucket 1 1 of 17 (6 %): only bucket 0
    assert req.run_config == {"ops": {op_name(defs, ORDERS): {"config": {"compact": {
        "mode": "dv-ratio", "partitions": [], "buckets": [0]}}}}}
    assert req.tags["paimon/buckets"] == "(unpartitioned) bucket-0" and req.tags["paimon/table"] == ORDERS
    assert req.tags["paimon/database"] == "shop"

    again = _tick(defs, name, instance, cursor=out.cursor)  # the same snapshot: nothing new, no second request
    assert not again.run_requests and "no new snapshot since 4" in again.skip_reason.skip_message

    result = _run(defs, req, instance)
    assert result.success
    assert _dvs(warehouse, ORDERS) == {1: 1}  # bucket 0 rewritten without its deleted rows; bucket 1 untouched
    assert sorted_rows(read(warehouse, ORDERS), ["id"]) == visible
    (obs,) = observations(result, table_key(ORDERS))
    assert obs["operations"] == "compact" and obs["max_file_dv_ratio"] < 0.2
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["dv_ratio"] and checks["small_files"]

    after = _tick(defs, name, instance, cursor=out.cursor)  # snapshot 5 is new: measured, under threshold
    assert not after.run_requests and _seen(after.cursor) == {ORDERS: "5"}
    assert "worst file deleted-row ratio 5.9%" in after.skip_reason.skip_message
    assert "threshold 20.0%" in after.skip_reason.skip_message


def test_sensors_wait_while_a_run_changes_the_table(warehouse, fresh_instance):
    """Also a run launched from the asset page (no paimon/table run tag: recognised by its asset selection)."""
    from dagster._core.test_utils import create_run_for_test

    build_orders(warehouse)
    defs = build_paimon_definitions(warehouse)
    create_run_for_test(fresh_instance, job_name="__ASSET_JOB", status=DagsterRunStatus.STARTED,
                        asset_selection=frozenset({ORDERS_TAGS}))
    out = _tick(defs, "paimon_dv_ratio_sensor", fresh_instance, cursor=json.dumps({"tables": {ORDERS: "3"}}))
    assert not out.run_requests and _seen(out.cursor) == {ORDERS: "3"}  # not advanced: re-evaluated after the run
    assert "still queued or running" in out.skip_reason.skip_message


def test_one_sensor_covers_every_table(warehouse, spark_res, instance):
    build_orders(warehouse)
    build_events(warehouse)
    defs = build_paimon_definitions(warehouse, spark=spark_res)
    out = _tick(defs, "paimon_small_files_sensor", instance)
    # events: six small files in dt=2026-03-27 (threshold 5); orders: one level-0 file per bucket (under 5)
    assert _seen(out.cursor) == {ORDERS: "4", EVENTS: "7"} and len(out.run_requests) == 1
    req = out.run_requests[0]
    assert req.run_key == "small_files:shop.events:7" and req.asset_selection == [table_key(EVENTS)]
    assert req.run_config["ops"][op_name(defs, EVENTS)]["config"]["compact"] == {
        "mode": "small-files", "partitions": [{"dt": "2026-03-27"}], "buckets": [0]}
    table = FileSystemCatalog(warehouse).get_table(EVENTS)
    untouched = {f.path for f in TableScanner(table).scan_latest().files if "dt=2026-03-28" in f.path}
    before = sorted_rows(read(warehouse, EVENTS), ["id"])
    assert _run(defs, req, instance).success
    scan = TableScanner(FileSystemCatalog(warehouse).get_table(EVENTS)).scan_latest()
    by_dir: dict = {}
    for f in scan.files:
        by_dir.setdefault(f.path.split("/")[-3], []).append(f.path)
    assert len(by_dir["dt=2026-03-27"]) == 1 and set(by_dir["dt=2026-03-28"]) == untouched
    assert sorted_rows(read(warehouse, EVENTS), ["id"]) == before

    out = _tick(defs, "paimon_small_files_sensor", instance, cursor=out.cursor)
    assert not out.run_requests
    msg = out.skip_reason.skip_message
    assert "1 of 2 tables without a new snapshot" in msg and "at most 1 small files per bucket vs threshold 5" in msg


def test_snapshot_count_sensor_requests_expiry(warehouse, spark_res, instance):
    build_events(warehouse)  # 7 snapshots, retain min 2 / 1 min, expiry due at 3 expirable
    defs = build_paimon_definitions(warehouse, spark=spark_res)
    name = "paimon_snapshot_count_sensor"
    out = _tick(defs, name, instance)
    (req,) = out.run_requests
    assert req.run_key == "snapshot_count:shop.events:7" and req.job_name == "paimon_expire_snapshots"
    assert req.asset_selection == [table_key(EVENTS)]
    assert "7 snapshots, 5 expirable now (expiry due at 3)" in req.tags["paimon/reason"]
    result = _run(defs, req, instance)
    assert result.success
    (obs,) = observations(result, table_key(EVENTS))
    assert obs["operations"] == "expire_snapshots" and obs["expire_snapshots/deleted/snapshot"] == 5
    assert FileSystemCatalog(warehouse).get_table(EVENTS).snapshots.list_ids() == [6, 7]

    write(FileSystemCatalog(warehouse).get_table(EVENTS), {"dt": ["2026-03-29"], "id": [7], "payload": ["z"]},
          ms(2026, 3, 29, 8))
    out = _tick(defs, name, instance, cursor=out.cursor)
    assert not out.run_requests and _seen(out.cursor) == {EVENTS: "8"}
    assert "3 snapshots, 1 expirable now (expiry due at 3)" in out.skip_reason.skip_message


def test_sensor_ticks_read_metadata_only(warehouse, fresh_instance, monkeypatch):
    """A tick opens snapshot / manifest / index-manifest files, never a data file (nor a DV index file: the
    cardinalities are in the index manifest)."""
    from paimon_ops.table.local_fileio import LocalFileIO
    build_orders(warehouse)
    build_events(warehouse)
    defs = build_paimon_definitions(warehouse)
    opened: list[str] = []
    for name in ("read_bytes", "open_input"):
        original = getattr(LocalFileIO, name)

        def spy(self, path, _original=original):
            opened.append(path)
            return _original(self, path)
        monkeypatch.setattr(LocalFileIO, name, spy)
    for sensor in ("paimon_dv_ratio_sensor", "paimon_small_files_sensor", "paimon_snapshot_count_sensor",
                   "paimon_manifest_sensor", "paimon_observation_sensor"):
        _tick(defs, sensor, fresh_instance)
    assert opened
    dirs = {p.split("/")[-2] for p in opened}
    assert dirs <= {"snapshot", "manifest", "schema", "consumer", "tag"}, dirs
    assert not [p for p in opened if p.endswith((".parquet", ".orc")) or "/index/" in p]


def test_observation_sensor_observes_checks_and_syncs_existing_tags(warehouse, fresh_instance):
    t = build_orders(warehouse)
    from paimon_ops.lifecycle import autotag
    autotag.create_tag_for_period(t, "2026-03-26")  # a tag made outside Dagster (Java / Flink, the CLI …)
    defs = build_paimon_definitions(warehouse)
    out = _tick(defs, "paimon_observation_sensor", fresh_instance)
    assert not out.run_requests
    obs = [e for e in out.asset_events if type(e).__name__ == "AssetObservation"]
    (o,) = obs
    md = {k: v.value for k, v in o.metadata.items()}
    assert o.asset_key == table_key(ORDERS)
    assert md["snapshots"] == 4 and md["tags"] == 1 and md["files"] == 4 and md["level0_files"] == 2
    # DV table: readers skip level 0 (ids 100..109), so the row count is pypaimon's 24, not 50 - 16
    assert md["dagster/row_count"] == read(warehouse, ORDERS).num_rows == 24
    assert md["rows_before_merge"] == 50 - 16 and md["deleted_rows"] == 16 and md["dv_ratio"] == 16 / 50
    evals = {e.check_name: e for e in out.asset_events if type(e).__name__ == "AssetCheckEvaluation"}
    assert set(evals) == {"metadata_readable", "small_files", "dv_ratio", "snapshot_retention", "manifest_count",
                          "latest_tag_present"}
    assert not evals["dv_ratio"].passed and evals["dv_ratio"].severity.value == "WARN"
    assert evals["metadata_readable"].passed
    mats = [e for e in out.asset_events if type(e).__name__ == "AssetMaterialization"]
    # the table's own history: its latest writer commit (snapshot 4; 2 and 3 are COMPACT) and the existing tag
    assert [(m.asset_key, m.partition) for m in mats] == [(table_key(ORDERS), None), (ORDERS_TAGS, "2026-03-26")]
    assert mats[0].metadata["snapshot_id"].value == 4 and mats[0].metadata["commit_kind"].value == "APPEND"
    assert all(m.metadata["synced_from_table"].value is True for m in mats)

    for e in out.asset_events:  # what the daemon does with them
        fresh_instance.report_runless_asset_event(e)
    pd = defs.get_repository_def().asset_graph.get(ORDERS_TAGS).partitions_def
    status = fresh_instance.get_status_by_partition(ORDERS_TAGS, ["2026-03-26", "2026-03-27"], pd)
    assert status["2026-03-26"] == AssetPartitionStatus.MATERIALIZED and status["2026-03-27"] is None

    again = _tick(defs, "paimon_observation_sensor", fresh_instance, cursor=out.cursor)
    assert not again.asset_events and "no table changed" in again.skip_reason.skip_message
    autotag.create_tag_for_period(FileSystemCatalog(warehouse).get_table(ORDERS), "2026-03-27")
    third = _tick(defs, "paimon_observation_sensor", fresh_instance, cursor=out.cursor)
    mats = [e for e in third.asset_events if type(e).__name__ == "AssetMaterialization"]
    # idempotent: 2026-03-26 and snapshot 4 are already materialised
    assert [(m.asset_key, m.partition) for m in mats] == [(ORDERS_TAGS, "2026-03-27")]
    for e in third.asset_events:
        fresh_instance.report_runless_asset_event(e)
    # a compaction changes files, not data: observed, not materialised
    import paimon_ops as po
    po.Table(FileSystemCatalog(warehouse).get_table(ORDERS)).maintenance.compact(mode="full").execute()
    fourth = _tick(defs, "paimon_observation_sensor", fresh_instance, cursor=third.cursor)
    kinds = sorted({type(e).__name__ for e in fourth.asset_events})
    assert kinds == ["AssetCheckEvaluation", "AssetObservation"]


def test_observation_sensor_reports_broken_tables_once(full_warehouse, fresh_instance):
    defs = build_paimon_definitions(full_warehouse)
    out = _tick(defs, "paimon_observation_sensor", fresh_instance)
    failed = {e.asset_key.path[-1]: e for e in out.asset_events
              if type(e).__name__ == "AssetCheckEvaluation" and not e.passed and e.check_name == "metadata_readable"}
    assert set(failed) == {"broken", "badtime"}
    assert failed["broken"].severity.value == "ERROR" and "not valid JSON" in failed["broken"].description
    again = _tick(defs, "paimon_observation_sensor", fresh_instance, cursor=out.cursor)
    assert not [e for e in again.asset_events or [] if type(e).__name__ == "AssetCheckEvaluation"]


def test_small_files_sensor_requests_a_minor_compaction_that_marks_deletion_vectors(warehouse, spark_res, instance):
    """Primary-key tables get Paimon's minor compaction from the sensor (what a dedicated compaction job runs):
    level 0 moves up and the rows it supersedes in the (much larger) max level are marked in deletion vectors."""
    import paimon_ops as po
    from paimon_ops.table.writer import create_table

    t = create_table(warehouse, ORDERS, [("id", "INT"), ("name", "STRING"), ("amount", "BIGINT")],
                     primary_keys=["id"], options={"bucket": "2", "deletion-vectors.enabled": "true",
                                                   "write-only": "true", "compaction.small-files-threshold": "1"})
    write(t, {"id": list(range(3000)), "name": [f"n{i}" for i in range(3000)], "amount": list(range(3000))},
          ms(2026, 3, 26, 10))
    po.Table(t.refresh()).maintenance.compact(mode="full").execute()
    write(t.refresh(), {"id": list(range(20, 30)) + [5000], "name": [f"u{i}" for i in range(11)],
                        "amount": [7] * 11}, ms(2026, 3, 28, 11))
    defs = build_paimon_definitions(warehouse, spark=spark_res)
    out = _tick(defs, "paimon_small_files_sensor", instance)
    (req,) = out.run_requests
    assert req.run_config["ops"][op_name(defs, ORDERS)]["config"]["compact"]["mode"] == "minor"
    assert _dvs(warehouse, ORDERS) == {}
    assert _run(defs, req, instance).success
    assert sum(_dvs(warehouse, ORDERS).values()) == 10  # ids 20..29 superseded in the max level
    rows = {r["id"]: r for r in sorted_rows(read(warehouse, ORDERS), ["id"])}
    assert all(rows[i]["amount"] == 7 for i in range(20, 30)) and rows[5000]["amount"] == 7
    assert len(rows) == 3001


def _tick_logs(defs, name, instance, cursor=None) -> tuple[SensorResult, list[str]]:
    """One tick, and the lines of its tick log (what the UI shows under the tick's logs)."""
    from dagster._core.definitions.instigation_logger import get_instigation_log_records
    repo = defs.get_repository_def()
    log_key = [repo.name, name, uuid.uuid4().hex]  # what the daemon passes
    ctx = build_sensor_context(instance=instance, cursor=cursor, repository_def=repo, sensor_name=name,
                               resources=dict(repo.get_top_level_resources()))
    # build_sensor_context takes neither; the daemon's SensorEvaluationContext gets both (the tick log's storage)
    ctx._log_key, ctx._instance_ref = log_key, instance.get_ref()
    with ctx:
        out = repo.get_sensor_def(name)(ctx)
    return out, [r["msg"] for r in get_instigation_log_records(instance, log_key)]


def test_row_count_is_never_the_unmerged_sum(warehouse, fresh_instance):
    """A merge-on-read primary-key table with overlapping level-0 files: a sensor tick (metadata only) records
    `rows_before_merge` and no `dagster/row_count`; observing it in a run merges the overlapping bucket and records
    pypaimon's row count."""
    from dagster import materialize

    from paimon_ops.dagster import PaimonSpark, PaimonWarehouse
    from paimon_ops.table.writer import create_table
    from tests.dagster.util import everything
    t = create_table(warehouse, "shop.customers", [("id", "INT"), ("name", "STRING")], primary_keys=["id"],
                     options={"bucket": "1"})
    write(t, {"id": list(range(10)), "name": ["a"] * 10}, ms(2026, 3, 26, 10))
    write(t, {"id": list(range(5, 15)), "name": ["b"] * 10}, ms(2026, 3, 26, 11))
    defs = build_paimon_definitions(warehouse)
    out, logs = _tick_logs(defs, "paimon_observation_sensor", fresh_instance)
    (o,) = [e for e in out.asset_events if type(e).__name__ == "AssetObservation"]
    md = {k: v.value for k, v in o.metadata.items()}
    assert "dagster/row_count" not in md and md["rows_before_merge"] == 20
    assert md["row_count_basis"].startswith("unknown")
    # the tick says what it did (not Dagster's "returned an empty result"), in its skip reason and its log
    said = "observed 1 table(s) (shop.customers): 1 observation(s), 4 check evaluation(s), 1 materialisation(s)"
    assert out.skip_reason.skip_message.startswith(said)
    assert any(said in line for line in logs)
    again, logs = _tick_logs(defs, "paimon_observation_sensor", fresh_instance, cursor=out.cursor)
    assert "no table changed" in again.skip_reason.skip_message and again.skip_reason.skip_message in logs
    key = table_key("shop.customers")
    result = materialize(everything(defs), selection=[key], instance=fresh_instance,
                         resources={"paimon": PaimonWarehouse(uri=warehouse), "spark": PaimonSpark()})
    (obs,) = observations(result, key)
    assert obs["dagster/row_count"] == read(warehouse, "shop.customers").num_rows == 15
    assert obs["rows_before_merge"] == 20 and obs["row_count_basis"] == "merged 1 bucket(s)"


def test_deleted_tag_turns_its_partition_failed_and_a_backfill_refills_it(warehouse, fresh_instance):
    """The tags asset reflects the table: a tag deleted outside Dagster turns its partition failed (the observation
    sensor requests a run of it that fails naming the vanished tag — Dagster's storages cannot wipe one partition back
    to missing), `latest_tag_present` names it, a backfill of the failed and missing partitions creates it again on
    the same snapshot."""
    from dagster import materialize

    from paimon_ops.api import Table as FacadeTable
    from paimon_ops.dagster import PaimonWarehouse
    from paimon_ops.lifecycle import autotag
    t = build_orders(warehouse)
    for day in ("2026-03-26", "2026-03-27", "2026-03-28"):
        autotag.create_tag_for_period(t, day)
    defs = build_paimon_definitions(warehouse)
    pd = defs.get_repository_def().asset_graph.get(ORDERS_TAGS).partitions_def
    out = _tick(defs, "paimon_observation_sensor", fresh_instance)
    for e in out.asset_events:
        fresh_instance.report_runless_asset_event(e)
    days = ["2026-03-26", "2026-03-27", "2026-03-28"]
    assert set(fresh_instance.get_materialized_partitions(ORDERS_TAGS)) == set(days) and not out.run_requests
    evals = {e.check_name: e for e in out.asset_events if type(e).__name__ == "AssetCheckEvaluation"}
    assert evals["latest_tag_present"].passed

    FacadeTable.open(t.location).tags.delete("2026-03-27").execute()  # as `paimon-ops delete-tag` / Java would
    out = _tick(defs, "paimon_observation_sensor", fresh_instance, cursor=out.cursor)
    for e in out.asset_events:
        fresh_instance.report_runless_asset_event(e)
    evals = {e.check_name: e for e in out.asset_events if type(e).__name__ == "AssetCheckEvaluation"}
    check = evals["latest_tag_present"]
    assert not check.passed and "2026-03-27" in check.description and check.metadata["missing"].value == "2026-03-27"
    (req,) = out.run_requests
    assert req.partition_key == "2026-03-27" and req.asset_selection == [ORDERS_TAGS]
    assert req.tags["paimon/tag_removed"] == "2026-03-27"
    result = _run(defs, req, fresh_instance, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "tag 2026-03-27 no longer exists in shop.orders" in failure.event_specific_data.error.message
    assert "2026-03-27" not in FileSystemCatalog(warehouse).get_table(ORDERS).tags.names()  # the run created nothing
    status = fresh_instance.get_status_by_partition(ORDERS_TAGS, days, pd)
    assert status == {"2026-03-26": AssetPartitionStatus.MATERIALIZED, "2026-03-27": AssetPartitionStatus.FAILED,
                      "2026-03-28": AssetPartitionStatus.MATERIALIZED}
    again = _tick(defs, "paimon_observation_sensor", fresh_instance, cursor=out.cursor)
    assert not again.run_requests  # once

    # the backfill of the failed and missing partitions refills the gap, on the snapshot the tag had
    refill = [d for d, s in fresh_instance.get_status_by_partition(ORDERS_TAGS, days, pd).items()
              if s != AssetPartitionStatus.MATERIALIZED]
    assert refill == ["2026-03-27"]
    tags_def = defs.get_assets_def(ORDERS_TAGS)
    for day in refill:
        assert materialize([tags_def], selection=[ORDERS_TAGS], instance=fresh_instance, partition_key=day,
                           resources={"paimon": PaimonWarehouse(uri=warehouse)}).success
    assert {n: s.id for n, s in FileSystemCatalog(warehouse).get_table(ORDERS).tags.tags()} ==\
        {"2026-03-26": 2, "2026-03-27": 3, "2026-03-28": 4}
    assert set(fresh_instance.get_status_by_partition(ORDERS_TAGS, days, pd).values()) ==\
        {AssetPartitionStatus.MATERIALIZED}
    out = _tick(defs, "paimon_observation_sensor", fresh_instance, cursor=out.cursor)
    assert not out.run_requests
    assert not [e for e in out.asset_events if e.asset_key == ORDERS_TAGS and type(e).__name__ != "AssetCheckEvaluation"]
    evals = {e.check_name: e for e in out.asset_events if type(e).__name__ == "AssetCheckEvaluation"}
    assert evals["latest_tag_present"].passed


def test_tags_partitions_cover_the_tags_the_table_already_has(warehouse, fresh_instance):
    """A day-named tag older than the table's schema and snapshots (kept while its snapshots expired, or copied in):
    the tags partitions start at its day, and the observation sensor shows it materialised."""
    from paimon_ops.api import Table as FacadeTable
    t = build_orders(warehouse)
    FacadeTable.open(t.location).tags.create("2026-02-14", snapshot_id=1).execute()
    defs = build_paimon_definitions(warehouse)
    pd = defs.get_repository_def().asset_graph.get(ORDERS_TAGS).partitions_def
    assert pd.get_first_partition_key() == "2026-02-14"
    out = _tick(defs, "paimon_observation_sensor", fresh_instance)
    mats = [e for e in out.asset_events if type(e).__name__ == "AssetMaterialization" and e.asset_key == ORDERS_TAGS]
    assert [m.partition for m in mats] == ["2026-02-14"]


@pytest.mark.subprocess  # the paimon-ops command, run by tests.cli.conftest.cli
def test_run_tags_name_a_date_partition_as_the_json_contract_does(warehouse, fresh_instance):
    """A DATE partition lives in the directory dt=20784 (days since the epoch); the run a sensor requests names it
    as `files --json` prints it — dt=2026-11-27 — in its `paimon/buckets` tag, and the run compacts it."""
    from paimon_ops.table.writer import create_table
    from tests.cli.conftest import cli
    t = create_table(warehouse, "shop.dated", [("dt", "DATE"), ("id", "BIGINT"), ("payload", "STRING")],
                     partition_keys=["dt"], options={"bucket": "-1"})
    day = ms(2026, 11, 27, 8)
    for i in range(6):  # six small files in one partition (the threshold is 5)
        write(t.refresh(), {"dt": [dt.date(2026, 11, 27)] * 2, "id": [2 * i, 2 * i + 1], "payload": ["x"] * 2},
              day + i * 60_000)
    assert any(p.name == "dt=20784" for p in (Path(warehouse) / "shop.db" / "dated").iterdir())
    defs = build_paimon_definitions(warehouse)
    out = _tick(defs, "paimon_small_files_sensor", fresh_instance)
    (req,) = [r for r in out.run_requests if r.tags["paimon/table"] == "shop.dated"]
    files = cli("files", warehouse, "shop.dated", "--json").json["rows"]
    assert {json.dumps(f["partition"]) for f in files} == {json.dumps({"dt": "2026-11-27"})}
    assert req.tags["paimon/buckets"] == "dt=2026-11-27/bucket-0"
    assert _run(defs, req, fresh_instance).success
    assert len(cli("files", warehouse, "shop.dated", "--json").json["rows"]) == 1
