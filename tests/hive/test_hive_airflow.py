"""Airflow over a Hive catalog: the connection carries the catalog options, and a task killed while its commit waits
for the metastore's lock (SIGTERM to the process running it: Airflow's task runner calls the operator's `on_kill`)
withdraws its lock request and commits nothing. A real Airflow 3 (`.venv-airflow`), `airflow dags test`."""
from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from tests.airflow.conftest import VENV, AirflowHome
from tests.hive.conftest import java_hive_table
from tests.net import patient

pytestmark = pytest.mark.java

DAG = '''
import pendulum
from airflow.sdk import DAG
from paimon_ops.airflow.operators import PaimonCompactOperator

with DAG(dag_id="paimon_hive_compact", schedule=None, start_date=pendulum.datetime(2024, 1, 1, tz="UTC")):
    PaimonCompactOperator(task_id="compact", table="{table}", mode="full")
'''


@pytest.fixture(scope="module")
def airflow_bin() -> object:
    """The Airflow env's bin/. `./dev.sh airflow-env` builds it (with the [hive] extra) where it is missing, as on a
    fresh machine; an env already there is used as it is (dev.sh re-installs whenever pyproject.toml changed)."""
    from tests.conftest import REPO
    if not (VENV / "bin" / "airflow").exists():
        proc = subprocess.run(["bash", str(REPO / "dev.sh"), "airflow-env"], cwd=REPO, capture_output=True,
                              text=True, timeout=1200)
        if proc.returncode != 0:
            pytest.fail(f"./dev.sh airflow-env failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return VENV / "bin"


def test_killed_task_waiting_for_the_lock_leaves_no_lock(airflow_bin, hive_metastore, hms_client, hive_database,
                                                          tmp_path):
    uri, db = hive_metastore.uri, hive_database
    wh = tmp_path / "wh"
    jt = java_hive_table(wh, db, "t", uri)
    jt.create([("id", "INT NOT NULL"), ("v", "STRING")], primary_keys=["id"], options={"bucket": 1})
    jt.write([{"rows": [[i, "a"] for i in range(5)]}, {"rows": [[1, "b"]]}])
    before = jt.snapshots()["latest"]
    home = tmp_path / "airflow-home"
    (home / "dags").mkdir(parents=True)
    (home / "dags" / "paimon_hive_compact.py").write_text(DAG.format(table=f"{db}.t"))
    conn = {"conn_type": "paimon", "host": str(wh),
            "extra": {"placement": "local", "options": {"metastore": "hive", "uri": uri, "lock.enabled": "true",
                                                        "lock-check-max-sleep": "500 ms"}}}
    ah = AirflowHome(airflow_bin, home, home / "dags", str(wh),
                     extra_env={"AIRFLOW_CONN_PAIMON_DEFAULT": json.dumps(conn)})
    ah.run("db", "migrate", timeout=300)

    def locks() -> list:
        resp = hms_client.call("locks", lambda c: c.show_locks(hms_client.types.ShowLocksRequest()))
        return [(lk.lockid, lk.state) for lk in resp.locks or [] if lk.dbname == db]

    with hms_client.table_lock(db, "t", acquire_timeout_s=10, check_max_sleep_s=1) as ours:
        log = open(tmp_path / "dags-test.log", "w")
        p = subprocess.Popen([str(airflow_bin / "airflow"), "dags", "test", "paimon_hive_compact"], cwd=home,
                             env=ah.env(), stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + patient(120)
            while len(locks()) < 2:  # the task's commit asks for the lock and waits behind ours
                assert p.poll() is None, (tmp_path / "dags-test.log").read_text()[-4000:]
                assert time.monotonic() < deadline, (tmp_path / "dags-test.log").read_text()[-4000:]
                time.sleep(0.2)
            p.send_signal(signal.SIGTERM)
            p.wait(patient(60))
        finally:
            if p.poll() is None:
                p.kill()
            log.close()
        output = (tmp_path / "dags-test.log").read_text()
        assert "interrupted before its commit" in output and "nothing was committed" in output, output[-4000:]
        assert locks() == [(ours, 1)], output[-4000:]  # the task's waiting lock request is gone
    assert locks() == []
    assert jt.snapshots()["latest"] == before  # nothing committed
