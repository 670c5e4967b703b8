"""The integration as a Dagster component: a `dg` project adds a warehouse with a defs.yaml and no Python."""
from __future__ import annotations

import os

import pytest
import yaml
from dagster import AssetKey, build_sensor_context
from dagster.components.testing import create_defs_folder_sandbox

from paimon_ops.dagster import PaimonComponent
from paimon_ops.table.table import FileSystemCatalog
from tests.dagster.util import ORDERS, build_events, build_orders
from tests.pypaimon_util import read


def test_component_loads_from_yaml(warehouse):
    build_orders(warehouse)
    build_events(warehouse)
    body = yaml.safe_load(f"""
        type: paimon_ops.dagster.PaimonComponent
        attributes:
          warehouse: {warehouse}
          include: ["shop.*"]
          exclude: ["shop.events"]
          spark_master: local[1]
          spark_placement: spark
          options:
            snapshot.num-retained.min: "3"
          automation: true
    """)
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(component_cls=PaimonComponent, defs_path="paimon",
                                          defs_yaml_contents=body)
        with sandbox.load_component_and_build_defs(defs_path=path) as (component, defs):
            assert isinstance(component, PaimonComponent)
            assert component.automation
            repo = defs.get_repository_def()
            keys = {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
            assert keys == {"paimon/shop/orders", "paimon/shop/orders/tags"}
            assert repo.asset_graph.get(AssetKey(["paimon", "shop", "orders"])).kinds == {"paimon", "spark"}
            resources = defs.resources
            assert resources["spark"].master == "local[1]" and resources["spark"].placement == "spark"
            assert resources["paimon"].options_override == {"snapshot.num-retained.min": "3"}
            sensors = {s.name: s for s in repo.sensor_defs}
            assert sensors["paimon_small_files_sensor"].default_status.value == "RUNNING"
            assert "paimon_compaction" in {j.name for j in repo.get_all_jobs()}


def test_dg_scaffold_writes_a_template_that_validates(warehouse, monkeypatch):
    """What `dg scaffold defs paimon_ops.dagster.PaimonComponent paimon [--warehouse …]` writes (Dagster's own
    scaffolding path, `scaffold_object`) loads as it is: with the warehouse given, or from PAIMON_OPS_WAREHOUSE."""
    build_orders(warehouse)
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(component_cls=PaimonComponent, defs_path="paimon",
                                          scaffold_params={"warehouse": warehouse})
        body = yaml.safe_load((path / "defs.yaml").read_text())
        assert body["type"].endswith(".PaimonComponent") and body["attributes"] == {"warehouse": warehouse}
        with sandbox.load_component_and_build_defs(defs_path=path) as (component, defs):
            assert component.warehouse == warehouse and not component.automation
            assert AssetKey(["paimon", "shop", "orders"]) in defs.get_repository_def().asset_graph.get_all_asset_keys()
    monkeypatch.setenv("PAIMON_OPS_WAREHOUSE", warehouse)
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(component_cls=PaimonComponent, defs_path="paimon")  # no parameters
        assert yaml.safe_load((path / "defs.yaml").read_text())["attributes"] == {
            "warehouse": "{{ env.PAIMON_OPS_WAREHOUSE }}"}
        with sandbox.load_component_and_build_defs(defs_path=path) as (component, defs):
            assert component.warehouse == warehouse
            assert AssetKey(["paimon", "shop", "orders"]) in defs.get_repository_def().asset_graph.get_all_asset_keys()


def test_translation_in_yaml(warehouse):
    """`translation:` as dagster-dbt's and dagster-sling's components take it, templated with the table."""
    build_orders(warehouse)
    body = yaml.safe_load(f"""
        type: paimon_ops.dagster.PaimonComponent
        attributes:
          warehouse: {warehouse}
          translation:
            key: "lake/{{{{ table.database }}}}/{{{{ table.table }}}}"
            group_name: "lake_{{{{ table.database }}}}"
            tags:
              team: data-platform
            owners: ["team:lake"]
    """)
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(component_cls=PaimonComponent, defs_path="paimon", defs_yaml_contents=body)
        with sandbox.load_component_and_build_defs(defs_path=path) as (component, defs):
            graph = defs.get_repository_def().asset_graph
            node = graph.get(AssetKey(["lake", "shop", "orders"]))
            assert node.group_name == "lake_shop" and node.owners == ["team:lake"]
            assert node.tags["team"] == "data-platform" and node.kinds == {"paimon", "spark"}  # defaults kept
            assert AssetKey(["paimon", "shop", "orders"]) not in graph.get_all_asset_keys()
            assert AssetKey(["lake", "shop", "orders", "tags"]) in graph.get_all_asset_keys()  # follows the table


def test_two_warehouses_in_one_project(tmp_path, fresh_instance):
    """Two PaimonComponents (one per warehouse) in one defs folder load as one code location (what `dg dev` /
    `dagster dev -m` load): the unnamed one keeps the plain names, the named one has its own resource keys, ops,
    jobs, sensors, schedule and asset keys; a compaction run in each changes only its own warehouse."""
    main, archive = str(tmp_path / "main"), str(tmp_path / "archive")
    for w in (main, archive):
        os.makedirs(w)
        build_orders(w)
    build_events(archive)
    with create_defs_folder_sandbox() as sandbox:
        for path, attrs in (("paimon", {"warehouse": main}),
                            ("archive", {"warehouse": archive, "name": "archive", "spark_placement": "local"})):
            sandbox.scaffold_component(component_cls=PaimonComponent, defs_path=path, defs_yaml_contents={
                "type": "paimon_ops.dagster.PaimonComponent", "attributes": {**attrs, "spark_placement": "local"}})
        with sandbox.build_all_defs() as defs:
            repo = defs.get_repository_def()
            assert set(defs.resources) == {"paimon", "spark", "paimon_archive", "spark_archive"}
            assert defs.resources["paimon_archive"].uri == archive and defs.resources["paimon"].uri == main
            jobs = {j.name for j in repo.get_all_jobs()}
            assert {"paimon_compaction", "paimon_nightly", "paimon_archive_compaction", "paimon_archive_nightly",
                    "paimon_archive_expire_snapshots"} <= jobs
            sensors = {s.name for s in repo.sensor_defs}
            assert {"paimon_observation_sensor", "paimon_archive_observation_sensor",
                    "paimon_tag_automation", "paimon_archive_tag_automation"} <= sensors
            assert {s.name for s in repo.schedule_defs} == {"paimon_nightly_schedule", "paimon_archive_nightly_schedule"}
            keys = {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
            assert keys == {"paimon/shop/orders", "paimon/shop/orders/tags", "paimon/archive/shop/orders",
                            "paimon/archive/shop/orders/tags", "paimon/archive/shop/events"}
            archived = AssetKey(["paimon", "archive", "shop", "orders"])
            node = repo.asset_graph.get(archived)
            assert node.group_name == "paimon_archive_shop" and node.metadata["paimon/pool"] == "paimon/archive/shop.orders"
            op = defs.get_assets_def(archived).node_def.name
            assert op == "paimon_archive_primary_key_tables"

            before = {w: FileSystemCatalog(w).get_table(ORDERS).snapshots.latest_id() for w in (main, archive)}
            for job, key, op_name, w in (("paimon_compaction", AssetKey(["paimon", "shop", "orders"]),
                                          "paimon_primary_key_tables", main),
                                         ("paimon_archive_compaction", archived, op, archive)):
                result = defs.resolve_job_def(job).execute_in_process(
                    instance=fresh_instance, asset_selection=[key],
                    run_config={"ops": {op_name: {"config": {"compact": {"mode": "full"}}}}})
                assert result.success
                table = FileSystemCatalog(w).get_table(ORDERS)
                assert table.snapshots.latest().commit_kind == "COMPACT"
                assert table.snapshots.latest_id() == before[w] + 1
                other = archive if w == main else main
                assert FileSystemCatalog(other).get_table(ORDERS).snapshots.latest_id() == before[other]  # untouched
                before[w] += 1
                assert read(w, ORDERS).num_rows == 34  # pypaimon reads the compacted table
            # the named component's sensors read its own warehouse through its own resource key
            sensor = repo.get_sensor_def("paimon_archive_observation_sensor")
            ctx = build_sensor_context(instance=fresh_instance, repository_def=repo, sensor_name=sensor.name,
                                       resources=dict(repo.get_top_level_resources()))
            observed = sensor(ctx)
            assert {o.asset_key for o in observed.asset_events if o.asset_key.path[:2] == ["paimon", "archive"]} >= {
                archived, AssetKey(["paimon", "archive", "shop", "events"])}


def test_two_unnamed_components_fail_naming_the_clash(tmp_path):
    """Without `name:` on the second, Dagster refuses the project (the resource key `paimon` twice)."""
    with create_defs_folder_sandbox() as sandbox:
        for path in ("a", "b"):
            w = tmp_path / path
            w.mkdir()
            sandbox.scaffold_component(component_cls=PaimonComponent, defs_path=path, defs_yaml_contents={
                "type": "paimon_ops.dagster.PaimonComponent", "attributes": {"warehouse": str(w)}})
        with pytest.raises(Exception) as raised:
            with sandbox.build_all_defs():
                pass
    chain, e = [], raised.value
    while e is not None:
        chain.append(str(e))
        e = e.__cause__ or e.__context__
    assert any("different resources with same key 'paimon'" in m for m in chain), chain
