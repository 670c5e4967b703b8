"""The table asset against real tables: maintenance jobs record their reports on the table as observations (never
materialisations), effects checked in the table (our reader) and by pypaimon; dry runs change nothing and record
only `would_*` keys; bad configuration fails the run clearly and deletes nothing."""
from __future__ import annotations

import os
import shutil
import time

import pytest
from dagster import AssetKey, BackfillPolicy, DagsterInvalidConfigError, materialize

from paimon_ops.dagster import PaimonSpark, PaimonWarehouse, build_paimon_definitions
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileSystemCatalog
from paimon_ops.table.writer import create_table
from tests.dagster.util import (
    EVENTS,
    ORDERS,
    build_events,
    build_orders,
    everything,
    materializations,
    ms,
    observations,
    op_name,
    run_job,
    table_files,
    table_key,
    write,
)
from tests.pypaimon_util import read, sorted_rows

ORDERS_KEY = table_key(ORDERS)
EVENTS_KEY = table_key(EVENTS)


def test_full_compaction_records_its_report_on_the_table(warehouse, spark_res, instance):
    build_orders(warehouse)
    table = FileSystemCatalog(warehouse).get_table(ORDERS)
    before_latest = table.snapshots.latest_id()
    visible_before = read(warehouse, ORDERS)  # DV mode: level-0 rows (ids 100..109) are not visible yet
    assert visible_before.num_rows == 24
    defs = build_paimon_definitions(warehouse, spark=spark_res)
    result = run_job(defs, "paimon_compaction", ORDERS, instance, {"compact": {"mode": "full"}})
    assert result.success
    assert materializations(result) == []  # maintenance never materialises the table
    (obs,) = observations(result, ORDERS_KEY)
    assert obs["operations"] == "compact" and obs["dry_run"] is False
    assert obs["compact/committed_snapshot"] == before_latest + 1
    assert obs["compact/files_written"] >= 2 and obs["files_written"] == obs["compact/files_written"]
    assert obs["compact/files_deleted"] == 4  # 2 level-5 + 2 level-0 files replaced
    assert obs["bytes_reclaimed"] == 0 and obs["files_deleted"] == 0  # expiry reclaims them later
    assert obs["files"] == 2 and obs["level0_files"] == 0 and obs["dv_ratio"] == 0.0
    assert obs["dagster/row_count"] == 34 and obs["snapshot_id"] == before_latest + 1
    assert "| data |" in obs["report"] and "compact" in obs["report"]
    # the report reads for people: effects first, sizes human-readable, internals only in the JSON entry
    assert obs["report"].index("| kind | written | size |") < obs["report"].index("| figure | value |")
    assert "task_pids" not in obs["report"] and "task_pids" in obs["compact/details"]
    assert list(obs)[:2] == ["operations", "dry_run"] and list(obs).index("report") < list(obs).index("files")
    # the plan was logged before the work (an observation with the tasks, bytes and placement) and progress during
    (plan,) = observations(result, ORDERS_KEY, planned=True)
    assert plan["plan/tasks"] == 2 and plan["plan/bytes_to_read"] > 0 and plan["plan/files_to_delete"] == 4
    assert plan["plan/runs_on"] and "task(s) reading" in plan["plan/runs_on_why"]
    assert "| partition | bucket | files | rows | size | why |" in plan["plan"]
    logs = [r.user_message for r in instance.all_logs(result.run_id) if r.user_message]
    planned = next(i for i, m in enumerate(logs) if "planned on snapshot" in m and "runs " in m)
    progress = [i for i, m in enumerate(logs) if m.startswith("compaction on shop.orders: ") and "/2 (" in m]
    done = next(i for i, m in enumerate(logs) if m.startswith("compact on shop.orders: wrote "))
    assert planned < progress[0] and progress[-1] < done and "2/2 (100%)" in logs[progress[-1]]
    assert "| kind | written | size | replaced | size |" in obs["report"]  # the CLI's header, then what it means
    assert "_replaced (the old files stay on disk until snapshot expiry)_" in obs["report"]
    assert not [k for k in obs if k.startswith("would_")]

    table = FileSystemCatalog(warehouse).get_table(ORDERS)
    snap = table.snapshots.latest()
    assert snap.id == before_latest + 1 and snap.commit_kind == "COMPACT"
    scan = TableScanner(table).scan_latest()
    assert {f.level for f in scan.files} == {5} and not [f for f in scan.files if scan.dv_of(f)]
    after = read(warehouse, ORDERS)  # pypaimon: the deleted rows stay deleted, the new keys are now visible
    assert after.num_rows == 34
    assert sorted_rows(after, ["id"])[:len(sorted_rows(visible_before, ["id"]))] == sorted_rows(visible_before, ["id"])
    # the table's checks ran after the compaction, against the new state
    evals = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert evals["dv_ratio"].passed and evals["small_files"].passed and evals["referenced_files_present"].passed
    assert evals["metadata_readable"].passed


