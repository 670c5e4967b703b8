"""One pool per table with limit 1: while another run holds a table's slot, our op on that table waits; ops on
other tables do not."""
from __future__ import annotations

import threading
import time

from dagster import AssetKey, DagsterInstance, materialize

from assets import build_paimon_definitions
from assets.instance import write_dagster_home
from assets.resources import PaimonWarehouse
from paimon_ops.report import Report

from tests.dagster.util import build_events, build_orders

HOLD_S = 1.5


def test_dagster_yaml_gives_every_pool_limit_1(tmp_path):
    home = write_dagster_home(tmp_path / ".dagster_home")
    with DagsterInstance.from_config(str(home)) as inst:
        info = inst.event_log_storage.get_concurrency_info("paimon/shop.orders")
        assert info.limit == 1 and info.using_default_limit


def test_op_waits_for_its_tables_pool(warehouse, fresh_instance, monkeypatch):
    build_orders(warehouse)
    build_events(warehouse)
    started: dict[str, float] = {}

    def fake_expire(table, **kw):  # the engine is not the point here: record when the op got to run
        started[table.identifier] = time.monotonic()
        return Report("expire_snapshots", table.identifier, kw.get("dry_run", False), 0.0)

    import paimon_ops.lifecycle.expire as expire
    monkeypatch.setattr(expire, "expire_snapshots", fake_expire)
    defs = build_paimon_definitions(warehouse)
    resources = {"paimon_warehouse": PaimonWarehouse(uri=warehouse), "pyspark": object()}

    def run(table: str):
        asset = next(a for a in defs.assets if a.key == AssetKey(["paimon", "shop", table, "snapshot_expiry"]))
        assert materialize([asset], instance=fresh_instance, resources=resources,
                           run_config={"ops": {f"paimon__shop__{table}__snapshot_expiry": {
                               "config": {"dry_run": True}}}}).success

    storage = fresh_instance.event_log_storage
    storage.initialize_concurrency_limit_to_default("paimon/shop.orders")  # as the run queue does on first use
    assert storage.get_concurrency_info("paimon/shop.orders").slot_count == 1
    claim = storage.claim_concurrency_slot("paimon/shop.orders", "another-run", "another-step")
    assert claim.is_claimed  # another run is maintaining shop.orders
    released: list[float] = []

    def release():
        released.append(time.monotonic())
        storage.free_concurrency_slots_for_run("another-run")

    run("events")  # another table's pool: not blocked while shop.orders' slot is held
    assert "shop.events" in started
    timer = threading.Timer(HOLD_S, release)
    timer.start()
    try:
        run("orders")  # waits until the other run frees the table's slot
    finally:
        timer.cancel()
    assert released and started["shop.orders"] >= released[0]
    assert fresh_instance.event_log_storage.get_concurrency_info("paimon/shop.orders").claimed_slots == []
