"""The Dagster integration over a Hive catalog: the component lists exactly the metastore's Paimon tables (a database
located outside the warehouse included; plain Hive tables and unregistered directories not), and terminating a real
run (the webserver's terminate, as the UI's button) while its commit waits for the metastore's lock withdraws the
lock request and commits nothing."""
from __future__ import annotations

import json
import shutil
import time

import pytest
import yaml

from tests.hive.conftest import java_hive_table
from tests.hive.test_metastore_client import _create_plain_table

pytestmark = pytest.mark.java

FIELDS = [("dt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("v", "STRING")]


def _tables(wh, db: str, uri: str, hms_client, names=("a", "b"), strays: bool = True) -> None:
    for name in names:
        jt = java_hive_table(wh, db, name, uri)
        jt.create(FIELDS, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": 1})
        jt.write([{"rows": [["2024-01-01", i, name] for i in range(5)]}, {"rows": [["2024-01-01", 1, "x"]]}])
    if strays:  # a plain Hive table beside them, and a Paimon directory the metastore does not list
        _create_plain_table(hms_client, db, "plain", f"file:{wh}/{db}.db/plain")
        shutil.copytree(wh / f"{db}.db" / names[0], wh / f"{db}.db" / "leftover")


def test_component_lists_exactly_the_metastores_tables(hive_metastore, hms_client, hive_database, tmp_path):
    from dagster.components.testing import create_defs_folder_sandbox

    from paimon_ops.dagster import PaimonComponent
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    ext_db = f"{db}_ext"
    t = hms_client.types
    hms_client.call("db", lambda c: c.create_database(t.Database(name=ext_db, parameters={},
                                                                  locationUri=f"file:{tmp_path}/elsewhere/x.db")))
    _tables(wh, db, uri, hms_client)
    _tables(wh, ext_db, uri, hms_client, names=("c",), strays=False)
    body = yaml.safe_load(f"""
        type: paimon_ops.dagster.PaimonComponent
        attributes:
          warehouse: {wh}
          include: ["{db}*.*"]
          exclude: ["{db}.b"]
          catalog_options:
            metastore: hive
            uri: {uri}
    """)
    with create_defs_folder_sandbox() as sandbox:
        path = sandbox.scaffold_component(component_cls=PaimonComponent, defs_path="paimon", defs_yaml_contents=body)
        with sandbox.load_component_and_build_defs(defs_path=path) as (_, defs):
            keys = {k.to_user_string() for k in defs.get_repository_def().asset_graph.get_all_asset_keys()}
    assert keys == {f"paimon/{db}/a", f"paimon/{ext_db}/c"}


@pytest.mark.webserver
def test_terminating_a_run_waiting_for_the_lock_leaves_no_lock(hive_metastore, hms_client, hive_database, tmp_path):
    from tests.dagster import ui_util as ui
    from tests.net import free_port
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    jt = java_hive_table(wh, db, "t", uri)
    jt.create(FIELDS, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": 1})
    jt.write([{"rows": [["2024-01-01", i, "a"] for i in range(5)]}, {"rows": [["2024-01-01", 1, "x"]]}])
    before = jt.snapshots()["latest"]
    home = tmp_path / "dagster_home"
    ui.init_dagster_home(home)
    env = ui.dagster_env(home, str(wh))
    env["PAIMON_OPS_CATALOG_OPTIONS"] = json.dumps({"metastore": "hive", "uri": uri, "lock.enabled": "true",
                                                    "lock-check-max-sleep": "500 ms"})
    env["PAIMON_OPS_PLACEMENT"] = "local"
    port = free_port()
    procs: list = []

    def locks() -> list:
        resp = hms_client.call("locks", lambda c: c.show_locks(hms_client.types.ShowLocksRequest()))
        return [(lk.lockid, lk.state) for lk in resp.locks or [] if lk.dbname == db]

    with hms_client.table_lock(db, "t", acquire_timeout_s=10, check_max_sleep_s=1) as ours:
        try:
            procs.append(ui.ManagedProcess(
                "dagster-webserver",
                [str(ui.VENV_BIN / "dagster-webserver"), "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
                ui.REPO, env, tmp_path / "webserver.log"))
            procs.append(ui.ManagedProcess(
                "dagster-daemon", ui.daemon_argv("workspace.yaml"),
                ui.REPO, env, tmp_path / "daemon.log"))
            ui.wait_for_http(port, procs, timeout=180)
            ui.wait_for_location(port, "paimon_ops", procs, timeout=180)
            run_id = ui.launch_run(port, "paimon_ops", "paimon_compaction", ["paimon", db, "t"],
                                   {"ops": {"paimon_primary_key_tables": {"config": {"compact": {"mode": "full"}}}}})
            # the run's commit asks for the lock and waits behind ours
            ui.wait_until("the run's lock request", lambda: len(locks()) == 2 or None, procs, timeout=240)
            assert sorted(s for _, s in locks()) == [1, 2]
            out = ui.graphql(port, TERMINATE, {"runId": run_id})["terminateRun"]
            assert out["__typename"] == "TerminateRunSuccess", out

            def ended():
                status = ui.graphql(port, ui.RUN_QUERY, {"runId": run_id})["runOrError"].get("status")
                return status if status in ("FAILURE", "CANCELED") else None

            assert ui.wait_until("the run to end", ended, procs, timeout=120) in ("FAILURE", "CANCELED")
            deadline = time.monotonic() + 30
            while locks() != [(ours, 1)]:  # the run's waiting lock request was withdrawn
                assert time.monotonic() < deadline, locks()
                time.sleep(0.2)
        finally:
            ui.stop_all(procs)
    assert locks() == []
    assert jt.snapshots()["latest"] == before  # nothing committed


TERMINATE = """
mutation($runId: String!) {
  terminateRun(runId: $runId) {
    __typename
    ... on TerminateRunSuccess { run { runId } }
    ... on TerminateRunFailure { message }
    ... on PythonError { message }
  }
}
"""
