"""A real Spark Connect server (pyspark's own jars) as a separate process on 127.0.0.1, and Connect client sessions
on it — shared by every test module that proves work over Spark Connect (tests/conftest.py's `connect_server`,
one per test session, and `connect`, one client session per module). The client process has no sparkContext;
SparkRunner ships paimon_ops with `addArtifacts(..., pyfile=True)`.

Coexistence with the session-wide classic `spark` fixture: a Connect session is made with `.create()` (getOrCreate
refuses a remote session while a classic one exists), and pyspark's process-wide SPARK_CONNECT_MODE_ENABLED /
SPARK_REMOTE markers — which switch pyspark's functions to Connect columns and which `stop()` leaves behind — are
restored when the client session closes, so classic sessions work again in later modules."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.net import free_port

REPO = Path(__file__).resolve().parents[1]
CONNECT_SERVER = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 90
_MODE_MARKERS = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")


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


@contextlib.contextmanager
def connect_server_process(logs: Path) -> Iterator[dict[str, Any]]:
    """A Spark Connect server in the foreground (no spark-daemon), local[2], its own process group; stopped by that
    group. Yields {url, pid, logs}."""
    import pyspark
    spark_home = Path(pyspark.__file__).parent
    # The connect jar ships in pyspark/jars, which is already spark-submit's classpath: the server class needs no
    # primary resource (sbin/start-connect-server.sh also passes just `--class`).
    assert any((spark_home / "jars").glob("spark-connect_*.jar")), "pyspark has no spark-connect jar"
    port = free_port()
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
    env = {k: v for k, v in os.environ.items() if k not in _MODE_MARKERS}
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


@contextlib.contextmanager
def connect_session(url: str) -> Iterator[Any]:
    """A Spark Connect client session — `.create()`, never the classic session getOrCreate could hand back; on
    exit it is stopped and the process leaves "Connect mode" again."""
    from pyspark.sql import SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession
    saved = {k: os.environ.get(k) for k in _MODE_MARKERS}
    session = SparkSession.builder.remote(url).create()
    try:
        assert isinstance(session, ConnectSession)
        yield session
    finally:
        try:
            session.stop()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def ship_test_modules(session: Any, tmp_path: Path, modules: tuple[str, ...]) -> None:
    """Executors cannot import `tests.…` (their cwd and sys.path are the session's artifact directory): the given
    repository-relative files go there the way SparkRunner ships paimon_ops."""
    path = tmp_path / "paimon_ops_connect_tests.zip"
    with zipfile.ZipFile(path, "w") as z:
        for rel in modules:
            z.write(REPO / rel, rel)
    session.addArtifacts(str(path), pyfile=True)
