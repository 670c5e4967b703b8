"""`paimon-ops … -o metastore=hive -o uri=thrift://…` as users run it (a real subprocess) against the real metastore:
discovery and table patterns, and one-line errors (exit 2, nothing changed) for an unreachable metastore, an unknown
database and a lock timeout; SIGTERM while waiting for the lock leaves no lock behind."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.cli.conftest import REPO, cli
from tests.hive.conftest import java_hive_table
from tests.net import free_port, patient

pytestmark = pytest.mark.java

FIELDS = [("dt", "STRING NOT NULL"), ("id", "INT NOT NULL"), ("v", "STRING")]


def _hive(uri: str, *extra: str) -> list[str]:
    return ["-o", "metastore=hive", "-o", f"uri={uri}", *extra]


@pytest.fixture
def hive_warehouse(hive_metastore, hms_client, hive_database, tmp_path):
    """Two Java-written Paimon tables (`a`, `b`) in `hive_database`, a plain Hive table beside them and a leftover
    directory that is not registered."""
    from tests.hive.test_metastore_client import _create_plain_table
    wh = tmp_path / "wh"
    for name in ("a", "b"):
        jt = java_hive_table(wh, hive_database, name, hive_metastore.uri)
        jt.create(FIELDS, partition_keys=["dt"], primary_keys=["dt", "id"], options={"bucket": 1})
        jt.write([{"rows": [["2024-01-01", i, name] for i in range(5)]}, {"rows": [["2024-01-02", 1, "x"]]}])
    _create_plain_table(hms_client, hive_database, "plain", f"file:{wh}/{hive_database}.db/plain")
    (wh / f"{hive_database}.db" / "leftover" / "schema").mkdir(parents=True)
    (wh / f"{hive_database}.db" / "leftover" / "schema" / "schema-0").write_text("{}")
    return wh


def _locks(hms_client, db: str) -> list:
    return [lk for lk in hms_client.call("locks", lambda c: c.show_locks(hms_client.types.ShowLocksRequest())).locks
            or [] if lk.dbname == db]


def test_tables_and_patterns(hive_metastore, hive_warehouse, hive_database):
    uri, db = hive_metastore.uri, hive_database
    r = cli("tables", hive_warehouse, "--json", *_hive(uri))
    assert r.code == 0, r.err
    mine = [row["table"] for row in r.json["rows"] if row["table"].startswith(f"{db}.")]
    assert mine == [f"{db}.a", f"{db}.b"]
    assert all(row["error"] is None and row["latest_snapshot"] == 2 for row in r.json["rows"] if row["table"] in mine)

    # (--parallel 2: each table in a worker process, each worker with its own metastore connection)
    r = cli("expire-snapshots", hive_warehouse, f"{db}.*", "--retain-min", "1", "--retain-max", "1", "--json",
            "--parallel", "2", *_hive(uri, "-o", "lock.enabled=true"))
    assert r.code == 0, r.err
    assert [t["table"] for t in r.json["tables"]] == [f"{db}.a", f"{db}.b"]
    r = cli("snapshots", hive_warehouse, f"{db}.a", "--json", *_hive(uri))
    assert [row["id"] for row in r.json["rows"]] == [2]


def test_unreachable_metastore_one_line_within_connect_timeout(tmp_path):
    port = free_port()
    r = cli("tables", tmp_path, "--connect-timeout", "2", *_hive(f"thrift://127.0.0.1:{port}"))
    assert r.code == 2 and r.out == ""
    assert r.err.strip().count("\n") == 0 and f"thrift://127.0.0.1:{port}" in r.err and "Traceback" not in r.err
    with socket.socket() as silent:  # accepts, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        uri = f"thrift://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        r = cli("snapshots", tmp_path, "db.t", "--connect-timeout", "2", *_hive(uri))
        took = time.monotonic() - started
    assert r.code == 2 and uri in r.err and "timed out" in r.err and r.err.strip().count("\n") == 0
    assert took < 2 + patient(10)  # the interpreter's start-up, then at most the connect timeout


def test_unknown_database_and_table(hive_metastore, hive_warehouse, hive_database):
    uri, db = hive_metastore.uri, hive_database
    r = cli("snapshots", hive_warehouse, "nosuchdb.t", *_hive(uri))
    assert r.code == 2 and "nosuchdb" in r.err and uri in r.err and r.err.strip().count("\n") == 0
    r = cli("compact", hive_warehouse, f"{db}.leftover", *_hive(uri))
    assert r.code == 2 and "leftover" in r.err and r.err.strip().count("\n") == 0
    r = cli("compact", hive_warehouse, f"{db}.plain", *_hive(uri))
    assert r.code == 2 and "not a Paimon table" in r.err


def _table_state(wh, db: str, name: str) -> tuple:
    root = wh / f"{db}.db" / name
    return tuple(sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()))


def test_lock_timeout_one_line_nothing_changed(hive_metastore, hms_client, hive_warehouse, hive_database):
    uri, db = hive_metastore.uri, hive_database
    before = _table_state(hive_warehouse, db, "a")
    with hms_client.table_lock(db, "a", acquire_timeout_s=10, check_max_sleep_s=1):
        r = cli("compact", hive_warehouse, f"{db}.a", *_hive(uri, "-o", "lock.enabled=true",
                                                            "-o", "lock-acquire-timeout=2 s"))
        assert r.code == 2, r.err
        [error] = [ln for ln in r.err.splitlines() if ln.startswith("paimon-ops: error:")]  # (after progress lines)
        assert f"{db}.a" in error and "lock-acquire-timeout" in error and uri in error, r.err
        assert [lk.state for lk in _locks(hms_client, db)] == [1]  # only ours: the CLI's waiting lock is gone
    assert _table_state(hive_warehouse, db, "a") == before
    assert _locks(hms_client, db) == []


def test_sigterm_while_waiting_for_the_lock_leaves_no_lock(hive_metastore, hms_client, hive_warehouse, hive_database):
    uri, db = hive_metastore.uri, hive_database
    before = _table_state(hive_warehouse, db, "a")
    with hms_client.table_lock(db, "a", acquire_timeout_s=10, check_max_sleep_s=1):
        p = subprocess.Popen([sys.executable, "-m", "paimon_ops.cli", "compact", str(hive_warehouse), f"{db}.a",
                              *_hive(uri, "-o", "lock.enabled=true")], cwd=REPO, env=dict(os.environ),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + patient(60)
        while [lk.state for lk in _locks(hms_client, db)] != [1, 2]:  # the CLI's lock request waits behind ours
            assert p.poll() is None, p.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.2)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=patient(30))
        assert p.returncode != 0 and "Traceback" not in err, err
        assert [lk.state for lk in _locks(hms_client, db)] == [1]
    assert _locks(hms_client, db) == []
    assert _table_state(hive_warehouse, db, "a") == before


def test_json_errors_name_the_metastore(tmp_path):
    port = free_port()
    r = cli("tables", tmp_path, "--json", "--connect-timeout", "1", *_hive(f"thrift://127.0.0.1:{port}"))
    assert r.code == 2
    doc = json.loads(r.out or r.err)
    assert f"127.0.0.1:{port}" in json.dumps(doc)