def test_dry_run_never_materialises_needs_no_spark_and_changes_nothing(warehouse, fresh_instance):
    build_orders(warehouse)
    table = FileSystemCatalog(warehouse).get_table(ORDERS)
    files = table_files(table)
    unreachable = PaimonSpark(master="spark://127.0.0.1:1")
    defs = build_paimon_definitions(warehouse, spark=unreachable)
    result = run_job(defs, "paimon_compaction", ORDERS, fresh_instance, {"compact": {"mode": "full"}, "dry_run": True})
    assert result.success
    assert materializations(result) == []
    (obs,) = observations(result, ORDERS_KEY)
    assert obs["dry_run"] is True and obs["compact/would_delete"] == 4 and obs["would_delete"] == 4
    assert obs["compact/would_run_tasks"] == 2
    assert not {"bytes_reclaimed", "files_deleted", "files_written", "compact/files_deleted"} & set(obs)
    assert obs["bytes_reclaimed_total"] == 0
    assert "dry run" in obs["plan"]
    assert table_files(FileSystemCatalog(warehouse).get_table(ORDERS)) == files
    assert fresh_instance.get_latest_materialization_event(ORDERS_KEY) is None


def test_tags_partitions_create_tags_idempotently(warehouse, instance):
    build_orders(warehouse)
    defs = build_paimon_definitions(warehouse)
    tags_key = AssetKey(["paimon", "shop", "orders", "tags"])
    tags = defs.get_assets_def(tags_key)
    res = {"paimon": PaimonWarehouse(uri=warehouse)}
    for day in ("2026-03-26", "2026-03-27", "2026-03-28"):
        assert materialize([tags], selection=[tags_key], instance=instance, partition_key=day, resources=res).success
    table = FileSystemCatalog(warehouse).get_table(ORDERS)
    # day D's tag = the latest snapshot committed by D+1 02:30 Europe/Berlin
    assert {n: t.id for n, t in table.tags.tags()} == {"2026-03-26": 2, "2026-03-27": 3, "2026-03-28": 4}
    for name, sid in (("2026-03-26", 2), ("2026-03-28", 4)):
        assert sorted_rows(read(warehouse, ORDERS, tag=name), ["id"]) ==\
            sorted_rows(read(warehouse, ORDERS, snapshot_id=sid), ["id"])
    result = materialize([tags], selection=[tags_key], instance=instance, partition_key="2026-03-27",
                         resources=res)  # again: nothing new
    (mat,) = materializations(result)
    md = {k: v.value for k, v in mat.metadata.items()}
    assert md["status"] == "exists" and md["files_written"] == 0 and md["tag"] == "2026-03-27"
    assert len(FileSystemCatalog(warehouse).get_table(ORDERS).tags.names()) == 3


