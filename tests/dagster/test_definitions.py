"""The code location loads for a warehouse of several tables: the table is the asset (standard table metadata,
kinds, checks on it), jobs / sensors / schedules are constant in number, broken tables are reported, not fatal."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from dagster import AssetKey, AssetSelection, Definitions, materialize

from paimon_ops.api import OPERATIONS
from paimon_ops.dagster import PaimonSpark, PaimonTranslator, PaimonWarehouse, TableSpec, build_paimon_definitions
from tests.dagster.util import everything, table_key

REPO = Path(__file__).resolve().parents[2]
# one job per operation naming a dagster_job (the registry), the nightly and observation jobs, Dagster's own
JOBS = {"__ASSET_JOB", "paimon_nightly", "paimon_observe"} | {op.dagster_job for op in OPERATIONS.values() if op.dagster_job}
assert {"paimon_compaction", "paimon_expire_snapshots", "paimon_expire_tags", "paimon_remove_orphans",
        "paimon_expire_partitions", "paimon_compact_manifests"} <= JOBS
SENSORS = {"paimon_observation_sensor", "paimon_dv_ratio_sensor", "paimon_small_files_sensor",
           "paimon_snapshot_count_sensor", "paimon_manifest_sensor", "paimon_partition_expiry_sensor",
           "paimon_tag_automation"}


def _repo(defs: Definitions):
    Definitions.validate_loadable(defs)
    return defs.get_repository_def()


def test_the_table_is_the_asset(full_warehouse, caplog):
    with caplog.at_level(logging.WARNING, logger="paimon_ops.dagster"):
        repo = _repo(build_paimon_definitions(full_warehouse))
    keys = {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
    assert keys == {"paimon/shop/orders", "paimon/shop/orders/tags", "paimon/shop/events", "paimon/shop/broken",
                    "paimon/shop/badtime"}
    orders = repo.asset_graph.get(table_key("shop.orders"))
    assert orders.kinds == {"paimon", "spark"}
    md = orders.metadata
    assert md["dagster/table_name"] == "shop.orders" and md["dagster/uri"].endswith("/shop.db/orders")
    cols = md["dagster/column_schema"].columns
    assert [(c.name, c.type) for c in cols] == [("id", "INT"), ("name", "STRING"), ("amount", "BIGINT")]
    assert cols[0].constraints.nullable is False  # the primary key
    assert md["paimon/kind"] == "primary-key" and md["paimon/tag_create_time"] == "02:30 Europe/Berlin"
    assert orders.tags["paimon/table"] == "shop.orders" and orders.group_name == "paimon_shop"
    # the table's pool is claimed per table by the op its kind shares (the op itself has none)
    assert md["paimon/pool"] == "paimon/shop.orders" and not orders.pools
    tags = repo.asset_graph.get(AssetKey(["paimon", "shop", "orders", "tags"]))
    assert tags.metadata["dagster/table_name"] == "shop.orders"
    assert tags.partitions_def.timezone == "Europe/Berlin"
    assert tags.partitions_def.get_first_partition_key() == "2026-03-26"
    assert "2026-03-29" in tags.partitions_def.get_partition_keys()
    assert tags.automation_condition is None  # tagged on time by the paimon_tag_automation sensor
    events = repo.asset_graph.get(table_key("shop.events"))
    assert events.metadata["paimon/kind"] == "append" and events.metadata["paimon/partition_keys"] == "dt"

    checks = {(c.asset_key.to_user_string(), c.name) for c in repo.asset_graph.asset_check_keys}
    assert checks == {
        ("paimon/shop/orders", "metadata_readable"), ("paimon/shop/orders", "referenced_files_present"),
        ("paimon/shop/orders", "small_files"), ("paimon/shop/orders", "dv_ratio"),
        ("paimon/shop/orders", "snapshot_retention"), ("paimon/shop/orders", "manifest_count"),
        ("paimon/shop/orders/tags", "latest_tag_present"), ("paimon/shop/events", "manifest_count"),
        ("paimon/shop/events", "metadata_readable"), ("paimon/shop/events", "referenced_files_present"),
        ("paimon/shop/events", "small_files"), ("paimon/shop/events", "snapshot_retention"),
        ("paimon/shop/broken", "metadata_readable"), ("paimon/shop/badtime", "metadata_readable"),
        ("paimon/shop/orders", "maintenance_succeeded"), ("paimon/shop/events", "maintenance_succeeded")}

    # constant automation: jobs, sensors, one schedule
    assert {j.name for j in repo.get_all_jobs()} == JOBS
    assert {s.name for s in repo.sensor_defs} == SENSORS
    assert [s.name for s in repo.schedule_defs] == ["paimon_nightly_schedule"]
    # the tables live in one multi-asset per kind of table (whatever their number), the tags in one for daily tags
    ops = {k.to_user_string(): repo.assets_defs_by_key[k].node_def.name for k in repo.asset_graph.get_all_asset_keys()}
    assert ops == {"paimon/shop/orders": "paimon_primary_key_tables", "paimon/shop/events": "paimon_append_tables",
                   "paimon/shop/broken": "paimon_unloadable_tables", "paimon/shop/badtime": "paimon_unloadable_tables",
                   "paimon/shop/orders/tags": "paimon_daily_tags"}
    # the jobs share one resolution (copies under their own name, description and run config); no run tag decides
    # what runs: each job's run config holds exactly its operations' sections, under the op of each kind of table
    from paimon_ops.dagster.jobs import JOBS as OPS_BY_JOB
    for name, (ops, description) in OPS_BY_JOB.items():
        job = repo.get_job(name)
        assert (job.name, job.description) == (name, description) and "paimon/operations" not in job.tags
        assert sorted(n.name for n in job.graph.nodes) == ["paimon_append_tables", "paimon_primary_key_tables"]
        op_fields = job.run_config_schema.config_type.fields["ops"].config_type.fields
        for op in ("paimon_append_tables", "paimon_primary_key_tables"):
            assert sorted(op_fields[op].config_type.fields["config"].config_type.fields) == sorted(["dry_run", "due_checks", *ops])
    compaction = repo.get_job("paimon_compaction")
    assert {k.to_user_string() for k in compaction.asset_layer.executable_asset_keys} == {
        "paimon/shop/orders", "paimon/shop/events"}  # broken tables are in no job

    # broken tables: the same key (lineage holds), the error in its metadata and description, a warning logged
    broken = repo.asset_graph.get(table_key("shop.broken"))
    assert "snapshot-2" in broken.metadata["paimon/error"] and "not valid JSON" in broken.metadata["paimon/error"]
    badtime = repo.asset_graph.get(table_key("shop.badtime"))
    assert "tag.create-time" in badtime.metadata["paimon/error"] and "25:99" in badtime.metadata["paimon/error"]
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "shop.broken" in logged and "shop.badtime" in logged and "25:99" in logged


def test_broken_table_fails_with_the_error_and_its_check_fails(full_warehouse, instance):
    defs = build_paimon_definitions(full_warehouse)
    broken = defs.get_assets_def(table_key("shop.broken"))
    res = {"paimon": PaimonWarehouse(uri=full_warehouse), "spark": PaimonSpark()}
    result = materialize([broken], selection=[table_key("shop.broken")], instance=instance, raise_on_error=False,
                         resources=res)
    assert not result.success  # running it refuses, with the error
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "shop.broken could not be loaded" in failure.step_failure_data.error.message
    result = materialize(everything(defs), instance=instance, resources=res,
                         selection=AssetSelection.checks_for_assets(table_key("shop.broken")))
    (ev,) = result.get_asset_check_evaluations()
    assert ev.check_name == "metadata_readable" and not ev.passed and ev.severity.value == "ERROR"
    assert "not valid JSON" in ev.description


def test_checks_alone_do_not_touch_the_table(full_warehouse, instance):
    defs = build_paimon_definitions(full_warehouse)
    result = materialize(everything(defs), instance=instance,
                         selection=AssetSelection.checks_for_assets(table_key("shop.orders")),
                         resources={"paimon": PaimonWarehouse(uri=full_warehouse), "spark": PaimonSpark()})
    assert result.success
    evals = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert set(evals) == {"metadata_readable", "referenced_files_present", "small_files", "dv_ratio",
                          "snapshot_retention", "manifest_count"}
    assert not evals["dv_ratio"].passed and evals["dv_ratio"].severity.value == "WARN"  # routine: compaction due
    assert evals["referenced_files_present"].passed
    assert not [e for e in result.all_events if e.event_type_value == "ASSET_OBSERVATION"]


def test_warehouse_that_cannot_be_listed_still_loads(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="paimon_ops.dagster"):
        repo = _repo(build_paimon_definitions(str(tmp_path / "nope")))
    assert [k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()] == ["paimon/_warehouse/_catalog"]
    assert "warehouse directory does not exist" in caplog.text
    assert not repo.sensor_defs and not repo.schedule_defs


def test_include_exclude_and_translator(full_warehouse):
    class Custom(PaimonTranslator):
        def get_asset_spec(self, table: TableSpec):
            spec = super().get_asset_spec(table)
            return spec.replace_attributes(key=AssetKey(["lake", table.table]), group_name="lake",
                                           deps=[AssetKey(["flink", "ingest", table.table])])

        def get_tags(self, table: TableSpec):
            return {**super().get_tags(table), "team": "data-platform"}

    repo = _repo(build_paimon_definitions(full_warehouse, Custom(), include=["shop.*"], exclude=["shop.b*"]))
    keys = {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
    assert keys == {"lake/orders", "lake/orders/tags", "lake/events", "flink/ingest/orders", "flink/ingest/events"}
    node = repo.asset_graph.get(AssetKey(["lake", "orders"]))
    assert node.group_name == "lake" and node.tags["team"] == "data-platform"
    assert node.parent_keys == {AssetKey(["flink", "ingest", "orders"])}  # the writer links to the table
    assert ("lake/orders", "dv_ratio") in {(c.asset_key.to_user_string(), c.name)
                                          for c in repo.asset_graph.asset_check_keys}


def test_workspace_yaml_loads_with_dagster_cli(full_warehouse, tmp_path):
    """The repository's own code location (assets/, jobs/, schedules/, definitions.py, workspace.yaml)."""
    env = {**os.environ, "PAIMON_OPS_WAREHOUSE": full_warehouse, "DAGSTER_HOME": str(tmp_path)}
    dagster = Path(sys.executable).parent / "dagster"
    proc = subprocess.run([str(dagster), "definitions", "validate", "-w", "workspace.yaml"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Validation successful" in proc.stdout + proc.stderr
