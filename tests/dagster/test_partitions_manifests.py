"""Partition expiry and manifest compaction in Dagster, against real tables: the checks say when each is due (and
ERROR for a partition value whose time cannot be read), the sensors request exactly one run per table when due —
partition expiry at most every partition.expiration-check-interval, as Java's writers check — the jobs do it, and
pypaimon (an independent reader) sees the result."""
from __future__ import annotations

import datetime as dt

from dagster import build_sensor_context

from paimon_ops.dagster import build_paimon_definitions
from paimon_ops.dagster import sensors as sensors_mod
from paimon_ops.lifecycle.manifest_compaction import manifest_count
from paimon_ops.table.table import FileSystemCatalog
from paimon_ops.table.writer import create_table
from tests.dagster.util import observations, op_name, run_job, table_key, write
from tests.pypaimon_util import read, sorted_rows

VISITS = "shop.visits"
CLICKS = "shop.clicks"
HOUR_MS = 3600 * 1000


def _today() -> str:
    return dt.datetime.now(dt.timezone.utc).date().isoformat()


def _now_ms() -> int:
    return int(dt.datetime.now(dt.timezone.utc).timestamp() * 1000)


def build_visits(warehouse: str, extra: dict[str, str] | None = None):
    """Partitioned by day with partition.expiration-time 30 d: two old days and today."""
    t = create_table(warehouse, VISITS, [("dt", "STRING"), ("id", "BIGINT"), ("page", "STRING")],
                     partition_keys=["dt"], options={"bucket": "-1", "partition.expiration-time": "30 d",
                                                      "partition.expiration-check-interval": "1 h",
                                                      "partition.timestamp-formatter": "yyyy-MM-dd", **(extra or {})})
    now = _now_ms()
    for day, ids in (("2026-01-01", [1, 2]), ("2026-01-02", [3]), (_today(), [4, 5, 6])):
        write(t, {"dt": [day] * len(ids), "id": ids, "page": ["p"] * len(ids)}, now - 2 * HOUR_MS)
    return t


def _tick(defs, name, instance, cursor=None):
    repo = defs.get_repository_def()
    ctx = build_sensor_context(instance=instance, cursor=cursor, repository_def=repo, sensor_name=name,
                               resources=dict(repo.get_top_level_resources()))
    return repo.get_sensor_def(name)(ctx)


def _checks(defs, identifier, instance):
    result = run_job(defs, "paimon_observe", identifier, instance)
    assert result.success
    return {e.check_name: e for e in result.get_asset_check_evaluations()}


def test_partition_expiry_check_sensor_and_job(warehouse, fresh_instance, monkeypatch):
    build_visits(warehouse)
    defs = build_paimon_definitions(warehouse)
    checks = _checks(defs, VISITS, fresh_instance)
    pe = checks["partition_expiry"]
    assert not pe.passed and pe.severity.value == "WARN" and "2 of 3 partitions" in pe.description

    name = "paimon_partition_expiry_sensor"
    out = _tick(defs, name, fresh_instance)
    (req,) = out.run_requests
    assert req.job_name == "paimon_expire_partitions" and req.asset_selection == [table_key(VISITS)]
    assert req.run_key.startswith("partition_expiry:shop.visits:3:")
    assert "2 partition(s) older than partition.expiration-time 30 d: dt=2026-01-01, dt=2026-01-02"\
        in req.tags["paimon/reason"]
    # within partition.expiration-check-interval (1 h) the table is not looked at again
    again = _tick(defs, name, fresh_instance, cursor=out.cursor)
    assert not again.run_requests and "next check after partition.expiration-check-interval"\
        in again.skip_reason.skip_message

    job = defs.resolve_job_def(req.job_name)
    result = job.execute_in_process(instance=fresh_instance, tags=req.tags, asset_selection=req.asset_selection)
    assert result.success
    (obs,) = observations(result, table_key(VISITS))
    assert obs["operations"] == "expire_partitions" and obs["expire_partitions/committed_snapshot"] == 4
    assert sorted(set(read(warehouse, VISITS).column("dt").to_pylist())) == [_today()]  # pypaimon
    assert FileSystemCatalog(warehouse).get_table(VISITS).snapshots.latest().commit_kind == "OVERWRITE"
    assert _checks(defs, VISITS, fresh_instance)["partition_expiry"].passed

    # an hour later the check is due again: nothing left to expire, no run
    real = sensors_mod.now_millis
    monkeypatch.setattr(sensors_mod, "now_millis", lambda: real() + 2 * HOUR_MS)
    later = _tick(defs, name, fresh_instance, cursor=again.cursor)
    assert not later.run_requests and "0 partition(s) older than" in later.skip_reason.skip_message