def test_a_range_of_days_is_one_run(warehouse, fresh_instance):
    """A backfill of several days is one run (single-run backfill policy): the run of the range, as the backfill
    daemon launches it (the partition-range run tags), creates each day's tag on its day's snapshot and materialises
    every partition of the range; pypaimon reads each tag as its snapshot."""
    build_orders(warehouse)
    defs = build_paimon_definitions(warehouse)
    tags_key = AssetKey(["paimon", "shop", "orders", "tags"])
    tags = defs.get_assets_def(tags_key)
    assert tags.backfill_policy == BackfillPolicy.single_run()
    result = materialize([tags], selection=[tags_key], instance=fresh_instance,
                         resources={"paimon": PaimonWarehouse(uri=warehouse)},
                         tags={"dagster/asset_partition_range_start": "2026-03-26",
                               "dagster/asset_partition_range_end": "2026-03-28"})
    assert result.success and len(fresh_instance.get_runs()) == 1
    table = FileSystemCatalog(warehouse).get_table(ORDERS)
    assert {n: t.id for n, t in table.tags.tags()} == {"2026-03-26": 2, "2026-03-27": 3, "2026-03-28": 4}
    assert fresh_instance.get_materialized_partitions(tags_key) == {"2026-03-26", "2026-03-27", "2026-03-28"}
    md = {k: v.value for k, v in materializations(result)[0].metadata.items()}
    assert md["days"] == 3 and md["created"] == 3 and [t["tagged_snapshot"] for t in md["tags"]] == [2, 3, 4]
    for name, sid in (("2026-03-26", 2), ("2026-03-27", 3), ("2026-03-28", 4)):
        assert sorted_rows(read(warehouse, ORDERS, tag=name), ["id"]) ==\
            sorted_rows(read(warehouse, ORDERS, snapshot_id=sid), ["id"])


def test_nightly_job_tags_then_expires_and_reclaims(warehouse, spark_res, fresh_instance):
    build_events(warehouse)  # 7 snapshots; retain min 2, time 1 min
    before = sorted_rows(read(warehouse, EVENTS), ["id"])
    defs = build_paimon_definitions(warehouse, spark=spark_res)
    table = FileSystemCatalog(warehouse).get_table(EVENTS)
    stray = table.path("dt=2026-03-27", "bucket-0", "data-stray.parquet")
    table.io.write_bytes(stray, b"not referenced by anything")
    five_days_ago = time.time() - 5 * 86400
    os.utime(stray, (five_days_ago, five_days_ago))  # older than the engine's default 3 days
    result = run_job(defs, "paimon_nightly", EVENTS, fresh_instance)
    assert result.success and materializations(result) == []
    (obs,) = observations(result, EVENTS_KEY)
    assert obs["operations"] == "expire_snapshots, expire_tags, remove_orphans"  # no automatic tags on events
    assert obs["expire_snapshots/deleted/snapshot"] == 5 and obs["remove_orphans/deleted/orphan"] == 1
    assert obs["bytes_reclaimed"] > 0 and obs["bytes_reclaimed_total"] == obs["bytes_reclaimed"]
    assert obs["snapshots"] == 2
    table = FileSystemCatalog(warehouse).get_table(EVENTS)
    assert table.snapshots.list_ids() == [6, 7] and not table.io.exists(stray)
    assert sorted_rows(read(warehouse, EVENTS), ["id"]) == before
    evals = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert evals["snapshot_retention"].passed and evals["referenced_files_present"].passed
    # the cumulative figure carries over: a second run reclaims nothing and keeps the total
    again = run_job(defs, "paimon_nightly", EVENTS, fresh_instance)
    (obs2,) = observations(again, EVENTS_KEY)
    assert obs2["bytes_reclaimed"] == 0 and obs2["bytes_reclaimed_total"] == obs["bytes_reclaimed_total"]


def test_nightly_creates_due_tags_before_expiring(warehouse, spark_res, fresh_instance):
    build_orders(warehouse)
    defs = build_paimon_definitions(warehouse, spark=spark_res)
    result = run_job(defs, "paimon_nightly", ORDERS, fresh_instance)
    assert result.success
    created = sorted(FileSystemCatalog(warehouse).get_table(ORDERS).tags.names())
    assert created[:3] == ["2026-03-26", "2026-03-27", "2026-03-28"]
    # the tags partitions of the tags created show as materialised
    mats = {m.partition: m for m in materializations(result)}
    assert set(created) <= set(mats) and all(m.asset_key.path[-1] == "tags" for m in mats.values())
    (obs,) = observations(result, ORDERS_KEY)
    assert obs["operations"].startswith("create_tags, expire_snapshots")


