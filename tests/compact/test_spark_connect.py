"""Compaction over Spark Connect for real: a Spark Connect server (pyspark's own jars) runs as a separate process on
127.0.0.1, this process is only a Connect client, and the tasks run in the server's Python workers. The package
reaches them the way SparkRunner ships it over Connect (`addArtifacts(..., pyfile=True)`, there is no sparkContext).

Coexistence with the session-wide classic `spark` fixture: the Connect session is made with `.create()` (getOrCreate
refuses a remote session while a classic one exists), and pyspark's process-wide SPARK_CONNECT_MODE_ENABLED /
SPARK_REMOTE markers, which `stop()` leaves behind, are restored at teardown so later classic sessions still work."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from paimon_ops.execution.runner import SparkRunner

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
THIS_MODULE = "tests.compact.test_spark_connect"
CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 90


def probe_task(table_location: str, task: dict) -> dict:
    """A test task for the runner's contract; runs in the Connect server's Python workers."""
    if task.get("fail"):
        raise ValueError(f"boom {task['n']}")
    import paimon_ops
    return {"location": table_location, "value": task["n"] * 2, "pid": os.getpid(),
            "paimon_ops_file": paimon_ops.__file__}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _stop_process_group(proc: subprocess.Popen) -> None:
    """SIGTERM the server's own process group (the JVM and its Python workers), wait, then SIGKILL."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)  # start_new_session: the group id is the server's pid
    except ProcessLookupError:
        return
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(10)


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    """A Spark Connect server in the foreground (no spark-daemon), its own process group; stopped by that group."""
    import pyspark
    spark_home = Path(pyspark.__file__).parent
    # The connect jar ships in pyspark/jars, which is already spark-submit's classpath: the server class needs no
    # primary resource (sbin/start-connect-server.sh also passes just `--class`).
    assert any((spark_home / "jars").glob("spark-connect_*.jar")), "pyspark has no spark-connect jar"
    port = _free_port()
    logs = tmp_path_factory.mktemp("spark-connect")
    cmd = [str(spark_home / "bin" / "spark-submit"), "--class", CONNECT_SERVER, "--name", "paimon-ops-connect-test",
           "--master", "local[2]",
           "--conf", f"spark.connect.grpc.binding.port={port}",
           "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
           "--conf", "spark.driver.bindAddress=127.0.0.1",
           "--conf", "spark.driver.host=127.0.0.1",
           "--conf", "spark.ui.enabled=false",
           "--conf", "spark.ui.showConsoleProgress=false",
           "--conf", "spark.sql.shuffle.partitions=4",
           "--conf", f"spark.local.dir={logs / 'local'}"]
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
    env.update(SPARK_HOME=str(spark_home), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
               PYSPARK_DRIVER_PYTHON=sys.executable)
    stdout, stderr = open(logs / "server.out", "w"), open(logs / "server.err", "w")
    proc = subprocess.Popen(cmd, env=env, cwd=str(logs), stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _accepts(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                why = f"exited with {proc.returncode}" if proc.poll() is not None else \
                    f"not listening on 127.0.0.1:{port} after {START_TIMEOUT_S}s"
                stderr.flush()
                tail = (logs / "server.err").read_text(errors="replace")[-4000:]
                pytest.fail(f"Spark Connect server {why}: {' '.join(cmd)}\n--- stderr tail ---\n{tail}")
            time.sleep(0.5)
        yield {"url": f"sc://127.0.0.1:{port}", "pid": proc.pid, "logs": logs}
    finally:
        _stop_process_group(proc)
        stdout.close()
        stderr.close()


@pytest.fixture(scope="module")
def connect(connect_server):
    """A Spark Connect client session — `.create()`, never the classic session getOrCreate could hand back."""
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession
    saved = {k: os.environ.get(k) for k in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    session = SparkSession.builder.remote(connect_server["url"]).create()
    try:
        assert isinstance(session, ConnectSession)
        yield session
    finally:
        try:
            session.stop()
        finally:
            for k, v in saved.items():  # stop() leaves the process in "Connect mode"; classic sessions need it off
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _expected_and_table(warehouse: str):
    from paimon_ops.table.writer import create_table, write_rows
    table = create_table(warehouse, "db.t", [("k", "BIGINT"), ("v", "STRING")], primary_keys=["k"],
                         options={"bucket": "2"})
    write_rows(table, {"k": [1, 2, 3, 4, 5, 6], "v": [f"a{i}" for i in range(1, 7)]})
    write_rows(table.refresh(), {"k": [4, 5, 6, 7, 8, 9], "v": [f"b{i}" for i in range(4, 10)]})
    write_rows(table.refresh(), {"k": [2, 10, 5, 8], "v": ["c2", "c10", None, None]}, row_kinds=[0, 0, 3, 3])
    expected = [{"k": 1, "v": "a1"}, {"k": 2, "v": "c2"}, {"k": 3, "v": "a3"}, {"k": 4, "v": "b4"},
                {"k": 6, "v": "b6"}, {"k": 7, "v": "b7"}, {"k": 9, "v": "b9"}, {"k": 10, "v": "c10"}]
    return table.refresh(), expected


def test_full_compaction_runs_on_spark_connect(connect, connect_server, warehouse):
    import paimon_ops as po
    from paimon_ops.table.scan import TableScanner
    from tests import pypaimon_util as pu

    table, expected = _expected_and_table(warehouse)
    before = TableScanner(table).scan_latest()
    assert {f.level for f in before.files} == {0} and len(before.files) >= 5  # three writes into two buckets
    assert pu.sorted_rows(pu.read(warehouse, "db.t"), ["k"]) == expected  # pypaimon merges level 0 the same way

    seen = []
    report = po.Table(table).maintenance.compact(mode="full").execute(runner=SparkRunner(connect), progress=lambda d, n: seen.append((d,
        n)))

    assert report.snapshot_id is not None and report.details["tasks"] == 2 and seen[-1] == (2, 2)
    pids = report.details["task_pids"]
    assert pids and os.getpid() not in pids and connect_server["pid"] not in pids  # the server's Python workers
    assert report.details["rows_out"] == len(expected)
    after = TableScanner(table.refresh()).scan_latest()
    assert after.snapshot.id == report.snapshot_id and after.snapshot.commit_kind == "COMPACT"
    assert after.files and {f.level for f in after.files} == {5}, [(f.name, f.level) for f in after.files]
    assert after.total_rows == len(expected)  # deletes dropped at the max level
    assert pu.sorted_rows(pu.read(warehouse, "db.t"), ["k"]) == expected


def _ship_test_module(connect, tmp_path) -> None:
    """Executors cannot import `tests.…` (their cwd and sys.path are the session's artifact directory), so the
    test package goes there the same way SparkRunner ships paimon_ops."""
    path = tmp_path / "paimon_ops_connect_tests.zip"
    with zipfile.ZipFile(path, "w") as z:
        for rel in ("tests/__init__.py", "tests/pypaimon_util.py", "tests/compact/__init__.py",
                    "tests/compact/test_spark_connect.py"):
            z.write(REPO / rel, rel)
    connect.addArtifacts(str(path), pyfile=True)


def test_runner_error_path_over_connect(connect, tmp_path):
    runner = SparkRunner(connect)
    # A paimon_ops task that raises (a path outside the allowed roots) next to one that succeeds.
    allowed, outside = tmp_path / "table", tmp_path / "elsewhere"
    allowed.mkdir()
    outside.mkdir()
    (allowed / "data-1.parquet").write_bytes(b"x")
    (outside / "keep.txt").write_bytes(b"y")
    roots = [str(allowed)]
    results = runner.run("paimon_ops.execution.deleter.delete_task", str(allowed), [
        {"roots": roots, "paths": [str(allowed / "data-1.parquet")]},
        {"roots": roots, "paths": [str(outside / "keep.txt")]},
    ])
    assert results[0]["ok"] is True and results[0]["deleted"] == 1
    assert results[1]["ok"] is False and "UnsafeOperationError" in results[1]["error"]
    assert str(outside / "keep.txt") in results[1]["error"]
    assert not (allowed / "data-1.parquet").exists() and (outside / "keep.txt").read_bytes() == b"y"

    # A module-level task function of this test module: the failing task is reported, the others keep their order.
    _ship_test_module(connect, tmp_path)
    seen = []
    results = runner.run(f"{THIS_MODULE}.probe_task", "/tmp/t", [{"n": 0}, {"n": 1, "fail": True}, {"n": 2}],
                         progress=lambda d, n: seen.append((d, n)))
    assert [r["ok"] for r in results] == [True, False, True] and seen[-1] == (3, 3)
    assert results[1]["error"] == "ValueError: boom 1" and "duration_s" in results[1]
    assert [results[0]["value"], results[2]["value"]] == [0, 4] and results[0]["location"] == "/tmp/t"
    assert os.getpid() not in {results[0]["pid"], results[2]["pid"]}
    # the executors imported paimon_ops from the zip SparkRunner shipped with addArtifacts, not from this checkout
    assert all("paimon_ops.zip" in r["paimon_ops_file"] for r in (results[0], results[2])), results[0]
