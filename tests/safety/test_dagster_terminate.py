"""In Dagster: terminating a real run mid-compaction (the webserver's terminate, as the UI's
"Terminate" button does) stops it, removes every file the compaction wrote, commits nothing, and the run fails with
our message — the table's files are exactly as before. Real parts: `dagster-webserver` and `dagster-daemon` on
127.0.0.1 over this repository's workspace.yaml, a DAGSTER_HOME with the repository's dagster.yaml."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from paimon_ops.table.table import FileStoreTable
from tests.dagster import ui_util as ui
from tests.net import free_port
from tests.safety.util import slow_compaction_table, tree_digest

pytestmark = pytest.mark.webserver

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


def test_terminating_a_dagster_run_cleans_up(tmp_path):
    wh = tmp_path / "warehouse"
    wh.mkdir()
    t = Path(slow_compaction_table(str(wh), "shop.big").root)
    before = tree_digest(str(wh))
    before_files = {str(p) for p in t.rglob("*")}
    snapshots = FileStoreTable(str(t)).snapshots.list_ids()
    home = tmp_path / "dagster_home"
    ui.init_dagster_home(home)
    env = ui.dagster_env(home, str(wh))
    port = free_port()
    procs: list[ui.ManagedProcess] = []
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
        run_id = ui.launch_run(port, "paimon_ops", "paimon_compaction", ["paimon", "shop", "big"],
                               {"ops": {"paimon_primary_key_tables": {"config": {"compact": {"mode": "full"}}}}})
        # until the compaction's tasks have written files: then terminate, as the UI's button does
        deadline = time.monotonic() + 240
        while not any(p.name.startswith("data-") and str(p) not in before_files for p in t.glob("bucket-*/*")):
            assert time.monotonic() < deadline, "the compaction never wrote a file"
            ui.check_procs(procs)
            time.sleep(0.02)
        out = ui.graphql(port, TERMINATE, {"runId": run_id})["terminateRun"]
        assert out["__typename"] == "TerminateRunSuccess", out
        status = ui.wait_until("the run to end", lambda: (ui.graphql(port, ui.RUN_QUERY, {"runId": run_id})
                                                        ["runOrError"].get("status")
                                                        if ui.graphql(port, ui.RUN_QUERY, {"runId": run_id})
                                                        ["runOrError"].get("status") in ("FAILURE", "CANCELED")
                                                        else None), procs, timeout=120)
        logs = ui.run_failure_logs(port, run_id)
        assert status in ("FAILURE", "CANCELED")
        assert "interrupted" in logs and "removed and nothing was committed" in logs, logs
        time.sleep(1)  # (the run worker is gone; nothing may appear after it)
        assert tree_digest(str(wh)) == before  # every file the run wrote is gone, nothing committed, no journal
        assert FileStoreTable(str(t)).snapshots.list_ids() == snapshots
    finally:
        ui.stop_all(procs)