def test_observe_only_executing_the_table_asset_observes_it(warehouse, fresh_instance):
    """From the asset page (the implicit job) with `observe_only`: an observation and the checks, nothing else — no
    materialisation, no change, though compaction and expiry are due."""
    build_events(warehouse)
    files = table_files(FileSystemCatalog(warehouse).get_table(EVENTS))
    defs = build_paimon_definitions(warehouse)
    result = materialize(everything(defs), selection=[EVENTS_KEY], instance=fresh_instance,
                         resources={"paimon": PaimonWarehouse(uri=warehouse), "spark": PaimonSpark()},
                         run_config={"ops": {op_name(defs, EVENTS): {"config": {"observe_only": True}}}})
    assert result.success and materializations(result) == []
    (obs,) = observations(result, EVENTS_KEY)
    assert obs["operations"] == "observe" and obs["snapshots"] == 7 and obs["files"] == 7
    assert obs["due"] == "not assessed (observe_only)"
    assert obs["dagster/row_count"] == 19 and obs["small_files"] == 7 and obs["tags"] == 0
    evals = {e.check_name: e for e in result.get_asset_check_evaluations()}
    # the checks are the outputs of an op of their own, which runs after the tables' op
    steps = [e.step_key for e in result.all_events if e.event_type_value == "STEP_START"]
    assert steps == ["paimon_append_tables", "paimon_append_tables_checks"]
    assert not evals["small_files"].passed and evals["small_files"].severity.value == "WARN"
    assert not evals["snapshot_retention"].passed and evals["snapshot_retention"].severity.value == "WARN"
    assert "compaction is due" in evals["small_files"].description
    assert table_files(FileSystemCatalog(warehouse).get_table(EVENTS)) == files


DUE = "shop.due"  # primary-key table: six level-0 files in its bucket (threshold 5), six snapshots (at most 3 kept)
HEALTHY = "shop.healthy"


def _build_due_and_healthy(warehouse: str) -> None:
    due = create_table(warehouse, DUE, [("id", "INT"), ("v", "STRING")], primary_keys=["id"],
                       options={"bucket": "1", "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "3",
                                "snapshot.time-retained": "1 min"})
    for i in range(6):  # each commit rewrites ids 0..4 and adds one: the latest value of a key wins
        write(due, {"id": list(range(5)) + [10 + i], "v": [f"r{i}"] * 6}, ms(2026, 3, 27, 8 + i))
    healthy = create_table(warehouse, HEALTHY, [("id", "INT"), ("v", "STRING")], primary_keys=["id"],
                           options={"bucket": "1"})
    write(healthy, {"id": [1, 2], "v": ["a", "b"]}, ms(2026, 3, 27, 8))


def test_materialize_without_config_does_what_the_table_needs(warehouse, fresh_instance):
    """Materialize on the asset page (the implicit job, no config): the operations the table's health signals make
    due, each as its sensor's job would run it — minor compaction of the bucket over the level-0 threshold, then
    snapshot expiry by the table's own retention — then the observation; the result read back by pypaimon. A
    healthy table is only observed, and the run says "nothing due"."""
    _build_due_and_healthy(warehouse)
    expected = sorted_rows(read(warehouse, DUE), ["id"])
    assert len(expected) == 11 and expected[0]["v"] == "r5"
    healthy_files = table_files(FileSystemCatalog(warehouse).get_table(HEALTHY))
    defs = build_paimon_definitions(warehouse)
    resources = {"paimon": PaimonWarehouse(uri=warehouse), "spark": PaimonSpark()}
    # a dry run of it first: the plans of what is due, nothing changed
    due_files = table_files(FileSystemCatalog(warehouse).get_table(DUE))
    dry = materialize(everything(defs), selection=[table_key(DUE)], instance=fresh_instance, resources=resources,
                      run_config={"ops": {op_name(defs, DUE): {"config": {"dry_run": True}}}})
    (obs,) = observations(dry, table_key(DUE))
    assert obs["operations"] == "compact, expire_snapshots" and obs["dry_run"] is True
    assert obs["compact/would_delete"] == 6 and obs["would_delete"] > 6 and "dry run" in obs["plan"]
    assert table_files(FileSystemCatalog(warehouse).get_table(DUE)) == due_files

    result = materialize(everything(defs), selection=[table_key(DUE), table_key(HEALTHY)], instance=fresh_instance,
                         resources=resources)
    assert result.success and materializations(result) == []

    (obs,) = observations(result, table_key(DUE))
    assert obs["operations"] == "compact, expire_snapshots" and obs["dry_run"] is False
    assert obs["due"] == "compact (small_files), expire_snapshots (snapshot_retention)"
    assert "| small_files | yes | at most 6 level-0 files per bucket vs threshold 5" in obs["health"]
    assert obs["compact/files_deleted"] == 6 and obs["level0_files"] == 0
    # expiry ran last, by the table's options: snapshot 6 was superseded by the compaction's 7 under a minute ago
    assert obs["expire_snapshots/deleted/snapshot"] == 5 and obs["snapshots"] == 2
    assert obs["dagster/row_count"] == 11
    table = FileSystemCatalog(warehouse).get_table(DUE)
    assert table.snapshots.latest().commit_kind == "COMPACT" and table.snapshots.list_ids() == [6, 7]
    assert sorted_rows(read(warehouse, DUE), ["id"]) == expected  # pypaimon reads the same rows
    evals = {(e.asset_key, e.check_name): e for e in result.get_asset_check_evaluations()}
    assert evals[(table_key(DUE), "small_files")].passed and evals[(table_key(DUE), "snapshot_retention")].passed
    logs = [r.user_message for r in fresh_instance.all_logs(result.run_id) if r.user_message]
    assert any(m.startswith("due: shop.due snapshot 6: at most 6 level-0 files") for m in logs)

    (obs,) = observations(result, table_key(HEALTHY))
    assert obs["operations"] == "observe" and obs["due"] == "nothing due"
    assert "| snapshot_retention | no |" in obs["health"]
    assert "shop.healthy: nothing due; observing it" in logs
    assert table_files(FileSystemCatalog(warehouse).get_table(HEALTHY)) == healthy_files


