"""One pool per table with limit 1: while another run holds a table's slot, our op on that table waits; ops on other
tables do not. Without a limit on the instance, every run says so loudly."""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from dagster import DagsterInstance, instance_for_test, materialize

from paimon_ops.dagster import DAGSTER_YAML, PaimonSpark, PaimonWarehouse, build_paimon_definitions, write_dagster_home
from paimon_ops.dagster.instance import unlimited_pools
from tests.dagster.util import build_events, build_orders, op_name, run_job, table_key

HOLD_S = 1.5
REPO = Path(__file__).resolve().parents[2]


def test_dagster_yaml_gives_every_pool_limit_1(tmp_path):
    assert (REPO / "dagster.yaml").read_text() == DAGSTER_YAML  # what `dagster dev` reads from the repository root
    home = write_dagster_home(tmp_path / ".dagster_home")
    with DagsterInstance.from_config(str(home)) as inst:
        info = inst.event_log_storage.get_concurrency_info("paimon/shop.orders")
        assert info.limit == 1 and info.using_default_limit
        # the runs this package launches also wait in the run queue, one per table
        (limit,) = inst.get_concurrency_config().run_queue_config.tag_concurrency_limits
        assert limit == {"key": "paimon/table", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}
        assert unlimited_pools(inst, ["paimon/shop.orders"]) == []


def test_runs_warn_loudly_without_a_pool_limit(warehouse):
    build_events(warehouse)
    defs = build_paimon_definitions(warehouse)
    with instance_for_test() as inst:  # no concurrency settings: pools unlimited
        assert unlimited_pools(inst, ["paimon/shop.events"]) == ["paimon/shop.events"]
        result = materialize([defs.get_assets_def(table_key("shop.events"))], selection=[table_key("shop.events")],
                             instance=inst,
                             resources={"paimon": PaimonWarehouse(uri=warehouse), "spark": PaimonSpark()})
        warnings = [e.user_message for e in inst.all_logs(result.run_id)
                    if e.level == logging.WARNING and "has no limit" in e.user_message]
        assert warnings and "paimon/shop.events" in warnings[0] and "default_limit: 1" in warnings[0]


def test_op_waits_for_its_tables_pool(warehouse, fresh_instance, monkeypatch):
    build_orders(warehouse)
    build_events(warehouse)
    started: dict[str, float] = {}

    import paimon_ops.dagster.table_asset as table_asset

    real_state = table_asset.table_state

    def recording_state(table):  # the engine is not the point here: record when the op got to run
        started[table.identifier] = time.monotonic()
        return real_state(table)

    monkeypatch.setattr(table_asset, "table_state", recording_state)
    defs = build_paimon_definitions(warehouse)

    def run(ident: str):
        assert run_job(defs, "paimon_observe", ident, fresh_instance).success

    storage = fresh_instance.event_log_storage
    storage.initialize_concurrency_limit_to_default("paimon/shop.orders")  # as the run queue does on first use
    assert storage.get_concurrency_info("paimon/shop.orders").slot_count == 1
    claim = storage.claim_concurrency_slot("paimon/shop.orders", "another-run", "another-step")
    assert claim.is_claimed  # another run is maintaining shop.orders
    released: list[float] = []

    def release():
        released.append(time.monotonic())
        storage.free_concurrency_slots_for_run("another-run")

    run("shop.events")  # another table's pool: not blocked while shop.orders' slot is held
    assert "shop.events" in started
    timer = threading.Timer(HOLD_S, release)
    timer.start()
    try:
        run("shop.orders")  # waits until the other run frees the table's slot
    finally:
        timer.cancel()
    assert released and started["shop.orders"] >= released[0]
    assert fresh_instance.event_log_storage.get_concurrency_info("paimon/shop.orders").claimed_slots == []
    assert op_name(defs, "shop.orders") == "paimon_primary_key_tables"  # the op of the kind, shared by its tables