def test_nightly_expires_partitions_and_reports_unreadable_partition_times(warehouse, fresh_instance):
    t = create_table(warehouse, CLICKS, [("dt", "STRING"), ("id", "BIGINT")], partition_keys=["dt"],
                     options={"bucket": "-1", "partition.expiration-time": "7 d"})
    now = _now_ms()
    write(t, {"dt": ["2026-01-01", "2026-01-01", "not-a-day", _today()], "id": [1, 2, 3, 4]}, now - HOUR_MS)
    defs = build_paimon_definitions(warehouse)
    pe = _checks(defs, CLICKS, fresh_instance)["partition_expiry"]
    assert not pe.passed and pe.severity.value == "ERROR"  # a value no formatter reads: never expires, a person looks
    assert "dt=not-a-day" in pe.description and "1 of 3 partitions" in pe.description

    result = run_job(defs, "paimon_nightly", CLICKS, fresh_instance)
    assert result.success
    (obs,) = observations(result, table_key(CLICKS))
    assert "expire_partitions" in [o.strip() for o in obs["operations"].split(",")]
    assert sorted(read(warehouse, CLICKS).column("dt").to_pylist()) == sorted(["not-a-day", _today()])
    pe = _checks(defs, CLICKS, fresh_instance)["partition_expiry"]
    assert not pe.passed and pe.severity.value == "ERROR" and "none of 2 partitions" in pe.description


def test_expire_partitions_job_takes_the_age_from_run_config(warehouse, fresh_instance):
    """A table without partition.expiration-time is expired only when the run's config gives the age; the nightly
    job leaves it alone."""
    t = create_table(warehouse, CLICKS, [("dt", "STRING"), ("id", "BIGINT")], partition_keys=["dt"],
                     options={"bucket": "-1"})
    write(t, {"dt": ["2026-01-01", _today()], "id": [1, 2]}, _now_ms() - HOUR_MS)
    defs = build_paimon_definitions(warehouse)
    assert "partition_expiry" not in _checks(defs, CLICKS, fresh_instance)
    result = run_job(defs, "paimon_nightly", CLICKS, fresh_instance)
    assert result.success and read(warehouse, CLICKS).num_rows == 2
    result = run_job(defs, "paimon_expire_partitions", CLICKS, fresh_instance,
                     {"expire_partitions": {"expiration_time": "10 d"}, "dry_run": True})
    assert result.success and read(warehouse, CLICKS).num_rows == 2
    (obs,) = observations(result, table_key(CLICKS))
    assert obs["expire_partitions/would_delete"] == 1
    result = run_job(defs, "paimon_expire_partitions", CLICKS, fresh_instance,
                     {"expire_partitions": {"expiration_time": "10 d"}})
    assert result.success and read(warehouse, CLICKS).column("dt").to_pylist() == [_today()]


def test_manifest_sensor_and_job_merge_small_manifests(warehouse, fresh_instance):
    t = create_table(warehouse, CLICKS, [("dt", "STRING"), ("id", "BIGINT")], partition_keys=["dt"],
                     options={"bucket": "-1", "manifest.compaction-trigger": "5"})
    now = _now_ms()
    for i in range(8):
        write(t, {"dt": [_today()], "id": [i]}, now - (10 - i) * 60_000)
    before = sorted_rows(read(warehouse, CLICKS), ["id"])
    assert manifest_count(FileSystemCatalog(warehouse).get_table(CLICKS)) == 8
    defs = build_paimon_definitions(warehouse)
    mc = _checks(defs, CLICKS, fresh_instance)["manifest_count"]
    assert not mc.passed and mc.severity.value == "WARN" and "8 manifests" in mc.description

    name = "paimon_manifest_sensor"
    out = _tick(defs, name, fresh_instance)
    (req,) = out.run_requests
    assert req.run_key == "manifests:shop.clicks:8" and req.job_name == "paimon_compact_manifests"
    assert "8 manifests" in req.tags["paimon/reason"] and "manifest.compaction-trigger 5" in req.tags["paimon/reason"]
    job = defs.resolve_job_def(req.job_name)
    result = job.execute_in_process(instance=fresh_instance, tags=req.tags, asset_selection=req.asset_selection,
                                    run_config={"ops": {op_name(defs, CLICKS): {"config": {}}}})
    assert result.success
    (obs,) = observations(result, table_key(CLICKS))
    assert obs["compact_manifests/committed_snapshot"] == 9 and obs["manifests"] == 1
    table = FileSystemCatalog(warehouse).get_table(CLICKS)
    assert manifest_count(table) == 1 and table.snapshots.latest().commit_kind == "COMPACT"
    assert sorted_rows(read(warehouse, CLICKS), ["id"]) == before  # pypaimon reads the same rows
    assert _checks(defs, CLICKS, fresh_instance)["manifest_count"].passed
    # the new snapshot (9) is evaluated and found fine: no second run
    after = _tick(defs, name, fresh_instance, cursor=out.cursor)
    assert not after.run_requests and "1 manifests" in after.skip_reason.skip_message