def test_a_whole_job_run_evaluates_the_checks_itself(warehouse, fresh_instance):
    """A paimon_* job holds no checks (their own op); a run of the whole job, every table, evaluates each table's
    checks after maintaining it and records the evaluations."""
    build_orders(warehouse)
    build_events(warehouse)
    defs = build_paimon_definitions(warehouse)
    result = defs.resolve_job_def("paimon_observe").execute_in_process(instance=fresh_instance)
    assert result.success
    steps = [e.step_key for e in result.all_events if e.event_type_value == "STEP_START"]
    assert sorted(steps) == ["paimon_append_tables", "paimon_primary_key_tables"]
    evals = [(e.asset_key, e.check_name) for e in result.get_asset_check_evaluations()]
    # orders' six checks, events' five, once each, and each table's maintenance_succeeded (its run's own record)
    assert len(evals) == len(set(evals)) == 6 + 5 + 2
    assert {n for k, n in evals if n == "maintenance_succeeded"} == {"maintenance_succeeded"}
    assert {k for k, _ in evals} == {ORDERS_KEY, EVENTS_KEY}
    assert not materializations(result)


# ---------------------------------------------------------------------------------------------- bad configuration
def _failure_message(result) -> str:
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    return failure.step_failure_data.error.message


@pytest.mark.parametrize("spark_cfg", [{"master": "spark://127.0.0.1:1"}, {"remote": "sc://127.0.0.1:1"}])
def test_unreachable_spark_fails_before_anything_is_deleted(warehouse, instance, spark_cfg):
    build_events(warehouse)
    files = table_files(FileSystemCatalog(warehouse).get_table(EVENTS))
    defs = build_paimon_definitions(warehouse, spark=PaimonSpark(**spark_cfg, connect_timeout_s=2, placement="spark"))
    result = run_job(defs, "paimon_expire_snapshots", EVENTS, instance, raise_on_error=False)
    assert not result.success
    msg = _failure_message(result)
    assert "127.0.0.1:1 is unreachable" in msg and "Nothing was changed" in msg
    assert table_files(FileSystemCatalog(warehouse).get_table(EVENTS)) == files


