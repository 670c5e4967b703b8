"""The code location loads for a warehouse of several tables; broken tables are reported, not fatal."""
from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from dagster import AssetKey, AssetSelection, Definitions, materialize

from assets import PaimonTranslator, build_paimon_definitions
from assets.resources import PaimonWarehouse
from assets.spec import TableSpec

REPO = Path(__file__).resolve().parents[2]
ORDERS_KINDS = {"compaction", "tags", "snapshot_expiry", "tag_expiry", "orphan_cleanup"}


def _repo(defs: Definitions):
    Definitions.validate_loadable(defs)
    return defs.get_repository_def()


def test_definitions_load_and_broken_tables_are_reported(full_warehouse, caplog):
    with caplog.at_level(logging.WARNING, logger="paimon_ops.dagster"):
        defs = build_paimon_definitions(full_warehouse)
        repo = _repo(defs)
    keys = {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
    for table in ("orders", "events"):
        assert {f"paimon/shop/{table}/{k}" for k in ORDERS_KINDS} <= keys
    # the broken tables get a clearly named placeholder each, nothing else
    assert "paimon/shop/broken/unavailable" in keys and "paimon/shop/badtime/unavailable" in keys
    assert not any(k.startswith(("paimon/shop/broken/", "paimon/shop/badtime/")) and not k.endswith("unavailable")
                   for k in keys)
    broken_md = repo.asset_graph.get(AssetKey(["paimon", "shop", "broken", "unavailable"])).metadata
    assert "snapshot-2" in broken_md["paimon/error"] and "not valid JSON" in broken_md["paimon/error"]
    badtime_md = repo.asset_graph.get(AssetKey(["paimon", "shop", "badtime", "unavailable"])).metadata
    assert "tag.create-time" in badtime_md["paimon/error"] and "25:99" in badtime_md["paimon/error"]
    # and a logged warning for each
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "shop.broken" in logged and "shop.badtime" in logged and "25:99" in logged

    checks = {(c.asset_key.to_user_string(), c.name) for c in repo.asset_graph.asset_check_keys}
    assert ("paimon/shop/orders/compaction", "dv_ratio") in checks  # DV table only
    assert ("paimon/shop/events/compaction", "dv_ratio") not in checks
    assert ("paimon/shop/orders/tags", "latest_tag_present") in checks  # tag.create-time table only
    assert ("paimon/shop/events/tags", "latest_tag_present") not in checks
    for t in ("orders", "events"):
        assert {(f"paimon/shop/{t}/compaction", "small_files"),
                (f"paimon/shop/{t}/snapshot_expiry", "snapshot_retention"),
                (f"paimon/shop/{t}/orphan_cleanup", "referenced_files_present")} <= checks
    assert ("paimon/shop/broken/unavailable", "loadable") in checks

    # automation from the tables' own options
    assert {s.name for s in repo.schedule_defs} == {"paimon__shop__orders__tag_schedule",
                                                   "paimon_nightly_expiry_schedule"}
    orders_schedule = repo.get_schedule_def("paimon__shop__orders__tag_schedule")
    assert orders_schedule.cron_schedule == "30 2 * * *"
    assert orders_schedule.execution_timezone == "Europe/Berlin"
    assert {s.name for s in repo.sensor_defs} == {
        "paimon__shop__orders__dv_ratio_sensor", "paimon__shop__orders__small_files_sensor",
        "paimon__shop__orders__snapshot_count_sensor", "paimon__shop__events__small_files_sensor",
        "paimon__shop__events__snapshot_count_sensor"}
    # the nightly expiry job covers the table without a tag schedule only (orders expires in its nightly job)
    nightly = repo.get_job("paimon_nightly_expiry")
    assert {k.to_user_string() for k in nightly.asset_layer.executable_asset_keys} == {
        "paimon/shop/events/snapshot_expiry", "paimon/shop/events/tag_expiry", "paimon/shop/events/orphan_cleanup"}

    # tags: daily partitions in the table's tag zone, starting at the table's first day
    tags_def = repo.asset_graph.get(AssetKey(["paimon", "shop", "orders", "tags"])).partitions_def
    assert tags_def.timezone == "Europe/Berlin"
    assert tags_def.get_first_partition_key() == "2026-03-26"
    assert "2026-03-29" in tags_def.get_partition_keys()

    # one pool per table on every maintenance asset
    for t in ("orders", "events"):
        for kind in ORDERS_KINDS:
            node = repo.asset_graph.get(AssetKey(["paimon", "shop", t, kind]))
            assert node.pools == {f"paimon/shop.{t}"}, (t, kind, node.pools)


def test_placeholder_check_fails_with_the_error(full_warehouse, instance):
    defs = build_paimon_definitions(full_warehouse)
    placeholder = next(a for a in defs.assets if a.key == AssetKey(["paimon", "shop", "broken", "unavailable"]))
    check = next(c for c in defs.asset_checks
                 if AssetKey(["paimon", "shop", "broken", "unavailable"]) in {k.asset_key for k in c.check_keys})
    result = materialize([placeholder, check], instance=instance, raise_on_error=False,
                         resources={"paimon_warehouse": PaimonWarehouse(uri=full_warehouse)})
    assert not result.success  # the placeholder itself refuses to materialise
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "shop.broken could not be loaded" in failure.step_failure_data.error.message
    result = materialize([placeholder, check], instance=instance, selection=AssetSelection.all_asset_checks(),
                         resources={"paimon_warehouse": PaimonWarehouse(uri=full_warehouse)})
    evals = result.get_asset_check_evaluations()
    assert len(evals) == 1 and not evals[0].passed
    assert "not valid JSON" in evals[0].description


def test_warehouse_that_cannot_be_listed_still_loads(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="paimon_ops.dagster"):
        repo = _repo(build_paimon_definitions(str(tmp_path / "nope")))
    keys = [k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()]
    assert keys == ["paimon/_warehouse/_catalog/unavailable"]
    assert "warehouse directory does not exist" in caplog.text


def test_include_exclude_and_translator(full_warehouse):
    class Custom(PaimonTranslator):
        def get_asset_key(self, spec: TableSpec, kind: str) -> AssetKey:
            return AssetKey(["lake", spec.table, kind])

        def get_group_name(self, spec: TableSpec) -> str:
            return "lake_maintenance"

        def get_tags(self, spec: TableSpec, kind: str):
            return {"team": "data-platform"}

        def get_description(self, spec: TableSpec, kind: str) -> str:
            return f"custom {kind} of {spec.identifier}"

    repo = _repo(build_paimon_definitions(full_warehouse, Custom(), include=["shop.*"], exclude=["shop.b*"]))
    keys = {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
    assert keys == {f"lake/{t}/{k}" for t in ("orders", "events") for k in ORDERS_KINDS}
    node = repo.asset_graph.get(AssetKey(["lake", "orders", "tags"]))
    assert node.group_name == "lake_maintenance" and node.tags["team"] == "data-platform"
    assert node.description == "custom tags of shop.orders"
    assert {(c.asset_key.to_user_string(), c.name) for c in repo.asset_graph.asset_check_keys} >= {
        ("lake/orders/compaction", "dv_ratio")}


def test_workspace_yaml_loads_with_dagster_cli(full_warehouse, tmp_path):
    """The hook for the webserver test: `dagster definitions validate -w workspace.yaml` from the repo root."""
    env = {**os.environ, "PAIMON_OPS_WAREHOUSE": full_warehouse, "DAGSTER_HOME": str(tmp_path)}
    dagster = Path(sys.executable).parent / "dagster"
    proc = subprocess.run([str(dagster), "definitions", "validate", "-w", "workspace.yaml"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Validation successful" in proc.stdout + proc.stderr
