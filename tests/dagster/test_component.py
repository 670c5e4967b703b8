"""The integration as a Dagster component: a `dg` project adds a warehouse with a defs.yaml and no Python."""
from __future__ import annotations

import yaml
from dagster import AssetKey
from dagster.components.testing import create_defs_folder_sandbox

from paimon_ops.dagster import PaimonComponent
from tests.dagster.util import build_events, build_orders


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