def test_auto_placement_runs_small_plans_in_process_and_large_ones_on_spark(warehouse, tmp_path, fresh_instance):
    """placement auto (the default): a compaction within execution.local.max-input-size runs in the run worker even
    when the configured master is unreachable — Spark is never asked; the same plan over the threshold goes to that
    master, which is probed first, so the run fails before anything is written."""
    build_orders(warehouse)
    unreachable = PaimonSpark(master="spark://127.0.0.1:1", connect_timeout_s=2)
    defs = build_paimon_definitions(warehouse, spark=unreachable)
    result = run_job(defs, "paimon_compaction", ORDERS, fresh_instance, {"compact": {"mode": "full"}})
    assert result.success
    (obs,) = observations(result, ORDERS_KEY)
    assert obs["compact/ran_on"].startswith("in-process") and "within execution.local.max-input-size"\
        in obs["compact/ran_on_why"]

    warehouse = str(tmp_path / "over-threshold")
    build_orders(warehouse)
    files = table_files(FileSystemCatalog(warehouse).get_table(ORDERS))
    defs = build_paimon_definitions(warehouse, spark=unreachable,
                                    options_override={"execution.local.max-input-size": "1 b"})
    result = run_job(defs, "paimon_compaction", ORDERS, fresh_instance, {"compact": {"mode": "full"}},
                     raise_on_error=False)
    assert not result.success
    assert "127.0.0.1:1 is unreachable" in _failure_message(result)
    assert table_files(FileSystemCatalog(warehouse).get_table(ORDERS)) == files


def test_empty_plan_never_touches_spark(warehouse, instance):
    build_events(warehouse)
    defs = build_paimon_definitions(warehouse, spark=PaimonSpark(master="spark://127.0.0.1:1"))
    result = run_job(defs, "paimon_expire_tags", EVENTS, instance)  # no tags: nothing to do, Spark never asked
    assert result.success


def test_unknown_table_and_bad_uri_fail_clearly(warehouse, tmp_path, spark_res, instance):
    build_events(warehouse)
    defs = build_paimon_definitions(warehouse)
    asset = defs.get_assets_def(EVENTS_KEY)

    def run(uri):
        return materialize([asset], selection=[EVENTS_KEY], instance=instance, raise_on_error=False,
                           resources={"paimon": PaimonWarehouse(uri=uri), "spark": spark_res})

    result = run(str(tmp_path / "no-such-warehouse"))
    assert not result.success
    msg = _failure_message(result)
    assert "cannot open Paimon table shop.events" in msg and "warehouse directory does not exist" in msg
    result = run("nosuchscheme://bucket/wh")
    assert not result.success and "shop.events" in _failure_message(result)
    moved = tmp_path / "moved"
    shutil.move(FileSystemCatalog(warehouse).table_path(EVENTS), moved)  # the table disappeared after the location loaded
    result = run(warehouse)
    assert not result.success
    msg = _failure_message(result)
    assert "table 'shop.events' not found" in msg and "tables in this warehouse" in msg
    assert len(list((moved / "snapshot").glob("snapshot-*"))) == 7  # nothing deleted


def test_config_is_typed_per_kind_of_table(warehouse, spark_res, instance):
    build_orders(warehouse)
    build_events(warehouse)
    files = {t: table_files(FileSystemCatalog(warehouse).get_table(t)) for t in (ORDERS, EVENTS)}
    defs = build_paimon_definitions(warehouse, spark=spark_res)
    # the launchpad offers only the modes of the table's kind: sort is not one of a primary-key table's
    with pytest.raises(DagsterInvalidConfigError, match="sort"):
        run_job(defs, "paimon_compaction", ORDERS, instance, {"compact": {"mode": "sort"}})
    with pytest.raises(DagsterInvalidConfigError, match="minor"):
        run_job(defs, "paimon_compaction", EVENTS, instance, {"compact": {"mode": "minor"}})
    with pytest.raises(DagsterInvalidConfigError, match="zorder-everything"):
        run_job(defs, "paimon_compaction", EVENTS, instance, {"compact": {"mode": "sort", "strategy":
                                                                          "zorder-everything"}})
    result = run_job(defs, "paimon_remove_orphans", EVENTS, instance, {"remove_orphans": {"min_age": "1 h"}},
                     raise_on_error=False)
    assert not result.success
    msg = _failure_message(result)
    assert "orphan removal of shop.events failed" in msg and "at least 1 day" in msg
    for t in (ORDERS, EVENTS):
        assert table_files(FileSystemCatalog(warehouse).get_table(t)) == files[t]
