"""A branch in Dagster: an include pattern naming it (`db.t$branch_b`, Paimon's identifier) makes it an asset of its
own (paimon/<db>/<table>/branch_<b>), and the paimon_* jobs run on the branch, not on main."""
from __future__ import annotations

import paimon_ops as po
from paimon_ops.dagster import PaimonSpark, PaimonWarehouse, build_paimon_definitions
from tests.dagster.util import build_orders, run_job, table_files, table_key

ORDERS = "shop.orders"
WAP = "shop.orders$branch_wap"


def test_a_branch_is_an_asset_of_its_own_and_jobs_run_on_it(warehouse, fresh_instance):
    build_orders(warehouse)
    t = po.Catalog(warehouse).get_table(ORDERS)
    t.maintenance.create_branch("wap", snapshot_id=t.latest_snapshot_id).execute()
    t.maintenance.create_branch("other", snapshot_id=t.latest_snapshot_id).execute()
    defs = build_paimon_definitions(PaimonWarehouse(uri=warehouse, include=["shop.*", "shop.*$branch_wap"]),
                                    spark=PaimonSpark(placement="local"))
    keys = {k.to_user_string() for k in defs.get_repository_def().asset_graph.get_all_asset_keys()}
    assert {"paimon/shop/orders", "paimon/shop/orders/branch_wap"} <= keys
    assert not any("branch_other" in k for k in keys)
    spec = defs.get_assets_def(table_key(WAP)).specs_by_key[table_key(WAP)]
    assert spec.metadata["dagster/table_name"] == WAP
    main_files = {p: s for p, s in table_files(po.Catalog(warehouse).get_table(ORDERS).raw).items()
                  if "/snapshot/" in p and "/branch/" not in p}
    before = po.Catalog(warehouse).get_table(WAP).latest_snapshot_id
    result = run_job(defs, "paimon_compaction", WAP, fresh_instance, {"compact": {"mode": "full"}})
    assert result.success
    assert po.Catalog(warehouse).get_table(WAP).latest_snapshot_id == before + 1  # committed on the branch
    after = {p: s for p, s in table_files(po.Catalog(warehouse).get_table(ORDERS).raw).items() if "/snapshot/" in p and "/branch/" not in p}
    assert after == main_files  # main untouched
